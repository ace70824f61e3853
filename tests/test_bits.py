"""Property tests of the bit-level formats against NumPy's own float stepping and ml_dtypes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.numerics import bits, element_bits

ml_dtypes = pytest.importorskip("ml_dtypes")

NATIVE = {"float16": (np.float16, 16), "float32": (np.float32, 32), "float64": (np.float64, 64)}
SMALL = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}


def raw(x: np.ndarray, name: str) -> np.ndarray:
    return bits.raw_bits(np.asarray(x), bits.format_of(name))


@pytest.mark.parametrize("name", NATIVE)
@settings(max_examples=200, deadline=None)
@given(data=st.data(), steps=st.integers(0, 40))
def test_ulp_distance_counts_nextafter_steps(name, data, steps):
    dtype, width = NATIVE[name]
    start = dtype(data.draw(st.floats(width=width, allow_nan=False, allow_infinity=False)))
    x = np.array([start])
    y = x.copy()
    for _ in range(steps):
        y = np.nextafter(y, dtype(np.inf))
    if not np.isfinite(y[0]):
        return
    dist, defined = bits.ulp_distance(raw(x, name), raw(y, name), bits.format_of(name))
    assert defined[0]
    assert int(dist[0]) == steps


@pytest.mark.fuzz
@pytest.mark.parametrize("name", NATIVE)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_ulp_distance_matches_numpy_assert_array_max_ulp(name, data):
    dtype, width = NATIVE[name]
    values = st.floats(width=width, allow_nan=False, allow_infinity=False)
    a = np.array(data.draw(st.lists(values, min_size=1, max_size=8)), dtype=dtype)
    b = np.array(data.draw(st.lists(values, min_size=a.size, max_size=a.size)), dtype=dtype)
    # Same signs only: NumPy's count overflows its integer type across signs (5.0 vs -1.0 in
    # float32), while the stepping test above crosses zero.
    b = np.copysign(b, a)
    dist, _ = bits.ulp_distance(raw(a, name), raw(b, name), bits.format_of(name))
    # NumPy counts the steps itself and returns the count in the arrays' dtype, so rounded.
    expected = np.testing.assert_array_max_ulp(a, b, maxulp=float(2**64), dtype=dtype)
    assert dtype(int(dist.max())) == np.max(expected)


@pytest.mark.parametrize("name", SMALL)
def test_small_formats_decode_like_ml_dtypes(name):
    fmt = bits.format_of(name)
    codes = np.arange(1 << fmt.width, dtype=fmt.uint)
    ours = bits.to_float64(codes, fmt)
    theirs = codes.view(SMALL[name]).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = ~np.isnan(theirs)
    np.testing.assert_array_equal(ours[finite], theirs[finite])
    np.testing.assert_array_equal(np.signbit(ours[finite]), np.signbit(theirs[finite]))


@pytest.mark.parametrize("name", SMALL)
def test_small_formats_ulp_distance_is_rank_difference(name):
    """The distance between two finite codes is how far apart their values rank among all
    the format's finite values (+0 and -0 share a rank): every pair of the 8-bit formats,
    and for bfloat16 every code against 64 others drawn at random plus its neighbours."""
    fmt = bits.format_of(name)
    codes = np.arange(1 << fmt.width, dtype=fmt.uint)
    with np.errstate(invalid="ignore"):  # the NaN codes
        values = codes.view(SMALL[name]).astype(np.float64)
    finite = codes[np.isfinite(values)]
    _, rank = np.unique(values[finite], return_inverse=True)
    if fmt.width <= 8:
        i, j = (index.ravel() for index in np.meshgrid(np.arange(finite.size), np.arange(finite.size)))
    else:
        others = np.random.default_rng(0).integers(0, finite.size, (finite.size, 64))
        neighbours = np.clip(np.arange(finite.size)[:, None] + np.array([-1, 1]), 0, finite.size - 1)
        j = np.concatenate([others, neighbours], axis=1).ravel()
        i = np.repeat(np.arange(finite.size), 66)
    dist, defined = bits.ulp_distance(finite[i], finite[j], fmt)
    assert defined.all()
    np.testing.assert_array_equal(dist.astype(np.int64), np.abs(rank[i].astype(np.int64) - rank[j]))


@pytest.mark.parametrize("name", SMALL)
@settings(max_examples=300, deadline=None)
@given(value=st.floats(width=32, allow_nan=False))
def test_from_float64_rounds_like_ml_dtypes(name, value):
    # Drawn as float32 so ml_dtypes' cast (which goes through float32) rounds only once.
    fmt = bits.format_of(name)
    ours = bits.from_float64(np.array([value]), fmt)
    theirs = np.array([value], dtype=np.float32).astype(SMALL[name]).view(fmt.uint)
    if np.isnan(theirs.view(SMALL[name]).astype(np.float64)[0]):
        assert bits.is_nan(ours, fmt)[0]
    else:
        assert ours[0] == theirs[0]


@pytest.mark.parametrize("name", [*NATIVE, *SMALL])
def test_from_float64_round_trips_every_small_code_and_samples(name):
    fmt = bits.format_of(name)
    if fmt.width <= 16:
        codes = np.arange(1 << fmt.width, dtype=fmt.uint)
    else:
        codes = np.random.default_rng(0).integers(0, 1 << fmt.width, 20000, dtype=fmt.uint)
    keep = ~bits.is_nan(codes, fmt)
    stored = codes[keep] if not fmt.native else codes[keep].view(fmt.storage)
    back = bits.raw_bits(bits.from_float64(bits.to_float64(stored, fmt), fmt), fmt)
    np.testing.assert_array_equal(back, codes[keep])


@pytest.mark.parametrize("name", [*NATIVE, *SMALL])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_decimal_string_reads_back_to_the_same_bits(name, data):
    fmt = bits.format_of(name)
    code = data.draw(st.integers(0, (1 << fmt.width) - 1))
    if bits.is_nan(np.array([code], np.uint64), fmt)[0]:
        return
    text = element_bits.decimal_string(code, fmt)
    back = int(bits.raw_bits(bits.from_float64(np.array([float(text)]), fmt), fmt)[0])
    assert back == code
    if name in ("float16", "float32"):
        # As short as NumPy's shortest unique repr of the same value.
        value = np.array([code], fmt.uint).view(fmt.storage)[0]
        assert significant_digits(text) <= significant_digits(np.format_float_scientific(value, unique=True))


def significant_digits(decimal: str) -> int:
    mantissa = decimal.lstrip("-").split("e")[0].replace(".", "")
    return max(len(mantissa.strip("0")), 1)


@settings(max_examples=200, deadline=None)
@given(codes=st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=64))
def test_magnitude_is_np_abs_bit_for_bit(codes):
    """Every float64 bit pattern, NaN payloads, -0, infinities and subnormals included."""
    values = np.array(codes, dtype=np.uint64).view(np.float64)
    np.testing.assert_array_equal(bits.magnitude(values).view(np.uint64), np.abs(values).view(np.uint64))


def test_magnitude_of_a_strided_view_leaves_it_unchanged():
    values = np.array([-1.5, 2.0, -0.0, -np.inf, 3.0, -np.nan])
    kept = values.copy()
    np.testing.assert_array_equal(bits.magnitude(values[::2]), [1.5, 0.0, 3.0])
    np.testing.assert_array_equal(values.view(np.uint64), kept.view(np.uint64))
