"""The optional higher-precision reference: each side's error against it, in the compared
format, and whether B's is within :data:`REF_FACTOR` of A's (B then rounds as well as A)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..inputs.tensor import Tensor
from ..numerics import bits
from ..numerics.bits import Format
from ..report.model import Reference
from ..report.text import shape_text
from .align import Aligned, like_a
from .fold.chunk import CHUNK

REF_FACTOR = 4.0  # B is rounding-equivalent when its error vs ref is within this factor of A's


def _side_error(side: np.ndarray, fmt: Format, ref64: np.ndarray) -> tuple[float, int | None, int]:
    """One side against the float64 reference: the RMSE over elements finite in both, the
    max ULP distance from the reference rounded to the side's own format (None where no
    distance is defined), and how many elements are non-finite on one of the two only, or
    non-finite on both but not the same (NaN against inf, or infinities of opposite sign)."""
    sq, count, worst, unlike = 0.0, 0, -1, 0
    flat_side, flat_ref = side.reshape(-1), ref64.reshape(-1)
    for start in range(0, flat_side.size, CHUNK):
        x, r = flat_side[start : start + CHUNK], flat_ref[start : start + CHUNK]
        v = bits.to_float64(x, fmt)
        ok = np.isfinite(v) & np.isfinite(r)
        with np.errstate(over="ignore"):
            err = v[ok] - r[ok]
        sq += float(np.dot(err, err))
        count += int(ok.sum())
        unlike += int((~ok & (v != r) & ~(np.isnan(v) & np.isnan(r))).sum())
        rounded = bits.raw_bits(bits.from_float64(r, fmt), fmt)
        dist, defined = bits.ulp_distance(bits.raw_bits(x, fmt), rounded, fmt)
        if defined.any():
            worst = max(worst, int(dist[defined].max()))
    return (math.sqrt(sq / count) if count else 0.0), (worst if worst >= 0 else None), unlike


def _rmse_every(side: np.ndarray, fmt: Format, ref64: np.ndarray) -> float:
    """``sqrt(mean((ref - side)**2))`` over every element, as ``torch._dynamo.utils.rmse``
    takes it: a NaN or an infinity on either side makes it NaN or inf."""
    total, flat_side, flat_ref = 0.0, side.reshape(-1), ref64.reshape(-1)
    for start in range(0, flat_side.size, CHUNK):
        with np.errstate(over="ignore", invalid="ignore"):
            err = flat_ref[start : start + CHUNK] - bits.to_float64(flat_side[start : start + CHUNK], fmt)
            total += float(np.dot(err, err))
    return math.sqrt(total / flat_side.size) if flat_side.size else math.nan


def dynamo_rmse(a: Tensor, b: Tensor, ref: Tensor, aligned: Aligned) -> tuple[float, float] | None:
    """A's and B's RMSE against the float64 reference, as compared (None: no shape to compare)."""
    ref64 = _aligned_reference(a, b, ref, aligned)
    if ref64 is None or aligned.a is None or aligned.b is None:
        return None
    return _rmse_every(aligned.a, aligned.fmt, ref64), _rmse_every(aligned.b, aligned.fmt, ref64)


def _aligned_reference(a: Tensor, b: Tensor, ref: Tensor, aligned: Aligned) -> np.ndarray | None:
    """The reference's float64 values laid out as the compared elements (None: nothing compared)."""
    shape = aligned.shape
    if shape is None:
        return None
    if ref.shape == a.shape:
        r = like_a(ref.array, aligned)
    elif ref.shape in (b.shape, shape):
        r = np.broadcast_to(ref.array, shape)
    else:
        raise InputError(
            f"the reference has shape {shape_text(ref.shape)} but A has {shape_text(a.shape)} and B "
            f"{shape_text(b.shape)}; give a reference of the same shape as A or B",
            side="ref",
        )
    return bits.to_float64(np.ascontiguousarray(r), ref.fmt)


def reference(a: Tensor, b: Tensor, ref: Tensor, aligned: Aligned) -> Reference | None:
    """Each side's error against ``ref`` in the compared format, and whether B's is within
    REF_FACTOR of A's."""
    ref64 = _aligned_reference(a, b, ref, aligned)
    if ref64 is None:
        return None
    # Both sides as they were compared: with a dtype mismatch, A is judged as if it too had
    # been computed in the narrower format, which is the question the comparison asks.
    a_rmse, a_ulp, a_unlike = _side_error(aligned.a, aligned.fmt, ref64)  # type: ignore[arg-type]
    b_rmse, b_ulp, b_unlike = _side_error(aligned.b, aligned.fmt, ref64)  # type: ignore[arg-type]
    ratio = b_rmse / a_rmse if a_rmse > 0 else None
    # B within one step of the correctly rounded reference is as good as rounding gets; a
    # NaN or inf the reference does not have is never rounding, and the RMSE cannot see it.
    close = b_rmse <= REF_FACTOR * a_rmse or (b_ulp is not None and b_ulp <= 1)
    equivalent = close and b_unlike <= a_unlike
    return Reference(a_rmse, b_rmse, a_ulp, b_ulp, ratio, equivalent, a_unlike, b_unlike)

