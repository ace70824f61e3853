"""The partial of one chunk: flat elements ``start ...`` of both sides, aligned.

Equality is bit equality, so each chunk starts with one vectorised comparison of raw
bits, and all float, ULP and relative-error maths runs only on the differing elements.
The one full pass of float maths is ``sum(b**2)`` (a BLAS-free dot product), which the
cosine similarity and SNR need; it is written so that its rounding only scales the tiny
deviation of the cosine from 1, never swamps it.  Every differing element passes through
here, so the common case (all of them finite) skips the masks that NaN and infinities
need, and each quantity is computed once (:class:`Differing`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import reduce

import numpy as np

from ...numerics import bits
from ...numerics.bits import Format
from ...numerics.tolerance import Tolerance, bit_equal_nan_fails, failing, judged_difference
from . import partial as declared
from .exact import ExactSum
from .fails import complex_fails, count_fails, needed
from .partial import INDEX_CAP, PATTERN_SAMPLE_CAP, Partial, Pick, axis_counts, pick
from .reservoir import sample_of
from .ulp_histogram import ulp_histogram

CHUNK = 1 << 20  # elements per chunk: big enough to amortise NumPy calls, small enough to stream; even,
# so that a chunk (and a share, whole chunks) never splits a complex value's two parts

Chunk = tuple[int, np.ndarray, np.ndarray]
Lossy = tuple[int | None, int | None]


def relative(absd: np.ndarray, absb: np.ndarray) -> np.ndarray:
    """``|a - b| / |b|``: 0 where both are equal, infinite where only ``b`` is zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(absd == 0, 0.0, absd / absb)


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


@dataclass
class Differing:
    """The elements of a chunk whose bits differ, in every form the statistics need."""

    at: np.ndarray  # positions in the chunk
    flat: np.ndarray  # flat indices
    da: np.ndarray  # raw bits of A and B
    db: np.ndarray
    va: np.ndarray  # values as float64
    vb: np.ndarray
    signed: np.ndarray  # a - b
    absd: np.ndarray  # |a - b|
    absb: np.ndarray  # |b|
    rel: np.ndarray  # |a - b| / |b|
    n_equal: int  # equal values of differing bits: +0 against -0 (or int64 neighbours float64 cannot tell apart)
    finite: np.ndarray | None  # both sides finite; None: all of them are
    nan_a: np.ndarray | None  # A and B NaN (None when all are finite)
    nan_b: np.ndarray | None
    dist: np.ndarray  # ULP distance
    defined: np.ndarray  # where the distance is defined

    def finite_part(self, x: np.ndarray) -> np.ndarray:
        """``x`` at the elements finite on both sides (``x`` itself when all are)."""
        return x if self.finite is None else x[self.finite]


def differing(diff: np.ndarray, start: int, ra: np.ndarray, rb: np.ndarray, dtype: np.dtype, fmt: Format) -> Differing:
    """The elements at chunk positions ``diff`` (of raw bits ``ra``, ``rb``), as :class:`Differing`."""
    da, db = ra[diff], rb[diff]
    va, vb = bits.to_float64(da.view(dtype), fmt), bits.to_float64(db.view(dtype), fmt)
    with np.errstate(invalid="ignore", over="ignore"):
        signed = va - vb
    absd, absb = bits.magnitude(signed), bits.magnitude(vb)
    n_equal = int(np.count_nonzero(absd == 0))
    if n_equal:
        rel = relative(absd, absb)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = absd / absb
    # A finite difference needs both sides finite; only when some is not are the sides checked.
    finite = nan_a = nan_b = None
    if not np.isfinite(signed).all():
        finite, nan_a, nan_b = np.isfinite(va) & np.isfinite(vb), np.isnan(va), np.isnan(vb)
    dist, defined = bits.ulp_distance(da, db, fmt)
    return Differing(
        diff, diff + start, da, db, va, vb, signed, absd, absb, rel, n_equal, finite, nan_a, nan_b, dist, defined
    )


def chunk_partial(
    start: int,
    a: np.ndarray,
    b: np.ndarray,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    lossy: Lossy = (None, None),
) -> Partial:
    """The partial result of one aligned chunk: flat elements ``start ...`` of both sides.

    ``lossy`` gives, for each side printed with too few digits to pin its values, the
    :func:`~perpendis.numerics.tolerance.printed_digits` of its print (None for exact sides); a
    failure within what those digits resolve is not counted (``n_print_limited``).
    """
    a, b = np.ascontiguousarray(a).ravel(), np.ascontiguousarray(b).ravel()
    ra, rb = bits.raw_bits(a, fmt), bits.raw_bits(b, fmt)
    p = Partial(n=a.size, axis_fails=axis_counts(shape))
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
            complex_fails(p, start, ra, rb, same_nan, fmt, shape, tol, lossy)
        elif same_nan.size:
            count_fails(p, same_nan, start, ra, rb, fmt, shape, np.full(same_nan.size, math.nan))
        return p
    d = differing(diff, start, ra, rb, a.dtype, fmt)
    if d.finite is not None and p.n_excluded == 0:
        _exclude_nonfinite(p, d, a, b, fmt)
    _where_they_differ(p, d, fmt)
    _error_sums(p, d)
    if tol.complex:
        complex_fails(p, start, ra, rb, np.concatenate([diff, same_nan]), fmt, shape, tol, lossy)
    else:
        _tolerance_test(p, d, same_nan, start, ra, rb, fmt, shape, tol, lossy)
    p.diffs = sample_of(PATTERN_SAMPLE_CAP, d.flat, d.va, d.vb)
    return p


def _where_they_differ(p: Partial, d: Differing, fmt: Format) -> None:
    """How many differ and where: the first, NaN and infinity mismatches, signed zeros, the
    ULP histogram and the worst by absolute, relative and ULP error."""
    p.n_diff = int(d.at.size)
    p.first_diff = Pick(0.0, int(d.flat[0]), int(d.da[0]), int(d.db[0]))
    defined = None
    if d.nan_a is not None and d.nan_b is not None:
        nan_a, nan_b = d.nan_a, d.nan_b
        nan_mismatch = nan_a != nan_b
        inf_mismatch = (np.isinf(d.va) | np.isinf(d.vb)) & ~nan_a & ~nan_b
        p.n_nan, p.nan_flat = int(nan_mismatch.sum()), d.flat[nan_mismatch][:INDEX_CAP].tolist()
        p.n_inf, p.inf_flat = int(inf_mismatch.sum()), d.flat[inf_mismatch][:INDEX_CAP].tolist()
        p.ulp_nonfinite = int((~d.defined).sum())
        defined = d.defined
    p.n_signed_zero = d.n_equal if fmt.is_float else 0
    p.hist += ulp_histogram(d.dist if defined is None else d.dist[defined], p.hist.size)
    p.worst_abs = pick(d.absd, d.finite, d.flat, d.da, d.db)
    p.worst_rel = pick(d.rel, d.finite, d.flat, d.da, d.db)
    p.worst_ulp = pick(d.dist, defined, d.flat, d.da, d.db)


def _exclude_nonfinite(p: Partial, d: Differing, a: np.ndarray, b: np.ndarray, fmt: Format) -> None:
    """Leave the pairs non-finite on either side out of the stats."""
    p.n_excluded = int((~d.finite).sum())  # type: ignore[operator]
    if (~d.finite & np.isfinite(d.vb)).any():  # type: ignore[operator]
        # B is finite where A is not: its b² leaves the sum.  Summed again rather than
        # subtracted, which cancels to nothing when that b² dwarfs the rest.
        p.sum_bb = ExactSum.of(_finite_sum_squares(a, b, fmt)[0])


def _error_sums(p: Partial, d: Differing) -> None:
    """The sums of the errors over pairs finite on both sides, and the sample of them."""
    fa, fb, fd, fr, fsigned = (d.finite_part(x) for x in (d.va, d.vb, d.absd, d.rel, d.signed))
    # float64 values past 1e154 overflow these sums: the stats then say inf or nan, honestly.
    with np.errstate(over="ignore", invalid="ignore"):
        sum_abs, sum_rel, sum_sq = float(fd.sum()), float(fr.sum()), _dot(fd, fd)
        # Σa² - Σb² and Σab - Σb² over the differing elements, without the cancellation of
        # subtracting two large sums: Σ(a-b)(a+b) and Σb(a-b).
        d_aa, d_ab = _dot(fsigned, fa + fb), _dot(fsigned, fb)
    p.sum_abs, p.sum_rel, p.sum_sq = ExactSum.of(sum_abs), ExactSum.of(sum_rel), ExactSum.of(sum_sq)
    p.sum_aa_minus_bb, p.sum_ab_minus_bb = ExactSum.of(d_aa), ExactSum.of(d_ab)
    fflat = d.finite_part(d.flat)
    if d.n_equal:
        nonzero = fd > 0
        fflat, fd, fr = fflat[nonzero], fd[nonzero], fr[nonzero]
    p.errors = sample_of(declared.ERROR_SAMPLE_CAP, fflat, fd, fr)


def _tolerance_test(
    p: Partial,
    d: Differing,
    same_nan: np.ndarray,
    start: int,
    ra: np.ndarray,
    rb: np.ndarray,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    lossy: Lossy,
) -> None:
    """The tolerance test of real values: the failures among the differing elements and the
    bit-equal NaNs the rule fails, and the smallest tolerance that passes."""
    both_nan = None if d.nan_a is None else d.nan_a & d.nan_b
    failed, p.n_print_limited = failing(d.absd, d.absb, both_nan, d.da, d.db, fmt, tol, lossy)
    if failed.any() or same_nan.size:
        judged = judged_difference(d.absd[failed], d.da[failed], d.db[failed], fmt, tol)
        at = d.at[failed]
        if same_nan.size:  # bit-equal NaNs the rule fails, in flat order among the others
            at, judged = np.concatenate([at, same_nan]), np.concatenate([judged, np.full(same_nan.size, math.nan)])
            order = np.argsort(at, kind="stable")
            at, judged = at[order], judged[order]
        count_fails(p, at, start, ra, rb, fmt, shape, judged)
    p.need_atol, p.need_rtol = needed(d.finite_part(d.absd), d.finite_part(d.absb), tol)


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

    empty = Partial(axis_fails=axis_counts(shape))
    return reduce(step, chunks, empty)

