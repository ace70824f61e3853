"""A layer's own error against the error it inherits: each layer run alone on PyTorch's inputs.

A layer of the ONNX run reads values computed by the ONNX layers before it, so when an
earlier layer is wrong every later one is too.  Run alone, from the values PyTorch
computed for its inputs, a layer shows only its own error.  For each paired ONNX value,
the nodes that make it from paired values (and the graph's inputs and initializers)
are cut out into a model of their own; ONNX Runtime runs it on the PyTorch side's
captured tensors for those values, and its output is compared with PyTorch's.  A layer
whose own error is rounding while its output fails inherits the failure; the first
layer whose own error fails is the culprit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...engine.compare import compare
from ...engine.options import ComparisonOptions
from ...errors import InputError
from ...inputs.tensor import from_numpy
from ...report.headline import main_finding
from ...report.model import plain
from ..bisect import BisectReport, Entry, similarity
from .onnx import load_model, session

MAX_NODES = 500  # a layer reaching further back than this from paired values is not cut out


def _producers(model: Any) -> dict[str, Any]:
    return {out: node for node in model.graph.node for out in node.output if out}


def layer_nodes(
    value: str, producers: Mapping[str, Any], known: set[str], initializers: set[str]
) -> tuple[list[Any], list[str]] | str:
    """The nodes that make ``value`` from ``known`` values, in graph order, and the known values they read.

    A string says why there are none: a value read that is neither known, an
    initializer, nor made by a node.
    """
    if value not in producers:
        return f"{value} is not made by a node"
    nodes: dict[int, Any] = {}
    reads: list[str] = []
    stack = [producers[value]]
    while stack:
        node = stack.pop()
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        if len(nodes) > MAX_NODES:
            return f"more than {MAX_NODES} nodes lie between {value} and the paired values it depends on"
        for source in node.input:
            if not source or source in initializers:
                continue
            if source in known:
                if source not in reads:
                    reads.append(source)
            elif source in producers:
                stack.append(producers[source])
            else:
                return f"{value} depends on {source}, which no capture holds"
    order = {id(n): k for k, n in enumerate(producers.values())}
    return sorted(nodes.values(), key=lambda n: order[id(n)]), reads


def _alone(model: Any, nodes: list[Any], reads: list[str], feeds: dict[str, np.ndarray], value: str) -> np.ndarray:
    import onnx
    from onnx import helper

    used = {source for node in nodes for source in node.input}
    typed = {v.name: v for v in [*model.graph.value_info, *model.graph.output]}
    inputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(feeds[name].dtype), feeds[name].shape)
        for name in reads
    ]
    graph = helper.make_graph(
        nodes,
        "layer",
        inputs,
        [typed.get(value) or onnx.ValueInfoProto(name=value)],
        initializer=[t for t in model.graph.initializer if t.name in used],
    )
    alone = helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)
    sess = session(alone, None, f"the layer making {value}")
    return sess.run([value], feeds)[0]


def isolate(
    result: BisectReport,
    model_path: str | Path,
    a: Sequence[Entry],
    b: Sequence[Entry],
    options: ComparisonOptions,
) -> BisectReport:
    """Fill each pair's ``isolated`` with its own error (or why it has none); ``result`` is returned."""
    import onnx

    model, _ = load_model(model_path)
    with contextlib.suppress(Exception):  # types help ORT, but a model inference cannot follow still runs
        model = onnx.shape_inference.infer_shapes(model)
    producers = _producers(model)
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
    a_names, b_names = {e.name for e in a}, {e.name for e in b}
    onnx_is_b = len(b_names & set(producers)) >= len(a_names & set(producers))
    by_name = {e.name: e for e in (b if onnx_is_b else a)}
    torch_of = _torch_of(result, a, b, onnx_is_b)
    if not any(v in producers for v in torch_of):
        raise InputError(
            f"no paired tensor is a value of {Path(model_path).name}; give the model the ONNX run was made from"
        )
    # A layer is fed only surely paired values: a pair made by order and shape whose values
    # disagree may hold another layer's tensor, which would make every layer it feeds look wrong.
    sure = {p.b_name if onnx_is_b else p.a_name for p in result.pairs if p.sure}
    known = (set(torch_of) & sure) | {n for n in graph_inputs if n in by_name}
    for p in result.pairs:
        onnx_name = p.b_name if onnx_is_b else p.a_name
        if onnx_name not in torch_of:
            p.isolated = {"verdict": None, "why": "likely mispaired: its PyTorch values are another layer's"}
            continue
        cut = layer_nodes(onnx_name, producers, known - {onnx_name}, initializers)
        if isinstance(cut, str):
            p.isolated = {"verdict": None, "why": cut}
            continue
        feeds = {name: (torch_of[name] if name in torch_of else by_name[name]).load().array for name in cut[1]}
        p.isolated = _run_alone(model, onnx_name, cut, feeds, torch_of[onnx_name], onnx_is_b, options)
    return result


def _torch_of(result: BisectReport, a: Sequence[Entry], b: Sequence[Entry], onnx_is_b: bool) -> dict[str, Entry]:
    """Each paired ONNX value → the PyTorch side's entry for it (likely mispairings left out:
    their PyTorch values are another layer's, no input to feed a layer with)."""
    torch_of: dict[str, Entry] = {}
    torch_entries = {e.name: e for e in (a if onnx_is_b else b)}
    for p in result.pairs:
        if p.likely_mispaired:
            continue
        onnx_name, torch_name = (p.b_name, p.a_name) if onnx_is_b else (p.a_name, p.b_name)
        torch_of[onnx_name] = torch_entries[torch_name]
    return torch_of


def _run_alone(model: Any, onnx_name: str, cut: tuple[list[Any], list[str]], feeds: dict[str, np.ndarray],
               mine_entry: Entry, onnx_is_b: bool, options: ComparisonOptions) -> dict[str, Any]:
    """One layer run alone on the PyTorch side's inputs, compared with the PyTorch side's
    output: its own error, or why it has none."""
    nodes, reads = cut
    try:
        out = _alone(model, nodes, reads, feeds, onnx_name)
    except InputError as err:
        return {"verdict": None, "why": err.message}
    except Exception as err:  # ORT refusing the inputs PyTorch gave (a dtype it lacks)
        return {"verdict": None, "why": " ".join(str(err).split())[:300]}
    mine = mine_entry.load()
    ran = from_numpy(np.asarray(out), "ONNX Runtime, layer alone", name=onnx_name)
    report = compare(mine, ran, options) if onnx_is_b else compare(ran, mine, options)
    t = report.tolerance
    return {
        "verdict": report.verdict,
        # The layer's own relation, free of the rounding its inputs inherit: what the culprit did.
        "finding": plain(main_finding(report.findings)) if report.verdict == "investigate" else None,
        "max_ulp": report.max_ulp,
        "max_abs_diff": report.max_abs_diff,
        "max_rel_diff": report.max_rel_diff,
        "fraction_fail": t.fraction_fail if t is not None else None,
        **similarity(mine, ran),  # cosine and SQNR of the layer's own error, beside the inherited one's
        "nodes": [n.op_type for n in nodes],
        "reads": reads,
    }
