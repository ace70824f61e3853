"""Real runs: a small CNN and a 2-layer transformer exported by torch.onnx (dynamo), each once
clean and with one bug injected into the ONNX graph (tests/fixtures/export/make_export_fixtures.py).

The first failing row must be the injected node, whether pairing comes from the capture's
metadata, the model given with --model, or from values, order and shape alone; run alone,
only the injected node's own error fails.
"""

from __future__ import annotations

import json
import math
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_runs import run_main as _run
from perpendis.layers.bisect import bisect, path_entries, path_info

pytest.importorskip("onnxruntime")

HERE = Path(__file__).parent / "fixtures" / "export"
BUGS = json.loads((HERE / "bugs.json").read_text())


def _first(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(">>")).split()[1:3]


@pytest.mark.parametrize("bug", sorted(BUGS))
@pytest.mark.parametrize("how", ["capture metadata", "--model", "values, order and shape"])
def test_first_failing_row_is_the_injected_node(capsys, bug, how):
    fact = BUGS[bug]
    torch_side = HERE / f"{fact['model']}.torch.safetensors"
    extra = {
        "capture metadata": [HERE / f"{bug}.ort.safetensors"],
        "--model": [HERE / f"{bug}.ort.npz", "--model", HERE / f"{bug}.onnx"],
        "values, order and shape": [HERE / f"{bug}.ort.npz"],
    }[how]
    code, out, _ = _run(capsys, "bisect", torch_side, *extra)
    assert code == 1
    assert _first(out) == [fact["module"], fact["value"]]
    row = next(line for line in out.splitlines() if line.startswith(">>"))
    assert ("values" if how.startswith("values") else "scope") in row


@pytest.mark.parametrize("model", ["cnn", "transformer"])
def test_clean_exports_pass_every_layer(capsys, model):
    code, out, _ = _run(capsys, "bisect", HERE / f"{model}.torch.safetensors", HERE / f"{model}.ort.safetensors")
    assert code == 0, out
    assert "no layer fails" in out


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_isolation_marks_only_the_injected_node(capsys, bug):
    fact = BUGS[bug]
    code, out, _ = _run(
        capsys, "bisect", HERE / f"{fact['model']}.torch.safetensors", HERE / f"{bug}.ort.npz",
        "--isolate", "--model", HERE / f"{bug}.onnx", "--json",
    )
    assert code == 1
    result = json.loads(out)
    own = [p["b_name"] for p in result["pairs"] if (p["isolated"] or {}).get("verdict") == "investigate"]
    assert own == [fact["value"]]
    assert result["culprit"]["b_name"] == fact["value"]
    failing = [p for p in result["pairs"] if p["verdict"] == "investigate"]
    assert len(failing) > 1  # the layers after it fail too, and inherit it
    assert sum(p["isolated"]["verdict"] is not None for p in result["pairs"]) >= len(result["pairs"]) - 1
    # The own error's cosine and SQNR beside the inherited one's: the culprit keeps less of the signal alone
    # than the layers after it do, which only inherit its error.
    culprit = result["pairs"][result["culprit"]["index"]]
    assert culprit["isolated"]["sqnr_db"] < min(
        p["isolated"]["sqnr_db"] or math.inf for p in result["pairs"] if p["isolated"]["verdict"] == "rounding"
    )


# What each injected bug is, as the relation its layer run alone leaves: the kind of finding
# and a cause it implies (the layer alone is free of the rounding its inputs inherit).
OWN_RELATION = {
    "cnn_bias": ("slice_offset", "a dropped or wrong bias"),
    "transformer_eps": ("row_scale", "epsilon"),
    "transformer_gelu": ("elementwise", "GELU's tanh approximation"),
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_the_culprit_states_its_own_relation_and_its_cause(capsys, bug):
    fact = BUGS[bug]
    argv = ["bisect", HERE / f"{fact['model']}.torch.safetensors", HERE / f"{bug}.ort.npz", "--isolate",
            "--model", HERE / f"{bug}.onnx"]
    code, out, _ = _run(capsys, *argv, "--json")
    assert code == 1
    finding = json.loads(out)["culprit"]["finding"]
    kind, cause = OWN_RELATION[bug]
    assert finding["kind"] == kind and any(cause in c for c in finding["causes"]), finding
    _, text, _ = _run(capsys, *argv)
    line = next(x for x in text.splitlines() if x.startswith("culprit"))
    assert line.endswith(f"; run alone: {finding['message']}")


def test_clean_export_isolated_has_no_culprit(capsys):
    code, out, _ = _run(
        capsys, "bisect", HERE / "transformer.torch.safetensors", HERE / "transformer.ort.safetensors",
        "--isolate", "--model", HERE / "transformer.onnx",
    )
    assert code == 0
    assert "no layer fails on its own" in out


def _truth(model: str) -> dict[str, str]:
    """The right pairs: by the exporter's metadata on the clean run, each checked to agree by value."""
    a, b = path_entries(HERE / f"{model}.torch.safetensors"), path_entries(HERE / f"{model}.ort.safetensors")
    result = bisect(a, b, info_b=path_info(HERE / f"{model}.ort.safetensors"), by_values=False)
    assert all(p.verdict in ("identical", "rounding") for p in result.pairs)
    return {p.a_name: p.b_name for p in result.pairs}


@pytest.mark.parametrize("model", ["cnn", "transformer"])
def test_pairing_without_metadata_finds_the_same_pairs_on_clean_runs(tmp_path, model):
    plain = tmp_path / "plain.npz"
    from perpendis.inputs.load import load_path

    np.savez(plain, **{t.name: t.array for t in load_path(HERE / f"{model}.ort.safetensors")})
    result = bisect(path_entries(HERE / f"{model}.torch.safetensors"), path_entries(plain))
    assert {p.a_name: p.b_name for p in result.pairs} == _truth(model)
    assert {p.paired_by for p in result.pairs} <= {"order and shape", "name"}


@pytest.mark.slow
def test_check_export_runs_both_sides_and_bisects(tmp_path):
    import sys

    pytest.importorskip("onnxscript")  # torch.onnx.export's dynamo exporter

    sys.path.insert(0, str(HERE))
    from models import build
    from perpendis import check_export

    model, x = build("transformer")
    report = check_export(model, (x,), tmp_path / "model.onnx")
    assert not report.must_investigate
    assert report.culprit is None and any(p.isolated for p in report.pairs)


@pytest.mark.slow
def test_check_export_cli_names_the_culprit(capsys):
    code, out, _ = _run(
        capsys, "check-export", HERE / "transformer_eps.onnx", "--input", HERE / "transformer.input.npy",
        "--module", f"{HERE / 'models.py'}:transformer",
    )
    assert code == 1
    assert f"culprit (first layer whose own error fails when run alone): {BUGS['transformer_eps']['module']}" in out


# ---------------------------------------------------------------------------------------- bad input


def test_a_model_onnx_runtime_cannot_load_is_a_clear_error(capsys, tmp_path):
    import onnx

    broken = onnx.load(HERE / "cnn.onnx")
    broken.graph.node[0].op_type = "NoSuchOp"
    onnx.save(broken, tmp_path / "broken.onnx")
    out_file = tmp_path / "ort.safetensors"
    code, _, err = _run(capsys, "capture", tmp_path / "broken.onnx", "--input", HERE / "cnn.input.npy", "-o", out_file)
    assert code == 2 and "ONNX Runtime cannot load broken.onnx" in err and "NoSuchOp" in err
    assert "Traceback" not in err and not out_file.exists()


def test_capture_leaves_the_users_model_untouched(capsys, tmp_path):
    model = tmp_path / "cnn.onnx"
    shutil.copy(HERE / "cnn.onnx", model)
    before = model.read_bytes()
    code, _, _ = _run(capsys, "capture", model, "--input", HERE / "cnn.input.npy", "-o", tmp_path / "c.safetensors")
    assert code == 0 and model.read_bytes() == before
    assert [t.name for t in path_entries(tmp_path / "c.safetensors")][:2] == ["x", "getitem"]
    info = path_info(tmp_path / "c.safetensors")
    assert info["getitem"]["op_type"] == "Conv" and info["getitem"]["module"] == "features.1"


@pytest.mark.parametrize(
    ("feed", "message"),
    [
        (["y=INPUT"], "has no input named 'y'; its inputs are x"),
        (["WRONG"], "input 'x' of cnn.onnx has shape 2×3×16×16; the array given for it is 2×6×8"),
        (["INPUT", "INPUT"], "takes 1 input(s) (x), 2 were given"),
        (["DOUBLE"], "input 'x' of cnn.onnx is float32, the file given for it holds float64"),
    ],
)
def test_inputs_the_model_does_not_take_are_clear_errors(capsys, tmp_path, feed, message):
    np.save(tmp_path / "double.npy", np.load(HERE / "cnn.input.npy").astype(np.float64))
    files = {"INPUT": HERE / "cnn.input.npy", "WRONG": HERE / "transformer.input.npy"}
    files["DOUBLE"] = tmp_path / "double.npy"
    args = []
    for item in feed:
        name, _, key = item.rpartition("=")
        args += ["--input", f"{name}={files[key]}" if name else files[key]]
    out_file = tmp_path / "o.safetensors"
    code, _, err = _run(capsys, "capture", HERE / "cnn.onnx", *args, "-o", out_file)
    assert code == 2 and message in err, err
    assert not out_file.exists()


def test_a_capture_with_duplicate_names_is_a_clear_error(capsys, tmp_path):
    dup = tmp_path / "dup.npz"
    with zipfile.ZipFile(dup, "w") as archive:
        for name in ("getitem", "relu", "getitem"):
            with archive.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, np.zeros((2, 8, 16, 16), np.float32))
    code, _, err = _run(capsys, "bisect", HERE / "cnn.torch.safetensors", dup)
    assert code == 2 and "'getitem'" in err and "more than once" in err


# ------------------------------------------------------------- stock architectures, exported here

ROOT = Path(__file__).parent.parent


def _corpus():
    """bench/corpus's models (and bench/bisect_exports.py) importable: the architectures the corpus exports."""
    import sys

    pytest.importorskip("onnxscript")
    pytest.importorskip("transformers")
    for folder in (ROOT, ROOT / "bench"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    from bench.corpus import models

    return models


def _stock(name: str):
    """``(onnx path, model, torch inputs)`` of a corpus architecture, exported (cached) by the corpus."""
    import torch

    path, model, inputs = _corpus().clean(name)
    return path, model, tuple(torch.from_numpy(x) for x in inputs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "transformer_encoder"])
def test_a_clean_export_with_eval_dropout_has_no_failing_layer(name):
    path, model, args = _stock(name)
    from perpendis import check_export

    report = check_export(model, args, path, export=False)
    assert report.first_failing is None and report.culprit is None, report.to_text()
    dropouts = [n for n in report.repeats if "dropout" in n]
    assert dropouts and not [p.a_name for p in report.pairs if p.a_name in dropouts]
    assert all(p.isolated and p.isolated["verdict"] in ("identical", "rounding") for p in report.pairs[1:])


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_a_layer_with_children_pairs_with_the_value_it_hands_on(tmp_path, capsys, suffix):
    import onnx

    path, model, args = _stock("transformer_encoder")
    # What a user writes: a hook on every module, saved in call order by np.savez, or by safetensors'
    # save_file with the call order under metadata "order".
    from bisect_exports import plain_hooks
    from perpendis.layers.capture.onnx import capture_onnx

    shutil.copy(path, tmp_path / "m.onnx")
    plain_hooks(model, args, tmp_path / f"torch{suffix}")
    capture_onnx(tmp_path / "m.onnx", [args[0].numpy()]).save(tmp_path / "ort.npz")
    code, out, _ = _run(
        capsys, "bisect", tmp_path / f"torch{suffix}", tmp_path / "ort.npz", "--model", tmp_path / "m.onnx", "--json"
    )
    result = json.loads(out)
    assert code == 0 and result["first_failing"] is None
    pairs = {p["a_name"]: p for p in result["pairs"]}
    graph = onnx.load(tmp_path / "m.onnx").graph
    norm2 = [n.output[0] for n in graph.node if n.op_type == "LayerNormalization"]
    # Each layer's output is its second norm's (the value the next layer reads), not its first residual add.
    assert pairs["encoder.layers.0"]["b_name"] == norm2[1] and pairs["encoder.layers.1"]["b_name"] == norm2[3]
    assert pairs["encoder.layers.0"]["paired_by"] == "metadata"
    assert "scope encoder.layers.0" in pairs["encoder.layers.0"]["evidence"]

    # A perturbed bias in the second layer's second linear: that layer is the first to fail.
    broken = onnx.load(tmp_path / "m.onnx")
    bias = next(t for t in broken.graph.initializer if t.name.endswith("linear2.bias"))
    values = onnx.numpy_helper.to_array(bias).copy()
    values[3] += 1.0
    bias.CopyFrom(onnx.numpy_helper.from_array(values, bias.name))
    onnx.save(broken, tmp_path / "bug.onnx")
    capture_onnx(tmp_path / "bug.onnx", [args[0].numpy()]).save(tmp_path / "bug.safetensors")
    code, out, _ = _run(capsys, "bisect", tmp_path / f"torch{suffix}", tmp_path / "bug.safetensors", "--json")
    first = json.loads(out)["first_failing"]
    assert code == 1 and first["a_name"] == "encoder.layers.0.linear2"  # the first layer's own bias


@pytest.mark.slow
def test_an_export_torch_cannot_make_is_a_clear_error_without_terminal_colours(tmp_path):
    import torch
    from perpendis import check_export
    from perpendis.errors import InputError

    model, inputs = _corpus().build("t5")
    args = tuple(torch.from_numpy(x) for x in inputs)
    with pytest.raises(InputError) as caught:
        check_export(model, args, tmp_path / "m.onnx")
    message = caught.value.message
    assert "torch.onnx.export could not export" in message and "Cannot view a tensor" in message
    assert "dynamo=False" in message and "\x1b" not in message


def test_the_first_nan_is_traced_to_the_op_that_made_it_from_finite_inputs(tmp_path, capsys):
    import onnx
    from perpendis.layers.capture.onnx import capture_onnx

    model = onnx.load(HERE / "transformer.onnx")
    node = next(n for n in model.graph.node if n.op_type == "Gelu")
    node.op_type = "Log"  # a bug that makes NaN from the negative half of its finite input
    del node.attribute[:]
    onnx.save(model, tmp_path / "nan.onnx")
    capture_onnx(tmp_path / "nan.onnx", [np.load(HERE / "transformer.input.npy")]).save(tmp_path / "nan.safetensors")
    torch_side, nan_side = HERE / "transformer.torch.safetensors", tmp_path / "nan.safetensors"
    code, out, _ = _run(capsys, "bisect", torch_side, nan_side, "--json")
    result = json.loads(out)
    assert code == 1
    origin = result["nan_origin"]
    assert origin["value"] == node.output[0] and origin["op_type"] == "Log" and origin["side"] == "B"
    first = result["pairs"][result["first_nonfinite"]["index"]]
    assert first["b_name"] == node.output[0] and result["first_nonfinite"]["nonfinite_b"] > 0
    assert all(p["cosine"] is not None for p in result["pairs"][: result["first_nonfinite"]["index"]])
    code, out, _ = _run(capsys, "bisect", torch_side, nan_side)
    assert f"first op making NaN or Inf from finite inputs: {node.output[0]} (Log" in out


def _architectures() -> list[str]:
    import sys

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.corpus.models import ARCHITECTURES  # imports nothing heavy

    return list(ARCHITECTURES)


@pytest.mark.slow
@pytest.mark.parametrize("name", _architectures())
def test_every_benchmarked_architecture_on_a_pinned_pair_of_bugs(tmp_path, name):
    """bench/bisect_exports.py's run on two of its bugs (a bypassed node, a perturbed weight) and one NaN-making
    one: no false alarm, the first failing layer and the culprit are the mutated node's, the NaN's origin found."""
    _corpus()
    from bisect_exports import run

    row = run(name, 2, tmp_path, kinds=("bypass", "perturb"), nans=1)
    assert row["false alarm"] == 0, row
    assert row["bugs"] >= 1 and row["first right"] == row["bugs"] and row["culprit right"] == row["bugs"], row
    assert row["nan origin right"] == row["nan"], row


@pytest.mark.slow
def test_a_layer_run_alone_is_fed_only_surely_paired_values(tmp_path):
    """ResNet's residual sum rounded to float16 and back (the corpus's ``cast_fp16``): the
    shortcut module pairs with that sum by order and shape alone, its values another tensor's.
    Fed that tensor, the ReLU after it looked like a per-channel offset; fed from the surely
    paired values before it, the ReLU's own error is what the bug did: float16 rounding."""
    import onnx
    import torch

    _corpus()
    from perpendis.inputs.formats.onnx_model import describe, read_graph
    from perpendis.layers.capture.check import bisect_runs_of
    from perpendis.layers.capture.torch import capture

    from bench.corpus import models
    from bench.corpus.mutate import OPERATORS, apply

    path, module, inputs = models.clean("resnet")
    graph = onnx.load(path)
    # The first block's residual Add, found by its module: its name is torch.fx's count of the
    # adds traced before it (node_add_55 under torch 2.13, node_add_10 under 2.15).
    values = describe(read_graph(graph.SerializeToString()))
    add = next(n for n in graph.graph.node
               if n.op_type == "Add" and values[n.output[0]]["module"] == "model.resnet.encoder.stages.0.layers.0")
    onnx.save(apply(graph, OPERATORS["cast_fp16"], add.name), tmp_path / "bug.onnx")
    with torch.no_grad(), capture(module) as run:
        module(*(torch.from_numpy(x) for x in inputs))
    result = bisect_runs_of(run, tmp_path / "bug.onnx", list(inputs))
    unsure = next(p for p in result.pairs if p.b_name == add.output[0])
    assert not unsure.sure and unsure.paired_by == "order and shape"
    culprit = result.sure_culprit
    assert culprit.b_name == "relu_2" and add.output[0] not in culprit.isolated["reads"]
    assert culprit.isolated["finding"]["kind"] == "elementwise"
    assert "rounded to float16" in culprit.isolated["finding"]["message"]
    # The unsure pair's own run fails too (it compares two different tensors): the report
    # names it the culprit as the rule says, then the surely paired one, with its relation.
    assert result.culprit is unsure
    assert result.to_dict()["sure_culprit"]["b_name"] == "relu_2"
    lines = result.to_text().splitlines()
    line = next(x for x in lines if x.startswith("that culprit rests on order and shape"))
    assert f"is {culprit.a_name} (B: relu_2); run alone: " in line and "rounded to float16" in line
    # The unsure culprit's own relation (two different tensors' relation) is not stated.
    assert next(x for x in lines if x.startswith("culprit (")).endswith(f"(B: {unsure.b_name})")


def test_a_bfloat16_value_is_captured_through_a_cast_to_float32(tmp_path):
    """ONNX Runtime computes bfloat16 values it cannot hand to NumPy: a model with one (a
    precision round trip mid-graph) is captured whole, that value exact as float32."""
    import ml_dtypes
    import onnx
    from onnx import TensorProto, helper
    from perpendis.layers.capture.onnx import capture_onnx

    nodes = [
        helper.make_node("Cast", ["x"], ["low"], to=TensorProto.BFLOAT16, name="to_bf16"),
        helper.make_node("Cast", ["low"], ["back"], to=TensorProto.FLOAT, name="to_f32"),
        helper.make_node("Mul", ["back", "back"], ["y"], name="square"),
    ]
    graph = helper.make_graph(
        nodes, "round_trip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    run = capture_onnx(tmp_path / "m.onnx", [x])
    assert run.names == ["x", "low", "back", "y"]
    want = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert run["low"].dtype == np.float32 and np.array_equal(run["low"], want)
    assert np.array_equal(run["y"], want * want)
