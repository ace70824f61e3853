"""Samples: bounded, mergeable in any grouping, exact while everything fits."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...numerics.scramble import mix64
from .order import select


def _smallest(priority: np.ndarray, cap: int) -> np.ndarray:
    """Positions of the ``cap`` smallest of uniform priorities, in position order.

    They are selected among the few below :func:`_likely_bound`, rather than among all.
    """
    n = len(priority)
    if n <= cap:
        return np.arange(n)
    candidates = np.flatnonzero(priority < _likely_bound(cap, n, 2**64))
    if len(candidates) < cap:  # never in practice; still exact
        candidates = np.arange(n)
    return np.sort(candidates[np.argpartition(priority[candidates], cap - 1)[:cap]])


def _likely_bound(cap: int, n: int, top: int) -> np.uint64:
    """A priority below which the ``cap`` smallest of ``n`` priorities uniform below ``top``
    almost surely lie: the cap-th smallest is ``cap/n`` of the way up with a spread of
    ``sqrt(cap)/n``, and this is eight spreads above it."""
    return np.uint64(min(2**64 - 1, (cap + 8 * math.isqrt(cap) + 64) * top // n))


@dataclass
class Sample:
    """``count`` rows seen, at most ``cap`` of them shown by :meth:`rows`: all (exact) or
    those whose flat index has the smallest priority, its :func:`~.scramble.mix64` (a
    bottom-k sample): uniform, and the same rows whatever the chunks were and in whatever
    grouping their partials merged, so a comparison shared across workers or streamed from
    disk keeps exactly the rows of the one made in memory.

    Column 0 of every row is the element's flat index.  Merging appends groups of rows,
    cut back to ``cap`` once they hold half as many more, so a row is copied a bounded
    number of times however long the fold.  After a cut, ``bound`` is the largest
    priority kept: ``cap`` rows lie at or below it, so rows above it are dropped as they
    arrive, and a long fold with many errors holds little more than ``cap`` rows.
    ``keys`` caches each group's priorities once computed (None until then); ``found``
    holds order statistics of a column already known (by column, then rank), such as those
    another worker selected while this one did the other column.
    """

    count: int = 0
    groups: list[np.ndarray] = field(default_factory=list)
    cap: int = 0
    bound: int | None = None
    keys: list[np.ndarray | None] = field(default_factory=list)
    found: dict[int, dict[int, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.keys) != len(self.groups):
            self.keys = [None] * len(self.groups)

    @property
    def kept(self) -> int:
        return sum(len(rows) for rows in self.groups)

    def rows(self) -> np.ndarray:
        groups = self._settled()
        return np.concatenate(groups) if groups else np.empty((0, 0))

    def column(self, k: int, *more: np.ndarray) -> np.ndarray:
        """Column ``k`` of :meth:`rows`, gathered straight from the groups, then the values
        ``more`` (contiguous, one copy of everything)."""
        parts = [rows[:, k] for rows in self._settled()] + list(more)
        return np.concatenate(parts) if parts else np.empty(0)

    def _settled(self) -> list[np.ndarray]:
        """The groups once cut to the cap, which this sample keeps from then on: the rows and
        each column are read from one cut (at 64 M elements a cut took 90 ms, and the
        report read two columns)."""
        cut = self._cut()
        if cut is not self:
            self.groups, self.keys, self.bound = cut.groups, cut.keys, cut.bound
        return self.groups

    def order_statistics(self, k: int, ranks: list[int]) -> dict[int, float]:
        """The ``r``-th smallest value of column ``k`` for each ``r`` in ``ranks`` (sorted),
        kept in :attr:`found`: taken from there when already known."""
        known = self.found.get(k, {})
        if not all(r in known for r in ranks):
            known = self.found[k] = known | select(self.column(k), ranks, scratch=True)  # a fresh copy
        return {r: known[r] for r in ranks}

    def _keyed(self) -> list[np.ndarray]:
        self.keys = [
            mix64(rows[:, 0]) if key is None else key for rows, key in zip(self.groups, self.keys, strict=True)
        ]
        return self.keys  # type: ignore[return-value]

    def _below(self, bound: int | None) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        """The groups (and keys) cut to rows of priority at most ``bound`` (all when None or ours)."""
        if bound is None or bound == self.bound:
            return self.groups, self.keys
        masks = [key <= np.uint64(bound) for key in self._keyed()]
        return [r[m] for r, m in zip(self.groups, masks, strict=True)], [
            k[m] for k, m in zip(self.keys, masks, strict=True)
        ]  # type: ignore[index]

    def merge(self, other: Sample, cap: int) -> Sample:
        bounds = [b for b in (self.bound, other.bound) if b is not None]
        bound = min(bounds) if bounds else None
        (mine, my_keys), (theirs, their_keys) = self._below(bound), other._below(bound)
        merged = Sample(self.count + other.count, mine + theirs, cap, bound, my_keys + their_keys)
        return merged._cut() if merged.kept > cap + cap // 2 else merged

    def _cut(self) -> Sample:
        """The ``cap`` rows of smallest priority.

        Every row lies at or below ``bound`` (or below 2**64), uniformly, so the rows of
        each group are first narrowed to those below :func:`_likely_bound`; only their
        priorities and positions are put together, and the chosen rows copied once.
        """
        kept = self.kept
        if kept <= self.cap:
            return self
        estimate = _likely_bound(self.cap, kept, 2**64 if self.bound is None else self.bound + 1)
        keys = self._keyed()
        near = [np.flatnonzero(key < estimate) for key in keys]
        if sum(len(at) for at in near) < self.cap:  # never in practice; still exact
            near = [np.arange(len(key)) for key in keys]
        priority = np.concatenate([key[at] for key, at in zip(keys, near, strict=True)])
        # The chosen candidates as a mask in candidate order (group order, then row order):
        # cheaper than sorting their positions, and most candidates are usually kept.
        order = np.argpartition(priority, self.cap - 1)
        if self.cap >= len(priority) // 2:
            chosen = np.ones(len(priority), dtype=bool)
            chosen[order[self.cap :]] = False
        else:
            chosen = np.zeros(len(priority), dtype=bool)
            chosen[order[: self.cap]] = True
        starts = np.cumsum([0] + [len(at) for at in near])
        picked = [at[chosen[starts[g] : starts[g + 1]]] for g, at in enumerate(near)]
        rows = np.concatenate([np.take(group, i, axis=0) for group, i in zip(self.groups, picked, strict=True)])
        kept_keys = priority[chosen]
        return Sample(self.count, [rows], self.cap, int(kept_keys.max()), [kept_keys])


def sample_of(cap: int, flat: np.ndarray, *columns: np.ndarray) -> Sample:
    """A sample of the rows ``(flat, *columns)``, choosing rows before building them."""
    n = len(flat)
    if n == 0:
        return Sample()
    if n <= cap:
        return Sample(n, [np.column_stack([flat, *columns]).astype(np.float64, copy=False)], cap)
    priority = mix64(flat)
    keep = _smallest(priority, cap)
    rows = np.column_stack([flat[keep], *(c[keep] for c in columns)]).astype(np.float64, copy=False)
    return Sample(n, [rows], cap, int(priority[keep].max()), [priority[keep]])

