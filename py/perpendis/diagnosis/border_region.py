"""The border region: every failure within a few entries of an edge of an image's spatial
axes, the interior agreeing, from the sampled failures and the failure count.

A convolution or pool reads past the edge only through its padding, so a difference
confined to a ring of width k around the image, with the interior equal, is what a
padding that differs leaves (zeros against reflect or replicate, pads of another size or
side) or an edge rule that differs (count_include_pad, ceil_mode, align_corners).  Offered
only on the spatial axes of a 4-D or 5-D tensor (NCHW, NCDHW), where the edges are an
image's.
"""

from __future__ import annotations

import math

import numpy as np

from ..report.model import Finding, Report, place
from .failing_region import gross_failures

MAX_WIDTH = 4  # widest ring named a border (a 9x9 kernel's padding)
MIN_DENSITY = 0.3  # share of the ring's elements that fail: a ring mostly wrong, not a few corners
BORDER_CAUSES = [
    "padding that differs at the image's edge: zeros against reflect or replicate (padding_mode), pads of "
    "another size or on other sides (an asymmetric 'same' padding, pads exported in the wrong order)",
    "an edge rule that differs in a pool or resize (count_include_pad, ceil_mode, align_corners)",
]


def _ring(shape: tuple[int, ...], axes: tuple[int, ...], k: int) -> int:
    """How many elements lie within ``k`` of an edge of any of ``axes``."""
    inner = math.prod(max(shape[a] - 2 * k, 0) for a in axes)
    return math.prod(shape) - inner * math.prod(n for i, n in enumerate(shape) if i not in axes)


def find_border(r: Report) -> list[Finding]:
    """A finding when every sampled failure lies within ``k`` (at most :data:`MAX_WIDTH`)
    of an edge of the spatial axes, the failures fit in that ring and fill much of it."""
    tol, rows = r.tolerance, r.samples.get("fails")
    shape = tuple(r.compared_shape or ())
    if tol is None or rows is None or len(rows) == 0 or len(shape) not in (4, 5) or not gross_failures(r):
        return []
    axes = tuple(range(2, len(shape)))
    if min(shape[a] for a in axes) < 4 * 2:
        return []  # too small for an interior to speak
    index = np.unravel_index(rows[:, 0].astype(np.intp), shape)
    depth = np.min([np.minimum(index[a], shape[a] - 1 - index[a]) for a in axes], axis=0)
    k = int(depth.max()) + 1
    if k > min(MAX_WIDTH, min(shape[a] for a in axes) // 4):
        return []
    ring = _ring(shape, axes, k)
    if tol.n_fail > ring or tol.n_fail < MIN_DENSITY * ring:
        return []
    names = ", ".join(str(a) for a in axes)
    width = "the outermost row and column" if k == 1 else f"the outer {k} rows and columns"
    message = (f"every failure lies on the border of the image: {width} of axes ({names}) hold all "
               f"{tol.n_fail:,} failing elements ({tol.n_fail / ring:.0%} of that ring), while the interior agrees "
               "within the tolerance")
    where = place(f"border of width {k} along axes ({names})", axis=axes[0], axis_size=shape[axes[0]],
                  border=k, axes=list(axes))
    return [Finding("border", "error", message, where, list(BORDER_CAUSES))]
