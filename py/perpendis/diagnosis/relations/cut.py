"""The signal cut on B's side: B holds one value per slice whatever A is (B = 0·A + c).

The per-slice fit of A on B (:mod:`.affine`) names a cut where A is constant per slice
(s = 0); with the reference given first the constant side is B, and no map of B can give
A.  This member states the relation the other way round, with the same causes.
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair, axis_noun, finite_rows, slice_evidence
from .rounding_model import MIN_FIT, MIN_SLICES, holds, rms, rounding_bound


def on_b(pair: Pair, axis: int) -> tuple[float, Finding] | None:
    """B holds one value per slice along ``axis`` whatever A is (B ≈ 0·A + c): the signal cut
    on B's side, which no map of B can give A (the per-slice fit of A on B sees a constant).
    Named where every slice of B is constant to rounding, A varies in most of them beyond it,
    and B's constants hold (each slice of B within the tolerance of its mean)."""
    got = pair.slices(axis)
    if got is None:
        return None
    along, a, b = got
    ok = finite_rows(a, b)
    if a.shape[1] < MIN_FIT or ok.sum() < MIN_SLICES:
        return None
    along, a, b = along[ok], a[ok], b[ok]
    one = rounding_bound(pair.u, pair.depth) * pair.b_rms
    flat_b = rms(b - b.mean(axis=1, keepdims=True), axis=1) <= one
    varies_a = rms(a - a.mean(axis=1, keepdims=True), axis=1) > 8 * one
    constant = np.broadcast_to(b.mean(axis=1, keepdims=True), b.shape)
    if not (flat_b.all() and varies_a.mean() >= 0.5 and holds(b, constant, pair.tolerance)):
        return None
    n = pair.shape[axis]
    noun = axis_noun(pair.shape, axis)
    c = b[:, 0]
    span = f"c from {float(c.min()):.4g} to {float(c.max()):.4g}"
    message = (
        f"along axis {axis} ({n} {noun}s), B holds one value per {noun} ({span}) whatever A is: "
        "B does not follow A there (s = 0): the signal was cut on B's side"
    )
    where = place(f"every {noun} (axis {axis})", axis=axis, axis_size=n, indices=[int(i) for i in along[:64]],
                  scale=[0.0] * min(len(along), 64), offset=[float(x) for x in c[:64]])
    evidence = slice_evidence(axis, along, np.zeros(len(along)), c)
    return 0.0, Finding("slice_affine", "error", message, where, list(why.CUT), evidence)
