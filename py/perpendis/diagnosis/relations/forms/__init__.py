"""The form search: relations of A to B found by their shape, with their parameters
fitted and then checked element by element, stated only where they hold on 99 % of the
elements, each with the causes it implies (``docs/relations.md``, "Forms").

Families, tried in this order (the first that holds is the answer): bytes reversed
(:mod:`.byte_order`), a parameter-free softmax of the other side, elementwise maps
(:mod:`.elementwise_maps`), index maps (:mod:`.index_maps`), slices gathered from other
indices (:mod:`.gather`), row maps on probabilities, a top-k filter and a running sum
(:mod:`.row_maps`), a causal mask on one side (:mod:`.triangle`), a masked fill, ties
rounded another way, integers rounded toward zero or down on one side, another slope on
one sign of B and complementary supports (:mod:`.partial_maps`), a fixed mix of the last
axis's entries (:mod:`.fibre_maps`), group maps (:mod:`.group_maps`), and last any
smooth function of B (:mod:`.function_of`).  A pair of a few values (a loss) is read by
one form only: a whole ratio between them (:mod:`.few_values`).
"""

from __future__ import annotations

from ....report.model import Finding
from ..pair import Pair
from . import (
    byte_order,
    elementwise_maps,
    few_values,
    fibre_maps,
    function_of,
    gather,
    group_maps,
    index_maps,
    partial_maps,
    row_maps,
    triangle,
)
from .form import Form, finding
from .view import few_view, view_of

__all__ = ["KINDS", "STRUCTURAL", "Form", "find", "finding", "search"]

# Every kind a form's finding can carry (``scale``/``offset``/``affine`` for a plain linear map).
KINDS = frozenset({"elementwise_map", "scale", "offset", "affine", "wrap", "saturated", "threshold", "index_map",
                   "fill", "causal_mask", "ties", "rounded_toward_zero", "rounded_down", "sign_split",
                   "disjoint_supports", "row_softmax", "row_temperature", "scan", "fibre_map", "block_constant",
                   "sample_offset", "group_affine", "normalised_fibres"})

FAMILIES = (byte_order.find, row_maps.softmax_of, elementwise_maps.find, index_maps.find, gather.find,
            row_maps.find, row_maps.top_k, row_maps.cumulative, triangle.causal, partial_maps.fill,
            partial_maps.ties, partial_maps.toward_zero, partial_maps.rounded_down, partial_maps.sign_split,
            partial_maps.disjoint_supports, fibre_maps.fibre_linear, group_maps.block_constant,
            group_maps.sample_offset, group_maps.group_affine, group_maps.normalised_fibres, function_of.find,
            partial_maps.zero_fill)


# The families that read only where each side is zero or holds a mask value: what a
# print at a few digits keeps exactly, so they hold on printed values as on stored ones.
STRUCTURAL = (triangle.causal, partial_maps.disjoint_supports)


def search(pair: Pair, families: tuple = FAMILIES) -> Form | None:
    """The first form of ``families`` that holds for ``pair``, or None."""
    view = view_of(pair)
    if view is None:
        few = few_view(pair) if families is FAMILIES else None
        return None if few is None else few_values.ratio(few)
    for family in families:
        got = family(view)
        if got is not None:
            return got
    return None


def find(pair: Pair) -> list[Finding]:
    form = search(pair)
    return [] if form is None else [finding(form)]
