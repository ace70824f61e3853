"""A sign flip, constant offset or scale factor that explains the failing elements (of
the failing region, when there is one), past what rounding at the data's precision explains."""

from __future__ import annotations

import numpy as np

from ..numerics.bits import format_of
from ..report.model import Finding, Report
from .failing_region import REGION_MIN_FAILS, in_region
from .relations import causes as why
from .relations.forms import implies
from .relations.rounding_model import rounding_bound

PATTERN_SHARE = 0.9  # share of failing elements a sign flip, offset or scale must explain
PATTERN_MIN = 4  # failing elements an offset or scale is fitted on (a sign flip, fitting nothing, needs 2)
EVERYWHERE = 0.9  # share of all elements failing for a map of the failing ones to be the pair's


def find_pattern(r: Report, region: dict[int, list[int]], where: dict | None, depth: float) -> list[Finding]:
    """Sign flip, constant offset or scale factor explaining the failing elements."""
    rows = r.samples.get("fails")
    tol = r.tolerance
    if rows is None or tol is None or len(rows) < REGION_MIN_FAILS:
        return []
    if region:
        rows = rows[in_region(rows[:, 0], r, region)]
    a, b = rows[:, 1], rows[:, 2]
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < REGION_MIN_FAILS:
        return []
    u = format_of(r.compared_as).unit_roundoff
    slack = tol.atol + tol.rtol * np.abs(b) + 4 * u * (np.abs(a) + np.abs(b))
    # A map that holds on the failing elements only, while the rest agree, is conditional:
    # what picks those elements is the structure, and no cause of a map applied everywhere
    # (a negated weight, a bias, a constant) follows from it.
    everywhere = bool(region) or tol.fraction_fail >= EVERYWHERE
    scope = ("in that region" if region else "across the failing elements" if everywhere else
             f"on the failing elements only ({tol.fraction_fail:.0%} of all; the others agree within the tolerance)")
    flip = np.abs(a + b) <= slack
    if flip.mean() >= PATTERN_SHARE and np.mean(np.abs(b) > slack) >= PATTERN_SHARE:
        message = f"A ≈ -B {scope} ({flip.mean():.0%} of sampled failures)"
        return [Finding("sign_flip", "error", message, where, list(why.SIGN_FLIP) if everywhere else [])]
    if len(a) < PATTERN_MIN:
        return []  # a flip fits nothing, so two elements show it; an offset or scale is fitted
    offset = float(np.median(a - b))
    fits_offset = np.mean(np.abs(a - b - offset) <= slack)
    nonzero = b != 0
    scale = float(np.median(a[nonzero] / b[nonzero])) if nonzero.any() else 1.0
    fits_scale = np.mean(np.abs(a - scale * b) <= slack)
    if max(fits_offset, fits_scale) < PATTERN_SHARE:
        return []
    # A tight tolerance fails rounding too: an offset or scale is a finding only past what
    # rounding at the data's own precision explains (a 1-3 ULP spread is no bias).
    one = rounding_bound(u, depth)
    scale_of_b = max(float(np.sqrt(np.mean(b * b))), float(r.samples.get("b_rms", 0.0)))
    if fits_offset >= fits_scale and abs(offset) <= one * scale_of_b:
        return []
    if fits_offset < fits_scale and (abs(scale - 1) <= one or abs(scale) <= one):
        return []  # no scale, or A ≈ 0 there: a zeroed region, which the region says better
    # In a region the map is one slice's: a per-slice offset or scale, with their causes.
    if fits_offset >= fits_scale:
        message = f"A - B ≈ {offset:.6g}, a constant offset {scope} ({fits_offset:.0%} of sampled failures)"
        kind = "slice_offset" if region else "offset"
        causes = _sliced(r, where, kind) if region else [why.FAILING_OFFSET] if everywhere else []
        return [Finding(kind, "error", message, _amount(where, offset=offset), causes)]
    message = f"A ≈ {scale:.6g} × B, a scale factor {scope} ({fits_scale:.0%} of sampled failures)"
    kind = "slice_scale" if region else "scale"
    causes = (_sliced(r, where, kind) if region else
              implies.causes("elementwise_map", {"scale": scale, "lhs": "id", "rhs": "id",
                                                 "sizes": sorted(set(r.compared_shape or ()))}) if everywhere else [])
    return [Finding(kind, "error", message, _amount(where, scale=scale), causes)]


def _sliced(r: Report, where: dict | None, kind: str) -> list[str]:
    """The per-slice causes of a map held in a region along one axis (none without an axis)."""
    shape, axis = list(r.compared_shape or ()), (where or {}).get("axis")
    return why.for_slices(kind, shape, axis) if isinstance(axis, int) and 0 <= axis < len(shape) else []


def _amount(where: dict | None, **amount: float) -> dict:
    """``where`` (or an empty place) with ``amount`` added."""
    out = dict(where or {})
    out["amount"] = {**out.get("amount", {}), **{k: float(v) for k, v in amount.items()}}
    return out

