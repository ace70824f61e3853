"""A per-row scale about a per-feature centre: ``A − κ = r·(B − κ)``, with ``r`` one factor
per row (a fibre along the last axis) and ``κ`` one value per feature.

A normalisation whose statistic differs (an epsilon, a variance) scales each row of its
normalised values by the row's own factor; its gain and bias, and any affine layer after
it (a classifier head), carry that scale about the bias, not about zero.  So the per-row
fit ``A = s·B + c`` of :mod:`.affine` (one offset per row) leaves part of it,
and the per-row scale of a bias-free head (``κ = 0``) is the special case.

Fitted by alternating least squares (``r`` given ``κ``, then ``κ`` given ``r``) on the
sampled fibres.  It names the normalisation's statistic only when the map is that and
nothing simpler: every row moved beyond rounding and in the same direction (a statistic
that differs moves every row one way), the rows' factors differing (one factor for all is
a global map, which the affine fit says), the fit leaving at most :data:`MAX_LEFT` of
``|A − B|`` beyond what as many constants leave by chance, and holding to the tolerance.
Rows of B that hardly differ (a ResNet's two samples' logits, 4e-4 apart) admit the fit
for any difference whose rows are proportional, with a centre they cannot pin: B must vary
across the rows by :data:`MIN_PIN` of its distance from the centre.  Factors that are one
per index of another axis (a batch norm's per-channel scale, NCHW, read row by row along W)
are a per-slice map with fewer constants, which the affine fit names.
"""

from __future__ import annotations

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair, axis_noun, finite_rows
from .rounding_model import holds, rounding_bound

ITERATIONS = 30
MAX_LEFT = 0.01  # share of |A − B| the map may leave, over the share constants leave by chance
MIN_SPREAD = 0.02  # the rows' factors differ by at least this share of their mean distance from 1
MIN_SPARE = 8  # values beyond the fitted constants (one per row, one per feature)
BEYOND = 4.0  # every row's factor is this many roundings from 1
MIN_PIN = 0.1  # B varies across rows by this share of its distance from the centre
PER_INDEX = 0.01  # rows' factors that vary within an index of another axis by at most this share


def fit(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Rows of ``a`` and ``b`` (2-D): (``u = r − 1`` per row, ``κ`` per column, the share of
    ``|A − B|`` the map leaves over the share its constants leave of a random difference)."""
    d = a - b
    kappa = b.mean(axis=0)
    u = np.zeros(a.shape[0])
    for _ in range(ITERATIONS):
        c = b - kappa
        u = np.sum(d * c, axis=1) / np.maximum(np.sum(c * c, axis=1), 1e-300)
        kappa = np.sum(u[:, None] * (u[:, None] * b - d), axis=0) / max(float(np.sum(u * u)), 1e-300)
    rest = d - u[:, None] * (b - kappa)
    size = float(np.linalg.norm(d))
    chance = np.sqrt(max(1.0 - (a.shape[0] + a.shape[1]) / d.size, 1e-12))
    return u, kappa, float(np.linalg.norm(rest)) / size / chance if size > 0 else 1.0


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def _per_index(r: np.ndarray, where: tuple[np.ndarray, ...]) -> bool:
    """Whether the rows' factors are one value per index of another axis (a per-channel
    scale of a batch norm's output, NCHW, seen row by row along W): that map has fewer
    constants, and the per-slice fit of :mod:`.affine` names it.  Only axes
    whose indices each hold two rows or more can say so."""
    spread = float(np.std(r))
    for index in where:
        groups, inverse = np.unique(index, return_inverse=True)
        if len(groups) < 2 or 2 * len(groups) > len(r):
            continue
        means = np.bincount(inverse, r) / np.bincount(inverse)
        if float(np.std(r - means[inverse])) <= PER_INDEX * spread:
            return True
    return False


def _rows(pair: Pair) -> tuple[int, np.ndarray, np.ndarray, tuple[np.ndarray, ...]] | None:
    """The last axis, its sampled fibres (A rows, B rows), finite, with values to spare,
    and where those rows lie on the other axes."""
    if not pair.in_memory or pair.printed or not pair.fmt.is_float or len(pair.shape) < 2:
        return None
    axis = len(pair.shape) - 1
    got = pair.fibres(axis)
    if got is None:
        return None
    _, a, b = got
    ok = finite_rows(a, b)
    a, b = a[ok], b[ok]
    if a.shape[0] < 2 or a.size - a.shape[0] - a.shape[1] < MIN_SPARE:
        return None
    where = tuple(index[ok] for index in pair.fibre_index(axis))
    return axis, a, b, where


def find(pair: Pair) -> list[Finding]:
    """The per-row scale about a per-feature centre, as a finding (at most one)."""
    got = _rows(pair)
    if got is None:
        return []
    axis, a, b, where = got
    one = rounding_bound(pair.u, pair.depth)
    scale = np.maximum(np.sqrt(np.mean(b * b, axis=1)), pair.b_rms)
    if np.any(np.sqrt(np.mean(np.square(a - b), axis=1)) <= BEYOND * one * scale):
        return []  # a row left as it was: no statistic that moves every row (one row scaled)
    u, kappa, left = fit(a, b)
    moved = np.all(np.abs(u) > BEYOND * one) and (np.all(u > 0) or np.all(u < 0))
    spread = float(np.std(u)) / max(float(np.mean(np.abs(u))), 1e-300)
    pinned = _rms(np.std(b, axis=0)) >= MIN_PIN * _rms(b - kappa)
    if not moved or spread < MIN_SPREAD or left > MAX_LEFT or not pinned or _per_index(u, where):
        return []
    if not holds(a, b + u[:, None] * (b - kappa), pair.tolerance):
        return []
    n = pair.shape[axis]
    noun = axis_noun(pair.shape, axis)
    r = 1 + u
    side = "below" if u[0] < 0 else "above"
    message = (
        f"along axis {axis} ({n} {noun}s), each row of A is that row of B scaled by its own factor about one "
        f"centre per {noun}: A − κ = r·(B − κ), r from {r.min():.6g} to {r.max():.6g} (every row {side} 1; "
        f"{len(r)} sampled rows; the map leaves {left:.2%} of the difference beyond chance): a normalisation "
        "whose statistic differs, its gain and bias (or the layer after it) kept"
    )
    where = place(f"every row along axis {axis} ({n} {noun}s)", axis=axis, axis_size=n,
                  scale=[float(x) for x in r[:64]], spread=float(np.std(r)))
    where["relation"] = {"kind": "centred_row_scale", "text": "A − κ = r·(B − κ)",
                         "params": {"axis": axis, "centre": [float(x) for x in kappa[:64]]}, "held": int(a.size)}
    return [Finding("row_scale", "error", message, where, list(why.ROW_SCALE))]
