"""``python -m perpendis``: see :mod:`perpendis.cli`."""

import sys

from .cli import main

sys.exit(main())
