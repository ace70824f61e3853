"""Clipping: one side holds a bound exactly where the other exceeds it.

For each side X, against the other Y, and each direction: the bound is X's extreme value.
Clipped when at least :data:`MIN_AT` elements sit exactly at the bound on X (and as many
elsewhere, so a constant is never a clip) while Y lies
beyond it by more than rounding (:func:`~.rounding_model.rounding_bound` of the bound), when nine
in ten of Y's elements beyond the bound are held at it by X, and when the clip explains
the difference: the elements not clipped leave at most :data:`~.rounding_model.EXPLAINED` of the
raw RMS difference.  Works on the flat sample, or on the differing sample when streamed.
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair
from .rounding_model import EXPLAINED, rms, rounding_bound

MIN_AT = 8
HELD_SHARE = 0.9
MIN_EACH = 2  # held elements at each bound of a clip on both sides (one extreme is always attained once)


def _at_bound(x: np.ndarray, y: np.ndarray, upper: bool, pair: Pair) -> tuple[float, np.ndarray, np.ndarray] | None:
    """X's extreme ``bound`` in one direction, where X holds it (``at``) and where it holds it
    while Y lies beyond it by more than rounding (``held``); None unless nine in ten of Y's
    elements beyond it are held."""
    bound = float(x.max() if upper else x.min())
    tol = rounding_bound(pair.u, pair.depth) * max(abs(bound), pair.b_rms)
    beyond = y > bound + tol if upper else y < bound - tol
    at = x == bound
    held = at & beyond
    if held.sum() < MIN_EACH or held.sum() < HELD_SHARE * beyond.sum():
        return None
    return bound, at, held


def _clip(x: np.ndarray, y: np.ndarray, pair: Pair) -> tuple[dict[str, float], int, float] | None:
    """The clip of X against Y: both bounds when both hold (a hardtanh, a clamp to [-1, 1]),
    else the one that does; ({"upper"/"lower": bound}, held count, Y's furthest held value).

    The clip must explain the difference: the elements it does not hold leave at most
    EXPLAINED of the raw RMS (a clip on both sides judged one side at a time never does)."""
    found = {key: _at_bound(x, y, key == "upper", pair) for key in ("upper", "lower")}
    sides = [(key, *got) for key, got in found.items() if got is not None]
    raw = float(rms(x - y))
    for chosen in ([sides] if len(sides) == 2 else []) + [[one] for one in sides]:
        at = np.logical_or.reduce([c[2] for c in chosen])
        held = np.logical_or.reduce([c[3] for c in chosen])
        if held.sum() < MIN_AT or (~at).sum() < MIN_AT or raw == 0:
            continue
        if float(rms(np.where(held, 0.0, x - y))) <= EXPLAINED * raw:
            return {c[0]: c[1] for c in chosen}, int(held.sum()), float(np.max(np.abs(y[held])))
    return None


def find(pair: Pair) -> list[Finding]:
    a, b = pair.values()
    if a.size < MIN_AT:
        return []
    for side, x, y, other in (("A", a, b, "B"), ("B", b, a, "A")):
        got = _clip(x, y, pair)
        if got is None:
            continue
        bounds, count, reach = got
        bound = bounds.get("upper", bounds.get("lower", 0.0))
        if len(bounds) == 2:
            text, word = f"{side} clipped to [{bounds['lower']:.6g}, {bounds['upper']:.6g}]", "beyond them"
        else:
            text = f"{side} clipped {'at most' if 'upper' in bounds else 'at least'} {bound:.6g}"
            word = f"{'above' if 'upper' in bounds else 'below'} it"
        message = f"{text}: {count} sampled elements hold a bound exactly where {other} goes {word} (to {reach:.6g})"
        amount = {"bound": bound, "count": count} | ({"lower": bounds["lower"]} if len(bounds) == 2 else {})
        edges = np.histogram_bin_edges(x, bins=24)
        counts, _ = np.histogram(x, bins=edges)
        evidence = {"picture": "histogram", "side": side, "edges": edges.tolist(), "counts": counts.tolist(),
                    "mark": bound}
        return [Finding("clipped", "error", message, place(text, **amount), why.for_clip(bound), evidence)]
    return []
