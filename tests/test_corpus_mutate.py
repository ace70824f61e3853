"""The corpus's mutation operators (bench/corpus/mutate.py) on two real exports (a ResNet
and an ``nn.TransformerEncoder``, tests/fixtures/corpus, written by its
make_corpus_fixtures.py): each mutant is checked by ONNX Runtime against what the
operator claims to do, and labels, split and location truth are checked on real data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from bench.corpus import cases, models  # noqa: E402
from bench.corpus.mutate import OPERATORS, NotApplicable, apply, label, targets  # noqa: E402

HERE = Path(__file__).parent / "fixtures" / "corpus"


def _graph(arch: str):
    return onnx.load(HERE / f"{arch}.onnx"), np.load(HERE / f"{arch}.input.npy")


def _run(model, x: np.ndarray) -> np.ndarray:
    return models.run_ort(model, (x,))


@pytest.mark.parametrize("arch", ["resnet", "transformer_encoder"])
def test_every_operator_leaves_the_model_alone_and_labels_its_target(arch):
    model, x = _graph(arch)
    before = model.SerializeToString()
    clean = _run(model, x)
    ran = 0
    for op in OPERATORS.values():
        for target in targets(model, op)[:2]:
            try:
                mutant = apply(model, op, target)
            except NotApplicable:
                continue
            except Exception:  # refused by onnx.checker: the generator counts it as invalid
                continue
            assert model.SerializeToString() == before, op.name
            lab = label(model, op, target)
            assert lab["operator"] == op.name and lab["family"]
            if op.on == "node":
                assert lab["op_type"] in op.op_types
                assert lab["scope"] and lab["scope"].startswith("encoder" if arch != "resnet" else "model")
            try:
                a = _run(mutant, x)
            except Exception:  # ONNX Runtime refused it: counted as failed_run
                continue
            ran += 1
            assert a.shape == clean.shape or op.name == "post_transpose", op.name
    assert ran >= 20


def test_output_operators_do_what_they_say():
    model, x = _graph("resnet")
    clean = _run(model, x)
    k = clean.shape[-1] // 3

    def out(name: str) -> np.ndarray:
        return _run(apply(model, OPERATORS[name], "output"), x)

    np.testing.assert_array_equal(out("post_transpose"), clean.T)
    offset = out("post_slice_offset") - clean
    np.testing.assert_allclose(offset[:, k], 0.5, rtol=1e-5)
    assert not np.delete(offset, k, axis=1).any()
    np.testing.assert_array_equal(out("post_sign_channel")[:, k], -clean[:, k])
    masked = out("post_region")
    assert not masked[:, -2:].any() and np.array_equal(masked[:, :-2], clean[:, :-2])
    np.testing.assert_allclose(out("post_temperature"), clean / 0.5, rtol=1e-6)
    soft = out("post_softmax")
    np.testing.assert_allclose(soft.sum(axis=-1), 1, rtol=1e-5)


def test_input_operators_equal_the_clean_graph_on_changed_input():
    model, x = _graph("resnet")

    def mutated(name: str) -> np.ndarray:
        return _run(apply(model, OPERATORS[name], "input"), x)

    np.testing.assert_array_equal(mutated("pre_reverse_channels"), _run(model, np.ascontiguousarray(x[:, ::-1])))
    np.testing.assert_allclose(mutated("pre_scale"), _run(model, x * np.float32(1 / 255)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        mutated("pre_normalise"), _run(model, (x - np.float32(0.5)) / np.float32(0.25)), rtol=1e-5, atol=1e-6
    )


def test_attribute_operators_change_the_attribute():
    model, _ = _graph("transformer_encoder")
    ln = targets(model, OPERATORS["ln_epsilon"])[0]
    mutant = apply(model, OPERATORS["ln_epsilon"], ln)
    node = next(n for n in mutant.graph.node if n.name == ln)
    eps = next(a.f for a in node.attribute if a.name == "epsilon")
    assert eps == pytest.approx(1e-3)
    gelu = targets(model, OPERATORS["gelu_approximate"])[0]
    node = next(n for n in apply(model, OPERATORS["gelu_approximate"], gelu).graph.node if n.name == gelu)
    assert next(a.s for a in node.attribute if a.name == "approximate") == b"tanh"


def test_initializer_operators():
    model, x = _graph("resnet")
    name = targets(model, OPERATORS["head_unit"])[0]
    clean = _run(model, x)
    a = _run(apply(model, OPERATORS["head_unit"], name), x)
    loc = cases.location_of(a, clean, noise=0.0)
    assert loc == {"axis": 1, "axis_size": clean.shape[1], "indices": [clean.shape[1] // 3]}
    bias = next(t for t in model.graph.initializer if t.name == "model.classifier.1.bias")
    zeroed = apply(model, OPERATORS["init_zero_bias"], bias.name)
    b = onnx.numpy_helper.to_array(bias)
    np.testing.assert_allclose(_run(zeroed, x), clean - b, rtol=1e-5, atol=1e-6)
    assert cases.output_relation(_run(zeroed, x), clean) == "offset"


def test_split_is_a_hash_of_the_id_and_splits_the_fixtures():
    entries = json.loads((HERE / "cases.json").read_text())
    halves = [cases.half_of(e["id"]) for e in entries]
    assert halves == [e["half"] for e in entries]
    assert {"tuning", "held-back"} == set(halves)


def test_location_and_relation_truth():
    rng = np.random.default_rng(0)
    b = rng.standard_normal((2, 8, 32)).astype(np.float32)
    a = b.copy()
    a[:, :, 5] += 1
    assert cases.location_of(a, b, noise=1e-7) == {"axis": 2, "axis_size": 32, "indices": [5]}
    assert cases.location_of(b * 2, b, noise=1e-7) is None
    assert cases.output_relation(b * np.float32(0.5), b) == "scale"
    assert cases.output_relation(np.tanh(b), b) is None
