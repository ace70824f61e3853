"""Findings and verdicts on the patterns that separate rounding from bugs."""

from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs.load import load_path, load_text
from perpendis.inputs.tensor import Tensor, from_numpy
from perpendis.report.headline import main_finding


def t(x):
    return from_numpy(np.asarray(x), "test")


def kinds(report):
    return {f.kind: f for f in report.findings}


@pytest.fixture
def nchw():
    return np.random.default_rng(0).standard_normal((2, 4, 8, 8)).astype(np.float32)


def test_rounding_noise_is_rounding(nchw):
    a = nchw.copy()
    a[:, :, ::3] = np.nextafter(a[:, :, ::3], np.float32(np.inf))
    r = compare(t(a), t(nchw))
    assert r.verdict == "rounding"
    assert kinds(r)["rounding"].severity == "info"
    assert not [f for f in r.findings if f.severity == "error"]


def test_one_wrong_channel_with_an_offset(nchw):
    a = nchw.copy()
    a[:, 2] += 0.25
    r = compare(t(a), t(nchw))
    found = kinds(r)
    assert r.verdict == "investigate"
    assert found["region"].where_text == "axis 1 index 2 (channel 2)"
    assert found["region"].where["axis"] == 1 and found["region"].where["indices"] == [2]
    assert found["region"].where["element"][1] == 2 and found["region"].causes
    offset = found["slice_offset"]
    assert offset.where["axis"] == 1 and offset.where["indices"] == [2] and "0.25" in offset.message
    assert offset.where["amount"]["offset"][0] == pytest.approx(0.25) and r.findings[0] is offset
    assert "sign_flip" not in found and "scale" not in found


def test_sign_flip_in_rows():
    b = np.random.default_rng(1).uniform(1, 2, (16, 10)).astype(np.float32)
    a = b.copy()
    a[5:7] *= -1
    found = kinds(compare(t(a), t(b)))
    assert found["region"].where_text == "axis 0 index 5-6 (row 5-6)"
    assert "sign_flip" in found


def test_scale_factor_everywhere():
    b = np.random.default_rng(2).uniform(0.5, 4, 500).astype(np.float32)
    found = kinds(compare(t(b * np.float32(1.5)), t(b)))
    assert "region" not in found
    assert "1.5" in found["scale"].message


def test_nan_on_one_side(nchw):
    a = nchw.copy()
    a[1, 3, 4, 5] = np.nan
    r = compare(t(a), t(nchw))
    nan = kinds(r)["nan"]
    assert nan.severity == "error" and nan.where_text == "(1, 3, 4, 5)" and r.verdict == "investigate"
    assert nan.where["element"] == [1, 3, 4, 5]


def test_depth_decides_what_counts_as_rounding():
    rng = np.random.default_rng(3)
    b = rng.standard_normal(2000).astype(np.float32)
    a = (b.astype(np.float64) * (1 + 40 * 2.0**-24 * rng.standard_normal(2000))).astype(np.float32)
    shallow = compare(t(a), t(b))
    # No structure test finds a cause, so the size alone says "a deeper computation", as
    # information that cannot contradict the rounding verdict.
    found = kinds(shallow)
    assert shallow.tolerance.passed and found["deep_rounding"].severity == "info"
    assert "not_rounding" not in found and "set depth" in found["deep_rounding"].message
    assert shallow.verdict == "rounding"
    deep = compare(t(a), t(b), ComparisonOptions(depth=64))
    assert "rounding" in kinds(deep) and "deep_rounding" not in kinds(deep)


def test_reference_leads_the_verdict():
    rng = np.random.default_rng(4)
    truth = rng.standard_normal(4000)
    a = (truth * (1 + 1e-3 * rng.standard_normal(4000))).astype(np.float32)  # TF32-like run
    b = (truth * (1 + 1e-3 * rng.standard_normal(4000))).astype(np.float32)  # another, as good
    without = compare(t(a), t(b))
    assert without.verdict == "investigate"
    with_ref = compare(t(a), t(b), ref=t(truth))
    found = kinds(with_ref)
    assert with_ref.verdict == "rounding"
    assert found["tolerance"].severity == "warning" and found["reference"].severity == "info"
    worse = (truth * (1 + 1e-2 * rng.standard_normal(4000))).astype(np.float32)
    assert compare(t(a), t(worse), ref=t(truth)).verdict == "investigate"


def test_shape_and_dtype_findings_come_first():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    r = compare(t(x.astype(np.float16)), t(x.T.copy()))
    assert [f.kind for f in r.findings[:3]] == ["shape", "layout", "dtype"]
    assert "float16" in r.findings[2].message and "float32" in r.findings[2].message


def test_lossy_text_input_is_a_warning():
    x = np.linspace(0, 1, 10, dtype=np.float32)
    lossy = Tensor(x.copy(), "float32", "NumPy repr", lossless=False, digits=4)
    found = kinds(compare(lossy, t(x)))
    assert found["lossy"].severity == "warning" and "4 significant digits" in found["lossy"].message


def test_numpy_default_warns_in_findings():
    b = np.array([0.0, 1.0, 2.0], dtype=np.float64)
    a = b + np.array([1e-17, 0, 0])
    r = compare(t(a), t(b), ComparisonOptions(preset="numpy-default"))
    assert kinds(r)["tolerance_warning"].severity == "warning"
    assert r.verdict == "investigate"  # a legitimate 1e-17 at zero fails with atol 0


def test_lossy_print_is_judged_to_its_resolution():
    torch = pytest.importorskip("torch")
    from perpendis.inputs.parse import parse_text

    # PyTorch prints 4 decimals by default.  For these small values the print's own error
    # (up to 5e-5) exceeds float32's atol + rtol·|b|, so only its resolution can excuse it.
    exact = np.random.default_rng(5).uniform(0.001, 0.03, 40).astype(np.float32)
    (printed,) = parse_text(repr(torch.from_numpy(exact)))
    assert not printed.lossless
    assert not compare(Tensor(printed.array, "float32", "test"), t(exact)).tolerance.passed
    r = compare(printed, t(exact))
    assert r.tolerance.passed and r.verdict == "rounding"
    assert any("printed digits" in n for n in r.notes)
    assert "lossy" in kinds(r)


MODELS = Path(__file__).parent / "fixtures" / "models"


def model_output(name):
    (tensor,) = load_path(MODELS / name)
    return tensor


def test_differences_of_a_cancelling_sum_are_rounding():
    """PyTorch against ONNX Runtime for ``nn.Linear(5, 7)``: outputs near zero come from
    cancelling sums, so their differences are hundreds of ULP of the output, yet a few
    ULP of the terms: rounding, measured against B's RMS where |B| is smaller."""
    a, b = model_output("linear.torch.npy"), model_output("linear.ort.npy")
    r = compare(a, b)
    assert r.max_rel_diff > 100 * 2.0**-24  # far beyond rounding relative to the output itself
    found = kinds(r)
    assert "not_rounding" not in found and "RMS" in found["rounding"].message
    assert r.verdict == "rounding"


def test_reference_agrees_with_unstructured_deep_rounding():
    """Differences of 40 u are too large for one rounding but have no structure: information
    only, and a reference that shows B exact (A the noisy one) agrees."""
    rng = np.random.default_rng(3)
    truth = rng.standard_normal(2000)
    b = truth.astype(np.float32)
    a = (truth * (1 + 40 * 2.0**-24 * rng.standard_normal(2000))).astype(np.float32)
    alone = compare(t(a), t(b))
    assert kinds(alone)["deep_rounding"].severity == "info" and alone.verdict == "rounding"
    r = compare(t(a), t(b), ref=t(truth))
    found = kinds(r)
    assert not [f for f in r.findings if f.severity != "info"]
    assert found["reference"].severity == "info" and r.verdict == "rounding"


def test_a_fixed_point_print_differs_by_its_resolution_not_by_more_than_rounding():
    """``sci_mode=False`` prints four decimals whatever the magnitude; the differences to the
    exact ONNX Runtime output are what those decimals cannot show."""
    printed = model_output("transformer.torch.fixed.repr.txt")
    r = compare(printed, model_output("transformer.ort.npy"))
    found = kinds(r)
    assert r.verdict == "rounding" and "not_rounding" not in found
    assert "printed digits" in found["rounding"].message
    assert "as few as" in found["lossy"].message
    # The exact output against the same B is not excused by any print.
    exact = kinds(compare(model_output("transformer.torch.npy"), model_output("transformer.ort.npy")))
    assert "printed digits" not in exact.get("rounding", exact.get("not_rounding")).message


# Equal shapes that another order of the axes fits: the finding says which, the values are
# still compared as given.


def linear_weight(n: int) -> np.ndarray:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return torch.nn.Linear(n, n).weight.detach().numpy()


def test_a_square_weight_against_its_transpose_is_named_first():
    w = linear_weight(32)
    r = compare(t(w), t(np.ascontiguousarray(w.T)))
    layout = main_finding(r.findings)
    assert layout.kind == "layout" and layout.severity == "error" and layout.where_text == "(1, 0)"
    assert layout.message.startswith("B looks like A transposed: as A.transpose(1, 0), 100% of sampled elements agree")
    assert r.verdict == "investigate" and not r.identical
    assert r.shape_match and r.compared_shape == [32, 32]
    assert r.n_bitwise_diff == 32 * 32 - 32  # compared as given: only the diagonal is equal
    assert kinds(r)["tolerance"].severity == "error"


def test_pasted_prints_of_a_weight_and_its_transpose():
    """What a user pastes: PyTorch's default print of W and of W.T, one box each."""
    torch = pytest.importorskip("torch")
    w = torch.from_numpy(linear_weight(6))
    (a,), (b,) = load_text(repr(w)), load_text(repr(w.T))
    r = compare(a, b)
    assert main_finding(r.findings).kind == "layout" and "transposed" in main_finding(r.findings).message


def test_height_and_width_swapped_in_a_real_feature_map():
    x = model_output("cnn_features.torch.npy").array
    r = compare(t(x), t(np.ascontiguousarray(x.transpose(0, 1, 3, 2))))
    layout = kinds(r)["layout"]
    assert layout.where_text == "(0, 1, 3, 2)" and "axes 2 and 3 (height and width) swapped" in layout.message
    assert main_finding(r.findings) is layout


def test_squeezed_and_transposed_says_both():
    w = linear_weight(8)
    r = compare(t(w[None]), t(np.ascontiguousarray(w.T)))
    assert [f.kind for f in r.findings[:2]] == ["shape", "layout"]


@pytest.mark.parametrize("case", ["symmetric", "symmetric, shifted", "rounding", "unrelated"])
def test_no_layout_finding_where_no_order_explains_anything(case):
    torch = pytest.importorskip("torch")
    w = torch.from_numpy(linear_weight(32))
    gram = (w @ w.T).double().numpy()
    gram = (gram + gram.T) / 2  # exactly symmetric
    x = torch.randn(32, 128, generator=torch.Generator().manual_seed(1))
    a, b = {
        "symmetric": (gram, np.ascontiguousarray(gram.T)),
        "symmetric, shifted": (gram + 0.5, gram),
        "rounding": ((x @ x.T).numpy(), (x.double() @ x.T.double()).float().numpy()),
        "unrelated": (w.numpy(), x[:, :32].numpy()),
    }[case]
    r = compare(t(a), t(b))
    assert "layout" not in kinds(r)
    assert r.verdict == {"symmetric": "identical", "rounding": "rounding"}.get(case, "investigate")


def test_a_reference_of_zeros_raises_no_numpy_warning():
    """Ratios against |B| = 0 are filtered by each test; NumPy's warnings about them used to
    reach the user's terminal (divide by zero in precision and dependence)."""
    import warnings

    a = np.random.default_rng(3).standard_normal(500).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = compare(t(a), t(np.zeros(500, np.float32)))
    assert r.verdict == "investigate"
