"""Offsets that do not depend on the input: A = B + c, with c one value per index of one
axis and the same across every other axis, to rounding.

A bias that differs adds the same amount to every sample: on a classifier's logits, two
samples of ten classes show the same A − B per class.  The per-slice affine fit
(:mod:`.affine`) needs many elements per slice, as it fits a scale
too; an offset alone is pinned by two, as long as the slices together hold more values
than constants (:data:`MIN_SPARE`).  Each slice's differences must agree to the rounding
allowed or to the pair's own noise (:data:`NOISE` times the median slice's spread), and
the offset must exceed :data:`BEYOND` times that in the slices named.
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from . import region
from .pair import Pair, axis_noun
from .rounding_model import rounding_bound

MIN_SPARE = 8  # sampled values beyond the one constant per slice
BEYOND = 4.0  # an offset named is past this many times the spread allowed
NOISE = 16.0  # a slice's spread may reach this many times the median slice's
CENTRE_RANGE = 3.0  # a bias kept behind a changed weight lies within this many RMS of B


def _fit(pair: Pair, axis: int, bound: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(indices along ``axis``, their offsets) when A − B is constant in every slice to
    rounding and some offset is beyond it, else None."""
    got = pair.slices(axis)
    if got is None:
        return None
    along, a, b = got
    if a.shape[1] < 2 or a.size - a.shape[0] < MIN_SPARE or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    d = a - b
    c = d.mean(axis=1)
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), pair.b_rms)
    left = np.abs(d - c[:, None]) / scale
    # The pair's own noise (a deep model's outputs differ by tens of ULP) sets how closely
    # each slice must agree: the median slice's spread, NOISE times over, or rounding.
    allowed = max(bound, NOISE * float(np.median(left.max(axis=1))))
    if np.any(left > allowed):
        return None
    # "Whatever the input" needs inputs that differ: B must vary across each slice named
    # by BEYOND times its offset, or a change that follows B (a weight) is as constant there.
    quiet = float(np.median(left.max(axis=1))) <= bound
    beyond = (np.abs(c) > BEYOND * allowed * np.max(scale, axis=1)) & _unlike_a_scale(d, b, c, scale, bound, quiet)
    beyond &= _unlike_a_weight(d, b, c, pair.b_rms)
    if not beyond.any():
        return None
    return along[beyond], c[beyond]


def _unlike_a_scale(
    d: np.ndarray, b: np.ndarray, c: np.ndarray, scale: np.ndarray, bound: float, quiet: bool
) -> np.ndarray:
    """Per slice, whether A − B = c rules out A − B = k·B (a weight or gain that changed,
    which is as constant across samples whose B hardly varies).  Where the pair is
    ``quiet`` (the median slice agrees to rounding, so every slice holds to it), it is
    ruled out when k·B leaves BEYOND times the rounding allowed (two samples' logits that
    differ by 4e-4 pin it); where the slices agree only to the pair's noise, when k·B
    leaves at least 1/BEYOND of the offset (the samples' B must differ in earnest): one
    slice of ten that agrees to 1e-7 while the others differ by 1e-5 is chance."""
    k = np.sum(d * b, axis=1) / np.maximum(np.sum(b * b, axis=1), 1e-300)
    as_scale = np.abs(d - k[:, None] * b)
    if quiet:
        return np.max(as_scale / scale, axis=1) > BEYOND * bound
    return BEYOND * np.max(as_scale, axis=1) >= np.abs(c)


def _unlike_a_weight(d: np.ndarray, b: np.ndarray, c: np.ndarray, b_rms: float) -> np.ndarray:
    """Per slice, whether A − B = c rules out a weight that changed behind a bias that did
    not: A − B = k·(B − κ), κ the bias, anywhere within :data:`CENTRE_RANGE` RMS of B.  Its
    smallest k gives the offset at the cost of varying by ``|c|·σ_B / (|mean B| + range)``
    across the slice; the slice's own spread must stay under 1/BEYOND of that.  Two samples
    whose B hardly differ (a ResNet's logits for two images) rule out nothing."""
    spread = np.max(np.abs(d - c[:, None]), axis=1)
    least_k = np.abs(c) / (np.abs(b.mean(axis=1)) + CENTRE_RANGE * b_rms)
    return BEYOND * spread < least_k * b.std(axis=1)


def find(pair: Pair) -> list[Finding]:
    """The input-independent offset along the axis that names the fewest indices."""
    if not pair.in_memory or pair.printed or not pair.fmt.is_float or len(pair.shape) < 2:
        return []
    bound = rounding_bound(pair.u, pair.depth)
    fits = {axis: _fit(pair, axis, bound) for axis, n in enumerate(pair.shape) if n >= 2}
    fits = {k: v for k, v in fits.items() if v is not None}
    if not fits:
        return []
    axis = min(fits, key=lambda k: len(fits[k][0]) / pair.shape[k])
    indices, offsets = fits[axis]
    n = pair.shape[axis]
    noun = axis_noun(pair.shape, axis)
    every = len(indices) == n
    which = f"every {noun}" if every else region.describe(pair.shape, axis, [int(i) for i in indices])
    span = f"{offsets.min():.4g} to {offsets.max():.4g}" if len(offsets) > 1 else f"{offsets[0]:.4g}"
    message = (f"along axis {axis} ({n} {noun}s), in {which} A = B + c with c {span}, one value per {noun}, "
               "the same across every other axis to rounding: an offset that does not depend on the input")
    where = place(f"{which} (axis {axis})", axis=axis, axis_size=n, indices=[int(i) for i in indices[:64]],
                  offset=[float(x) for x in offsets[:64]])
    where["relation"] = {"kind": "input_independent_offset", "text": f"A = B + c[{noun}]",
                         "params": {"axis": axis}, "held": len(indices)}
    return [Finding("slice_offset", "error", message, where, why.for_slices("slice_offset", pair.shape, axis))]
