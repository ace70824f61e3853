"""The numbers of the report, each checked against an independent NumPy computation."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.engine.compare import compare, compare_chunks
from perpendis.engine.fold import partial as declared
from perpendis.engine.fold.chunk import aligned_chunks
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs import formats
from perpendis.inputs.tensor import Tensor, from_numpy
from perpendis.numerics import bits
from perpendis.numerics.tolerance import resolve

MODELS = Path(__file__).parent / "fixtures" / "models"


def model_output(name):
    """A tensor of ``tests/fixtures/models``, made by real PyTorch and ONNX Runtime runs."""
    (tensor,) = formats.read((MODELS / name).read_bytes(), name)
    return tensor


def t(x, source="test"):
    return from_numpy(np.asarray(x), source)


def stepped(x: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Each element moved up by its own number of representable steps."""
    out = x.copy()
    for k in range(int(steps.max(initial=0))):
        move = steps > k
        out[move] = np.nextafter(out[move], np.array(np.inf, dtype=x.dtype))
    return out


def noisy_pair(n=4000, share=0.1, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(n).astype(dtype)
    steps = np.where(rng.random(n) < share, rng.integers(1, 5, n), 0)
    return stepped(b, steps), b, steps


def test_identical_arrays():
    x = np.linspace(-1, 1, 50, dtype=np.float32)
    r = compare(t(x), t(x.copy()))
    assert r.identical and r.verdict == "identical"
    assert r.n_bitwise_diff == 0 and r.first_diff is None and r.max_ulp == 0


def test_bit_equality_semantics():
    a = np.array([0.0, np.nan, np.nan, 1.0, np.inf], dtype=np.float32)
    b = np.array([-0.0, np.nan, 2.0, 1.0, 1.0], dtype=np.float32)
    r = compare(t(a), t(b))
    assert r.n_bitwise_diff == 3  # +0/-0, NaN/2, inf/1; the two identical NaNs are equal
    assert r.n_signed_zero_diff == 1
    assert r.n_nan_mismatch == 1 and r.nan_mismatch_indices == [[2]]
    assert r.n_inf_mismatch == 1 and r.inf_mismatch_indices == [[4]]
    assert r.first_diff.index == [0] and r.first_diff.ulp == 0
    assert r.ulp_histogram.nonfinite == 2
    assert r.tolerance.n_fail == 2


def test_numbers_match_numpy():
    a, b, steps = noisy_pair()
    r = compare(t(a), t(b))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    err = np.abs(a64 - b64)
    rel = err / np.abs(b64)
    assert r.n_bitwise_diff == int((steps > 0).sum())
    assert r.first_diff.flat == int(np.flatnonzero(a != b)[0])
    assert r.max_ulp == int(steps.max())
    assert r.max_ulp == int(np.testing.assert_array_max_ulp(a, b, maxulp=100).max())
    assert r.max_abs_diff == err.max() and r.worst["abs"].flat == int(np.argmax(err))
    assert r.max_rel_diff == rel.max() and r.worst["rel"].flat == int(np.argmax(rel))
    s = r.stats
    assert s.mean_abs == pytest.approx(err.mean(), rel=1e-12)
    assert s.mean_rel == pytest.approx(rel.mean(), rel=1e-12)
    for key, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)):
        assert getattr(s, f"{key}_abs") == pytest.approx(np.quantile(err, q), rel=1e-12, abs=1e-300)
        assert getattr(s, f"{key}_rel") == pytest.approx(np.quantile(rel, q), rel=1e-12, abs=1e-300)
    assert s.rmse == pytest.approx(np.sqrt(np.mean(err**2)), rel=1e-12)
    cosine = np.dot(a64, b64) / np.sqrt(np.dot(a64, a64) * np.dot(b64, b64))
    assert 1 - s.cosine == pytest.approx(1 - cosine, rel=1e-3)
    assert s.snr_db == pytest.approx(10 * np.log10(np.dot(b64, b64) / np.dot(err, err)), rel=1e-6)


def test_ulp_histogram_bins():
    b = np.linspace(1, 2, 30, dtype=np.float32)
    steps = np.array([0, 1, 2, 3, 4, 5, 8, 9, 16, 17] * 3)
    r = compare(t(stepped(b, steps)), t(b))
    h = r.ulp_histogram
    assert h.edges == ["0", "1", "2", "3-4", "5-8", "9-16", "17-32"]
    assert h.counts == [3, 3, 3, 6, 6, 6, 3]
    assert sum(h.counts) + h.nonfinite == r.n_elements


def test_relative_difference_is_zero_where_both_are_zero():
    a = np.array([0.0, -0.0, 1.0], dtype=np.float32)
    b = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    r = compare(t(a), t(b))
    assert r.max_rel_diff == 0.0 and r.stats.mean_rel == 0.0


def test_min_tolerance_is_the_boundary():
    a, b, _ = noisy_pair(seed=3)
    r = compare(t(a), t(b), ComparisonOptions(preset="fp32-cpu"))
    need_atol = r.min_tolerance.atol_at_rtol
    assert compare(t(a), t(b), ComparisonOptions(atol=need_atol, rtol=1e-3)).tolerance.passed
    tighter = ComparisonOptions(atol=need_atol * 0.99, rtol=0.0)
    assert not compare(t(a), t(b), tighter).tolerance.passed or need_atol == 0
    big = a * np.float32(1.001)
    r = compare(t(big), t(b), ComparisonOptions(rtol=0.0, atol=1e-5))
    need_rtol = r.min_tolerance.rtol_at_atol
    assert compare(t(big), t(b), ComparisonOptions(atol=1e-5, rtol=need_rtol)).tolerance.passed
    assert not compare(t(big), t(b), ComparisonOptions(atol=1e-5, rtol=need_rtol * 0.99)).tolerance.passed


def test_min_rtol_passes_over_a_difference_of_exactly_atol_against_zero():
    """That pair's ratio (|a-b| - atol) / |b| is 0/0: it needs no rtol, and must not make the answer NaN."""
    a = np.array([0.25, 1.5, 2.0, 4.0], dtype=np.float32)
    b = np.array([0.0, 1.0, 2.0, 4.0], dtype=np.float32)
    r = compare(t(a), t(b), ComparisonOptions(atol=0.25, rtol=0.0))
    assert r.min_tolerance.rtol_at_atol == pytest.approx((0.5 - 0.25) / 1.0)
    assert compare(t(a), t(b), ComparisonOptions(atol=0.25, rtol=r.min_tolerance.rtol_at_atol)).tolerance.passed


def test_integers_compare_exactly():
    a = np.array([1, 5, -3, 100], dtype=np.int32)
    b = np.array([1, 2, -3, 90], dtype=np.int32)
    r = compare(t(a), t(b))
    assert r.tolerance.preset == "exact" and r.tolerance.n_fail == 2
    assert r.max_ulp == 10 and r.worst["ulp"].index == [3]
    assert r.verdict == "investigate"


def test_bfloat16_held_as_bits():
    fmt = bits.format_of("bfloat16")
    b = bits.from_float64(np.linspace(1, 3, 40), fmt)
    a = b.copy()
    a[::4] += 2  # two steps up: same sign, no carry into the exponent for these codes
    r = compare(Tensor(a, "bfloat16", "test"), Tensor(b, "bfloat16", "test"))
    assert r.compared_as == "bfloat16" and r.max_ulp == 2 and r.n_bitwise_diff == 10
    assert r.tolerance.preset == "bf16" and r.tolerance.passed
    assert r.first_diff.a_bits.count(" ") == 2 and len(r.first_diff.a_bits) == 18


def test_dtype_mismatch_rounds_the_wider_side():
    x = np.random.default_rng(1).standard_normal(100)
    r = compare(t(x.astype(np.float16)), t(x.astype(np.float32)))
    assert r.compared_as == "float16" and not r.dtype_match
    assert r.n_bitwise_diff == 0 and not r.identical
    assert any("rounded to float16" in n for n in r.notes)


def test_transposed_layout_is_found():
    nchw = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype(np.float32)
    nhwc = np.ascontiguousarray(nchw.transpose(0, 2, 3, 1))
    r = compare(t(nhwc), t(nchw))
    assert r.layout["perm"] == [0, 3, 1, 2]
    assert r.compared_shape == [2, 3, 4, 5] and r.n_bitwise_diff == 0
    assert not r.shape_match and r.verdict == "investigate"


def test_size_one_axes_and_broadcast_and_incompatible():
    x = np.arange(6, dtype=np.float32)
    r = compare(t(x), t(x.reshape(6, 1)))
    assert r.layout["kind"] == "squeeze" and r.compared_shape == [6, 1] and r.n_bitwise_diff == 0
    row = np.arange(4, dtype=np.float32)
    r = compare(t(row), t(np.tile(row, (3, 1))))
    assert r.layout["kind"] == "broadcast" and r.compared_shape == [3, 4] and r.n_bitwise_diff == 0
    r = compare(t(np.zeros((2, 3), np.float32)), t(np.zeros((4, 5), np.float32)))
    assert r.compared_shape is None and r.n_elements == 0 and r.verdict == "investigate"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), chunk=st.integers(1, 300))
def test_any_chunking_gives_the_same_report(seed, chunk):
    a, b, _ = noisy_pair(n=500, share=0.3, seed=seed)
    a[seed % 500] = np.nan
    whole = compare(t(a), t(b))
    fmt = bits.format_of("float32")
    tol = resolve(fmt)
    parts = compare_chunks(t(a).describe(), t(b).describe(), fmt, (500,), aligned_chunks(a, b, chunk), tolerance=tol)
    d1, d2 = whole.to_dict(), parts.to_dict()
    s1, s2 = d1.pop("stats"), d2.pop("stats")  # sums in another order: equal up to rounding
    assert d1 == d2
    assert s1 == pytest.approx(s2, rel=1e-6, abs=1e-15)  # sum(b**2) is a float32 dot per chunk


def test_percentiles_from_a_bounded_sample(monkeypatch):
    a, b, _ = noisy_pair(n=200_000, share=0.5, seed=5)
    exact = compare(t(a), t(b)).stats
    monkeypatch.setattr(declared, "ERROR_SAMPLE_CAP", 5000)
    fmt = bits.format_of("float32")
    sampled = compare_chunks(
        t(a).describe(), t(b).describe(), fmt, a.shape, aligned_chunks(a, b, 10_000), tolerance=resolve(fmt)
    ).stats
    for key in ("p90_abs", "p99_abs", "p90_rel", "p99_rel"):
        assert getattr(sampled, key) == pytest.approx(getattr(exact, key), rel=0.1)
    assert sampled.mean_abs == exact.mean_abs  # sums stay exact


def test_progress_is_reported_per_chunk():
    a, b, _ = noisy_pair(n=1000)
    seen = []
    fmt = bits.format_of("float32")
    compare_chunks(t(a).describe(), t(b).describe(), fmt, (1000,), aligned_chunks(a, b, 300), progress=seen.append)
    assert seen == pytest.approx([0.3, 0.6, 0.9, 1.0])


def test_per_axis_failure_counts():
    b = np.zeros((4, 6), dtype=np.float32)
    a = b.copy()
    a[2] = 1.0
    a[0, 5] = 1.0
    r = compare(t(a), t(b))
    rows, cols = r.axes
    assert rows.fail_counts == [1, 0, 6, 0] and rows.top[0] == [2, 6 / 7]
    assert cols.fail_counts == [1, 1, 1, 1, 1, 2]


def test_reference_judges_b_against_a():
    rng = np.random.default_rng(4)
    truth = rng.standard_normal(1000)
    a = (truth + rng.standard_normal(1000) * 1e-6).astype(np.float32)  # a sloppier run
    good = truth.astype(np.float32)  # correctly rounded
    r = compare(t(a), t(good), ref=t(truth))
    assert r.reference.equivalent and r.reference.b_max_ulp == 0
    assert r.reference.b_rmse < r.reference.a_rmse
    bad = (truth * 1.01).astype(np.float32)
    r = compare(t(good), t(bad), ref=t(truth))
    assert not r.reference.equivalent and r.reference.ratio > 100


def test_empty_and_zero_dimensional_arrays():
    empty = np.zeros((0, 3), dtype=np.float32)
    r = compare(t(empty), t(empty.copy()))
    assert r.verdict == "identical" and r.n_elements == 0
    r = compare(t(np.float32(1.0)), t(np.float32(1.5)))
    assert r.first_diff.index == [] and r.max_abs_diff == 0.5


@pytest.mark.parametrize("fmt", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8", "uint16", "bool"])
def test_every_format_against_float64_reference(fmt):
    f = bits.format_of(fmt)
    truth = np.linspace(-3, 3, 24).reshape(4, 6)
    held = bits.from_float64(truth, f) if f.is_float else np.round(truth).astype(f.storage)
    r = compare(Tensor(held, fmt, "test"), Tensor(held.copy(), fmt, "test"), ref=t(truth))
    assert r.identical and r.reference.equivalent and r.reference.a_rmse == r.reference.b_rmse


def test_a_padded_print_does_not_excuse_a_difference_it_shows():
    """PyTorch pads its print with zeros: ``1.0000`` says the value is 1 to four decimals,
    though the shortest decimal of what is read back is just ``1``."""
    torch = pytest.importorskip("torch")
    from perpendis.inputs.parse import parse_text

    exact = np.array([1.0, 2.5, 3.25, 0.125], np.float32)
    (printed,) = parse_text(repr(torch.from_numpy(exact)))
    assert "1.0000" in repr(torch.from_numpy(exact)) and not printed.lossless
    off = exact.copy()
    off[0] = 1.003  # 0.3% away: visible in the fourth decimal, beyond fp32-cpu's rtol
    r = compare(printed, t(off))
    assert not r.tolerance.passed and r.tolerance.n_fail == 1
    assert r.verdict == "investigate"
    assert not any("printed digits" in n for n in r.notes)


def test_a_nan_the_reference_lacks_is_never_rounding_equivalent():
    """ONNX Runtime with one NaN input element gives a NaN row; the RMSE over finite pairs
    cannot see it, so B would look as close to the float64 run as PyTorch is."""
    r = compare(model_output("linear.torch.npy"), model_output("linear.nan.npy"), ref=model_output("linear.ref64.npy"))
    assert r.reference.b_rmse <= 4 * r.reference.a_rmse  # the finite pairs alone would pass
    assert (r.reference.a_nonfinite, r.reference.b_nonfinite) == (0, 7)
    assert not r.reference.equivalent
    reference = next(f for f in r.findings if f.kind == "reference")
    assert reference.severity == "error" and "NaN or infinite at 7 element(s)" in reference.message
    assert all(f.severity == "error" for f in r.findings if f.kind in ("region", "tolerance"))


@pytest.mark.parametrize("model", ["linear", "cnn", "transformer"])
def test_a_mixed_precision_pair_is_judged_against_the_reference_in_the_narrower_format(model):
    """PyTorch float32 against ONNX Runtime float16: the values are compared in float16, and
    so is A against the float64 run, or A's float32 accuracy would make any float16 run
    look thousands of times worse than A."""
    a, b = model_output(f"{model}.torch.npy"), model_output(f"{model}.ort16.npy")
    ref = model_output(f"{model}.ref64.npy")
    r = compare(a, b, ComparisonOptions(check_dtype=False), ref=ref)
    assert r.compared_as == "float16"
    assert r.reference.a_max_ulp <= 1  # A rounded to float16 is the float64 run rounded, give or take a step
    assert r.reference.equivalent and r.reference.ratio < 4
    # Asked to (check_dtype=False), two float formats are judged in the narrower: the mismatch
    # is said once, in the headline and as information, and does not make the pair an error.
    assert not [f.kind for f in r.findings if f.severity == "error"] and r.verdict == "rounding"
    assert next(f for f in r.findings if f.kind == "dtype").severity == "info"
    assert "judged in float16, the narrower format" in r.headline
