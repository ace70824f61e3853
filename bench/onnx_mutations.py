"""Single-node bugs injected into an ONNX model: a changed attribute, a bypassed node, a perturbed initializer.

Each mutation is a copy of the model with one node changed, and names that node's first
output: the value a bisect should find first.  Candidates are picked in graph order,
spread over the model, so that the bugs reach early, middle and late layers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

UNARY = {"Relu", "Gelu", "Tanh", "Sigmoid", "Erf", "Softmax", "LayerNormalization", "Sqrt", "Neg", "Exp"}


@dataclass
class Mutation:
    name: str  # what was done, for the table
    value: str  # the mutated node's output
    model: Any  # the mutated onnx.ModelProto


def _shapes(model: Any) -> dict[str, tuple]:
    inferred = onnx.shape_inference.infer_shapes(model)
    out = {}
    for v in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        dims = v.type.tensor_type.shape.dim
        out[v.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
    return out


def _copy(model: Any) -> Any:
    clone = onnx.ModelProto()
    clone.CopyFrom(model)
    return clone


def _bypass(model: Any, k: int) -> Any:
    """Node ``k`` made an Identity of its first input."""
    clone = _copy(model)
    node = clone.graph.node[k]
    first = node.input[0]
    del node.input[:]
    node.input.append(first)
    del node.attribute[:]
    node.op_type, node.domain = "Identity", ""
    return clone


def _attribute(model: Any, k: int) -> Any | None:
    clone = _copy(model)
    node = clone.graph.node[k]
    if node.op_type == "LayerNormalization":
        kept = [a for a in node.attribute if a.name != "epsilon"]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute("epsilon", 0.5)])
        return clone
    if node.op_type == "Gelu":
        del node.attribute[:]
        node.attribute.append(helper.make_attribute("approximate", "tanh"))
        return clone
    if node.op_type == "Softmax":
        for a in node.attribute:
            if a.name == "axis":
                a.i = -2 if a.i in (-1,) else -1
                return clone
        node.attribute.append(helper.make_attribute("axis", -2))
        return clone
    return None


def _log(model: Any, k: int) -> Any:
    """Node ``k`` (a unary op) made a Log: NaN where its finite input is negative, -inf at zero."""
    clone = _copy(model)
    node = clone.graph.node[k]
    del node.attribute[:]
    node.op_type, node.domain = "Log", ""
    return clone


def nan_makers(model: Any, limit: int = 3) -> Iterator[Mutation]:
    """Up to ``limit`` bugs that make the first NaN of the run: a unary op (spread over the graph)
    turned into a Log of an input that holds negative values."""
    shapes = _shapes(model)
    unary = [
        k for k, n in enumerate(model.graph.node)
        if n.op_type in {"Relu", "Gelu", "Tanh", "Erf", "Neg"} and shapes.get(n.input[0]) == shapes.get(n.output[0])
    ]
    for k in _spread(unary, limit):
        node = model.graph.node[k]
        yield Mutation(f"log {node.op_type} {node.output[0]}", node.output[0], _log(model, k))


def _perturb(model: Any, name: str) -> Any:
    """One element of initializer ``name`` moved by several times the largest magnitude it holds."""
    clone = _copy(model)
    tensor = next(t for t in clone.graph.initializer if t.name == name)
    values = numpy_helper.to_array(tensor).copy()
    flat = values.reshape(-1)
    flat[len(flat) // 3] += 3.0 * max(1.0, float(np.abs(flat).max()))
    tensor.CopyFrom(numpy_helper.from_array(values, name))
    return clone


KINDS = ("bypass", "attribute", "perturb")


def mutations(model: Any, limit: int = 12, kinds: tuple[str, ...] = KINDS) -> Iterator[Mutation]:
    """Up to ``limit`` single-node bugs of ``kinds``, each kind spread over the graph."""
    shapes = _shapes(model)
    floats = {
        t.name for t in model.graph.initializer
        if t.data_type == onnx.TensorProto.FLOAT and int(np.prod(t.dims or [1])) >= 4
    }
    readers: dict[str, int] = {}
    for node in model.graph.node:
        for source in node.input:
            readers[source] = readers.get(source, 0) + 1
    bypass, attribute, perturb = [], [], []
    for k, node in enumerate(model.graph.node):
        out = node.output[0]
        same = node.input and shapes.get(node.input[0]) == shapes.get(out) and None not in (shapes.get(out) or (None,))
        if node.op_type in UNARY | {"Add", "Mul"} and same:
            bypass.append(k)
        if node.op_type in ("LayerNormalization", "Gelu", "Softmax"):
            attribute.append(k)
        owned = [s for s in node.input if s in floats and readers.get(s) == 1]
        if owned:
            perturb.append((k, owned[0]))
    picked: list[Mutation] = []
    per_kind = max(1, limit // len(kinds))
    found = {"bypass": bypass, "attribute": attribute, "perturb": perturb}
    for kind, items in ((k, found[k]) for k in kinds):
        for item in _spread(items, per_kind):
            if kind == "perturb":
                k, name = item
                mutated = _perturb(model, name)
            else:
                k = item
                mutated = _bypass(model, k) if kind == "bypass" else _attribute(model, k)
            if mutated is None:
                continue
            node = model.graph.node[k]
            picked.append(Mutation(f"{kind} {node.op_type} {node.output[0]}", node.output[0], mutated))
    yield from picked[:limit]


def _spread(items: list, n: int) -> list:
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)] if n > 1 else items[:1]
