"""Compare two tensors: align them (:mod:`perpendis.align`), then fold over aligned chunks into numbers.

The fold is the whole design: each chunk of C-order elements becomes a :class:`Partial`
holding only what merges exactly (counts, first indices, maxima with their index,
histograms, per-axis failure counts, sums) plus bounded samples, and partials merge
pairwise.  Small arrays are one chunk; huge files can stream through
:func:`compare_chunks` with bounded memory; cancelling is stopping the fold.

Equality is bit equality, so each chunk starts with one vectorised comparison of raw
bits, and all float, ULP and relative-error maths runs only on the differing elements.
The one full pass of float maths is ``sum(b**2)`` (a BLAS dot product), which the cosine
similarity and SNR need; it is written so that its rounding only scales the tiny
deviation of the cosine from 1, never swamps it.

Why this module is long: its sections (samples; the partial of one chunk and merging;
a share folded by another worker and its partial as bytes; from the merged partial to the
report's numbers; the reference; prepare, fold, finish) are one contract.  A field added
to :class:`Partial` must be computed per chunk, merged, written to and read from bytes,
and turned into a number, in the same change; kept together, a reader sees every place
at once and a forgotten one stands out.  Each section is marked by a rule and a heading.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import Any, NamedTuple

import numpy as np

from ..errors import InputError
from ..inputs.adopt import adopt_dtype
from ..inputs.formats.buffer import BytesLike, as_view
from ..inputs.tensor import Tensor, as_tensor
from ..numerics import bits
from ..numerics.bits import Format, format_of
from ..numerics.scramble import mix64
from ..numerics.tolerance import (
    Tolerance,
    bit_equal_nan_fails,
    dynamo_rmse_passes,
    failing,
    judged_difference,
    printed_digits,
    refusal,
    resolve,
)
from ..numerics.tolerance_complex import complex_test
from ..report.model import AxisFailures, Element, Histogram, MinTolerance, Reference, Report, Stats, ToleranceResult
from ..report.text import shape_text
from . import task_judge
from .align import Aligned, align, compared_format, like_a
from .options import DEFAULT, ComparisonOptions
from .task import TaskSpec, task_spec

CHUNK = 1 << 20  # elements per chunk: big enough to amortise NumPy calls, small enough to stream; even,
# so that a chunk (and a share, whole chunks) never splits a complex value's two parts
ERROR_SAMPLE_CAP = 1 << 21  # non-zero errors kept for percentiles; exact below this many
PATTERN_SAMPLE_CAP = 4096  # (flat, a, b) rows of differing and failing elements, for diagnosis
INDEX_CAP = 8  # first NaN/Inf mismatch indices reported
AXIS_CAP = 1024  # entries per axis in failure counts; longer axes are bucketed
REF_FACTOR = 4.0  # B is rounding-equivalent when its error vs ref is within this factor of A's

Chunk = tuple[int, np.ndarray, np.ndarray]


# ---------------------------------------------------------------------------------------
# Samples: bounded, mergeable in any grouping, exact while everything fits.


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


def _sample_of(cap: int, flat: np.ndarray, *columns: np.ndarray) -> Sample:
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


@dataclass(frozen=True)
class ExactSum:
    """A sum of floats held exactly, as a whole number of 2**-1074 (the smallest float).

    Partials merge in whatever grouping the work was split into (chunks in order, ranges
    on several workers); an exact sum makes the total the same in every grouping, rounded
    once at the end, where adding float partial sums would depend on the grouping.
    """

    scaled: int = 0
    special: float = 0.0  # the sum of the non-finite terms: 0, inf, -inf or nan

    @staticmethod
    def of(x: float) -> ExactSum:
        if not math.isfinite(x):
            return ExactSum(0, x)
        num, den = x.as_integer_ratio()
        return ExactSum(num * ((1 << 1074) // den))

    def __add__(self, other: ExactSum) -> ExactSum:
        return ExactSum(self.scaled + other.scaled, self.special + other.special)

    def value(self) -> float:
        if self.special != 0 or math.isnan(self.special):
            return self.special
        try:
            return self.scaled / (1 << 1074)  # int / int rounds correctly
        except OverflowError:
            return math.inf if self.scaled > 0 else -math.inf


# ---------------------------------------------------------------------------------------
# The partial result of one chunk, and merging.

class Pick(NamedTuple):
    """One element picked out by a metric (the worst, the first): where it is and its bits."""

    metric: float
    flat: int
    raw_a: int
    raw_b: int


def _better(p: Pick | None, q: Pick | None) -> Pick | None:
    """The larger metric, the earlier element on ties."""
    if p is None or q is None:
        return p if q is None else q
    return q if (q.metric, -q.flat) > (p.metric, -p.flat) else p


def _earlier(p: Pick | None, q: Pick | None) -> Pick | None:
    if p is None or q is None:
        return p if q is None else q
    return p if p.flat <= q.flat else q


@dataclass
class Partial:
    """What one or more chunks contribute to the report; merges exactly except for samples."""

    n: int = 0
    n_diff: int = 0
    first_diff: Pick | None = None
    worst_abs: Pick | None = None
    worst_ulp: Pick | None = None
    worst_rel: Pick | None = None
    n_nan: int = 0
    nan_flat: list[int] = field(default_factory=list)
    n_inf: int = 0
    inf_flat: list[int] = field(default_factory=list)
    n_signed_zero: int = 0
    hist: np.ndarray = field(default_factory=lambda: np.zeros(66, dtype=np.int64))  # bins of distances < 2**64
    ulp_nonfinite: int = 0
    n_excluded: int = 0  # elements left out of the stats: non-finite on either side
    sum_abs: ExactSum = field(default_factory=ExactSum)
    sum_rel: ExactSum = field(default_factory=ExactSum)
    sum_sq: ExactSum = field(default_factory=ExactSum)
    sum_bb: ExactSum = field(default_factory=ExactSum)
    sum_aa_minus_bb: ExactSum = field(default_factory=ExactSum)
    sum_ab_minus_bb: ExactSum = field(default_factory=ExactSum)
    errors: Sample = field(default_factory=Sample)  # rows (flat, abs, rel) of non-zero finite errors
    n_fail: int = 0
    first_fail: Pick | None = None
    worst_fail: Pick | None = None  # metric: the ordered bits of |a - b| as the rule computes it, NaN topmost
    n_unreachable: int = 0  # failures no tolerance passes: a NaN or an infinity on either side
    axis_fails: list[np.ndarray] = field(default_factory=list)
    n_print_limited: int = 0  # failures within what a lossy print can resolve, counted as passing
    need_atol: float = 0.0
    need_rtol: float = 0.0
    diffs: Sample = field(default_factory=Sample)  # rows (flat, a, b) of differing elements
    fails: Sample = field(default_factory=Sample)  # rows (flat, a, b) of failing elements

    def merge(self, o: Partial) -> Partial:
        return Partial(
            n=self.n + o.n,
            n_diff=self.n_diff + o.n_diff,
            first_diff=_earlier(self.first_diff, o.first_diff),
            worst_abs=_better(self.worst_abs, o.worst_abs),
            worst_ulp=_better(self.worst_ulp, o.worst_ulp),
            worst_rel=_better(self.worst_rel, o.worst_rel),
            n_nan=self.n_nan + o.n_nan,
            nan_flat=sorted(self.nan_flat + o.nan_flat)[:INDEX_CAP],
            n_inf=self.n_inf + o.n_inf,
            inf_flat=sorted(self.inf_flat + o.inf_flat)[:INDEX_CAP],
            n_signed_zero=self.n_signed_zero + o.n_signed_zero,
            hist=self.hist + o.hist,
            ulp_nonfinite=self.ulp_nonfinite + o.ulp_nonfinite,
            n_excluded=self.n_excluded + o.n_excluded,
            sum_abs=self.sum_abs + o.sum_abs,
            sum_rel=self.sum_rel + o.sum_rel,
            sum_sq=self.sum_sq + o.sum_sq,
            sum_bb=self.sum_bb + o.sum_bb,
            sum_aa_minus_bb=self.sum_aa_minus_bb + o.sum_aa_minus_bb,
            sum_ab_minus_bb=self.sum_ab_minus_bb + o.sum_ab_minus_bb,
            errors=self.errors.merge(o.errors, ERROR_SAMPLE_CAP),
            n_fail=self.n_fail + o.n_fail,
            first_fail=_earlier(self.first_fail, o.first_fail),
            worst_fail=_better(self.worst_fail, o.worst_fail),
            n_unreachable=self.n_unreachable + o.n_unreachable,
            axis_fails=[x + y for x, y in zip(self.axis_fails, o.axis_fails, strict=True)],
            n_print_limited=self.n_print_limited + o.n_print_limited,
            need_atol=max(self.need_atol, o.need_atol),
            need_rtol=max(self.need_rtol, o.need_rtol),
            diffs=self.diffs.merge(o.diffs, PATTERN_SAMPLE_CAP),
            fails=self.fails.merge(o.fails, PATTERN_SAMPLE_CAP),
        )


def _buckets(size: int) -> int:
    """Indices per failure-count entry, so that an axis has at most AXIS_CAP entries."""
    return max(1, -(-size // AXIS_CAP))


def _axis_counts(shape: tuple[int, ...]) -> list[np.ndarray]:
    return [np.zeros(-(-n // _buckets(n)), dtype=np.int64) for n in shape]


def _ulp_bins(dist: np.ndarray) -> np.ndarray:
    """Histogram bin of each distance: 0, 1, 2, then 3-4, 5-8, ... (bin = bit_length(d - 1) + 1)."""
    x = np.where(dist > 0, dist - np.uint64(1), np.uint64(0))
    length = np.zeros(x.shape, dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << shift)
        length += big * shift
        x = np.where(big, x >> np.uint64(shift), x)
    length += x > 0
    return np.where(dist > 0, length + 1, 0)


SMALL_ULP = 1 << 16  # below this largest distance, the histogram is binned from a count per distance


def _ulp_histogram(dist: np.ndarray, size: int) -> np.ndarray:
    """Counts per :func:`_ulp_bins` bin of ``dist`` (uint64).

    Rounding keeps distances small, so counting each distance first (one pass) and
    binning the few distinct values is the common path; the per-element binning, about
    twenty passes, is left for distances of bugs.
    """
    top = int(dist.max(initial=0))
    if top >= SMALL_ULP:
        return np.bincount(_ulp_bins(dist).astype(np.intp), minlength=size)[:size]
    counts = np.bincount(dist.astype(np.intp), minlength=1)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, _ulp_bins(np.arange(counts.size, dtype=np.uint64)), counts)
    return out


def ulp_edges(n_bins: int) -> list[str]:
    """Labels of the first ``n_bins`` ULP histogram bins."""
    labels = ["0", "1", "2"]
    labels += [f"{(1 << (k - 2)) + 1}-{1 << (k - 1)}" for k in range(3, n_bins)]
    return labels[:n_bins]


def _sum_squares(array: np.ndarray, fmt: Format) -> float:
    """``Σx²``, summed in float64 whatever the format.

    A float32 dot product accumulates in float32: over a million elements that can be
    off by a few parts in 10⁴, and by different amounts with and without BLAS (natively
    and in the browser).  Products taken in float64 (exact for float32, and never
    underflowing where the other sums, taken in float64, do not) and summed in float64
    agree everywhere to about 1e-15; ``einsum`` does it in one pass over the array.
    """
    x = array.ravel() if fmt.name in ("float32", "float64") else bits.to_float64(array.ravel(), fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.einsum("i,i->", x, x, dtype=np.float64))


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``Σxy`` of two float64 arrays, rounded the same way in every process.

    ``np.dot`` hands long vectors to BLAS, which splits the sum over as many threads as it
    runs (two in the CLI on two cores, one in a Dask worker, which sets
    ``OMP_NUM_THREADS=1``), so a partial folded in a worker differed from the one folded
    here in the last bit of the RMSE; ``einsum`` sums in one thread, in one order.
    """
    return float(np.einsum("i,i->", x, y))


def _finite_sum_squares(a: np.ndarray, b: np.ndarray, fmt: Format) -> tuple[float, int]:
    """``Σb²`` over the pairs finite on both sides, and how many pairs are not."""
    fa, fb = bits.to_float64(a, fmt), bits.to_float64(b, fmt)
    finite = np.isfinite(fa) & np.isfinite(fb)
    with np.errstate(over="ignore"):  # float64 values past 1e154 square to inf: cosine and SNR say so
        return _dot(fb[finite], fb[finite]), int(a.size - finite.sum())


def _pick(metric: np.ndarray, mask: np.ndarray | None, flat: np.ndarray, da: np.ndarray, db: np.ndarray) -> Pick | None:
    """The element with the largest ``metric`` where ``mask`` holds (None: everywhere), first on ties."""
    if mask is None:
        i = int(np.argmax(metric))
    elif not mask.any():
        return None
    else:
        i = int(np.flatnonzero(mask)[np.argmax(metric[mask])])
    return Pick(metric[i].item(), int(flat[i]), int(da[i]), int(db[i]))


def _index(flat: int, shape: tuple[int, ...]) -> list[int]:
    """NumPy's multi-index of a C-order flat index (``[]`` for a 0-d array)."""
    return [int(i) for i in np.unravel_index(flat, shape)] if shape else []


def relative(absd: np.ndarray, absb: np.ndarray) -> np.ndarray:
    """``|a - b| / |b|``: 0 where both are equal, infinite where only ``b`` is zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(absd == 0, 0.0, absd / absb)


def chunk_partial(
    start: int,
    a: np.ndarray,
    b: np.ndarray,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    lossy: tuple[int | None, int | None] = (None, None),
) -> Partial:
    """The partial result of one aligned chunk: flat elements ``start ...`` of both sides.

    ``lossy`` gives, for each side printed with too few digits to pin its values, the
    :func:`~perpendis.numerics.tolerance.printed_digits` of its print (None for exact sides); a
    failure within what those digits resolve is not counted (``n_print_limited``).

    Every differing element passes through here, so the common case (all of them finite)
    skips the masks that NaN and infinities need, and each quantity is computed once.
    """
    a, b = np.ascontiguousarray(a).ravel(), np.ascontiguousarray(b).ravel()
    ra, rb = bits.raw_bits(a, fmt), bits.raw_bits(b, fmt)
    p = Partial(n=a.size, axis_fails=_axis_counts(shape))
    diff = np.flatnonzero(ra != rb)
    p.hist[0] = a.size - diff.size
    s_bb = _sum_squares(b, fmt)
    if not math.isfinite(s_bb):
        # Rare: non-finite or huge values.  Redo the sum over finite pairs only.
        s_bb, p.n_excluded = _finite_sum_squares(a, b, fmt)
    p.sum_bb = ExactSum.of(s_bb)
    same_nan = bit_equal_nan_fails(ra, rb, fmt, tol)
    if diff.size == 0:
        if same_nan.size and tol.complex:
            _complex_fails(p, start, ra, rb, same_nan, fmt, shape, tol, lossy)
        elif same_nan.size:
            _count_fails(p, same_nan, start, ra, rb, fmt, shape, np.full(same_nan.size, math.nan))
        return p
    exact_sum = p.n_excluded == 0
    da, db = ra[diff], rb[diff]
    flat = diff + start
    va, vb = bits.to_float64(da.view(a.dtype), fmt), bits.to_float64(db.view(b.dtype), fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        signed = va - vb
    absd, absb = bits.magnitude(signed), bits.magnitude(vb)
    # Bits differ, so equal values are +0 against -0 (or, for int64, neighbours float64 cannot tell apart).
    n_equal = int(np.count_nonzero(absd == 0))
    if n_equal:
        rel = relative(absd, absb)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = absd / absb
    # A finite difference needs both sides finite; only when some is not are the sides checked.
    finite = None if np.isfinite(signed).all() else np.isfinite(va) & np.isfinite(vb)  # None: all finite
    dist, defined_mask = bits.ulp_distance(da, db, fmt)
    defined = None if finite is None else defined_mask

    p.n_diff = int(diff.size)
    p.first_diff = Pick(0.0, int(flat[0]), int(da[0]), int(db[0]))
    both_nan = None
    if finite is not None:
        nan_a, nan_b = np.isnan(va), np.isnan(vb)
        both_nan = nan_a & nan_b
        nan_mismatch = nan_a != nan_b
        inf_mismatch = (np.isinf(va) | np.isinf(vb)) & ~nan_a & ~nan_b
        p.n_nan, p.nan_flat = int(nan_mismatch.sum()), flat[nan_mismatch][:INDEX_CAP].tolist()
        p.n_inf, p.inf_flat = int(inf_mismatch.sum()), flat[inf_mismatch][:INDEX_CAP].tolist()
        p.ulp_nonfinite = int((~defined_mask).sum())
    p.n_signed_zero = n_equal if fmt.is_float else 0
    p.hist += _ulp_histogram(dist if defined is None else dist[defined], p.hist.size)
    p.worst_abs = _pick(absd, finite, flat, da, db)
    p.worst_rel = _pick(rel, finite, flat, da, db)
    p.worst_ulp = _pick(dist, defined, flat, da, db)

    if finite is None:
        fa, fb, fd, fr, fsigned, fbabs = va, vb, absd, rel, signed, absb
    else:
        fa, fb, fd = va[finite], vb[finite], absd[finite]
        fr, fsigned, fbabs = rel[finite], signed[finite], absb[finite]
        if exact_sum:
            p.n_excluded = int((~finite).sum())
            if (~finite & np.isfinite(vb)).any():
                # B is finite where A is not: its b² leaves the sum.  Summed again rather than
                # subtracted, which cancels to nothing when that b² dwarfs the rest.
                p.sum_bb = ExactSum.of(_finite_sum_squares(a, b, fmt)[0])
    # float64 values past 1e154 overflow these sums: the stats then say inf or nan, honestly.
    with np.errstate(over="ignore", invalid="ignore"):
        sum_abs, sum_rel, sum_sq = float(fd.sum()), float(fr.sum()), _dot(fd, fd)
        # Σa² - Σb² and Σab - Σb² over the differing elements, without the cancellation of
        # subtracting two large sums: Σ(a-b)(a+b) and Σb(a-b).
        d_aa, d_ab = _dot(fsigned, fa + fb), _dot(fsigned, fb)
    p.sum_abs, p.sum_rel, p.sum_sq = ExactSum.of(sum_abs), ExactSum.of(sum_rel), ExactSum.of(sum_sq)
    p.sum_aa_minus_bb, p.sum_ab_minus_bb = ExactSum.of(d_aa), ExactSum.of(d_ab)
    fflat = flat if finite is None else flat[finite]
    if n_equal:
        nonzero = fd > 0
        p.errors = _sample_of(ERROR_SAMPLE_CAP, fflat[nonzero], fd[nonzero], fr[nonzero])
    else:
        p.errors = _sample_of(ERROR_SAMPLE_CAP, fflat, fd, fr)

    if tol.complex:
        _complex_fails(p, start, ra, rb, np.concatenate([diff, same_nan]), fmt, shape, tol, lossy)
    else:
        failed, p.n_print_limited = failing(absd, absb, both_nan, da, db, fmt, tol, lossy)
        if failed.any() or same_nan.size:
            judged = judged_difference(absd[failed], da[failed], db[failed], fmt, tol)
            at = diff[failed]
            if same_nan.size:  # bit-equal NaNs the rule fails, in flat order among the others
                at, judged = np.concatenate([at, same_nan]), np.concatenate([judged, np.full(same_nan.size, math.nan)])
                order = np.argsort(at, kind="stable")
                at, judged = at[order], judged[order]
            _count_fails(p, at, start, ra, rb, fmt, shape, judged)
        p.need_atol, p.need_rtol = _needed(fd, fbabs, tol)
    p.diffs = _sample_of(PATTERN_SAMPLE_CAP, flat, va, vb)
    return p


def _needed(fd: np.ndarray, fbabs: np.ndarray, tol: Tolerance) -> tuple[float, float]:
    """The smallest atol (at the rtol used) and rtol (at the atol used) that pass the finite
    ``|a - b|`` ``fd`` against ``|b|`` ``fbabs``."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        need_atol = float(np.max(fd - tol.rtol * fbabs, initial=0.0))
        # Pairs within atol give a ratio <= 0, or NaN for 0/0 (a difference of exactly atol
        # against a zero), which fmax passes over; maximum, twice as fast in Pyodide, does
        # not, so it runs first and fmax only when it met such a NaN.
        ratio = (fd - tol.atol) / fbabs
        need_rtol = float(np.maximum.reduce(ratio, initial=0.0))
        if math.isnan(need_rtol):
            need_rtol = float(np.fmax.reduce(ratio, initial=0.0))
    return need_atol, need_rtol


def _complex_fails(
    p: Partial,
    start: int,
    ra: np.ndarray,
    rb: np.ndarray,
    candidates: np.ndarray,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    lossy: tuple[int | None, int | None],
) -> None:
    """The tolerance test of a chunk of complex values (``tol.complex``: the chunk holds whole
    (real, imaginary) pairs), judged whole by :func:`~perpendis.numerics.tolerance_complex.complex_test` at the
    values one of whose parts is a ``candidates`` position (differing bits, or a NaN the rule
    fails; deduplicated by a sort: NumPy's hashing ``unique`` took 5 s on 2 million): the failing
    count, first, worst and smallest passing tolerance are of complex values, as the peers
    count them."""
    if ra.size % 2 or start % 2:
        raise ValueError(f"a chunk of complex values must hold whole pairs, got {ra.size} values from {start}")
    which = np.sort(candidates, kind="stable") // 2 if candidates.size else candidates  # sorted already, mostly
    which = which[np.concatenate([[True], which[1:] != which[:-1]])] if which.size else which
    pa, pb = ra.reshape(-1, 2)[which], rb.reshape(-1, 2)[which]
    zero_d = shape == (2,)  # one complex value a side
    failed, judged, exact_d, exact_b, p.n_print_limited = complex_test(pa, pb, fmt, tol, lossy, scalar_pair=zero_d)
    if failed.any():
        _count_fails(p, 2 * which[failed], start, ra, rb, fmt, shape, judged[failed], pairs=True)
    finite = np.isfinite(exact_d) & np.isfinite(exact_b)
    p.need_atol, p.need_rtol = _needed(exact_d[finite], exact_b[finite], tol)


_NAN_KEY = 0x7FF8_0000_0000_0000  # above every other |a - b|: the peers' max puts NaN first


def _count_fails(
    p: Partial,
    at: np.ndarray,
    start: int,
    ra: np.ndarray,
    rb: np.ndarray,
    fmt: Format,
    shape: tuple[int, ...],
    judged: np.ndarray,
    *,
    pairs: bool = False,
) -> None:
    """Count the failures at chunk positions ``at`` (ascending): first and worst, per axis,
    those no tolerance passes, and a sample of rows.  ``judged`` is each one's ``|a - b|``
    as the rule computes it (NaN where either side is NaN); each pick keeps it in its
    metric (as the ordered bits of a float64).

    With ``pairs``, each position is the real part of a failing complex value, which is
    one failure: the picks point at its real part, the component axis (the last) counts
    none (a complex value fails whole, in neither part), and the sample holds both parts.
    """
    flat = at + start
    fa, fb = ra[at], rb[at]
    # The values the failures are: both parts of each complex one.
    places = np.stack([at, at + 1], axis=1).reshape(-1) if pairs else at
    va, vb = bits.raw_to_float64(ra[places], fmt), bits.raw_to_float64(rb[places], fmt)
    finite = np.isfinite(va) & np.isfinite(vb)
    if pairs:
        finite = finite.reshape(-1, 2).all(axis=1)
    p.n_fail = int(at.size)
    # The ordered bits of a non-negative float64 rank it; every NaN shares the top key.
    key = np.where(np.isnan(judged), np.uint64(_NAN_KEY), bits.magnitude(judged).view(np.uint64))
    p.first_fail = Pick(int(key[0]), int(flat[0]), int(fa[0]), int(fb[0]))
    p.worst_fail = _pick(key, None, flat, fa, fb)
    p.n_unreachable = int((~finite).sum())
    if shape:
        for axis, idx in enumerate(np.unravel_index(flat, shape)):
            if pairs and axis == len(shape) - 1:
                continue
            counts = p.axis_fails[axis]
            counts += np.bincount((idx // _buckets(shape[axis])).astype(np.intp), minlength=counts.size)
    p.fails = _sample_of(PATTERN_SAMPLE_CAP, places + start, va, vb)


def aligned_chunks(a: np.ndarray, b: np.ndarray, size: int = CHUNK, offset: int = 0) -> Iterator[Chunk]:
    """Aligned C-order chunks of two arrays of one shape, numbered from flat index ``offset``."""
    fa, fb = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    for start in range(0, fa.size, size):
        yield offset + start, fa[start : start + size], fb[start : start + size]


def fold(
    chunks: Iterable[Chunk],
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    *,
    progress: Callable[[float], object] | None = None,
    lossy: tuple[int | None, int | None] = (None, None),
    total: int | None = None,
) -> Partial:
    """Merge the partials of all chunks, calling ``progress(fraction)`` after each
    (the fraction of ``total`` elements, by default all of ``shape``)."""
    total = math.prod(shape) if total is None else total

    def step(acc: Partial, chunk: Chunk) -> Partial:
        merged = acc.merge(chunk_partial(chunk[0], chunk[1], chunk[2], fmt, shape, tol, lossy))
        if progress is not None:
            progress(merged.n / total if total else 1.0)
        return merged

    empty = Partial(axis_fails=_axis_counts(shape))
    return reduce(step, chunks, empty)


# ---------------------------------------------------------------------------------------
# Folding a share of the elements elsewhere (another worker): what it needs, and its partial.

_PICK_FIELDS = ("first_diff", "worst_abs", "worst_ulp", "worst_rel", "first_fail", "worst_fail")
_SUM_FIELDS = ("sum_abs", "sum_rel", "sum_sq", "sum_bb", "sum_aa_minus_bb", "sum_ab_minus_bb")
_SAMPLE_FIELDS = ("errors", "diffs", "fails")
_SCALAR_FIELDS = (
    "n", "n_diff", "n_nan", "nan_flat", "n_inf", "inf_flat", "n_signed_zero", "ulp_nonfinite", "n_excluded",
    "n_fail", "n_unreachable", "n_print_limited", "need_atol", "need_rtol",
)  # fmt: skip


PARTIAL_MAGIC = b"PERPENDIS-PARTIAL-1\n"


def partial_to_bytes(p: Partial) -> np.ndarray:
    """A partial as bytes (a uint8 array): a magic line, the JSON length (8 bytes,
    little-endian), JSON of the numbers and of each array's dtype, shape and place, then
    the arrays' bytes.

    Numbers keep every bit (JSON floats round-trip, sums are exact integers), so merging
    partials folded by other workers gives the report folded in one place.  The arrays
    are read back as views of the bytes, not copies: no zip, no checksums, since the
    bytes only ever pass between this page's own workers.  Each array is written once,
    straight into place: a helper's error sample is some 16 MB, and each further copy
    of it cost the browser 3-5 ms while the core's worker waited.
    """
    meta: dict[str, Any] = {k: getattr(p, k) for k in _SCALAR_FIELDS}
    meta |= {k: getattr(p, k) for k in _PICK_FIELDS}
    meta |= {k: [getattr(p, k).scaled, getattr(p, k).special] for k in _SUM_FIELDS}
    arrays = {"hist": p.hist} | {f"axis_{i}": counts for i, counts in enumerate(p.axis_fails)}
    for name in _SAMPLE_FIELDS:
        sample = getattr(p, name)
        meta[name] = [sample.count, sample.cap, sample.bound, len(sample.groups)]
        arrays |= {f"{name}_{i}": rows for i, rows in enumerate(sample.groups)}
    meta["n_axes"] = len(p.axis_fails)
    places, offset = {}, 0
    for name, array in arrays.items():
        places[name] = [array.dtype.str, list(array.shape), offset]
        offset += -(-array.nbytes // 8) * 8
    header = json.dumps({"meta": meta, "arrays": places}).encode()
    head = PARTIAL_MAGIC + len(header).to_bytes(8, "little") + header
    start = len(head) + -len(head) % 8
    out = np.zeros(start + offset, dtype=np.uint8)
    out[: len(head)] = np.frombuffer(head, dtype=np.uint8)
    for name, array in arrays.items():
        at = start + places[name][2]
        out[at : at + array.nbytes].view(array.dtype).reshape(array.shape)[...] = array
    return out


def partial_from_bytes(data: BytesLike) -> Partial:
    """The partial :func:`partial_to_bytes` wrote (in this project's own workers)."""
    view = as_view(data)
    if bytes(view[: len(PARTIAL_MAGIC)]) != PARTIAL_MAGIC:
        raise ValueError("not a partial result written by perpendis.engine.compare.partial_to_bytes")
    length = int.from_bytes(view[len(PARTIAL_MAGIC) : len(PARTIAL_MAGIC) + 8], "little")
    head_end = len(PARTIAL_MAGIC) + 8 + length
    header = json.loads(bytes(view[len(PARTIAL_MAGIC) + 8 : head_end]))
    start = head_end + (-head_end % 8)
    arrays = {}
    for name, (dtype, shape, offset) in header["arrays"].items():
        count = math.prod(shape)
        arrays[name] = np.frombuffer(view, dtype=np.dtype(dtype), count=count, offset=start + offset).reshape(shape)
    meta = header["meta"]
    p = Partial(hist=arrays["hist"], axis_fails=[arrays[f"axis_{i}"] for i in range(meta["n_axes"])])
    for k in _SCALAR_FIELDS:
        setattr(p, k, meta[k])
    for k in _PICK_FIELDS:
        setattr(p, k, None if meta[k] is None else Pick(*meta[k]))
    for k in _SUM_FIELDS:
        setattr(p, k, ExactSum(*meta[k]))
    for name in _SAMPLE_FIELDS:
        count, cap, bound, n_groups = meta[name]
        setattr(p, name, Sample(count, [arrays[f"{name}_{i}"] for i in range(n_groups)], cap, bound))
    return p


@dataclass
class Share:
    """What folding elements ``start`` to ``stop`` of a comparison needs, apart from the elements."""

    start: int
    stop: int
    fmt: str
    shape: list[int]
    atol: float
    rtol: float
    preset: str
    lossy: list[int | None]
    complex: bool = False  # the values are (real, imaginary) pairs judged whole (Tolerance.complex)

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    def fold(self, a: BytesLike, b: BytesLike) -> Partial:
        """The partial of this share, from its elements given as raw bytes (fmt's storage)."""
        storage = np.dtype(format_of(self.fmt).storage)
        xa, xb = np.frombuffer(as_view(a), dtype=storage), np.frombuffer(as_view(b), dtype=storage)
        if xa.size != self.stop - self.start or xb.size != xa.size:
            raise ValueError(f"a share of {self.stop - self.start} elements came with {xa.size} and {xb.size}")
        return self.fold_chunks(aligned_chunks(xa, xb, offset=self.start))

    def fold_chunks(self, chunks: Iterable[Chunk]) -> Partial:
        """The partial of this share from its chunks, however they were read."""
        tol = Tolerance(self.atol, self.rtol, self.preset, None, self.complex)
        return fold(chunks, format_of(self.fmt), tuple(self.shape), tol, lossy=tuple(self.lossy))


# ---------------------------------------------------------------------------------------
# From the merged partial to the report's numbers.


def make_element(flat: int, raw_a: int, raw_b: int, fmt: Format, shape: tuple[int, ...]) -> Element:
    """One element of the pair in every form the report shows."""
    pair = np.array([raw_a, raw_b], dtype=np.uint64)
    dist, defined = bits.ulp_distance(pair[:1], pair[1:], fmt)
    va, vb = bits.value_of(raw_a, fmt), bits.value_of(raw_b, fmt)
    abs_diff = rel_diff = None
    if not (math.isnan(va) or math.isnan(vb)):
        abs_diff = 0.0 if va == vb else float(abs(va - vb))
        rel_diff = float(relative(np.array(abs_diff), np.array(abs(float(vb)))))
    return Element(
        flat=int(flat),
        index=_index(flat, shape),
        a=bits.decimal_string(raw_a, fmt),
        b=bits.decimal_string(raw_b, fmt),
        a_bits=bits.bit_string(raw_a, fmt),
        b_bits=bits.bit_string(raw_b, fmt),
        a_hex=bits.hex_string(raw_a, fmt),
        b_hex=bits.hex_string(raw_b, fmt),
        ulp=int(dist[0]) if defined[0] else None,
        abs_diff=abs_diff,
        rel_diff=rel_diff,
    )


QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
"""The error quantiles the report gives, by name."""

ERROR_COLUMNS = {"abs": 1, "rel": 2}
"""The columns of the error sample's rows ``(flat, abs, rel)`` the quantiles are taken of."""


@dataclass(frozen=True)
class Ranks:
    """Where the values of the quantiles of ``n_total`` errors lie among a sample's
    ``n_kept`` stored ones: the ``n_nonzero`` non-zero errors (all of them, or a uniform
    sample), the zeros coming first in sorted order and never stored."""

    n_kept: int
    n_nonzero: int
    n_total: int

    @classmethod
    def of(cls, p: Partial) -> Ranks:
        """Those of a partial's errors (pairs finite on both sides count)."""
        kept = min(p.errors.kept, p.errors.cap) if p.errors.cap else p.errors.kept
        return cls(kept, p.errors.count, p.n - p.n_excluded)

    def __add__(self, other: Ranks) -> Ranks:
        """Those of two partials' errors merged, when neither sample was cut (their rows put together)."""
        return Ranks(self.n_kept + other.n_kept, self.n_nonzero + other.n_nonzero, self.n_total + other.n_total)

    def rank(self, i: int) -> int | None:
        """Where the ``i``-th smallest of all errors sits among the stored ones; None for a zero."""
        j = i - (self.n_total - self.n_nonzero)
        if j < 0:
            return None
        return j if self.n_kept == self.n_nonzero else round(j * (self.n_kept - 1) / max(self.n_nonzero - 1, 1))

    def positions(self) -> list[float]:
        return [q * (self.n_total - 1) for q in QUANTILES.values()]

    def wanted(self) -> list[int]:
        """The ranks among the stored values that the quantiles need, sorted."""
        near = {i for pos in self.positions() for i in (math.floor(pos), math.floor(pos) + 1) if i < self.n_total}
        return sorted({r for i in near if (r := self.rank(i)) is not None})

    def quantiles(self, at: Mapping[int, float]) -> list[float | None]:
        """The quantiles (linear interpolation, as NumPy's default), from the values ``at`` the wanted ranks."""
        if self.n_total == 0:
            return [None] * len(QUANTILES)

        def value(i: int) -> float:
            r = self.rank(i)
            return 0.0 if r is None else at[r]

        out: list[float | None] = []
        for pos in self.positions():
            lo = math.floor(pos)
            frac = pos - lo
            low = value(lo)
            if frac == 0 or lo + 1 >= self.n_total:
                out.append(low)
                continue
            high = value(lo + 1)
            out.append(high if math.isinf(high) else low + frac * (high - low))
        return out


def select(values: np.ndarray, ranks: list[int], *, scratch: bool = False) -> dict[int, float]:
    """The ``r``-th smallest of ``values`` for each ``r`` in ``ranks`` (sorted); with
    ``scratch``, ``values`` is the caller's to lose and is reordered rather than copied.

    Only the ranks wanted are put in place: a full sort of a few million errors cost a
    third of a whole comparison in the browser.  One partition at the lowest rank puts
    every value at or above it after it, unordered; the wanted ranks are then read from
    that tail, sorted when it is short (a partition at several ranks at once costs about
    as many partitions, and the fancy selection of a tail by a mask cost more than both),
    else partitioned at the other ranks.  Exact either way: a rank's value is the same
    whichever way it is put in place.
    """
    if not ranks:
        return {}
    low = ranks[0]
    placed = values if scratch else np.array(values)
    placed.partition(low)
    out = {low: float(placed[low])}
    if len(ranks) == 1:
        return out
    tail = placed[low + 1 :]  # a view: put in place where it lies, no further copy
    if len(tail) <= max(1 << 16, len(values) // 4):
        tail.sort()
    else:
        tail.partition([r - low - 1 for r in ranks[1:]])
    return out | {r: float(tail[r - low - 1]) for r in ranks[1:]}


def _snr_db(signal: float, noise: float) -> float | None:
    """``10·log10(Σb² / Σ(a-b)²)``: infinite when there is no error, None when both sums overflowed.

    Taken as a difference of logarithms so that sums near float64's ends (values around
    1e-160 or 1e154 square to them) neither underflow nor overflow the ratio.
    """
    if noise == 0:
        return math.inf
    if signal == 0:
        return -math.inf
    if math.isinf(signal) and math.isinf(noise):
        return None
    return 10 * (math.log10(signal) - math.log10(noise))


COSINE_MIN_RATIO = 2.0**-24
"""Below this ``Σa²/Σb²`` (A's norm under 1/4096 of B's) the cosine is not given: ``Σa²``
is taken as ``Σb²`` plus the differing elements' ``Σ(a²-b²)``, whose rounding error is a
few units of ``Σb²``'s last place; above it the cosine is good to about 1e-7."""


def _cosine(s_ab: float, s_aa: float, s_bb: float) -> float | None:
    """``Σab / sqrt(Σa² Σb²)``, with the square roots taken apart so the product cannot underflow."""
    if not s_aa > COSINE_MIN_RATIO * s_bb:
        return None
    norm = math.sqrt(s_aa) * math.sqrt(s_bb)
    if not (0 < norm < math.inf) or not math.isfinite(s_ab):
        return None
    return max(-1.0, min(1.0, s_ab / norm))


def _stats(p: Partial) -> Stats:
    n = p.n - p.n_excluded
    if n <= 0:
        return Stats()
    ranks = Ranks.of(p)
    pct: dict[str, float | None] = {}
    for kind, column in ERROR_COLUMNS.items():
        found = ranks.quantiles(p.errors.order_statistics(column, ranks.wanted()))
        pct |= {f"{k}_{kind}": v for k, v in zip(QUANTILES, found, strict=True)}
    s_bb, sum_sq = p.sum_bb.value(), p.sum_sq.value()
    s_aa, s_ab = (p.sum_bb + p.sum_aa_minus_bb).value(), (p.sum_bb + p.sum_ab_minus_bb).value()
    cosine = _cosine(s_ab, s_aa, s_bb)
    snr = _snr_db(s_bb, sum_sq)
    return Stats(
        mean_abs=p.sum_abs.value() / n,
        mean_rel=p.sum_rel.value() / n,
        rmse=math.sqrt(sum_sq / n),
        cosine=cosine,
        snr_db=snr,
        **pct,
    )


def _axes(p: Partial, shape: tuple[int, ...]) -> list[AxisFailures]:
    if not p.n_fail:
        return []
    out = []
    for axis, (size, counts) in enumerate(zip(shape, p.axis_fails, strict=True)):
        bucket = _buckets(size)
        order = np.argsort(-counts, kind="stable")[:3]
        top = [[int(i) * bucket, float(counts[i]) / p.n_fail] for i in order if counts[i]]
        out.append(AxisFailures(axis, size, counts.tolist(), top, bucket))
    return out


def _histogram(p: Partial) -> Histogram:
    used = int(np.flatnonzero(p.hist).max(initial=0)) + 1
    return Histogram(ulp_edges(used), p.hist[:used].tolist(), p.ulp_nonfinite)


def _numbers(
    report: Report,
    p: Partial,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    rmse: tuple[float, float] | None = None,
) -> None:
    """Fill the report's numeric fields from the merged partial; ``rmse`` holds A's and B's
    RMSE against a float64 reference when the tolerance's rule can pass by them (dynamo)."""

    def element(pick: Pick | None) -> Element | None:
        return None if pick is None else make_element(pick.flat, pick.raw_a, pick.raw_b, fmt, shape)

    def failure(pick: Pick | None) -> Element | None:
        """A failing element; of complex values judged whole, its real part, with the
        ``|A - B|`` of the complex values as the rule computed it (no relative error:
        the pick does not keep ``|B|``)."""
        found = element(pick)
        if found is None or pick is None or not tol.complex:
            return found
        judged = float(np.array([pick.metric], dtype=np.uint64).view(np.float64)[0])
        return replace(found, abs_diff=None if math.isnan(judged) else judged, rel_diff=None)

    report.n_elements = p.n
    report.n_bitwise_diff = p.n_diff
    report.identical = p.n_diff == 0 and report.shape_match and report.dtype_match
    report.first_diff = element(p.first_diff)
    report.worst = {"abs": element(p.worst_abs), "ulp": element(p.worst_ulp), "rel": element(p.worst_rel)}
    report.max_ulp = int(p.worst_ulp.metric) if p.worst_ulp else 0
    report.max_abs_diff = p.worst_abs.metric if p.worst_abs else 0.0
    report.max_rel_diff = p.worst_rel.metric if p.worst_rel else 0.0
    report.n_nan_mismatch, report.n_inf_mismatch = p.n_nan, p.n_inf
    report.nan_mismatch_indices = [_index(f, shape) for f in p.nan_flat]
    report.inf_mismatch_indices = [_index(f, shape) for f in p.inf_flat]
    report.n_signed_zero_diff = p.n_signed_zero
    report.stats = _stats(p)
    report.ulp_histogram = _histogram(p)
    refused = refusal(tol, str(report.a["dtype"]), str(report.b["dtype"]), fmt.name)
    # dynamo's RMSE rule may pass failing elements, never a NaN or an infinity A and B disagree on.
    judged = p.n // 2 if tol.complex else p.n  # complex values are judged whole
    by_rmse = bool(p.n_fail and rmse is not None and not p.n_unreachable and dynamo_rmse_passes(*rmse, fmt, shape, tol))
    report.tolerance = ToleranceResult(
        atol=tol.atol,
        rtol=tol.rtol,
        preset=tol.preset,
        n_fail=p.n_fail,
        fraction_fail=p.n_fail / judged if judged else 0.0,
        passed=(p.n_fail == 0 or by_rmse) and refused is None,
        first_fail=failure(p.first_fail),
        warning=tol.warning,
        worst_fail=failure(p.worst_fail),
        refused=refused,
        passed_by=(
            f"its RMSE rule: RMSE(ref, A) = {rmse[0]:.3g} within that rule's bound on RMSE(ref, B) = {rmse[1]:.3g}"
            if by_rmse and rmse is not None
            else None
        ),
        n_judged=judged if tol.complex else None,
    )
    # One step up, so that the reported tolerance passes despite rounding in atol + rtol*|b|.
    need_atol = float(np.nextafter(p.need_atol, math.inf)) if p.need_atol > 0 else 0.0
    need_rtol = float(np.nextafter(p.need_rtol, math.inf)) if p.need_rtol > 0 else 0.0
    report.min_tolerance = MinTolerance(need_atol, need_rtol if math.isfinite(need_rtol) else None, p.n_unreachable)
    if p.n_print_limited:
        report.notes.append(
            f"{p.n_print_limited} element(s) differ by more than the tolerance but by less than the printed digits "
            "resolve; they were not counted as failures"
        )
    report.axes = _axes(p, shape)
    n_finite = p.n - p.n_excluded
    report.samples = {
        "diffs": p.diffs.rows(),
        "fails": p.fails.rows(),
        "n_diffs": p.diffs.count,
        # over pairs finite on both sides
        "b_rms": math.sqrt(max(p.sum_bb.value(), 0.0) / n_finite) if n_finite > 0 else 0.0,
    }


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
# The optional higher-precision reference.


def _side_error(side: np.ndarray, fmt: Format, ref64: np.ndarray) -> tuple[float, int | None, int]:
    """One side against the float64 reference: the RMSE over elements finite in both, the
    max ULP distance from the reference rounded to the side's own format (None where no
    distance is defined), and how many elements are non-finite on one of the two only, or
    non-finite on both but not the same (NaN against inf, or infinities of opposite sign)."""
    sq, count, worst, unlike = 0.0, 0, -1, 0
    flat_side, flat_ref = side.reshape(-1), ref64.reshape(-1)
    for start in range(0, flat_side.size, CHUNK):
        x, r = flat_side[start : start + CHUNK], flat_ref[start : start + CHUNK]
        v = bits.to_float64(x, fmt)
        ok = np.isfinite(v) & np.isfinite(r)
        with np.errstate(over="ignore"):
            err = v[ok] - r[ok]
        sq += float(np.dot(err, err))
        count += int(ok.sum())
        unlike += int((~ok & (v != r) & ~(np.isnan(v) & np.isnan(r))).sum())
        rounded = bits.raw_bits(bits.from_float64(r, fmt), fmt)
        dist, defined = bits.ulp_distance(bits.raw_bits(x, fmt), rounded, fmt)
        if defined.any():
            worst = max(worst, int(dist[defined].max()))
    return (math.sqrt(sq / count) if count else 0.0), (worst if worst >= 0 else None), unlike


def _rmse_every(side: np.ndarray, fmt: Format, ref64: np.ndarray) -> float:
    """``sqrt(mean((ref - side)**2))`` over every element, as ``torch._dynamo.utils.rmse``
    takes it: a NaN or an infinity on either side makes it NaN or inf."""
    total, flat_side, flat_ref = 0.0, side.reshape(-1), ref64.reshape(-1)
    for start in range(0, flat_side.size, CHUNK):
        with np.errstate(over="ignore", invalid="ignore"):
            err = flat_ref[start : start + CHUNK] - bits.to_float64(flat_side[start : start + CHUNK], fmt)
            total += float(np.dot(err, err))
    return math.sqrt(total / flat_side.size) if flat_side.size else math.nan


def _dynamo_rmse(a: Tensor, b: Tensor, ref: Tensor, aligned: Aligned) -> tuple[float, float] | None:
    """A's and B's RMSE against the float64 reference, as compared (None: no shape to compare)."""
    ref64 = _aligned_reference(a, b, ref, aligned)
    if ref64 is None or aligned.a is None or aligned.b is None:
        return None
    return _rmse_every(aligned.a, aligned.fmt, ref64), _rmse_every(aligned.b, aligned.fmt, ref64)


def _aligned_reference(a: Tensor, b: Tensor, ref: Tensor, aligned: Aligned) -> np.ndarray | None:
    """The reference's float64 values laid out as the compared elements (None: nothing compared)."""
    shape = aligned.shape
    if shape is None:
        return None
    if ref.shape == a.shape:
        r = like_a(ref.array, aligned)
    elif ref.shape in (b.shape, shape):
        r = np.broadcast_to(ref.array, shape)
    else:
        raise InputError(
            f"the reference has shape {shape_text(ref.shape)} but A has {shape_text(a.shape)} and B "
            f"{shape_text(b.shape)}; give a reference of the same shape as A or B",
            side="ref",
        )
    return bits.to_float64(np.ascontiguousarray(r), ref.fmt)


def _reference(a: Tensor, b: Tensor, ref: Tensor, aligned: Aligned) -> Reference | None:
    """Each side's error against ``ref`` in the compared format, and whether B's is within
    REF_FACTOR of A's."""
    ref64 = _aligned_reference(a, b, ref, aligned)
    if ref64 is None:
        return None
    # Both sides as they were compared: with a dtype mismatch, A is judged as if it too had
    # been computed in the narrower format, which is the question the comparison asks.
    a_rmse, a_ulp, a_unlike = _side_error(aligned.a, aligned.fmt, ref64)  # type: ignore[arg-type]
    b_rmse, b_ulp, b_unlike = _side_error(aligned.b, aligned.fmt, ref64)  # type: ignore[arg-type]
    ratio = b_rmse / a_rmse if a_rmse > 0 else None
    # B within one step of the correctly rounded reference is as good as rounding gets; a
    # NaN or inf the reference does not have is never rounding, and the RMSE cannot see it.
    close = b_rmse <= REF_FACTOR * a_rmse or (b_ulp is not None and b_ulp <= 1)
    equivalent = close and b_unlike <= a_unlike
    return Reference(a_rmse, b_rmse, a_ulp, b_ulp, ratio, equivalent, a_unlike, b_unlike)


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
                                                             check_dtype=self.check_dtype)
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
    prepared = Prepared(report, tol, options.depth, task=options.task, check_dtype=options.check_dtype)
    if ref is not None:
        report.reference = _reference(a, b, ref, aligned)
        if tol.rule.rmse and ref.format == "float64" and report.reference is not None:
            prepared.rmse = _dynamo_rmse(a, b, ref, aligned)
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


def compare_values(
    a: Any,
    b: Any,
    preset: str | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    *,
    depth: float = 1.0,
    ref: Any = None,
    sources: tuple[str, str] = ("A", "B"),
    task: Any = None,
    check_dtype: bool = True,
) -> Report:
    """The report of A against B (``b`` the expected value: the tolerance scales with
    ``|b|``); in a notebook it displays as a rich summary. ``task`` asks whether the
    prediction changes (``task="logits"``, see :func:`compare`); ``check_dtype`` as
    :func:`compare`'s. Unreadable input (an unsupported dtype, say) raises
    :class:`~perpendis.errors.InputError`."""
    options = ComparisonOptions(preset, atol, rtol, depth, check_dtype, task)
    reference = None if ref is None else as_tensor(ref, "reference")
    return compare(as_tensor(a, sources[0]), as_tensor(b, sources[1]), options, ref=reference)
