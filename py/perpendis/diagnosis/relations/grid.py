"""A coarse grid: one side's values are whole multiples of a step far coarser than its format.

The step is the approximate greatest common divisor (Euclid's algorithm on the remainders)
of the gaps between the side's
sorted distinct values (per slice along the last axis, which absorbs a per-column offset
such as a bias added after an int8 matmul).  A grid is named when every gap is within
:data:`FIT` of a multiple of the step (or within the rounding a gap carries,
``NOISE·u·max|x|``), the step is at least :data:`COARSE` times the
format's own spacing at the largest value (every float is on the grid of its own ULP), at
least :data:`MIN_VALUES` distinct values were seen, and the other side is not on it.  The
step must also exceed, at the largest value, the spacing of the narrowest float holding
every value of the side: a side computed in float16 lies on float16's grid, a precision
matter, not quantisation.
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair
from .precision import NARROW, exact_in
from .rounding_model import MIN_FIT, holds

COARSE = 64.0
NOISE = 8.0
MAX_DIVISOR = 4096
FIT = 0.02
MIN_VALUES = 8
GRID_SHARE = 0.99


def step_of(values: np.ndarray, resolution: float, noise: float = 0.0) -> float | None:
    """The grid step of ``values``, or None: the largest ``q = g/m`` (``g`` the smallest gap
    between distinct values, ``m`` up to :data:`MAX_DIVISOR`), refitted by least squares to
    the gaps' nearest multiples, that leaves every gap within FIT of a step or ``noise``
    (the rounding a gap carries) of its multiple.  None when no such step is coarser than
    ``resolution``.  Random values pass for some ``m`` with odds about MAX_DIVISOR·(2·FIT)^gaps."""
    if resolution <= 0:
        return None
    gaps = np.diff(np.unique(values))
    gaps = gaps[gaps > resolution]
    if gaps.size < MIN_VALUES - 1:
        return None
    smallest = float(gaps.min())
    m = np.arange(1, min(MAX_DIVISOR, int(smallest / resolution)) + 1)
    if m.size == 0:
        return None
    n = np.round(gaps[None, :] / (smallest / m)[:, None])
    q = np.sum(n * gaps, axis=1) / np.sum(n * n, axis=1)
    fits = np.all(np.abs(gaps - n * q[:, None]) <= np.maximum(FIT * q, noise)[:, None], axis=1)
    return float(q[np.argmax(fits)]) if fits.any() else None


def _on_grid(values: np.ndarray, step: float, noise: float) -> float:
    gaps = np.diff(np.unique(values))
    r = gaps / step
    return float(np.mean(np.abs(r - np.round(r)) * step <= max(FIT * step, noise))) if gaps.size else 0.0


def _rows(pair: Pair) -> list[tuple[np.ndarray, np.ndarray]]:
    """Value groups to test: slices along the last axis when in memory and each holds
    enough values to show a grid, else the sample."""
    if pair.in_memory and len(pair.shape) >= 2:
        got = pair.slices(len(pair.shape) - 1)
        if got is not None:
            _, a, b = got
            if a.shape[1] >= MIN_VALUES:  # a slice of fewer values shows no grid
                return [(a[i], b[i]) for i in range(min(len(a), 16))]
    a, b = pair.values()
    return [(a, b)]


def _own_spacing(x: np.ndarray, u: float, top: float) -> float:
    """The spacing, at the largest value, of the narrowest float format holding every value
    of ``x`` (the compared format's if none narrower does).  A side computed in float16 has
    float16's grid, whose step grows with the value; a quantisation grid is coarser than
    that even at the top of the range."""
    nonzero = x[x != 0]
    for n in NARROW:
        if n.unit_roundoff > u and nonzero.size and exact_in(nonzero, n).all():
            return 2 * n.unit_roundoff * top
    return 2 * u * top


def _levels(x: np.ndarray, step: float) -> int:
    """How many grid steps the side spans: at most 255 for an 8-bit quantisation."""
    return round((float(np.max(x)) - float(np.min(x))) / step) if x.size else 0


def _rounding(x: np.ndarray, y: np.ndarray, step: float, tolerance: tuple[float, float] | None) -> float | None:
    """The grid's offset when the gridded side ``x`` is the other side ``y`` rounded to
    nearest on the grid (``step·round((y − o)/step) + o``, clamped to x's range), within the pair's tolerance on
    99% of the elements; None when it is not (a grid of other values, a floor, a clamp)."""
    if x.size == 0 or tolerance is None:
        return None
    offset = float(np.median(x - step * np.round(x / step)))
    offset = 0.0 if abs(offset) <= FIT * step else offset
    mapped = np.clip(step * np.round((y - offset) / step) + offset, np.min(x), np.max(x))
    return offset if holds(x, mapped, tolerance) else None


def _clamped(x: np.ndarray, y: np.ndarray, step: float) -> tuple[float, float] | None:
    """The range the gridded side is clamped to, when the other side goes a step beyond it
    (an integer type's range): a quantisation saturates there."""
    lo, hi = float(np.min(x)), float(np.max(x))
    return (lo, hi) if np.any(y < lo - step) or np.any(y > hi + step) else None


def find(pair: Pair) -> list[Finding]:
    u = pair.u
    rows = _rows(pair)
    for side in ("A", "B"):
        steps = []
        for a, b in rows:
            x, y = (a, b) if side == "A" else (b, a)
            ok = np.isfinite(x) & np.isfinite(y)
            x, y = x[ok], y[ok]
            if x.size < MIN_FIT:
                continue
            top = float(np.max(np.abs(x), initial=0.0))
            # Each value carries up to two roundings of u·|x|, each gap two values: 4·u·top,
            # doubled for slack; the step must be 8 times coarser still (COARSE = 64).
            noise = NOISE * u * top
            step = step_of(x, COARSE * u * top, noise)
            if step is not None and step <= _own_spacing(x, u, top):
                step = None
            if step is not None and _on_grid(y, step, noise) < GRID_SHARE:
                steps.append((step, x))
        if len(steps) < max(1, (len(rows) + 1) // 2):
            continue  # a grid shows in most slices, not in a few by chance
        step = float(np.median([s for s, _ in steps]))
        values = np.concatenate([x for _, x in steps])
        distinct = len(np.unique(values))
        a, b = pair.values()
        x, y = (a, b) if side == "A" else (b, a)
        rounded = _rounding(x, y, step, pair.tolerance)
        levels = _levels(x, step)
        if rounded is not None:
            bounds = _clamped(x, y, step)
            clamp = "" if bounds is None else f" and clamped to [{bounds[0]:.4g}, {bounds[1]:.4g}]"
            message = (f"{side} = {'B' if side == 'A' else 'A'} rounded to a grid of step {step:.4g}"
                       f"{'' if rounded == 0 else f' offset by {rounded:.4g}'}{clamp}, within the tolerance "
                       f"on at least 99% of sampled elements ({distinct} distinct values, spanning {levels} steps)")
        else:
            message = (
                f"{side}'s values lie on a coarse grid of step {step:.4g} ({distinct} distinct values in the sample), "
                "the other side's do not: one side was quantised"
            )
        where = place(f"{side} on a grid of step {step:.4g}", step=step, distinct=distinct, levels=levels,
                      rounded=rounded is not None)
        edges = np.histogram_bin_edges(values, bins=24)
        counts, _ = np.histogram(values, bins=edges)
        evidence = {"picture": "histogram", "side": side, "edges": edges.tolist(), "counts": counts.tolist()}
        return [Finding("grid", "error", message, where, why.grid_causes(step, levels), evidence)]
    return []
