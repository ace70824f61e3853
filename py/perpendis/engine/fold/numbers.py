"""From the merged partial to the report's numbers: the elements it picked out, the stats,
the histogram, the tolerance test's result, the per-axis failures and the samples.

Pure: :func:`numbers` gives the values of the report's numeric fields, and
:func:`perpendis.engine.compare.Prepared.finish`, the report's one writer, puts them in.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ...numerics import bits, element_bits
from ...numerics.bits import Format
from ...numerics.tolerance import Tolerance, dynamo_rmse_passes, refusal
from ...report.model import AxisFailures, Element, Histogram, MinTolerance, Stats, ToleranceResult
from .chunk import relative
from .partial import Partial, Pick, buckets
from .quantiles import ERROR_COLUMNS, QUANTILES, Ranks
from .ulp_histogram import ulp_edges


def multi_index(flat: int, shape: tuple[int, ...]) -> list[int]:
    """NumPy's multi-index of a C-order flat index (``[]`` for a 0-d array)."""
    return [int(i) for i in np.unravel_index(flat, shape)] if shape else []


def make_element(flat: int, raw_a: int, raw_b: int, fmt: Format, shape: tuple[int, ...]) -> Element:
    """One element of the pair in every form the report shows."""
    pair = np.array([raw_a, raw_b], dtype=np.uint64)
    dist, defined = bits.ulp_distance(pair[:1], pair[1:], fmt)
    va, vb = element_bits.value_of(raw_a, fmt), element_bits.value_of(raw_b, fmt)
    abs_diff = rel_diff = None
    if not (math.isnan(va) or math.isnan(vb)):
        abs_diff = 0.0 if va == vb else float(abs(va - vb))
        rel_diff = float(relative(np.array(abs_diff), np.array(abs(float(vb)))))
    return Element(
        flat=int(flat),
        index=multi_index(flat, shape),
        a=element_bits.decimal_string(raw_a, fmt),
        b=element_bits.decimal_string(raw_b, fmt),
        a_bits=element_bits.bit_string(raw_a, fmt),
        b_bits=element_bits.bit_string(raw_b, fmt),
        a_hex=element_bits.hex_string(raw_a, fmt),
        b_hex=element_bits.hex_string(raw_b, fmt),
        ulp=int(dist[0]) if defined[0] else None,
        abs_diff=abs_diff,
        rel_diff=rel_diff,
    )


def _snr_db(signal: float, noise: float) -> float | None:
    """``10·log10(Σb² / Σ(a-b)²)``: infinite when there is no error, None when both sums overflowed.

    Taken as a difference of logarithms so that sums near float64's ends (values around
    1e-160 or 1e154 square to them) neither underflow nor overflow the ratio.
    """
    if noise == 0:
        return math.inf
    if signal == 0:
        return -math.inf
    if math.isinf(signal) and math.isinf(noise):
        return None
    return 10 * (math.log10(signal) - math.log10(noise))


COSINE_MIN_RATIO = 2.0**-24
"""Below this ``Σa²/Σb²`` (A's norm under 1/4096 of B's) the cosine is not given: ``Σa²``
is taken as ``Σb²`` plus the differing elements' ``Σ(a²-b²)``, whose rounding error is a
few units of ``Σb²``'s last place; above it the cosine is good to about 1e-7."""


def _cosine(s_ab: float, s_aa: float, s_bb: float) -> float | None:
    """``Σab / sqrt(Σa² Σb²)``, with the square roots taken apart so the product cannot underflow."""
    if not s_aa > COSINE_MIN_RATIO * s_bb:
        return None
    norm = math.sqrt(s_aa) * math.sqrt(s_bb)
    if not (0 < norm < math.inf) or not math.isfinite(s_ab):
        return None
    return max(-1.0, min(1.0, s_ab / norm))


def _stats(p: Partial) -> Stats:
    n = p.n - p.n_excluded
    if n <= 0:
        return Stats()
    ranks = Ranks.of(p)
    pct: dict[str, float | None] = {}
    for kind, column in ERROR_COLUMNS.items():
        found = ranks.quantiles(p.errors.order_statistics(column, ranks.wanted()))
        pct |= {f"{k}_{kind}": v for k, v in zip(QUANTILES, found, strict=True)}
    s_bb, sum_sq = p.sum_bb.value(), p.sum_sq.value()
    s_aa, s_ab = (p.sum_bb + p.sum_aa_minus_bb).value(), (p.sum_bb + p.sum_ab_minus_bb).value()
    cosine = _cosine(s_ab, s_aa, s_bb)
    snr = _snr_db(s_bb, sum_sq)
    return Stats(
        mean_abs=p.sum_abs.value() / n,
        mean_rel=p.sum_rel.value() / n,
        rmse=math.sqrt(sum_sq / n),
        cosine=cosine,
        snr_db=snr,
        **pct,
    )


def _axes(p: Partial, shape: tuple[int, ...]) -> list[AxisFailures]:
    if not p.n_fail:
        return []
    out = []
    for axis, (size, counts) in enumerate(zip(shape, p.axis_fails, strict=True)):
        bucket = buckets(size)
        order = np.argsort(-counts, kind="stable")[:3]
        top = [[int(i) * bucket, float(counts[i]) / p.n_fail] for i in order if counts[i]]
        out.append(AxisFailures(axis, size, counts.tolist(), top, bucket))
    return out


def _histogram(p: Partial) -> Histogram:
    used = int(np.flatnonzero(p.hist).max(initial=0)) + 1
    return Histogram(ulp_edges(used), p.hist[:used].tolist(), p.ulp_nonfinite)


def _element(pick: Pick | None, fmt: Format, shape: tuple[int, ...]) -> Element | None:
    return None if pick is None else make_element(pick.flat, pick.raw_a, pick.raw_b, fmt, shape)


def _failure(pick: Pick | None, fmt: Format, shape: tuple[int, ...], tol: Tolerance) -> Element | None:
    """A failing element; of complex values judged whole, its real part, with the
    ``|A - B|`` of the complex values as the rule computed it (no relative error:
    the pick does not keep ``|B|``)."""
    found = _element(pick, fmt, shape)
    if found is None or pick is None or not tol.complex:
        return found
    judged = float(np.array([pick.metric], dtype=np.uint64).view(np.float64)[0])
    return replace(found, abs_diff=None if math.isnan(judged) else judged, rel_diff=None)


def _tolerance(
    p: Partial,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    rmse: tuple[float, float] | None,
    dtypes: tuple[str, str],
) -> ToleranceResult:
    """The tolerance test's result; ``rmse`` as for :func:`numbers`."""
    refused = refusal(tol, dtypes[0], dtypes[1], fmt.name)
    # dynamo's RMSE rule may pass failing elements, never a NaN or an infinity A and B disagree on.
    judged = p.n // 2 if tol.complex else p.n  # complex values are judged whole
    by_rmse = bool(p.n_fail and rmse is not None and not p.n_unreachable and dynamo_rmse_passes(*rmse, fmt, shape, tol))
    return ToleranceResult(
        atol=tol.atol,
        rtol=tol.rtol,
        preset=tol.preset,
        n_fail=p.n_fail,
        fraction_fail=p.n_fail / judged if judged else 0.0,
        passed=(p.n_fail == 0 or by_rmse) and refused is None,
        first_fail=_failure(p.first_fail, fmt, shape, tol),
        warning=tol.warning,
        worst_fail=_failure(p.worst_fail, fmt, shape, tol),
        refused=refused,
        passed_by=(
            f"its RMSE rule: RMSE(ref, A) = {rmse[0]:.3g} within that rule's bound on RMSE(ref, B) = {rmse[1]:.3g}"
            if by_rmse and rmse is not None
            else None
        ),
        n_judged=judged if tol.complex else None,
    )


def _min_tolerance(p: Partial) -> MinTolerance:
    """The smallest atol and rtol that pass, one step up, so that the reported tolerance
    passes despite rounding in atol + rtol*|b|."""
    need_atol = float(np.nextafter(p.need_atol, math.inf)) if p.need_atol > 0 else 0.0
    need_rtol = float(np.nextafter(p.need_rtol, math.inf)) if p.need_rtol > 0 else 0.0
    return MinTolerance(need_atol, need_rtol if math.isfinite(need_rtol) else None, p.n_unreachable)


def _samples(p: Partial) -> dict[str, Any]:
    """The rows the diagnosis reads, and B's RMS over pairs finite on both sides."""
    n_finite = p.n - p.n_excluded
    return {
        "diffs": p.diffs.rows(),
        "fails": p.fails.rows(),
        "n_diffs": p.diffs.count,
        "b_rms": math.sqrt(max(p.sum_bb.value(), 0.0) / n_finite) if n_finite > 0 else 0.0,
    }


def numbers(
    p: Partial,
    fmt: Format,
    shape: tuple[int, ...],
    tol: Tolerance,
    rmse: tuple[float, float] | None,
    dtypes: tuple[str, str],
) -> dict[str, Any]:
    """The report's numeric fields (by name) from the merged partial; ``rmse`` holds A's and
    B's RMSE against a float64 reference when the tolerance's rule can pass by them (dynamo),
    ``dtypes`` are A's and B's as given."""
    return {
        "n_elements": p.n,
        "n_bitwise_diff": p.n_diff,
        "first_diff": _element(p.first_diff, fmt, shape),
        "worst": {kind: _element(getattr(p, f"worst_{kind}"), fmt, shape) for kind in ("abs", "ulp", "rel")},
        "max_ulp": int(p.worst_ulp.metric) if p.worst_ulp else 0,
        "max_abs_diff": p.worst_abs.metric if p.worst_abs else 0.0,
        "max_rel_diff": p.worst_rel.metric if p.worst_rel else 0.0,
        "n_nan_mismatch": p.n_nan,
        "n_inf_mismatch": p.n_inf,
        "nan_mismatch_indices": [multi_index(f, shape) for f in p.nan_flat],
        "inf_mismatch_indices": [multi_index(f, shape) for f in p.inf_flat],
        "n_signed_zero_diff": p.n_signed_zero,
        "stats": _stats(p),
        "ulp_histogram": _histogram(p),
        "tolerance": _tolerance(p, fmt, shape, tol, rmse, dtypes),
        "min_tolerance": _min_tolerance(p),
        "axes": _axes(p, shape),
        "samples": _samples(p),
    }


def print_limited_note(p: Partial) -> str | None:
    """What the report says of failures a lossy print cannot resolve, if there were any."""
    if not p.n_print_limited:
        return None
    return (
        f"{p.n_print_limited} element(s) differ by more than the tolerance but by less than the printed digits "
        "resolve; they were not counted as failures"
    )
