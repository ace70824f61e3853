"""The page's bisect op on real export captures: the .onnx model among the files, both
captures in one box, captures that record their tensors, and nothing paired."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from perpendis.service import api

HERE = Path(__file__).parent / "fixtures" / "export"
BUGS = json.loads((HERE / "bugs.json").read_text())


def _request(a, b=None, options=None):
    payloads, inputs = {}, {}
    for side, files in (("a", a), ("b", b)):
        if files is None:
            continue
        specs = []
        for k, name in enumerate(files):
            key = f"{side}{k}"
            payloads[key] = (HERE / name).read_bytes()
            specs.append({"name": name, "data": key})
        inputs[side] = specs[0] if len(specs) == 1 else specs
    return {"op": "bisect", "inputs": inputs, "options": options or {}}, payloads


def _first(out):
    assert out["ok"], out
    first = out["bisect"]["first_failing"]
    return first and (first["a_name"], first["b_name"])


def test_model_beside_a_capture_without_metadata_pairs_by_it():
    fact = BUGS["transformer_eps"]
    out = api.handle(*_request(["transformer.torch.safetensors"], ["transformer_eps.ort.npz", "transformer_eps.onnx"]))
    assert _first(out) == (fact["module"], fact["value"])
    pairs = out["bisect"]["pairs"]
    assert {p["paired_by"] for p in pairs} == {"metadata"}
    row = pairs[out["bisect"]["first_failing"]["index"]]
    assert row["op_type"] == "LayerNormalization" and row["module"] == "blocks.1.ln1"


def test_two_captures_dropped_on_one_box_are_the_pair():
    fact = BUGS["cnn_bias"]
    request, payloads = _request(["cnn.torch.safetensors", "cnn_bias.ort.safetensors"])
    assert _first(api.handle(request, payloads)) == (fact["module"], fact["value"])
    request["inputs"]["b"] = {"text": "  "}  # the page sends the other box's (empty) text
    assert _first(api.handle(request, payloads)) == (fact["module"], fact["value"])


def test_the_compare_op_on_two_captures_uses_their_metadata():
    request, payloads = _request(["cnn.torch.safetensors"], ["cnn_bias.ort.safetensors"])
    out = api.handle({**request, "op": "compare"}, payloads)
    assert "switched" in out and _first(out) == (BUGS["cnn_bias"]["module"], BUGS["cnn_bias"]["value"])
    assert out["bisect"]["pairs"][0]["paired_by"] == "metadata"


def test_nothing_paired_is_an_answer_with_both_sides_names(tmp_path):
    # Archives of one member each, whose names and values share nothing.
    values = np.random.default_rng(1).standard_normal(5).astype(np.float32)
    np.savez(tmp_path / "left.npz", left=values)
    np.savez(tmp_path / "right.npz", right=values + 9)
    payloads = {"a0": (tmp_path / "left.npz").read_bytes(), "b0": (tmp_path / "right.npz").read_bytes()}
    inputs = {"a": {"name": "left.npz", "data": "a0"}, "b": {"name": "right.npz", "data": "b0"}}
    request = {"op": "bisect", "inputs": inputs, "options": {}}
    out = api.handle(request, payloads)
    assert out["ok"] and out["bisect"]["pairs"] == []
    assert out["bisect"]["only_a"] == ["left"] and out["bisect"]["only_b"] == ["right"]
    mapped = api.handle({**request, "options": {"mapping": {"left": "right"}}}, payloads)
    assert [p["paired_by"] for p in mapped["bisect"]["pairs"]] == ["mapping"]


def test_a_file_named_onnx_that_is_not_a_model_is_a_clear_error():
    request, payloads = _request(["cnn.torch.safetensors"], ["cnn_bias.ort.npz"])
    payloads["m"] = (HERE / "cnn.input.npy").read_bytes()
    request["inputs"]["b"] = [request["inputs"]["b"], {"name": "model.onnx", "data": "m"}]
    out = api.handle(request, payloads)
    assert not out["ok"] and "not an ONNX model" in out["error"]["message"]


def test_model_explorer_op_answers_the_files_the_command_line_writes(tmp_path, capsys):
    """The page's Model Explorer export: the bisect lists the figures its model allows, and each
    figure's text is byte for byte what ``perpendis bisect --model --model-explorer`` writes."""
    from cli_runs import run_main

    a, b, model = "transformer.torch.safetensors", "transformer_eps.ort.npz", "transformer_eps.onnx"
    out = api.handle(*_request([a], [b, model]))
    listed = out["model_explorer"]
    assert [f["file"] for f in listed] == ["nodes.json", "nodes.max_ulp.json", "nodes.cosine.json",
                                          "nodes.sqnr_db.json"]
    code, _, _ = run_main(capsys, "bisect", HERE / a, HERE / b, "--model", HERE / model,
                          "--model-explorer", tmp_path / "nodes.json")
    assert code == 1
    for figure in listed:
        answer = api.handle({"op": "model_explorer", "figure": figure["figure"]}, {})
        assert answer["ok"] and answer["file"] == figure["file"]
        assert answer["text"] == (tmp_path / figure["file"]).read_text()

    # Without the model there is nothing to name the nodes by: no files, and the op says why.
    assert api.handle(*_request([a], [b]))["model_explorer"] == []
    refused = api.handle({"op": "model_explorer", "figure": "verdict"}, {})
    assert not refused["ok"] and ".onnx model" in refused["error"]["message"]
