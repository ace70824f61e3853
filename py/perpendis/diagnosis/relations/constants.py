"""The constants ML code multiplies, adds and divides by, so a fitted constant can be named.

A fitted scale of 0.12500003 is "1/8"; 0.70710677 is "1/√2"; 0.0039215689 is "1/255". A
name is given only when the fit pins the constant closer than the gap to any other
candidate (``rel`` the fit's relative uncertainty), so a value between two constants is
left as a number rather than named wrong.  A box's per-coordinate scales that are whole
image sizes are named as such (:func:`image_sizes`).
"""

from __future__ import annotations

import math

import numpy as np

# ImageNet's per-channel normalisation constants (torchvision's Normalize defaults).
_IMAGENET = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}
_HEAD_DIMS = (32, 48, 64, 80, 96, 128, 256)


def _table() -> list[tuple[float, str]]:
    """(value, name) of every constant recognised, its reciprocal included where ML uses it."""
    out: list[tuple[float, str]] = [(2.0**k, f"2^{k}") for k in range(-12, 13) if k != 0]
    out += [(math.pi, "π"), (1 / math.pi, "1/π"), (2 * math.pi, "2π"), (math.pi / 2, "π/2")]
    out += [(180 / math.pi, "180/π"), (math.pi / 180, "π/180")]
    out += [(math.e, "e"), (1 / math.e, "1/e"), (math.log(2), "ln 2"), (1 / math.log(2), "1/ln 2")]
    out += [(math.log(10), "ln 10"), (1 / math.log(10), "1/ln 10"), (math.log10(2), "log10 2")]
    out += [(math.sqrt(2 / math.pi), "√(2/π)"), (1.702, "1.702 (QuickGELU)")]
    for d in (2, 3, 5, 6, 7, 8, 10, *_HEAD_DIMS):
        out += [(math.sqrt(d), f"√{d}"), (1 / math.sqrt(d), f"1/√{d}")]
    for n in (3, 10, 127, 128, 255, 256, 1000):
        out += [(float(n), str(n)), (1.0 / n, f"1/{n}")]
    for k, vals in _IMAGENET.items():
        for ch, v in enumerate(vals):
            out += [(v, f"ImageNet {k}[{ch}] {v}"), (1 / v, f"1/ImageNet {k}[{ch}]")]
    merged: list[tuple[float, str]] = []
    for value, name in sorted(out):  # one entry per value: 2^-3 is also 1/√64
        if merged and abs(value / merged[-1][0] - 1) < 1e-12:
            merged[-1] = (merged[-1][0], f"{merged[-1][1]} = {name}")
        else:
            merged.append((value, name))
    return merged


TABLE = _table()


def name_of(x: float, rel: float = 1e-5) -> str | None:
    """The name of the known constant ``|x|`` is (sign kept: "-1/√2"), or None.

    ``rel`` is how closely the value is known; the match must also be the only candidate
    within ten times that, so an ambiguous value is not named."""
    if not math.isfinite(x) or x == 0:
        return None
    v = abs(x)
    close = [(abs(v / c - 1), name) for c, name in TABLE if abs(v / c - 1) <= 10 * rel]
    if not close:
        return None
    close.sort()
    best_err, best = close[0]
    if best_err > rel or (len(close) > 1 and close[1][0] <= 10 * best_err + rel):
        return None
    return ("-" if x < 0 else "") + best


def image_sizes(shape: tuple[int, ...], axis: int, s: np.ndarray) -> list[int] | None:
    """The image sizes a box's or point's per-coordinate scales are (s or 1/s an integer of
    at least 16 in every column of a last axis of 2 or 4), distinct and in order, or None."""
    if axis != len(shape) - 1 or shape[axis] not in (2, 4) or s.size != shape[axis]:
        return None
    sizes = []
    for v in np.abs(s):
        k = v if v >= 1 else 1 / v if v > 0 else 0
        if k < 16 or abs(k - round(k)) > 1e-4 * k:
            return None
        sizes.append(round(k))
    return list(dict.fromkeys(sizes))
