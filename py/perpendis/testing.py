"""``perpendis.compare`` and ``assert_same``: the report from in-memory arrays, in a
notebook cell or as a test assertion for pytest suites comparing model outputs.

Both take NumPy arrays, anything ``np.asarray`` accepts, or PyTorch tensors, including
bfloat16 and float8 ones, which NumPy cannot hold: their raw bits are taken as they are.
torch is never imported here: a tensor's own module is used, so NumPy users need no torch.

A test suite calls ``assert_same`` thousands of times on pairs that pass, and most of them
are bit for bit the same (a deterministic kernel, a saved output): that case is decided
by one comparison of raw bits, with the same outcome as the full analysis (see
:func:`bit_identical`). Most of the rest differ by rounding only, every element within a
few units of the data's own precision: that is decided in a few vectorised passes (see
:func:`rounding_close`). Either way the report is made only if the test looks at it.

Every report is made by the service, as for the CLI and the page: a typed
``CompareRequest`` holding the in-memory tensors, answered by ``service.serve``
(:func:`served`), so the three front ends share one planner, one set of ops and one place
where bad input becomes an answer (raised again here as :class:`InputError`). The two
fast checks stay in front of it: they answer before any request is needed, and the report
they defer is asked of the service when first used.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .diagnosis.diagnose import ROUNDING_SHARE
from .diagnosis.relations.rounding_model import ROUNDOFF_FACTOR
from .engine.keywords import keyword_front
from .engine.options import ComparisonOptions
from .errors import InputError
from .inputs.tensor import Tensor, as_tensor
from .numerics import bits
from .numerics.tolerance import failing
from .report.explain import explain
from .report.model import Report
from .report.task_text import task_lines
from .service.boundary import raised
from .service.handle import serve
from .service.requests import CompareRequest
from .service.session import Session

__all__ = ["ComparisonError", "PassedReport", "assert_same", "bit_identical", "compare", "rounding_close"]
SOURCES = ("actual", "expected")


class ComparisonError(AssertionError):
    """A failing ``assert_same``: the message is the one-screen explanation, ``report`` the
    whole report (the pytest plugin writes it out with ``--perpendis-report``)."""

    def __init__(self, report: Report, lead: str | None = None) -> None:
        text = explain(report).rstrip("\n")
        super().__init__(text if lead is None else f"{lead}\n{text}")
        self.report = report


class PassedReport:
    """The report of an ``assert_same`` its bit check or its rounding check passed, made on first use.

    Every attribute and display of :class:`Report` is there (``verdict``, ``to_text()``,
    the notebook's rich display); ``report`` is the :class:`Report` itself.
    """

    __slots__ = ("_args", "_report")

    def __init__(self, a: Tensor, b: Tensor, options: ComparisonOptions) -> None:
        self._args: tuple[Tensor, Tensor, ComparisonOptions] | None = (a, b, options)
        self._report: Report | None = None

    @property
    def report(self) -> Report:
        if self._report is None:
            a, b, options = self._args  # type: ignore[misc]
            self._report, self._args = served(a, b, options), None
        return self._report

    def __getattr__(self, name: str) -> Any:
        return getattr(self.report, name)

    def __repr__(self) -> str:
        return repr(self.report)


def served(a: Tensor, b: Tensor, options: ComparisonOptions, ref: Tensor | None = None) -> Report:
    """The report of A against B as the service makes it: the typed request of the tensors in
    memory, through ``service.serve`` on a session of its own (a test's comparisons share no
    state), and the report the session keeps; bad input is raised again as :class:`InputError`."""
    inputs = {"a": a, "b": b, **({} if ref is None else {"ref": ref})}
    session = Session()
    raised(serve(CompareRequest(inputs, options, {}), {}, session=session))
    return session.report()


@keyword_front  # called as compare(a, b, preset, atol, rtol, *, depth, ref, sources, task, check_dtype)
def compare(a: Tensor, b: Tensor, options: ComparisonOptions, ref: Tensor | None) -> Report:
    """The report of A against B, made by the service (:func:`served`)."""
    return served(a, b, options, ref)


def bit_identical(a: Tensor, b: Tensor, options: ComparisonOptions) -> bool:
    """Whether the full analysis of A against B would say "identical" (and so pass),
    decided without it: same format, same shape, the same raw bits.

    The full analysis calls a pair identical exactly then (whatever the tolerance: bit-equal
    NaNs a preset fails as ``equal_nan=False`` are still identical), and never when the
    shapes or dtypes differ. ``options`` were checked when made, as the full analysis needs.
    """
    if a.format != b.format or a.shape != b.shape or a.is_complex != b.is_complex:
        return False
    return bool(np.array_equal(bits.raw_bits(a.array, a.fmt), bits.raw_bits(b.array, b.fmt)))


OUTLIER_FACTOR = 4.0  # how far past the rounding bound the few elements outside the share may lie


def rounding_close(a: Tensor, b: Tensor, options: ComparisonOptions) -> bool:
    """Whether A and B differ by rounding only, so the full analysis would pass them,
    decided in a few vectorised passes: same float format and shape, every element finite
    on both sides and within the tolerance (the engine's own test), and measured against
    ``max(|B|, RMS of B)`` as the diagnosis measures rounding, at least
    ``ROUNDING_SHARE`` (99%) of the differing elements within ``ROUNDOFF_FACTOR·u·depth``
    (8 u at depth 1) and none past ``OUTLIER_FACTOR`` times that.

    Why that implies a pass: the tolerance holds, so the only error findings left are the
    structure tests', and each names a relation only past the same rounding bound
    (``rounding_bound``: 8·u·depth of B's size) on a statistic of many elements (a fitted
    offset or scale, a median, a sign test with a median effect, an RMS distance), which
    99% of elements within the bound and the rest within 4 times it cannot carry past it.
    ``tests/test_assert_same_fast.py`` holds the two to the same outcome on random and
    structured few-ULP pairs. NaN and infinity, even equal on both sides, take the full
    analysis; signed zeros are equal values here, as they are to the tolerance.
    """
    tol, depth = options.tolerance(a.fmt), options.depth
    fmt = a.fmt
    if (a.format != b.format or a.shape != b.shape or a.is_complex or b.is_complex or not fmt.is_float
            or not (a.lossless and b.lossless) or a.size == 0):
        return False
    x, y = bits.to_float64(a.array, fmt), bits.to_float64(b.array, fmt)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(np.subtract(x, y, out=x), out=x)
        ref = np.abs(y, out=y)
        rule = tol.rule
        if rule.arithmetic == "float64" and rule.test == "allclose" and rule.scale_by == "b":
            if not np.all(diff <= tol.atol + tol.rtol * ref):  # NaN and inf differences fail here too
                return False
        elif failing(diff, ref, None, bits.raw_bits(a.array, fmt), bits.raw_bits(b.array, fmt), fmt, tol)[0].any():
            return False
        flat = ref.reshape(-1)
        b_rms = float(np.sqrt(np.dot(flat, flat) / flat.size))
        if not math.isfinite(b_rms) or b_rms == 0:
            return False
        bound = ROUNDOFF_FACTOR * fmt.unit_roundoff * depth
        scaled = np.divide(diff, np.maximum(ref, b_rms, out=ref), out=ref)  # finite: ref >= b_rms > 0
        if not scaled.max() <= OUTLIER_FACTOR * bound:  # also False on a NaN
            return False
        beyond = int(np.count_nonzero(scaled > bound))
        return beyond == 0 or beyond <= (1 - ROUNDING_SHARE) * np.count_nonzero(diff)


FAIL_ON = ("verdict", "prediction")


def assert_same(a: Any, b: Any, preset: str | None = None, atol: float | None = None, rtol: float | None = None,
                *, depth: float = 1.0, ref: Any = None, task: Any = None, fail_on: str = "verdict",
                check_dtype: bool = True) -> Report:
    """Pass when A and B are identical or differ by rounding within tolerance; else raise.

    ``b`` is the expected value; ``depth``, ``ref``, ``task`` and ``check_dtype`` are :func:`compare`'s
    (``task="logits"``: also judge whether the prediction changes).
    ``fail_on="prediction"`` fails only when the prediction changes beyond rounding (the task
    section's verdict ``changed``), as users of float16 and int8 models want whose logits
    legitimately drift; it checks the last axis unless ``task`` says otherwise.
    The :class:`ComparisonError` (an AssertionError) says on one screen the verdict, the top
    finding with where it is and its causes, the worst element, and the bits at the first
    difference.  Returns the report when it passes (for a pair equal bit for bit, a
    :class:`PassedReport` that makes it when first used).
    """
    __tracebackhide__ = True  # pytest: the failure points at the test's line, not this one
    if fail_on not in FAIL_ON:
        raise InputError(f"fail_on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}", where="fail_on")
    if fail_on == "prediction" and task is None:
        task = "auto"
    ta, tb = as_tensor(a, SOURCES[0]), as_tensor(b, SOURCES[1])
    options = ComparisonOptions(preset, atol, rtol, depth, check_dtype, task)
    if ref is None and bit_identical(ta, tb, options):
        return PassedReport(ta, tb, options)  # type: ignore[return-value]
    if ref is None and options.task is None and rounding_close(ta, tb, options):
        return PassedReport(ta, tb, options)  # type: ignore[return-value]
    report = served(ta, tb, options, None if ref is None else as_tensor(ref, "reference"))
    if fail_on == "prediction":
        if report.task is None:
            raise InputError(f"fail_on='prediction' needs a task check, and there was none: {report.notes[-1:]}")
        if report.task.verdict == "changed":
            raise ComparisonError(report, lead="\n".join(task_lines(report.task)))
    elif report.verdict == "investigate":
        raise ComparisonError(report)
    return report
