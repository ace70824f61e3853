"""Pairing by values: a tensor of A with the tensor of B of the same shape whose values
agree far better than chance (:mod:`.pairing`'s last rule, ``order and shape``).

Apart from the rules by name because it is the one rule that loads tensors: it compares
a fixed sample of each tensor's elements, finds landmarks that agree to rounding, and
aligns what is left between them by shape and order; and it sets aside the copies an
identity module makes, which have no partner of their own.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from ..inputs.tensor import Tensor
from ..numerics.bits import to_float64

AGREE = 0.5  # relative error below which two same-shape tensors may be the same layer (chance: about 1)
CLOSE = 1e-2  # relative error below which they are: rounding, or a cast to a narrower float
SURE = 1e-4  # relative error below which a pair by values is sure: a layer adding a small term stays above it
SAMPLE = 512  # elements of each tensor compared when pairing by values
LOOKBACK = 4  # earlier tensors an output is checked against for being a copy of one (an identity module)


def _sample(t: Tensor) -> tuple[tuple[int, ...], np.ndarray]:
    """The shape without unit axes, and the same fixed sample of elements for every tensor of that size."""
    flat = t.array.reshape(-1)
    picks = np.unique(np.linspace(0, flat.size - 1, min(flat.size, SAMPLE)).astype(np.intp)) if flat.size else []
    values = to_float64(flat[picks], t.fmt) if flat.size else np.zeros(0)
    return tuple(d for d in t.shape if d != 1), np.where(np.isfinite(values), values, 0.0)


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """``|a - b| / |b|`` in the 2-norm; 0 for two zero tensors, inf against a zero one."""
    nb = float(np.linalg.norm(b))
    diff = float(np.linalg.norm(a - b))
    if nb == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / nb


def by_values(
    a_load: Sequence[Callable[[], Tensor]],
    b_load: Sequence[Callable[[], Tensor]],
    free_a: set[int],
    free_b: set[int],
    fixed: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int, float]]:
    """Pairs whose values agree, then pairs by order and shape between them.

    First the landmarks: pairs agreeing to ``CLOSE`` (rounding, or a cast to a narrower
    float), which nothing but the same layer does.  Between two landmarks in both
    orders, a layer a bug has changed still agrees with its partner far better than
    with anything else there (``AGREE``); what is left between them is aligned in order,
    by shape (a bias dropped can leave less agreement than chance).  A tensor whose
    values repeat one already paired (an identity such as dropout in eval mode) has no
    partner of its own and is left out.  Each pair comes with its sampled relative error.
    """
    ta = {i: a_load[i]() for i in sorted(free_a)}
    tb = {j: b_load[j]() for j in sorted(free_b)}
    sa = {i: _sample(t) for i, t in ta.items()}
    sb = {j: _sample(t) for j, t in tb.items()}
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for j, (shape, _) in sb.items():
        by_shape.setdefault(shape, []).append(j)
    rank_a = {i: k / max(1, len(sa) - 1) for k, i in enumerate(sa)}
    rank_b = {j: k / max(1, len(sb) - 1) for k, j in enumerate(sb)}
    candidates = []
    for i, (shape, values) in sa.items():
        for j in by_shape.get(shape, []):
            r = relative_error(values, sb[j][1])
            if r <= AGREE:
                # Half-decades of agreement first (rounding against rounding ties), then the same
                # shape with its unit axes (a pooled map, not its flattened copy), then place in order.
                decades = round(2 * -math.log10(max(r, 1e-12))) / 2
                reshaped = ta[i].shape != tb[j].shape
                candidates.append((-decades, reshaped, abs(rank_a[i] - rank_b[j]), i, j, r))
    candidates.sort()
    close = {c[3] for c in candidates if c[5] <= CLOSE}
    pairs = _greedy([c for c in candidates if c[5] <= CLOSE], free_a, free_b)
    # Within each gap between landmarks (and the pairs other rules made), pairs that still agree
    # far better than chance; then the rest by order and shape, never across a pair already made.
    for lo, hi in _gaps(_in_order([*pairs, *fixed])):
        inside = [c for c in candidates if c[3] not in close and _within(c[3], c[4], lo, hi)]
        pairs += _greedy(inside, free_a, free_b)
    for lo, hi in _gaps(_in_order([*pairs, *fixed])):
        left_a = [i for i in sorted(free_a) if lo[0] < i < hi[0] and i not in close]
        left_b = [j for j in sorted(free_b) if lo[1] < j < hi[1]]
        # Aligned from the end of the gap: among same-shape values, a module's output is the last
        # one its computation makes, the nearest to the next landmark.
        shapes_a, shapes_b = [sa[i][0] for i in left_a][::-1], [sb[j][0] for j in left_b][::-1]
        for i, j in align_by_shape(shapes_a, shapes_b, left_a[::-1], left_b[::-1]):
            pairs.append((i, j))
            free_a.discard(i)
            free_b.discard(j)
    return [(i, j, relative_error(sa[i][1], sb[j][1])) for i, j in pairs]


def _greedy(candidates: list[tuple], free_a: set[int], free_b: set[int]) -> list[tuple[int, int]]:
    out = []
    for c in candidates:
        i, j = c[3], c[4]
        if i in free_a and j in free_b:
            out.append((i, j))
            free_a.discard(i)
            free_b.discard(j)
    return out


def _gaps(landmarks: list[tuple[int, int]]) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The spans before, between and after landmarks; none when there is no landmark at all
    (with nothing to stand on, order and shape alone say nothing)."""
    if not landmarks:
        return []
    ends = [(-1, -1), *landmarks, (math.inf, math.inf)]
    return list(itertools.pairwise(ends))


def _within(i: int, j: int, lo: tuple[float, float], hi: tuple[float, float]) -> bool:
    return lo[0] < i < hi[0] and lo[1] < j < hi[1]


def _in_order(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of pairs in the same order on both sides (a crossing pair is no landmark)."""
    pairs = sorted(pairs)
    best: list[list[tuple[int, int]]] = []
    for p in pairs:
        chain = max((c for c in best if c[-1][1] < p[1]), key=len, default=[])
        best.append([*chain, p])
    return max(best, key=len, default=[])


def align_by_shape(shapes_a: list, shapes_b: list, ids_a: list[int], ids_b: list[int]) -> list[tuple[int, int]]:
    """The most pairs of equal shapes keeping both orders (a longest common subsequence)."""
    n, m = len(shapes_a), len(shapes_b)
    if not n or not m:
        return []
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for x in range(n - 1, -1, -1):
        for y in range(m - 1, -1, -1):
            same = best[x + 1][y + 1] + 1 if shapes_a[x] == shapes_b[y] else 0
            best[x][y] = max(best[x + 1][y], best[x][y + 1], same)
    out, x, y = [], 0, 0
    while x < n and y < m:
        if shapes_a[x] == shapes_b[y] and best[x][y] == best[x + 1][y + 1] + 1:
            out.append((ids_a[x], ids_b[y]))
            x, y = x + 1, y + 1
        elif best[x + 1][y] >= best[x][y + 1]:
            x += 1
        else:
            y += 1
    return out


def repeats(load: Sequence[Callable[[], Tensor]], free: set[int]) -> dict[int, int]:
    """Free tensors that repeat one of the ``LOOKBACK`` tensors before them bit for bit → that tensor.

    A module whose output is its input (eval-mode Dropout, Identity) has no value of its
    own in an export: ONNX drops it.  Paired by order and shape it would take an unrelated
    value of the same shape (the query slice of an attention projection), and report a
    layer that does nothing as the first failing one.  Its copy is left unpaired instead:
    the tensor it repeats is compared already.
    """
    found: dict[int, int] = {}
    cache: dict[int, tuple[tuple[int, ...], str, bytes]] = {}

    def key(k: int) -> tuple[tuple[int, ...], str, bytes]:
        if k not in cache:
            t = load[k]()
            cache[k] = (tuple(t.shape), str(t.array.dtype), t.array.tobytes())
        return cache[k]

    for i in sorted(free):
        mine = key(i)
        source = next((k for k in range(i - 1, max(-1, i - 1 - LOOKBACK), -1) if key(k) == mine), None)
        if source is not None:
            found[i] = found.get(source, source)
        for k in [k for k in cache if k < i - LOOKBACK]:
            del cache[k]
    return found
