"""Bias and dependence: rounding errors are symmetric around zero and depend neither on the
value nor on the position; a significant departure is a finding with its statistic.

These describe a difference and state no map A = T(B), so they are not members of the
relation grammar (:mod:`.relations.grammar`): the structure step (:mod:`.structure`) asks
them only when no member holds, and, having no relation to imply one, they name no cause.
They sit here, beside the other plain descriptions of a difference (:mod:`.pattern`,
:mod:`.failing_region`), reading the grammar's sampled view (:class:`.relations.pair.Pair`)
and its rounding model.

* Sign bias: the sign test's ``z`` over the differing sample.
* Dependence on B: the relative difference's mean in 16 bins of B's value, as a
  chi-square ``z`` (:func:`binned_z`), which catches a
  dependence of any shape.
* Dependence on position: the same, in bins of the index along each axis (flat sample, in
  memory only).

Each needs ``z >`` :data:`~.relations.rounding_model.Z` and an effect beyond one rounding
at depth (:func:`~.relations.rounding_model.rounding_bound`): the median relative
difference for the sign test (a median, so a few wrong elements do not lend their size to
rounding elsewhere), the RMS of the bin means for the dependences, so a biased rounding of
a last bit, real but harmless, is not named.
"""

from __future__ import annotations

import math

import numpy as np

from ..report.model import Finding, place
from .relations.pair import Pair
from .relations.rounding_model import MIN_FIT, Z, rounding_bound, sign_z

# Said where a structure is found but no relation of the grammar fits it: a wrong cause
# sends the user the wrong way, so none is named.
NO_CAUSE = "no known cause fits this structure"

# The kinds of finding these descriptions make.
KINDS = ("sign_bias", "value_dependence", "position_dependence")

# An error that shrinks at nearly every step toward the end of a (batch, position,
# feature) tensor's positions is said as such: the earliest positions changed most.  It
# names no cause: a dropped causal mask leaves it, but so, on the mutation corpus, does a
# weight changed in an attention output projection of a causal model and of an encoder
# (the later positions average more values), so it does not imply one.
SHRINKS = -0.85
MIN_POSITIONS = 6  # positions a trend is read over
CORRELATION_CAP = 4096  # a dependence test reads at most 4 times this many pairs
BINS = 16  # bins of the value or the index a dependence is measured over


def binned_z(key: np.ndarray, values: np.ndarray, bins: int = BINS) -> tuple[float, float]:
    """Does the mean of ``values`` depend on ``key``?  Sorted by key and cut into ``bins``
    bins of equal count: the between-bin chi-square of the bin means against the
    within-bin variance, as ``z = (chi2 - df) / sqrt(2 df)`` (~N(0, 1) when the mean does
    not depend on the key), and the RMS of the bin means' departure from the grand mean
    (the effect's size).  Catches a smooth dependence of any shape, not only a monotone one."""
    n = values.size
    if n < bins * MIN_FIT:
        return 0.0, 0.0
    if n > CORRELATION_CAP * 4:
        step = -(-n // (CORRELATION_CAP * 4))
        key, values = key[::step], values[::step]
        n = values.size
    ordered = values[np.argsort(key, kind="stable")]
    groups = np.array_split(ordered, bins)
    means = np.array([g.mean() for g in groups])
    counts = np.array([g.size for g in groups])
    within = sum(float(np.sum((g - m) ** 2)) for g, m in zip(groups, means, strict=True)) / max(n - bins, 1)
    if within <= 0:
        return 0.0, 0.0
    grand = float(values.mean())
    chi2 = float(np.sum(counts * (means - grand) ** 2) / within)
    df = bins - 1
    return (chi2 - df) / math.sqrt(2 * df), float(np.sqrt(np.mean((means - grand) ** 2)))


def find(pair: Pair, u_position: float | None = None, u_value: float | None = None) -> list[Finding]:
    """``u_position``: the unit roundoff the position test is judged at, when one side was
    computed narrower.  Rounded weights leave each output column its own fixed error at
    that level, a real dependence on position that is still rounding.  ``u_value``: that of
    a format one side is proven computed in (every value exact there): a whole model run
    in bfloat16 leaves a dependence on the value below one of its roundings (a LayerNorm's
    statistics rounded), which is that format's rounding, not a bug.  The sign test is
    judged at the compared format's.  Integers and coarse prints have no rounding model
    to judge by: nothing is described there."""
    if pair.printed or not pair.fmt.is_float:
        return []
    bound = rounding_bound(pair.u, pair.depth)
    a, b = pair.differing()
    if a.size < 4 * MIN_FIT:
        return []
    d = a - b
    rel = d / pair.scale_of(b)
    z = sign_z(d)
    mean = float(np.median(rel))  # robust: a few wrong elements must not lend their size to the rest
    if abs(z) > Z and abs(mean) > bound:
        side = "above" if z > 0 else "below"
        message = (
            f"A − B leans one way: A is {side} B at {np.mean(d > 0 if z > 0 else d < 0):.0%} of differing elements "
            f"(sign test z = {z:.1f}), median relative difference {mean:.3g}"
        )
        return [Finding("sign_bias", "error", f"{message}; {NO_CAUSE}", place(None, z=z, mean=mean))]
    # Position first: a dependence on where an element is names an axis, and an error that
    # grows along it (a rotary base) also shows as a dependence on the value.
    found = _position(pair, max(pair.u, u_position or 0.0))
    if found:
        return found
    z, effect = binned_z(b, rel)
    if z > Z and effect > rounding_bound(max(pair.u, u_value or 0.0), pair.depth):
        message = (
            f"A − B depends on B's value: the mean relative difference moves by {effect:.3g} (RMS over "
            f"{BINS} bins of B's value; chi-square z = {z:.1f}), where rounding's stays at zero; {NO_CAUSE}"
        )
        where = place(None, z=z, effect=effect)
        evidence = _curve(b, rel)
        return [Finding("value_dependence", "error", message, where, [], evidence)]
    return []


def _curve(key: np.ndarray, rel: np.ndarray) -> dict:
    """Bin centres and mean relative differences, for a picture of the dependence."""
    order = np.argsort(key, kind="stable")
    groups = np.array_split(order, BINS)
    return {
        "picture": "curve",
        "x": [float(np.median(key[g])) for g in groups],
        "y": [float(np.mean(rel[g])) for g in groups],
    }


def _position(pair: Pair, u: float) -> list[Finding]:
    """The axis along which the difference depends most on the position: its signed mean
    (past one rounding of ``u`` at depth), or its size (past the bound of a reduction over the longest axis,
    since rounding's size may grow along an axis that sums more terms, but not by that)."""
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
    bound = rounding_bound(u, pair.depth)
    size_bound = rounding_bound(u, pair.depth, max(pair.shape))
    shrinking = _shrinking(pair.shape, index, np.abs(rel), size_bound)
    if shrinking is not None:
        return [shrinking]
    best: tuple[float, int, float, str] | None = None
    for axis, n in enumerate(pair.shape):
        if n < MIN_FIT:
            continue
        key = index[axis].astype(np.float64)
        for what, values, limit in (("mean", rel, bound), ("size", np.abs(rel), size_bound)):
            z, effect = binned_z(key, values)
            if z > Z and effect > limit and (best is None or z > best[0]):
                best = (z, axis, effect, what)
    if best is None:
        return []
    z, axis, effect, what = best
    n = pair.shape[axis]
    measure = "mean relative difference" if what == "mean" else "size of the relative difference"
    # Where the error lives, said without a cause: on the mutation corpus a dependence on
    # the index came from every kind of bug; a rotary embedding that differs is named by
    # the rotation relation (perpendis.diagnosis.relations.rotation), which holds only for
    # it.  An error shrinking steadily toward the last position is said so (_shrinking).
    message = (
        f"A − B depends on the index along axis {axis} ({n} entries): the {measure} moves by {effect:.3g} "
        f"across it (chi-square z = {z:.1f}); rounding has no preferred position; {NO_CAUSE}"
    )
    where = place(f"along axis {axis}", axis=axis, axis_size=n, z=z, effect=effect)
    return [Finding("position_dependence", "error", message, where, [])]


def _shrinking(shape: tuple[int, ...], index: tuple[np.ndarray, ...], size: np.ndarray,
               limit: float) -> Finding | None:
    """The finding for an error whose size shrinks at nearly every step toward the last
    position of a (batch, position, feature) tensor (:data:`SHRINKS`), or None."""
    if len(shape) != 3 or shape[1] < MIN_POSITIONS:
        return None
    key = index[1].astype(np.float64)
    z, effect = binned_z(key, size)
    trend = _trend(key, size, min(BINS, shape[1]))
    if not (z > Z and effect > limit and trend <= SHRINKS):
        return None
    message = (
        f"A − B depends on the position along axis 1 ({shape[1]} entries): the size of the relative difference "
        f"moves by {effect:.3g} across it (chi-square z = {z:.1f}) and shrinks steadily toward the last position "
        f"(Spearman ρ = {trend:.2f}): the earliest positions changed most; rounding has no preferred position; "
        f"{NO_CAUSE}"
    )
    where = place("along axis 1", axis=1, axis_size=shape[1], z=z, effect=effect, trend=trend)
    return Finding("position_dependence", "error", message, where, [])


def _trend(key: np.ndarray, size: np.ndarray, bins: int) -> float:
    """Spearman's rank correlation of the mean size in ``bins`` bins of the index with
    the bins' order: -1 when the error shrinks at every step toward the axis's end."""
    order = np.argsort(key, kind="stable")
    means = np.array([size[g].mean() for g in np.array_split(order, bins) if g.size])
    if means.size < 3:
        return 0.0
    ranks = np.argsort(np.argsort(means, kind="stable"), kind="stable").astype(np.float64)
    return float(np.corrcoef(np.arange(means.size), ranks)[0, 1])

