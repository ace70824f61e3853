"""Differential tests: each peer preset against the real peer library, on generated pairs.

Hypothesis draws pairs in every dtype (bfloat16 through torch) with ±inf, NaN, ±0,
subnormals, huge and tiny magnitudes, in shapes from 0-d to empty.  For each, the test
asserts that Perpendis's report says what the peer says: pass or fail, the failing count
and the worst failing element, wherever the peer states them (``tests/peers.py`` reads
them from the peer's own message or result).
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from perpendis.engine.options import ComparisonOptions

torch = pytest.importorskip("torch")
import peers  # noqa: E402

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOAT_WIDTH = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64, "complex64": 32, "complex128": 64}


@st.composite
def pairs(draw: st.DrawFn, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, B, ref64)``: B equal to A, near it (rounding-sized to large noise), fresh, or a
    special, element by element; ``ref64`` a float64 value near B (dynamo's reference)."""
    shape = draw(st.sampled_from(peers.SHAPES))
    n = math.prod(shape)
    if dtype == "int32":
        a = draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n))
        step = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
        b = [min(max(x + d, -(2**31)), 2**31 - 1) for x, d in zip(a, step, strict=True)]
        a32, b32 = np.array(a, dtype=np.int32).reshape(shape), np.array(b, dtype=np.int32).reshape(shape)
        return a32, b32, b32.astype(np.float64)
    element = st.floats(width=FLOAT_WIDTH[dtype])  # NaN, ±inf, ±0, subnormals and extremes included
    special = st.sampled_from([math.inf, -math.inf, math.nan, 0.0, -0.0])
    noise = st.floats(-9, -1).map(lambda e: 10.0**e) | st.just(0.0)

    def side_b(x: float) -> st.SearchStrategy[float]:
        near = st.tuples(noise, st.sampled_from([-1.0, 1.0])).map(lambda t: x * (1 + t[0] * t[1]))
        return st.one_of(st.just(x), near, element, special)

    def draw_side(count: int) -> tuple[list[float], list[float]]:
        xs = draw(st.lists(element, min_size=count, max_size=count))
        return xs, [draw(side_b(x)) for x in xs]

    if dtype.startswith("complex"):
        (re_a, re_b), (im_a, im_b) = draw_side(n), draw_side(n)
        a, b = np.empty(n, dtype=dtype), np.empty(n, dtype=dtype)
        with np.errstate(all="ignore"):  # each part set apart: an infinite part keeps the other
            a.real, a.imag, b.real, b.imag = re_a, im_a, re_b, im_b
        return a.reshape(shape), b.reshape(shape), b.real.astype(np.float64).reshape(shape)
    xs, ys = draw_side(n)
    a, b = peers._cast(np.array(xs, dtype=np.float64), dtype), peers._cast(np.array(ys, dtype=np.float64), dtype)
    # Half the NaNs on both sides keep A's bits: bit-equal NaNs.
    keep = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    both = np.isnan(peers._decoded(a, dtype)) & np.isnan(peers._decoded(b, dtype)) & keep
    b = np.where(both, a, b)
    wobble = np.array(draw(st.lists(st.floats(-1e-3, 1e-3), min_size=n, max_size=n)))
    with np.errstate(all="ignore"):
        ref = peers._decoded(b, dtype) * (1 + wobble)
    return a.reshape(shape), b.reshape(shape), ref.reshape(shape)


def agree(ours: peers.Said, theirs: peers.Said, preset: str, dtype: str) -> None:
    assert ours.passed == theirs.passed, (ours, theirs)
    if theirs.n_fail is not None:
        assert ours.n_fail == theirs.n_fail, (ours, theirs)
    if theirs.worst is not None:
        assert peers.same_worst(ours, theirs, preset, dtype), (ours, theirs)


REAL = ["float16", "bfloat16", "float32", "float64", "int32"]
NUMPY = ["float16", "float32", "float64", "int32"]  # numpy has no bfloat16
COMPLEX = ["complex64", "complex128"]


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", REAL + COMPLEX)
@SETTINGS
@given(data=st.data())
def test_torch_default_says_what_assert_close_says(dtype, data):
    """Complex values too: judged whole, by the modulus, as torch.isclose judges them."""
    a, b, _ = data.draw(pairs(dtype))
    agree(peers.perpendis_says(a, b, dtype, "torch-default"), peers.torch_assert_close(a, b, dtype), "", dtype)


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", COMPLEX)
@SETTINGS
@given(data=st.data())
def test_numpy_presets_on_complex_say_what_numpy_says(dtype, data):
    a, b, _ = data.draw(pairs(dtype))
    for preset, theirs in (
        ("numpy-default", peers.numpy_assert_allclose(a, b)),
        ("numpy-allclose", peers.numpy_allclose(a, b)),
    ):
        ours = peers.perpendis_says(a, b, dtype, preset)
        if peers.disagreement(preset, dtype, a, b, None, ours, theirs) == "numpy-abs-overflow":
            continue  # documented: numpy passes a NaN or inf against a B whose |B| overflows
        agree(ours, theirs, preset, dtype)


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", NUMPY)
@SETTINGS
@given(data=st.data())
def test_numpy_default_says_what_assert_allclose_says(dtype, data):
    a, b, _ = data.draw(pairs(dtype))
    theirs = peers.numpy_assert_allclose(a, b)
    agree(peers.perpendis_says(a, b, dtype, "numpy-default"), theirs, "numpy-default", dtype)


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", NUMPY)
@SETTINGS
@given(data=st.data())
def test_numpy_allclose_says_what_np_allclose_says(dtype, data):
    a, b, _ = data.draw(pairs(dtype))
    agree(peers.perpendis_says(a, b, dtype, "numpy-allclose"), peers.numpy_allclose(a, b), "numpy-allclose", dtype)


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", NUMPY)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_polygraphy_says_what_compare_func_simple_says(dtype, data):
    a, b, _ = data.draw(pairs(dtype))
    agree(peers.perpendis_says(a, b, dtype, "polygraphy"), peers.polygraphy_simple(a, b), "polygraphy", dtype)


@pytest.mark.fuzz
@pytest.mark.parametrize("dtype", REAL)
@SETTINGS
@given(data=st.data(), with_reference=st.booleans())
def test_dynamo_says_what_same_says(dtype, data, with_reference):
    a, b, ref = data.draw(pairs(dtype))
    ref = ref if with_reference else None
    ours = peers.perpendis_says(a, b, dtype, "dynamo", ref)
    theirs = peers.dynamo_same(a, b, dtype, ref)
    if ref is not None and theirs.passed and not ours.passed:
        # The one departure (docs/presets.md): dynamo's RMSE rule can pass a NaN or an
        # infinity that A and B disagree on; Perpendis never shows "passes" beside one.
        va, vb = peers._decoded(a, dtype), peers._decoded(b, dtype)
        unlike = ~((va == vb) | (np.isnan(va) & np.isnan(vb))) & ~(np.isfinite(va) & np.isfinite(vb))
        assert unlike.any()
        return
    assert ours.passed == theirs.passed, (ours, theirs)


# ---------------------------------------------------------------------------------------
# The cases of the issue, and every consumer of the verdict.


def test_an_infinity_against_a_number_fails_and_no_tolerance_passes_it():
    from perpendis.engine.compare import compare
    from perpendis.inputs.tensor import from_numpy

    a = np.array([0.5674, 1.0], dtype=np.float16)
    b = np.array([-np.inf, 1.0], dtype=np.float16)
    for preset in (None, "fp16", "torch-default", "numpy-default", "numpy-allclose", "polygraphy", "dynamo"):
        report = compare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(preset=preset))
        t = report.tolerance
        assert (t.passed, t.n_fail, report.min_tolerance.n_unreachable) == (False, 1, 1), preset
        assert t.worst_fail.flat == 0 and t.worst_fail.abs_diff == math.inf
        line = next(x for x in report.to_text().splitlines() if x.startswith("tolerance"))
        assert "FAIL: 1 of 2" in line and "no tolerance passes its 1 NaN or inf mismatch" in line


def test_opposite_infinities_fail_even_with_a_huge_tolerance():
    from perpendis.engine.compare import compare
    from perpendis.inputs.tensor import from_numpy

    a, b = np.array([np.inf, 1.0]), np.array([-np.inf, 1.0])
    report = compare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(atol=1e300, rtol=1e300))
    assert not report.tolerance.passed and report.tolerance.n_fail == 1


def test_equal_nan_false_fails_bit_equal_nans_and_the_default_passes_them():
    from perpendis.engine.compare import compare
    from perpendis.inputs.tensor import from_numpy

    a = np.array([1.0, np.nan, 2.0], dtype=np.float32)
    for preset, fails in (("fp32-cpu", 0), ("numpy-default", 0), ("torch-default", 1), ("numpy-allclose", 1)):
        report = compare(from_numpy(a, "a"), from_numpy(a.copy(), "b"), ComparisonOptions(preset=preset))
        assert report.identical and report.tolerance.n_fail == fails, preset
        assert report.tolerance.passed == (fails == 0)
        if fails:
            assert report.tolerance.first_fail.index == [1] and report.min_tolerance.n_unreachable == 1
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 3"):
        torch.testing.assert_close(torch.from_numpy(a), torch.from_numpy(a.copy()))


def test_the_heatmap_fails_what_the_report_fails_under_equal_nan_false():
    from perpendis.service import api

    a = [[1.0, float("nan")], [3.0, float("inf")]]
    b = [[1.0, float("nan")], [3.5, float("inf")]]
    request = {"op": "compare", "inputs": {"a": {"text": repr(np.array(a))}, "b": {"text": repr(np.array(b))}}}
    for preset, fails in (("torch-default", [0.0, 1.0, 1.0, 0.0]), ("fp64", [0.0, 0.0, 1.0, 0.0])):
        out = api.handle(request | {"options": {"preset": preset}}, {})
        assert out["report"]["tolerance"]["n_fail"] == sum(fails)
        plane = api.handle({"op": "slice", "axes": [0, 1], "index": [0, 0], "metric": "fail", "max_cells": 4}, {})
        assert plane["slice"]["values"] == fails, preset


def test_two_dtypes_are_refused_by_the_presets_of_peers_that_refuse_them():
    from perpendis.engine.compare import compare
    from perpendis.inputs.tensor import from_numpy

    a, b = np.ones(3, dtype=np.float32), np.ones(3, dtype=np.float16)
    for preset in ("torch-default", "dynamo"):
        t = compare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(preset=preset)).tolerance
        assert not t.passed and t.n_fail == 0 and "refuses A as float32 against B as float16" in t.refused
    assert compare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(preset="numpy-default")).tolerance.passed
    with pytest.raises(AssertionError, match="dtype"):
        torch.testing.assert_close(torch.from_numpy(a), torch.from_numpy(b))


def test_a_split_fold_applies_the_presets_rule():
    """A share carries (atol, rtol, preset): folded elsewhere, the rule comes with the name."""
    from perpendis.engine.compare import prepare
    from perpendis.inputs.tensor import from_numpy

    a = np.array([1.0, np.nan, np.inf, 2.0], dtype=np.float16)
    b = np.array([1.0, np.nan, -np.inf, 2.0005], dtype=np.float16)
    prepared = prepare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(preset="torch-default"))
    (share,) = prepared.shares(1)
    whole, split = prepared.fold(), share.fold(*prepared.share_bytes(share))
    assert (split.n_fail, split.n_unreachable) == (whole.n_fail, whole.n_unreachable) == (2, 2)


def test_bisect_counts_non_finite_mismatches_in_the_failing_share():
    from perpendis.engine.compare import compare
    from perpendis.inputs.tensor import from_numpy
    from perpendis.layers.bisect import Pair

    a = np.array([0.5, 1.0, 2.0, 3.0], dtype=np.float16)
    b = np.array([-np.inf, 1.0, 2.0, 3.0], dtype=np.float16)
    report = compare(from_numpy(a, "a"), from_numpy(b, "b"))
    pair = Pair("layer.a", "layer.b", "name", report)
    assert pair.summary()["fraction_fail"] == 0.25


def test_the_preset_list_names_the_peer_each_mimics():
    from perpendis.numerics.tolerance import PRESETS, preset_label

    assert preset_label("torch-default") == "torch-default (by dtype), as torch.testing.assert_close"
    assert preset_label("numpy-allclose") == "numpy-allclose (atol 1e-08, rtol 1e-05), as numpy.allclose"
    assert preset_label("fp16") == "fp16 (atol 0.01, rtol 0.01)"
    assert all(PRESETS[n].mimics for n in ("torch-default", "numpy-default", "numpy-allclose", "polygraphy", "dynamo"))


def _complex_fold_paths(a: np.ndarray, b: np.ndarray, preset: str, chunks: tuple[int, ...] = (2, 6)) -> list[tuple]:
    """The tolerance result of one complex pair folded in memory, streamed in chunks of
    ``chunks`` values, and cut into shares whose partials travel as bytes."""
    from functools import reduce

    from perpendis.engine import stream
    from perpendis.engine.compare import compare, prepare
    from perpendis.engine.fold.codec import partial_from_bytes, partial_to_bytes
    from perpendis.inputs.formats.buffer import view_reader
    from perpendis.inputs.tensor import from_numpy

    def said(t) -> tuple:
        worst = None if t.worst_fail is None else (t.worst_fail.flat, t.worst_fail.abs_diff)
        return t.passed, t.n_fail, t.fraction_fail, t.first_fail and t.first_fail.flat, worst

    out = [said(compare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(preset=preset)).tolerance)]
    files = []
    for x in (a, b):
        buffer = io.BytesIO()
        np.save(buffer, x)
        files.append(view_reader(buffer.getvalue()))
    for chunk in chunks:
        sides = [stream.open_source(*f, side=s) for f, s in zip(files, "ab", strict=True)]
        out.append(said(stream.compare_sources(*sides, ComparisonOptions(preset=preset), chunk=chunk).tolerance))
    prepared = prepare(from_numpy(a, "a"), from_numpy(b, "b"), ComparisonOptions(preset=preset))
    parts = [partial_from_bytes(partial_to_bytes(s.fold(*prepared.share_bytes(s)))) for s in prepared.shares(3)]
    out.append(said(prepared.finish(reduce(lambda x, y: x.merge(y), parts)).tolerance))
    return out


def test_complex_values_are_judged_whole_through_every_fold():
    """Two parts each within the tolerance, whose modulus is not: one failure of one complex
    value (of 3), in every path that folds, the same as torch counts it."""
    a = np.array([1 + 1j, 2 + 2j, 3 + 3j], dtype=np.complex64)
    b = a.copy()
    b[1] = np.complex64(complex(2 + 1.1e-5, 2 + 1.1e-5))  # each part within 1e-5 + 1.3e-6 * 2, |d| not
    theirs = peers.torch_assert_close(a, b, "complex64")
    assert (theirs.passed, theirs.n_fail, theirs.worst_flat) == (False, 1, 1)
    results = _complex_fold_paths(a, b, "torch-default")
    assert results[0][:4] == (False, 1, 1 / 3, 2)  # flat 2: the real part of value 1
    assert all(r == results[0] for r in results[1:]), results
    per_part = peers.perpendis_says(a.view(np.float32), b.view(np.float32), "float32", "torch-default")
    assert per_part.passed  # the parts alone pass: only the modulus fails


def test_a_shares_boundary_never_splits_a_complex_value():
    from perpendis.engine.fold.chunk import CHUNK

    assert CHUNK % 2 == 0
    rng = np.random.default_rng(0)
    n = CHUNK // 2 + 3  # 2n values: two chunks, three shares at most
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    b = a.copy()
    b[CHUNK // 2 - 1] += np.complex64(1e-3 + 1e-3j)  # the last value of the first chunk
    b[-1] = np.complex64(complex(np.nan, 0.0))
    results = _complex_fold_paths(a, b, "numpy-allclose", chunks=(CHUNK,))
    assert results[0][:2] == (False, 2)
    assert all(r == results[0] for r in results[1:]), results


def test_the_classifier_names_dynamos_inf_rmse_pass_and_dynamo_passes_it():
    """A holds an infinity where B is finite, and B's RMSE against the float64 reference
    overflows too: dynamo passes (inf <= 2 * inf + tol / 10); Perpendis fails the pair."""
    a = np.array([np.inf, 1.0])
    b = np.array([1e300, 1.0])
    ref = np.array([-1e300, 1.0])
    theirs = peers.dynamo_same(a, b, "float64", ref)
    ours = peers.perpendis_says(a, b, "float64", "dynamo", ref)
    assert theirs.passed and not ours.passed
    assert peers.disagreement("dynamo", "float64", a, b, ref, ours, theirs) == "dynamo-inf-rmse"
    # Without the reference, dynamo fails it too: no disagreement.
    bare = peers.dynamo_same(a, b, "float64", None), peers.perpendis_says(a, b, "float64", "dynamo")
    assert peers.disagreement("dynamo", "float64", a, b, None, bare[1], bare[0]) is None


def test_the_classifier_names_numpys_complex_abs_overflow():
    """|B| of a finite complex64 B near the largest float32 overflows to inf in numpy, and
    np.isclose then passes a NaN in A against it; Perpendis fails that value."""
    big = np.finfo(np.float32).max
    a = np.array([complex(np.nan, np.inf), 1 + 1j], dtype=np.complex64)
    b = np.array([complex(-big, -big), 1 + 1j], dtype=np.complex64)
    theirs = peers.numpy_allclose(a, b)
    ours = peers.perpendis_says(a, b, "complex64", "numpy-allclose")
    assert theirs.passed and (ours.passed, ours.n_fail) == (False, 1)
    assert peers.disagreement("numpy-allclose", "complex64", a, b, None, ours, theirs) == "numpy-abs-overflow"


def test_an_unexplained_disagreement_shows_as_one():
    """A pair no documented departure covers, said differently: unexplained."""
    a, b = np.array([1.0, 2.0]), np.array([1.0, 2.5])
    theirs = peers.numpy_allclose(a, b)
    wrong = peers.Said(True, 0)  # as a broken preset would say it
    assert not theirs.passed
    assert peers.disagreement("numpy-allclose", "float64", a, b, None, wrong, theirs) == "unexplained"
    ours = peers.perpendis_says(a, b, "float64", "numpy-allclose")
    assert peers.disagreement("numpy-allclose", "float64", a, b, None, ours, theirs) is None
