"""Shape and layout findings (perpendis.diagnosis.shape): a transpose is named as a layout
slip only when the values agree under it."""

from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.compare import compare
from perpendis.inputs import formats
from perpendis.inputs.tensor import from_numpy

MODELS = Path(__file__).parent / "fixtures" / "models"


def layout_finding(r):
    return next(f for f in r.findings if f.kind == "layout")


def test_a_real_nhwc_output_is_named_a_layout_slip():
    (nchw,) = formats.read((MODELS / "cnn_features.torch.npy").read_bytes(), "torch")
    (nhwc,) = formats.read((MODELS / "cnn_features.nhwc.npy").read_bytes(), "ort")
    finding = layout_finding(compare(nhwc, nchw))
    assert "(A is NHWC, B is NCHW)" in finding.message and "100% of sampled elements agree" in finding.message
    assert finding.causes == ["layout (NCHW against NHWC: a missing transpose or permute)"]


def test_unrelated_tensors_of_swapped_shapes_are_not_called_a_layout():
    """The audit's (4, 6) against (6, 4) of unrelated values: no order makes them agree, so
    no layout and no NCHW cause is offered."""
    rng = np.random.default_rng(0)
    a = from_numpy(rng.standard_normal((4, 6)).astype(np.float32), "a")
    b = from_numpy(rng.standard_normal((6, 4)).astype(np.float32), "b")
    finding = layout_finding(compare(a, b))
    assert finding.message.startswith("no order of A's axes makes A agree with B")
    assert "looks like" not in finding.message and not finding.causes


def test_the_last_positions_logits_against_every_positions_are_located():
    torch = pytest.importorskip("torch")
    logits = torch.randn(2, 16, 100, generator=torch.Generator().manual_seed(3))
    r = compare(from_numpy(logits.numpy(), "a"), from_numpy(logits[:, -1].numpy(), "b"))
    found = next(f for f in r.findings if f.kind == "inside")
    assert found.message.startswith("B = A[:, 15]: B holds the last index of A's axis 1")
    assert "logits[:, -1]" in found.causes[0]


def test_a_first_token_dropped_is_a_run_of_the_other_side():
    torch = pytest.importorskip("torch")
    hidden = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(4))
    r = compare(from_numpy(hidden[:, 1:].numpy(), "a"), from_numpy(hidden.numpy(), "b"))
    found = next(f for f in r.findings if f.kind == "inside")
    assert found.message.startswith("A = B[:, 1:16]: A is B with the first entry of axis 1 (16 entries) dropped")


def test_unrelated_tensors_of_different_lengths_are_not_located():
    rng = np.random.default_rng(5)
    r = compare(from_numpy(rng.standard_normal((2, 15, 8)).astype(np.float32), "a"),
                from_numpy(rng.standard_normal((2, 16, 8)).astype(np.float32), "b"))
    assert not any(f.kind == "inside" for f in r.findings)
