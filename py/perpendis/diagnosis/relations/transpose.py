"""Transposition of two equal-sized axes: A equal to B with axes i and j swapped.

Shapes agree, so alignment compares the given order; here the flat sample of A is
measured against B at the swapped index.  Transposed when that RMS distance is at least
8 times smaller than in the given order, while the given order's is beyond rounding
(:func:`~.rounding_model.rounding_bound`).  A symmetric tensor swaps onto itself and is never named.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair
from .rounding_model import MIN_FIT, rms, rounding_bound

CLOSER = 8.0


def find(pair: Pair) -> list[Finding]:
    out = []
    for i, j in itertools.combinations(range(len(pair.shape)), 2):
        n = pair.shape[i]
        if n != pair.shape[j] or n < 2:
            continue
        got = pair.swapped(i, j)
        if got is None:
            continue
        a, b, bt = got
        ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(bt)
        if ok.sum() < MIN_FIT:
            continue
        given, swapped = float(rms(a[ok] - b[ok])), float(rms(a[ok] - bt[ok]))
        if given <= rounding_bound(pair.u, pair.depth) * pair.b_rms or swapped * CLOSER > given:
            continue
        perm = list(range(len(pair.shape)))
        perm[i], perm[j] = j, i
        message = (
            f"A is B with axes {i} and {j} ({n} each) swapped: transposed, A matches B to {swapped / given:.2g} "
            "of the distance in the given order"
        )
        where = place(f"axes {i} and {j} swapped", axis=i, axis_size=n, indices=[i, j], permutation=perm)
        out.append(Finding("transposed", "error", message, where, list(why.TRANSPOSED)))
    return out
