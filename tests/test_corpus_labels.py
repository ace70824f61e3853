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

