"""A per-row scale about a per-feature centre (relations/centred.py) on a real
``nn.TransformerEncoder`` export (tests/fixtures/corpus, ONNX Runtime, the corpus's own
mutation operators).  The last LayerNorm's epsilon changed scales each token's normalised
values by its own factor, which the LayerNorm's gain and bias carry about the bias: A − β
= r·(B − β).  The fitted centre is that bias, read back from the graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import numpy_helper  # noqa: E402
from perpendis.diagnosis.relations import centred  # noqa: E402
from perpendis.engine.compare import compare_values  # noqa: E402

from bench.corpus import models  # noqa: E402
from bench.corpus.mutate import OPERATORS, apply  # noqa: E402

HERE = Path(__file__).parent / "fixtures" / "corpus"


def _pair(operator: str, target: str) -> tuple[np.ndarray, np.ndarray, onnx.ModelProto]:
    model, x = onnx.load(HERE / "transformer_encoder.onnx"), np.load(HERE / "transformer_encoder.input.npy")
    return models.run_ort(apply(model, OPERATORS[operator], target), (x,)), models.run_ort(model, (x,)), model


def _bias(model: onnx.ModelProto, name: str) -> np.ndarray:
    return next(numpy_helper.to_array(i) for i in model.graph.initializer if i.name == name)


def test_the_last_layernorm_epsilon_is_a_per_token_scale_about_its_bias():
    a, b, model = _pair("ln_epsilon", "node_layer_norm_3")
    top = next(f for f in compare_values(a, b).findings if f.causes)
    assert top.kind == "row_scale" and top.where["relation"]["kind"] == "centred_row_scale", top.message
    assert any("epsilon" in c for c in top.causes)
    r = np.asarray(top.where["amount"]["scale"])
    assert np.all(r < 1) or np.all(r > 1)
    centre = np.asarray(top.where["relation"]["params"]["centre"])
    beta = _bias(model, "encoder.layers.1.norm2.bias")
    assert np.max(np.abs(centre - beta)) < 1e-2 * np.max(np.abs(beta))


def test_the_fit_recovers_the_bias_and_leaves_only_rounding():
    a, b, model = _pair("ln_epsilon", "node_layer_norm_3")
    a2, b2 = a.reshape(-1, a.shape[-1]).astype(np.float64), b.reshape(-1, b.shape[-1]).astype(np.float64)
    u, kappa, left = centred.fit(a2, b2)
    assert left < 1e-3 and np.all(u < 0)
    beta = _bias(model, "encoder.layers.1.norm2.bias")
    assert np.allclose(kappa, beta, atol=1e-2 * np.max(np.abs(beta)))


@pytest.mark.parametrize(("operator", "target"), [
    ("ln_epsilon", "node_layer_norm_2"),  # a layer earlier: the next layer mixes the rows' scales
    ("init_double", "encoder.layers.1.norm2.weight"),  # one factor for every row: a per-feature map
])
def test_other_changes_are_no_centred_row_scale(operator, target):
    a, b, _ = _pair(operator, target)
    assert np.any(a != b)
    found = compare_values(a, b).findings
    assert not any((f.where or {}).get("relation", {}).get("kind") == "centred_row_scale" for f in found)


def test_two_nearly_equal_samples_pin_no_centre():
    """A real ResNet's two samples' logits differ by about 1e-4 (tests/fixtures/corpus): a
    convolution weight changed upstream leaves rows of A − B that are nearly proportional,
    and the second sample's change made 5 % larger is exactly A − κ = r·(B − κ) for a
    centre κ far from B, which rows so alike cannot pin: no normalisation is named (by the
    fit's convergence or, failing that, by the pin rule)."""
    model, x = onnx.load(HERE / "resnet.onnx"), np.load(HERE / "resnet.input.npy")
    b = models.run_ort(model, (x,)).astype(np.float64)
    target = "model.resnet.encoder.stages.1.layers.0.layer.1.convolution.weight"
    delta = models.run_ort(apply(model, OPERATORS["init_half"], target), (x,))[0] - b[0]
    u = np.array([-0.01, -0.0105])
    kappa = b[0] - delta / u[0]
    a = (b + u[:, None] * (b - kappa)).astype(np.float32)
    found = compare_values(a, b.astype(np.float32)).findings
    assert not any((f.where or {}).get("relation", {}).get("kind") == "centred_row_scale" for f in found)
