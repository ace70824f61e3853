"""What a mutation did to the output: does A carry the relation of the mutation's family?

A mutation mid-graph reaches the output through later layers, which may keep its kind
(a final LayerNorm's epsilon leaves one scale and offset per row) or mix it into a
difference no report could name from the output alone (the same epsilon three blocks
earlier).  The scorer labels a case by its family only when the output carries that
family's relation, each tested here on A and B directly by a plain fit that knows
nothing of the engine: the relation must explain at least half of ``|A - B|``
(:data:`SHARE`).  Generous on purpose: a label that calls a case nameable when the
output barely carries it can only lower the recall measured, never raise it.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

SHARE = 0.5  # a relation carries the family when it leaves at most this share of |A - B|
HOLDS = 1e-3  # a map holds (is the relation, not a description of most of it) below this share
NEAR = 1e-2  # ... or below this share when what it leaves is float32 rounding of the output
F32_ROUNDING = 16 * 2.0**-24  # a few float32 roundings of B's RMS (a dot product's)
NEIGHBOURS = 9  # values of B, in order, averaged for "A - B is a function of B"
SHIFTS = (1, 2, 3)  # positions a shifted axis is tried at, each way
NARROW = {"cast_fp16": np.float16, "cast_bf16": ml_dtypes.bfloat16}


def _left(rest: np.ndarray, d: np.ndarray) -> float:
    """Share of |A - B| (Frobenius) a fit leaves; 1 when there is nothing to explain."""
    size = float(np.linalg.norm(d))
    return float(np.linalg.norm(rest) / size) if size > 0 and np.isfinite(size) else 1.0


def _others(ndim: int, axis: int) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i != axis)


def _by_chance(k: int, n: int) -> float:
    """The share of a random difference that ``k`` fitted constants leave of ``n`` values
    (sqrt(1 - k/n)): a fit is judged against it, so one constant per column of a 2 × 10
    output is not called an offset because two values fit any constant half-way."""
    return float(np.sqrt(max(1.0 - k / n, 0.0)))


def offset(a: np.ndarray, b: np.ndarray) -> float:
    """One constant per index of some axis, or one everywhere (a bias); the share left,
    over what as many constants leave of a random difference."""
    d = a - b
    best = _left(d - d.mean(), d)
    for axis in range(d.ndim):
        k = d.shape[axis]
        if k < 2 or k >= d.size:
            continue
        left = _left(d - d.mean(axis=_others(d.ndim, axis), keepdims=True), d)
        best = min(best, left / max(_by_chance(k, d.size), 1e-12))
    return best


def per_fibre_affine(a: np.ndarray, b: np.ndarray) -> float:
    """One scale and offset per fibre along some axis (a normalisation's statistics that
    differ: an epsilon, a mean, a variance)."""
    best = 1.0
    for axis in range(a.ndim):
        if a.shape[axis] < 3:
            continue
        mb, ma = b.mean(axis=axis, keepdims=True), a.mean(axis=axis, keepdims=True)
        db = b - mb
        vb = np.maximum((db * db).mean(axis=axis, keepdims=True), 1e-300)
        s = (db * (a - ma)).mean(axis=axis, keepdims=True) / vb
        fibres = a.size // a.shape[axis]
        best = min(best, _left(a - (s * db + ma), a - b) / max(_by_chance(2 * fibres, a.size), 1e-12))
    return best


def per_slice_affine(a: np.ndarray, b: np.ndarray) -> float:
    """One scale and offset per index of some axis, the same across every other axis (a
    per-feature ``A = s·B + c``: a LayerNorm gain or bias changed where nothing follows it);
    the share left, over what as many constants leave of a random difference."""
    best = 1.0
    for axis in range(a.ndim):
        k = a.shape[axis]
        if k < 2 or a.size // k < 3:
            continue
        rest = _others(a.ndim, axis)
        mb, ma = b.mean(axis=rest, keepdims=True), a.mean(axis=rest, keepdims=True)
        db = b - mb
        vb = np.maximum((db * db).mean(axis=rest, keepdims=True), 1e-300)
        s = (db * (a - ma)).mean(axis=rest, keepdims=True) / vb
        best = min(best, _left(a - (s * db + ma), a - b) / max(_by_chance(2 * k, a.size), 1e-12))
    return best


def holds_per_slice(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether A is a per-index affine map of B that holds (leaves at most :data:`HOLDS` of
    |A − B|): the relation a gain changed at the output leaves, whatever the mutation's
    family says of the middle of a graph."""
    if a.shape != b.shape or a.ndim < 2 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return False
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        return _holds(per_slice_affine(a64, b64), a64, b64)


def _holds(share: float, a: np.ndarray, b: np.ndarray) -> bool:
    """A fit that leaves ``share`` holds below :data:`HOLDS`, or below :data:`NEAR` when
    that rest is float32 rounding (an effect a few thousand ULP in size, as a statistic
    rounded to float16, leaves its map's rounding as a visible share of it)."""
    rest = share * float(np.sqrt(np.mean(np.square(a - b))))
    return share <= HOLDS or (share <= NEAR and rest <= F32_ROUNDING * float(np.sqrt(np.mean(np.square(b)))))


def holds_per_fibre(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether A is one scale and offset per fibre of B that holds (leaves at most
    :data:`HOLDS`): what a last normalisation's statistic that differs leaves (an RMSNorm's
    mean of squares computed from 2^x, or rounded to float16)."""
    if a.shape != b.shape or a.ndim < 1 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return False
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        return _holds(per_fibre_affine(a64, b64), a64, b64)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def normalised(a: np.ndarray, b: np.ndarray) -> float:
    """A = softmax(B) or log_softmax(B) along an axis, or one scale and offset per fibre."""
    best = per_fibre_affine(a, b)
    with np.errstate(all="ignore"):
        for axis in range(a.ndim):
            p = _softmax(b, axis)
            for pred in (p, np.log(p)):
                best = min(best, _left(a - pred, a - b))
    return best


def function_of_b(a: np.ndarray, b: np.ndarray) -> float:
    """A - B as one smooth function of B, or of A (an activation changed, added or left out:
    A = f(B) or B = f(A)), over all values or those above the median: what is left after the
    mean of each value's :data:`NEIGHBOURS` nearest in that side's order.  A random
    difference keeps √(1 − 1/NEIGHBOURS) of itself."""
    d = (a - b).ravel()
    if d.size < 4 * NEIGHBOURS:
        return 1.0
    best = 1.0
    kernel = np.full(NEIGHBOURS, 1.0 / NEIGHBOURS)
    for x in (b.ravel(), a.ravel()):
        # Also on the upper half of that side alone, where every activation in use is
        # monotone (GELU's and SiLU's negative values come from two inputs each).
        for keep in (np.ones(x.size, dtype=bool), x >= np.median(x)):
            ds = d[keep][np.argsort(x[keep], kind="stable")]
            if ds.size < 4 * NEIGHBOURS:
                continue
            inner = ds[NEIGHBOURS // 2 : ds.size - NEIGHBOURS // 2]  # the ends have no neighbours either side
            best = min(best, _left(inner - np.convolve(ds, kernel, mode="valid"), inner))
    return best


def clipped(a: np.ndarray, b: np.ndarray) -> float:
    """A = clip(B) at A's own extremes."""
    return _left(a - np.clip(b, a.min(), a.max()), a - b)


def reordered(a: np.ndarray, b: np.ndarray) -> float:
    """A is B with the slices of one axis in another order: each slice of A set against
    its nearest slice of B."""
    best = 1.0
    for axis in range(a.ndim):
        n = a.shape[axis]
        if n < 2 or n > 512:
            continue
        sa = np.moveaxis(a, axis, 0).reshape(n, -1)
        sb = np.moveaxis(b, axis, 0).reshape(n, -1)
        dist = ((sa * sa).sum(1)[:, None] + (sb * sb).sum(1)[None, :] - 2 * sa @ sb.T).clip(0)
        best = min(best, float(np.sqrt(dist.min(axis=1).sum())) / max(float(np.linalg.norm(a - b)), 1e-300))
    return best


def shifted(a: np.ndarray, b: np.ndarray) -> float:
    """A is B shifted by a few positions along one axis (the ends left out of the fit)."""
    best = 1.0
    for axis in range(a.ndim):
        n = a.shape[axis]
        for k in (*SHIFTS, *(-s for s in SHIFTS)):
            if n <= 2 * abs(k):
                continue
            inner = slice(abs(k), n - abs(k))
            pa = np.take(a, range(n)[inner], axis=axis)
            pb = np.take(np.roll(b, k, axis=axis), range(n)[inner], axis=axis)
            best = min(best, _left(pa - pb, pa - np.take(b, range(n)[inner], axis=axis)))
    return best


def scaled(a: np.ndarray, b: np.ndarray) -> float:
    s = float(np.vdot(a, b) / max(float(np.vdot(b, b)), 1e-300))
    return _left(a - s * b, a - b)


TESTS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "scale": scaled,
    "offset": offset,
    "normalisation": normalised,
    "activation": function_of_b,
    "clip": clipped,
    "reorder": reordered,
    "position": shifted,
}


def representable(a: np.ndarray, operator: str) -> bool:
    """A's finite values all exact in the format a precision round trip cast through."""
    fmt = NARROW.get(operator)
    if fmt is None:
        return False
    finite = a[np.isfinite(a)].astype(np.float32)
    return bool(finite.size) and bool(np.all(finite.astype(fmt).astype(np.float32) == finite))



def representable_but(a: np.ndarray, operator: str, addend: np.ndarray) -> bool:
    """A's finite values, less ``addend`` (a bias the graph adds right after the round trip),
    in the round trip's format to float32's rounding of that sum: the cast's grid, moved."""
    fmt = NARROW.get(operator)
    if fmt is None:
        return False
    with np.errstate(all="ignore"):
        x = a.astype(np.float64) - addend
        ok = np.isfinite(x)
        near = np.abs(x - x.astype(fmt).astype(np.float64)) <= 2.0**-23 * np.abs(a)
    return bool(ok.any()) and bool(np.mean(near[ok]) >= 0.99)


def carries(family: str, operator: str, a: np.ndarray, b: np.ndarray, addend: np.ndarray | None = None) -> bool:
    """Whether the output carries the relation of ``family`` (families without a test here
    are decided elsewhere and carry it); ``addend``: a constant the graph adds right after
    the mutated node, which a precision round trip's grid is then shifted by."""
    if family == "precision":
        return representable(a, operator) or (addend is not None and representable_but(a, operator, addend))
    test = TESTS.get(family)
    if test is None:
        return True
    if a.shape != b.shape or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return True  # no fit to make: the family stands (nameable, so counted for recall)
    with np.errstate(all="ignore"):
        return test(a.astype(np.float64), b.astype(np.float64)) <= SHARE
