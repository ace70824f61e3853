"""The corpus's labels by the relation a mutation leaves at the output (bench/corpus/score.py
``family_of``, effects.py), on a real ``nn.TransformerEncoder`` export
(tests/fixtures/corpus, run in ONNX Runtime with the corpus's own mutation operators)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from bench.corpus import effects, models, score  # noqa: E402
from bench.corpus.mutate import OPERATORS, apply, label  # noqa: E402

HERE = Path(__file__).parent / "fixtures" / "corpus"


def _case(operator: str, target: str) -> tuple[dict, np.ndarray, np.ndarray, onnx.GraphProto]:
    model, x = onnx.load(HERE / "transformer_encoder.onnx"), np.load(HERE / "transformer_encoder.input.npy")
    a = models.run_ort(apply(model, OPERATORS[operator], target), (x,))
    return label(model, OPERATORS[operator], target), a, models.run_ort(model, (x,)), model.graph


def test_a_last_layernorm_gain_redrawn_is_labelled_by_the_per_feature_map_it_leaves():
    """The last LayerNorm's gain redrawn: A = s·B + c per feature, exactly (the mutation's
    family, a weight, names nothing; the output's relation does)."""
    lab, a, b, graph = _case("init_redrawn", "encoder.layers.1.norm2.weight")
    assert effects.per_slice_affine(a.astype(np.float64), b.astype(np.float64)) <= effects.HOLDS
    assert score.family_of(lab, a, b, graph) == "feature_map"
    assert score.family_of(lab, a, b, graph, by_relation=False) == lab["family"] == "weight"
    assert "slice_affine" in score.FAMILY_KINDS["feature_map"]


def test_the_same_gain_one_layer_earlier_stays_unnameable():
    """One layer earlier the next layer mixes the features: no per-feature map holds."""
    lab, a, b, graph = _case("init_redrawn", "encoder.layers.0.norm2.weight")
    assert effects.per_slice_affine(a.astype(np.float64), b.astype(np.float64)) > 10 * effects.HOLDS
    assert score.family_of(lab, a, b, graph) == "weight"


def test_a_last_rmsnorm_statistic_computed_otherwise_is_labelled_a_normalisation():
    """A torch RMSNorm and a bias-free head (Llama's last layers), its mean of squares
    computed otherwise (epsilon 1e-6 against 0.5): A is one scale per row of B, to float32
    rounding; a mutation family that names nothing (``structure``) is then labelled by that
    relation.  A head with a bias leaves no such map."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = torch.randn(2, 8, 96)
    head = torch.nn.Linear(96, 50, bias=False)
    with torch.no_grad():
        b = head(torch.nn.RMSNorm(96, eps=1e-6)(x)).numpy()
        a = head(torch.nn.RMSNorm(96, eps=0.5)(x)).numpy()
        lab = {"operator": "swap_inputs", "family": "structure"}
        assert effects.holds_per_fibre(a, b) and not effects.holds_per_slice(a, b)
        assert score.family_of(lab, a, b, None) == "normalisation"
        assert score.family_of(lab, a, b, None, by_relation=False) == "structure"
        head.bias = torch.nn.Parameter(torch.randn(50))
        biased = head(torch.nn.RMSNorm(96, eps=0.5)(x)).numpy(), head(torch.nn.RMSNorm(96, eps=1e-6)(x)).numpy()
    assert not effects.holds_per_fibre(*biased)


def test_an_activation_left_out_is_a_function_of_the_other_side():
    """A GELU bypassed: A = x and B = GELU(x), so A − B is a function of A (B = f(A)), not of B
    alone below GELU's minimum; the label takes either side, a random difference neither."""
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 16, 64, generator=torch.Generator().manual_seed(1))
    a, b = x.numpy().astype(np.float64), torch.nn.functional.gelu(x).numpy().astype(np.float64)
    assert effects.function_of_b(a, b) <= 0.05
    assert effects.carries("activation", "bypass", a, b)
    noise = np.random.default_rng(2).standard_normal(a.shape) * 1e-3
    assert effects.function_of_b(b + noise, b) > 0.9
    # GELU's tanh form against erf's: two inputs give each negative value, so A − B is one
    # function of B only on the upper half, where GELU is monotone.
    tanh = torch.nn.functional.gelu(x, approximate="tanh").numpy().astype(np.float64)
    assert effects.function_of_b(tanh, b) <= 0.2 and effects.carries("activation", "gelu_approximate", tanh, b)



def test_a_float16_round_trip_before_a_bias_keeps_its_grid_moved_by_that_bias():
    """A Linear's product rounded to float16 before its bias (the corpus's ``cast_fp16`` on a
    MatMul): A is off float16's grid, but A less the bias the graph adds is on it; the label
    reads that bias from the graph (``score.added_after``)."""
    torch = pytest.importorskip("torch")
    from onnx import TensorProto, helper, numpy_helper

    g = torch.Generator().manual_seed(3)
    x, w, bias = torch.randn(2, 8, 32, generator=g), torch.randn(32, 32, generator=g), torch.randn(32, generator=g)
    with torch.no_grad():
        b = (x @ w + bias).numpy()
        a = ((x @ w).half().float() + bias).numpy()
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"], name="node_MatMul_1"),
         helper.make_node("Add", ["xw", "bias"], ["y"], name="node_add_1")],
        "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 32])],
        initializer=[numpy_helper.from_array(w.numpy(), "w"), numpy_helper.from_array(bias.numpy(), "bias")],
    )
    lab = {"operator": "cast_fp16", "node": "node_MatMul_1", "family": "precision"}
    addend = score.added_after(graph, lab, a.shape)
    assert addend is not None and np.array_equal(addend[0, 0], bias.numpy().astype(np.float64))
    assert not effects.carries("precision", "cast_fp16", a, b)
    assert effects.carries("precision", "cast_fp16", a, b, addend)
    assert score.family_of(lab, a, b, graph) == "precision"
    assert not effects.representable_but(a, "cast_fp16", addend + 1e-3)
    assert score.added_after(graph, {**lab, "node": "node_add_1"}, a.shape) is None  # nothing added after the Add
