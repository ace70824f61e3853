"""ULP distance against numpy's ``nulp_diff`` (behind ``np.testing.assert_array_max_ulp``).

Wherever numpy's answer is defined and right, Perpendis's distance equals it.  Where it is
wrong (distances past the float's own precision, opposite signs that overflow numpy's
signed subtraction: docs/presets.md), Perpendis's distance is the ordered-integer one,
checked here against an independent count in Python integers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing._private.utils import nulp_diff
from perpendis.numerics import bits

WIDTH = {"float16": 16, "float32": 32, "float64": 64}


def ordered_count(raw_a: int, raw_b: int, width: int) -> int:
    """Representable steps between two finite values, counted in Python integers: each
    value's signed position from zero (a sign-magnitude integer), then the difference."""
    top = 1 << (width - 1)

    def position(raw: int) -> int:
        return -(raw - top) if raw >= top else raw

    return abs(position(raw_a) - position(raw_b))


def numpy_is_right(raw_a: int, raw_b: int, fmt: bits.Format) -> bool:
    """Where numpy's answer is right: both finite, the signed difference fits numpy's
    integer width, and the distance fits the float's precision (it is returned as that float)."""
    width = fmt.width
    top = 1 << (width - 1)
    mag_a, mag_b = raw_a & (top - 1), raw_b & (top - 1)
    opposite = (raw_a >= top) != (raw_b >= top)
    fits_int = not opposite or mag_a + mag_b < top
    return fits_int and ordered_count(raw_a, raw_b, width) <= 2 ** (fmt.man_bits + 1)


def numpy_distance(raw_a: int, raw_b: int, dtype: str) -> float:
    uint = np.dtype(f"uint{WIDTH[dtype]}")
    x = np.array([raw_a], dtype=uint).view(dtype)
    y = np.array([raw_b], dtype=uint).view(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's own int overflow, the case documented
        with np.errstate(all="ignore"):
            return float(nulp_diff(x, y).reshape(-1)[0])


def ours(raw_a: int, raw_b: int, fmt: bits.Format) -> tuple[int, bool]:
    dist, defined = bits.ulp_distance(np.array([raw_a], dtype=fmt.uint), np.array([raw_b], dtype=fmt.uint), fmt)
    return int(dist[0]), bool(defined[0])


def finite(raw: int, fmt: bits.Format) -> bool:
    code = np.array([raw], dtype=np.uint64)
    return not (bits.is_nan(code, fmt)[0] or bits.is_inf(code, fmt)[0])


def raw_finite(width: int) -> st.SearchStrategy[int]:
    fmt = bits.format_of(f"float{width}")
    return st.integers(0, (1 << width) - 1).filter(lambda r: finite(r, fmt))


@st.composite
def finite_pairs(draw: st.DrawFn, width: int) -> tuple[int, int]:
    """Two finite bit patterns: anywhere, or a few steps apart (where rounding lives)."""
    a = draw(raw_finite(width))
    near = draw(st.booleans())
    if near:
        b = min(max(a + draw(st.integers(-3000, 3000)), 0), (1 << width) - 1)
        return a, b if finite(b, bits.format_of(f"float{width}")) else a
    return a, draw(raw_finite(width))


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", list(WIDTH))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_ulp_distance_equals_nulp_diff_where_numpy_is_right(dtype, data):
    fmt = bits.format_of(dtype)
    raw_a, raw_b = data.draw(finite_pairs(fmt.width))
    distance, defined = ours(raw_a, raw_b, fmt)
    assert defined
    assert distance == ordered_count(raw_a, raw_b, fmt.width)
    if numpy_is_right(raw_a, raw_b, fmt):
        assert distance == numpy_distance(raw_a, raw_b, dtype)


@pytest.mark.parametrize(
    ("dtype", "a", "b", "numpy_says", "steps"),
    [
        # Past 2**24 in float32 numpy's distance is rounded to float32.
        ("float32", 1e-30, 1e30, 1.6719341e9, 1_671_934_058),
        # Opposite signs: numpy's int16 subtraction wraps around.
        ("float16", -60000.0, 60000.0, 2394.0, 63_142),
        ("float32", -1e30, 1e30, 4.936239e8, 3_801_343_380),
    ],
)
def test_where_nulp_diff_is_wrong_the_distance_is_the_ordered_count(dtype, a, b, numpy_says, steps):
    fmt = bits.format_of(dtype)
    raw_a = int(np.array([a], dtype=dtype).view(fmt.uint)[0])
    raw_b = int(np.array([b], dtype=dtype).view(fmt.uint)[0])
    assert not numpy_is_right(raw_a, raw_b, fmt)
    assert numpy_distance(raw_a, raw_b, dtype) == np.array(numpy_says, dtype=dtype)
    assert ours(raw_a, raw_b, fmt) == (steps, True) and ordered_count(raw_a, raw_b, fmt.width) == steps


def test_signed_zeros_are_zero_steps_apart_and_non_finite_distances_are_undefined():
    fmt = bits.format_of("float32")
    raw = {v: int(np.array([v], dtype=np.float32).view(np.uint32)[0]) for v in (0.0, -0.0, 1.0, np.inf)}
    assert ours(raw[0.0], raw[-0.0], fmt) == (0, True) == (int(numpy_distance(raw[0.0], raw[-0.0], "float32")), True)
    assert ours(raw[np.inf], raw[1.0], fmt)[1] is False  # numpy gives a number: the infinity's bits as an integer
    assert ours(raw[np.inf], raw[np.inf], fmt) == (0, True)
    nan = int(np.array([np.nan], dtype=np.float32).view(np.uint32)[0])
    assert ours(nan, raw[1.0], fmt)[1] is False
