"""Hypothesis round trips: array → text a real library prints → parse → the same array."""

from __future__ import annotations

import io
import re
import sys
from fractions import Fraction

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.inputs.parse import parse_text

FLOATS = [np.float16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)
NUMBER = re.compile(r"-?(?:nan|inf|\d+\.?\d*(?:e[-+]?\d+)?)")


def float_arrays(dtypes=FLOATS, allow_nan: bool = True):
    return st.sampled_from(dtypes).flatmap(
        lambda dtype: hnp.arrays(dtype, shapes, elements=hnp.from_dtype(np.dtype(dtype), allow_nan=allow_nan))
    )


def assert_same_values(parsed: np.ndarray, original: np.ndarray) -> None:
    """Bit for bit, except that every NaN counts as the same NaN (printing drops payloads)."""
    assert parsed.dtype == original.dtype and parsed.shape == original.shape
    nan = np.isnan(original)
    np.testing.assert_array_equal(np.isnan(parsed), nan)
    uint = np.dtype(f"uint{original.dtype.itemsize * 8}")
    np.testing.assert_array_equal(parsed[~nan].view(uint), original[~nan].view(uint))


def pinned_by_the_rule(text: str, original: np.ndarray) -> bool:
    """The lossless rule of ``perpendis.inputs.text.numbers`` for NumPy's printer, in exact fractions, value by value.

    Every finite nonzero decimal (read, as the parser reads it, as the nearest float64)
    must be more than half a unit of its last digit (at NumPy's precision: 8, or the most
    fractional digits any value shows) from both neighbours of the value it stands for.
    """
    tokens = NUMBER.findall(text[text.index("[") : text.rindex("]")])
    assert len(tokens) == original.size
    shown = [t for t in tokens if t.lstrip("-") not in ("nan", "inf") and float(t) != 0]
    precision = max([8] + [len(t.partition("e")[0].partition(".")[2].rstrip("0")) for t in shown])
    for token, value in zip(tokens, original.ravel(), strict=True):
        if token not in shown:
            continue
        half = Fraction(10) ** (int(token.partition("e")[2] or 0) - precision) / 2
        for direction in (-np.inf, np.inf):
            neighbour = np.nextafter(value, value.dtype.type(direction))
            if np.isfinite(neighbour) and abs(Fraction(float(neighbour)) - Fraction(float(token))) <= half:
                return False
    return True


@settings(max_examples=150, deadline=None)
@given(float_arrays())
def test_numpy_repr_unique_round_trips(original: np.ndarray) -> None:
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        text = repr(original)
    (tensor,) = parse_text(text)
    assert tensor.source == "NumPy repr" and tensor.format == original.dtype.name
    assert_same_values(tensor.array, original)
    # Unique text cannot be told from text NumPy prints at a fixed precision (8, or the
    # most digits shown) that may stand for a neighbour too: the rule decides, exactly.
    assert tensor.lossless == pinned_by_the_rule(text, original)


@settings(max_examples=150, deadline=None)
@given(float_arrays())
def test_numpy_default_repr_is_lossless_only_when_it_is(original: np.ndarray) -> None:
    """NumPy's default print (8 fractional digits): a claim of lossless text must be true."""
    (tensor,) = parse_text(repr(original))
    if tensor.lossless:
        assert_same_values(tensor.array, original)
    else:
        assert tensor.digits is not None and tensor.digits >= 1
        finite = np.isfinite(original)
        with np.errstate(over="ignore"):
            np.testing.assert_allclose(
                tensor.array[finite].astype(np.float64), original[finite].astype(np.float64), rtol=1e-7, atol=1e-8
            )


@settings(max_examples=100, deadline=None)
@given(float_arrays([np.float64]))
def test_tolist_round_trips(original: np.ndarray) -> None:
    (tensor,) = parse_text(repr(original.tolist()))
    assert tensor.source == "nested list" and tensor.lossless
    assert_same_values(tensor.array, original)


@settings(max_examples=100, deadline=None)
@given(float_arrays([np.float64]))
def test_float_hex_list_round_trips(original: np.ndarray) -> None:
    flat = original.ravel()
    assume(np.isfinite(flat).any())  # ['inf', 'nan'] has no hex digits to recognise
    (tensor,) = parse_text(repr([float.hex(float(v)) for v in flat]))
    assert tensor.source == "float.hex list" and tensor.lossless
    assert_same_values(tensor.array, flat)


@settings(max_examples=100, deadline=None)
@given(float_arrays([np.float64]))
def test_numpy_print_unique_round_trips_float64(original: np.ndarray) -> None:
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        text = str(original)
    (tensor,) = parse_text(text)
    # One number in brackets could as well be a Python list: either reading is fine.
    assert tensor.source == "NumPy print" or (original.size == 1 and tensor.source == "nested list")
    assert_same_values(tensor.array, original)
    if tensor.source == "NumPy print":
        assert tensor.lossless == pinned_by_the_rule(text, original)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FLOATS).flatmap(lambda dtype: hnp.from_dtype(np.dtype(dtype)).map(dtype)))
def test_numpy_scalar_repr_round_trips(value: np.floating) -> None:
    (tensor,) = parse_text(repr(value))
    assert tensor.source == "NumPy scalar repr" and tensor.shape == () and tensor.lossless
    assert_same_values(tensor.array, np.asarray(value))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(INTS).flatmap(lambda dtype: hnp.arrays(dtype, shapes)))
def test_numpy_integer_repr_round_trips(original: np.ndarray) -> None:
    (tensor,) = parse_text(repr(original))
    assert tensor.format == original.dtype.name and tensor.lossless
    np.testing.assert_array_equal(tensor.array, original)
    assert tensor.array.dtype == original.dtype


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6), elements=st.floats()))
def test_csv_round_trips(original: np.ndarray) -> None:
    out = io.StringIO()
    np.savetxt(out, original, delimiter=",", fmt="%.17g")
    (tensor,) = parse_text(out.getvalue())
    expected = original if original.shape[1] > 1 else original[:, 0]
    # A single column has no commas: it is one number per line.
    assert tensor.source.startswith("CSV column") or (original.shape[1] == 1 and tensor.source == "one number per line")
    if tensor.format == "int64":  # %g writes integral values without a point: an integer CSV
        np.testing.assert_array_equal(tensor.array, expected)
    else:
        assert_same_values(tensor.array, expected)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.complex128, shapes, elements=st.complex_numbers(allow_nan=False)))
def test_numpy_complex_repr_round_trips_per_component(original: np.ndarray) -> None:
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        text = repr(original)
    (tensor,) = parse_text(text)
    assert tensor.format == "float64" and tensor.shape == (*original.shape, 2)
    assert_same_values(tensor.array, np.stack([original.real, original.imag], axis=-1))
