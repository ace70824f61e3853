"""Normalisations: is A a normalisation of B (or B of A) along one axis, or are both
normalised, each along its own axis?

Members, each tried along every axis whose whole fibres the pair's view holds (up to
1024 elements): softmax, log-softmax, L2 normalisation, a division by the fibre's sum (of
non-negative fibres), and a plain layer norm (mean 0,
variance 1, epsilon below the rounding); then, composed with one gain (and bias) per index
of that axis, a layer norm or RMS norm with its elementwise affine (a LayerNorm applied
twice, or kept on one side only).  Each is computed from the other side's fibre
and must match to the rounding allowed (8·u·depth of the fibre's scale) on 99 % of the
sampled fibres.  Failing that, a side whose fibres all sum to 1 (or all have L2 norm 1)
along one axis while the other's do along another is a softmax (an L2 normalisation) over
a different axis.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...report.model import Finding, place
from . import causes as why
from .pair import Pair, finite_rows
from .rounding_model import ROUNDOFF_FACTOR

HOLD_SHARE = 0.99
MIN_FIBRES = 8
MIN_LENGTH = 4  # with fewer fibres, each this long
MIN_VALUES = 16  # and this many values over all of them
Fn = Callable[[np.ndarray], np.ndarray]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _l2(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.sqrt(np.sum(x * x, axis=1, keepdims=True)), 1e-12)


def _layer_norm(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    c = x - x.mean(axis=1, keepdims=True)
    return c / np.sqrt(np.mean(c * c, axis=1, keepdims=True) + eps)


def _rms_norm(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps)


def _sum_normalised(x: np.ndarray) -> np.ndarray:
    """Non-negative fibres divided by their sum (NaN for fibres with a negative value)."""
    total = x.sum(axis=1, keepdims=True)
    ok = np.all(x >= 0, axis=1, keepdims=True) & (total > 0)
    return np.where(ok, x / np.where(total > 0, total, 1.0), np.nan)


MAPS: dict[str, Fn] = {"softmax": _softmax, "log_softmax": _log_softmax, "L2 normalisation": _l2,
                       "sum normalisation": _sum_normalised, "layer norm": _layer_norm}
# Normalisations composed with one gain (and, for a layer norm, one bias) per index of the
# normalised axis: LayerNorm's and RMSNorm's elementwise affine, fitted by least squares
# per index over the sampled fibres.
GAINED: dict[str, tuple[Callable[[np.ndarray, float], np.ndarray], bool]] = {
    "layer norm": (_layer_norm, True), "RMS norm": (_rms_norm, False)}
EPSILONS = (1e-12, 1e-6, 1e-5)  # the norms' epsilons in use (BERT's; Llama's and T5's; PyTorch's default)
MIN_GAINED_FIBRES = 8  # fibres per fitted gain and bias
MIN_GAINED_LENGTH = 8  # and their length: a layer norm of a short fibre takes few values, which a gain fits
GAIN_FLOOR = 1e-3  # every gain this share of the largest: a zero gain is a signal cut, not a normalisation
SPREAD_FLOOR = 1e-6  # every fibre's statistic this share of their mean: a constant fibre has no normal form
SPREAD_ACROSS = 1e-3  # each index's normalised values must vary this much across fibres, to fit its gain


def _normalisable(x: np.ndarray, centred: bool) -> bool:
    """Whether every fibre has a statistic to normalise by (a variance, or a mean of squares)."""
    c = x - x.mean(axis=1, keepdims=True) if centred else x
    stat = np.mean(c * c, axis=1)
    mean = float(np.mean(stat))
    return bool(np.isfinite(mean) and mean > 0 and np.all(stat > SPREAD_FLOOR * mean))


def _gained(y: np.ndarray, n: np.ndarray, with_bias: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per index k of the fibres, ``y[:, k] ≈ g_k·n[:, k] (+ β_k)`` by least squares: (g, β, prediction)."""
    if with_bias:
        mn, my = n.mean(axis=0), y.mean(axis=0)
        dn = n - mn
        g = np.sum(dn * (y - my), axis=0) / np.maximum(np.sum(dn * dn, axis=0), 1e-300)
        beta = my - g * mn
    else:
        g = np.sum(n * y, axis=0) / np.maximum(np.sum(n * n, axis=0), 1e-300)
        beta = np.zeros_like(g)
    return g, beta, g * n + beta


def _gained_finding(pair: Pair, axis: int, a: np.ndarray, b: np.ndarray, bound: float) -> Finding | None:
    """A (or B) a layer norm or RMS norm of the other side along ``axis`` with its own gain
    (and bias) per index of that axis: a normalisation applied twice, or on one side only,
    with its elementwise affine kept.  Needs :data:`MIN_GAINED_FIBRES` fibres."""
    if a.shape[0] < MIN_GAINED_FIBRES or a.shape[1] < MIN_GAINED_LENGTH:
        return None
    for name, (f, with_bias), eps in ((k, v, e) for k, v in GAINED.items() for e in EPSILONS):
        for y, x, ys, xs in ((a, b, "A", "B"), (b, a, "B", "A")):
            if not _normalisable(x, centred=with_bias):
                continue
            with np.errstate(all="ignore"):
                n = f(x, eps)
                if not np.all(np.std(n, axis=0) > SPREAD_ACROSS):
                    continue  # an index the same in every fibre (one token type) leaves its gain free
                g, beta, pred = _gained(y, n, with_bias)
                gains = np.abs(g)
                if not (gains.min() > GAIN_FLOOR * gains.max() > 0) or not _holds(y, pred, bound):
                    continue
            told = "" if eps == EPSILONS[0] else f", ε = {eps:g}"  # named only where the smallest does not hold
            affine = "g·" + name + f"({xs}{told})" + (" + β" if with_bias else "")
            text = f"{ys} = {affine} along axis {axis}, one g{' and β' if with_bias else ''} per index of that axis"
            spans = f"g from {float(g.min()):.4g} to {float(g.max()):.4g}" + (
                f", β from {float(beta.min()):.4g} to {float(beta.max()):.4g}" if with_bias else "")
            where = place(f"every fibre along axis {axis}", axis=axis, axis_size=pair.shape[axis])
            where["relation"] = {"kind": "normalisation", "text": text,
                                 "params": {"map": name, "axis": axis, "gain": True, "bias": with_bias, "eps": eps}}
            message = f"{text} ({spans}), to rounding on {HOLD_SHARE:.0%} of sampled fibres"
            return Finding("normalisation", "error", message, where, list(why.NORMALISATION["gained"]))
    return None


def _fibres(pair: Pair, axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    got = pair.fibres(axis)
    if got is None or got[1].shape[1] != pair.shape[axis]:
        return None
    _, a, b = got
    ok = finite_rows(a, b)
    # Few fibres are enough when they are long enough together: a softmax matched to
    # rounding on 2 rows of 10 logits is 20 values of a nonlinear map, no coincidence.
    enough = ok.sum() >= MIN_FIBRES or (a.shape[1] >= MIN_LENGTH and ok.sum() * a.shape[1] >= MIN_VALUES)
    return (a[ok], b[ok]) if enough else None


def _holds(y: np.ndarray, pred: np.ndarray, bound: float) -> bool:
    scale = np.maximum(np.abs(y), np.sqrt(np.mean(y * y, axis=1, keepdims=True)))
    return bool(np.mean(np.abs(y - pred) <= bound * scale) >= HOLD_SHARE)


def _unit_rms(x: np.ndarray) -> bool:
    """Whether the fibres (rows) of ``x`` have RMS 1 to an epsilon's effect and are not
    centred: RMS-normalised, where a layer norm's output (RMS 1 too) has mean 0."""
    rms = np.sqrt(np.mean(x * x, axis=1))
    return bool(np.mean(np.abs(rms - 1) <= 1e-2) >= HOLD_SHARE and np.median(np.abs(np.mean(x, axis=1))) > 0.05)


def _normalised_already(x: np.ndarray) -> bool:
    """Whether the fibres of ``x`` are centred with RMS within 1 % of 1: a layer norm's output
    already, so a layer norm of it moves it only through the epsilon."""
    rms = np.sqrt(np.mean(x * x, axis=1))
    centred = np.abs(np.mean(x, axis=1)) <= 1e-3 * np.maximum(rms, 1e-300)
    return bool(np.mean(centred & (np.abs(rms - 1) <= 1e-2)) >= HOLD_SHARE)


def _sums_to_one(x: np.ndarray, bound: float) -> bool:
    return bool(np.all(x >= 0) and np.mean(np.abs(x.sum(axis=1) - 1) <= bound * np.sqrt(x.shape[1])) >= HOLD_SHARE)


def _unit_norm(x: np.ndarray, bound: float) -> bool:
    """Whether the fibres (rows) of ``x`` have L2 norm 1 to a reduction's rounding: an
    L2 normalisation (``F.normalize``) along that axis."""
    return bool(np.mean(np.abs(np.sqrt(np.sum(x * x, axis=1)) - 1) <= bound * np.sqrt(x.shape[1])) >= HOLD_SHARE)


def find(pair: Pair) -> list[Finding]:
    """The normalisation relation that holds, as a finding, or none."""
    if not pair.in_memory or not pair.fmt.is_float or not pair.shape:
        return []
    bound = ROUNDOFF_FACTOR * pair.u * pair.depth * 4  # a reduction's rounding on top of the map's
    fibres = {axis: _fibres(pair, axis) for axis, n in enumerate(pair.shape) if 2 <= n <= 1024}
    fibres = {k: v for k, v in fibres.items() if v is not None}
    for axis, (a, b) in fibres.items():
        if _holds(a, b, bound):
            continue  # equal along this axis already: nothing to explain here
        for name, f in MAPS.items():
            for y, x, ys, xs in ((a, b, "A", "B"), (b, a, "B", "A")):
                with np.errstate(all="ignore"):
                    if _holds(y, f(x), bound):
                        text = (f"{ys} = {xs} / Σ{xs} along axis {axis}" if name == "sum normalisation"
                                else f"{ys} = {name}({xs}) along axis {axis}")
                        where = place(f"every fibre along axis {axis}", axis=axis, axis_size=pair.shape[axis])
                        where["relation"] = {"kind": "normalisation", "text": text,
                                             "params": {"map": name, "axis": axis}}
                        message = f"{text}, to rounding on {HOLD_SHARE:.0%} of sampled fibres"
                        causes = list(why.NORMALISATION[name])
                        if name == "layer norm" and _unit_rms(x):
                            message += f"; {xs}'s fibres already have RMS 1 but not mean 0"
                            causes = list(why.NORMALISATION["rms against layer"])
                        elif name == "layer norm" and _normalised_already(x):
                            message += (f"; {xs}'s fibres already have mean 0 and RMS 1 to an epsilon's effect: "
                                        "both sides are normalised")
                            causes = list(why.NORMALISATION["layer norm"][1:])
                        return [Finding("normalisation", "error", message, where, causes)]
    for axis, (a, b) in fibres.items():
        if not _holds(a, b, bound) and (found := _gained_finding(pair, axis, a, b, bound)) is not None:
            return [found]
    for norm, test in (("sum to 1", _sums_to_one), ("have L2 norm 1", _unit_norm)):
        on_a = [k for k, (a, _) in fibres.items() if test(a, bound)]
        on_b = [k for k, (_, b) in fibres.items() if test(b, bound)]
        if len(on_a) == 1 and len(on_b) == 1 and on_a != on_b:
            ia, ib = on_a[0], on_b[0]
            text = f"A is normalised along axis {ia} and B along axis {ib}"
            where = place(f"axis {ia} against axis {ib}", axis=ia, axis_size=pair.shape[ia])
            where["relation"] = {"kind": "normalisation_axis", "text": text,
                                 "params": {"a_axis": ia, "b_axis": ib, "norm": norm}}
            message = f"{text}: each side's fibres {norm} along its own axis only"
            return [Finding("normalisation", "error", message, where, list(why.NORMALISATION["axis"]))]
    return []
