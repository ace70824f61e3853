"""Structures of sequence-model outputs that imply a cause without an exact relation
(perpendis.diagnosis.spared_region, .dependence, .relations.region), on real runs of
random-init transformers models (tests/fixtures/sequence/make_sequence.py), and a
legitimate pair that must name none."""

from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.compare import compare
from perpendis.inputs.tensor import from_numpy

SEQUENCE = Path(__file__).parent / "fixtures" / "sequence"


def report(name: str):
    pair = np.load(SEQUENCE / f"{name}.npz")
    return compare(from_numpy(pair["a"], "a"), from_numpy(pair["b"], "b"))


def top(r):
    return next(f for f in r.findings if f.severity == "error")


@pytest.mark.parametrize(("name", "axis", "noun", "cause"), [
    ("rotary_layout", 1, "position", "a rotary layout that differs, interleaved against half-split"),
    ("kv_cache_position", 0, "row", "a KV cache, or the position ids of cached steps"),
])
def test_a_start_spared_while_every_later_step_departs_names_what_spares_it(name, axis, noun, cause):
    r = report(name)
    found = top(r)
    assert r.verdict == "investigate" and found.kind == "spared_start"
    assert found.message.startswith(f"A agrees with B on {noun} 0 of axis {axis}")
    assert found.where["axis"] == axis and found.where["amount"]["spared"] == [0]
    assert any(cause in c for c in found.causes)


def test_an_error_shrinking_toward_the_last_position_is_said_without_a_cause():
    """A dropped causal mask leaves it, but so does a weight changed in an attention output
    projection (the mutation corpus): the trend is described, no cause named."""
    found = top(report("causal_mask_dropped"))
    assert found.kind == "position_dependence" and found.where["axis"] == 1
    assert found.where["amount"]["trend"] <= -0.85 and "shrinks steadily toward the last position" in found.message
    assert not found.causes


def test_one_sample_of_a_batch_alone_names_its_padding():
    found = top(report("padding_ignored"))
    assert found.kind == "region" and found.where["indices"] == [2]
    assert found.causes and "padding" in found.causes[0]


def test_a_float64_reference_is_rounding_with_no_cause_and_no_layer_hint():
    r = report("rounding")
    assert r.verdict == "rounding"
    assert not any(f.causes for f in r.findings) and not any(f.kind == "layers" for f in r.findings)
