"""Where a single-place mutation first shows in a bisect: the ONNX values it reaches, and
the first of them a layer comparison can see (the first paired one, in graph order).

Shared by the bisect bench (``bench/bisect_exports.py``) and the scorer of the cause named
at that layer (``score_layers.py``), so both judge "the right layer" by one rule.
"""

from __future__ import annotations

from typing import Any

import onnx

from .mutate import node_by_name, readers


def downstream(model: onnx.ModelProto, *values: str) -> set[str]:
    """Every value that reads one of ``values``, directly or not, and the values themselves."""
    reached = set(values)
    for node in model.graph.node:
        if any(s in reached for s in node.input):
            reached.update(o for o in node.output if o)
    return reached


def expected_first(
    result: Any, model: onnx.ModelProto, values: set[str] | str, order: list[str], sure: bool = False
) -> str | None:
    """The first paired ONNX value, in ONNX order, that the mutated value(s) reach (a bisect
    result's pairs, likely mispairings left out; with ``sure``, only the surely paired ones,
    where a report that blames a surely paired layer can see it)."""
    reached = downstream(model, *([values] if isinstance(values, str) else values))
    paired = {p.b_name for p in result.pairs if not p.likely_mispaired and (p.sure or not sure)}
    return next((v for v in order if v in reached and v in paired), None)


def mutated_values(model: onnx.ModelProto, lab: dict[str, Any]) -> set[str]:
    """The clean graph's values a mutation changes first: the node's output (an attribute
    changed, a node bypassed or doubled, nodes inserted after it, which write back to its
    output's name), or the outputs of every node reading a perturbed initializer."""
    if lab["operator"].startswith(("init_", "head_")):
        return {n.output[0] for n in readers(model, lab["target"])}
    return {node_by_name(model, lab["target"]).output[0]}
