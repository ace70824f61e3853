"""The rounding model every structure test's threshold comes from.

One rounding in a format of unit roundoff ``u`` moves a value by at most ``u`` of itself;
a computation ``depth`` roundings deep, by about ``depth·u`` (the bound of
``docs/contracts.md``'s rounding finding, with the same factor 8 of slack).  A quantity
reduced over ``m`` elements (a mean, a norm, a softmax denominator) carries the rounding
of its ``m`` terms, which grows like ``sqrt(m)·u`` for errors of random sign.  Rounding
errors also have random sign and no preferred position, so a statistic that would be
~N(0, 1) under rounding and lies ``Z`` standard deviations out is not rounding: with
``Z = 6`` a false alarm is a one-in-10^9 event per test, and a report runs a few hundred.
"""

from __future__ import annotations

import math

import numpy as np

ROUNDOFF_FACTOR = 8.0
Z = 6.0  # standard deviations a rounding-null statistic must exceed
EXPLAINED = 0.25  # a relation must leave at most this share of the raw RMS difference
MIN_FIT = 16  # elements a per-slice fit needs
MIN_SLICES = 4  # slices a per-slice pattern needs


def rounding_bound(u: float, depth: float, m: float = 1.0) -> float:
    """The largest relative systematic difference rounding explains for a quantity reduced
    over ``m`` terms, ``depth`` roundings deep."""
    return ROUNDOFF_FACTOR * u * depth * math.sqrt(max(m, 1.0))


def rms(x: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    return np.sqrt(np.mean(np.square(x), axis=axis))


def sign_z(d: np.ndarray) -> float:
    """The sign test's statistic: (positives − negatives) / sqrt(n), ~N(0, 1) for rounding."""
    nonzero = d[d != 0]
    n = nonzero.size
    return float((np.count_nonzero(nonzero > 0) * 2 - n) / math.sqrt(n)) if n else 0.0


CORRELATION_CAP = 4096  # pairs a rank correlation reads: z resolves |r| of 0.1 at 6 sd


def correlation_z(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's rank correlation of ``x`` and ``y`` and its statistic ``r·sqrt(n-1)``,
    ~N(0, 1) under independence (on an evenly strided subset of at most CORRELATION_CAP)."""
    if x.size > CORRELATION_CAP:
        step = -(-x.size // CORRELATION_CAP)
        x, y = x[::step], y[::step]
    n = x.size
    if n < MIN_FIT:
        return 0.0, 0.0
    rx = np.argsort(np.argsort(x, kind="stable"), kind="stable").astype(np.float64)
    ry = np.argsort(np.argsort(y, kind="stable"), kind="stable").astype(np.float64)
    rx -= rx.mean()
    ry -= ry.mean()
    den = math.sqrt(float(np.dot(rx, rx) * np.dot(ry, ry)))
    r = float(np.dot(rx, ry) / den) if den > 0 else 0.0
    return r, r * math.sqrt(n - 1)
