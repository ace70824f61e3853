"""``assert_same``: the report as a test assertion, for pytest suites comparing model outputs.

Takes NumPy arrays, anything ``np.asarray`` accepts, or PyTorch tensors, including
bfloat16 and float8 ones, which NumPy cannot hold: their raw bits are taken as they are.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .compare import compare
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


def assert_same(
    a: Any,
    b: Any,
    preset: str | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    *,
    depth: float = 1.0,
    ref: Any = None,
) -> Report:
    """Pass when A and B are identical or differ by rounding within tolerance; else raise.

    ``b`` is the expected value (the tolerance scales with ``|b|``).  The AssertionError
    carries the human report: verdict, first difference with its bits, worst element,
    tolerance result and findings.  Returns the report when it passes.
    """
    report = compare(
        _tensor(a, "actual"),
        _tensor(b, "expected"),
        ref=None if ref is None else _tensor(ref, "reference"),
        preset=preset,
        atol=atol,
        rtol=rtol,
        depth=depth,
    )
    if report.verdict == "investigate":
        raise AssertionError("\n" + report.to_text())
    return report
