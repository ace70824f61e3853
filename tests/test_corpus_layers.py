"""The scorer of the cause a bisect names where a bug first shows (bench/corpus/score_layers.py),
on the corpus's ResNet (exported by the corpus, cached) with two of its mutation operators:
a constant added after a convolution is an offset at the layer blamed, named as one; a
weight redrawn is a weight, which no cause fits, and the scorer counts a cause there as wrong."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("transformers")
pytest.importorskip("onnxscript")

from bench.corpus import models, score_layers  # noqa: E402
from bench.corpus.mutate import OPERATORS, label, targets  # noqa: E402


@pytest.fixture(scope="module")
def resnet():
    models.use_seed(0)
    return score_layers.Architecture("resnet")


def _entry(operator: str, k: int = 0) -> dict:
    model = onnx.load(models.export("resnet"), load_external_data=False)
    target = targets(model, OPERATORS[operator])[k]
    return {"id": f"resnet.{operator}", "arch": "resnet", "class": "bug",
            "label": {**label(model, OPERATORS[operator], target), "location": None}}


@pytest.mark.slow
def test_the_clean_export_bisects_without_a_failing_layer(resnet):
    assert not resnet.false_alarm()


@pytest.mark.slow
def test_an_offset_after_a_convolution_is_named_at_its_layer(resnet):
    row = score_layers.judge(_entry("add_offset"), resnet)
    assert row["verdict_right"] and row["located"], row
    assert row["family"] == "offset" and row["named"] in score_layers.score.FAMILY_KINDS["offset"], row
    assert row["cause_right"]


@pytest.mark.slow
def test_a_weight_redrawn_is_located_and_no_cause_is_counted_right(resnet):
    row = score_layers.judge(_entry("init_redrawn"), resnet)
    assert row["verdict_right"] and row["located"], row
    assert row["family"] == "weight" and not row["nameable"] and not row["cause_right"]
