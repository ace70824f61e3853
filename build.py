"""Assemble the static site in ``dist/``: the page, the app scripts, and a trimmed Pyodide.

The entry point of ``buildsite/`` (its docstring says what the build does and where each
step lives). Usage: ``python build.py [--pyodide-dist DIR] [--out DIR]``.
"""

import sys

from buildsite.assemble import build, main
from buildsite.common import BuildError
from buildsite.compress import precompress
from buildsite.page import write_service_worker

__all__ = ["BuildError", "build", "main", "precompress", "write_service_worker"]

if __name__ == "__main__":
    sys.exit(main())
