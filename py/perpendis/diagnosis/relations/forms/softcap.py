"""A soft cap: one side is ``c·tanh(x/c)`` of the other, the logit soft-capping some
models apply (Gemma 2, Grok) and a kernel or export can drop."""

from __future__ import annotations

import numpy as np

from .form import Form, stated
from .view import View

MIN_ELEMENTS = 4


def _cap_through(x: float, y: float) -> float | None:
    """The cap ``c`` with ``c·tanh(x/c) = y`` (0 < y < x), by bisection in log ``c``:
    ``c·tanh(x/c)`` rises with ``c`` from ``y``'s lower limit 0 towards ``x``."""
    if not 0 < y < x:
        return None
    lo, hi = np.log(y), np.log(y) + 40.0
    for _ in range(100):
        mid = (lo + hi) / 2
        c = np.exp(mid)
        lo, hi = (mid, hi) if c * np.tanh(x / c) < y else (lo, mid)
    return float(np.exp((lo + hi) / 2))


def find(view: View) -> Form | None:
    """A = c·tanh(B/c) (or B = c·tanh(A/c)): one side soft-capped at ±c.  The cap is solved
    from the element the cap bends most (the largest raw value) and the map checked on
    every element; stated only when the cap bends it visibly (the largest raw value at
    least c/2), where the identity fails."""
    for capped in ("A", "B"):
        y, x = (view.a, view.b) if capped == "A" else (view.b, view.a)
        finite = np.isfinite(x) & np.isfinite(y)
        if np.count_nonzero(finite) < MIN_ELEMENTS:
            continue
        at = int(np.argmax(np.where(finite, np.abs(x), -1.0)))
        c = _cap_through(abs(float(x.flat[at])), float(np.sign(x.flat[at]) * y.flat[at]))
        if c is None or abs(float(x.flat[at])) < c / 2 or c == 1.0:
            continue  # c = 1 is a plain tanh, which the elementwise relations name
        whole = round(c)
        c = float(whole) if whole and abs(c - whole) <= 1e-3 * c else c
        raw = "B" if capped == "A" else "A"
        text = f"{capped} = {c:.6g}·tanh({raw}/{c:.6g}): {capped} is {raw} soft-capped at ±{c:.6g}"
        params = {"map": "softcap", "cap": c, "capped": capped}
        t = c * np.tanh(x / c)
        got = stated(view, "elementwise_map", text, params, t, lhs=None if capped == "A" else view.b)
        if got is not None:
            return got
    return None
