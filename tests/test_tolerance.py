"""Tolerance presets: resolution rules, and agreement with torch.testing and numpy.testing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.errors import InputError
from perpendis.inputs.tensor import from_numpy
from perpendis.numerics.bits import format_of
from perpendis.numerics.tolerance import PRESETS, default_preset, resolve, within

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("fmt", "preset"),
    [
        ("float32", "fp32-cpu"),
        ("float16", "fp16"),
        ("bfloat16", "bf16"),
        ("float64", "fp64"),
        ("float8_e4m3fn", "fp8"),
        ("float8_e5m2", "fp8"),
        ("int32", "exact"),
        ("bool", "exact"),
    ],
)
def test_default_preset_follows_the_format(fmt, preset):
    assert default_preset(format_of(fmt)) == preset


def test_default_preset_of_a_mixed_pair_is_the_narrower_format():
    assert default_preset(format_of("float32"), format_of("float16")) == "fp16"
    assert default_preset(format_of("int64"), format_of("bfloat16")) == "bf16"


def test_presets_from_the_guide():
    got = {name: (p.atol, p.rtol) for name, p in PRESETS.items()}
    assert got["fp32-cpu"] == (1e-5, 1e-3)
    assert got["fp32-tf32"] == (1e-3, 1e-2)
    assert got["fp16"] == (1e-2, 1e-2)
    assert got["bf16"] == (1e-2, 2e-2)
    assert got["numpy-default"] == (0.0, 1e-7)


def test_explicit_values_override_one_side_of_the_preset():
    tol = resolve(format_of("float32"), preset="fp16", rtol=0.5)
    assert (tol.atol, tol.rtol, tol.preset) == (1e-2, 0.5, "fp16")


@pytest.mark.parametrize(
    ("fmt", "atol", "rtol"),
    [("float16", 1e-5, 1e-3), ("bfloat16", 1e-5, 1.6e-2), ("float32", 1e-5, 1.3e-6), ("float64", 1e-7, 1e-7)],
)
def test_torch_default_is_per_dtype(fmt, atol, rtol):
    tol = resolve(format_of(fmt), preset="torch-default")
    assert (tol.atol, tol.rtol) == (atol, rtol)


def test_numpy_default_warns_about_atol_zero():
    tol = resolve(format_of("float32"), preset="numpy-default")
    assert tol.warning and "atol" in tol.warning
    assert resolve(format_of("float32"), preset="numpy-default", atol=1e-6).warning is None


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"preset": "fp-nope"}, "unknown tolerance preset"), ({"atol": -1}, "atol"), ({"rtol": "x"}, "rtol")],
)
def test_bad_tolerance_is_an_input_error(kwargs, needle):
    with pytest.raises(InputError, match=needle):
        resolve(format_of("float32"), **kwargs)


def test_within_fails_nan():
    tol = resolve(format_of("float32"))
    assert not within(np.array([np.nan]), np.array([1.0]), tol)[0]


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), log_noise=st.floats(-9, -1))
def test_torch_default_passes_exactly_when_assert_close_does(dtype, seed, log_noise):
    rng = np.random.default_rng(seed)
    expected = torch.from_numpy(rng.standard_normal(64)).to(dtype)
    actual = (expected.double() * (1 + 10**log_noise * torch.from_numpy(rng.standard_normal(64)))).to(dtype)
    try:
        torch.testing.assert_close(actual, expected)
        torch_passed = True
    except AssertionError:
        torch_passed = False
    torch_default = ComparisonOptions(preset="torch-default")
    report = compare(from_numpy(actual.numpy(), "a"), from_numpy(expected.numpy(), "b"), torch_default)
    assert report.tolerance.passed == torch_passed


@pytest.mark.fuzz
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), log_noise=st.floats(-10, -4))
def test_numpy_default_passes_exactly_when_assert_allclose_does(seed, log_noise):
    rng = np.random.default_rng(seed)
    desired = rng.standard_normal(64)
    actual = desired * (1 + 10**log_noise * rng.standard_normal(64))
    try:
        np.testing.assert_allclose(actual, desired)
        numpy_passed = True
    except AssertionError:
        numpy_passed = False
    report = compare(from_numpy(actual, "a"), from_numpy(desired, "b"), ComparisonOptions(preset="numpy-default"))
    assert report.tolerance.passed == numpy_passed


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    scale=st.integers(-3, 6),
    printer=st.sampled_from(["torch", "torch-fixed", "torch-2", "numpy"]),
)
def test_print_slack_covers_the_print_error_and_no_more_than_its_digits(seed, scale, printer):
    """Real prints of float32 values: every value read back lies within its slack of the
    value printed, and the slack is no wider than half a unit in the ``digits``-th place."""
    from perpendis.inputs.parse import parse_text
    from perpendis.numerics.tolerance import print_slack, printed_digits

    x = (np.random.default_rng(seed).standard_normal(12) * 10.0**scale).astype(np.float32)
    # NumPy's print drops trailing zeros, so only its default precision can be told from the text.
    if printer == "numpy":
        text = repr(x)
    else:
        torch.set_printoptions(
            sci_mode=False if printer == "torch-fixed" else None, precision=2 if printer == "torch-2" else 4
        )
        try:
            text = repr(torch.from_numpy(x))
        finally:
            torch.set_printoptions(profile="default")
    (printed,) = parse_text(text)
    digits = printed_digits(printed.describe())
    if digits is None:  # the print pinned every value: nothing to excuse
        assert np.array_equal(printed.array, x)
        return
    fmt = format_of("float32")
    slack = print_slack(printed.array.view(np.uint32), fmt, digits)
    error = np.abs(printed.array.astype(np.float64) - x.astype(np.float64))
    spacing = np.spacing(np.abs(printed.array)).astype(np.float64)  # the read-back rounds to float32 too
    assert np.all(error <= slack + spacing), text
    if digits:
        nonzero = printed.array != 0
        # The decade of each printed value (read back to float32, 0.0001 is a hair below 1e-4).
        magnitude = 10.0 ** np.floor(np.log10(np.abs(printed.array[nonzero].astype(np.float64))) + 1e-6)
        assert np.all(slack[nonzero] <= 5 * magnitude * 10.0 ** (1 - digits))  # within one decade of the digits


def test_the_heatmap_fails_exactly_the_elements_the_report_fails():
    """One rule for pass and fail: the page's ``fail`` plane excuses what a coarse print
    cannot resolve, as the report's count does."""
    from perpendis.service import api

    exact = np.random.default_rng(5).uniform(0.001, 0.03, (4, 10)).astype(np.float32)
    other = exact.copy()
    other[2, 7] *= 1.5  # one real failure, far beyond the print's resolution
    text = repr(torch.from_numpy(exact))  # four decimals: up to 5e-5 off, beyond fp32-cpu near 0.01
    out = api.handle({"op": "compare", "inputs": {"a": {"text": text}, "b": {"text": repr(other)}}}, {})
    report = out["report"]
    assert report["tolerance"]["n_fail"] == 1 and any("printed digits" in n for n in report["notes"])
    plane = api.handle({"op": "slice", "axes": [0, 1], "index": [0, 0], "metric": "fail", "max_cells": 40}, {})
    values = np.array(plane["slice"]["values"]).reshape(4, 10)
    assert values.sum() == 1 and values[2, 7] == 1
