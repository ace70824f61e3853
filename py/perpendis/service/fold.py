"""The parallel fold: one big comparison folded in shares by the core's worker and its
helpers, as a state machine that tells the worker what to send to which helper.

The worker (``app/worker.js``) only carries bytes; the order of the steps, which helper
gets which share, whether the first helper selects order statistics of the errors and
from which values, are decided here.  Steps, in order (``docs/contracts.md``)::

    SHARED ──fold_first_share──▶ FIRST_FOLDED ──merge_partials──▶ MERGED
                                   │ own_errors_for_helper            │ merged_errors
                                   ▼ (optional)                       ▼ select_kept_columns
                                                                   answer(found) ──▶ ANSWERED

1. :meth:`FoldCoordinator.helper_jobs`: the share each helper folds (helper ``i`` gets
   share ``i + 1``; the worker hands it the share's bytes, or the unread files).
2. :meth:`~FoldCoordinator.fold_first_share`: the worker folds share 0 itself meanwhile.
3. :meth:`~FoldCoordinator.own_errors_for_helper`: with one helper and many errors, this
   worker's errors go to that helper while it still folds, so it can select the merged
   quantiles of one error column as soon as it is done (``Helper.select_pooled``).
4. :meth:`~FoldCoordinator.merge_partials`: the helpers' partials merged (a failed
   helper's share is folded here); says whether helper 0's pooled selection stands, or
   which ranks it selects in :meth:`~FoldCoordinator.merged_errors`.
5. :meth:`~FoldCoordinator.select_kept_columns`: the other error columns, selected here
   while the helper selects.
6. :meth:`~FoldCoordinator.answer`: the report, with the helper's order statistics.

A step that meets bad input (a streamed file changed on disk meanwhile) keeps the error;
the later steps do nothing and :meth:`~FoldCoordinator.answer` raises it, for the one
boundary (:mod:`perpendis.service.boundary`) to answer.  A step called out of order is a
bug in the worker and raises :class:`RuntimeError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import astuple, dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from ..engine.compare import Prepared
from ..engine.fold.chunk import CHUNK
from ..engine.fold.codec import partial_from_bytes
from ..engine.fold.partial import Partial
from ..engine.fold.quantiles import ERROR_COLUMNS, Ranks
from ..engine.fold.share import Share
from ..errors import InputError
from ..inputs.formats.buffer import BytesLike, as_view
from .helper import OFFLOADED

Progress = Callable[[str, float], object]

FOLD_MIN = 4 * CHUNK
"""Fewest elements worth sharing with other workers: below it, moving the bytes costs more than it saves."""

OWN_SHARE = 1.4
"""How much longer the share folded in this worker is than another worker's, for a pair held
here: the others first copy their bytes in and their partial out, a quarter of their
fold's time in the browser (measured at 16 M float32: 20 + 10 ms around a 115 ms fold)."""

OFFLOAD_MIN = 1 << 19
"""Fewest stored errors whose quantiles are worth selecting on two workers at once: at
16 M float32 (1.7 M errors) each column takes 23-32 ms, and moving one 2-4 ms."""


class Step(Enum):
    SHARED = "shared"
    FIRST_FOLDED = "first folded"
    MERGED = "merged"
    ANSWERED = "answered"


@dataclass(frozen=True)
class SelectJob:
    """What helper 0 is to select: ``pooled``, its answer to :meth:`FoldCoordinator.own_errors_for_helper`
    stands; else the order statistics at ``ranks`` of :meth:`FoldCoordinator.merged_errors`."""

    helper: int
    pooled: bool
    ranks: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"helper": self.helper, "pooled": self.pooled}
        if self.ranks is not None:
            out["ranks"] = self.ranks
        return out


@dataclass
class FoldCoordinator:
    """One comparison folded in shares: what each step needs from the ones before it."""

    prepared: Prepared
    shares: list[Share]
    make_answer: Callable[[Partial], dict[str, Any]]
    progress: Progress | None = None
    stage: str = "compare"
    head: dict[str, Any] = field(default_factory=dict)
    step: Step = Step.SHARED
    error: InputError | None = None
    first: Partial | None = None
    pooled: bool = False
    merged: Partial | None = None
    ranks: list[int] = field(default_factory=list)

    @classmethod
    def offer(
        cls,
        prepared: Prepared,
        workers: int,
        make_answer: Callable[[Partial], dict[str, Any]],
        progress: Progress | None = None,
        *,
        stage: str = "compare",
    ) -> FoldCoordinator | None:
        """A coordinator for ``workers`` workers, or None when the comparison is too small
        to be worth sharing (:data:`FOLD_MIN`), or there is one worker."""
        if workers < 2 or prepared.size < FOLD_MIN:
            return None
        # Held here, the first share needs no copying out and in: it is folded here, and longer.
        shares = prepared.shares(workers, first=1.0 if prepared.a is None else OWN_SHARE)
        return cls(prepared, shares, make_answer, progress, stage)

    def _expect(self, *steps: Step) -> None:
        if self.step not in steps:
            wanted = " or ".join(s.value for s in steps)
            raise RuntimeError(f"fold step out of order: at {self.step.value!r}, expected {wanted}")

    def helper_jobs(self) -> list[dict[str, Any]]:
        """Which share each helper folds: ``{"helper": i, "share": JSON, "index": i + 1}``."""
        return [{"helper": i, "share": share.to_json(), "index": i + 1} for i, share in enumerate(self.shares[1:])]

    def share_bytes(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The raw bytes of A's and B's elements in share ``index`` (views)."""
        return self.prepared.share_bytes(self.shares[index])

    def share_places(self, index: int, payloads: Mapping[str, Any]) -> list[list[Any] | None]:
        """Where A's and B's bytes of share ``index`` lie in the request's ``payloads``, as
        ``[key, offset, length]``; None for a side whose elements are in no payload (converted
        on loading, or parsed from text).

        The worker still holds each payload as the JavaScript buffer it copied in, byte for
        byte, so it can hand another worker that buffer (transferred, not copied) rather than
        copying the share's bytes out of the heap: 2 x 27 MB for 16 M float32 on 2 cores,
        35-40 ms in the browser before the fold could start.
        """
        return [_place(part, payloads) for part in self.share_bytes(index)]

    def _guarded(self, run: Callable[[], Any]) -> Any:
        if self.error is not None:
            return None
        try:
            return run()
        except InputError as err:
            self.error = err
            return None

    def fold_first_share(self) -> None:
        """Fold share 0 here, while the helpers fold theirs."""
        self._expect(Step.SHARED)
        self.step = Step.FIRST_FOLDED
        progress, stage, own = self.progress, self.stage, self.shares[0]
        told = None if progress is None else (lambda f: progress(stage, f))
        self.first = self._guarded(lambda: self.prepared.fold(own.start, own.stop, told))

    def own_errors_for_helper(self) -> tuple[str, np.ndarray] | None:
        """This worker's :data:`~perpendis.service.helper.OFFLOADED` errors and their
        :class:`~perpendis.engine.compare.Ranks` (JSON), for helper 0 to select in together with
        its own while this worker waits for its partial; None when that cannot pay or cannot
        be exact: too few errors, or more than one helper (the first would lack the others'
        errors), or a sample already cut to its cap."""
        self._expect(Step.FIRST_FOLDED)
        own = self.first
        if self.error is not None or own is None:
            return None
        errors = own.errors
        if len(self.shares) != 2 or errors.kept < OFFLOAD_MIN // 2 or errors.bound is not None:
            return None
        self.pooled = True
        return json.dumps(astuple(Ranks.of(own))), errors.column(OFFLOADED)

    def merge_partials(self, parts: list[BytesLike | None]) -> SelectJob | None:
        """Merge the helpers' partials (bytes, in share order after the first) into this
        worker's; a share whose helper failed (None) is folded here.

        With at least :data:`OFFLOAD_MIN` errors, says how helper 0 selects the order
        statistics of the merged :data:`~perpendis.service.helper.OFFLOADED` errors while
        :meth:`select_kept_columns` does the others; None otherwise.
        """
        self._expect(Step.FIRST_FOLDED)
        self.step = Step.MERGED
        return self._guarded(lambda: self._merge(parts))

    def _merge(self, parts: list[BytesLike | None]) -> SelectJob | None:
        prepared, shares = self.prepared, self.shares
        merged = self.first or prepared.fold(shares[0].start, shares[0].stop)
        self.first = None
        for share, data in zip(shares[1:], parts, strict=True):
            merged = merged.merge(prepared.fold(share.start, share.stop) if data is None else partial_from_bytes(data))
        self.merged, self.ranks = merged, Ranks.of(merged).wanted()
        if not self.ranks or merged.errors.kept < OFFLOAD_MIN:
            return None
        whole = merged.errors.bound is None and merged.errors.kept <= merged.errors.cap
        if self.pooled and parts[0] is not None and whole:
            return SelectJob(0, pooled=True)
        return SelectJob(0, pooled=False, ranks=self.ranks)

    def merged_errors(self) -> np.ndarray:
        """The merged :data:`~perpendis.service.helper.OFFLOADED` errors, for a helper that does not hold them."""
        self._expect(Step.MERGED)
        return self.merged.errors.column(OFFLOADED)

    def select_kept_columns(self) -> None:
        """Select the order statistics of the error columns other than :data:`~perpendis.service.helper.OFFLOADED`."""
        self._expect(Step.MERGED)
        if self.error is not None:
            return
        errors = self.merged.errors
        for column in ERROR_COLUMNS.values():
            if column != OFFLOADED:
                errors.order_statistics(column, self.ranks)

    def answer(self, found: BytesLike | None = None) -> dict[str, Any]:
        """The answer to the shared request, once merged.  ``found`` holds the
        :data:`~perpendis.service.helper.OFFLOADED` errors' order statistics a helper selected
        (float64 bytes, in the ranks' order); without it (not asked, or the helper failed)
        they are selected here.  Raises the :class:`InputError` a step met."""
        self._expect(Step.MERGED)
        self.step = Step.ANSWERED
        if self.error is not None:
            raise self.error
        merged = self.merged
        if found is not None:
            values = np.frombuffer(as_view(found), dtype=np.float64)
            if len(values) == len(self.ranks):
                merged.errors.found[OFFLOADED] = dict(zip(self.ranks, values.tolist(), strict=True))
        return {**self.head, **self.make_answer(merged), "workers": len(self.shares)}


def _place(part: np.ndarray, payloads: Mapping[str, Any]) -> list[Any] | None:
    if not part.flags.c_contiguous:
        return None
    start = part.__array_interface__["data"][0]
    for key, payload in payloads.items():
        held = np.frombuffer(as_view(payload), dtype=np.uint8)
        base = held.__array_interface__["data"][0]
        if base <= start and start + part.nbytes <= base + held.nbytes:
            return [key, start - base, part.nbytes]
    return None
