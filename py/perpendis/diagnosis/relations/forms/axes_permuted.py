"""A general data movement: A is B's values moved by a reshape, a permutation of the
view's axes and flips of some of them, ``A = B.reshape(V).permute(p).flip(F).reshape(shape)``.

Such a map sends A's flat index, written as mixed-radix digits, to a linear combination of
the digits: each group of A's index digits that moves together has one stride in B (its
sign a flip).  So the map is solved, not searched: B's position of each A value comes from
matching the two sorted value lists, the digit groups are read off from where that position
stops moving linearly, and the solved map is then checked element by element with the
pair's tolerance.  This covers what no fixed list does (DepthToSpace's DCR against CRD,
a channel shuffle, a window partition, adjacent pairs swapped) with one rule.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from . import implies
from .form import Form, fails_text
from .view import HOLDS, View

MAX_ELEMENTS = 1 << 22
MAX_DIGITS = 8  # a longer description than this is no simpler than the data
MAX_TRIES = 64  # decompositions checked against the values
BASES = 64  # indices each group is walked from
MAX_WALKS = 256  # groups walked per decomposition search


def _positions(view: View) -> tuple[np.ndarray, np.ndarray]:
    """For each flat index of A, the flat index of B holding its value (the k-th smallest
    of A matched to the k-th smallest of B), and whether that match is sure: B's value is
    farther from both its neighbours than four times the noise between the two sorted
    lists (their 99th-percentile difference), so that noise cannot have swapped it.  The
    pair's tolerance is no measure here: a loose one would leave no match sure."""
    a, b = view.a.ravel(), view.b.ravel()
    order_a, order_b = view.orders
    pos = np.empty_like(order_a)
    pos[order_a] = order_b
    sorted_b = b[order_b]
    gap = np.diff(sorted_b)
    room = 4 * float(np.quantile(np.abs(a[order_a] - sorted_b), 0.99))
    apart = np.ones(b.size, dtype=bool)
    apart[1:] &= gap > room
    apart[:-1] &= gap > room
    sure_b = np.empty(b.size, dtype=bool)
    sure_b[order_b] = apart
    return pos, sure_b[pos]


def _digits(pos: np.ndarray, sure: np.ndarray, stride: int = 1,
            budget: list[int] | None = None) -> Iterator[list[tuple[int, int]]]:
    """Each way to write the map as (radix, B stride) groups of A's index digits, innermost
    first, from ``stride`` on.  Every index below ``stride`` has this group's digit and all
    later ones 0, so each is a base to walk the group from: its B stride is the commonest
    step over the bases whose matches are sure, and a step ``j`` holds when most sure bases
    agree.  A step no base can judge does not break the group, so it ends anywhere after
    its last step that holds and at or before its first that fails; each such end dividing
    what is left is tried, within ``budget`` groups walked in all (:data:`MAX_WALKS`): each
    walk reads O(n) matches, and the tries branch."""
    n = pos.size
    if stride == n:
        yield []
        return
    budget = [MAX_WALKS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        return
    count = n // stride
    bases = np.arange(min(stride, BASES))
    at = bases[None, :] + (np.arange(count) * stride)[:, None]  # [step j, base]
    moved = pos[at] - pos[bases][None, :]
    judged = sure[at] & sure[bases][None, :]
    judged[0] = False
    if count < 2 or not judged[1].any():
        return
    values, votes = np.unique(moved[1][judged[1]], return_counts=True)
    for c in values[np.argsort(-votes)][:2]:
        agree = np.sum(judged & (moved == np.arange(count)[:, None] * int(c)), axis=1)
        seen = judged.sum(axis=1)
        holds, fails = (seen > 0) & (2 * agree > seen), (seen > 0) & (2 * agree <= seen)
        broke = np.flatnonzero(fails)
        end = int(broke[0]) if broke.size else count
        held = np.flatnonzero(holds[:end])
        for radix in range(max(int(held[-1]) + 1 if held.size else 2, 2), end + 1):
            if count % radix == 0:
                for rest in _digits(pos, sure, stride * radix, budget):
                    yield [(radix, int(c)), *rest]


def _tiles(digits: list[tuple[int, int]], base: int) -> bool:
    """The strides of B, sorted, are those of a contiguous array of the radices, and the
    start is where the flipped groups begin: the map is a permutation of B's elements."""
    by_size = sorted(digits, key=lambda d: abs(d[1]))
    expect = 1
    for radix, c in by_size:
        if abs(c) != expect:
            return False
        expect *= radix
    return base == sum((r - 1) * abs(c) for r, c in digits if c < 0)


def _describe(digits: list[tuple[int, int]], shape: tuple[int, ...]) -> tuple[str, dict]:
    """The map as torch calls: B viewed with its groups outermost-first, permuted into A's
    order, the reversed groups flipped, reshaped to A's shape."""
    b_order = sorted(range(len(digits)), key=lambda k: -abs(digits[k][1]))  # B's view axes, outermost first
    view_shape = [digits[k][0] for k in b_order]
    a_order = list(range(len(digits)))[::-1]  # A's groups, outermost first
    perm = [b_order.index(k) for k in a_order]
    flips = [t for t, k in enumerate(a_order) if digits[k][1] < 0]
    text = f"A = B.reshape{tuple(view_shape)}"
    if perm != sorted(perm):
        text += f".permute{tuple(perm)}"
    if flips:
        text += f".flip({', '.join(str(f) for f in flips)})" if len(flips) > 1 else f".flip({flips[0]})"
    steps = ["a reshape", *(["a permutation of its axes"] if perm != sorted(perm) else []),
             *([f"a flip of {'an axis' if len(flips) == 1 else f'{len(flips)} axes'}"] if flips else [])]
    text += f".reshape{tuple(shape)}: B's values moved by {', '.join(steps[:-1])} and {steps[-1]}"
    params = {"map": "axes_permuted", "view": view_shape, "perm": perm, "flips": flips}
    return text, params


def _axis_of(stride: int, shape: tuple[int, ...]) -> int:
    """The axis of ``shape`` whose index a flat stride of ``stride`` steps."""
    inner = 1
    for ax in range(len(shape) - 1, -1, -1):
        if stride < inner * shape[ax]:
            return ax
        inner *= shape[ax]
    return 0


def _crossings(digits: list[tuple[int, int]], shape: tuple[int, ...]) -> tuple[list[list[int]], list[int]]:
    """For each group that changes axis, [A's axis, B's axis] (where values moved across
    axes); and the axes of A whose groups moved at all (a stride not their own)."""
    out, touched, stride = [], set(), 1
    for radix, c in digits:
        a_axis, b_axis = _axis_of(stride, shape), _axis_of(abs(c), shape)
        if a_axis != b_axis:
            out.append([a_axis, b_axis])
        if c != stride:
            touched.add(a_axis)
        stride *= radix
    return out, sorted(touched)


def _solved(digits: list[tuple[int, int]], base: int, n: int) -> np.ndarray:
    """B's flat index for each of A's under the groups ``digits``."""
    k = np.arange(n)
    out = np.full(n, base)
    stride = 1
    for radix, c in digits:
        out += (k // stride % radix) * c
        stride *= radix
    return out


def _decompositions(pos: np.ndarray, sure: np.ndarray) -> Iterator[tuple[list[tuple[int, int]], int]]:
    """(groups, B index of A's first element): walked from A's first element, then from its
    last (every digit at its top) for when the first's match is not sure, then from the
    first taken as sure (most matches that are not sure are right).  Reading A backwards
    reverses every digit, so the strides found that way change sign."""
    for digits in itertools.islice(_digits(pos, sure), MAX_TRIES):
        yield digits, int(pos[0])
    for digits in itertools.islice(_digits(pos[::-1], sure[::-1]), MAX_TRIES):
        yield [(r, -c) for r, c in digits], int(pos[-1]) + sum((r - 1) * c for r, c in digits)
    if not sure[0]:
        trusted = sure.copy()
        trusted[0] = True
        for digits in itertools.islice(_digits(pos, trusted), MAX_TRIES):
            yield digits, int(pos[0])


def find(view: View) -> Form | None:
    """The data movement of B that is A, when A and B hold the same values and one holds."""
    if view.a.size > MAX_ELEMENTS or view.a.size < 4:
        return None
    pos, sure = _positions(view)
    for digits, base in _decompositions(pos, sure):
        if not 2 <= len(digits) <= MAX_DIGITS or not _tiles(digits, base):
            continue
        t = view.b.ravel()[_solved(digits, base, view.a.size)].reshape(view.shape)
        ok = view.close(view.a, t)
        share = float(np.mean(ok))
        if share < HOLDS:
            continue
        text, params = _describe(digits, view.shape)
        params["moved"], params["axes"] = _crossings(digits, view.shape)
        return Form("index_map", text, params, share, int(ok.size), fails_text(view, ok),
                    implies.causes("index_map", {**params, "shape": list(view.shape)}))
    return None
