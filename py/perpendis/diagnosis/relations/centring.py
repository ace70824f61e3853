"""Whether a per-slice offset is a slice's own statistic subtracted: one side is the other
with each slice's mean subtracted (a centring), or its maximum (a softmax's stabilising
shift), which no bias explains (the offsets are the slices' own statistics)."""

from __future__ import annotations

import numpy as np

from ...numerics import bits
from .pair import Pair
from .rounding_model import holds

# The largest pair whose slice means are taken over the whole arrays (8 MB of float64 per side).
CENTRE_CAP = 1 << 20


STATISTICS = {"mean": np.mean, "max": np.max}


def subtracted_statistic(pair: Pair, axis: int) -> tuple[str, str] | None:
    """(side, statistic) when that side is the other with each slice's statistic subtracted
    (``A = B − mean(B)`` or ``A = B − max(B)`` over every index but ``axis``), checked on the
    whole arrays; None when neither is, when no tolerance is known, or when the arrays are
    not in memory (or too large to read whole here)."""
    if pair.tolerance is None or not pair.in_memory or pair.n_elements > CENTRE_CAP:
        return None
    a = bits.to_float64(np.asarray(pair.a_store), pair.fmt)
    b = bits.to_float64(np.asarray(pair.b_store), pair.fmt)
    rest = tuple(k for k in range(a.ndim) if k != axis)
    for name, statistic in STATISTICS.items():
        for side, x, y in (("A", a, b), ("B", b, a)):
            mapped = y - statistic(y, axis=rest, keepdims=True)
            ok = np.isfinite(x) & np.isfinite(mapped)
            if ok.any() and holds(x[ok], mapped[ok], pair.tolerance):
                return side, name
    return None
