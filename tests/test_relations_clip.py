"""A clip on both sides (a clamp to [-1, 1] after the last LayerNorm of a real
``nn.TransformerEncoder`` export, tests/fixtures/corpus, inserted by the corpus's own
``insert_clip`` operator and run in ONNX Runtime) is one relation with two bounds: judged
one bound at a time, the other bound's half of the difference left it unexplained."""

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


def _clipped_pair() -> tuple[np.ndarray, np.ndarray]:
    model, x = onnx.load(HERE / "transformer_encoder.onnx"), np.load(HERE / "transformer_encoder.input.npy")
    last = model.graph.node[-1].name
    return models.run_ort(apply(model, OPERATORS["insert_clip"], last), (x,)), models.run_ort(model, (x,))


def test_a_clamp_on_both_sides_after_the_last_layernorm_is_named_with_both_bounds():
    a, b = _clipped_pair()
    assert (b > 1).sum() >= 8 and (b < -1).sum() >= 8  # B goes beyond both bounds
    top = next(f for f in compare_values(a, b).findings if f.causes)
    assert top.kind == "clipped", top.message
    amount = top.where["amount"]
    assert (amount["lower"], amount["bound"]) == (float(a.min()), float(a.max()))
    assert amount["count"] == int(np.sum(np.abs(b) > 1))


def test_the_same_clamp_on_one_side_only_keeps_its_one_bound():
    a, b = _clipped_pair()
    upper_only = np.where(b > 1, a, b)
    top = next(f for f in compare_values(upper_only, b).findings if f.causes)
    assert top.kind == "clipped" and "lower" not in top.where["amount"]
    assert top.where["amount"]["bound"] == float(upper_only.max())
