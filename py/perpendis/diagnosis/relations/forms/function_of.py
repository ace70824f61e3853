"""The most general elementwise relation: A = φ(B) for one smooth function φ, the same at
every position, where no scale, offset, log, clip or named activation holds.

A is a function of B when the A values of elements close in B are close: each element's A
is predicted by linear interpolation between its two neighbours in B's order (leaving it
out), and the prediction is held to the pair's tolerance.  Values unrelated to B, or B
plus a perturbation that differs from element to element, fail that test; an activation
swapped for another (ELU against SELU, a Swish β) passes it where the curve is single
valued.  Only asked when most elements differ, so that two sides agreeing to rounding are
never called a function of each other.
"""

from __future__ import annotations

import numpy as np

from . import implies
from .form import Form
from .view import HOLDS, View

MIN_ELEMENTS = 64
MOSTLY_DIFFERENT = 0.5  # the identity may hold on at most this share


def _predicted(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """y at each interior x from its two neighbours in x's order (x sorted)."""
    x0, x1, x2 = x[:-2], x[1:-1], x[2:]
    y0, y2 = y[:-2], y[2:]
    span = x2 - x0
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(span > 0, (x1 - x0) / span, 0.5)
    return y0 + w * (y2 - y0)


def find(view: View) -> Form | None:
    if not view.whole or view.identity_share > MOSTLY_DIFFERENT:
        return None
    a, b = view.a.ravel(), view.b.ravel()
    finite = np.isfinite(a) & np.isfinite(b)
    if np.count_nonzero(finite) < MIN_ELEMENTS:
        return None
    order = view.orders[1]
    order = order[finite[order]]  # B's ascending order, over the pairs finite on both sides
    x, y = b[order], a[order]
    if np.unique(x).size < MIN_ELEMENTS:
        return None
    ok = view.close(y[1:-1], _predicted(x, y))
    share = float(np.mean(ok))
    if share < HOLDS:
        return None
    steps = np.sign(np.diff(y))
    rising, falling = bool(np.all(steps >= 0)), bool(np.all(steps <= 0))
    shape = "increasing" if rising else "decreasing" if falling else "not monotonic"
    params = {"map": "function", "monotonic": rising or falling}
    text = (f"A = φ(B) for one smooth function φ, the same at every position ({shape}; no scale, offset, log, "
            "clip or named activation fits it): the difference is elementwise in B")
    return Form("elementwise_map", text, params, share, int(ok.size), None, implies.causes("elementwise_map", params))
