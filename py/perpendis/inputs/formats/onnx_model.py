"""The nodes of an ONNX ``ModelProto``, read from the protobuf wire format without onnx.

Pairing a PyTorch capture with an ONNX Runtime one needs, of the model, only each
node's op type, the values it reads and writes, and the exporter's notes on it
(``metadata_props``: torch.onnx writes ``pkg.torch.onnx.name_scopes``, the module
path of the call that made the node).  The page has no onnx package, so those few
fields are decoded here; initializers' data is skipped, never copied.

Fields read (onnx.proto3): ModelProto.graph = 7; GraphProto.node = 1, name = 2, initializer = 5,
input = 11, output = 12; NodeProto.input = 1, output = 2, name = 3, op_type = 4,
metadata_props = 9; StringStringEntryProto.key = 1, value = 2; ValueInfoProto.name = 1;
TensorProto.name = 8.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from ...errors import InputError
from .buffer import BytesLike, as_view
from .onnx_pb import _fields


@dataclass
class Node:
    op_type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    meta: dict[str, str] = field(default_factory=dict)


@dataclass
class Graph:
    nodes: list[Node]
    inputs: list[str]  # graph inputs that are not initializers: what a run is fed
    outputs: list[str]
    initializers: set[str]
    name: str = ""  # GraphProto.name: the graph id Model Explorer's ONNX adapter gives the graph


def _text(value: object) -> str:
    if not isinstance(value, memoryview):
        raise InputError("not an ONNX model: a text field holds a number")
    return bytes(value).decode("utf-8", "replace")


def _message(value: object) -> memoryview:
    if not isinstance(value, memoryview):
        raise InputError("not an ONNX model: a message field holds a number")
    return value


def _named(view: memoryview, number: int) -> str:
    """The text field ``number`` of a small message (a ValueInfoProto's or TensorProto's name)."""
    name = ""
    for n, wire, value in _fields(view):
        if n == number and wire == 2:
            name = _text(value)
    return name


def _node(view: memoryview) -> Node:
    node = Node("", "", [], [])
    for number, wire, value in _fields(view):
        if wire != 2:
            continue
        if number == 1:
            node.inputs.append(_text(value))
        elif number == 2:
            node.outputs.append(_text(value))
        elif number == 3:
            node.name = _text(value)
        elif number == 4:
            node.op_type = _text(value)
        elif number == 9:
            entry = {n: _text(v) for n, w, v in _fields(_message(value)) if w == 2 and n in (1, 2)}
            node.meta[entry.get(1, "")] = entry.get(2, "")
    return node


def check_model(path: str | os.PathLike[str]) -> None:
    """Refuse a file whose first bytes are no ``ModelProto`` before it is read whole (a 3 GB
    file of garbage was read in 10 s and 3.1 GB of memory to be told so): the top-level
    fields in its first 64 KiB must be protobuf fields that fit in the file.  Field numbers
    are not checked, since ONNX adds fields to ModelProto."""
    from .sniff import check_prefix, fields_fit

    def check(head: memoryview, size: int, _tail: bytes) -> None:
        if size == 0:
            raise InputError("not an ONNX model: the file is empty")
        fields_fit(head, size, None, "ONNX model")

    check_prefix(path, check)


def read_graph(data: BytesLike) -> Graph:
    """The main graph's nodes in file order (topological, as ONNX requires), inputs and outputs."""
    view = as_view(data)
    graph_view = None
    try:
        for number, wire, value in _fields(view):
            if number == 7 and wire == 2:
                graph_view = _message(value)
        if graph_view is None:
            raise InputError("not an ONNX model: it has no graph (is it a TensorProto or another file?)")
        nodes, inputs, outputs, initializers, name = [], [], [], set(), ""
        for number, wire, value in _fields(graph_view):
            if wire != 2:
                continue
            if number == 2:
                name = _text(value)
            elif number == 1:
                nodes.append(_node(_message(value)))
            elif number == 5:
                initializers.add(_named(_message(value), 8))
            elif number == 11:
                inputs.append(_named(_message(value), 1))
            elif number == 12:
                outputs.append(_named(_message(value), 1))
    except InputError as err:
        raise InputError(err.message.replace("ONNX TensorProto", "ONNX model")) from None
    if not nodes:
        raise InputError("not an ONNX model: its graph has no nodes")
    return Graph(nodes, [n for n in inputs if n not in initializers], outputs, initializers, name)


def _listed(text: str | None) -> list[str] | None:
    """A Python list literal of strings, as torch.onnx writes name scopes and class hierarchies."""
    if not text:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else None


def module_of(scopes: list[str] | None) -> str | None:
    """The module path a node was made in: the deepest name scope above the node's own name.

    torch.onnx writes ``['', 'features', 'features.1', '_native_batch_norm_legit_no_training']``:
    the root module, its submodules down to the one called, then the traced op.  An op made
    by the root's own ``forward`` (a residual add) has no module.
    """
    if not scopes or len(scopes) < 3:
        return None
    return scopes[-2] or None


def describe(graph: Graph) -> dict[str, dict[str, object]]:
    """Each value the graph computes (inputs first, then node outputs in order) → what is known of it."""
    out: dict[str, dict[str, object]] = {name: {"op_type": "input"} for name in graph.inputs}
    for node in graph.nodes:
        scopes = _listed(node.meta.get("pkg.torch.onnx.name_scopes"))
        info = {
            "op_type": node.op_type,
            "node": node.name or None,
            "inputs": [v for v in node.inputs if v and v not in graph.initializers],
            "module": module_of(scopes),
            "scopes": scopes,
            "classes": _listed(node.meta.get("pkg.torch.onnx.class_hierarchy")),
            "namespace": node.meta.get("namespace"),
        }
        for value in node.outputs:
            if value and value not in out:
                out[value] = {k: v for k, v in info.items() if v is not None}
    return out
