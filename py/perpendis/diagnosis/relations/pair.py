"""Bounded views of a compared pair: what every member of the relation grammar reads.

A member never reads every element: it reads a few hundred slices along one axis,
a few hundred fibres across it, or a flat sample, all in float64, so its cost does not grow
with the tensor.  In-memory pairs keep their aligned arrays (``report.aligned``) and get
every view; streamed pairs have only the bounded sample of differing elements the fold
kept, and get the members that need no layout (see ``docs/relations.md``).

Positions are drawn with a fixed seed, so a report is the same on every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ...numerics import bits
from ...numerics.bits import Format, format_of
from ...numerics.scramble import Stream
from ...report.model import Report

FLAT_CAP = 1 << 14  # elements of the flat sample
ALONG_CAP = 512  # indices kept along the axis of a slice view
REST_CAP = 64  # elements kept per slice
FIBRE_ROWS = 64  # fibres kept across an axis
FIBRE_CAP = 1024  # elements kept along a fibre
SEED = 0x5EED


_AXIS_NOUNS = {
    2: ("row", "column"),
    3: ("batch entry", "position", "feature"),
    4: ("batch entry", "channel", "row", "column"),
}


def axis_noun(shape: tuple[int, ...], axis: int) -> str:
    """What an index along ``axis`` usually is, by rank (NCHW images, (B, T, C) sequences)."""
    names = _AXIS_NOUNS.get(len(shape))
    return names[axis] if names else "slice"


def finite_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which rows of two sampled 2-D views (slices or fibres) are finite on both sides: the
    rows every fit may use."""
    return np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)


def slice_evidence(axis: int, along: np.ndarray, scale: np.ndarray, offset: np.ndarray) -> dict:
    """The evidence of a per-slice map (the page draws each slice's scale and offset)."""
    return {"picture": "per_slice", "axis": axis, "index": along.tolist()[:256],
            "scale": scale.tolist()[:256], "offset": offset.tolist()[:256]}


def _spread(n: int, cap: int) -> np.ndarray:
    """``min(n, cap)`` indices spread evenly over ``range(n)``, in order."""
    if n <= cap:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, cap).round().astype(np.intp))


@dataclass
class Pair:
    """What the grammar's members may read of one compared pair.

    ``a_store``/``b_store`` are the aligned storage arrays (None for a streamed pair);
    ``diff_*`` are the fold's bounded sample of differing elements (flat index, A, B).
    """

    fmt: Format
    shape: tuple[int, ...]
    depth: float
    b_rms: float
    diff_flat: np.ndarray
    diff_a: np.ndarray
    diff_b: np.ndarray
    n_elements: int
    n_diff: int
    printed: bool = False  # a side was read from a print too coarse to pin its values
    a_store: np.ndarray | None = None
    b_store: np.ndarray | None = None
    # Per axis, indices where the tolerance failed most (the fold's per-axis counts): a
    # long axis's slice view always holds them, so one wrong channel of 1024 is not missed.
    hot: dict[int, list[int]] = field(default_factory=dict)
    # (atol, rtol) of the tolerance the pair is judged with: a fitted map names a cause
    # only where it holds to it (:func:`.rounding_model.holds`); None when there is none.
    tolerance: tuple[float, float] | None = None
    _rng: Stream = field(default_factory=lambda: Stream(SEED))
    _cache: dict = field(default_factory=dict)

    @property
    def u(self) -> float:
        return self.fmt.unit_roundoff

    @property
    def in_memory(self) -> bool:
        return self.a_store is not None and self.b_store is not None

    def _values(self, store: np.ndarray, index: tuple[np.ndarray, ...]) -> np.ndarray:
        return bits.to_float64(np.asarray(store[index]), self.fmt)

    @cached_property
    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """A uniform sample of all elements, equal ones included: (flat index, A, B)."""
        if not self.in_memory or not self.shape:
            return None
        n = self.n_elements
        flat = self._rng.distinct(n, FLAT_CAP)
        index = np.unravel_index(flat, self.shape)
        return flat, self._values(self.a_store, index), self._values(self.b_store, index)  # type: ignore[arg-type]

    def slices(self, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        key = ("slices", axis)
        if key not in self._cache:
            self._cache[key] = self._slices(axis)
        return self._cache[key]

    def fibres(self, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        key = ("fibres", axis)
        if key not in self._cache:
            self._cache[key] = self._fibres(axis)
        return self._cache[key]

    def fibre_index(self, axis: int) -> tuple[np.ndarray, ...]:
        """Where the rows of :meth:`fibres` lie: one index array per other axis (in order,
        ``axis`` left out), so a finding can ask whether a per-row quantity is really one
        per index of another axis."""
        self.fibres(axis)
        return self._cache.get(("fibre_index", axis), ())

    def _slices(self, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Slices ``X[..., i, ...]`` along ``axis``: (indices i, A rows, B rows), each row the
        same sampled positions of the other axes."""
        if not self.in_memory or len(self.shape) < 2:
            return None
        along = _spread(self.shape[axis], ALONG_CAP)
        if len(along) < self.shape[axis] and self.hot.get(axis):
            hot = np.asarray(self.hot[axis], dtype=np.intp)
            along = np.union1d(_spread(self.shape[axis], ALONG_CAP - len(hot)), hot)
        rest = tuple(n for k, n in enumerate(self.shape) if k != axis)
        size = math.prod(rest)
        pos = self._rng.distinct(size, REST_CAP)
        parts = list(np.unravel_index(pos, rest))
        index = [p[None, :] for p in parts]
        index.insert(axis, along[:, None])
        full = tuple(np.broadcast_arrays(*index))
        return along, self._values(self.a_store, full), self._values(self.b_store, full)  # type: ignore[arg-type]

    def _fibres(self, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Fibres along ``axis`` (every other index fixed): (indices kept along the axis,
        A rows, B rows), one row per sampled fibre."""
        if not self.in_memory or not self.shape:
            return None
        along = _spread(self.shape[axis], FIBRE_CAP)
        rest = tuple(n for k, n in enumerate(self.shape) if k != axis)
        size = math.prod(rest)
        pos = self._rng.distinct(size, FIBRE_ROWS)
        parts = list(np.unravel_index(pos, rest)) if rest else []
        self._cache[("fibre_index", axis)] = tuple(parts)
        index = [p[:, None] for p in parts]
        index.insert(axis, along[None, :])
        full = tuple(np.broadcast_arrays(*index))
        return along, self._values(self.a_store, full), self._values(self.b_store, full)  # type: ignore[arg-type]

    def swapped(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """A flat sample of A, B and B with axes ``i`` and ``j`` swapped (equal sizes)."""
        got = self.flat
        if got is None:
            return None
        flat, a, b = got
        index = list(np.unravel_index(flat, self.shape))
        index[i], index[j] = index[j], index[i]
        return a, b, self._values(self.b_store, tuple(index))  # type: ignore[arg-type]

    def values(self) -> tuple[np.ndarray, np.ndarray]:
        """Finite (A, B) pairs of the flat sample, or of the differing sample when streamed."""
        got = self.flat
        a, b = (got[1], got[2]) if got is not None else (self.diff_a, self.diff_b)
        ok = np.isfinite(a) & np.isfinite(b)
        return a[ok], b[ok]

    def differing(self) -> tuple[np.ndarray, np.ndarray]:
        """Finite (A, B) pairs that differ: the fold's sample (exact up to its cap)."""
        a, b = self.diff_a, self.diff_b
        ok = np.isfinite(a) & np.isfinite(b) & (a != b)
        return a[ok], b[ok]

    def scale_of(self, b: np.ndarray) -> np.ndarray:
        """What a rounding error is relative to: ``|B|``, or B's RMS where that is larger
        (a sum that cancels keeps the rounding of its terms)."""
        return np.maximum(np.abs(b), self.b_rms) if self.b_rms > 0 else np.abs(b)


def pair_of(report: Report, depth: float) -> Pair | None:
    """The grammar's view of a compared report, or None where nothing was compared."""
    if report.compared_shape is None or not report.n_bitwise_diff:
        return None
    fmt = format_of(report.compared_as)
    rows = report.samples.get("diffs")
    if rows is None or len(rows) == 0:
        rows = np.empty((0, 3))
    aligned = report.aligned
    a_store = getattr(aligned, "a", None)
    b_store = getattr(aligned, "b", None)
    shape = tuple(report.compared_shape)
    if a_store is not None and (tuple(np.shape(a_store)) != shape or tuple(np.shape(b_store)) != shape):
        a_store = b_store = None
    return Pair(
        fmt=fmt,
        shape=shape,
        depth=depth,
        b_rms=float(report.samples.get("b_rms", 0.0)),
        diff_flat=rows[:, 0].astype(np.int64) if len(rows) else np.empty(0, np.int64),
        diff_a=rows[:, 1] if len(rows) else np.empty(0),
        diff_b=rows[:, 2] if len(rows) else np.empty(0),
        n_elements=report.n_elements,
        n_diff=report.n_bitwise_diff,
        printed=not (report.a.get("lossless", True) and report.b.get("lossless", True)),
        a_store=a_store,
        b_store=b_store,
        hot={x.axis: [int(t[0]) for t in x.top[:8]] for x in report.axes if x.bucket == 1},
        tolerance=None if report.tolerance is None else (report.tolerance.atol, report.tolerance.rtol),
    )
