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
MIN_SLICES = 2  # slices a per-slice pattern needs (an RGB image has 3)
HOLDS_SHARE = 0.99  # share of elements a fitted map must bring within the tolerance


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


def holds(a: np.ndarray, mapped: np.ndarray, tolerance: tuple[float, float] | None) -> bool:
    """Whether a fitted map T holds to rounding: A = T(B) within the pair's tolerance
    (``|A − T(B)| <= atol + rtol·|T(B)|``, the test the user judges rounding by) on at
    least :data:`HOLDS_SHARE` of the elements.  A map that only explains most of the
    difference (a global affine fit to a softmax, to a LayerNorm weight scaled per
    feature) describes it but implies no cause.  True when no tolerance is known."""
    if tolerance is None or a.size == 0:
        return True
    atol, rtol = tolerance
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(a - mapped) <= atol + rtol * np.abs(mapped)
    return float(np.mean(ok)) >= HOLDS_SHARE
