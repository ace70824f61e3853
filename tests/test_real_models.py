"""Real evidence for the verdict: outputs of small networks run in PyTorch and ONNX Runtime.

Each legitimate pair (two runtimes, or float16 in both) must come out ``rounding`` or
``identical``, and each injected bug ``investigate`` with a finding that names the bug
and where it is.  The files and the truth about each bug come from
``tests/fixtures/models/make_models.py`` through its ``manifest.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs import formats
from perpendis.inputs.parse import parse_text
from perpendis.inputs.tensor import Tensor
from perpendis.report.model import Report

MODELS = Path(__file__).parent / "fixtures" / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
LEGIT = [p for p in MANIFEST["pairs"] if p["expect"] == "legit"]
BUGS = {p["bug"]: p for p in MANIFEST["pairs"] if p["expect"] == "bug"}


def load(name: str) -> Tensor:
    (tensor,) = formats.read((MODELS / name).read_bytes(), name)
    return tensor


def judged(pair: dict, **options) -> Report:
    ref = load(pair["ref"]) if "ref" in pair else None
    return compare(load(pair["a"]), load(pair["b"]), ComparisonOptions(**options), ref=ref)


def kinds(report: Report, severity: str = "error") -> set[str]:
    return {f.kind for f in report.findings if f.severity == severity}


def finding(report: Report, kind: str):
    found = [f for f in report.findings if f.kind == kind]
    assert found, f"no {kind!r} finding in:\n{report.to_text()}"
    return found[0]


@pytest.mark.parametrize("pair", LEGIT, ids=lambda p: f"{p['a']}-{p['b']}")
def test_two_runtimes_differ_by_rounding(pair):
    report = judged(pair)
    assert report.verdict in ("rounding", "identical"), report.to_text()
    assert not kinds(report), report.to_text()
    assert report.reference is not None and report.reference.equivalent


def test_the_user_report_linear_layer_is_never_equal_yet_only_rounding():
    """The user report: ``nn.Linear(5, 7, bias=False)`` gives different bits in PyTorch and
    ONNX Runtime; against the float64 run neither side is worse than the other."""
    report = judged(next(p for p in LEGIT if p["a"] == "linear.torch.npy"))
    assert report.shape_match and report.dtype_match
    assert report.n_bitwise_diff > 0
    assert report.verdict == "rounding"
    assert report.reference.equivalent


@pytest.mark.parametrize("pair", BUGS.values(), ids=lambda p: p["bug"])
def test_every_bug_must_be_investigated(pair):
    report = judged(pair)
    assert report.verdict == "investigate", report.to_text()


def test_sign_flipped_channel_is_named():
    pair = BUGS["sign_flip"]
    report = judged(pair)
    flip = finding(report, "sign_flip")
    assert flip.severity == "error"
    region = finding(report, "region")
    assert f"axis {pair['axis']} index {pair['index']}" in region.where_text
    # All failures sit in the flipped channel.
    counts = report.axes[pair["axis"]].fail_counts
    assert counts[pair["index"]] == report.tolerance.n_fail


def test_constant_offset_is_named_with_its_size():
    pair = BUGS["offset"]
    report = judged(pair)
    offset = finding(report, "offset")
    assert offset.severity == "error"
    # A is the clean run, B the one with the shifted bias: A - B ≈ -offset.
    assert offset.where["amount"]["offset"] == pytest.approx(-pair["offset"], rel=1e-4)
    assert f"B − {pair['offset']:g}" in offset.message
    assert report.tolerance.fraction_fail == 1.0


def test_transposed_output_is_named_with_its_permutation():
    pair = BUGS["transposed"]
    report = judged(pair)
    layout = finding(report, "layout")
    assert layout.severity == "error"
    perm = tuple(pair["permutation"])
    assert layout.where_text == "(" + ", ".join(map(str, perm)) + ")"
    assert "NHWC" in layout.message
    a, b = np.load(MODELS / pair["a"]), np.load(MODELS / pair["b"])
    assert report.compared_shape == list(a.transpose(perm).shape) == list(b.shape)
    # Once the layout is undone the values agree up to rounding.
    assert report.tolerance.passed


def test_nan_on_one_side_is_located():
    pair = BUGS["nan"]
    report = judged(pair)
    nan = finding(report, "nan")
    assert nan.severity == "error"
    assert report.n_nan_mismatch == pair["n_nan"]
    prefix = pair["nan_index_prefix"]
    assert report.nan_mismatch_indices
    assert all(index[: len(prefix)] == prefix for index in report.nan_mismatch_indices)


def test_dropout_left_on_fails_almost_everywhere():
    report = judged(BUGS["dropout"])
    assert "tolerance" in kinds(report)
    assert report.tolerance.fraction_fail > 0.5
    assert "rounding" not in {f.kind for f in report.findings}


def test_layernorm_epsilon_hits_the_low_variance_token_hardest():
    pair = BUGS["layernorm_eps"]
    report = judged(pair)
    assert "tolerance" in kinds(report)
    assert report.worst["abs"].index[:2] == pair["low_variance_token"]


def test_pairs_agree_with_a_float64_reference_but_bugs_do_not():
    """The float64 run as ``ref``: the sign flip makes B much worse than A against it."""
    pair = dict(BUGS["sign_flip"], ref="transformer.ref64.npy")
    report = judged(pair)
    assert report.reference is not None and not report.reference.equivalent
    assert report.verdict == "investigate"


# --- pasted text -----------------------------------------------------------------------


def test_repr_with_ten_digits_reads_back_bit_exact():
    (pasted,) = parse_text((MODELS / "linear.torch.repr10.txt").read_text())
    report = compare(pasted, load("linear.torch.npy"))
    assert report.verdict == "identical", report.to_text()


def test_float16_repr_reads_back_bit_exact():
    (pasted,) = parse_text((MODELS / "linear.torch16.repr.txt").read_text())
    assert pasted.format == "float16"
    report = compare(pasted, load("linear.torch16.npy"))
    assert report.verdict == "identical", report.to_text()


@pytest.mark.parametrize(
    ("text", "a", "b"),
    [
        ("linear.torch.repr.txt", "linear.torch.npy", "linear.ort.npy"),
        ("cnn.torch.repr.txt", "cnn.torch.npy", "cnn.ort.npy"),
        ("transformer.torch.repr.txt", "transformer.torch.npy", "transformer.ort.npy"),
        ("transformer.torch.fixed.repr.txt", "transformer.torch.npy", "transformer.ort.npy"),
    ],
)
def test_default_repr_is_lossy_but_still_rounding(text, a, b):
    """PyTorch prints 4 decimals by default (in scientific or, with ``sci_mode=False``, fixed
    notation): the paste is marked lossy, and against the other runtime's exact output the
    verdict is still rounding, with a warning about the digits.  Fixed notation leaves
    small values only a digit or two, so the print's own resolution (half a unit in the
    fourth decimal) is larger than float32's default atol."""
    (pasted,) = parse_text((MODELS / text).read_text())
    assert not pasted.lossless
    assert pasted.shape == load(a).shape
    report = compare(pasted, load(b))
    assert report.verdict == "rounding", report.to_text()
    assert "lossy" in kinds(report, "warning")
