"""Scale and offset relations: A ≈ s·B + c globally, per slice along an axis (a channel, a
feature) or per fibre across it (a row normalised on its own).

A least-squares fit of s and c is the test.  A relation holds where it leaves at most
:data:`~.rounding_model.EXPLAINED` of the raw RMS difference, over at least
:data:`~.rounding_model.MIN_FIT` elements per fit; rounding noise, having no linear relation to B,
leaves all of it.  What it explains is systematic, not rounding, when its size exceeds
the rounding a quantity reduced over the slice could carry (:func:`~.rounding_model.rounding_bound`
with ``m`` the reduction's length), or when the per-slice deviations share one sign beyond
:data:`~.rounding_model.Z` (rounding's have random signs) while exceeding one rounding at ``depth``.
"""

from __future__ import annotations

import math

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from . import centring, cut, region
from .constants import image_sizes, name_of
from .pair import Pair, axis_noun, finite_rows, slice_evidence
from .rounding_model import EXPLAINED, MIN_FIT, MIN_SLICES, Z, holds, rms, rounding_bound, sign_z

# A global map that leaves more than this share of the raw difference describes it but
# names no cause (the slice fits, one constant per slice, keep theirs up to EXPLAINED).
CAUSE_RESIDUAL = 0.10


def fit_rows(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of two 2-D arrays, the least-squares ``a ≈ s·b + c``: (s, c, RMS residual,
    RMS raw difference, RMS of the fitted deviation ``s·b + c − b``)."""
    mb, ma = b.mean(axis=1, keepdims=True), a.mean(axis=1, keepdims=True)
    db = b - mb
    vb = np.mean(db * db, axis=1)
    cov = np.mean(db * (a - ma), axis=1)
    flat = vb <= 1e-300
    s = np.where(flat, 1.0, cov / np.where(flat, 1.0, vb))
    c = ma[:, 0] - s * mb[:, 0]
    fitted = s[:, None] * b + c[:, None]
    return s, c, rms(a - fitted, axis=1), rms(a - b, axis=1), rms(fitted - b, axis=1)  # type: ignore[return-value]


def _systematic(dev: np.ndarray, signed: np.ndarray, bound: float, one: float) -> np.ndarray | None:
    """Which rows' deviations are systematic: past ``bound`` each, or all of one sign
    beyond Z and past one rounding ``one``.  None when neither holds for the pattern."""
    big = dev > bound
    if big.any():
        return big
    if abs(sign_z(signed)) > Z and float(np.median(dev)) > one:
        return np.ones(dev.shape, dtype=bool)
    return None


def _global(pair: Pair) -> list[tuple[Finding, float]]:
    a, b = pair.values()
    if a.size < MIN_FIT or pair.b_rms <= 0:
        return []
    s, c, resid, raw, dev = (x[0] for x in fit_rows(a[None, :], b[None, :]))
    one = rounding_bound(pair.u, pair.depth)
    if raw == 0 or resid > EXPLAINED * raw or dev / pair.b_rms <= one:
        return []
    has_scale = abs(s - 1) > one
    has_offset = abs(c) / pair.b_rms > one
    if not (has_scale or has_offset):
        return []
    spread, axis = _fibre_spread(pair, s)
    amount: dict[str, float] = {}
    if has_scale:
        amount["scale"] = float(s)
    if has_offset:
        amount["offset"] = float(c)
    rel = f"residual {resid / raw:.1%} of the raw difference"
    loose = resid > CAUSE_RESIDUAL * raw or not holds(a, s * b + c, pair.tolerance)
    if has_scale and not has_offset and abs(s + 1) <= one:
        kind, rule, causes = "sign_flip", "A ≈ −B", list(why.SIGN_FLIP)
    elif has_scale and not has_offset:
        named = name_of(float(s), 1e-4)
        kind, rule = "scale", f"A ≈ B × {s:.5g}" + (f" (= {named})" if named else "")
        causes = why.for_scale(float(s), pair.shape)
    elif has_offset and not has_scale:
        kind, rule = "offset", f"A ≈ B {'+' if c >= 0 else '−'} {abs(c):.6g}"
        causes = why.OFFSET
    else:
        kind, rule = "affine", f"A ≈ B × {s:.6g} {'+' if c >= 0 else '−'} {abs(c):.6g}"
        causes = why.for_scale(float(s), pair.shape) + why.OFFSET
    if axis is not None:
        n = pair.shape[axis]
        text = f"every row along axis {axis} ({n} elements)"
        message = f"along axis {axis} ({n} elements), each row of {rule} (spread {spread:.2g}; {rel})"
        where = place(text, axis=axis, axis_size=n, **amount, spread=spread)
    elif not pair.in_memory:
        # Only the differing elements were sampled: the map holds on them, which may be
        # one region of the tensor (a row scaled), never known to hold everywhere.
        message, where = _on_differing(pair, rule, rel, amount)
    else:
        message = f"{rule} everywhere ({rel})"
        where = place(None, **amount)  # everywhere: no place, only the amount
    if loose:
        # Two constants fitted over the whole tensor leave a fifth of a small perturbation
        # unexplained whatever it was, or more than rounding (a softmax appended to logits):
        # the map describes it, it does not identify it.
        message += "; the map does not hold to the tolerance, so no known cause fits"
        causes = []
    return [(Finding(kind, "error", message, where, causes), float(resid / raw))]


def _on_differing(pair: Pair, rule: str, rel: str, amount: dict[str, float]) -> tuple[str, dict]:
    """Message and place of a map fitted on the differing elements alone."""
    found = region.of_sample(pair.shape, pair.diff_flat)
    if found is None:
        text = f"on the {pair.n_diff} differing elements of {pair.n_elements}"
        return f"{rule} {text} ({rel})", place(text, **amount)
    axis, indices = found
    text = region.describe(pair.shape, axis, indices)
    message = f"in {text}, {rule}; every sampled difference lies there ({rel})"
    return message, place(text, axis=axis, axis_size=pair.shape[axis], indices=indices[:64], **amount)


def _fibre_spread(pair: Pair, s: float) -> tuple[float, int | None]:
    """The spread of the per-row scale along the last axis, for a global scale's message."""
    if not pair.shape or pair.shape[-1] < MIN_FIT:
        return 0.0, None
    got = pair.fibres(len(pair.shape) - 1)
    if got is None:
        return 0.0, None
    _, a, b = got
    ok = finite_rows(a, b)
    if not ok.any():
        return 0.0, None
    rows = fit_rows(a[ok], b[ok])
    return float(np.std(rows[0])), len(pair.shape) - 1


def _per_slice(pair: Pair, axis: int, mode: str) -> tuple[float, Finding] | None:
    """The per-slice (``mode="slice"``) or per-fibre relation along ``axis``, with its
    residual share, or None where none holds."""
    got = pair.slices(axis) if mode == "slice" else pair.fibres(axis)
    n = pair.shape[axis]
    if got is None:
        return None
    along, a, b = got
    ok = finite_rows(a, b)
    if a.shape[1] < MIN_FIT or ok.sum() < MIN_SLICES:
        return None
    if mode == "slice":
        along, a, b = along[ok], a[ok], b[ok]
    else:
        a, b = a[ok], b[ok]
    s, c, resid, raw, dev = fit_rows(a, b)
    total_raw = float(rms(raw))
    if total_raw == 0:
        return None
    share = float(rms(resid)) / total_raw
    if share > EXPLAINED:
        return None
    m = math.prod(pair.shape) / n if mode == "slice" else max(pair.shape)
    scale = np.maximum(rms(b, axis=1), pair.b_rms)
    rel_dev = dev / scale
    one = rounding_bound(pair.u, pair.depth)
    signed = np.where(np.abs(s - 1) * rms(b, axis=1) >= np.abs(c), s - 1, c)
    bound = rounding_bound(pair.u, pair.depth, m)
    hit = _systematic(rel_dev, signed, bound, one)
    if hit is None:
        return None
    if mode == "fibre":
        with_offset = bool(np.any(np.abs(c[hit]) / pair.b_rms > one))
        fits = holds(a[hit], s[hit, None] * b[hit] + c[hit, None], pair.tolerance)
        return share, _fibre_finding(pair, axis, (s, c, hit), share, with_offset, fits)
    found = _slice_finding(pair, axis, along, (a, b), (s, c, resid), hit, share)
    return None if found is None else (share, found)


def _slice_finding(
    pair: Pair,
    axis: int,
    along: np.ndarray,
    sides: tuple[np.ndarray, np.ndarray],
    fit: tuple[np.ndarray, np.ndarray, np.ndarray],
    hit: np.ndarray,
    share: float,
) -> Finding | None:
    """The finding of a per-slice map along ``axis`` (``fit``: each slice's scale, offset
    and RMS residual; ``hit``: the slices whose deviation is systematic): the simplest map
    that explains them (offset, scale, both, or a sign flip), or None when every slice has
    one and the same map, which the global fit says better."""
    (a, b), (s, c, resid) = sides, fit
    n = pair.shape[axis]
    one = rounding_bound(pair.u, pair.depth)
    bound = rounding_bound(pair.u, pair.depth, math.prod(pair.shape) / n)
    varies_scale = float(np.std(s[hit])) > one if hit.sum() > 1 else False
    varies_offset = float(np.std(c[hit])) / pair.b_rms > one if hit.sum() > 1 else False
    with_scale = bool(np.any(np.abs(s[hit] - 1) > one))
    with_offset = bool(np.any(np.abs(c[hit]) / pair.b_rms > one))
    if hit.all() and not (varies_scale or varies_offset):
        return None  # one relation for every slice: the global fit says it better
    if with_scale and with_offset:
        with_scale, with_offset = _fewest_parameters(a[hit], b[hit], float(rms(resid[hit])) + one * pair.b_rms)
    kind = "slice_affine" if with_scale and with_offset else ("slice_scale" if with_scale else "slice_offset")
    if kind in ("slice_scale", "slice_affine") and np.all(np.abs(s[hit] + 1) <= bound):
        kind = "sign_flip"  # A ≈ −B (+ c): a negated weight or gain, whose bias stays
    zeroed = kind in ("slice_affine", "slice_scale") and bool(np.all(np.abs(s[hit]) <= bound))
    message, where, evidence = _slice_text(pair, axis, along, kind, (s, c), hit, share, with_offset)
    causes = why.for_slices(kind, pair.shape, axis)
    if kind == "slice_scale" and (sizes := image_sizes(pair.shape, axis, s[hit])):
        causes = [why.COORDINATES.format(sizes=" and ".join(str(v) for v in sizes))]
    if kind == "slice_affine" and hit.all() and (named := why.named_normalisation(s, c)):
        causes = [named]
    if kind == "slice_affine" and not holds(a[hit], s[hit, None] * b[hit] + c[hit, None], pair.tolerance):
        # Two constants per slice explain most of any perturbation that later layers spread
        # over features (an input scaled, a LayerNorm's weight doubled mid-graph): such a
        # map names a cause only where it holds to rounding.  One constant per slice (an
        # offset, a scale) is held to EXPLAINED, as a bias changed mid-graph leaves it.
        message += "; the map does not hold to the tolerance, so no known cause fits"
        causes = []
    elif kind == "slice_offset" and (centred := centring.subtracted_statistic(pair, axis)) is not None:
        side, statistic = centred
        x, y = ("A", "B") if side == "A" else ("B", "A")
        message = (f"along axis {axis} ({n} {axis_noun(pair.shape, axis)}s), {x} = {y} − {statistic}({y}) over each "
                   f"{axis_noun(pair.shape, axis)}: {side} has its {statistic} subtracted, within the tolerance")
        causes = [why.SUBTRACTED[statistic].format(side=side)]
    elif kind in ("slice_offset", "slice_scale") and not holds(a[hit], s[hit, None] * b[hit] + c[hit, None],
                                                                 pair.tolerance):
        message += ("; the map does not hold to the tolerance on 99% of elements: it describes the difference, "
                    "not a relation")
    elif zeroed:
        # s = 0: A holds one value per slice whatever B is, which no per-slice constant
        # (a BatchNorm statistic, a mean) explains: the signal itself was cut.
        message += "; A does not follow B there (s = 0): the signal was cut"
        causes = list(why.CUT)
    return Finding(kind, "error", message, where, causes, evidence)


def _slice_text(
    pair: Pair,
    axis: int,
    along: np.ndarray,
    kind: str,
    fit: tuple[np.ndarray, np.ndarray],
    hit: np.ndarray,
    share: float,
    with_offset: bool,
) -> tuple[str, dict, dict]:
    """The message, ``where`` and evidence of a per-slice map of ``kind`` (``fit``: each
    slice's scale and offset) on the slices ``hit`` along ``axis``."""
    s, c = fit
    n = pair.shape[axis]
    indices = along[hit]
    every = bool(hit.all()) and len(along) == n
    noun = axis_noun(pair.shape, axis)
    shown = ", ".join(str(int(i)) for i in indices[:8]) + (", …" if len(indices) > 8 else "")
    which = f"every {noun}" if every else f"{noun}{'s' if len(indices) > 1 else ''} {shown}"
    rule = {
        "sign_flip": "A ≈ −B, a sign flip" if not with_offset else f"A ≈ −B + c, a sign flip with c {_span(c[hit])}",
        "slice_scale": f"A ≈ s × B with s {_span(s[hit])}",
        "slice_offset": f"A ≈ B + c with c {_span(c[hit])}",
        "slice_affine": f"A ≈ s·B + c with s {_span(s[hit])} and c {_span(c[hit])}",
    }[kind]
    message = (
        f"along axis {axis} ({n} {noun}s), in {which} {rule}, one value per {noun} "
        f"(residual {share:.1%} of the raw difference)"
    )
    where = place(
        f"{which} (axis {axis})",
        axis=axis,
        axis_size=n,
        indices=[int(i) for i in indices[:64]],
        scale=[float(x) for x in s[hit][:64]],
        offset=[float(x) for x in c[hit][:64]],
    )
    return message, where, slice_evidence(axis, along, s, c)


def _fewest_parameters(a: np.ndarray, b: np.ndarray, floor: float) -> tuple[bool, bool]:
    """(scale, offset) of the simplest per-slice map that leaves no more than twice what
    the full map leaves (``floor``: its RMS residual plus one rounding): an offset alone,
    else a scale alone, else both.  A map fitted with both always finds a little of each;
    naming an affine map where a bias alone explains it sends the user to the wrong cause
    (BatchNorm, where a bias was dropped)."""
    offset_only = a - b - np.mean(a - b, axis=1, keepdims=True)
    if float(rms(offset_only)) <= 2 * floor:
        return False, True
    s = np.sum(a * b, axis=1, keepdims=True) / np.maximum(np.sum(b * b, axis=1, keepdims=True), 1e-300)
    if float(rms(a - s * b)) <= 2 * floor:
        return True, False
    return True, True


def _span(x: np.ndarray) -> str:
    lo, hi = float(np.min(x)), float(np.max(x))
    return f"= {lo:.4g}" if f"{lo:.4g}" == f"{hi:.4g}" else f"from {lo:.4g} to {hi:.4g}"


def _fibre_finding(
    pair: Pair, axis: int, fit: tuple[np.ndarray, np.ndarray, np.ndarray], share: float, with_offset: bool,
    fits: bool,
) -> Finding:
    """Each row along ``axis`` its own map of B's: one constant scale when the per-row factors
    agree to a tenth of their distance from 1 (the unbiased variance), a per-row scale when
    they differ (an epsilon that weighs more on low-variance rows), else a per-row offset.
    ``fit`` is each row's scale and offset and the rows that depart; causes are named only
    when the rows' maps hold to the tolerance (``fits``): a map that leaves a quarter of the
    difference unexplained describes it and implies nothing."""
    finding = _fibre_described(pair, axis, fit, share, with_offset)
    if not fits:
        finding.message += "; the map does not hold to the tolerance, so no known cause fits"
        finding.causes = []
    return finding


def _fibre_described(
    pair: Pair, axis: int, fit: tuple[np.ndarray, np.ndarray, np.ndarray], share: float, with_offset: bool
) -> Finding:
    s, c, hit = fit
    n = pair.shape[axis]
    noun = axis_noun(pair.shape, axis)
    rows = int(hit.sum())
    sh, ch = s[hit], c[hit]
    mean, spread = float(np.mean(sh)), float(np.std(sh))
    scaled = bool(np.any(np.abs(sh - 1) * pair.b_rms > np.abs(ch)))
    evidence = {
        "picture": "per_slice",
        "axis": axis,
        "index": list(range(min(len(s), 256))),
        "scale": s.tolist()[:256],
        "offset": c.tolist()[:256],
    }
    text = f"every row along axis {axis} ({n} {noun}s)"
    common = f"{rows} of {len(s)} sampled rows; residual {share:.1%} of the raw difference"
    if scaled and not with_offset and spread <= 0.1 * abs(mean - 1):
        message = f"along axis {axis} ({n} {noun}s), each row of A is B × {mean:.5g} (spread {spread:.2g}; {common})"
        where = place(text, axis=axis, axis_size=n, scale=mean, spread=spread)
        return Finding("scale", "error", message, where, why.for_scale(mean, pair.shape), evidence)
    if scaled:
        side = "below" if np.median(sh) < 1 else "above"
        message = (
            f"along axis {axis} ({n} {noun}s), each row of A is that row of B scaled by its own factor "
            f"({np.min(sh):.6g} to {np.max(sh):.6g}, mostly {side} 1{', with an offset' if with_offset else ''}; "
            f"{common})"
        )
        where = place(text, axis=axis, axis_size=n, scale=[float(x) for x in s[:64]], spread=spread)
        return Finding("row_scale", "error", message, where, list(why.ROW_SCALE), evidence)
    message = (
        f"along axis {axis} ({n} {noun}s), each row of A is that row of B plus its own offset "
        f"({np.min(ch):.4g} to {np.max(ch):.4g}; {common})"
    )
    where = place(text, axis=axis, axis_size=n, offset=[float(x) for x in c[:64]])
    return Finding("row_offset", "error", message, where, list(why.ROW_OFFSET), evidence)


def find(pair: Pair) -> list[Finding]:
    """The best-fitting scale/offset relation: global, unless one per slice or per row
    explains the difference four times better (:func:`_per_axis`)."""
    found = _global(pair)
    if not pair.in_memory or not pair.shape:
        return [f for f, _ in found]
    local = _per_axis(pair)
    if not found:
        return [] if local is None else [local[1]]
    if local is not None and local[0] * 4 < found[0][1]:
        return [local[1]]
    return [found[0][0]]


def _per_axis(pair: Pair) -> tuple[float, Finding] | None:
    """The per-slice or per-fibre relation that says most: the one with the fewest fitted
    values (one per channel beats one per row within each channel, which any per-channel
    map also fits), then the smaller residual, slices before fibres at a tie; unless a
    richer one leaves less than half its residual (a LayerNorm epsilon changed scales each
    row of A by its own factor, which one scale per token fits only roughly)."""
    found: list[tuple[tuple[int, bool, float], Finding]] = []
    for axis, n in enumerate(pair.shape):
        if n < MIN_SLICES and n < MIN_FIT:
            continue
        for mode in ("slice", "fibre"):
            if mode == "slice" and (n < MIN_SLICES or len(pair.shape) < 2):
                continue
            if mode == "fibre" and n < MIN_FIT:
                continue
            got = _per_slice(pair, axis, mode)
            if got is None and mode == "slice":
                got = cut.on_b(pair, axis)
            if got is not None:
                fits = n if mode == "slice" else math.prod(pair.shape) // n
                found.append(((fits, mode != "slice", got[0]), got[1]))
    if not found:
        return None
    found.sort(key=lambda x: x[0])
    best = found[0]
    for other in found[1:]:
        if 2 * other[0][2] < best[0][2]:
            best = other
    return best[0][2], best[1]
