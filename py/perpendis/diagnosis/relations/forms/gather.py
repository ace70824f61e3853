"""A gather: along one axis, every slice of A that departs from its own B slice is another
B slice, ``A = B.take(idx, axis)`` with ``idx`` the identity except where a slice was
taken from the wrong index (a sample's values returned for another, a slice copied one
place off, half a sequence repeated).

Unlike the index maps of :mod:`.index_maps` the two sides need not hold the same values:
a slice of B may be used twice and another not at all.  Each departing slice is matched,
on a few sampled positions, to the B slice it is closest to, and the map is then checked on
every element.  A B slice that is one value throughout (a zeroed or masked slice) matches
any other such slice and is never taken as the source.
"""

from __future__ import annotations

import numpy as np

from ....numerics.scramble import Stream
from . import implies
from .form import Form, fails_text
from .view import HOLDS, View

MAX_AXIS = 512  # entries along an axis whose slices are matched to one another
MAX_MOVED = 64  # departing slices matched
SCREEN = 256  # positions within a slice a match is screened on


def _slices(x: np.ndarray, ax: int, pick: np.ndarray) -> np.ndarray:
    """``x``'s slices along ``ax`` at the flat positions ``pick`` of the other axes: (n, len(pick))."""
    return np.moveaxis(x, ax, 0).reshape(x.shape[ax], -1)[:, pick]


def _source(view: View, a_row: np.ndarray, b_rows: np.ndarray, varied: np.ndarray, own: int) -> int | None:
    """The one B slice, not its own and not one value throughout (``varied``), that ``a_row``
    matches on HOLDS of the screened positions."""
    matches = (np.mean(view.close(a_row[None, :], b_rows), axis=1) >= HOLDS) & varied
    matches[own] = False
    hits = np.flatnonzero(matches)
    return int(hits[0]) if hits.size == 1 else None


def _describe(moved: dict[int, int]) -> tuple[str, dict]:
    """The map in words: one shift for every moved slice, one source for all, or the pairs."""
    pairs = sorted(moved.items())
    shifts = {i - j for i, j in pairs}
    sources = {j for _, j in pairs}
    shown = ", ".join(f"A[{i}] = B[{j}]" for i, j in pairs[:6]) + (", …" if len(pairs) > 6 else "")
    params: dict = {"moved": [list(p) for p in pairs[:64]]}
    if len(pairs) > 1 and len(shifts) == 1:
        k = shifts.pop()
        params["shift"] = k
        return f"{shown}: {len(pairs)} slices taken {abs(k)} place{'s' if abs(k) > 1 else ''} " \
               f"{'earlier' if k > 0 else 'later'}", params
    if len(pairs) > 1 and len(sources) == 1:
        params["source"] = next(iter(sources))
        return f"{shown}: {len(pairs)} slices all taken from B's index {params['source']}", params
    return shown, params


def find(view: View) -> Form | None:
    """The gather ``A = B.take(idx, axis)`` that holds with the fewest moved slices, or None."""
    if not view.whole or view.identity_share >= HOLDS:
        return None
    rng = Stream(0x6A7E)
    for ax in range(len(view.shape)):
        n = view.shape[ax]
        if not 2 <= n <= MAX_AXIS:
            continue
        rest = view.a.size // n
        pick = rng.distinct(rest, min(SCREEN, rest))
        a_rows, b_rows = _slices(view.a, ax, pick), _slices(view.b, ax, pick)
        own = np.mean(view.close(a_rows, b_rows), axis=1)
        departing = np.flatnonzero(own < HOLDS)
        if departing.size == 0 or departing.size > min(MAX_MOVED, n - 1):
            continue
        varied = np.ptp(b_rows, axis=1) > 0
        moved = {}
        for i in departing:
            j = _source(view, a_rows[i], b_rows, varied, int(i))
            if j is None:
                break
            moved[int(i)] = j
        else:
            idx = np.arange(n)
            for i, j in moved.items():
                idx[i] = j
            t = np.take(view.b, idx, axis=ax)
            ok = view.close(view.a, t)
            share = float(np.mean(ok))
            if share < HOLDS or share <= view.identity_share:
                continue
            text, params = _describe(moved)
            params.update({"map": "gather", "axis": ax, "axis_size": n, "shape": list(view.shape)})
            return Form("index_map", f"along axis {ax} ({n} entries), A = B.take(idx, axis={ax}) with {text}",
                        params, share, int(ok.size), fails_text(view, ok), implies.causes("index_map", params))
    return None
