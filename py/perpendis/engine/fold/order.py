"""Order statistics: the values at given ranks, without sorting everything."""

from __future__ import annotations

import numpy as np


def select(values: np.ndarray, ranks: list[int], *, scratch: bool = False) -> dict[int, float]:
    """The ``r``-th smallest of ``values`` for each ``r`` in ``ranks`` (sorted); with
    ``scratch``, ``values`` is the caller's to lose and is reordered rather than copied.

    Only the ranks wanted are put in place: a full sort of a few million errors cost a
    third of a whole comparison in the browser.  One partition at the lowest rank puts
    every value at or above it after it, unordered; the wanted ranks are then read from
    that tail, sorted when it is short (a partition at several ranks at once costs about
    as many partitions, and the fancy selection of a tail by a mask cost more than both),
    else partitioned at the other ranks.  Exact either way: a rank's value is the same
    whichever way it is put in place.
    """
    if not ranks:
        return {}
    low = ranks[0]
    placed = values if scratch else np.array(values)
    placed.partition(low)
    out = {low: float(placed[low])}
    if len(ranks) == 1:
        return out
    tail = placed[low + 1 :]  # a view: put in place where it lies, no further copy
    if len(tail) <= max(1 << 16, len(values) // 4):
        tail.sort()
    else:
        tail.partition([r - low - 1 for r in ranks[1:]])
    return out | {r: float(tail[r - low - 1]) for r in ranks[1:]}

