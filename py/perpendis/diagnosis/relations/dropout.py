"""A dropout pattern: one side is zero at a share p of elements and the other side times
1/(1−p) everywhere else.

Named when at least :data:`MIN_ZEROS` elements are zero on one side only, the rest fit
``X ≈ s·Y`` leaving at most :data:`~.rounding_model.EXPLAINED` of their raw RMS difference, and
``1/s`` agrees with the kept share ``1 − p`` within :data:`~.rounding_model.Z` binomial standard
deviations (plus a rounding).
"""

from __future__ import annotations

import math

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair
from .rounding_model import EXPLAINED, Z, rms, rounding_bound

MIN_ZEROS = 8


def find(pair: Pair) -> list[Finding]:
    a, b = pair.values()
    live = (a != 0) | (b != 0)
    a, b = a[live], b[live]
    if a.size < 4 * MIN_ZEROS:
        return []
    for side, x, y in (("A", a, b), ("B", b, a)):
        dropped = (x == 0) & (y != 0)
        n = y.size
        if dropped.sum() < MIN_ZEROS or dropped.mean() > 0.9:
            continue
        kept = ~dropped & (y != 0)
        xs, ys = x[kept], y[kept]
        if xs.size < MIN_ZEROS:
            continue  # nothing kept to scale: not dropout (a mask against its complement)
        s = float(np.dot(xs, ys) / np.dot(ys, ys))
        raw = float(rms(xs - ys))
        if raw == 0 or float(rms(xs - s * ys)) > EXPLAINED * raw:
            continue
        p = float(dropped.sum() / n)
        sd = math.sqrt(p * (1 - p) / n)
        if abs(1 / s - (1 - p)) > Z * sd + rounding_bound(pair.u, pair.depth):
            continue
        nominal = 1 - 1 / s
        message = (
            f"{side} looks like dropout of the other side: zero at {p:.1%} of elements where the other is not, "
            f"and {s:.6g} × the other elsewhere, i.e. 1/(1−p) with p = {nominal:.3g}"
        )
        where = place(f"{side}: dropout p = {nominal:.3g}", p=nominal, scale=s, zeros=int(dropped.sum()))
        return [Finding("dropout", "error", message, where, list(why.DROPOUT))]
    return []
