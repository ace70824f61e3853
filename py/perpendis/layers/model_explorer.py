"""A bisect's per-layer results as node data for Google Model Explorer, over the ONNX graph.

Model Explorer (``ai-edge-model-explorer``, ONNX through ``model-explorer-onnx``) colours a
graph's nodes by a *node data* file: ``{graph_id: {"results": {node_id: {"value": number}},
"thresholds": [...]}}`` (``model_explorer.node_data_builder.ModelNodeData``).  Such a file holds
one number per node, so each figure goes in a file of its own (:data:`METRICS`): seeing the
first failing layer among hundreds of nodes is easier on the graph than down a table.

The ONNX adapter names a graph by ``GraphProto.name`` and a node by ``NodeProto.name``
(an unnamed node by ``<node_I>``, I its place in the graph); a pair is put on the node that
computes its ONNX value.  Layers with no number for a figure (an SQNR of identical tensors,
which is infinite; a layer not run alone) are left out of that file, so they stay uncoloured.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..inputs.formats.buffer import BytesLike
from ..inputs.formats.onnx_model import Graph, read_graph

if TYPE_CHECKING:  # bisect_report's to_model_explorer imports this module
    from .bisect_report import BisectReport, Pair

GREEN, LIME, YELLOW, ORANGE, RED, GREY = "#2e7d32", "#9ccc65", "#fdd835", "#fb8c00", "#e53935", "#9e9e9e"

# A verdict as a number the thresholds colour: the value is what the side panel shows.
VERDICT_VALUE = {"identical": 0, "rounding": 1, "investigate": 2}
MISPAIRED_VALUE = 3  # failing, but paired by order and shape between agreeing layers (grey)

_VERDICT_THRESHOLDS = [(0, GREEN), (1, LIME), (2, RED), (3, GREY)]
# Thresholds are upper bounds, in order; a value above the last is left white.
_ULP_THRESHOLDS = [(0, GREEN), (16, LIME), (1024, YELLOW), (2**20, ORANGE), (1.7e308, RED)]
_COSINE_THRESHOLDS = [(0.9, RED), (0.99, ORANGE), (0.999, YELLOW), (0.999999, LIME), (2, GREEN)]
_SQNR_THRESHOLDS = [(10, RED), (20, ORANGE), (40, YELLOW), (80, LIME), (1e300, GREEN)]


def _verdict(verdict: str | None, mispaired: bool) -> float | None:
    if verdict is None:
        return None
    return MISPAIRED_VALUE if mispaired and verdict == "investigate" else VERDICT_VALUE.get(verdict)


def _own(key: str) -> Callable[[Pair], Any]:
    return lambda p: (p.isolated or {}).get(key)


# Figure → (how a pair gives it, thresholds, what it is).  "verdict" is the main file.
METRICS: dict[str, tuple[Callable[[Pair], Any], list[tuple[float, str]], str]] = {
    "verdict": (lambda p: _verdict(p.verdict, p.likely_mispaired), _VERDICT_THRESHOLDS,
                "verdict: 0 identical, 1 rounding, 2 investigate, 3 likely mispaired"),
    "max_ulp": (lambda p: p.report.max_ulp, _ULP_THRESHOLDS, "max ULP"),
    "cosine": (lambda p: p.figures.get("cosine"), _COSINE_THRESHOLDS, "cosine similarity"),
    "sqnr_db": (lambda p: p.figures.get("sqnr_db"), _SQNR_THRESHOLDS, "SQNR dB"),
    "own_verdict": (lambda p: _verdict(_own("verdict")(p), p.likely_mispaired), _VERDICT_THRESHOLDS,
                    "own verdict, run alone: 0 identical, 1 rounding, 2 investigate"),
    "own_max_ulp": (_own("max_ulp"), _ULP_THRESHOLDS, "own max ULP, run alone"),
    "own_sqnr_db": (_own("sqnr_db"), _SQNR_THRESHOLDS, "own SQNR dB, run alone"),
}
OWN_METRICS = ("own_verdict", "own_max_ulp", "own_sqnr_db")


def node_ids(graph: Graph) -> dict[str, str]:
    """Each value the graph computes → the id Model Explorer's ONNX adapter gives its node."""
    out: dict[str, str] = {}
    for i, node in enumerate(graph.nodes):
        for value in node.outputs:
            if value:
                out.setdefault(value, node.name or f"<node_{i}>")
    return out


def node_data(result: BisectReport, graph: Graph, metric: str = "verdict") -> dict[str, Any]:
    """The node-data JSON object of one figure, ``{graph_id: {"name", "results", "thresholds"}}``.

    A pair goes on the node writing its B value, else its A value (the ONNX side may be either);
    an error when no pair names a value of the graph, since the file would colour nothing.
    """
    if metric not in METRICS:
        raise InputError(f"unknown Model Explorer figure {metric!r}; one of {', '.join(METRICS)}", where="metric")
    get, thresholds, label = METRICS[metric]
    ids = node_ids(graph)
    placed = [(ids.get(p.b_name) or ids.get(p.a_name), p) for p in result.pairs]
    if result.pairs and not any(node for node, _ in placed):
        raise InputError(
            "no paired layer is a value computed by this ONNX model's nodes; give the model the ONNX capture "
            "was run from", where="model-explorer",
        )
    results: dict[str, dict[str, float]] = {}
    for node, pair in placed:
        value = get(pair)
        if node is None or node in results or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue  # a node with several paired outputs is coloured by its first, in A's order
        results[node] = {"value": value}
    return {
        graph.name: {
            "name": f"perpendis {label}",
            "results": results,
            "thresholds": [{"value": v, "bgColor": c} for v, c in thresholds],
        }
    }


def to_model_explorer(result: BisectReport, model: BytesLike, metric: str = "verdict") -> dict[str, Any]:
    """:func:`node_data` for the ONNX model given as its bytes."""
    return node_data(result, read_graph(model), metric)


def node_data_text(result: BisectReport, graph: Graph, metric: str) -> str:
    """One figure's file as written, the same text from the CLI and the page (no NaN: JSON has none)."""
    return json.dumps(node_data(result, graph, metric), indent=1, allow_nan=False) + "\n"


def figures(result: BisectReport) -> list[str]:
    """The figures written: every one of :data:`METRICS`, the own-error ones only when layers
    were run alone (``--isolate``), since otherwise they would colour nothing."""
    isolated = any(p.isolated is not None for p in result.pairs)
    return [m for m in METRICS if isolated or m not in OWN_METRICS]


def file_name(out: str, metric: str) -> str:
    """A figure's file name: ``OUT`` for the verdict, ``OUT``'s stem ``.<figure>.json`` for the others."""
    stem = out[: -len(".json")] if out.endswith(".json") else out
    return out if metric == "verdict" else f"{stem}.{metric}.json"


def listing(result: BisectReport, out: str = "nodes.json") -> list[dict[str, str]]:
    """What the page offers to download: each figure's name, file name and what its value is."""
    return [{"figure": m, "file": file_name(out, m), "label": METRICS[m][2]} for m in figures(result)]


def metric_paths(out: Path, result: BisectReport) -> dict[str, Path]:
    """Where each figure is written, by figure (:func:`figures`, :func:`file_name`)."""
    return {m: out.with_name(file_name(out.name, m)) for m in figures(result)}


def write_model_explorer(result: BisectReport, model: Path, out: Path) -> dict[str, Path]:
    """Write every figure's node-data file next to ``out``; the paths written, by figure."""
    try:
        graph = read_graph(model.read_bytes())
    except OSError as err:
        raise InputError(f"cannot read {model}: {err.strerror or err}", where=str(model)) from None
    paths = metric_paths(out, result)
    for metric, path in paths.items():
        try:
            path.write_text(node_data_text(result, graph, metric))
        except OSError as err:
            raise InputError(f"cannot write {path}: {err.strerror or err}", where="--model-explorer") from None
    return paths
