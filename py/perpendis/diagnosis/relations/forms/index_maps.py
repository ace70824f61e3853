"""Index maps: A holds B's values in another order, A = B[π].

Tried only when the two multisets agree (sorted A within the tolerance of sorted B on
:data:`.view.HOLDS` of the elements), then solved as the simplest map that makes them
agree element by element: the two halves of an axis swapped, a flip, a roll by k, two
equal-sized axes swapped, or a reshape of B viewed with one axis split in two and two of
the view's axes swapped (a reshape without its transpose).  Candidates are screened on a
few hundred sampled positions and the one that holds is checked on every element; when
none holds, any reshape, permutation and flips of B's axes are solved for
(:mod:`.axes_permuted`).  When
none holds, each fibre along an axis may still hold its B fibre's values: sorted (a sort
or top-k order), or in an order no map here names (said, with no cause).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import numpy as np

from ....numerics.scramble import Stream
from . import axes_permuted, implies
from .form import Form, fails_text
from .view import HOLDS, View

SCREEN = 512  # positions a candidate is screened on
REORDERED = 0.5  # a reordering within fibres leaves at most this share of elements agreeing as given
MAX_CANDIDATES = 4000

Map = Callable[[tuple[np.ndarray, ...]], tuple[np.ndarray, ...] | np.ndarray]


def same_values(view: View) -> bool:
    a, b = np.sort(view.a.ravel()), np.sort(view.b.ravel())  # values only: a sort, not an argsort
    return view.share(a, b)[0] >= HOLDS


def _divisors(n: int) -> list[int]:
    return [f for f in range(2, n) if n % f == 0 and f <= 4096]


def _candidates(shape: tuple[int, ...]) -> Iterator[tuple[dict, str, Map]]:
    """(params, text, map from A's multi-index to B's flat index), simplest first."""
    rank = len(shape)
    for ax, n in enumerate(shape):
        if n >= 2 and n % 2 == 0:
            h = n // 2
            yield ({"map": "halves", "axis": ax, "half": h},
                   f"A = B with the two halves of axis {ax} swapped (A[..., :{h}] = B[..., {h}:] and "
                   f"A[..., {h}:] = B[..., :{h}] along axis {ax})",
                   _roll(shape, ax, h))
    for ax, n in enumerate(shape):
        if n >= 2:
            yield ({"map": "flip", "axis": ax}, f"A = np.flip(B, axis={ax})", _flip(shape, ax))
    for ax, n in enumerate(shape):
        # Shifts by ±1 … ±64, smallest first, each way (a roll by −1 is one by n − 1).
        for size in range(1, min(n // 2, 64) + 1):
            for kk in () if 2 * size == n else (size, -size):
                yield ({"map": "roll", "axis": ax, "shift": kk},
                       f"A = np.roll(B, {kk}, axis={ax}) (A[..., t] = B[..., t {'−' if kk > 0 else '+'} {abs(kk)}] "
                       f"along axis {ax})",
                       _roll(shape, ax, kk % n))
    for i, j in itertools.combinations(range(rank), 2):
        if shape[i] == shape[j]:
            yield ({"map": "transpose", "axes": [i, j]}, f"A = B with axes {i} and {j} swapped", _swap(shape, i, j))
    for ax, n in enumerate(shape):
        for f in _divisors(n):
            view_shape = (*shape[:ax], n // f, f, *shape[ax + 1:])
            for i, j in itertools.combinations(range(len(view_shape)), 2):
                if view_shape[i] == view_shape[j] or not (i in (ax, ax + 1) or j in (ax, ax + 1)):
                    continue
                swapped = list(view_shape)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                text = (f"A = B.reshape{tuple(view_shape)}.swapaxes({i}, {j}).reshape{tuple(shape)}: "
                        f"B's values viewed as {tuple(view_shape)} with axes {i} and {j} swapped, then reshaped")
                yield ({"map": "reshape", "view": list(view_shape), "axes": [i, j]}, text,
                       _reshape_swap(shape, tuple(view_shape), tuple(swapped), i, j))


def _roll(shape: tuple[int, ...], ax: int, k: int) -> Map:
    def m(idx: tuple[np.ndarray, ...]) -> np.ndarray:
        out = list(idx)
        out[ax] = (idx[ax] - k) % shape[ax]
        return np.ravel_multi_index(tuple(out), shape)
    return m


def _flip(shape: tuple[int, ...], ax: int) -> Map:
    def m(idx: tuple[np.ndarray, ...]) -> np.ndarray:
        out = list(idx)
        out[ax] = shape[ax] - 1 - idx[ax]
        return np.ravel_multi_index(tuple(out), shape)
    return m


def _swap(shape: tuple[int, ...], i: int, j: int) -> Map:
    def m(idx: tuple[np.ndarray, ...]) -> np.ndarray:
        out = list(idx)
        out[i], out[j] = idx[j], idx[i]
        return np.ravel_multi_index(tuple(out), shape)
    return m


def _reshape_swap(shape: tuple[int, ...], view: tuple[int, ...], swapped: tuple[int, ...], i: int, j: int) -> Map:
    """A.reshape(swapped) = B.reshape(view).swapaxes(i, j): A's flat index read in the
    swapped view, its coordinates i and j exchanged, and read back in B's view."""
    def m(idx: tuple[np.ndarray, ...]) -> np.ndarray:
        flat = np.ravel_multi_index(idx, shape)
        coords = list(np.unravel_index(flat, swapped))
        coords[i], coords[j] = coords[j], coords[i]
        return np.ravel_multi_index(tuple(coords), view)
    return m


def _within_fibres(view: View) -> Form | None:
    """Each fibre along one axis of A holds its B fibre's values in another order: sorted
    (either way round, either direction), or in no order a map here names.  Only asked
    when A and B mostly disagree as given: two sides that agree to rounding also agree
    sorted, and are no reordering."""
    if view.identity_share >= REORDERED:
        return None
    for ax in range(len(view.shape) - 1, -1, -1):
        if view.shape[ax] < 4:
            continue
        sa, sb = np.sort(view.a, axis=ax), np.sort(view.b, axis=ax)
        if float(np.mean(view.close(sa, sb))) < HOLDS:
            continue
        for side, x, y in (("A", view.a, view.b), ("B", view.b, view.a)):
            for descending in (True, False):
                t = np.flip(np.sort(y, axis=ax), axis=ax) if descending else np.sort(y, axis=ax)
                ok = view.close(x, t)
                if float(np.mean(ok)) >= HOLDS:
                    other = "B" if side == "A" else "A"
                    order = "descending" if descending else "ascending"
                    text = f"{side} = {other} sorted {order} along axis {ax} (each fibre holds the same values)"
                    params = {"map": "sorted", "axis": ax, "descending": descending, "sorted_side": side}
                    return Form("index_map", text, params, float(np.mean(ok)), int(ok.size), fails_text(view, ok),
                                implies.causes("index_map", params))
        ok = view.close(sa, sb)
        text = (f"each fibre of A along axis {ax} holds its B fibre's values in another order (sorted, they agree), "
                "an order no reshape, roll or flip gives")
        return Form("index_map", text, {"map": "within_fibres", "axis": ax}, float(np.mean(ok)), int(ok.size),
                    None, [])
    return None


def find(view: View) -> Form | None:
    """The simplest index map under which A = B[π] holds, when A and B hold the same values."""
    if not view.whole or len(view.shape) < 1 or not same_values(view):
        return None
    got = _searched(view)
    if got is None:
        got = axes_permuted.find(view)
    return got if got is not None else _within_fibres(view)


def _searched(view: View) -> Form | None:
    n = view.a.size
    diff = np.flatnonzero(view.differing.ravel())
    pick = diff[Stream(0x5EED).distinct(diff.size, SCREEN)]
    idx = np.unravel_index(pick, view.shape)
    a_flat, b_flat = view.a.ravel(), view.b.ravel()
    for count, (params, text, m) in enumerate(_candidates(view.shape)):
        if count >= MAX_CANDIDATES:
            break
        if view.share(a_flat[pick], b_flat[m(idx)])[0] < HOLDS:
            continue
        full = np.unravel_index(np.arange(n), view.shape)
        t = b_flat[m(full)].reshape(view.shape)
        ok = view.close(view.a, t)
        share = float(np.mean(ok))
        if share < HOLDS:
            continue
        if params["map"] == "reshape":
            params = {**params, "repeated": _repeated(view.b, params["view"], params["axes"])}
        return Form("index_map", text, params, share, int(ok.size), fails_text(view, ok),
                    implies.causes("index_map", {**params, "shape": list(view.shape)}))
    return None


def _repeated(b: np.ndarray, view_shape: list[int], axes: list[int]) -> bool:
    """Whether B, viewed as ``view_shape``, is one value along either swapped axis: its
    entries repeated in blocks (repeat_interleave), which the swap reads as tiled (repeat)."""
    bv = b.reshape(view_shape)
    return any(bv.shape[k] > 1 and bool(np.all(bv == bv.take([0], axis=k))) for k in axes)


