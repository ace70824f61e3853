"""Whether a per-slice offset is a centring: one side is the other with each slice's mean
subtracted, which no bias explains (the offsets are the slices' own means)."""

from __future__ import annotations

import numpy as np

from ...numerics import bits
from .pair import Pair
from .rounding_model import holds

# The largest pair whose slice means are taken over the whole arrays (8 MB of float64 per side).
CENTRE_CAP = 1 << 20


def subtracted_mean(pair: Pair, axis: int) -> str | None:
    """Which side is the other with each slice's mean subtracted (``A = B − mean(B)`` over
    every index but ``axis``), checked on the whole arrays; None when neither is, when no
    tolerance is known, or when the arrays are not in memory (or too large to read whole here)."""
    if pair.tolerance is None or not pair.in_memory or pair.n_elements > CENTRE_CAP:
        return None
    a = bits.to_float64(np.asarray(pair.a_store), pair.fmt)
    b = bits.to_float64(np.asarray(pair.b_store), pair.fmt)
    rest = tuple(k for k in range(a.ndim) if k != axis)
    for side, x, y in (("A", a, b), ("B", b, a)):
        mapped = y - np.mean(y, axis=rest, keepdims=True)
        ok = np.isfinite(x) & np.isfinite(mapped)
        if ok.any() and holds(x[ok], mapped[ok], pair.tolerance):
            return side
    return None
