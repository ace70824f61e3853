"""Where one side's values sit inside the other's, for shapes that cannot be aligned: the
smaller side a contiguous run of the larger along one axis (``A = B[:, 1:]``, a first
token dropped) or one index of an axis the smaller lacks (``B = A[:, -1]``, the last
position's logits).  Scored on a fixed sample of the smaller side's elements, as align
scores axis orders, so what it costs is bounded by the sample and the axis's length.
"""

from __future__ import annotations

import numpy as np

from ..numerics import bits
from ..numerics.bits import Format
from ..numerics.scramble import Stream
from ..numerics.tolerance import Tolerance, within

SAMPLE = 2048
SEED = 0
AGREE = 0.99  # share of sampled elements that must agree for one side to be a slice of the other
MAX_PLACES = 4096  # offsets or indices tried along the axis


def _agree(small: np.ndarray, large: np.ndarray, fmt: Format, tol: Tolerance) -> float:
    same = bits.raw_bits(small, fmt) == bits.raw_bits(large, fmt)
    fs, fl = bits.to_float64(small, fmt), bits.to_float64(large, fmt)
    with np.errstate(invalid="ignore"):
        close = within(np.abs(fs - fl), np.abs(fl), tol)
    return float(np.mean(same | close)) if small.size else 0.0


def inside(a: np.ndarray, b: np.ndarray, fmt: Format, tol: Tolerance) -> dict[str, object] | None:
    """``{"side", "axis", "start", "stop"}`` (a run) or ``{"side", "axis", "index"}`` (one
    index) locating the smaller side in the larger, with ``agree`` the sampled share; or
    None when no single axis does it."""
    for side, small, large in (("A", a, b), ("B", b, a)):
        if small.size == 0 or small.size >= large.size:
            continue
        pos = Stream(SEED).distinct(small.size, SAMPLE)
        idx = np.unravel_index(pos, small.shape)
        vs = small[idx]
        if small.ndim == large.ndim:
            differ = [ax for ax in range(small.ndim) if small.shape[ax] != large.shape[ax]]
            if len(differ) != 1 or small.shape[differ[0]] > large.shape[differ[0]]:
                continue
            ax = differ[0]
            m, n = small.shape[ax], large.shape[ax]
            for start in _order(n - m + 1):
                moved = list(idx)
                moved[ax] = idx[ax] + start
                share = _agree(vs, large[tuple(moved)], fmt, tol)
                if share >= AGREE:
                    return {"side": side, "axis": ax, "start": start, "stop": start + m, "agree": share}
        elif small.ndim + 1 == large.ndim:
            for ax in range(large.ndim):
                if large.shape[:ax] + large.shape[ax + 1:] != small.shape:
                    continue
                for index in _order(large.shape[ax]):
                    full = (*idx[:ax], np.full(pos.size, index), *idx[ax:])
                    share = _agree(vs, large[full], fmt, tol)
                    if share >= AGREE:
                        return {"side": side, "axis": ax, "index": index, "agree": share}
    return None


def _order(n: int) -> list[int]:
    """Places along an axis, the ends first (a first or last entry dropped, the last
    position taken), then the rest in order, at most :data:`MAX_PLACES`."""
    ends = [0, n - 1] if n > 1 else [0]
    return (ends + [i for i in range(1, n - 1)])[:MAX_PLACES]
