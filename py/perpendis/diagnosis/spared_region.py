"""The spared region: the first entries of an axis where A still agrees with B while every
later entry fails, from the fold's per-axis failure counts.

This is the complement of :mod:`.failing_region`, and it implies more than a dependence
on the position does: something that leaves the start of a sequence alone and changes
every later step, i.e. something that mixes positions (causal attention's position 0
sees only itself; a rotary embedding turns it by angle 0) or carries state from step to
step (a decode loop's first step is computed from the prompt alone).  Those classes are
offered only on an axis that can be a sequence ((batch, position, feature) tensors, or
the rows of a 2-D one), never on an image's rows.
"""

from __future__ import annotations

import numpy as np

from ..report.model import Finding, Report, place
from .failing_region import REGION_DENSITY, gross_failures
from .relations.pair import axis_noun

# The spared start is at most this share of the axis, so most of it has departed.
SPARED_MAX_SHARE = 0.5
MIN_AXIS = 3  # a spared first entry and at least two departed ones

# What a spared start implies on a sequence axis: what differs mixes positions or carries
# state between steps.  In causal attention position 0 attends only to itself, so nothing
# in the attention scores reaches it; a rotary embedding turns it by angle 0.  On the
# mutation corpus the start was spared by an attention scale, a transpose of the keys, a
# rotary slice negated and a rotary add bypassed: the class is implied, not one member.
SPARED_START = [
    "something that mixes positions: in causal attention position 0 attends only to itself, so it does not see "
    "the attention scores (their scale 1/√d, the queries and keys, the mask), and a rotary embedding turns it by "
    "angle 0 (a rotary layout that differs, interleaved against half-split, spares it too)",
    "state carried from step to step: a KV cache, or the position ids of cached steps, off after the first step "
    "(which is computed from the prompt alone)",
]
_SEQUENCE_NOUNS = ("position", "row")


def _spared(counts: np.ndarray, per_index: float) -> int | None:
    """How many first entries pass while every later one mostly fails, or None."""
    n = counts.size
    failing = counts >= REGION_DENSITY * per_index
    if not failing.any():
        return None
    k = int(np.argmax(failing))  # the first failing entry
    if k == 0 or k > SPARED_MAX_SHARE * n or counts[:k].any() or not failing[k:].all():
        return None
    return k


def find_spared(r: Report) -> list[Finding]:
    """A finding when, along one axis, the first entries agree within the tolerance and
    every later entry fails on most of its elements, grossly."""
    tol = r.tolerance
    shape = tuple(r.compared_shape or ())
    if tol is None or not r.axes or len(shape) != len(r.axes) or not gross_failures(r):
        return []
    n_judged = tol.n_judged or r.n_elements
    for axis in r.axes:
        if axis.bucket != 1 or axis.size < MIN_AXIS:
            continue
        k = _spared(np.asarray(axis.fail_counts), n_judged / axis.size)
        if k is None:
            continue
        noun = axis_noun(shape, axis.axis)
        first = f"{noun} 0" if k == 1 else f"the first {k} {noun}s (0-{k - 1})"
        message = (f"A agrees with B on {first} of axis {axis.axis} and departs from it at every later {noun} "
                   f"({k}-{axis.size - 1}), each failing on most of its elements")
        sequence = noun in _SEQUENCE_NOUNS and (len(shape) == 3 or (len(shape) == 2 and axis.axis == 0))
        where = place(f"axis {axis.axis} from index {k}", axis=axis.axis, axis_size=axis.size,
                      indices=list(range(k, axis.size)), spared=list(range(k)))
        return [Finding("spared_start", "error", message, where, list(SPARED_START) if sequence else [])]
    return []
