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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import reduce

import numpy as np

from . import bits
from .align import Aligned, align, compared_format, like_a
from .bits import Format
from .errors import InputError
from .report import (
    AxisFailures,
    Element,
    Histogram,
    MinTolerance,
    Reference,
    Report,
    Stats,
    ToleranceResult,
    shape_text,
)
from .tensor import Tensor
from .tolerance import Tolerance, failing, printed_digits, resolve

CHUNK = 1 << 20  # elements per chunk: big enough to amortise NumPy calls, small enough to stream
ERROR_SAMPLE_CAP = 1 << 21  # non-zero errors kept for percentiles; exact below this many
PATTERN_SAMPLE_CAP = 4096  # (flat, a, b) rows of differing and failing elements, for diagnosis
INDEX_CAP = 8  # first NaN/Inf mismatch indices reported
AXIS_CAP = 1024  # entries per axis in failure counts; longer axes are bucketed
REF_FACTOR = 4.0  # B is rounding-equivalent when its error vs ref is within this factor of A's

Chunk = tuple[int, np.ndarray, np.ndarray]


# ---------------------------------------------------------------------------------------
# Samples: bounded, mergeable, exact while everything fits.


@dataclass
class Sample:
    """``count`` rows seen, at most ``cap`` of them shown by :meth:`rows`: all (exact) or a
    uniform subset.

    The rows are kept in groups ``(rows, seen)``, each all ``seen`` rows of some chunks or
    a uniform subset of them.  Merging only appends groups; they are cut back to ``cap``
    rows, each group in proportion to the rows it stands for, once they hold twice as
    many, so a row is copied a bounded number of times however long the fold.  (Cutting
    back at every merge made a long streamed comparison copy the whole sample per chunk.)
    """

    count: int = 0
    groups: list[tuple[np.ndarray, int]] = field(default_factory=list)
    cap: int = 0

    @property
    def kept(self) -> int:
        return sum(len(rows) for rows, _ in self.groups)

    def rows(self) -> np.ndarray:
        groups = self._cut().groups
        return np.concatenate([rows for rows, _ in groups]) if groups else np.empty((0, 0))

    def merge(self, other: Sample, cap: int) -> Sample:
        merged = Sample(self.count + other.count, self.groups + other.groups, cap)
        return merged._cut() if merged.kept > 2 * cap else merged

    def _cut(self) -> Sample:
        """At most ``cap`` rows, taken from each group in proportion to the rows it stands for."""
        if self.kept <= self.cap:
            return self
        kept = np.array([len(rows) for rows, _ in self.groups])
        share = np.array([seen for _, seen in self.groups]) * (self.cap / self.count)
        take = np.minimum(kept, np.floor(share).astype(np.int64))
        # The rounding remainder goes to the groups with the largest fractions and rows to spare.
        spare = np.flatnonzero(kept > take)
        extra = spare[np.argsort(-(share - take)[spare], kind="stable")][: self.cap - int(take.sum())]
        take[extra] += 1
        rng = np.random.default_rng(self.count)
        picked = [_subsample(rows, int(k), rng) for (rows, _), k in zip(self.groups, take, strict=True)]
        return Sample(self.count, [(np.concatenate(picked), self.count)], self.cap)


def _subsample(rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform choice of ``k`` rows, in their order (drawing the rows to drop when they are fewer)."""
    n = len(rows)
    if k >= n:
        return rows
    keep = np.zeros(n, dtype=bool) if k <= n // 2 else np.ones(n, dtype=bool)
    keep[rng.choice(n, size=min(k, n - k), replace=False)] = k <= n // 2
    return rows[keep]


def _sample_of(cap: int, *columns: np.ndarray) -> Sample:
    """A sample of the rows made of ``columns``, choosing rows before building them."""
    n = len(columns[0])
    if n == 0:
        return Sample()
    keep = slice(None) if n <= cap else np.sort(np.random.default_rng(n).choice(n, size=cap, replace=False))
    return Sample(n, [(np.column_stack([c[keep] for c in columns]), n)], cap)


# ---------------------------------------------------------------------------------------
# The partial result of one chunk, and merging.

Pick = tuple[float, int, int, int]  # (metric, flat, raw a, raw b)


def _better(p: Pick | None, q: Pick | None) -> Pick | None:
    """The larger metric, the earlier element on ties."""
    if p is None or q is None:
        return p if q is None else q
    return q if (q[0], -q[1]) > (p[0], -p[1]) else p


def _earlier(p: Pick | None, q: Pick | None) -> Pick | None:
    if p is None or q is None:
        return p if q is None else q
    return p if p[1] <= q[1] else q


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
    sum_abs: float = 0.0
    sum_rel: float = 0.0
    sum_sq: float = 0.0
    s_bb: float = 0.0
    d_aa: float = 0.0
    d_ab: float = 0.0
    errors: Sample = field(default_factory=Sample)  # rows (abs, rel) of non-zero finite errors
    n_fail: int = 0
    first_fail: Pick | None = None
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
            s_bb=self.s_bb + o.s_bb,
            d_aa=self.d_aa + o.d_aa,
            d_ab=self.d_ab + o.d_ab,
            errors=self.errors.merge(o.errors, ERROR_SAMPLE_CAP),
            n_fail=self.n_fail + o.n_fail,
            first_fail=_earlier(self.first_fail, o.first_fail),
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


def ulp_edges(n_bins: int) -> list[str]:
    """Labels of the first ``n_bins`` ULP histogram bins."""
    labels = ["0", "1", "2"]
    labels += [f"{(1 << (k - 2)) + 1}-{1 << (k - 1)}" for k in range(3, n_bins)]
    return labels[:n_bins]


def _sum_squares(array: np.ndarray, fmt: Format) -> float:
    x = array.ravel() if fmt.name in ("float32", "float64") else bits.to_float64(array.ravel(), fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.dot(x, x))


def _pick(metric: np.ndarray, mask: np.ndarray, flat: np.ndarray, da: np.ndarray, db: np.ndarray) -> Pick | None:
    if not mask.any():
        return None
    i = int(np.flatnonzero(mask)[np.argmax(metric[mask])])
    return (float(metric[i]), int(flat[i]), int(da[i]), int(db[i]))


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
    :func:`~perpendis.tolerance.printed_digits` of its print (None for exact sides); a
    failure within what those digits resolve is not counted (``n_print_limited``).
    """
    a, b = np.ascontiguousarray(a).ravel(), np.ascontiguousarray(b).ravel()
    ra, rb = bits.raw_bits(a, fmt), bits.raw_bits(b, fmt)
    p = Partial(n=a.size, axis_fails=_axis_counts(shape))
    diff = np.flatnonzero(ra != rb)
    p.hist[0] = a.size - diff.size
    s_bb = _sum_squares(b, fmt)
    if not math.isfinite(s_bb):
        # Rare: non-finite or huge values.  Redo the sum in float64 over finite pairs only.
        fa, fb = bits.to_float64(a, fmt), bits.to_float64(b, fmt)
        finite_all = np.isfinite(fa) & np.isfinite(fb)
        with np.errstate(over="ignore"):  # float64 values past 1e154 square to inf: cosine and SNR say so
            s_bb = float(np.dot(fb[finite_all], fb[finite_all]))
        p.n_excluded = int(a.size - finite_all.sum())
    p.s_bb = s_bb
    if diff.size == 0:
        return p
    exact_sum = p.n_excluded == 0
    da, db = ra[diff], rb[diff]
    flat = diff + start
    va, vb = bits.to_float64(a[diff], fmt), bits.to_float64(b[diff], fmt)
    nan_a, nan_b = bits.is_nan(da, fmt), bits.is_nan(db, fmt)
    inf_any = bits.is_inf(da, fmt) | bits.is_inf(db, fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        absd = np.abs(va - vb)
    absb = np.abs(vb)
    rel = relative(absd, absb)
    finite = np.isfinite(va) & np.isfinite(vb)
    dist, defined = bits.ulp_distance(da, db, fmt)

    p.n_diff = int(diff.size)
    p.first_diff = (0.0, int(flat[0]), int(da[0]), int(db[0]))
    nan_mismatch = nan_a != nan_b
    inf_mismatch = inf_any & ~nan_a & ~nan_b
    p.n_nan, p.nan_flat = int(nan_mismatch.sum()), flat[nan_mismatch][:INDEX_CAP].tolist()
    p.n_inf, p.inf_flat = int(inf_mismatch.sum()), flat[inf_mismatch][:INDEX_CAP].tolist()
    p.n_signed_zero = int(((va == 0) & (vb == 0)).sum())
    p.hist += np.bincount(_ulp_bins(dist[defined]).astype(np.intp), minlength=p.hist.size)[: p.hist.size]
    p.ulp_nonfinite = int((~defined).sum())
    p.worst_abs = _pick(absd, finite, flat, da, db)
    p.worst_rel = _pick(rel, finite, flat, da, db)
    p.worst_ulp = _pick(dist.astype(np.float64), defined, flat, da, db)
    if p.worst_ulp is not None:  # keep the exact integer distance, not its float64 rounding
        i = int(np.searchsorted(flat, p.worst_ulp[1]))
        p.worst_ulp = (int(dist[i]), *p.worst_ulp[1:])  # type: ignore[assignment]

    fa, fb, fd, fr = va[finite], vb[finite], absd[finite], rel[finite]
    if exact_sum:
        p.n_excluded = int((~finite).sum())
        p.s_bb -= float(np.dot(vb[~finite & np.isfinite(vb)], vb[~finite & np.isfinite(vb)]))
    # float64 values past 1e154 overflow these sums: the stats then say inf or nan, honestly.
    with np.errstate(over="ignore", invalid="ignore"):
        p.sum_abs, p.sum_rel, p.sum_sq = float(fd.sum()), float(fr.sum()), float(np.square(fd).sum())
        # Σa² - Σb² and Σab - Σb² over the differing elements, without the cancellation of
        # subtracting two large sums: Σ(a-b)(a+b) and Σb(a-b).
        signed = fa - fb
        p.d_aa = float((signed * (fa + fb)).sum())
        p.d_ab = float((signed * fb).sum())
    nonzero = fd > 0
    p.errors = _sample_of(ERROR_SAMPLE_CAP, fd[nonzero], fr[nonzero])

    failed, p.n_print_limited = failing(va, vb, da, db, fmt, tol, lossy)
    p.n_fail = int(failed.sum())
    if p.n_fail:
        i = int(np.argmax(failed))
        p.first_fail = (0.0, int(flat[i]), int(da[i]), int(db[i]))
    if p.n_fail and shape:
        for axis, idx in enumerate(np.unravel_index(flat[failed], shape)):
            counts = p.axis_fails[axis]
            counts += np.bincount((idx // _buckets(shape[axis])).astype(np.intp), minlength=counts.size)
    p.need_atol = float(np.max(fd - tol.rtol * np.abs(fb), initial=0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p.need_rtol = float(np.max(np.where(fd <= tol.atol, 0.0, (fd - tol.atol) / np.abs(fb)), initial=0.0))
    p.diffs = _sample_of(PATTERN_SAMPLE_CAP, flat.astype(np.float64), va, vb)
    p.fails = _sample_of(PATTERN_SAMPLE_CAP, flat[failed].astype(np.float64), va[failed], vb[failed])
    return p


def aligned_chunks(a: np.ndarray, b: np.ndarray, size: int = CHUNK) -> Iterator[Chunk]:
    """Aligned C-order chunks of two arrays of one shape."""
    fa, fb = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    for start in range(0, fa.size, size):
        yield start, fa[start : start + size], fb[start : start + size]


def fold(
    chunks: Iterable[Chunk],
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    *,
    progress: Callable[[float], object] | None = None,
    lossy: tuple[int | None, int | None] = (None, None),
) -> Partial:
    """Merge the partials of all chunks, calling ``progress(fraction)`` after each."""
    total = math.prod(shape)

    def step(acc: Partial, chunk: Chunk) -> Partial:
        merged = acc.merge(chunk_partial(chunk[0], chunk[1], chunk[2], fmt, shape, tol, lossy))
        if progress is not None:
            progress(merged.n / total if total else 1.0)
        return merged

    empty = Partial(axis_fails=_axis_counts(shape))
    return reduce(step, chunks, empty)


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


def _quantile(sorted_values: np.ndarray, n_nonzero: int, n_total: int, q: float) -> float | None:
    """Quantile of ``n_total`` values of which all but ``n_nonzero`` are zero.

    ``sorted_values`` are the non-zero values (all of them, or a uniform sample); the
    zeros come first in sorted order and are never stored.
    """
    if n_total == 0:
        return None
    n_zero = n_total - n_nonzero

    def value(i: int) -> float:
        if i < n_zero:
            return 0.0
        j = i - n_zero
        if len(sorted_values) != n_nonzero:
            j = round(j * (len(sorted_values) - 1) / max(n_nonzero - 1, 1))
        return float(sorted_values[j])

    pos = q * (n_total - 1)
    lo = math.floor(pos)
    frac = pos - lo
    low = value(lo)
    if frac == 0 or lo + 1 >= n_total:
        return low
    high = value(lo + 1)
    return high if math.isinf(high) else low + frac * (high - low)


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


def _cosine(s_ab: float, s_aa: float, s_bb: float) -> float | None:
    """``Σab / sqrt(Σa² Σb²)``, with the square roots taken apart so the product cannot underflow."""
    norm = math.sqrt(s_aa) * math.sqrt(s_bb)
    if not (0 < norm < math.inf) or not math.isfinite(s_ab):
        return None
    return s_ab / norm


def _stats(p: Partial) -> Stats:
    n = p.n - p.n_excluded
    if n <= 0:
        return Stats()
    rows = p.errors.rows()
    abs_sorted = np.sort(rows[:, 0]) if rows.size else np.empty(0)
    rel_sorted = np.sort(rows[:, 1]) if rows.size else np.empty(0)
    qs = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
    pct = {f"{k}_abs": _quantile(abs_sorted, p.errors.count, n, q) for k, q in qs.items()}
    pct |= {f"{k}_rel": _quantile(rel_sorted, p.errors.count, n, q) for k, q in qs.items()}
    s_aa, s_ab = p.s_bb + p.d_aa, p.s_bb + p.d_ab
    cosine = _cosine(s_ab, s_aa, p.s_bb)
    snr = _snr_db(p.s_bb, p.sum_sq)
    return Stats(
        mean_abs=p.sum_abs / n, mean_rel=p.sum_rel / n, rmse=math.sqrt(p.sum_sq / n), cosine=cosine, snr_db=snr, **pct
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


def _numbers(report: Report, p: Partial, fmt: Format, shape: tuple[int, ...], tol: Tolerance) -> None:
    """Fill the report's numeric fields from the merged partial."""

    def element(pick: Pick | None) -> Element | None:
        return None if pick is None else make_element(pick[1], pick[2], pick[3], fmt, shape)

    report.n_elements = p.n
    report.n_bitwise_diff = p.n_diff
    report.identical = p.n_diff == 0 and report.shape_match and report.dtype_match
    report.first_diff = element(p.first_diff)
    report.worst = {"abs": element(p.worst_abs), "ulp": element(p.worst_ulp), "rel": element(p.worst_rel)}
    report.max_ulp = int(p.worst_ulp[0]) if p.worst_ulp else 0
    report.max_abs_diff = p.worst_abs[0] if p.worst_abs else 0.0
    report.max_rel_diff = p.worst_rel[0] if p.worst_rel else 0.0
    report.n_nan_mismatch, report.n_inf_mismatch = p.n_nan, p.n_inf
    report.nan_mismatch_indices = [_index(f, shape) for f in p.nan_flat]
    report.inf_mismatch_indices = [_index(f, shape) for f in p.inf_flat]
    report.n_signed_zero_diff = p.n_signed_zero
    report.stats = _stats(p)
    report.ulp_histogram = _histogram(p)
    report.tolerance = ToleranceResult(
        atol=tol.atol,
        rtol=tol.rtol,
        preset=tol.preset,
        n_fail=p.n_fail,
        fraction_fail=p.n_fail / p.n if p.n else 0.0,
        passed=p.n_fail == 0,
        first_fail=element(p.first_fail),
        warning=tol.warning,
    )
    # One step up, so that the reported tolerance passes despite rounding in atol + rtol*|b|.
    need_atol = float(np.nextafter(p.need_atol, math.inf)) if p.need_atol > 0 else 0.0
    need_rtol = float(np.nextafter(p.need_rtol, math.inf)) if p.need_rtol > 0 else 0.0
    report.min_tolerance = MinTolerance(need_atol, need_rtol if math.isfinite(need_rtol) else None)
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
        "b_rms": math.sqrt(max(p.s_bb, 0.0) / n_finite) if n_finite > 0 else 0.0,  # over pairs finite on both sides
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
    from .diagnose import diagnose

    tol = tolerance or resolve(fmt)
    report = _empty_report(a_info, b_info, None, fmt)
    report.compared_shape = list(shape)
    lossy = (printed_digits(a_info), printed_digits(b_info))
    _numbers(report, fold(chunks, fmt, shape, tol, progress=progress, lossy=lossy), fmt, shape, tol)
    report.layout = {"kind": "same"}
    diagnose(report, depth=depth)
    return report


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


def _reference(a: Tensor, b: Tensor, ref: Tensor, aligned: Aligned) -> Reference | None:
    """Each side's error against ``ref`` in the compared format, and whether B's is within
    REF_FACTOR of A's."""
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
    ref64 = bits.to_float64(np.ascontiguousarray(r), ref.fmt)
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
# The in-memory entry point.


def compare(
    a: Tensor,
    b: Tensor,
    *,
    tolerance: Tolerance | None = None,
    ref: Tensor | None = None,
    progress: Callable[[float], object] | None = None,
    preset: str | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    depth: float = 1.0,
) -> Report:
    """The full, diagnosed report for A against B (B is the reference of the tolerance test).

    ``tolerance`` wins when given; otherwise ``preset``/``atol``/``rtol`` are resolved for
    the compared format.  ``depth`` scales what counts as rounding-like error (roughly the
    number of roundings that separate the two computations).
    """
    from .diagnose import diagnose

    if not (isinstance(depth, int | float) and math.isfinite(depth) and depth > 0):
        raise InputError(f"depth must be a number > 0 (roughly the number of roundings between A and B), got {depth!r}")
    fmt = compared_format(a.fmt, b.fmt)
    tol = tolerance or resolve(fmt, preset=preset, atol=atol, rtol=rtol)
    aligned = align(a, b, tol)
    report = _empty_report(a.describe(), b.describe(), None if ref is None else ref.describe(), fmt)
    report.notes = list(aligned.notes)
    report.layout = dict(aligned.layout)
    report.aligned = aligned
    if ref is not None:
        report.reference = _reference(a, b, ref, aligned)
    shape = aligned.shape
    if shape is not None and aligned.a is not None and aligned.b is not None:
        report.compared_shape = list(shape)
        lossy = (printed_digits(report.a), printed_digits(report.b))
        partial = fold(aligned_chunks(aligned.a, aligned.b), fmt, shape, tol, progress=progress, lossy=lossy)
        _numbers(report, partial, fmt, shape, tol)
    elif progress is not None:
        progress(1.0)
    diagnose(report, depth=depth)
    return report
