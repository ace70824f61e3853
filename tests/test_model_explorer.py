"""Model Explorer node data from real bisects: a small Conv/ReLU/Linear network exported by
torch.onnx here, captured by ``perpendis.capture`` and ``perpendis capture``, and the export
fixtures' injected bug run with --isolate.  The node ids must be the ONNX graph's node
names and each value the bisect report's own; where ``ai-edge-model-explorer`` is
installed its ``node_data_builder`` dataclasses must rebuild the same JSON.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from cli_runs import run_main as _run
from perpendis.layers.model_explorer import METRICS, VERDICT_VALUE

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

EXPORT = Path(__file__).parent / "fixtures" / "export"


def _node_names(model: Path) -> tuple[str, dict[str, str]]:
    """The graph's name and each node output → node name, read by onnx (not by perpendis)."""
    graph = onnx.load(str(model)).graph
    return graph.name, {out: node.name for node in graph.node for out in node.output}


def _check_against_report(report: dict, model: Path, written: dict[str, Path]) -> None:
    """Every node id is a node of the graph, and its value that of the first pair it computes."""
    graph_name, producer = _node_names(model)
    for metric, path in written.items():
        data = json.loads(path.read_text())
        assert list(data) == [graph_name]
        results = data[graph_name]["results"]
        assert results, metric
        assert set(results) <= set(producer.values())
        for pair in report["pairs"]:
            node = producer.get(pair["b_name"])
            if node is None or node not in results:
                continue
            want = {
                "verdict": VERDICT_VALUE.get(pair["verdict"]),
                "max_ulp": pair["max_ulp"],
                "cosine": pair["cosine"],
                "sqnr_db": pair["sqnr_db"],
                "own_verdict": VERDICT_VALUE.get((pair["isolated"] or {}).get("verdict")),
                "own_max_ulp": (pair["isolated"] or {}).get("max_ulp"),
                "own_sqnr_db": (pair["isolated"] or {}).get("sqnr_db"),
            }[metric]
            assert results[node]["value"] == pytest.approx(want), (metric, pair["b_name"])


def _written(out: Path, isolated: bool) -> dict[str, Path]:
    own = ("own_verdict", "own_max_ulp", "own_sqnr_db")
    return {m: out if m == "verdict" else out.with_name(f"nodes.{m}.json")
            for m in METRICS if isolated or m not in own}


def test_bugged_export_colours_the_injected_node_and_its_own_error(capsys, tmp_path):
    fact = json.loads((EXPORT / "bugs.json").read_text())["cnn_bias"]
    model = EXPORT / "cnn_bias.onnx"
    out = tmp_path / "nodes.json"
    argv = ["bisect", EXPORT / "cnn.torch.safetensors", EXPORT / "cnn_bias.ort.npz", "--model", model, "--isolate"]
    code, text, _ = _run(capsys, *argv, "--json")
    assert code == 1
    report = json.loads(text)
    code, _, err = _run(capsys, *argv, "--model-explorer", out)
    assert code == 1 and "Model Explorer node data" in err
    written = _written(out, isolated=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written.values())
    _check_against_report(report, model, written)
    _, producer = _node_names(model)
    culprit = producer[fact["value"]]
    verdicts = json.loads(out.read_text())["main_graph"]["results"]
    own = json.loads(written["own_verdict"].read_text())["main_graph"]["results"]
    assert verdicts[culprit]["value"] == 2
    assert [n for n, v in own.items() if v["value"] == 2] == [culprit]  # only the bug fails on its own
    first = next(p for p in report["pairs"] if p["verdict"] == "investigate")
    assert producer[first["b_name"]] == culprit


@pytest.mark.slow
def test_fresh_export_captured_both_ways(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    import perpendis
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 5)).eval()
    x = torch.randn(2, 3, 8, 8)
    onnx_path = tmp_path / "net.onnx"
    torch.onnx.export(model, (x,), str(onnx_path), dynamo=True, external_data=False)
    with torch.no_grad(), perpendis.capture(model) as run:
        model(x)
    run.save(tmp_path / "torch.safetensors")
    np.save(tmp_path / "x.npy", x.numpy())
    code, _, _ = _run(capsys, "capture", onnx_path, "--input", tmp_path / "x.npy", "-o", tmp_path / "ort.safetensors")
    assert code == 0
    argv = ["bisect", tmp_path / "torch.safetensors", tmp_path / "ort.safetensors", "--model", onnx_path]
    code, text, _ = _run(capsys, *argv, "--json")
    report = json.loads(text)
    out = tmp_path / "nodes.json"
    assert _run(capsys, *argv, "--model-explorer", out)[0] == code == 0
    written = _written(out, isolated=False)
    _check_against_report(report, onnx_path, written)
    ops = {n.name: n.op_type for n in onnx.load(str(onnx_path)).graph.node}
    coloured = json.loads(out.read_text())[onnx.load(str(onnx_path)).graph.name]["results"]
    assert {"Conv", "Relu", "Gemm"} <= {ops[n] for n in coloured}
    assert all(v["value"] in (0, 1) for v in coloured.values())


def test_model_explorer_needs_a_model_that_computes_the_layers(capsys, tmp_path):
    a, b = EXPORT / "cnn.torch.safetensors", EXPORT / "cnn.ort.safetensors"
    code, _, err = _run(capsys, "bisect", a, b, "--model-explorer", tmp_path / "n.json")
    assert code == 2 and "--model MODEL.onnx" in err
    h = onnx.helper
    other = h.make_model(h.make_graph(
        [h.make_node("Relu", ["x"], ["y"], name="r")], "g",
        [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    ))
    onnx.save(other, tmp_path / "other.onnx")
    code, _, err = _run(capsys, "bisect", a, b, "--model", tmp_path / "other.onnx",
                        "--model-explorer", tmp_path / "n.json")
    assert code == 2 and "Traceback" not in err and not (tmp_path / "n.json").exists()


def test_unknown_figure_is_an_input_error():
    from perpendis.errors import InputError
    from perpendis.layers.bisect import bisect, path_entries

    result = bisect(path_entries(EXPORT / "cnn.torch.safetensors"), path_entries(EXPORT / "cnn.ort.safetensors"))
    with pytest.raises(InputError, match="unknown Model Explorer figure"):
        result.to_model_explorer(EXPORT / "cnn.onnx", "psnr")
    assert set(result.to_model_explorer(EXPORT / "cnn.onnx")) == {"main_graph"}
    h = onnx.helper
    other = h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["y"], name="r")], "g", [], []))
    with pytest.raises(InputError, match="no paired layer is a value computed by this ONNX model"):
        result.to_model_explorer(other.SerializeToString())


def _node_data_builder():
    """``model_explorer.node_data_builder`` without the package's ``__init__`` (which starts
    on Flask and IPython): only its dataclasses are needed."""
    spec = importlib.util.find_spec("model_explorer")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("ai-edge-model-explorer is not installed")
    if "model_explorer" not in sys.modules:
        package = types.ModuleType("model_explorer")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["model_explorer"] = package
    try:
        return importlib.import_module("model_explorer.node_data_builder")
    except ImportError as err:
        pytest.skip(f"model_explorer.node_data_builder does not import: {err}")


def test_model_explorer_own_classes_rebuild_the_same_json():
    ndb = _node_data_builder()
    from perpendis.layers.bisect import bisect, path_entries, path_info

    a, b = EXPORT / "cnn.torch.safetensors", EXPORT / "cnn_bias.ort.safetensors"
    result = bisect(path_entries(a), path_entries(b), info_a=path_info(a), info_b=path_info(b))
    for metric in ("verdict", "max_ulp", "cosine", "sqnr_db"):
        ours = result.to_model_explorer(EXPORT / "cnn_bias.onnx", metric)
        (graph_id, graph), = ours.items()
        # Loaded into their dataclasses by keyword (an unknown key is a TypeError) and written back.
        theirs = ndb.ModelNodeData(graphsData={
            graph_id: ndb.GraphNodeData(**{
                **graph,
                "results": {k: ndb.NodeDataResult(**v) for k, v in graph["results"].items()},
                "thresholds": [ndb.ThresholdItem(**t) for t in graph["thresholds"]],
            })
        })
        back = json.loads(theirs.to_json_string())[graph_id]
        assert {k: back[k] for k in graph} == graph
        defaults = json.loads(ndb.GraphNodeData(results={}).to_json_string())
        extra = {k: v for k, v in back.items() if k not in graph}
        assert extra == {k: v for k, v in defaults.items() if k not in graph}
        assert all(isinstance(v["value"], (int, float)) and math.isfinite(v["value"])
                   for v in graph["results"].values())


def test_check_export_writes_the_same_node_data(capsys, tmp_path):
    model = EXPORT / "cnn_bias.onnx"
    argv = ["check-export", model, "--input", EXPORT / "cnn.input.npy", "--torch", EXPORT / "cnn.torch.safetensors"]
    code, text, _ = _run(capsys, *argv, "--json")
    assert code == 1
    out = tmp_path / "nodes.json"
    code, _, err = _run(capsys, *argv, "--model-explorer", out)
    assert code == 1 and "Model Explorer node data" in err
    _check_against_report(json.loads(text), model, _written(out, isolated=True))
