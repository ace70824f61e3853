"""Coverage-guided fuzzing of the file readers (``perpendis.inputs.formats.read``) with atheris.

Every input must come out as tensors or as ``InputError``; see README.md for how to
run it and what it found.

    python fuzz/atheris_formats.py fuzz/corpus/formats -max_total_time=600 -timeout=10 -rss_limit_mb=3072
"""

from __future__ import annotations

import sys

import atheris
from harness import checked

with atheris.instrument_imports(include=["perpendis"]):
    from perpendis.errors import InputError
    from perpendis.inputs import formats
    from perpendis.inputs.tensor import Tensor

if __name__ == "__main__":
    atheris.Setup(sys.argv, checked(lambda data: formats.read(data, "fuzz.bin"), InputError, Tensor))
    atheris.Fuzz()
