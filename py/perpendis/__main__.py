"""``python -m perpendis``: see :mod:`perpendis.cli`."""

import sys

from .cli.main import main

sys.exit(main())
