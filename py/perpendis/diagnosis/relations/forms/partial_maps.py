"""Forms where A = B except on some elements, which the exception itself explains: one
constant written there (a fill); off-by-one steps (of integers, or of a quantisation grid)
with a rule in them: one side always even (ties rounded another way), always nearer zero
(truncation), or always the lower (rounding down); another slope on one sign of B (a leaky
activation's); and each side zero where the other is not (a mask inverted).  The fill is
tried after the row maps (a top-k filter is a fill the rows' order pins), the zero fill
after every other family."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import implies
from .form import Form, stated
from .view import HOLDS, View

MIN_FILLED = 4  # elements, and distinct values of B under them, a fill must cover
MIN_TIES = 8  # off-by-ones, all even (or all nearer zero) on one side, that show a rounding rule
MIN_SIGNED = 8  # elements of one sign of B that a slope of their own must explain


def fill(view: View) -> Form | None:
    """A = B except that A holds one non-zero constant on every element where they differ,
    whatever B is there: a masked fill."""
    return _filled(view, zero=False)


def zero_fill(view: View) -> Form | None:
    """The fill of zeros, tried after every other family: zeros imply no mask of their own
    (a padding row, pruned channels, groups masked out), which the per-group map, the
    per-slice fit and the region say with their axis and causes."""
    return _filled(view, zero=True)


def _filled(view: View, zero: bool) -> Form | None:
    diff = view.differing & ~np.isnan(view.b)
    if np.count_nonzero(diff) < MIN_FILLED:
        return None
    v = view.a[diff][0]
    if (v == 0) != zero or np.isnan(v) or not np.all(view.a[diff] == v) or len(np.unique(view.b[diff])) < MIN_FILLED:
        return None
    params = {"value": float(v), "mask_fill": implies.is_mask_fill(float(v))}
    text = f"A = B except that A = {v:g} on {int(np.count_nonzero(diff))} elements, whatever B is there: a fill"
    return stated(view, "fill", text, params, np.where(diff, view.a, view.b))


ON_GRID = 1e-3  # distance, in steps, of a value from the step grid it is read on


def _steps(view: View) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """(where A and B differ, A and B in steps, the step) when they differ by exactly one
    step on at least :data:`MIN_TIES` elements and both lie on that step's grid: integers
    (step 1) or values quantised to a grid: the pattern a rounding rule leaves.  Read once
    per view, for the three rules that test it."""
    return view.memo("steps", _read_steps)


def _read_steps(view: View) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    finite = np.isfinite(view.a) & np.isfinite(view.b)
    diff = view.differing & finite
    if np.count_nonzero(diff) < MIN_TIES:
        return None
    d = np.abs(view.a[diff] - view.b[diff])
    step = 1.0 if view.integer else float(np.median(d))
    if step == 0 or not np.all(np.abs(d - step) <= ON_GRID * step):
        return None
    ka, kb = (np.where(finite, x, 0.0) / step for x in (view.a, view.b))
    if not view.integer and not all(np.all(np.abs(k - np.round(k)) <= ON_GRID) for k in (ka, kb)):
        return None
    return diff, np.round(ka), np.round(kb), step


def _by_one(n: int, step: float) -> str:
    return f"A and B differ by exactly {'1' if step == 1 else f'one step of a grid of {step:g}'} on {n} elements"


Said = tuple[str, str, dict] | None  # a rounding rule's (kind, text, params), when it holds


def _one_sided(view: View, rule: Callable[[str, str, np.ndarray, np.ndarray, str, float], Said]) -> Form | None:
    """The first side of which ``rule`` holds on every element where A and B differ by one
    step (:func:`_steps`), stated as A = B except there."""
    got = _steps(view)
    if got is None:
        return None
    diff, ka, kb, step = got
    n = int(np.count_nonzero(diff))
    for side, other, mine, theirs in (("A", "B", ka[diff], kb[diff]), ("B", "A", kb[diff], ka[diff])):
        said = rule(side, other, mine, theirs, _by_one(n, step), step)
        if said is not None:
            kind, text, params = said
            return stated(view, kind, text, {**params, "elements": n, "step": step}, np.where(diff, view.a, view.b))
    return None


def ties(view: View) -> Form | None:
    """Values that differ by exactly one step, and one side an even number of steps on
    every element where they do: ties (x.5) rounded to even on that side and another way on
    the other.  Random off-by-ones would leave that side even on about half of them (odds
    2^-n for all n)."""
    return _one_sided(view, _even)


def _even(side: str, other: str, mine: np.ndarray, theirs: np.ndarray, by_one: str, step: float) -> Said:
    if not np.all(mine % 2 == 0):
        return None
    even = "even" if step == 1 else "an even multiple of the step"
    return ("ties", f"{by_one} and {side} is {even} on every one of them: ties rounded to even on {side}'s side "
            f"and up or away from zero on {other}'s", {"even_side": side})


def toward_zero(view: View) -> Form | None:
    """Values that differ by exactly one step, one side nearer zero on every element where
    they do: that side rounded toward zero (trunc, C's integer division, a cast to int),
    the other toward −∞ (floor, Python's ``//``) where all of them are negative, toward +∞
    (ceil) where all are positive, away from zero where they are mixed.  Random
    off-by-ones would leave each side nearer zero on about half of them."""
    return _one_sided(view, _nearer_zero)


def _nearer_zero(side: str, other: str, near: np.ndarray, far: np.ndarray, by_one: str, step: float) -> Said:
    if not np.all(np.abs(near) < np.abs(far)):
        return None
    rule = "toward −∞ (floor)" if np.all(far < 0) else "toward +∞ (ceil)" if np.all(far > 0) else "away from zero"
    return ("rounded_toward_zero", f"{by_one} and {side} is the nearer zero on every one of them: {side} rounded "
            f"toward zero (trunc), {other} {rule}", {"near_side": side, "rule": rule.split(" (")[0]})


def rounded_down(view: View) -> Form | None:
    """Values that differ by exactly one step, one side the lower on every element where
    they do, neither side always nearer zero (:func:`toward_zero`, tried first): that side
    rounded down (floor, an arithmetic shift right) where the other rounds to nearest or
    up.  Random off-by-ones would leave each side the lower on about half of them."""
    return _one_sided(view, _lower)


def _lower(side: str, other: str, low: np.ndarray, high: np.ndarray, by_one: str, step: float) -> Said:
    if not np.all(low < high):
        return None
    return ("rounded_down", f"{by_one} and {side} is the lower on every one of them: {side} rounded down (floor) "
            f"where {other} rounds to nearest or up", {"low_side": side})


def sign_split(view: View) -> Form | None:
    """A = B on one sign of B and A = s·B on the other (s ≠ 0, 1): a piecewise-linear map
    whose slope on that side differs, as a leaky activation's negative slope does.  Tried
    after the elementwise maps, which state a scale holding on both signs, a ReLU (s = 0)
    and an absolute value (s = −1)."""
    if view.integer:
        return None
    diff = view.differing & np.isfinite(view.a) & np.isfinite(view.b)
    if np.count_nonzero(diff) < MIN_SIGNED:
        return None
    for side, on, cond in (("negative", view.b < 0, "B < 0"), ("positive", view.b > 0, "B > 0")):
        if np.mean(on[diff]) < HOLDS:
            continue
        s = float(np.median(view.a[diff & on] / view.b[diff & on]))
        if not np.isfinite(s) or s == 0 or abs(s - 1) < 0.01:  # a slope within 1 % of B's is no other slope
            return None
        keep = "B ≥ 0" if side == "negative" else "B ≤ 0"
        text = f"A = B where {keep} and A = {s:.6g}·B where {cond}: another slope on B's {side} side"
        return stated(view, "sign_split", text, {"scale": s, "side": side}, np.where(on, s * view.b, view.b))
    return None


MIN_SUPPORT = 0.05  # share of the elements each side must be non-zero on, for supports to be compared
MIN_UNION = 0.9  # and both together: a mask splits every element between them (one-hots do not)


def disjoint_supports(view: View) -> Form | None:
    """A zero wherever B is not, and B zero wherever A is not, each non-zero on at least
    :data:`MIN_SUPPORT` of the elements and both on :data:`MIN_UNION`: the two sides split
    the elements between them, as a boolean mask with its sense inverted does (keep
    against drop).  Two one-hots of different classes are disjoint too, but cover little."""
    nz_a, nz_b = view.a != 0, view.b != 0
    if min(float(np.mean(nz_a)), float(np.mean(nz_b))) < MIN_SUPPORT or np.mean(nz_a | nz_b) < MIN_UNION:
        return None
    apart = ~(nz_a & nz_b)
    if np.mean(apart) < HOLDS:
        return None  # non-zero on both sides somewhere: where A = B there, that is a zero fill, not a split
    text = (f"A is zero wherever B is not, and B wherever A is not: the two sides keep complementary elements "
            f"({int(np.count_nonzero(nz_a))} and {int(np.count_nonzero(nz_b))} of {view.a.size})")
    return stated(view, "disjoint_supports", text, {}, np.where(apart, view.a, view.b))
