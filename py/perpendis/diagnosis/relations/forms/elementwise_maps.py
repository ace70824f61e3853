"""Elementwise forms: A = T(B) (or B = T(A)) for T composed from a few primitives, each
fitted and then checked element by element (:meth:`.view.View.close`).

- ``wrap``: integers that differ by whole multiples of 2^k (a cast to a narrower integer
  type that wrapped);
- ``saturated``: A = B except where B sits at its extreme values, where B is clamped and
  A is not (and, for integers, wrapped around instead);
- ``threshold``: A = B except that A is one constant (0, −inf, NaN) exactly where B lies
  below (or, in magnitude, under) a threshold that separates the two sets;
- ``overflow``: A = B except ±inf exactly where |B| passes a threshold (a narrower
  format's overflow edge, when it pins one);
- ``through_float``: integers A = B rounded to bfloat16, float16 or float32 (ids or counts
  past the format's exact range cast to it and back);
- ``absolute``: A = |B| (either way round);
- ``softcap``: A = c·tanh(B/c) (:mod:`.softcap`);
- ``elementwise_map``: φ(A) = s·ψ(B) + c with φ, ψ each the identity or a logarithm, so
  scales, offsets, affine maps, powers, exp and log, a change of log base, optionally
  followed by a clip to A's held extremes; fitted by least squares on the elements inside
  the clip, the fewest parameters that hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ....numerics.bits import FORMATS, from_float64, to_float64
from . import edges, implies, softcap
from .form import Form, fails_text, stated
from .view import HOLDS, View

MIN_HELD_AT_BOUND = 4  # elements a clip bound must hold to count as one


def wrap(view: View) -> Form | None:
    """Integers that differ by whole multiples of 2^k: a cast to a k-bit integer type."""
    if not view.integer:
        return None
    finite = np.isfinite(view.a) & np.isfinite(view.b)
    d = (view.b - view.a)[finite]
    if not np.any(d):
        return None
    for k in (32, 16, 8):
        m = 2.0**k
        if np.all(np.mod(d, m) == 0):
            lo, hi = float(np.min(view.a[finite])), float(np.max(view.a[finite]))
            signed = lo < 0 or (hi < m / 2 and np.any(view.b[finite] < 0))
            kind_name = f"int{k}" if signed else f"uint{k}"
            text = (f"A = B wrapped to {kind_name} (B − A is a multiple of 2^{k} everywhere, "
                    f"non-zero on {int(np.count_nonzero(d))} elements)")
            t = view.a.copy()  # the relation holds exactly where it was tested
            return stated(view, "wrap", text, {"bits": k, "signed": signed, "type": kind_name}, t)
    return None


def saturated(view: View) -> Form | None:
    """A = B except where B sits at its smallest or largest value: B clamps there and A
    does not (an integer A past the bound wrapped around instead).  A bound counts only
    where B holds it on many elements, and B must take values between its bounds: a
    mask of 0 and 1 is no clamped signal."""
    diff = view.differing & np.isfinite(view.a) & np.isfinite(view.b)
    if np.count_nonzero(diff) < 2:
        return None
    lo, hi = float(np.nanmin(view.b)), float(np.nanmax(view.b))
    held_lo = np.count_nonzero(view.b == lo) >= MIN_HELD_AT_BOUND
    held_hi = np.count_nonzero(view.b == hi) >= MIN_HELD_AT_BOUND
    at_lo, at_hi = diff & (view.b == lo) & held_lo, diff & (view.b == hi) & held_hi
    explained = at_lo | at_hi
    if np.count_nonzero(explained) < HOLDS * np.count_nonzero(diff):
        return None
    if np.count_nonzero((view.b > lo) & (view.b < hi)) < max(MIN_HELD_AT_BOUND, 0.1 * view.b.size):
        return None
    beyond = bool(np.all(view.a[at_lo] < lo) and np.all(view.a[at_hi] > hi))
    wrapped = view.integer and not beyond and bool(
        (not at_hi.any() or np.median(view.a[at_hi]) < (lo + hi) / 2)
        and (not at_lo.any() or np.median(view.a[at_lo]) > (lo + hi) / 2))
    if not (beyond or wrapped):
        return None
    bounds = [x for x, m in ((lo, at_lo), (hi, at_hi)) if m.any()]
    b_text = " and ".join(f"{x:g}" for x in bounds)
    how = ("wraps around past the range (small values where B holds its top, large where B holds its bottom)"
           if wrapped else "goes beyond it")
    shown_lo, shown_hi = (lo if held_lo else None), (hi if held_hi else None)
    clamp = f"[{lo:g}, {hi:g}]" if held_lo and held_hi else f"at least {lo:g}" if held_lo else f"at most {hi:g}"
    text = f"A = B except where B holds its bound {b_text} (B clamped to {clamp}); there A {how}"
    t = np.where(explained, view.a, view.b)
    params = {"lo": shown_lo, "hi": shown_hi, "wrapped": wrapped, "n_at_bound": int(np.count_nonzero(explained))}
    if shown_lo is not None and shown_hi is None and at_lo.any():
        # How far A reaches past the bound against how far B reaches above it (99th
        # percentiles): a dropped ReLU leaves A's negatives as large as its positives; a
        # LeakyReLU (0.01x), an ELU (above −1), GELU or SiLU squeeze them.
        above = view.b[view.b > lo] - lo
        reach = float(np.quantile(lo - view.a[at_lo], 0.99))
        params["past_ratio"] = reach / max(float(np.quantile(above, 0.99)), 1e-300)
    return stated(view, "saturated", text, params, t)


def threshold(view: View) -> Form | None:
    """A = B except that A is one constant exactly where B is below a threshold (or under
    one in magnitude): a flush, a mask or an underflow."""
    diff = view.differing
    if np.count_nonzero(diff) < 2:
        return None
    av = view.a[diff]
    v = av[0]
    if not (np.all(av == v) or (np.isnan(v) and np.all(np.isnan(av)))):
        return None
    rest = ~diff & np.isfinite(view.b) & ~(view.b == v)
    bd = view.b[diff]
    if not np.all(np.isfinite(bd)) or not rest.any():
        return None
    if np.all(bd == bd[0]) and not np.any(view.b[~diff] == bd[0]):
        # One value of B replaced by one of A's, wherever it stands: no threshold to pin.
        params = {"value": float(v), "b_value": float(bd[0]), "on": "B"}
        text = f"A = B except that A = {v:g} exactly where B = {bd[0]:g} ({int(np.count_nonzero(diff))} elements)"
        return stated(view, "threshold", text, params, np.where(diff, view.a, view.b))
    for name, key in (("B", lambda x: x), ("|B|", np.abs)):
        below, above = float(np.max(key(bd))), float(np.min(key(view.b[rest])))
        if below < above:
            params = {"value": float(v), "below": below, "above": above, "on": name}
            tname = edges.threshold_name(below, above)
            at = f" = {tname}" if tname else ""
            text = (f"A = B except that A = {v:g} wherever {name} < t{at}, t between {below:.6g} and {above:.6g} "
                    f"({int(np.count_nonzero(diff))} elements)")
            if tname == "0" and v == 0 and name == "B":
                text = f"A = max(B, 0), a ReLU: {text}"
            if tname:
                params["threshold"] = tname
            return stated(view, "threshold", text, params, np.where(diff, view.a, view.b))
        if name == "B" and float(np.min(bd)) > float(np.max(view.b[rest])):
            # Above a threshold: a value mask (masked_fill where B > t), no flush.
            below, above = float(np.max(view.b[rest])), float(np.min(bd))
            at_bound = below <= v or bool(view.close(np.array([below]), np.array([v]))[0])
            if at_bound and v <= above:
                return None  # the constant is the threshold (to the tolerance): a clamp, the clip member's
            params = {"value": float(v), "below": below, "above": above, "on": "B", "side": "above"}
            text = (f"A = B except that A = {v:g} wherever B > t, t between {below:.6g} and {above:.6g} "
                    f"({int(np.count_nonzero(diff))} elements)")
            return stated(view, "threshold", text, params, np.where(diff, view.a, view.b))
    return None


def overflow(view: View) -> Form | None:
    """A = B except that A is ±inf, with B's sign, exactly where |B| exceeds a threshold
    that separates the two sets: an overflow, named when the threshold pins a format's edge."""
    inf = np.isinf(view.a) & np.isfinite(view.b)
    rest = np.isfinite(view.a) & np.isfinite(view.b)
    if np.count_nonzero(inf) < 2 or not rest.any() or np.any(np.sign(view.a[inf]) != np.sign(view.b[inf])):
        return None
    below, above = float(np.max(np.abs(view.b[rest]))), float(np.min(np.abs(view.b[inf])))
    if below >= above:
        return None
    params: dict = {"value": math.inf, "below": below, "above": above, "on": "|B|", "side": "above"}
    fmt = edges.overflow_name(below, above)
    if fmt is not None:
        params["overflow"] = fmt
    text = (f"A = B except that A = ±inf (with B's sign) wherever |B| > t, t between {below:.6g} and {above:.6g}"
            f"{f' = {fmt} overflow' if fmt else ''} ({int(np.count_nonzero(inf))} elements)")
    return stated(view, "threshold", text, params, np.where(inf, view.a, view.b))


def _spread(mask: np.ndarray) -> bool:
    """Whether ``mask`` is set in at least half the indices of every axis: signs spread over
    the tensor, as a signed signal's are, not a few rows negated (a sign flip of a region,
    which the region says better, also leaves |A| = B when B is positive)."""
    for ax in range(mask.ndim):
        if mask.shape[ax] > 1:
            other = tuple(i for i in range(mask.ndim) if i != ax)
            if np.mean(np.any(mask, axis=other)) < 0.5:
                return False
    return True


def through_float(view: View) -> Form | None:
    """Integers A = B rounded to a float format (or B = A rounded), the narrowest that
    holds: such a format holds every integer only up to 2^(mantissa bits + 1), so larger
    ids or counts lose their low bits when cast to it and back."""
    if not view.integer or not np.any(view.differing):
        return None
    for name in ("bfloat16", "float16", "float32"):
        fmt = FORMATS[name]
        for flip in (False, True):
            with np.errstate(over="ignore", invalid="ignore"):
                t = to_float64(from_float64(view.a if flip else view.b, fmt), fmt)
            names = ("B", "A") if flip else ("A", "B")
            exact = 2 ** (fmt.man_bits + 1)
            params = {"map": "through_float", "format": name, "exact_to": exact, "reversed": flip}
            text = f"{names[0]} = {names[1]} rounded to {name} (which holds every integer only up to {exact:,})"
            got = stated(view, "elementwise_map", text, params, view.b if flip else t, lhs=t if flip else None)
            if got is not None:
                return got
    return None


def absolute(view: View) -> Form | None:
    """A = |B| (or B = |A|): one side's signs dropped where the other keeps them."""
    for flip in (False, True):
        a, b = (view.b, view.a) if flip else (view.a, view.b)
        finite = np.isfinite(a) & np.isfinite(b)
        if not (np.any(b[finite] < 0) and np.all(a[finite] >= 0)) or not _spread(b < 0):
            continue
        names = ("B", "A") if flip else ("A", "B")
        got = stated(view, "elementwise_map", f"{names[0]} = |{names[1]}|", {"map": "abs", "reversed": flip},
                      view.b if flip else np.abs(view.b), lhs=np.abs(view.a) if flip else None)
        if got is not None:
            return got
    return None


Side = tuple[str, Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]
_ID: Side = ("", lambda x: x, lambda y: y)
_LOG: Side = ("log", np.log, np.exp)


def _fit(x: np.ndarray, y: np.ndarray, free_s: bool, free_c: bool) -> tuple[float, float]:
    """Least squares, refitted twice on the elements it explains best: a few elements the
    map does not hold on (a clip bound held once, a wrapped value) must not pull it."""
    keep = np.ones(x.size, bool)
    s, c = _lsq(x, y, free_s, free_c)
    for _ in range(2):
        r = np.abs(y - (s * x + c))
        cut = max(4 * float(np.median(r)), 1e-300)
        keep = r <= cut
        if keep.sum() < max(16, 0.9 * x.size):
            break
        s, c = _lsq(x[keep], y[keep], free_s, free_c)
    return s, c


def _lsq(x: np.ndarray, y: np.ndarray, free_s: bool, free_c: bool) -> tuple[float, float]:
    if free_s and free_c:
        with np.errstate(over="ignore", invalid="ignore"):
            mx, my = float(np.mean(x)), float(np.mean(y))
            den = float(np.dot(x - mx, x - mx))
            s = float(np.dot(x - mx, y - my)) / den if den and math.isfinite(den) else math.nan
        return s, my - s * mx
    if free_s:
        den = float(np.dot(x, x))
        return (float(np.dot(x, y)) / den if den else 1.0), 0.0
    return 1.0, float(np.mean(y - x))


def _describe(lhs: str, rhs: str, s: float, c: float, free_s: bool, free_c: bool, rel: float) -> tuple[str, dict]:
    from ..constants import name_of

    params: dict = {}
    parts = []
    if free_s:
        named = name_of(s, rel)
        params["scale"] = s
        if named:
            params["scale_name"] = named
        parts.append(f"{s:.6g}{f' (= {named})' if named else ''}·{rhs}")
    else:
        parts.append(rhs)
    if free_c:
        named = name_of(c, rel)
        params["offset"] = c
        if named:
            params["offset_name"] = named
        parts.append(f"{'−' if c < 0 else '+'} {abs(c):.6g}{f' (= {named})' if named else ''}")
    return f"{lhs} = {' '.join(parts)}", params


def _clip_bounds(y: np.ndarray) -> tuple[float | None, float | None]:
    """A's held extremes: its min or max when many elements sit exactly on it."""
    lo, hi = float(np.min(y)), float(np.max(y))
    n = y.size
    need = max(MIN_HELD_AT_BOUND, int(0.005 * n))
    return (lo if np.count_nonzero(y == lo) >= need else None, hi if np.count_nonzero(y == hi) >= need else None)


def _kind(params: dict) -> str:
    """``scale``, ``offset`` or ``affine`` for a plain linear map (the kinds the report has
    always used for them), ``elementwise_map`` for one through a log or a clip."""
    if params["lhs"] == params["rhs"] == "id" and "clip_lo" not in params:
        return "affine" if "scale" in params and "offset" in params else "scale" if "scale" in params else "offset"
    return "elementwise_map"


def _near_identity(view: View, x: np.ndarray, s: float, c: float) -> bool:
    """Whether s·x + c is too close to x to be told from it at this tolerance: within twice
    the tolerance always, within 16 times it while the identity itself holds on most
    elements (a fit to rounding).  A scale of 256/255 (an unbiased variance) fails every
    element at rtol 1e-3, and the fit then passes them all: that is a relation."""
    limit = 16 if view.identity_share >= 0.5 else 2
    return abs(s - 1) <= limit * view.rtol and abs(c) <= limit * (
        view.atol + view.rtol * float(np.sqrt(np.mean(x * x))))


def _between_bounds(a: np.ndarray, ok: np.ndarray, clip: bool) -> tuple[float | None, float | None, np.ndarray]:
    """A's held extremes (a clip's bounds, when ``clip``) and the elements between them, which
    the map is fitted on; with nothing left between (a mask of 0 and 1), no clip is fitted."""
    lo, hi = _clip_bounds(a[ok]) if clip else (None, None)
    inside = ok.copy()
    if lo is not None:
        inside &= a != lo
    if hi is not None:
        inside &= a != hi
    if np.count_nonzero(inside) < 16:
        return None, None, ok.copy()
    return lo, hi, inside


def _one_way(view: View, flip: bool, fa: Side, fb: Side) -> Form | None:
    a, b = (view.b, view.a) if flip else (view.a, view.b)
    names = ("B", "A") if flip else ("A", "B")
    ok = np.isfinite(a) & np.isfinite(b)
    if fa is _LOG:
        ok &= a > 0
    if fb is _LOG:
        ok &= b > 0
    if np.count_nonzero(ok) < max(16, 0.95 * a.size):
        return None
    lo, hi, inside = _between_bounds(a, ok, fa is _ID)
    x, y = fb[1](b[inside]), fa[1](a[inside])
    options = ((True, False), (False, True), (True, True)) if fa is _ID and fb is _ID else ((True, False), (True, True))
    lhs = f"{fa[0]} {names[0]}".strip() if fa[0] else names[0]
    rhs = f"{fb[0]} {names[1]}".strip() if fb[0] else names[1]
    for free_s, free_c in options:
        s, c = _fit(x, y, free_s, free_c)
        if not (math.isfinite(s) and math.isfinite(c)) or s == 0:
            continue
        if fa is _ID and fb is _ID and _near_identity(view, x, s, c):
            continue
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            t = fa[2](s * fb[1](np.where(ok, b, 1.0)) + c)
        t = np.where(ok, t, a)
        share = float(np.mean(view.close(a, t)[ok]))
        clip_lo, clip_hi = lo, hi
        if lo is not None or hi is not None:
            clipped = np.clip(t, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
            clipped_share = float(np.mean(view.close(a, clipped)[ok]))
            if clipped_share > share:  # a clip only where the map without it fails at the bounds
                t, share = clipped, clipped_share
            else:
                clip_lo = clip_hi = None
        if share < HOLDS or share <= view.identity_share:
            continue
        resid = y - (s * x + c)
        rel = max(1e-6, float(np.sqrt(np.mean(resid**2)) / (abs(s) * (np.sqrt(np.mean(x**2)) + 1e-300))
                              / math.sqrt(max(x.size, 1))) * 4)
        text, params = _describe(lhs, rhs, s, c, free_s, free_c, rel)
        params["fit_rel"] = rel
        if clip_lo is not None or clip_hi is not None:
            lo_t, hi_t = ("−inf" if clip_lo is None else f"{clip_lo:g}"), ("inf" if clip_hi is None else f"{clip_hi:g}")
            text = f"{names[0]} = clip({text.split(' = ', 1)[1]}, {lo_t}, {hi_t})"
            params |= {"clip_lo": clip_lo, "clip_hi": clip_hi}
        params |= {"lhs": fa[0] or "id", "rhs": fb[0] or "id", "reversed": flip, "sizes": sorted(set(view.shape)),
                   "integer": view.integer,
                   "range": [float(np.min(a[ok])), float(np.max(a[ok]))]}
        form_ok = view.close(a, t)
        causes = implies.causes("elementwise_map", params)
        fails = fails_text(view, form_ok) if view.whole else None
        return Form(_kind(params), text, params, share, int(np.count_nonzero(ok)), fails, causes)
    return None


def fitted_map(view: View) -> Form | None:
    """The first φ(A) = s·ψ(B) + c (either way round) that holds: identities before logs,
    fewer parameters first."""
    if view.integer and not np.any(view.a != np.round(view.a)):
        pass  # integers may still be scaled (an int8 zero point); the fit decides
    for fa, fb in ((_ID, _ID), (_LOG, _LOG), (_LOG, _ID), (_ID, _LOG)):
        for flip in ((False,) if (fa is fb) else (False, True)):
            got = _one_way(view, flip, fa, fb)
            if got is not None:
                return got
    return None


FORMS = (wrap, through_float, saturated, threshold, overflow, absolute, softcap.find, fitted_map)


def find(view: View) -> Form | None:
    for form in FORMS:
        got = form(view)
        if got is not None:
            return got
    return None
