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

A per-channel quantisation has a step of its own per index of one axis, so no one step
fits the tensor: when the steps found in the slices along an axis differ, each slice is
checked as the other side's slice rounded to its own grid, and the relation is stated only
when every slice tested holds.
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
SLICES = 16  # slices tested per axis
GRID_SHARE = 0.99

Rows = list[tuple[np.ndarray, np.ndarray]]  # (A, B) value groups
Steps = list[tuple[float, np.ndarray, np.ndarray]]  # (step, gridded side, other side)


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


def _rows(pair: Pair, axis: int) -> Rows:
    """Value groups to test: slices along ``axis`` when in memory and each holds enough
    values to show a grid, else (for the last axis) the sample."""
    if pair.in_memory and len(pair.shape) >= 2:
        got = pair.slices(axis)
        if got is not None:
            _, a, b = got
            if a.shape[1] >= MIN_VALUES:  # a slice of fewer values shows no grid
                return [(a[i], b[i]) for i in np.unique(np.linspace(0, len(a) - 1, min(len(a), SLICES)).astype(int))]
    if axis != len(pair.shape) - 1:
        return []
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


def _steps(rows: Rows, side: str, u: float) -> Steps:
    """(step, gridded values, the other side's) for each row where ``side`` lies on a
    coarse grid the other side is off."""
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
            steps.append((step, x, y))
    return steps


def _histogram(side: str, values: np.ndarray) -> dict:
    edges = np.histogram_bin_edges(values, bins=24)
    counts, _ = np.histogram(values, bins=edges)
    return {"picture": "histogram", "side": side, "edges": edges.tolist(), "counts": counts.tolist()}


def _one_grid(pair: Pair, side: str, steps: Steps) -> Finding:
    """One step for the whole tensor, checked as a rounding of the other side on the sample."""
    step = float(np.median([s for s, _, _ in steps]))
    values = np.concatenate([x for _, x, _ in steps])
    distinct = len(np.unique(values))
    a, b = pair.values()
    x, y = (a, b) if side == "A" else (b, a)
    rounded = _rounding(x, y, step, pair.tolerance)
    levels = _levels(x, step)
    amounts: dict = {"step": step, "distinct": distinct, "levels": levels, "rounded": rounded is not None}
    causes = why.grid_causes(step, levels)
    if rounded is not None:
        bounds = _clamped(x, y, step)
        clamp = "" if bounds is None else f" and clamped to [{bounds[0]:.4g}, {bounds[1]:.4g}]"
        message = (f"{side} = {'B' if side == 'A' else 'A'} rounded to a grid of step {step:.4g}"
                   f"{'' if rounded == 0 else f' offset by {rounded:.4g}'}{clamp}, within the tolerance "
                   f"on at least 99% of sampled elements ({distinct} distinct values, spanning {levels} steps)")
    elif (finer := _finer_grid(y, step, pair.u)) is not None:
        # Both sides on grids, one a multiple of the other (integers against even integers):
        # not one side quantised, and no scale to name.
        message = (f"{side}'s values lie on a grid of step {step:.4g} and the other side's on one of step "
                   f"{finer:.4g}, which it is not a rounding of: both sides hold grid values, {side}'s coarser")
        amounts["finer"], causes = finer, []
    else:
        message = (
            f"{side}'s values lie on a coarse grid of step {step:.4g} ({distinct} distinct values in the sample), "
            "the other side's do not: one side was quantised"
        )
    where = place(f"{side} on a grid of step {step:.4g}", **amounts)
    return Finding("grid", "error", message, where, causes, _histogram(side, values))


def _finer_grid(y: np.ndarray, step: float, u: float) -> float | None:
    """The step ``step/k`` (k = 2 … 16) of a coarse grid the other side ``y`` lies on, or
    None.  Coarse as a grid step must be (:data:`COARSE` times the format's spacing at the
    largest value): within a narrow range every float lies near a fine enough grid."""
    y = y[np.isfinite(y)]
    top = float(np.max(np.abs(y), initial=0.0))
    for k in range(2, 17):
        if y.size and step / k > COARSE * u * top and _on_grid(y, step / k, NOISE * u * top) >= GRID_SHARE:
            return step / k
    return None


def _per_slice(pair: Pair, side: str, axis: int, rows: int, steps: Steps) -> Finding | None:
    """A step of its own per index of ``axis`` (a per-channel quantisation): stated only
    when every slice tested is the other side's slice rounded to its own grid, within the
    pair's tolerance."""
    if len(steps) < rows or any(_rounding(x, y, step, pair.tolerance) is None for step, x, y in steps):
        return None
    low, high = min(s for s, _, _ in steps), max(s for s, _, _ in steps)
    levels = max(_levels(x, step) for step, x, _ in steps)
    other = "B" if side == "A" else "A"
    message = (f"{side} = {other} rounded, per index of axis {axis}, to a grid of that index's own step "
               f"(steps {low:.4g} to {high:.4g} in the {len(steps)} slices tested, each within the tolerance "
               f"on at least 99% of its elements; at most {levels} steps per slice)")
    where = place(f"{side} on a grid of its own step per index of axis {axis}", axis=axis, step_min=low,
                  step_max=high, slices=len(steps), levels=levels, rounded=True)
    values = np.concatenate([x / step for step, x, _ in steps])
    evidence = {**_histogram(side, values), "of": f"{side}'s values in steps of their slice's grid"}
    return Finding("grid", "error", message, where, why.per_channel_grid_causes(axis, levels), evidence)


def find(pair: Pair) -> list[Finding]:
    """The grid one side lies on: one step over the tensor (tried on slices along the last
    axis), or a step of its own per index of one axis, tried along each axis in turn."""
    last = len(pair.shape) - 1
    for axis in (last, *range(last)):
        rows = _rows(pair, axis)
        for side in ("A", "B"):
            steps = _steps(rows, side, pair.u)
            if len(steps) < max(1, (len(rows) + 1) // 2):
                continue  # a grid shows in most slices, not in a few by chance
            values = [s for s, _, _ in steps]
            if max(values) <= min(values) * (1 + 2 * FIT):
                return [_one_grid(pair, side, steps)]
            found = _per_slice(pair, side, axis, len(rows), steps)
            if found is not None:
                return [found]
    return []
