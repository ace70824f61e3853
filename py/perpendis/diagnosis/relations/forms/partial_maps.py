"""Forms where A = B except on some elements, which the exception itself explains: one
constant written there (a fill), or ties rounded the other way (off-by-ones where one side
is always even).  The fill is tried after the row maps (a top-k filter is a fill the rows'
order pins), the zero fill after every other family."""

from __future__ import annotations

import numpy as np

from . import implies
from .form import Form, stated
from .view import View

MIN_FILLED = 4  # elements, and distinct values of B under them, a fill must cover
MIN_TIES = 8  # off-by-ones, all even on one side, that show a rounding of ties


def fill(view: View) -> Form | None:
    """A = B except that A holds one non-zero constant on every element where they differ,
    whatever B is there: a masked fill."""
    return _filled(view, zero=False)


def zero_fill(view: View) -> Form | None:
    """The fill of zeros, tried after every other family: zeros imply no mask of their own
    (a padding row, pruned channels, groups masked out), which the per-group map, the
    per-slice fit and the region say with their axis and causes."""
    return _filled(view, zero=True)


def _filled(view: View, zero: bool) -> Form | None:
    diff = view.differing & ~np.isnan(view.b)
    if np.count_nonzero(diff) < MIN_FILLED:
        return None
    v = view.a[diff][0]
    if (v == 0) != zero or np.isnan(v) or not np.all(view.a[diff] == v) or len(np.unique(view.b[diff])) < MIN_FILLED:
        return None
    params = {"value": float(v), "mask_fill": implies.is_mask_fill(float(v))}
    text = f"A = B except that A = {v:g} on {int(np.count_nonzero(diff))} elements, whatever B is there: a fill"
    return stated(view, "fill", text, params, np.where(diff, view.a, view.b))


def ties(view: View) -> Form | None:
    """Integers that differ by exactly one, and one side even on every element where they
    do: ties (x.5) rounded to even on that side and another way on the other.  Random
    off-by-ones would leave that side even on about half of them (odds 2^-n for all n)."""
    if not view.integer:
        return None
    diff = view.differing & np.isfinite(view.a) & np.isfinite(view.b)
    n = int(np.count_nonzero(diff))
    if n < MIN_TIES or not np.all(np.abs(view.a[diff] - view.b[diff]) == 1):
        return None
    for side, x in (("A", view.a), ("B", view.b)):
        if np.all(x[diff] % 2 == 0):
            other = "B" if side == "A" else "A"
            text = (f"A and B differ by exactly 1 on {n} elements and {side} is even on every one of them: "
                    f"ties rounded to even on {side}'s side and up or away from zero on {other}'s")
            return stated(view, "ties", text, {"even_side": side, "elements": n}, np.where(diff, view.a, view.b))
    return None
