"""Offsets whatever the input on a real ResNet's logits (tests/fixtures/corpus/resnet.onnx,
two samples × 10 classes, run in ONNX Runtime with a mutation applied by the corpus's own
operators).  The two samples' logits differ by about 1e-4: a per-class A − B that is the
same in both to rounding is then pinned as an offset (a scale k·B would differ between
them by k·1e-4, far beyond rounding), while a weight changed upstream leaves differences
that follow the samples and names no bias."""

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
BIAS = "model.classifier.1.bias"


def _pair(operator: str, target: str) -> tuple[np.ndarray, np.ndarray]:
    model, x = onnx.load(HERE / "resnet.onnx"), np.load(HERE / "resnet.input.npy")
    return models.run_ort(apply(model, OPERATORS[operator], target), (x,)), models.run_ort(model, (x,))


def _named(a: np.ndarray, b: np.ndarray):
    return next((f for f in compare_values(a, b).findings if f.causes), None)


def test_a_classifier_bias_doubled_is_an_offset_in_every_class():
    a, b = _pair("init_double", BIAS)
    top = _named(a, b)
    assert top is not None and top.kind == "slice_offset", top and top.message
    assert top.where["axis"] == 1 and top.where["indices"] == list(range(10))
    assert "bias" in top.causes[0]


def test_one_class_bias_negated_is_an_offset_on_that_class_not_only_a_region():
    a, b = _pair("init_slice_negated", BIAS)
    changed = np.flatnonzero(np.any(a != b, axis=0))
    top = _named(a, b)
    assert top is not None and top.kind == "slice_offset", top and top.message
    assert top.where["indices"] == [int(i) for i in changed]


@pytest.mark.parametrize("operator", ["init_rsqrt_d", "init_half"])
def test_a_convolution_weight_changed_upstream_names_no_offset(operator):
    a, b = _pair(operator, "model.resnet.encoder.stages.1.layers.0.layer.1.convolution.weight")
    assert np.any(a != b)
    assert not any(f.kind == "slice_offset" for f in compare_values(a, b).findings)


def test_one_class_that_agrees_by_chance_among_noisy_ones_is_no_offset():
    """A ReLU bypassed upstream: every class's A − B differs between the two samples by
    about 1e-5.  One class made to agree exactly (as one of ten did by chance in the
    corpus) is no evidence of a bias while the others agree only to that noise."""
    a, b = _pair("bypass", "node_relu_3")
    d = a.astype(np.float64) - b
    assert np.median(np.abs(d[0] - d[1])) > 1e-6
    a[:, 9] = b[:, 9] + np.float32(d[:, 9].mean())
    assert not any(f.kind == "slice_offset" for f in compare_values(a, b).findings)


@pytest.mark.parametrize("operator", ["init_double", "init_rsqrt_d"])
def test_a_classifier_weight_changed_behind_its_bias_is_no_offset(operator):
    """Corpus seed 5's ResNet (tests/fixtures/corpus/make_weight_behind_bias.py): the
    classifier weight doubled or scaled by 1/√d leaves A − B = k·(B − bias) per class, the
    same in two samples whose logits hardly differ: as constant per class as a bias, so the
    offset cannot be told from it and no offset is named (with the centre pinned at 0 it
    was)."""
    with np.load(HERE / f"resnet.seed5.{operator}.classifier_weight.npz") as z:
        a, b = z["a"], z["b"]
    assert a.shape == (2, 10) and np.any(a != b)
    assert not any(f.kind == "slice_offset" for f in compare_values(a, b).findings)
