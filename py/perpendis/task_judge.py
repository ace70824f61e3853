"""The task check run on a prepared comparison: rows read in blocks, the finding, the offer.

:func:`assess` is called once the report's numbers and findings are made
(:meth:`perpendis.compare.Prepared.finish`, the report's one writer, puts in what it
returns).  It reads the compared elements again in blocks of whole rows, from memory or
through the streamed reader (rows are row-local, so a block boundary never splits a row
and the merged result is the same whichever way the elements arrive), makes
:class:`perpendis.task.TaskResult` for ``report.task``, and a ``prediction`` finding:
an error when a flip is beyond the rounding bound (the verdict becomes ``investigate``),
information when every flip is within it.

With no task asked, it *offers* one when the pair is shaped like per-row scores: a
float pair of at least two axes whose last axis has at least :data:`OFFER_MIN_CLASSES`
entries, over at least :data:`OFFER_MIN_ROWS` rows.  That is judged on the shape alone
(reading nothing, so it costs nothing), and is a hint, not a claim: a weight matrix is
offered one too.  ``report.task_offer`` then says the axis and sizes, which the page
turns into a one-click toggle and the text into a line saying how to ask.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .bits import format_of, to_float64
from .report import Finding, Report, place
from .task import (
    BLOCK_ELEMENTS,
    TOP_K,
    TaskPartial,
    TaskResult,
    TaskSpec,
    classes_axis,
    detect_kind,
    judge_rows,
    summary,
)

if TYPE_CHECKING:
    from .compare import Prepared

OFFER_MIN_CLASSES = 10
OFFER_MIN_ROWS = 2
DETECT_ROWS = 256  # rows of B read to detect the kind


def _blocks(prepared: Prepared, axis: int, shape: tuple[int, ...]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(first_row, a_rows, b_rows)`` in float64, blocks of whole rows in row order."""
    fmt = format_of(prepared.report.compared_as)
    classes = shape[axis]
    n_rows = math.prod(shape) // classes
    step = max(1, BLOCK_ELEMENTS // classes)
    if prepared.a is not None and prepared.b is not None:
        if axis == len(shape) - 1:
            a, b = prepared.a.reshape(n_rows, classes), prepared.b.reshape(n_rows, classes)
        else:  # classes moved last: one copy in the compared format's storage
            a, b = (np.moveaxis(x.reshape(shape), axis, -1).reshape(n_rows, classes) for x in (prepared.a, prepared.b))
        for r in range(0, n_rows, step):
            yield r, to_float64(a[r : r + step], fmt), to_float64(b[r : r + step], fmt)
        return
    for r in range(0, n_rows, step):
        stop = min(n_rows, r + step)
        parts = list(prepared.chunks(r * classes, stop * classes))
        a = np.concatenate([p[1] for p in parts]).reshape(-1, classes)
        b = np.concatenate([p[2] for p in parts]).reshape(-1, classes)
        yield r, to_float64(a, fmt), to_float64(b, fmt)


def judge(prepared: Prepared, spec: TaskSpec) -> TaskResult:
    """The task section of a prepared comparison with compared elements (see the module docstring)."""
    shape = tuple(prepared.report.compared_shape or ())
    axis = classes_axis(spec.axis, shape)
    ks = sorted({min(TOP_K, shape[axis]), min(spec.k, shape[axis])})
    kind = spec.kind
    total = TaskPartial()
    for first, a, b in _blocks(prepared, axis, shape):
        if kind is None:
            kind = detect_kind(b[:DETECT_ROWS])
        total = total.merge(judge_rows(a, b, first, kind, ks, prepared.tol.atol, prepared.tol.rtol))
    return summary(total, kind=kind or "logits", axis=axis, shape=shape, ks=ks, atol=prepared.tol.atol,
                   rtol=prepared.tol.rtol)


def _skip_reason(prepared: Prepared, spec: TaskSpec) -> str | None:
    report = prepared.report
    if not report.compared_shape or report.n_elements == 0:
        return "nothing was compared"
    if prepared.tol.complex:
        return "the values are complex"
    if prepared.a is None and prepared.read is not None:
        shape = report.compared_shape
        if classes_axis(spec.axis, shape) != len(shape) - 1:
            return "a streamed pair is read in C order, so its classes axis must be the last one"
    return None


def offer(report: Report) -> dict[str, int] | None:
    """The task check the pair's shape suggests, or None (see the module docstring)."""
    shape = report.compared_shape or []
    if len(shape) < 2 or not format_of(report.compared_as).is_float or report.n_elements == 0:
        return None
    classes, rows = shape[-1], math.prod(shape[:-1])
    if classes < OFFER_MIN_CLASSES or rows < OFFER_MIN_ROWS:
        return None
    return {"axis": len(shape) - 1, "classes": classes, "rows": rows}


def prediction_finding(task: TaskResult) -> Finding | None:
    """The finding a task section makes: an error for flips rounding cannot explain,
    information for flips it can; nothing when no prediction changed."""
    if task.n_flips == 0:
        return None
    first = task.flips[0]
    rows = [f["row"] for f in task.flips]
    shown = ", ".join(str(tuple(r)) for r in rows[:5]) + (" ..." if task.n_flips > 5 else "")
    if task.n_flips_beyond_rounding:
        message = (
            f"the top-1 class changes at {task.n_flips_beyond_rounding} of {task.rows} rows by more than rounding "
            f"allows: at row {tuple(first['row'])} B prefers class {first['b_top']} over A's {first['a_top']} by "
            f"{first['margin']:.4g}, beyond the bound {first['bound']:.4g} (atol + rtol·|B| at the two classes)"
        )
        return Finding("prediction", "error", message, place(f"rows {shown}", axis=task.axis, axis_size=task.classes,
                                                             element=first["element"], rows=rows))
    message = (
        f"the top-1 class changes at {task.n_flips} of {task.rows} rows, each a near-tie within the rounding bound "
        f"(B's margin at most atol + rtol·|B| at the two classes): rounding can explain it"
    )
    return Finding("prediction", "info", message, place(f"rows {shown}", axis=task.axis, axis_size=task.classes,
                                                        element=first["element"], rows=rows))


@dataclass(frozen=True)
class TaskOutcome:
    """What the task check adds to a report: its section or the offer of one, a finding, a note."""

    task: TaskResult | None = None
    offer: dict[str, int] | None = None
    finding: Finding | None = None
    note: str | None = None


def assess(prepared: Prepared, spec: TaskSpec | None) -> TaskOutcome:
    """The task section (or the offer of one) of a prepared comparison, with its finding;
    :meth:`perpendis.compare.Prepared.finish` puts them in the report, its one writer."""
    if spec is None:
        return TaskOutcome(offer=offer(prepared.report))
    reason = _skip_reason(prepared, spec)
    if reason is not None:
        return TaskOutcome(note=f"no task check: {reason}")
    task = judge(prepared, spec)
    return TaskOutcome(task=task, finding=prediction_finding(task))


def with_finding(findings: list[Finding], verdict: str, finding: Finding | None) -> tuple[list[Finding], str]:
    """The findings with the prediction finding in its place (an error after the other errors,
    information last) and the verdict it implies: ``investigate`` for an error."""
    if finding is None:
        return findings, verdict
    at = sum(f.severity == "error" for f in findings) if finding.severity == "error" else len(findings)
    return [*findings[:at], finding, *findings[at:]], "investigate" if finding.severity == "error" else verdict
