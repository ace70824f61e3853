"""The tolerance test's part of a chunk's partial: which elements fail, first, worst and per
axis, and the smallest tolerance that would pass them all."""

from __future__ import annotations

import math

import numpy as np

from ...numerics import bits
from ...numerics.bits import Format
from ...numerics.tolerance import Tolerance
from ...numerics.tolerance_complex import complex_test
from .partial import PATTERN_SAMPLE_CAP, Partial, Pick, buckets, pick
from .reservoir import sample_of


def needed(fd: np.ndarray, fbabs: np.ndarray, tol: Tolerance) -> tuple[float, float]:
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


def complex_fails(
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
        count_fails(p, 2 * which[failed], start, ra, rb, fmt, shape, judged[failed], pairs=True)
    finite = np.isfinite(exact_d) & np.isfinite(exact_b)
    p.need_atol, p.need_rtol = needed(exact_d[finite], exact_b[finite], tol)


_NAN_KEY = 0x7FF8_0000_0000_0000  # above every other |a - b|: the peers' max puts NaN first


def count_fails(
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
    p.worst_fail = pick(key, None, flat, fa, fb)
    p.n_unreachable = int((~finite).sum())
    if shape:
        for axis, idx in enumerate(np.unravel_index(flat, shape)):
            if pairs and axis == len(shape) - 1:
                continue
            counts = p.axis_fails[axis]
            counts += np.bincount((idx // buckets(shape[axis])).astype(np.intp), minlength=counts.size)
    p.fails = sample_of(PATTERN_SAMPLE_CAP, places + start, va, vb)


