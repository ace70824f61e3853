"""What every step of the build shares: where the repository and the download cache are,
the pinned Pyodide release, the project's package name, and the one error a step raises
when the user must act (``build.py`` prints its message and exits 1, no traceback)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYODIDE_VERSION = "0.27.7"
CACHE = ROOT / ".cache"
PROJECT_PACKAGE = "perpendis"


class BuildError(Exception):
    """A build step failed in a way the user must fix (message says how)."""


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_sha256(name: str, data: bytes, expected: str, origin: str) -> None:
    """Refuse bytes whose hash differs from the lock: a silent mismatch would make the
    browser reject the wheel much later with a far less helpful message."""
    actual = sha256_of(data)
    if actual != expected:
        raise BuildError(
            f"checksum mismatch for {name} (from {origin}): the lock expects sha256 {expected}, "
            f"the file has sha256 {actual}. Delete the file and build again, or point --pyodide-dist "
            f"at an unpacked official Pyodide {PYODIDE_VERSION} distribution."
        )


def node_or_fail(purpose: str) -> str:
    """The ``node`` executable, which runs Pyodide's own CPython for the steps that need it."""
    node = shutil.which("node")
    if node is None:
        raise BuildError(f"Node.js 20 is needed to {purpose}: install nodejs")
    return node
