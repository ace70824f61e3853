"""torch.ao numeric suite results (tests/fixtures/numeric_suite/make_numeric_suite.py, saved by
torch 2.13's own ``_numeric_suite_fx``) as one-file bisect inputs: both models split into A and B,
quantized values dequantized exactly as torch does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_runs import run_main as _run
from perpendis.errors import InputError
from perpendis.inputs.formats import numeric_suite, torchsave

HERE = Path(__file__).parent / "fixtures" / "numeric_suite"
FACTS = json.loads((HERE / "facts.json").read_text())


def test_one_file_bisect_finds_the_shifted_conv(capsys):
    code, out, err = _run(capsys, "bisect", HERE / "fx_bias.pt", "--json")
    assert code == 1
    assert "A is 'fp32', B is 'bias'" in err
    report = json.loads(out)
    assert [p["a_name"] for p in report["pairs"]] == FACTS["fx_bias"]["layers"]
    assert report["first_failing"]["a_name"] == FACTS["fx_bias"]["first_failing"]
    assert report["pairs"][0]["verdict"] == "identical"  # relu1: before the shifted bias


def test_int8_run_is_split_and_every_layer_departs(capsys):
    code, out, _ = _run(capsys, "bisect", HERE / "fx_int8.pt", "--json")
    assert code == 1
    pairs = json.loads(out)["pairs"]
    assert [p["a_name"] for p in pairs] == ["conv1", "conv2", "flatten", "fc"]
    assert all(p["verdict"] == "investigate" and p["cosine"] > 0.99 for p in pairs)  # int8 keeps the signal


@pytest.mark.parametrize("stem", ["fx_int8", "fx_weights"])
def test_dequantized_values_equal_torchs(stem):
    torch = pytest.importorskip("torch")
    saved = torch.load(HERE / f"{stem}.pt", weights_only=False)
    obj, _ = torchsave.load_object((HERE / f"{stem}.pt").read_bytes())
    a, b = numeric_suite.sides(obj)
    assert (a.model, b.model) == ("fp32", "int8")
    kind = "weight" if stem == "fx_weights" else "node_output"
    schemes = set()
    for layer, tensor in zip(saved, b.tensors, strict=True):
        value = saved[layer][kind]["int8"][0]["values"][0]
        schemes.add(str(value.qscheme()))
        assert tensor.array.dtype == np.float32
        assert np.array_equal(tensor.array, value.dequantize().numpy())
        assert any("dequantized" in n for n in tensor.notes)
    for layer, tensor in zip(saved, a.tensors, strict=True):
        assert np.array_equal(tensor.array, saved[layer][kind]["fp32"][0]["values"][0].numpy())
    # The int8 activations are quantized per tensor, fbgemm's weights per channel: both rebuilt.
    assert schemes == {"torch.per_tensor_affine" if stem == "fx_int8" else "torch.per_channel_affine"}


def test_a_file_that_is_not_a_suite_result_asks_for_b(capsys, tmp_path):
    code, _, err = _run(capsys, "bisect", Path(__file__).parent / "fixtures" / "export" / "cnn.torch.safetensors")
    assert code == 2 and "bisect needs B too" in err and "Traceback" not in err


def test_three_models_are_refused():
    obj, _ = torchsave.load_object((HERE / "fx_bias.pt").read_bytes())
    layer = next(iter(obj.values()))
    layer["node_output"]["third"] = layer["node_output"]["bias"]
    with pytest.raises(InputError, match="holds 3 models"):
        numeric_suite.sides(obj)
    assert not numeric_suite.recognised({"encoder": {"w": layer["node_output"]["bias"][0]["values"][0]}})


def test_eager_suite_outputs_are_split_by_float_and_quantized(capsys):
    torch = pytest.importorskip("torch")
    code, out, err = _run(capsys, "bisect", HERE / "eager_outputs.pt", "--json")
    assert code == 1 and "A is 'float', B is 'quantized'" in err
    pairs = json.loads(out)["pairs"]
    saved = torch.load(HERE / "eager_outputs.pt", weights_only=False)
    assert [p["a_name"] for p in pairs] == list(saved) == ["quant.stats", "conv.stats", "fc.stats"]
    obj, _ = torchsave.load_object((HERE / "eager_outputs.pt").read_bytes())
    _, b = numeric_suite.sides(obj)
    for layer, tensor in zip(saved, b.tensors, strict=True):
        assert np.array_equal(tensor.array, saved[layer]["quantized"][0].dequantize().numpy())
