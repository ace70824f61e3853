"""A signal cut (A = c per feature whatever B is) on a real ``nn.TransformerEncoder`` export
(tests/fixtures/corpus, ONNX Runtime, the corpus's own ``init_zero_bias`` operator on the
first layer's second LayerNorm weight): the next layer sees one value per feature at every
position, so the output no longer follows B; the per-feature map has s = 0 and names the
cut, not a bias or a normalisation constant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from perpendis.engine.compare import compare_values  # noqa: E402

from bench.corpus import models  # noqa: E402
from bench.corpus.mutate import OPERATORS, apply  # noqa: E402

HERE = Path(__file__).parent / "fixtures" / "corpus"


def test_a_layernorm_weight_zeroed_a_layer_before_the_output_is_a_cut_signal():
    model, x = onnx.load(HERE / "transformer_encoder.onnx"), np.load(HERE / "transformer_encoder.input.npy")
    a = models.run_ort(apply(model, OPERATORS["init_zero_bias"], "encoder.layers.0.norm2.weight"), (x,))
    b = models.run_ort(model, (x,))
    assert np.ptp(a, axis=(0, 1)).max() < 1e-4 * np.abs(a).max()  # one value per feature
    top = next(f for f in compare_values(a, b).findings if f.causes)
    assert top.kind == "slice_affine" and top.where["axis"] == 2, top.message
    assert max(abs(s) for s in top.where["amount"]["scale"]) < 1e-3
    assert "zero" in top.causes[0] and "bias" not in " ".join(top.causes)


def test_the_same_cut_with_the_reference_first_is_named_on_bs_side():
    """The same pair the other way round (a bisect puts PyTorch's reference first): no map of
    B gives A, since B is one value per feature; B = 0·A + c is the relation, and the cut is
    named on B's side, with the same causes."""
    model, x = onnx.load(HERE / "transformer_encoder.onnx"), np.load(HERE / "transformer_encoder.input.npy")
    cut = models.run_ort(apply(model, OPERATORS["init_zero_bias"], "encoder.layers.0.norm2.weight"), (x,))
    reference = models.run_ort(model, (x,))
    forward = next(f for f in compare_values(cut, reference).findings if f.causes)
    top = next(f for f in compare_values(reference, cut).findings if f.causes)
    assert top.kind == "slice_affine" and top.where["axis"] == 2, top.message
    assert "B holds one value per feature" in top.message and "signal was cut on B's side" in top.message
    assert set(top.where["amount"]["scale"]) == {0.0}
    assert np.allclose(top.where["amount"]["offset"], forward.where["amount"]["offset"], atol=1e-4)
    assert top.causes == forward.causes
