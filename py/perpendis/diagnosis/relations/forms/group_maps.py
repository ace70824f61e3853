"""Group maps: a relation that holds per block or per group of the index, not globally.

- ``block_constant``: A is constant over runs of k consecutive indices along an axis
  (k×k blocks over two) where B varies, and A follows B elsewhere (correlation ≥ 0.9):
  A was upsampled by repetition where B was interpolated;
- ``sample_offset``: A = B + E with E the same for every index of axis 0 (the samples)
  and varying over at least two other axes: an additive term independent of the input;
- ``group_affine``: A = s_g·B + c_g with one slope and offset per group g: per sample,
  per (sample, run of r consecutive channels), or per fibre along one axis (a pixel's
  channels), the fewest groups that hold; the statistics of a normalisation taken over
  other groups or axes leave exactly this.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from . import implies
from .form import Form, fails_text
from .view import HOLDS, View

MAX_BLOCK = 16
GROUP_CAP = 1 << 21  # elements a grouped fit reads
MIN_PER_GROUP = 24  # elements per group: twelve per fitted parameter


def _block(x: np.ndarray, ax: int) -> tuple[int, float] | None:
    """The run length k of ``x``'s constant blocks along ``ax`` and the share of the
    changes at one phase, or None when ``x`` is not blocked there."""
    n = x.shape[ax]
    if n < 8:
        return None
    d = np.diff(x, axis=ax) != 0
    if d.size == 0 or np.mean(~d) < 0.5:
        return None
    starts = np.nonzero(d)[ax] + 1
    best = None
    for k in range(2, min(MAX_BLOCK, n // 2) + 1):
        counts = np.bincount(starts % k, minlength=k)
        frac = counts.max() / max(starts.size, 1)
        if frac >= 0.9:
            best = (k, float(frac))
    return best


def block_constant(view: View) -> Form | None:
    if not view.whole or view.a.ndim < 1:
        return None
    finite = np.isfinite(view.a) & np.isfinite(view.b)
    if not finite.all() or np.std(view.a) == 0 or np.std(view.b) == 0:
        return None
    if np.corrcoef(view.a.ravel(), view.b.ravel())[0, 1] < 0.9:
        return None
    found = {}
    for ax in range(view.a.ndim):
        ka = _block(view.a, ax)
        if ka is None or _block(view.b, ax) is not None:
            continue
        if np.mean(np.diff(view.b, axis=ax) == 0) > 0.2:
            continue
        found[ax] = ka[0]
    if not found:
        return None
    axes = sorted(found)
    blocks = "×".join(str(found[a]) for a in axes)
    eq_a = float(np.mean([np.mean(np.diff(view.a, axis=a) == 0) for a in axes]))
    eq_b = float(np.mean([np.mean(np.diff(view.b, axis=a) == 0) for a in axes]))
    text = (f"A is constant over blocks of {blocks} along axes {tuple(axes)} where B varies "
            f"({eq_a:.0%} of A's neighbours along them equal, {eq_b:.0%} of B's); A follows B's values block by block")
    params = {"axes": axes, "block": [found[a] for a in axes], "equal_neighbours_a": eq_a, "equal_neighbours_b": eq_b}
    # A structure, not a map: every element is "judged" by whether its block is constant.
    return Form("block_constant", text, params, 1.0, int(view.a.size), None, implies.causes("block_constant", params))


def _groupings(shape: tuple[int, ...]) -> Iterator[tuple[dict, str, np.ndarray]]:
    """(params, description, group id per element), fewest groups first."""
    rank = len(shape)
    idx = np.indices(shape) if math.prod(shape) <= GROUP_CAP else None
    if idx is None or rank < 2:
        return
    out: list[tuple[int, dict, str, np.ndarray]] = []
    if rank >= 3:
        out.append((shape[0], {"per": "sample"}, "one slope and offset per index of axis 0", idx[0]))
        c = shape[1]
        for r in range(c // 2, 1, -1):
            if c % r == 0:
                g = idx[0] * (c // r) + idx[1] // r
                out.append((shape[0] * (c // r), {"per": "sample_group", "groups_of": r, "groups": c // r},
                            f"one slope and offset per (index of axis 0, group of {r} consecutive indices of axis 1: "
                            f"{c // r} groups)", g))
        out.append((shape[0] * c, {"per": "sample_channel"},
                    "one slope and offset per (index of axis 0, index of axis 1)", idx[0] * c + idx[1]))
    for ax in range(rank):
        others = [k for k in range(rank) if k != ax]
        g = np.ravel_multi_index(tuple(idx[k] for k in others), tuple(shape[k] for k in others))
        out.append((math.prod(shape) // shape[ax], {"per": "fibre", "axis": ax},
                    f"one slope and offset per fibre along axis {ax}", g))
    out.sort(key=lambda t: t[0])
    for _, params, text, g in out:
        yield params, text, g


def _runs(s: np.ndarray) -> dict:
    """The longest run r of consecutive channels (axis 1) that share one slope in every
    sample: the groups a group normalisation took its statistics over."""
    c = s.shape[1]
    for r in range(c // 2, 1, -1):
        if c % r:
            continue
        runs = s.reshape(s.shape[0], c // r, r)
        if np.all(np.ptp(runs, axis=2) <= 1e-4 * np.maximum(np.abs(runs).max(axis=2), 1e-12)):
            return {"groups_of": r, "groups": c // r}
    return {}


def _same_for_every_sample(s: np.ndarray, c: np.ndarray, scale: float) -> bool:
    """Whether the per-(sample, group) slopes ``s`` and offsets ``c`` (samples first) are
    one map per group: statistics taken per sample would move them from sample to sample."""
    if s.shape[0] < 2:
        return False
    ds = np.ptp(s, axis=0) <= 0.02 * np.maximum(np.abs(np.median(s, axis=0)), 1e-12)
    dc = np.ptp(c, axis=0) <= 1e-3 * (scale + 1e-300)
    return bool(np.mean(ds & dc) >= 0.9)


NORMALISED = 1e-3  # a group's mean within this of 0 (in its std) and its variance of 1


def _group_facts(x: np.ndarray, y: np.ndarray, g: np.ndarray, ng: int, c: np.ndarray) -> dict:
    """What each side's groups are, for the causes to test: every offset 0 (a scale per
    group), every group of one side of L2 norm 1, normalised (mean 0, variance 1), centred
    (mean 0), of variance at most 1 (normalised with an epsilon)."""
    cnt = np.bincount(g, minlength=ng).astype(float)
    facts: dict = {}
    scale = float(np.sqrt(np.mean(x * x))) + 1e-300
    facts["scale_only"] = bool(np.max(np.abs(c)) <= NORMALISED * scale)
    for side, v in (("a", y), ("b", x)):
        norm = np.sqrt(np.bincount(g, v * v, ng))
        mean = np.bincount(g, v, ng) / cnt
        var = np.bincount(g, v * v, ng) / cnt - mean * mean
        facts[f"unit_norm_{side}"] = bool(np.all(np.abs(norm - 1) <= NORMALISED))
        facts[f"normalised_{side}"] = bool(np.all(np.abs(mean) <= NORMALISED * np.sqrt(np.maximum(var, 0)))
                                           and np.all(np.abs(var - 1) <= 1e-2))
        facts[f"centred_{side}"] = bool(np.all(np.abs(mean) <= NORMALISED * np.sqrt(np.maximum(var, 1e-300))))
        facts[f"variance_at_most_1_{side}"] = bool(np.all(var <= 1 + 1e-2))
    return facts


def group_affine(view: View) -> Form | None:
    if not view.whole or not (np.isfinite(view.a).all() and np.isfinite(view.b).all()):
        return None
    a, b = view.a, view.b
    n = a.size
    for params, text, g in _groupings(view.shape):
        g = g.ravel()
        ng = int(g.max()) + 1
        if ng * MIN_PER_GROUP > n:
            continue
        x, y = b.ravel(), a.ravel()
        cnt = np.bincount(g, minlength=ng).astype(float)
        sx, sy = np.bincount(g, x, ng), np.bincount(g, y, ng)
        sxx, sxy = np.bincount(g, x * x, ng), np.bincount(g, x * y, ng)
        den = cnt * sxx - sx * sx
        with np.errstate(invalid="ignore", divide="ignore"):
            s = np.where(den > 0, (cnt * sxy - sx * sy) / den, 0.0)
        c = (sy - s * sx) / cnt
        t = (s[g] * x + c[g]).reshape(view.shape)
        ok = view.close(a, t)
        share = float(np.mean(ok))
        if share < HOLDS or share <= view.identity_share:
            continue
        if np.ptp(s) < 0.05 * max(abs(float(np.median(s))), 1e-12) and np.ptp(c) < 1e-3 * (np.std(b) + 1e-300):
            return None  # one map for every group: a global one, the elementwise search's
        if params["per"] == "fibre" and not (np.min(s) < 0.95 and np.max(s) > 1.05):
            return None  # per-row factors to one side of 1: a statistic's epsilon, the centred fit's
        if params["per"] in ("sample_group", "sample_channel") and _same_for_every_sample(
                s.reshape(view.shape[0], -1), c.reshape(view.shape[0], -1), float(np.std(b))):
            continue  # one map per channel, whatever the sample: a per-channel relation, not statistics
        if params["per"] == "sample_channel":
            params = params | _runs(s.reshape(view.shape[0], view.shape[1]))
        p = params | {"ndim": view.a.ndim, "slope_range": [float(np.min(s)), float(np.max(s))],
                      "offset_range": [float(np.min(c)), float(np.max(c))], "groups_fitted": ng}
        p |= _group_facts(x, y, g, ng, c)
        form_text = f"A = s·B + c with {text} (slopes {np.min(s):.3g} to {np.max(s):.3g})"
        small = 1e-6 * (float(np.std(b)) + 1e-300)
        kept, zeroed = (np.abs(s - 1) <= 1e-4) & (np.abs(c) <= small), (np.abs(s) <= 1e-4) & (np.abs(c) <= small)
        if (kept | zeroed).all() and zeroed.any():
            p["zeroed"] = int(zeroed.sum())
            form_text = f"A = B except that A is 0 on {int(zeroed.sum())} of {ng} groups ({text})"
        return Form("group_affine", form_text, p, share, int(ok.size), fails_text(view, ok),
                    implies.causes("group_affine", p))
    return None


EXPLAINED = 0.1  # of A − B's RMS the input-independent term may leave


def sample_offset(view: View) -> Form | None:
    """A = B + E with E one array over every axis but the first, the same for every sample
    and not one constant: an additive term that does not depend on the input."""
    if not view.whole or view.a.ndim < 2 or view.shape[0] < 2 or not (
            np.isfinite(view.a).all() and np.isfinite(view.b).all()):
        return None
    if np.all(view.a[view.differing] == 0):
        return None  # A zeroed where it departs: a cut or a mask, not a term added to B
    d = view.a - view.b
    e = np.median(d, axis=0)
    t = view.b + e[None]
    ok = view.close(view.a, t)
    share = float(np.mean(ok))
    if share < HOLDS or share <= view.identity_share:
        return None
    if float(np.sqrt(np.mean((d - e[None]) ** 2))) > EXPLAINED * float(np.sqrt(np.mean(d * d))):
        return None  # E leaves most of A − B: rounding differs from sample to sample, a term would not
    spread = float(np.std(e))
    if spread <= 1e-3 * (float(np.sqrt(np.mean(view.b * view.b))) + 1e-300):
        return None  # one constant: a global offset, the elementwise fit's
    small = 1e-3 * spread
    varying = [ax + 1 for ax in range(e.ndim) if e.shape[ax] > 1 and float(np.max(np.ptp(e, axis=ax))) > small]
    if len(varying) < 2:
        return None  # one value per index of one axis: a per-slice offset, the members'
    params = {"per": "sample_invariant", "axes": varying, "offset_rms": float(np.sqrt(np.mean(e * e)))}
    text = (f"A = B + E, one E (RMS {params['offset_rms']:.3g}) varying over axes {tuple(varying)}, "
            f"the same for all {view.shape[0]} entries of axis 0")
    return Form("sample_offset", text, params, share, int(ok.size), fails_text(view, ok),
                implies.causes("sample_offset", params))


ALS_STEPS = 12


def _lsq2(x1: np.ndarray, x2: np.ndarray, y: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row (``axis`` the summed one) least squares of y on two regressors."""
    a11, a12, a22 = (x1 * x1).sum(axis), (x1 * x2).sum(axis), (x2 * x2).sum(axis)
    b1, b2 = (x1 * y).sum(axis), (x2 * y).sum(axis)
    det = a11 * a22 - a12 * a12
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(det != 0, (a22 * b1 - a12 * b2) / det, 0.0)
        q = np.where(det != 0, (a11 * b2 - a12 * b1) / det, 0.0)
    return p, q


def normalised_fibres(view: View) -> Form | None:
    """A − κ = r·(B − κ) + t·γ: per fibre along a feature axis a factor r and a shift t of
    the normalised values, per feature a centre κ and gain γ (a normalisation's affine,
    kept): the statistics were taken over other axes.  Fitted by alternating least
    squares; stated only when the factors lie on both sides of 1 (one-sided factors close
    to 1 are an epsilon, which the centred row fit names)."""
    if not view.whole or view.a.ndim < 2 or not (np.isfinite(view.a).all() and np.isfinite(view.b).all()):
        return None
    for ax in range(view.a.ndim):
        nf = view.shape[ax]
        if nf < 8:
            continue
        A = np.moveaxis(view.a, ax, -1).reshape(-1, nf)
        B = np.moveaxis(view.b, ax, -1).reshape(-1, nf)
        if A.shape[0] < 16:
            continue
        kappa, gamma = np.zeros(nf), np.zeros(nf)
        ones = np.ones_like(B)
        r, t = _lsq2(B, ones, A, 1)
        gamma[:] = 1.0
        for _ in range(ALS_STEPS):
            r, t = _lsq2(B - kappa, np.broadcast_to(gamma, B.shape), A - kappa, 1)
            k1, gamma = _lsq2(np.broadcast_to((1 - r)[:, None], B.shape), np.broadcast_to(t[:, None], B.shape),
                              A - r[:, None] * B, 0)
            kappa = k1
        T = r[:, None] * (B - kappa) + kappa + t[:, None] * gamma
        ok = view.close(A, T)
        share = float(np.mean(ok))
        if share < HOLDS or share <= view.identity_share:
            continue
        if not (np.min(r) < 0.95 and np.max(r) > 1.05):
            continue
        params = {"per": "fibre", "axis": ax, "factor_range": [float(np.min(r)), float(np.max(r))]}
        text = (f"per fibre along axis {ax}, A − κ = r·(B − κ) + t·γ: one factor r ({np.min(r):.3g} to "
                f"{np.max(r):.3g}) and shift t per fibre, one centre κ and gain γ per index of axis {ax}")
        return Form("group_affine", text, params, share, int(ok.size), None, implies.causes("group_affine", params))
    return None
