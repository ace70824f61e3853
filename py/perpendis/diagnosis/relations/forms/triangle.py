"""A structure of one side the other lacks: a mask value (0 after a softmax, −inf or a
large negative before it) exactly on the upper triangle ``j > i + k`` of the last two
axes, the same in every slice, where the other side holds values.  That is what a causal
mask leaves, and nothing else does: rounding never makes a triangle of exact zeros."""

from __future__ import annotations

import numpy as np

from . import implies
from .form import Form
from .view import View

MIN_SIDE = 4  # rows and columns of the last two axes
OTHER_SHARE = 0.01  # share of the triangle the other side may hold the mask value on


def causal(view: View) -> Form | None:
    """One side masked on the upper triangle of its last two axes, the other not."""
    if not view.whole or view.a.ndim < 2 or min(view.shape[-2:]) < MIN_SIDE:
        return None
    rows, cols = view.shape[-2:]
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    for side, x, other in (("A", view.a, view.b), ("B", view.b, view.a)):
        v = float(x[(0,) * (x.ndim - 2) + (0, cols - 1)])  # the corner every upper triangle holds
        if not (v == 0 or implies.is_mask_fill(v)):
            continue
        slices = (x == v).reshape(-1, rows, cols)
        pattern = slices[0]
        if not np.all(slices == pattern) or not pattern.any():
            continue
        k = int(cols - 1 - np.count_nonzero(pattern[0]))  # row 0 keeps columns 0 … k
        triangle = j > i + k
        held_by_other = np.mean((other == v).reshape(-1, rows, cols)[:, triangle])
        if not np.array_equal(pattern, triangle) or held_by_other > OTHER_SHARE or triangle.all():
            continue
        shift = f" + {k}" if k > 0 else f" − {-k}" if k < 0 else ""
        other_name = "B" if side == "A" else "A"
        text = (f"{side} = {v:g} exactly on the upper triangle j > i{shift} of its last two axes, in every one of "
                f"its {slices.shape[0]} slices ({int(np.count_nonzero(triangle)) * slices.shape[0]} elements), "
                f"where {other_name} holds values: a causal mask on {side}'s side only")
        params = {"side": side, "value": v, "offset": k}
        return Form("causal_mask", text, params, 1.0, int(view.a.size), None, implies.causes("causal_mask", params))
    return None
