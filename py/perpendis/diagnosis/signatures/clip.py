"""Clipping: one side holds a bound exactly where the other exceeds it.

For each side X, against the other Y, and each direction: the bound is X's extreme value.
Clipped when at least :data:`MIN_AT` elements sit exactly at the bound on X (and as many
elsewhere, so a constant is never a clip) while Y lies
beyond it by more than rounding (:func:`~.model.rounding_bound` of the bound), when nine
in ten of Y's elements beyond the bound are held at it by X, and when the clip explains
the difference: the elements not clipped leave at most :data:`~.model.EXPLAINED` of the
raw RMS difference.  Works on the flat sample, or on the differing sample when streamed.
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .model import EXPLAINED, rms, rounding_bound
from .sample import Pair

MIN_AT = 8
HELD_SHARE = 0.9


def _one(x: np.ndarray, y: np.ndarray, upper: bool, pair: Pair) -> tuple[float, int, float] | None:
    bound = float(x.max() if upper else x.min())
    tol = rounding_bound(pair.u, pair.depth) * max(abs(bound), pair.b_rms)
    beyond = y > bound + tol if upper else y < bound - tol
    at = x == bound
    held = at & beyond
    if held.sum() < MIN_AT or held.sum() < HELD_SHARE * beyond.sum() or (~at).sum() < MIN_AT:
        return None
    raw = float(rms(x - y))
    rest = float(rms(np.where(held, 0.0, x - y)))
    if raw == 0 or rest > EXPLAINED * raw:
        return None
    return bound, int(held.sum()), float(np.max(np.abs(y[held])))


def find(pair: Pair) -> list[Finding]:
    a, b = pair.values()
    if a.size < MIN_AT:
        return []
    for side, x, y, other in (("A", a, b, "B"), ("B", b, a, "A")):
        for upper in (True, False):
            got = _one(x, y, upper, pair)
            if got is None:
                continue
            bound, count, reach = got
            word = "above" if upper else "below"
            message = (
                f"{side} is clipped at {bound:.6g}: {count} sampled elements hold {bound:.6g} exactly where {other} "
                f"goes {word} it (to {reach:.6g})"
            )
            where = place(f"{side} clipped {'at most' if upper else 'at least'} {bound:.6g}", bound=bound, count=count)
            edges = np.histogram_bin_edges(x, bins=24)
            counts, _ = np.histogram(x, bins=edges)
            evidence = {
                "picture": "histogram",
                "side": side,
                "edges": edges.tolist(),
                "counts": counts.tolist(),
                "mark": bound,
            }
            return [Finding("clipped", "error", message, where, why.for_clip(bound), evidence)]
    return []
