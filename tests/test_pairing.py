"""Pairing PyTorch module paths with ONNX values: the rules one by one, on real export captures
(tests/fixtures/export) and on small cases whose answer is known by construction."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from perpendis.errors import InputError
from perpendis.inputs.tensor import from_numpy
from perpendis.layers.bisect import path_entries, path_info
from perpendis.layers.pairing import module_calls, pair, split_name
from perpendis.layers.pairing_values import align_by_shape, relative_error

HERE = Path(__file__).parent / "fixtures" / "export"


def test_split_name_reads_calls_and_output_suffixes():
    assert split_name("layer1.0.relu") == ("layer1.0.relu", 0, "")
    assert split_name("layer1.0.relu@2") == ("layer1.0.relu", 2, "")
    assert split_name("attn@1:0") == ("attn", 1, ":0")
    assert split_name("split:1:high") == ("split", 0, ":1:high")


def test_module_calls_split_a_reused_module_into_its_calls():
    # As torch.onnx writes a ReLU module called twice around an op of the root's own forward.
    names = ["fc_mm", "fc", "relu", "add", "relu_1"]
    info = {
        "fc_mm": {"op_type": "MatMul", "module": "fc", "inputs": ["x"]},
        "fc": {"op_type": "Add", "module": "fc", "inputs": ["fc_mm"]},
        "relu": {"op_type": "Relu", "module": "relu", "inputs": ["fc"]},
        "add": {"op_type": "Add", "inputs": ["relu", "x"]},
        "relu_1": {"op_type": "Relu", "module": "relu", "inputs": ["add"]},
    }
    assert module_calls(names, info) == {("fc", 0): [1], ("relu", 0): [2], ("relu", 1): [4]}


def test_metadata_pairs_each_call_and_leaves_a_folded_convolution_unpaired():
    torch_names = ["features.0", "features.1", "features.2"]  # conv, its batch norm, relu
    onnx_names = ["x", "getitem", "relu"]
    info = {
        "x": {"op_type": "input"},
        "getitem": {"op_type": "Conv", "module": "features.1", "inputs": ["x"]},
        "relu": {"op_type": "Relu", "module": "features.2", "inputs": ["getitem"]},
    }
    found = pair(torch_names, onnx_names, info_b=info)
    assert found.pairs == [(1, 1, "metadata"), (2, 2, "metadata")]
    assert found.only_a == [0] and found.only_b == [0]


def test_a_mapping_overrides_every_other_rule():
    info = {"relu": {"op_type": "Relu", "module": "act", "inputs": []}}
    found = pair(["act"], ["relu", "other"], mapping={"act": "other"}, info_b=info)
    assert found.pairs == [(0, 1, "mapping")]


def test_duplicate_names_in_a_capture_are_refused():
    with pytest.raises(InputError, match="'x' more than once"):
        pair(["x", "y", "x"], ["a"])


def _tensors(arrays):
    return [lambda a=a: from_numpy(a, "test") for a in arrays]


def test_values_pair_what_no_name_does_and_chance_agreement_pairs_nothing():
    rng = np.random.default_rng(0)
    a = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(3)]
    b = [a[0] + 1e-7, rng.standard_normal((4, 8)).astype(np.float32), a[2] * (1 + 1e-6)]
    found = pair(["l0", "l1", "l2"], ["v0", "v1", "v2"], load_a=_tensors(a), load_b=_tensors(b))
    # l1 and v1 are unrelated, but sit between two agreeing pairs with the same shape: order and shape.
    assert found.pairs == [(0, 0, "order and shape"), (1, 1, "order and shape"), (2, 2, "order and shape")]
    lonely = pair(["l1"], ["v1"], load_a=_tensors(a[1:2]), load_b=_tensors(b[1:2]))
    assert lonely.pairs == []  # with nothing agreeing to stand on, shape alone pairs nothing


def test_an_identity_output_repeating_a_paired_value_is_left_out():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 5)).astype(np.float32), rng.standard_normal((2, 5)).astype(np.float32)
    # PyTorch: proj, then dropout (the same values), then norm; ONNX has proj, a residual sum, norm.
    a = [x, x.copy(), y]
    b = [x, x + y * 3, y]
    found = pair(["proj", "drop", "norm"], ["linear", "add", "layer_norm"], load_a=_tensors(a), load_b=_tensors(b))
    assert [(i, j) for i, j, _ in found.pairs] == [(0, 0), (2, 2)]
    assert found.only_a == [1]


def test_relative_error_is_zero_for_equal_and_about_one_for_unrelated():
    rng = np.random.default_rng(2)
    u, v = rng.standard_normal(10_000), rng.standard_normal(10_000)
    assert relative_error(u, u) == 0.0
    assert 1.3 < relative_error(u, v) < 1.5  # sqrt(2) for independent values of one scale
    assert relative_error(np.zeros(3), np.zeros(3)) == 0.0


@given(st.lists(st.integers(0, 3), max_size=7), st.lists(st.integers(0, 3), max_size=7))
def test_align_finds_a_longest_common_subsequence_in_both_orders(xs, ys):
    got = align_by_shape(xs, ys, list(range(len(xs))), list(range(len(ys))))
    assert all(xs[i] == ys[j] for i, j in got)
    assert [i for i, _ in got] == sorted({i for i, _ in got}) and [j for _, j in got] == sorted({j for _, j in got})
    best = 0
    for k in range(min(len(xs), len(ys)), 0, -1):
        if any(
            [xs[i] for i in c] == [ys[j] for j in d]
            for c in itertools.combinations(range(len(xs)), k)
            for d in itertools.combinations(range(len(ys)), k)
        ):
            best = k
            break
    assert len(got) == best


@pytest.mark.parametrize("model", ["cnn", "transformer"])
def test_metadata_of_a_capture_and_of_the_model_give_the_same_pairs(model):
    from perpendis.layers.bisect import model_info

    torch_path, ort_path = HERE / f"{model}.torch.safetensors", HERE / f"{model}.ort.safetensors"
    a, b = [e.name for e in path_entries(torch_path)], [e.name for e in path_entries(ort_path)]
    from_capture = pair(a, b, info_a=path_info(torch_path), info_b=path_info(ort_path))
    info_a, info_b = model_info(HERE / f"{model}.onnx", a, b, path_info(torch_path), {})
    from_model = pair(a, b, info_a=info_a, info_b=info_b)
    assert from_capture.pairs == from_model.pairs
    assert {how for _, _, how in from_model.pairs} == {"metadata"}


def test_a_layer_pairs_with_the_value_leaving_its_scope_not_the_first_inside():
    # As torch.onnx writes a post-norm encoder layer: attention, a residual add of the layer's own
    # forward, a norm; the layer's output is the norm's, which the next layer reads.
    scope = ["", "enc", "enc.layer0"]
    names = ["x", "attn", "add", "norm", "next"]
    info = {
        "x": {"op_type": "input"},
        "attn": {"op_type": "MatMul", "scopes": [*scope, "enc.layer0.attn", "linear"], "inputs": ["x"]},
        "add": {"op_type": "Add", "scopes": [*scope, "add"], "inputs": ["x", "attn"]},
        "norm": {"op_type": "LayerNormalization", "scopes": [*scope, "enc.layer0.norm", "ln"], "inputs": ["add"]},
        "next": {"op_type": "Relu", "scopes": ["", "act", "relu"], "inputs": ["norm"]},
    }
    calls = module_calls(names, info)
    assert calls[("enc.layer0", 0)] == [3] and calls[("enc", 0)] == [3]
    assert calls[("enc.layer0.attn", 0)] == [1]
    found = pair(["enc.layer0.attn", "enc.layer0", "act"], names, info_b=info)
    assert [(i, j) for i, j, _ in found.pairs] == [(0, 1), (1, 3), (2, 4)]
    assert "scope enc.layer0" in found.evidence[1] and found.confidence[1] == "high"


def test_a_copy_of_the_tensor_before_it_is_left_unpaired_and_named():
    rng = np.random.default_rng(3)
    proj = rng.standard_normal((1, 8, 4)).astype(np.float32)
    other = rng.standard_normal((1, 8, 4)).astype(np.float32)
    a = [proj, proj.copy(), other]  # proj, eval-mode dropout of it, the next layer
    b = [proj[0].copy(), proj[0] * 0.3 + other[0], other.copy()]  # the unrelated value has dropout's shape
    found = pair(["proj", "dropout", "norm"], ["addmm", "mix", "ln"], load_a=_tensors(a), load_b=_tensors(b))
    assert found.repeats_a == {1: 0}
    assert 1 in found.only_a and all(i != 1 for i, _, _ in found.pairs)


def test_a_tensor_named_as_a_graph_output_pairs_with_it_beside_its_layer_and_no_other_value_does():
    from perpendis.inputs.formats.onnx_model import describe, read_graph

    model = Path(__file__).parent / "fixtures" / "plain_hooks" / "conv2_scaled.onnx"
    values = describe(read_graph(model.read_bytes()))
    a, b = ["relu1", "relu", "fc", "logits"], list(values)
    found = pair(a, b, info_b=values)
    paired = {a[i]: (b[j], how) for i, j, how in found.pairs}
    assert paired == {"relu1": ("relu", "metadata"), "fc": ("logits", "metadata"), "logits": ("logits", "name")}
    # "relu" is relu1's value, read by conv2: the dynamo exporter's op name, not a module's path.
    assert [a[i] for i in found.only_a] == ["relu"]
