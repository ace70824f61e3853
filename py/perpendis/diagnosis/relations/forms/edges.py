"""The edges of float formats that a threshold can pin: the smallest normal value (where
flush-to-zero starts, and its logarithm), and the overflow edge (where rounding gives ±inf).
A threshold fitted between two sets of values names an edge only when it lies between them
and they pin it closely, so a wide gap (a ReLU's) names none."""

from __future__ import annotations

import math

import numpy as np

# Smallest normal value per float format: the edge of flush-to-zero.
_TINY = {"float32": float(np.finfo(np.float32).tiny), "float16": float(np.finfo(np.float16).tiny)}
# Where a float format's rounding overflows to infinity: half an ULP past its largest finite value.
_OVERFLOW = {f: float(np.finfo(t).max) * (1 + 2.0 ** -(np.finfo(t).nmant + 2)) for f, t in
             (("float16", np.float16), ("float32", np.float32))} | {"bfloat16": 3.3961e38}

PIN = 16.0


def overflow_name(below: float, above: float) -> str | None:
    """The format whose overflow edge lies between the largest |B| kept finite and the
    smallest |B| made infinite, within a factor of 2 of each (pinned, not merely spanned)."""
    for fmt, edge in _OVERFLOW.items():
        if below < edge <= above and below >= edge / 2 and above <= edge * 2:
            return fmt
    return None


def threshold_name(below: float, above: float) -> str | None:
    """The name of a known edge lying between ``below`` and ``above``: a format's smallest
    normal value, or its logarithm (a flush seen through a log)."""
    for fmt, tiny in _TINY.items():
        # The separating interval must pin the edge: within a factor of PIN of it (of e, for
        # its logarithm); a wide one (a ReLU's, from the largest negative to the smallest
        # positive value of B) holds any tiny number and names none.
        if below < tiny <= above and below >= tiny / PIN and above <= tiny * PIN:
            return f"{fmt}'s smallest normal {tiny:.6g}"
        if below < math.log(tiny) <= above and above - below <= 1.0:
            return f"ln({fmt}'s smallest normal) = {math.log(tiny):.6g}"
    if below < 0.0 <= above:
        return "0"
    return None
