"""What the page hands the bisect op, sorted out: two captures, and maybe the ONNX model.

A user drops what they have: the two captures on one box, or each on its own, and the
``.onnx`` model beside either, for its exporter metadata.  Here the model is taken out
of whichever box holds it (by its name, and decoded to be sure it is one), two captures
in one box become the pair, and each capture's own record of its tensors (the metadata a
``perpendis`` capture writes) is read for pairing, and whether its file kept their order
(:mod:`.bisect_order`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError, blame
from ..inputs.formats import safetensors
from ..inputs.formats.onnx_model import Graph, describe, read_graph
from .bisect_order import arrange
from .capture.store import read_info


def _is_model(spec: object) -> bool:
    return isinstance(spec, Mapping) and "data" in spec and str(spec.get("name") or "").lower().endswith(".onnx")


def sort_inputs(a: object, b: object, payloads: Mapping[str, Any]) -> tuple[object, object, Graph | None]:
    """``(capture A, capture B, the model's graph or None)`` from the two boxes; the graph is
    kept beyond pairing, since Model Explorer's node data names its nodes."""
    models = [s for side in (a, b) for s in (side if isinstance(side, list) else [side]) if _is_model(s)]
    if len(models) > 1:
        raise InputError("two .onnx models were given: drop only the model the ONNX capture was run from")

    def without_model(spec: object) -> object:
        if isinstance(spec, list):
            kept = [s for s in spec if not _is_model(s)]
            return kept[0] if len(kept) == 1 else kept or None
        blank = isinstance(spec, Mapping) and "data" not in spec and not str(spec.get("text", "")).strip()
        return None if _is_model(spec) or blank else spec

    a, b = without_model(a), without_model(b)
    if b is None and isinstance(a, list) and len(a) == 2:
        a, b = a  # two captures dropped on one box are the pair, in the order given
    elif a is None and isinstance(b, list) and len(b) == 2:
        a, b = b
    if not models:
        return a, b, None
    with blame("model", str(models[0].get("name"))):
        return a, b, read_graph(payloads[models[0]["data"]])


def capture_info(spec: object, payloads: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What a single capture file records of its tensors; ``{}`` for lists of files and text."""
    if isinstance(spec, Mapping) and "data" in spec:
        return read_info(payloads[spec["data"]])
    return {}


def records_order(spec: object, payloads: Mapping[str, Any]) -> bool:
    """Whether a box's capture file gives its tensors' saving order (see :mod:`.bisect_order`);
    a list of files is taken in the order given, as the page always has."""
    if isinstance(spec, Mapping) and "data" in spec:
        return safetensors.records_order(payloads[spec["data"]])
    return True


def _label(spec: object, side: str) -> str:
    """The capture's file name for a message, else the box's letter."""
    return str(spec.get("name") or side) if isinstance(spec, Mapping) else side


def arranged(
    a: object, b: object, payloads: Mapping[str, Any], graph: Graph | None, ea: list, eb: list
) -> tuple[list, list, dict[str, Any]]:
    """:func:`.bisect_order.arrange` for the boxes' captures: their entries in execution order
    where it can be had, and :func:`~.bisect.bisect`'s pairing and order keywords."""
    kept = records_order(a, payloads), records_order(b, payloads)
    recorded = capture_info(a, payloads), capture_info(b, payloads)
    values = None if graph is None else describe(graph)
    return arrange(ea, eb, kept, values, (_label(a, "A"), _label(b, "B")), recorded)
