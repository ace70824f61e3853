"""The task check run on a prepared comparison: rows read in blocks, the finding, the offer.

:func:`assess` is called once the report's numbers and findings are made
(:meth:`perpendis.engine.compare.Prepared.finish`, the report's one writer, puts in what it
returns).  It reads the compared elements again in blocks of whole rows, from memory or
through the streamed reader (rows are row-local, so a block boundary never splits a row
and the merged result is the same whichever way the elements arrive), makes
:class:`perpendis.engine.task.TaskResult` for ``report.task``, and a ``prediction`` finding:
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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..numerics.bits import format_of, to_float64
from ..report.model import Finding, Report, place
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
    from .fold.chunk import Chunk

OFFER_MIN_CLASSES = 10
OFFER_MIN_ROWS = 2
DETECT_ROWS = 256  # rows of B read to detect the kind


def _blocks(prepared: Prepared, axis: int, shape: tuple[int, ...]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(first_row, a_rows, b_rows)`` in the compared format's storage, blocks of whole rows in row order."""
    classes = shape[axis]
    n_rows = math.prod(shape) // classes
    step = max(1, BLOCK_ELEMENTS // classes)
    if prepared.a is not None and prepared.b is not None:
        if axis == len(shape) - 1:
            a, b = prepared.a.reshape(n_rows, classes), prepared.b.reshape(n_rows, classes)
        else:  # classes moved last: one copy in the compared format's storage
            a, b = (np.moveaxis(x.reshape(shape), axis, -1).reshape(n_rows, classes) for x in (prepared.a, prepared.b))
        for r in range(0, n_rows, step):
            yield r, a[r : r + step], b[r : r + step]
        return
    for r in range(0, n_rows, step):
        stop = min(n_rows, r + step)
        parts = list(prepared.chunks(r * classes, stop * classes))
        a = np.concatenate([p[1] for p in parts]).reshape(-1, classes)
        b = np.concatenate([p[2] for p in parts]).reshape(-1, classes)
        yield r, a, b


class _Judging:
    """Blocks of whole rows judged in row order into one partial; the kind is detected from
    the first block's rows of B unless it was given."""

    def __init__(self, prepared: Prepared, spec: TaskSpec) -> None:
        self.shape = tuple(prepared.report.compared_shape or ())
        self.axis = classes_axis(spec.axis, self.shape)
        self.classes = self.shape[self.axis]
        self.ks = sorted({min(TOP_K, self.classes), min(spec.k, self.classes)})
        self.kind = spec.kind
        self.atol, self.rtol = prepared.tol.atol, prepared.tol.rtol
        self.fmt = format_of(prepared.report.compared_as)
        self.total = TaskPartial()

    def block(self, first: int, a: np.ndarray, b: np.ndarray) -> None:
        """Judge rows ``first ...`` given in the compared format's storage, ``(rows, classes)``."""
        a, b = to_float64(a, self.fmt), to_float64(b, self.fmt)
        if self.kind is None:
            self.kind = detect_kind(b[:DETECT_ROWS])
        self.total = self.total.merge(judge_rows(a, b, first, self.kind, self.ks, self.atol, self.rtol))

    def result(self) -> TaskResult:
        return summary(self.total, kind=self.kind or "logits", axis=self.axis, shape=self.shape, ks=self.ks,
                       atol=self.atol, rtol=self.rtol)


def judge(prepared: Prepared, spec: TaskSpec) -> TaskResult:
    """The task section of a prepared comparison with compared elements (see the module docstring)."""
    if prepared.task_rows is not None:  # judged as the fold read the elements (RowFeed)
        return prepared.task_rows.result()
    judging = _Judging(prepared, spec)
    for first, a, b in _blocks(prepared, judging.axis, judging.shape):
        judging.block(first, a, b)
    return judging.result()


class RowFeed:
    """Judges whole rows as a streamed fold's chunks pass by, so the files are read once.

    Chunks need not end on a row boundary: what is left of a row waits for the next chunk.
    Rows are judged in the blocks :func:`_blocks` makes, so the result is the one a second
    read would give.  Only for a streamed pair folded whole, with its classes on the last axis.
    """

    def __init__(self, prepared: Prepared, spec: TaskSpec) -> None:
        self.judging = _Judging(prepared, spec)
        self.step = max(1, BLOCK_ELEMENTS // self.judging.classes) * self.judging.classes
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.count = 0
        self.row = 0

    @classmethod
    def offer(cls, prepared: Prepared, spec: TaskSpec | None) -> RowFeed | None:
        """A feed for this fold, or None when rows are better read afterwards (or not at all)."""
        shape = prepared.report.compared_shape or []
        if spec is None or prepared.read is None or prepared.size == 0 or prepared.tol.complex:
            return None
        if classes_axis(spec.axis, shape) != len(shape) - 1:
            return None
        return cls(prepared, spec)

    def tee(self, chunks: Iterable[Chunk]) -> Iterator[Chunk]:
        """The chunks, unchanged, judged on the way; the last rows once they have all passed."""
        for chunk in chunks:
            self.pending.append((chunk[1], chunk[2]))
            self.count += len(chunk[1])
            if self.count >= self.step:
                self._judge(final=False)
            yield chunk
        self._judge(final=True)

    def _judge(self, *, final: bool) -> None:
        if not self.pending:
            return
        a = np.concatenate([p[0] for p in self.pending])
        b = np.concatenate([p[1] for p in self.pending])
        whole = len(a) if final else len(a) // self.step * self.step
        classes = self.judging.classes
        for start in range(0, whole, self.step):
            rows_a = a[start : start + self.step].reshape(-1, classes)
            self.judging.block(self.row, rows_a, b[start : start + self.step].reshape(-1, classes))
            self.row += len(rows_a)
        self.pending = [(a[whole:], b[whole:])] if whole < len(a) else []
        self.count = len(a) - whole


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
    :meth:`perpendis.engine.compare.Prepared.finish` puts them in the report, its one writer."""
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
