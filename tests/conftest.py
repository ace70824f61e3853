"""Make the package in ``py/`` importable for the tests without installing it.

Under CI (``CI`` set), Hypothesis runs derandomized: the same examples every run, so a
red CI always means a change broke something. Locally it explores new examples each
run, which is how the fuzz tests find new bugs.
"""

import os
import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py"))

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
