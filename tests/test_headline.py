"""The headline: one sentence from the report, which every view leads with, and which
never contradicts the findings (issue 19's Python side)."""

from __future__ import annotations

import numpy as np
import pytest
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs.parse import parse_text
from perpendis.inputs.tensor import from_numpy

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal(64).astype(np.float32)


def test_a_print_without_dtype_takes_the_other_sides_dtype_with_a_note():
    (printed,) = parse_text(str(X))  # print(ndarray): no dtype, taken as float64 by default
    r = compare(printed, from_numpy(X, "b"))
    assert r.a["dtype"] == "float32" and r.dtype_match
    assert not [f for f in r.findings if f.kind == "dtype"]
    assert any("printed no dtype: read as float32" in n for n in r.notes)
    assert "float64" not in r.headline


def test_float_hex_strings_of_float32_values_are_read_as_float32_and_identical():
    (hexed,) = parse_text(repr([float(v).hex() for v in X]))
    r = compare(hexed, from_numpy(X, "b"))
    assert r.verdict == "identical" and r.headline.startswith("Identical: all 64 elements")


def test_values_no_float32_holds_keep_their_dtype_and_are_judged_in_the_narrower():
    (listed,) = parse_text(repr((X.astype(np.float64) + 1e-12).tolist()))
    r = compare(listed, from_numpy(X, "b"), ComparisonOptions(check_dtype=False))
    assert r.a["dtype"] == "float64"
    assert r.headline.startswith("A is float64 and B is float32, so both were judged in float32, the narrower format.")
    # By default the mismatch leads, with whether the values agree to float32's rounding.
    r = compare(listed, from_numpy(X, "b"))
    assert r.verdict == "investigate" and r.findings[0].kind == "dtype"
    assert r.headline.startswith("Investigate: A is float64 but B is float32")
    assert "agree to float32's rounding" in r.headline


def test_equal_default_prints_of_different_tensors_are_identical_only_at_their_precision():
    """PyTorch prints 4 decimals: tensors that differ in 16 elements by hundreds of ULP can
    print the same.  The headline says what the equality bounds."""
    x = torch.from_numpy(np.round(np.linspace(0.1, 0.9, 64), 4).astype(np.float32))  # mid-way in their 4th decimal
    y = x.clone()
    y[::4] += 3e-5  # hundreds of ULP, less than half the last printed decimal
    assert repr(x) == repr(y) and not torch.equal(x, y)
    (a,), (b,) = parse_text(repr(x)), parse_text(repr(y))
    r = compare(a, b)
    assert r.verdict == "identical"
    assert r.headline == (
        "Identical at the printed precision (4 decimals): the tensors themselves may still differ by up to "
        "0.0001 per element."
    )


def test_fp16_against_fp32_is_judged_in_the_narrower_format_in_one_sentence():
    b = X
    a = X.astype(np.float16)
    r = compare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(check_dtype=False))
    assert r.verdict == "identical" or r.verdict == "rounding"
    first = r.headline.split(". ")[0] + "."
    assert first == "A is float16 and B is float32, so both were judged in float16, the narrower format."
    assert not [f for f in r.findings if f.severity == "error"]


def test_the_headline_is_the_first_line_of_text_and_markdown():
    a = X.copy()
    a[5] += 1
    r = compare(from_numpy(a, "a"), from_numpy(X, "b"))
    body = r.headline.removeprefix("Investigate: ")
    assert r.to_text().splitlines()[0] == f"INVESTIGATE: {body}"
    assert r.to_markdown().splitlines()[0] == f"**Perpendis: INVESTIGATE: {body}**"
    assert r.to_dict()["headline"] == r.headline
