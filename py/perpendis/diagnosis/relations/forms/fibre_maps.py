"""Fibre maps: A = B @ M + c along the last axis, one fixed small matrix for every fibre, when
no elementwise, index or per-slice map holds: each entry of A a mix of several of B's
(a box format, a colour space).  Fitted by least squares over the fibres, then checked
element by element; a diagonal M (a scale per entry) is the per-slice members' to say.
"""

from __future__ import annotations

import numpy as np

from . import implies
from .form import Form, fails_text
from .view import HOLDS, View

MAX_ENTRIES = 8  # the last axis's length: a box's 4, a colour's 3, a point's 2 or 3
MIN_FIBRES_PER_ENTRY = 4  # fibres per fitted column of M: an exact fit of 4(n + 1) noisy fibres is no chance


def fibre_linear(view: View) -> Form | None:
    """A = B @ M + c along the last axis (or B = A @ M + c), M not diagonal."""
    n = view.shape[-1] if view.shape else 0
    if not view.whole or not 2 <= n <= MAX_ENTRIES:
        return None
    for x, y, lhs, rhs in ((view.b, view.a, "A", "B"), (view.a, view.b, "B", "A")):
        xs, ys = x.reshape(-1, n), y.reshape(-1, n)
        ok = np.isfinite(xs).all(axis=1) & np.isfinite(ys).all(axis=1)
        if ok.sum() < MIN_FIBRES_PER_ENTRY * (n + 1):
            return None
        design = np.hstack([xs[ok], np.ones((int(ok.sum()), 1))])
        if np.linalg.matrix_rank(design) < n + 1:
            continue
        coef, *_ = np.linalg.lstsq(design, ys[ok], rcond=None)
        m, c = coef[:n], coef[n]
        scale = max(float(np.abs(m).max()), 1e-300)
        off = m - np.diag(np.diag(m))
        if float(np.abs(off).max()) <= 1e-6 * scale:
            continue  # a scale per entry: the per-slice members say it
        m = _tidy(m, 1.0)
        c = _tidy(c[None, :], float(np.sqrt(np.mean(xs[ok] ** 2))))[0]
        t = (xs @ m + c).reshape(view.shape)
        judged = view.close(t, view.b) if lhs == "B" else view.close(view.a, t)
        share = float(np.mean(judged))
        if share < HOLDS or share <= view.identity_share:
            continue
        params = {"matrix": m.tolist(), "offset": c.tolist(), "side": lhs, "n": n}
        text = (f"{lhs} = {rhs} @ M + c along the last axis ({n} entries): each entry of {lhs} a fixed mix of "
                f"{rhs}'s, M = {_shown(m)}" + (f", c = {_shown(c[None, :])}" if np.any(c) else ""))
        return Form("fibre_map", text, params, share, int(judged.size), fails_text(view, judged),
                    implies.causes("fibre_map", params))
    return None


def _tidy(m: np.ndarray, unit: float) -> np.ndarray:
    """Entries rounded to 4 decimals of ``unit`` (1 for M, B's RMS for c) where that moves
    them by less than 1e-5 of it: 0.5, −1, 0.299 as written, a fitted 1.6e-6 offset as 0."""
    r = np.round(m / unit, 4) * unit
    return np.where(np.abs(r - m) <= 1e-5 * unit * np.maximum(1.0, np.abs(m) / unit), r, m) + 0.0


def _shown(m: np.ndarray) -> str:
    return "[" + "; ".join(" ".join(f"{v:.4g}" for v in row) for row in m) + "]"
