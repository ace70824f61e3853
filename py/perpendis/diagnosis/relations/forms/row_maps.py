"""Row maps on probabilities: both sides are distributions along one axis (non-negative,
summing to 1; or log-probabilities, log-sum-exp 0) and A = normalise(B^τ) along it, the
same τ for every row: a softmax temperature that differs (an attention's 1/√d missing).

τ is fitted from log A − log B's within-row variation (the row's normaliser cancels),
then the map is checked element by element.
"""

from __future__ import annotations

import numpy as np

from ..constants import name_of
from . import implies
from .form import Form, fails_text
from .view import HOLDS, View

SUM_TOL = 1e-3


def _prob_axis(x: np.ndarray) -> tuple[int, bool] | None:
    """The axis along which ``x`` is a distribution, and whether it is held as logs."""
    if x.ndim == 0:
        return None
    finite = np.isfinite(x)
    for ax in range(x.ndim - 1, -1, -1):
        if x.shape[ax] < 2:
            continue
        if np.all(x[finite] >= 0) and finite.all() and np.mean(np.abs(x.sum(axis=ax) - 1) <= SUM_TOL) >= HOLDS:
            return ax, False
        if np.all(x[finite] <= 0):
            with np.errstate(divide="ignore", over="ignore"):
                lse = np.log(np.sum(np.exp(x), axis=ax))
            if np.mean(np.abs(lse) <= SUM_TOL) >= HOLDS:
                return ax, True
    return None


def _normalised(x: np.ndarray, ax: int, logs: bool) -> np.ndarray:
    """softmax (or log_softmax) of ``x`` along ``ax``, computed stably in float64."""
    z = x - np.max(x, axis=ax, keepdims=True)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lse = np.log(np.sum(np.exp(z), axis=ax, keepdims=True))
    return z - lse if logs else np.exp(z - lse)


def softmax_of(view: View) -> Form | None:
    """One side is exactly the softmax (or log_softmax) of the other along an axis: a
    parameter-free row map, tried before any fitted form (a softmax of probabilities is
    nearly affine, and a fitted affine map would hide it)."""
    if not view.whole or not (np.isfinite(view.a).all() and np.isfinite(view.b).all()):
        return None
    for (x, y, lhs, rhs) in ((view.a, view.b, "A", "B"), (view.b, view.a, "B", "A")):
        got = _prob_axis(x)
        if got is None:
            continue
        ax, logs = got
        t = _normalised(y, ax, logs)
        ok = view.close(x, t) if lhs == "A" else view.close(t, x)
        share = float(np.mean(ok))
        if share < HOLDS or share <= view.identity_share:
            continue
        twice = _prob_axis(y) is not None
        fn = "log_softmax" if logs else "softmax"
        params = {"axis": ax, "logs": logs, "of": rhs, "twice": twice}
        text = f"{lhs} = {fn}({rhs}) along axis {ax}"
        return Form("row_softmax", text, params, share, int(ok.size), fails_text(view, ok),
                    implies.causes("row_softmax", params))
    return None


def find(view: View) -> Form | None:
    if not view.whole:
        return None
    pa, pb = _prob_axis(view.a), _prob_axis(view.b)
    if pa is None or pa != pb:
        return None
    ax, logs = pa
    with np.errstate(divide="ignore", invalid="ignore"):
        la, lb = (view.a, view.b) if logs else (np.log(view.a), np.log(view.b))
    both = np.isfinite(la) & np.isfinite(lb)
    # Centre each row over the entries both sides hold, so the normaliser drops out.
    w = both.astype(float)
    cnt = np.maximum(w.sum(axis=ax, keepdims=True), 1)
    ca = la - np.sum(np.where(both, la, 0), axis=ax, keepdims=True) / cnt
    cb = lb - np.sum(np.where(both, lb, 0), axis=ax, keepdims=True) / cnt
    x, y = cb[both], ca[both]
    den = float(np.dot(x, x))
    if x.size < 16 or den == 0:
        return None
    tau = float(np.dot(x, y) / den)
    if not np.isfinite(tau) or abs(tau - 1) < 1e-3 or tau <= 0:
        return None
    z = np.where(np.isfinite(lb), tau * lb, -np.inf)
    z = z - np.max(np.where(np.isfinite(z), z, -np.inf), axis=ax, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        t = z - np.log(np.sum(np.exp(z), axis=ax, keepdims=True)) if logs else (
            np.exp(z) / np.sum(np.exp(z), axis=ax, keepdims=True))
    ok = view.close(view.a, t)
    share = float(np.mean(ok))
    if share < HOLDS or share <= view.identity_share:
        return None
    named = name_of(tau, 1e-4)
    params: dict = {"tau": tau, "axis": ax, "logs": logs}
    if named:
        params["tau_name"] = named
    what = "log_softmax(τ·B)" if logs else "B^τ / Σ B^τ"
    text = (f"A = {what} along axis {ax} with τ = {tau:.6g}{f' (= {named})' if named else ''}: "
            f"the same distributions at temperature 1/τ")
    return Form("row_temperature", text, params, share, int(ok.size), fails_text(view, ok),
                implies.causes("row_temperature", params))


# The values a filter writes where it drops an entry: −inf (transformers' filter_value),
# float32's lowest, −1e9 or −1e4 (masked_fill idioms), and 0 (a sparsified output).
_FILLS = (-np.inf, float(np.finfo(np.float32).min), -1e9, -1e4, 0.0)


def top_k(view: View) -> Form | None:
    """Along the last axis, one side keeps each row's largest values of the other and
    writes one fill value over the rest (A = B where B is among its row's k largest, else
    −inf): a top-k filter when k is the same in every row, a top-p or per-row threshold
    filter when it varies.  Checked element by element: the kept entries equal the other
    side's, every dropped one holds the fill, and no dropped value exceeds a kept one."""
    if not view.whole or len(view.shape) < 1 or view.shape[-1] < 4:
        return None
    for x, y, lhs, rhs in ((view.a, view.b, "A", "B"), (view.b, view.a, "B", "A")):
        got = _kept_largest(view, x, y)
        if got is None:
            continue
        fill, counts = got
        n = view.shape[-1]
        lo, hi = int(counts.min()), int(counts.max())
        params = {"fill": fill, "k_min": lo, "k_max": hi, "axis": len(view.shape) - 1, "n": n, "side": lhs}
        kept = f"its {lo} largest" if lo == hi else f"its largest ({lo} to {hi} of {n} per row)"
        text = (f"{lhs} = {rhs} where {rhs} is among {kept} along axis {len(view.shape) - 1}, and {fill:g} "
                "elsewhere: a filter that keeps each row's largest values")
        return Form("threshold", text, params, 1.0, int(x.size), None, implies.causes("top_k", params))
    return None


def _kept_largest(view: View, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray] | None:
    """(fill, kept per row) when ``x`` is ``y`` on each row's largest entries and one fill
    value elsewhere, with at least one entry dropped in most rows; None otherwise."""
    same = view.close(x, y)
    dropped = ~same
    if not dropped.any() or not np.isfinite(y).all():
        return None
    values = np.unique(x[dropped])
    if values.size != 1 or float(values[0]) not in _FILLS:
        return None
    fill = float(values[0])
    counts = np.sum(same, axis=-1)
    rows = np.any(dropped, axis=-1)
    if np.mean(rows) < HOLDS or counts.min() < 1:
        return None
    kept_min = np.min(np.where(same, y, np.inf), axis=-1)
    dropped_max = np.max(np.where(dropped, y, -np.inf), axis=-1)
    if np.any((dropped_max > kept_min) & rows):
        return None
    return fill, counts


def cumulative(view: View) -> Form | None:
    """One side the running sum of the other along an axis (A = cumsum(B, axis)): a scan
    applied on one side only.  Parameter-free, checked element by element."""
    if not view.whole:
        return None
    for ax, n in enumerate(view.shape):
        if n < 3:
            continue
        for x, y, lhs, rhs in ((view.a, view.b, "A", "B"), (view.b, view.a, "B", "A")):
            t = np.cumsum(y, axis=ax)
            ok = view.close(x, t) if lhs == "A" else view.close(t, x)
            share = float(np.mean(ok))
            if share >= HOLDS and share > view.identity_share:
                params = {"axis": ax, "side": lhs}
                text = f"{lhs} = cumsum({rhs}, axis={ax}): the running sum of {rhs} along axis {ax}"
                return Form("scan", text, params, share, int(ok.size), fails_text(view, ok),
                            implies.causes("scan", params))
    return None
