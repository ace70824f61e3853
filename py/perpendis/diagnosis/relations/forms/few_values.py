"""A pair of a few values (a loss, a metric: fewer than the fitted maps need): A = k·B for
one whole k ≥ 2 or its reciprocal, the ratio itself pinned to 1e-5.  One ratio between two
unrelated numbers lands that close to a whole number below 4096 with odds under 1 in 20,
so the whole ratio, not the fit, is the evidence; a ratio that is not one says nothing."""

from __future__ import annotations

import numpy as np

from . import implies
from .form import Form
from .view import View

MAX_FEW = 8  # elements; larger pairs are the fitted maps' (elementwise_maps.fitted_map)
MAX_FACTOR = 4096
PINNED = 1e-5  # relative distance of the ratio from k (float32 rounding of a sum of thousands)


def ratio(view: View) -> Form | None:
    """A = k·B (or B = k·A) on every one of a few values, k whole."""
    a, b = view.a.ravel(), view.b.ravel()
    if a.size > MAX_FEW or not view.whole or not np.all(np.isfinite(a) & np.isfinite(b)) or not np.all(a * b):
        return None
    with np.errstate(over="ignore", under="ignore"):
        r = a / b
    if np.ptp(r) > PINNED * np.max(np.abs(r)):
        return None
    r0 = float(np.median(r))
    k = round(abs(r0)) if abs(r0) >= 1 else round(1 / abs(r0))
    if not 2 <= k <= MAX_FACTOR:
        return None
    s = float(np.sign(r0) * (k if abs(r0) >= 1 else 1 / k))
    if abs(r0 - s) > PINNED * abs(s) or not np.all(view.close(view.a, s * view.b)):
        return None
    shown = f"{k}" if abs(s) >= 1 else f"1/{k}"
    where = "on its one value" if a.size == 1 else f"on each of its {a.size} values"
    text = f"A = {'−' if s < 0 else ''}{shown}·B {where} (the ratio A/B is {r0:.7g})"
    params = {"scale": s, "lhs": "id", "rhs": "id", "sizes": sorted(set(view.shape)), "integer": view.integer,
              "values": int(a.size)}
    return Form("scale", text, params, 1.0, int(a.size), None, implies.causes("elementwise_map", params))
