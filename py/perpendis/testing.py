"""``perpendis.compare`` and ``assert_same``: the report from in-memory arrays, in a
notebook cell or as a test assertion for pytest suites comparing model outputs.

Both take NumPy arrays, anything ``np.asarray`` accepts, or PyTorch tensors, including
bfloat16 and float8 ones, which NumPy cannot hold: their raw bits are taken as they are.
torch is never imported here: a tensor's own module is used, so NumPy users need no torch.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import compare as engine
from .explain import explain
from .report import Report
from .tensor import Tensor, from_numpy

# torch dtypes NumPy lacks: (Perpendis format, torch dtype of the same width to view the bits as)
_TORCH_RAW = {
    "torch.bfloat16": ("bfloat16", "int16"),
    "torch.float8_e4m3fn": ("float8_e4m3fn", "int8"),
    "torch.float8_e5m2": ("float8_e5m2", "int8"),
}


def _tensor(value: Any, source: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    raw = _TORCH_RAW.get(str(getattr(value, "dtype", "")))
    if raw is not None:
        torch = sys.modules["torch"]
        fmt, view_as = raw
        ints = value.detach().cpu().contiguous().view(getattr(torch, view_as)).numpy()
        return Tensor(ints.view(ints.dtype.str.replace("i", "u")), fmt, source)
    if hasattr(value, "detach"):  # a torch tensor on any device, or one that requires grad
        value = value.detach().cpu().numpy()
    return from_numpy(np.asarray(value), source)


class ComparisonError(AssertionError):
    """A failing ``assert_same``: the message is the one-screen explanation, ``report`` the
    whole report (the pytest plugin writes it out with ``--perpendis-report``)."""

    def __init__(self, report: Report) -> None:
        super().__init__(explain(report).rstrip("\n"))
        self.report = report


def compare(
    a: Any,
    b: Any,
    preset: str | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    *,
    depth: float = 1.0,
    ref: Any = None,
    sources: tuple[str, str] = ("A", "B"),
) -> Report:
    """The report of A against B (``b`` the expected value: the tolerance scales with
    ``|b|``); in a notebook it displays as a rich summary. Unreadable input (an
    unsupported dtype, say) raises :class:`~perpendis.errors.InputError`."""
    return engine.compare(
        _tensor(a, sources[0]),
        _tensor(b, sources[1]),
        ref=None if ref is None else _tensor(ref, "reference"),
        preset=preset,
        atol=atol,
        rtol=rtol,
        depth=depth,
    )


def assert_same(a: Any, b: Any, preset: str | None = None, atol: float | None = None, rtol: float | None = None,
                **options: Any) -> Report:
    """Pass when A and B are identical or differ by rounding within tolerance; else raise.

    ``b`` is the expected value; ``options`` are :func:`compare`'s ``depth`` and ``ref``.
    The :class:`ComparisonError` (an AssertionError) says on one screen the verdict, the top
    finding with where it is and its causes, and the bits at the first difference.  Returns
    the report when it passes.
    """
    __tracebackhide__ = True  # pytest: the failure points at the test's line, not this one
    report = compare(a, b, preset, atol, rtol, sources=("actual", "expected"), **options)
    if report.verdict == "investigate":
        raise ComparisonError(report)
    return report
