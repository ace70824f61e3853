"""Perpendis: tell whether two tensors that should be equal differ by rounding or by a bug."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["assert_same", "capture", "check_export", "compare"]


def __getattr__(name: str) -> Any:
    # Lazy, so ``import perpendis`` stays cheap for the worker until an entry point is wanted.
    # These are the public entry points (docs/architecture.md): functions, not modules.
    if name == "assert_same":
        from .testing import assert_same

        return assert_same
    if name == "compare":
        from .testing import compare

        return compare
    if name == "capture":
        from .layers.capture.torch import capture

        return capture
    if name == "check_export":
        from .layers.capture.check import check_export

        return check_export
    raise AttributeError(f"module 'perpendis' has no attribute {name!r}")
