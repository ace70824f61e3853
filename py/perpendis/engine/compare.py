"""Compare two tensors: align them (:mod:`perpendis.engine.align`), fold their aligned chunks
into a partial result (:mod:`perpendis.engine.fold`), and finish it into the diagnosed report.

The fold is the whole design: each chunk of C-order elements becomes a
:class:`~perpendis.engine.fold.partial.Partial` holding only what merges exactly plus
bounded samples, and partials merge pairwise.  Small arrays are one chunk; huge files can
stream through :func:`compare_chunks` with bounded memory; cancelling is stopping the fold.
A comparison can also be cut into shares folded by other workers (:meth:`Prepared.shares`),
whose partials come back as bytes (:mod:`perpendis.engine.fold.codec`).  This module is the
report's one writer: it puts in the numbers of the merged partial, the diagnosis' findings
and verdict, and the task check.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..inputs.adopt import adopt_dtype
from ..inputs.tensor import Tensor
from ..numerics.bits import Format, format_of
from ..numerics.tolerance import Tolerance, printed_digits, resolve
from ..report.model import Report
from . import task_judge
from .align import Aligned, align, compared_format
from .fold.chunk import CHUNK, Chunk, aligned_chunks, fold
from .fold.numbers import numbers, print_limited_note
from .fold.partial import Partial
from .fold.share import Share
from .keywords import keyword_front
from .options import DEFAULT, ComparisonOptions
from .reference import dynamo_rmse, reference
from .task import TaskSpec, task_spec


def _numbers(
    report: Report,
    p: Partial,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    rmse: tuple[float, float] | None = None,
) -> None:
    """Fill the report's numeric fields from the merged partial (:func:`~.fold.numbers.numbers`)."""
    dtypes = (str(report.a["dtype"]), str(report.b["dtype"]))
    for name, value in numbers(p, fmt, shape, tol, rmse, dtypes).items():
        setattr(report, name, value)
    report.identical = p.n_diff == 0 and report.shape_match and report.dtype_match
    note = print_limited_note(p)
    if note:
        report.notes.append(note)


def compare_chunks(
    a_info: dict[str, object],
    b_info: dict[str, object],
    fmt: Format,
    shape: tuple[int, ...],
    chunks: Iterable[Chunk],
    *,
    tolerance: Tolerance | None = None,
    progress: Callable[[float], object] | None = None,
    depth: float = 1.0,
) -> Report:
    """The diagnosed report of two equally shaped inputs given as aligned C-order chunks.

    ``chunks`` yields ``(flat_start, a_flat_chunk, b_flat_chunk)`` with both chunks held
    in ``fmt``'s storage; ``a_info``/``b_info`` are :meth:`Tensor.describe` dicts.  This
    is the entry for inputs too big to load: stream them through here.
    """
    prepared = prepare_chunks(a_info, b_info, fmt, shape, lambda start, stop: chunks, tolerance=tolerance, depth=depth)
    return prepared.finish(prepared.fold(progress=progress))


def prepare_chunks(
    a_info: dict[str, object],
    b_info: dict[str, object],
    fmt: Format,
    shape: tuple[int, ...],
    read: Callable[[int, int], Iterable[Chunk]],
    *,
    tolerance: Tolerance | None = None,
    depth: float = 1.0,
    notes: Iterable[str] = (),
    task: Any = None,
) -> Prepared:
    """:func:`compare_chunks` before its fold, for inputs read as chunks by ``read(start, stop)``;
    ``notes`` are what aligning the inputs said, ``task`` as for :func:`compare`."""
    report = _empty_report(a_info, b_info, None, fmt)
    report.notes = list(notes)
    report.compared_shape = list(shape)
    report.layout = {"kind": "same"}
    return Prepared(report, tolerance or resolve(fmt), depth, read=read, task=task_spec(task))


def _empty_report(
    a_info: dict[str, object], b_info: dict[str, object], ref_info: dict[str, object] | None, fmt: Format
) -> Report:
    return Report(
        a=a_info,
        b=b_info,
        ref=ref_info,
        shape_match=a_info["shape"] == b_info["shape"],
        dtype_match=a_info["dtype"] == b_info["dtype"],
        compared_as=fmt.name,
        compared_shape=None,
    )


# ---------------------------------------------------------------------------------------
# The in-memory entry point: prepare (align, reference), fold (here or in shares), finish.


@dataclass
class Prepared:
    """A comparison up to its numbers: the report so far and the aligned elements to fold.

    The fold can run here (:meth:`fold`) or be cut into :meth:`shares` folded by other
    workers (:class:`perpendis.service.helper.Helper`); :meth:`finish` takes the merged partial either way, and
    the report is the same.
    """

    report: Report
    tol: Tolerance
    depth: float
    a: np.ndarray | None = None  # flat C-order elements in the compared format's storage
    b: np.ndarray | None = None
    read: Callable[[int, int], Iterable[Chunk]] | None = None  # chunks of elements start..stop, when not held
    rmse: tuple[float, float] | None = None  # A's and B's RMSE against a float64 reference, for dynamo's rule
    task: TaskSpec | None = None  # the task check asked for (perpendis.task), None: only offered
    task_rows: Any = None  # task_judge's rows judged during the fold, when it could (a streamed pair)
    check_dtype: bool = True  # a dtype mismatch is an error (diagnose); off: judged in the narrower float
    preset: str | None = None  # the preset the user declared (None: the format chose it)

    @property
    def size(self) -> int:
        if self.read is not None:
            return math.prod(self._shape())
        return 0 if self.a is None else self.a.size

    def chunks(self, start: int, stop: int) -> Iterable[Chunk]:
        """Aligned chunks of elements ``start`` to ``stop``."""
        if self.read is not None:
            return self.read(start, stop)
        return aligned_chunks(self.a[start:stop], self.b[start:stop], offset=start)  # type: ignore[index]

    def _lossy(self) -> tuple[int | None, int | None]:
        return printed_digits(self.report.a), printed_digits(self.report.b)

    def _shape(self) -> tuple[int, ...]:
        return tuple(self.report.compared_shape or ())

    def fold(
        self, start: int = 0, stop: int | None = None, progress: Callable[[float], object] | None = None
    ) -> Partial:
        """The partial of elements ``start`` to ``stop`` (``start`` a multiple of :data:`CHUNK`)."""
        stop = self.size if stop is None else stop
        fmt = format_of(self.report.compared_as)
        chunks = self.chunks(start, stop)
        # A streamed pair folded whole has its rows judged on the way (read once, not twice).
        feed = task_judge.RowFeed.offer(self, self.task) if (start, stop) == (0, self.size) else None
        if feed is not None:
            chunks = feed.tee(chunks)
        partial = fold(chunks, fmt, self._shape(), self.tol, progress=progress, lossy=self._lossy(), total=stop - start)
        self.task_rows = feed.judging if feed is not None else None
        return partial

    def shares(self, count: int, first: float = 1.0) -> list[Share]:
        """The elements cut into at most ``count`` runs of whole chunks, the first ``first``
        times as long as each other one (as near as whole chunks allow)."""
        chunks = -(-self.size // CHUNK)
        total = first + count - 1
        ends = [0.0] + [(first + i) / total for i in range(count)]
        bounds = sorted({min(self.size, round(f * chunks) * CHUNK) for f in ends})
        tol, shape, lossy = self.tol, list(self._shape()), list(self._lossy())
        return [
            Share(lo, hi, self.report.compared_as, shape, tol.atol, tol.rtol, tol.preset, lossy, tol.complex)
            for lo, hi in itertools.pairwise(bounds)
        ]

    def share_bytes(self, share: Share) -> tuple[np.ndarray, np.ndarray]:
        """The raw bytes of a share's elements of A and B (views, no copy)."""
        return tuple(x[share.start : share.stop].view(np.uint8) for x in (self.a, self.b))  # type: ignore[return-value,index]

    def finish(self, partial: Partial | None, notes: Iterable[str] = (), *, keep_aligned: bool = True) -> Report:
        """The diagnosed report, from the merged partial of all elements (None: nothing was
        compared); ``notes`` are the caller's, said after the comparison's own.  Without
        ``keep_aligned`` the report lets go of the aligned tensors (a bisect keeps every
        pair's report, and holding their tensors would keep every layer decoded)."""
        from ..diagnosis.diagnose import diagnose

        if partial is not None:
            _numbers(self.report, partial, format_of(self.report.compared_as), self._shape(), self.tol, self.rmse)
        self.report.findings, self.report.verdict = diagnose(self.report, depth=self.depth,
                                                             check_dtype=self.check_dtype, preset=self.preset)
        task = task_judge.assess(self, self.task)
        self.report.task, self.report.task_offer = task.task, task.offer
        self.report.findings, self.report.verdict = task_judge.with_finding(
            self.report.findings, self.report.verdict, task.finding
        )
        self.report.notes += [task.note] if task.note else []
        self.report.notes += notes
        if not keep_aligned:
            self.report.aligned = None
        return self.report


def _keeps_parts(aligned: Aligned) -> bool:
    """Whether the compared elements still pair (real, imaginary) along the last axis: a
    transpose that moved that axis breaks the pairs, and their parts are judged apart."""
    perm = aligned.layout.get("perm")
    return aligned.shape is not None and (perm is None or perm[-1] == len(perm) - 1)  # type: ignore[index,arg-type]


def prepare(
    a: Tensor, b: Tensor, options: ComparisonOptions = DEFAULT, *, tolerance: Tolerance | None = None,
    ref: Tensor | None = None,
) -> Prepared:
    """Everything of :func:`compare` before the fold over the elements."""
    a, b, adopted = adopt_dtype(a, b)
    fmt = compared_format(a.fmt, b.fmt)
    tol = tolerance or options.tolerance(fmt)
    aligned = align(a, b, tol)
    if a.is_complex and b.is_complex and _keeps_parts(aligned):
        tol = replace(tol, complex=True)
    report = _empty_report(a.describe(), b.describe(), None if ref is None else ref.describe(), fmt)
    report.notes = adopted + list(aligned.notes)
    report.layout = dict(aligned.layout)
    report.aligned = aligned
    prepared = Prepared(report, tol, options.depth, task=options.task, check_dtype=options.check_dtype,
                        preset=options.preset)
    if ref is not None:
        report.reference = reference(a, b, ref, aligned)
        if tol.rule.rmse and ref.format == "float64" and report.reference is not None:
            prepared.rmse = dynamo_rmse(a, b, ref, aligned)
    if aligned.shape is not None and aligned.a is not None and aligned.b is not None:
        report.compared_shape = list(aligned.shape)
        prepared.a = np.ascontiguousarray(aligned.a).reshape(-1)
        prepared.b = np.ascontiguousarray(aligned.b).reshape(-1)
    return prepared


def compare(
    a: Tensor,
    b: Tensor,
    options: ComparisonOptions = DEFAULT,
    *,
    tolerance: Tolerance | None = None,
    ref: Tensor | None = None,
    progress: Callable[[float], object] | None = None,
    keep_aligned: bool = True,
) -> Report:
    """The full, diagnosed report for A against B (B is the reference of the tolerance test).

    ``tolerance`` wins when given; otherwise ``options`` (:class:`~perpendis.engine.options.ComparisonOptions`:
    preset, atol, rtol, depth, dtype check, task check) are resolved for the compared
    format.  ``keep_aligned`` is as for :meth:`Prepared.finish`.
    """
    prepared = prepare(a, b, options, tolerance=tolerance, ref=ref)
    if prepared.a is None:
        if progress is not None:
            progress(1.0)
        return prepared.finish(None, keep_aligned=keep_aligned)
    return prepared.finish(prepared.fold(progress=progress), keep_aligned=keep_aligned)


@keyword_front  # called as compare_values(a, b, preset, atol, rtol, *, depth, ref, sources, task, check_dtype)
def compare_values(a: Tensor, b: Tensor, options: ComparisonOptions, ref: Tensor | None) -> Report:
    """The report of A against B, folded in this process by :func:`compare` (the front ends
    go through the service instead; the bench scripts and tests call this)."""
    return compare(a, b, options, ref=ref)
