"""Regions: where a relation holds, or where the two sides part, described simply.

A region is a few indices along one axis ("row 17", "channels 3-4") or a run at an end of
it ("the last 16 positions of axis 1"); :func:`describe` says it in those words. When only
the fold's sample of differing elements is known (a streamed pair, a checkpoint's tensor),
:func:`of_sample` finds the axis along which they all lie in such a region, so a relation
fitted on them is said to hold there, not everywhere.
"""

from __future__ import annotations

import numpy as np

from . import causes as why
from .pair import axis_noun

MIN_SAMPLED = 16  # differing elements sampled before a region is read from them


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [(lo, hi) for lo, hi in runs]


def describe(shape: tuple[int, ...], axis: int, indices: list[int]) -> str:
    """``"row 17"``, ``"features 3-5, 9"``, ``"the last 16 positions of axis 1"``."""
    n = shape[axis]
    noun = axis_noun(shape, axis)
    runs = _runs(indices)
    if len(runs) == 1 and len(indices) > 1:
        lo, hi = runs[0]
        if hi == n - 1 and lo > 0:
            return f"the last {hi - lo + 1} {noun}s of axis {axis} ({lo}-{hi})"
        if lo == 0 and hi < n - 1:
            return f"the first {hi + 1} {noun}s of axis {axis} (0-{hi})"
    shown = ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in runs[:6]) + (", …" if len(runs) > 6 else "")
    return f"{noun}{'s' if len(indices) > 1 else ''} {shown} of axis {axis}"


def causes(shape: tuple[int, ...], axis: int, indices: list[int]) -> list[str]:
    """The causes a region implies, by what its axis and indices are.

    One batch entry says that sample's own input, or what goes with it (its padding mask,
    its position ids), drives the difference: no weight slice or index is implied.  So
    does one row of a 2-D tensor, if its rows are samples, beside the slice computed
    differently that a weight matrix's row would be.  A run at one end of another axis
    implies padding, masking or an off-by-one; a few indices elsewhere, one slice computed
    differently."""
    if not indices:
        return []
    noun = axis_noun(shape, axis)
    if noun == "batch entry":
        return list(why.REGION_SAMPLE) if len(indices) == 1 else []
    runs = _runs(indices)
    n = shape[axis]
    if len(shape) == 2 and axis == 0 and len(indices) == 1:
        return [*why.REGION_ROWS, "if the rows are samples, " + why.REGION_SAMPLE[0]]
    if len(runs) == 1 and len(indices) > 1 and (runs[0][0] == 0 or runs[0][1] == n - 1):
        return list(why.REGION_END)
    return list(why.REGION_ROWS)


def of_sample(shape: tuple[int, ...], flat: np.ndarray) -> tuple[int, list[int]] | None:
    """(axis, indices) when every sampled differing element lies in a few indices of one
    axis (at most a quarter of it, or one run at one end), else None; the axis whose
    region is the smallest share of it wins."""
    if flat.size < MIN_SAMPLED or len(shape) < 1:
        return None
    index = np.unravel_index(flat.astype(np.intp), shape)
    best: tuple[float, int, list[int]] | None = None
    for axis, n in enumerate(shape):
        if n < 2:
            continue
        held = sorted(int(i) for i in np.unique(index[axis]))
        runs = _runs(held)
        at_end = len(runs) == 1 and (runs[0][0] == 0 or runs[0][1] == n - 1)
        if len(held) > max(1, n // 4) and not (at_end and len(held) < n // 2):
            continue
        share = len(held) / n
        if best is None or share < best[0]:
            best = (share, axis, held)
    return None if best is None else (best[1], best[2])
