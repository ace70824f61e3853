"""The report's JSON, Markdown and text forms."""

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs.tensor import from_numpy
from perpendis.report.headline import main_finding
from perpendis.report.model import Report
from perpendis.report.text import number_text, shape_text


def pair_report():
    b = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    a = b.copy()
    a[0, 1] = np.nextafter(a[0, 1], np.float32(np.inf))
    a[2, 3] = np.nan
    a[1, 0] = 0.0
    b[1, 0] = 0.0
    return compare(from_numpy(a, "a"), from_numpy(b, "b", name="out"))


def test_json_round_trip():
    r = pair_report()
    text = r.to_json()
    data = json.loads(text)  # strict JSON: non-finite numbers are strings
    assert data["schema"] == 1 and next(iter(data)) == "schema"
    assert Report.from_json(text).to_dict() == r.to_dict()
    assert "samples" not in data and "aligned" not in data


def test_json_keys_follow_the_contract():
    data = pair_report().to_dict()
    expected = {
        "schema", "a", "b", "ref", "shape_match", "dtype_match", "compared_as", "compared_shape", "n_elements",
        "identical", "n_bitwise_diff", "first_diff", "worst", "max_ulp", "max_abs_diff", "max_rel_diff",
        "n_nan_mismatch", "nan_mismatch_indices", "n_inf_mismatch", "inf_mismatch_indices", "n_signed_zero_diff",
        "stats", "ulp_histogram", "tolerance", "min_tolerance", "axes", "reference", "verdict", "findings", "notes",
        "headline", "paste_back", "task", "task_offer",
    }  # fmt: skip
    assert set(data) == expected
    assert set(data["first_diff"]) == {
        "flat", "index", "a", "b", "a_bits", "b_bits", "a_hex", "b_hex", "ulp", "abs_diff", "rel_diff",
    }  # fmt: skip
    assert data["a"]["shape"] == [3, 4] and data["b"]["name"] == "out"
    assert data["worst"]["abs"]["index"] == [0, 1]


def test_non_finite_values_are_strings():
    b = np.array([0.0, 1.0], dtype=np.float32)
    a = np.array([1.0, 1.0], dtype=np.float32)
    data = json.loads(compare(from_numpy(a, "a"), from_numpy(b, "b")).to_json())
    assert data["max_rel_diff"] == "inf" and data["first_diff"]["rel_diff"] == "inf"


def test_markdown_and_text_carry_the_evidence():
    r = pair_report()
    md, text = r.to_markdown(), r.to_text()
    first = r.first_diff
    for out in (md, text):
        assert "INVESTIGATE" in out
        assert "(3, 4) float32" in out
        assert first.a_bits in out and first.b_bits in out
        assert "NaN on one side only" in out
    assert md.startswith("**Perpendis:")
    assert "ulp histogram" in text


def test_the_passing_tolerance_never_claims_to_pass_a_nan():
    """``pair_report`` holds one NaN on one side: no atol or rtol passes it, whatever the
    smallest tolerance over the finite pairs says."""
    r = pair_report()
    assert r.min_tolerance.atol_at_rtol == 0.0  # the one finite difference is a single ULP
    for out in (r.to_text(), next(f.message for f in r.findings if f.kind == "tolerance")):
        assert "no tolerance passes its 1 NaN or inf mismatch(es); the other elements would pass at atol 0" in out
        assert "it would pass" not in out


def test_reference_json_carries_the_non_finite_counts():
    data = compare(*(from_numpy(np.array([1.0, np.nan], np.float32), s) for s in "ab"), ref=None).to_dict()
    assert data["reference"] is None
    x = np.array([1.0, 2.0], np.float32)
    with_ref = compare(from_numpy(x, "a"), from_numpy(np.array([1.0, np.inf], np.float32), "b"), ref=from_numpy(x, "r"))
    ref = with_ref.to_dict()["reference"]
    assert (ref["a_nonfinite"], ref["b_nonfinite"], ref["equivalent"]) == (0, 1, False)
    assert Report.from_dict(with_ref.to_dict()).reference == with_ref.reference


def test_number_text_rounds_floats_to_the_digits_asked_and_never_an_integer():
    far = compare(*(from_numpy(np.array([x], np.float32), s) for x, s in ((1e30, "a"), (1.0, "b"))))
    assert isinstance(far.max_ulp, int) and far.max_ulp > 10**6
    assert number_text(far.max_ulp, 3) == str(far.max_ulp)  # a ULP count is exact, whatever the width
    assert number_text(1 / 3) == "0.3333" and number_text(1 / 3, 3) == "0.333"
    assert number_text(None) == "n/a"


def test_shape_text_reads_as_numpy_prints_it_or_compact():
    shape = np.zeros((2, 3, 4)).shape
    assert shape_text(shape) == str(shape)
    assert shape_text(shape, ",") == str(shape).replace(" ", "")


_SEVERITY = ["error", "warning", "info"]
_B = np.random.default_rng(0).standard_normal(64).astype(np.float32)
# One ULP up everywhere, judged by numpy's default: errors, a warning about the preset and info.
_MIXED = compare(
    from_numpy(np.nextafter(_B, np.float32(np.inf)), "a"), from_numpy(_B, "b"),
    ComparisonOptions(preset="numpy-default"),
).findings


def test_mixed_findings_hold_every_severity():
    assert {f.severity for f in _MIXED} == set(_SEVERITY)


@settings(max_examples=50)
@given(st.permutations(_MIXED))
def test_main_finding_is_the_first_of_the_highest_severity(findings):
    main = main_finding(findings)
    top = min(_SEVERITY.index(f.severity) for f in findings)
    assert main is next(f for f in findings if _SEVERITY.index(f.severity) == top)


def test_no_findings_no_main_finding():
    assert main_finding([]) is None
    assert main_finding(compare(*(from_numpy(np.ones(3, np.float32), s) for s in "ab")).findings) is None


def test_findings_carry_structured_where_and_causes_through_json():
    # float16, where a NaN on one side has a cause to name (an overflow past 65504); in
    # float32 the finding names none, since nothing implies one.
    b = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    a = b.copy()
    a[1, 2, 3] = np.nan
    r = compare(from_numpy(a, "a"), from_numpy(b, "b"))
    data = r.to_dict()
    nan = next(f for f in data["findings"] if f["kind"] == "nan")
    assert nan["where"]["element"] == [1, 2, 3] and nan["where"]["text"] == "(1, 2, 3)"
    assert nan["causes"] and all(isinstance(c, str) for c in nan["causes"]) and "float16" in nan["causes"][0]
    back = Report.from_dict(json.loads(r.to_json()))
    assert back.findings == r.findings and back.headline == r.headline == data["headline"]
    assert r.to_text().splitlines()[0] == f"INVESTIGATE: {r.headline.removeprefix('Investigate: ')}"
    assert r.to_markdown().splitlines()[0] == f"**Perpendis: {r.to_text().splitlines()[0]}**"
