"""PyTorch text made by real torch 2.13 (tests/fixtures/text/make_text_fixtures.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from perpendis.errors import InputError
from perpendis.inputs.parse import parse_text
from perpendis.numerics.bits import format_of, raw_bits

ml_dtypes = pytest.importorskip("ml_dtypes")

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "text"
CASES = json.loads((FIXTURES / "cases.json").read_text())
PARSED = {name: spec for name, spec in CASES.items() if "error" not in spec}
REFUSED = {name: spec for name, spec in CASES.items() if "error" in spec}
# NumPy types for decoding printed decimals independently of perpendis.numerics.bits.
REFERENCE_DTYPES = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf)")


def _bits(array: np.ndarray, fmt_name: str) -> np.ndarray:
    """Raw bits of values in ``fmt_name``, with every NaN made the same."""
    fmt = format_of(fmt_name)
    if not fmt.native:
        return array.view(fmt.uint)
    if not fmt.is_float:
        return np.asarray(array, dtype=fmt.storage)
    values = np.where(np.isnan(array), np.nan, array).astype(fmt.storage)
    return raw_bits(values, fmt)


def _expected_values(name: str, fmt_name: str) -> np.ndarray:
    expected = np.load(FIXTURES / f"{name}.npy")
    if expected.dtype.kind == "c":
        expected = np.stack([expected.real, expected.imag], axis=-1)
    return expected


def _printed_decimals(text: str, fmt_name: str) -> np.ndarray:
    """The decimals the text shows, each rounded to the dtype by NumPy/ml_dtypes."""
    start = text.index("tensor(") + len("tensor(")
    body = re.sub(r",\s*[a-z_]+=\S*", "", text[start : text.index(")", start)])
    decimals = np.array([float(t) for t in NUMBER.findall(body)])
    dtype = REFERENCE_DTYPES.get(fmt_name, np.dtype(format_of(fmt_name).storage))
    rounded = decimals.astype(dtype)
    return rounded.view(format_of(fmt_name).uint) if fmt_name in REFERENCE_DTYPES else rounded


@pytest.mark.parametrize("name", sorted(PARSED))
def test_fixture_parses_to_the_tensor_torch_held(name: str) -> None:
    spec = PARSED[name]
    text = (FIXTURES / f"{name}.txt").read_text()
    tensors = parse_text(text)
    expected_all = _expected_values(name, spec["format"])
    if spec.get("tensors") == 2:
        assert len(tensors) == 2
        pairs = list(zip(tensors, expected_all, strict=True))
    else:
        assert len(tensors) == 1
        pairs = [(tensors[0], expected_all)]
    for tensor, expected in pairs:
        assert tensor.format == spec["format"]
        assert tensor.source == "PyTorch repr"
        assert tensor.shape == expected.shape
        if spec["lossless"] is not None:
            assert tensor.lossless is spec["lossless"]
        if tensor.lossless:
            assert tensor.digits is None
            np.testing.assert_array_equal(_bits(tensor.array, tensor.format), _bits(expected, tensor.format))
        else:
            assert tensor.digits is not None and 1 <= tensor.digits <= 5
            assert any("too few digits" in note for note in tensor.notes)
            # Lossy text reads as the printed decimals, which are close to what torch held.
            values = tensor.array.astype(np.float64)
            np.testing.assert_allclose(values, expected.astype(np.float64), rtol=1e-3, atol=5e-5)


@pytest.mark.parametrize("name", sorted(n for n, s in PARSED.items() if s["lossless"] is not True))
def test_lossy_fixture_is_the_printed_decimals_rounded(name: str) -> None:
    spec = PARSED[name]
    text = (FIXTURES / f"{name}.txt").read_text()
    tensors = parse_text(text)
    if len(tensors) != 1:
        pytest.skip("the decimal extraction below reads one printed tensor")
    tensor = tensors[0]
    printed = _printed_decimals(text, spec["format"])
    np.testing.assert_array_equal(_bits(tensor.array.ravel(), tensor.format), _bits(printed, tensor.format))


def test_bfloat16_fixture_compares_raw_bits_with_torch() -> None:
    """torch prints bfloat16 with 4 decimals, always enough to pin a bfloat16 in this range."""
    tensor = parse_text((FIXTURES / "torch_bfloat16_default.txt").read_text())[0]
    expected = np.load(FIXTURES / "torch_bfloat16_default.npy")
    assert tensor.array.dtype == np.uint16
    np.testing.assert_array_equal(tensor.array, expected)


def test_session_keeps_order_and_finds_the_difference() -> None:
    a, b = parse_text((FIXTURES / "torch_session.txt").read_text())
    differs = np.flatnonzero(a.array != b.array)
    assert differs.tolist() == [1]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_summarised_print_is_refused_with_the_fix(name: str) -> None:
    with pytest.raises(InputError) as error:
        parse_text((FIXTURES / f"{name}.txt").read_text())
    assert "summarised" in error.value.message
    assert REFUSED[name]["error"] in error.value.message
