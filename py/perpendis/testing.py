"""``perpendis.compare`` and ``assert_same``: the report from in-memory arrays, in a
notebook cell or as a test assertion for pytest suites comparing model outputs.

Both take NumPy arrays, anything ``np.asarray`` accepts, or PyTorch tensors, including
bfloat16 and float8 ones, which NumPy cannot hold: their raw bits are taken as they are.
torch is never imported here: a tensor's own module is used, so NumPy users need no torch.
"""

from __future__ import annotations

from typing import Any

from .compare import compare_values as compare
from .explain import explain
from .report import Report


class ComparisonError(AssertionError):
    """A failing ``assert_same``: the message is the one-screen explanation, ``report`` the
    whole report (the pytest plugin writes it out with ``--perpendis-report``)."""

    def __init__(self, report: Report) -> None:
        super().__init__(explain(report).rstrip("\n"))
        self.report = report


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
