"""A coarse grid: one side's values are whole multiples of a step far coarser than its format.

The step is the approximate greatest common divisor of the gaps between the side's
sorted distinct values (per slice along the last axis, which absorbs a per-column offset
such as a bias added after an int8 matmul).  A grid is named when every gap is within
:data:`FIT` of a multiple of the step, the step is at least :data:`COARSE` times the
format's own spacing at the largest value (every float is on the grid of its own ULP), at
least :data:`MIN_VALUES` distinct values were seen, and the other side is not on it.
"""

from __future__ import annotations

import numpy as np

from ..report import Finding, place
from . import causes as why
from .model import MIN_FIT
from .sample import Pair

COARSE = 64.0
FIT = 0.02
MIN_VALUES = 8
GRID_SHARE = 0.99


def step_of(values: np.ndarray, resolution: float) -> float | None:
    """The approximate GCD of the gaps between distinct values, or None when it falls to
    the format's own resolution (no grid)."""
    gaps = np.diff(np.unique(values))
    gaps = gaps[gaps > resolution]
    if gaps.size < MIN_VALUES - 1:
        return None
    g = float(gaps.min())
    for _ in range(16):
        rem = np.mod(gaps, g)
        near = np.minimum(rem, g - rem)
        bad = near > FIT * g
        if not bad.any():
            return g
        # Euclid: gcd(g, gap) = gcd(g, gap mod g); the smallest misfit is the finer step.
        g = float(near[bad].min())
        if g <= resolution:
            return None
    return None


def _on_grid(values: np.ndarray, step: float) -> float:
    gaps = np.diff(np.unique(values))
    r = gaps / step
    return float(np.mean(np.abs(r - np.round(r)) <= FIT)) if gaps.size else 0.0


def _rows(pair: Pair) -> list[tuple[np.ndarray, np.ndarray]]:
    """Value groups to test: slices along the last axis when in memory, else the sample."""
    if pair.in_memory and len(pair.shape) >= 2:
        got = pair.slices(len(pair.shape) - 1)
        if got is not None:
            _, a, b = got
            return [(a[i], b[i]) for i in range(min(len(a), 16))]
    a, b = pair.values()
    return [(a, b)]


def find(pair: Pair) -> list[Finding]:
    rows = _rows(pair)
    for side in ("A", "B"):
        steps = []
        for a, b in rows:
            x, y = (a, b) if side == "A" else (b, a)
            ok = np.isfinite(x) & np.isfinite(y)
            x, y = x[ok], y[ok]
            if x.size < MIN_FIT:
                continue
            resolution = COARSE * pair.u * float(np.max(np.abs(x), initial=0.0))
            step = step_of(x, resolution)
            if step is None or _on_grid(y, step) >= GRID_SHARE:
                steps = []
                break
            steps.append((step, x))
        if len(steps) < max(1, len(rows) // 2):
            continue
        step = float(np.median([s for s, _ in steps]))
        values = np.concatenate([x for _, x in steps])
        distinct = len(np.unique(values))
        message = (
            f"{side}'s values lie on a coarse grid of step {step:.4g} ({distinct} distinct values in the sample), "
            "the other side's do not: one side was quantised"
        )
        where = place(f"{side} on a grid of step {step:.4g}", step=step, distinct=distinct)
        edges = np.histogram_bin_edges(values, bins=24)
        counts, _ = np.histogram(values, bins=edges)
        evidence = {"picture": "histogram", "side": side, "edges": edges.tolist(), "counts": counts.tolist()}
        return [Finding("grid", "error", message, where, list(why.GRID), evidence)]
    return []
