"""``perpendis.compare`` and ``assert_same``: the report from in-memory arrays, in a
notebook cell or as a test assertion for pytest suites comparing model outputs.

Both take NumPy arrays, anything ``np.asarray`` accepts, or PyTorch tensors, including
bfloat16 and float8 ones, which NumPy cannot hold: their raw bits are taken as they are.
torch is never imported here: a tensor's own module is used, so NumPy users need no torch.
"""

from __future__ import annotations

from typing import Any

from .compare import compare_values as compare
from .errors import InputError
from .explain import explain
from .report import Report
from .task_text import task_lines


class ComparisonError(AssertionError):
    """A failing ``assert_same``: the message is the one-screen explanation, ``report`` the
    whole report (the pytest plugin writes it out with ``--perpendis-report``)."""

    def __init__(self, report: Report, lead: str | None = None) -> None:
        text = explain(report).rstrip("\n")
        super().__init__(text if lead is None else f"{lead}\n{text}")
        self.report = report


FAIL_ON = ("verdict", "prediction")


def assert_same(a: Any, b: Any, preset: str | None = None, atol: float | None = None, rtol: float | None = None,
                *, fail_on: str = "verdict", **options: Any) -> Report:
    """Pass when A and B are identical or differ by rounding within tolerance; else raise.

    ``b`` is the expected value; ``options`` are :func:`compare`'s ``depth``, ``ref`` and
    ``task`` (``task="logits"``: also judge whether the prediction changes).
    ``fail_on="prediction"`` fails only when the prediction changes beyond rounding (the task
    section's verdict ``changed``), as users of float16 and int8 models want whose logits
    legitimately drift; it checks the last axis unless ``task`` says otherwise.
    The :class:`ComparisonError` (an AssertionError) says on one screen the verdict, the top
    finding with where it is and its causes, and the bits at the first difference.  Returns
    the report when it passes.
    """
    __tracebackhide__ = True  # pytest: the failure points at the test's line, not this one
    if fail_on not in FAIL_ON:
        raise InputError(f"fail_on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}", where="fail_on")
    if fail_on == "prediction" and options.get("task") is None:
        options["task"] = "auto"
    report = compare(a, b, preset, atol, rtol, sources=("actual", "expected"), **options)
    if fail_on == "prediction":
        if report.task is None:
            raise InputError(f"fail_on='prediction' needs a task check, and there was none: {report.notes[-1:]}")
        if report.task.verdict == "changed":
            raise ComparisonError(report, lead="\n".join(task_lines(report.task)))
    elif report.verdict == "investigate":
        raise ComparisonError(report)
    return report
