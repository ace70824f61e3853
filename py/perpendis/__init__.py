"""Perpendis: tell whether two tensors that should be equal differ by rounding or by a bug."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["assert_same", "capture", "check_export", "compare"]


def __getattr__(name: str) -> Any:
    # Lazy, so ``import perpendis`` stays cheap for the worker until the helper is wanted.
    if name == "assert_same":
        from .testing import assert_same

        return assert_same
    if name == "compare":  # the module, callable as perpendis.compare(a, b): see its end
        import importlib

        return importlib.import_module(".compare", __name__)
    if name == "capture":
        # Not ``from . import capture``: its fromlist check asks this very __getattr__ again.
        import importlib

        return importlib.import_module(".capture", __name__)
    if name == "check_export":
        from .capture import check_export

        return check_export
    raise AttributeError(f"module 'perpendis' has no attribute {name!r}")
