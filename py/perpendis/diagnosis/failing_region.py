"""The failing region: the few indices of an axis (or a run at its end) that hold the
failures, from the fold's per-axis failure counts, and whether it is gross and apart
enough to imply a slice computed differently."""

from __future__ import annotations

import numpy as np

from ..report.model import AxisFailures, Finding, Report, place
from .relations.region import causes as region_causes
from .relations.region import describe as describe_region
from .shape import AXIS_NAMES

REGION_SHARE = 0.9  # share of failures the top indices of an axis must hold
REGION_DENSITY = 0.5  # and the share of their elements that must fail
REGION_MIN_FAILS = 2  # one class of two samples' logits; a cause needs the failures gross too
GROSS = 8.0  # a region names a cause when passing it needs this many times the tolerance
SEPARATION = 8.0  # and its differences are this many times those outside it


def _index_ranges(indices: list[int], bucket: int) -> str:
    """``"2"``, ``"2-3"`` or ``"1, 5"``: the indices (or bucketed index ranges) of a region."""
    spans = sorted((i * bucket, (i + 1) * bucket - 1) for i in indices)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo == merged[-1][1] + 1:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in merged)


def _axis_region(axis: AxisFailures, n_fail: int, n_elements: int) -> list[int] | None:
    """The few bucket indices of one axis that hold most failures, each mostly failing."""
    if axis.size < 2 or n_fail < REGION_MIN_FAILS:
        return None
    counts = np.asarray(axis.fail_counts)
    order = np.argsort(-counts, kind="stable")
    cumulative = np.cumsum(counts[order]) / n_fail
    k = int(np.searchsorted(cumulative, REGION_SHARE)) + 1
    top = order[:k]
    # A few indices, or one run at an end of the axis (the last k positions: padding, a
    # mask, a truncated sequence) up to half of it.
    if k > max(1, min(4, len(counts) // 4)):
        lo, hi = int(top.min()), int(top.max())
        if not ((lo == 0 or hi == len(counts) - 1) and hi - lo + 1 <= len(counts) // 2):
            return None
        top, k = np.arange(lo, hi + 1), hi - lo + 1
    per_index = n_elements / axis.size * axis.bucket
    if counts[top].sum() / (k * per_index) < REGION_DENSITY:
        return None
    return sorted(int(i) for i in top)


def find_region(r: Report) -> tuple[list[Finding], dict[int, list[int]]]:
    tol = r.tolerance
    if tol is None or not r.axes:
        return [], {}
    region = {}
    for axis in r.axes:
        top = _axis_region(axis, tol.n_fail, tol.n_judged or r.n_elements)  # complex values: judged whole
        if top is not None:
            region[axis.axis] = top
    if not region:
        return [], {}
    names = AXIS_NAMES.get(len(r.axes), ())
    parts = []
    for ax, top in region.items():
        bucket = r.axes[ax].bucket
        label = f" ({names[ax]} {_index_ranges(top, bucket)})" if names and bucket == 1 else ""
        parts.append(f"axis {ax} index {_index_ranges(top, bucket)}{label}")
    # The axis named is the one whose few indices hold the failures most tightly.
    axis = min(region, key=lambda ax: len(region[ax]) * r.axes[ax].bucket / r.axes[ax].size)
    bucket = r.axes[axis].bucket
    indices = [i * bucket for i in region[axis]]
    where = place("; ".join(parts), axis=axis, axis_size=r.axes[axis].size, indices=indices)
    if tol.first_fail is not None:
        where["element"] = list(tol.first_fail.index)
    held = min(sum(r.axes[ax].fail_counts[i] for i in top) for ax, top in region.items()) / tol.n_fail
    shape = tuple(r.compared_shape or ())
    exact = bucket == 1 and len(region) == 1 and len(shape) == len(r.axes)
    if exact:
        message = (f"A equals B within the tolerance except on {describe_region(shape, axis, region[axis])}, "
                   f"which holds {held:.0%} of the failures")
    else:
        message = f"the failures are concentrated in one region ({held:.0%} of them) while the rest passes"
    causes = region_causes(shape, axis, indices) if exact and gross_failures(r) and _apart(r, region) else []
    if not causes:
        message += "; no known cause fits a region like this alone"
    return [Finding("region", "error", message, where, causes)], region


def gross_failures(r: Report) -> bool:
    """Whether the failures are far past the tolerance (passing them needs ≥ GROSS times its
    rtol or atol): a region of elements a few times over it is where rounding meets small
    |B|, which implies no slice computed differently."""
    tol, need = r.tolerance, r.min_tolerance
    if tol is None:
        return False
    by_rtol = need.rtol_at_atol is None or tol.rtol <= 0 or need.rtol_at_atol >= GROSS * tol.rtol
    by_atol = tol.atol <= 0 or need.atol_at_rtol >= GROSS * tol.atol
    return by_rtol and by_atol


def _apart(r: Report, region: dict[int, list[int]]) -> bool:
    """Whether the region's differences stand apart from the rest's: the smallest in it at
    least SEPARATION times the largest outside (on the sampled differing elements).  A
    region picked out by the tolerance where |B| is small, with differences as large
    elsewhere, is no slice computed differently."""
    rows = r.samples.get("diffs")
    if rows is None or not len(rows):
        return False
    d = np.abs(rows[:, 1] - rows[:, 2])
    inside = in_region(rows[:, 0], r, region)
    if not inside.any() or not np.isfinite(d).all():
        return False
    return bool(not (~inside).any() or d[inside].min() >= SEPARATION * d[~inside].max())


def in_region(flats: np.ndarray, r: Report, region: dict[int, list[int]]) -> np.ndarray:
    shape = tuple(r.compared_shape or ())
    index = np.unravel_index(flats.astype(np.intp), shape)
    keep = np.ones(flats.shape, dtype=bool)
    for ax, top in region.items():
        keep &= np.isin(index[ax] // r.axes[ax].bucket, top)
    return keep

