"""Rotations within feature pairs: is each pair of features of A a rotation of B's?

A rotary embedding turns feature pairs by an angle that depends on the position; one that
differs (another base, positions offset, the halves paired against interleaved pairs)
leaves A's pairs rotated against B's: their values differ, their norms do not, in most of
the pairs (a sign flipped in one feature keeps its pairs' norms too, but turns only them).  Two
pairings are tried along the last axis, ``(i, i + d/2)`` (Llama, GPT-NeoX) and
``(2i, 2i + 1)`` (GPT-J); the relation holds when the pair norms agree to rounding on 99 %
of sampled pairs while at least :data:`MIN_MOVED` pairs moved beyond it, and not every
element kept its size (then only signs changed: :func:`_signs_only`).
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair, finite_rows
from .rounding_model import ROUNDOFF_FACTOR

MIN_MOVED = 16
HOLD_SHARE = 0.99


def _pairings(d: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    half = np.arange(d // 2)
    return [("halves (i, i + d/2)", half, half + d // 2), ("interleaved (2i, 2i + 1)", 2 * half, 2 * half + 1)]


def _signs_only(a: np.ndarray, b: np.ndarray, allowed: np.ndarray) -> bool:
    """Whether A and B differ only in signs, element by element (|A| = |B| to rounding on
    :data:`HOLD_SHARE` of them): −B, |B|, a sign flipped per feature.  Such a change keeps
    every pair norm too, but a rotation by any angle but π mixes the pair's two values and
    changes each one's size."""
    return bool(np.mean(np.abs(np.abs(a) - np.abs(b)) <= allowed) >= HOLD_SHARE)


def find(pair: Pair) -> list[Finding]:
    """The rotation relation along the last axis, as a finding, or none."""
    if not pair.in_memory or not pair.fmt.is_float or len(pair.shape) < 2 or pair.shape[-1] % 2:
        return []
    d = pair.shape[-1]
    got = pair.fibres(len(pair.shape) - 1)
    if got is None or got[1].shape[1] != d:
        return []
    _, a, b = got
    ok = finite_rows(a, b)
    a, b = a[ok], b[ok]
    if not a.size:
        return []
    bound = ROUNDOFF_FACTOR * pair.u * pair.depth
    if _signs_only(a, b, bound * np.maximum(np.abs(b), pair.b_rms)):
        return []
    for name, i, j in _pairings(d):
        na, nb = np.hypot(a[:, i], a[:, j]), np.hypot(b[:, i], b[:, j])
        scale = np.maximum(np.maximum(na, nb), pair.b_rms)
        moved = np.hypot(a[:, i] - b[:, i], a[:, j] - b[:, j]) > 4 * bound * scale
        kept = np.abs(na - nb) <= bound * scale
        # A rotary embedding turns most pairs; a sign flipped or a value changed in a few
        # features also keeps some pair norms, but turns only those features' pairs.
        spread = np.mean(moved.any(axis=0))
        if moved.sum() >= MIN_MOVED and kept.mean() >= HOLD_SHARE and spread >= 0.5:
            angle = np.arctan2(a[:, i] * b[:, j] - a[:, j] * b[:, i], a[:, i] * b[:, i] + a[:, j] * b[:, j])
            message = (
                f"each feature pair {name} of A is B's rotated: the pair norms agree to rounding on "
                f"{kept.mean():.0%} of sampled pairs while {moved.mean():.0%} turned (up to "
                f"{float(np.max(np.abs(angle))):.3g} rad)"
            )
            where = place(f"feature pairs {name} along axis {len(pair.shape) - 1}", axis=len(pair.shape) - 1,
                          axis_size=d, max_angle=float(np.max(np.abs(angle))))
            where["relation"] = {"kind": "rotation", "text": f"A = R(θ)·B on feature pairs {name}",
                                 "params": {"pairing": name}, "residual": float(np.quantile(
                                     np.abs(na - nb) / scale, HOLD_SHARE) / (2 * pair.u)), "held": int(moved.sum())}
            return [Finding("rotation", "error", message, where, list(why.ROTATION))]
    return []
