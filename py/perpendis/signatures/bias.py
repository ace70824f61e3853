"""Bias and dependence: rounding errors are symmetric around zero and depend neither on the
value nor on the position; a significant departure is a finding with its statistic.

* Sign bias: the sign test's ``z`` over the differing sample.
* Dependence on B: Spearman's correlation of A − B with B, as ``z = r·sqrt(n-1)``.
* Dependence on position: the same, of the relative difference with the index along each
  axis (flat sample, in memory only).

Each needs ``|z| >`` :data:`~.model.Z` and an effect beyond one rounding at depth
(:func:`~.model.rounding_bound`): the median relative difference for the sign test, ``|r|``
times the median absolute relative difference for the correlations (medians, so a few
wrong elements do not lend their size to rounding elsewhere), so a biased rounding of a last
bit, real but harmless, is not named.
"""

from __future__ import annotations

import numpy as np

from ..report import Finding, place
from . import causes as why
from .model import MIN_FIT, Z, correlation_z, rounding_bound, sign_z
from .sample import Pair


def find(pair: Pair, u: float | None = None) -> list[Finding]:
    """``u`` overrides the compared format's unit roundoff (a side computed narrower)."""
    u = pair.u if u is None else u
    bound = rounding_bound(u, pair.depth)
    a, b = pair.differing()
    if a.size < 4 * MIN_FIT:
        return []
    d = a - b
    rel = d / pair.scale_of(b)
    z = sign_z(d)
    mean = float(np.median(rel))  # robust: a few wrong elements must not lend their size to the rest
    size = float(np.median(np.abs(rel)))
    if abs(z) > Z and abs(mean) > bound:
        side = "above" if z > 0 else "below"
        message = (
            f"A − B leans one way: A is {side} B at {np.mean(d > 0 if z > 0 else d < 0):.0%} of differing elements "
            f"(sign test z = {z:.1f}), median relative difference {mean:.3g}"
        )
        return [Finding("sign_bias", "error", message, place("every element", z=z, mean=mean), list(why.SIGN_BIAS))]
    r, z = correlation_z(b, d)
    if abs(z) > Z and abs(r) * size > bound:
        message = f"A − B depends on B's value (Spearman r = {r:.2f}, z = {z:.1f}): rounding does not"
        return [
            Finding("value_dependence", "error", message, place("every element", r=r, z=z), list(why.VALUE_DEPENDENCE))
        ]
    return _position(pair, bound)


def _position(pair: Pair, bound: float) -> list[Finding]:
    got = pair.flat
    if got is None:
        return []
    flat, a, b = got
    ok = np.isfinite(a) & np.isfinite(b) & (a != b)
    if ok.sum() < 4 * MIN_FIT:
        return []
    flat, a, b = flat[ok], a[ok], b[ok]
    rel = (a - b) / pair.scale_of(b)
    index = np.unravel_index(flat, pair.shape)
    for axis, n in enumerate(pair.shape):
        if n < MIN_FIT:
            continue
        r, z = correlation_z(index[axis].astype(np.float64), rel)
        if abs(z) > Z and abs(r) * float(np.median(np.abs(rel))) > bound:
            message = (
                f"A − B drifts along axis {axis} ({n} entries): Spearman r = {r:.2f} with the index (z = {z:.1f}); "
                "rounding has no preferred position"
            )
            where = place(f"along axis {axis}", axis=axis, axis_size=n, r=r, z=z)
            return [Finding("position_dependence", "error", message, where, list(why.POSITION_DEPENDENCE))]
    return []
