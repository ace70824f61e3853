"""Elementwise maps: is A = f(B), or B = f(A), to rounding, for a map f ML code applies?

The members are the maps models and their exports apply to each number on its own:
powers (x², x³, √x, 1/x, 1/√x, or a fitted exponent), exp and log, an activation applied
on one side only (ReLU, GELU, SiLU, sigmoid, tanh, softplus, ...), one activation against
a variant of it (GELU tanh against erf, QuickGELU, hardswish against SiLU, ...; compared
as ``f_a(f_b⁻¹(B))`` on the branch where ``f_b`` is invertible), and casts through a
narrower format (bfloat16, float16, float8, an integer by rounding or truncation).
Scale, offset and affine maps, which also hold per slice or per row, are fitted by
:mod:`.affine`; clipping by :mod:`.clip`.

A map *holds* when it leaves at most the rounding the data's own format allows (the
bound of :mod:`.rounding_model`, plus B's rounding carried through the map by
its slope) on 99 % of the sampled elements that the identity does not explain; it must
explain at least :data:`MIN_HELD` elements, so a map that agrees with the identity
wherever the two sides are equal (ReLU on positive values) is never credited with
elements it did not need to explain.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from ...numerics.bits import FORMATS, Format, from_float64, to_float64
from ...numerics.format_evidence import says_format
from .rounding_model import ROUNDOFF_FACTOR

HOLD_SHARE = 0.99  # share of the unexplained elements the map must explain
SEARCH_CAP = 2048  # sampled pairs a search reads (evenly strided): its cost stays flat
MIN_HELD = 16  # elements the identity fails on, which the map must explain
JUDGED_SHARE = 0.3  # share of those a variant map must be able to judge (invertible there)

_erf = np.vectorize(math.erf, otypes=[float])
Fn = Callable[[np.ndarray], np.ndarray]


_K = math.sqrt(2 / math.pi)  # GELU tanh's constant


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * x))


ACTIVATIONS: dict[str, Fn] = {
    "ReLU": lambda x: np.maximum(x, 0.0),
    "GELU": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "GELU_tanh": lambda x: 0.5 * x * (1 + np.tanh(_K * (x + 0.044715 * x**3))),
    "QuickGELU": lambda x: x * _sigmoid(1.702 * x),
    "SiLU": lambda x: x * _sigmoid(x),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "sigmoid": _sigmoid,
    "hardsigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "tanh": np.tanh,
    "softplus": lambda x: np.logaddexp(x, 0.0),
    "Mish": lambda x: x * np.tanh(np.logaddexp(x, 0.0)),
    "ELU": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
    "LeakyReLU_0.01": lambda x: np.where(x > 0, x, 0.01 * x),
}
# What each is in the user's terms (GELU_tanh is nn.GELU(approximate="tanh")).
DESCRIBED = {
    "GELU": "GELU (exact, erf)",
    "GELU_tanh": "GELU's tanh approximation",
    "QuickGELU": "QuickGELU, x·sigmoid(1.702x)",
    "SiLU": "SiLU, x·sigmoid(x)",
    "LeakyReLU_0.01": "LeakyReLU with slope 0.01",
}
# Activations that stand in for one another: each against each, both ways.
VARIANTS = [
    ("GELU", "GELU_tanh", "QuickGELU", "SiLU"),
    ("SiLU", "hardswish"),
    ("sigmoid", "hardsigmoid"),
    ("ReLU", "LeakyReLU_0.01", "ELU", "softplus"),
]
CASTS = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
_GRID = np.linspace(-10.0, 10.0, 40001)


@dataclass(frozen=True)
class Relation:
    """A relation found: ``text`` in the user's terms ("A = exp(B)"), ``kind`` its family,
    ``params`` its constants, ``residual`` the 99th percentile of what it leaves, in ULP,
    ``held`` the elements it explains of those the identity fails on."""

    kind: str
    text: str
    params: dict[str, object] = field(default_factory=dict)
    residual: float = 0.0
    held: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "text": self.text, "params": dict(self.params),
                "residual": self.residual, "held": self.held}


@dataclass(frozen=True)
class Sample:
    """Finite sampled pairs (A, B) with what rounding allows each: ``u`` the unit roundoff
    of the data's format, ``depth`` the roundings between the sides, ``rms`` B's RMS (a sum
    that cancels keeps the rounding of its terms)."""

    a: np.ndarray
    b: np.ndarray
    u: float
    depth: float
    rms: float

    def allowed(self, y: np.ndarray, x: np.ndarray, slope: np.ndarray | float = 0.0) -> np.ndarray:
        """Rounding allowed in ``y`` predicted from ``x``: ``y``'s own, and ``x``'s carried by ``slope``."""
        bound = ROUNDOFF_FACTOR * self.u * self.depth
        return bound * (np.maximum(np.abs(y), self.rms) + np.abs(slope) * np.maximum(np.abs(x), self.rms))


def _judge(s: Sample, y: np.ndarray, x: np.ndarray, pred: np.ndarray, slope: np.ndarray | float,
           unexplained: np.ndarray) -> tuple[int, float] | None:
    """(elements held, residual in ULP) when ``y ≈ pred`` holds on the unexplained elements
    it can judge, else None.  The residual is the 99th percentile of ``|y - pred|`` in
    units in the last place of ``max(|y|, B's RMS)``."""
    ok = np.isfinite(pred)
    judged = unexplained & ok
    n = int(judged.sum())
    if n < MIN_HELD or n < JUDGED_SHARE * int(unexplained.sum()) or np.ptp(y[judged]) == 0:
        return None  # y one value wherever judged (all zero): any map that collapses there fits it
    allowed = s.allowed(y, x, slope)
    left = np.abs(y - pred)[judged] / allowed[judged]
    if np.mean(left <= 1.0) < HOLD_SHARE or np.mean(np.abs(y - pred)[ok] <= allowed[ok]) < HOLD_SHARE:
        return None
    ulps = np.abs(y - pred)[judged] / (2 * s.u * np.maximum(np.abs(y[judged]), s.rms))
    return n, float(np.quantile(ulps, HOLD_SHARE))


def _slope(f: Fn, x: np.ndarray) -> np.ndarray:
    h = 1e-6 * np.maximum(1.0, np.abs(x))
    with np.errstate(all="ignore"):
        return (f(x + h) - f(x - h)) / (2 * h)


@cache
def _branch(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(f(x), x) over the increasing branch of activation ``name`` on which it is inverted:
    from its minimum up, above every value the branch left of the minimum takes (GELU's
    small negative values come from two inputs), where the slope is at least 0.05 (steep
    enough to invert)."""
    f = ACTIVATIONS[name]
    y = f(_GRID)
    start = int(np.argmin(y))
    left = float(np.max(y[:start])) if start else -np.inf
    x, y = _GRID[start:], y[start:]
    x, y = x[y > left], y[y > left]
    steep = _slope(f, x) >= 0.05
    x, y = x[steep], y[steep]
    keep = np.concatenate(([True], np.diff(y) > 0))
    return y[keep], x[keep]


def _inverse(name: str, y: np.ndarray) -> np.ndarray:
    """``f⁻¹(y)`` on the steep increasing branch (NaN outside it), refined by Newton steps."""
    fy, fx = _branch(name)
    inside = (y > fy[0]) & (y < fy[-1])
    x = np.interp(y, fy, fx)
    f = ACTIVATIONS[name]
    for _ in range(2):
        with np.errstate(all="ignore"):
            x = x - (f(x) - y) / _slope(f, x)
    return np.where(inside, x, np.nan)


def _below_branch_fits(s: Sample, params: dict, y: np.ndarray, x: np.ndarray, unexplained: np.ndarray) -> bool:
    """Whether the elements a variant ``f_a(f_b⁻¹(x))`` cannot invert, where ``x`` lies under
    ``f_b``'s steep branch, hold values ``f_a`` takes on the inputs below it.  They are not
    judged, but they still bound ``y``: under ReLU(softplus⁻¹(x)) an ``x`` near 0 has ``y``
    = 0, and a ``y`` of 0.2 there (a mask inverted between two softmaxes) refutes the map."""
    low = unexplained & (x <= _branch(str(params["instead_of"]))[0][0])
    if not low.any():
        return True
    lo, hi = _below_branch(str(params["activation"]), str(params["instead_of"]))
    room = s.allowed(y, x)[low]
    inside = (y[low] >= lo - room) & (y[low] <= hi + room)
    return float(np.mean(inside)) >= HOLD_SHARE


@cache
def _below_branch(a_name: str, b_name: str) -> tuple[float, float]:
    """The range ``f_a`` takes on the inputs below ``f_b``'s steep branch: one per pair of
    activations, computed once (GELU's erf is a Python call per grid point)."""
    start = _branch(b_name)[1][0]
    below = ACTIVATIONS[a_name](_GRID[: int(np.searchsorted(_GRID, start, side="right"))])
    return float(np.min(below)), float(np.max(below))


def _candidates() -> list[tuple[str, str, dict[str, object], Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]]]:
    """(kind, map text with X for the argument, params, x -> (prediction, slope)) of every
    parameter-free map, the most specific first."""
    out: list = []

    def plain(f: Fn) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        return lambda x: (f(x), _slope(f, x))

    with np.errstate(all="ignore"):
        out.append(("exp", "exp(X)", {}, plain(np.exp)))
        out.append(("exp", "2^X", {}, plain(np.exp2)))
        for p, text in ((2, "X²"), (3, "X³"), (-1, "1/X"), (0.5, "√X"), (-0.5, "1/√X")):
            out.append(("power", text, {"exponent": p}, plain(lambda x, p=p: np.power(x, p))))
    for name, f in ACTIVATIONS.items():
        out.append(("activation", f"{name}(X)", {"activation": name}, plain(f)))
    for family in VARIANTS:
        for a_name in family:
            for b_name in family:
                if a_name == b_name:
                    continue
                fa = ACTIVATIONS[a_name]

                def variant(y: np.ndarray, fa: Fn = fa, b_name: str = b_name) -> tuple[np.ndarray, np.ndarray]:
                    x = _inverse(b_name, y)
                    return fa(x), _slope(fa, x) / _slope(ACTIVATIONS[b_name], x)

                out.append(("activation_variant", f"{a_name}({b_name}⁻¹(X))",
                            {"activation": a_name, "instead_of": b_name}, variant))
    return out


CANDIDATES = _candidates()


def _cast(fmt: Format) -> Fn:
    return lambda x: to_float64(from_float64(x, fmt), fmt)


def _truncated_bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 values with the low half of their bits cleared: a bfloat16 cast by bit shift."""
    bits32 = np.asarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits32.view(np.float32).astype(np.float64)


def _casts(s: Sample) -> list[tuple[str, str, dict[str, object], Fn]]:
    """Rounding through a format narrower than the data's (and float32's truncation to
    bfloat16, which is biased toward zero where a cast rounds to nearest), and to an integer."""
    out = [("cast", f"X rounded to {name}", {"format": name}, _cast(FORMATS[name]))
           for name in CASTS if FORMATS[name].unit_roundoff > s.u]
    if s.u == FORMATS["float32"].unit_roundoff:
        out.append(("cast", "X truncated to bfloat16 (toward zero: its low 16 bits dropped, not rounded)",
                    {"format": "bfloat16", "mode": "truncate"}, _truncated_bfloat16))
    out.append(("cast", "round(X), to an integer", {"format": "integer", "mode": "round"}, np.round))
    out.append(("cast", "trunc(X), to an integer", {"format": "integer", "mode": "truncate"}, np.trunc))
    return out


def _fitted_power(s: Sample, y: np.ndarray, x: np.ndarray, unexplained: np.ndarray) -> tuple[float, str] | None:
    """An exponent fitted from log|y| / log|x| where |x| is away from 1, when it is one value."""
    use = unexplained & (np.abs(np.log(np.abs(x) + 1e-300)) > 0.2) & (x > 0) & (y > 0)
    if use.sum() < MIN_HELD:
        return None
    ratio = np.log(y[use]) / np.log(x[use])
    p = float(np.median(ratio))
    if not math.isfinite(p) or np.std(ratio) > 0.01 * max(abs(p), 1.0) or abs(p - 1) < 1e-3:
        return None
    return p, f"X^{p:.4g}"


def search(s: Sample) -> Relation | None:
    """The most specific elementwise map that holds, A = f(B) tried before B = f(A), or None
    (also when the identity explains all but a few elements: then there is nothing to fit)."""
    if s.a.size < MIN_HELD:
        return None
    if s.a.size > SEARCH_CAP:
        step = -(-s.a.size // SEARCH_CAP)
        s = Sample(s.a[::step], s.b[::step], s.u, s.depth, s.rms)
    for y, x, ys, xs in ((s.a, s.b, "A", "B"), (s.b, s.a, "B", "A")):
        unexplained = np.abs(y - x) > s.allowed(y, x, 1.0)
        if unexplained.sum() < MIN_HELD:
            return None
        found = _first_holding(s, y, x, unexplained)
        if found is not None:
            kind, text, params, residual, held = found
            return Relation(kind, f"{ys} = {text.replace('X', xs)}", params, residual, held)
    return None


def _first_holding(s: Sample, y: np.ndarray, x: np.ndarray, unexplained: np.ndarray):
    """(kind, text, params, residual, held) of the first candidate map that holds."""
    with np.errstate(all="ignore"):
        for kind, text, params, f in CANDIDATES:
            pred, slope = f(x)
            if kind == "activation_variant" and not _below_branch_fits(s, params, y, x, unexplained):
                continue
            got = _judge(s, y, x, pred, slope, unexplained)
            if got is not None:
                return kind, text, params, got[1], got[0]
        for kind, text, params, cast in _casts(s):
            if params["format"] != "integer" and not says_format(y):
                continue  # small integers are values of every float format: no cast is shown
            got = _judge(s, y, x, cast(x), 1.0, unexplained)
            if got is not None:
                return kind, text, params, got[1], got[0]
        fitted = _fitted_power(s, y, x, unexplained)
        if fitted is not None:
            p, text = fitted
            pred = np.where(x > 0, np.power(np.abs(x), p), np.nan)
            got = _judge(s, y, x, pred, p * np.power(np.abs(x), p - 1), unexplained)
            if got is not None:
                return "power", text, {"exponent": p}, got[1], got[0]
    return None
