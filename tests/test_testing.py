"""``assert_same`` and ``perpendis.compare`` on NumPy arrays and real PyTorch tensors."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import perpendis
import pytest
from perpendis.testing import ComparisonError, assert_same

torch = pytest.importorskip("torch")


def test_passes_on_rounding_and_returns_the_report():
    b = np.linspace(-2, 2, 100, dtype=np.float32)
    a = np.nextafter(b, np.float32(np.inf))
    report = assert_same(a, b)
    assert report.verdict == "rounding"


def test_raises_with_the_human_report():
    b = np.linspace(-2, 2, 100, dtype=np.float32)
    with pytest.raises(AssertionError, match="INVESTIGATE") as info:
        assert_same(b + 1, b)
    assert "first difference at (0)" in str(info.value)


def test_tolerance_arguments():
    b = np.ones(10, dtype=np.float32)
    with pytest.raises(AssertionError):
        assert_same(b * np.float32(1.01), b)
    assert_same(b * np.float32(1.01), b, rtol=0.02)
    assert_same(b * np.float32(1.01), b, preset="fp16")


def test_torch_tensors_including_bfloat16():
    x = torch.linspace(-1, 1, 64)
    assert assert_same(x, x.clone()).verdict == "identical"
    report = assert_same(x.to(torch.bfloat16), (x + 1e-4).to(torch.bfloat16))
    assert report.compared_as == "bfloat16"
    with pytest.raises(AssertionError, match="bfloat16"):
        assert_same(x.to(torch.bfloat16), -x.to(torch.bfloat16))
    assert_same(x.requires_grad_(), x.detach().clone())


def test_exported_from_the_package():
    assert perpendis.assert_same is assert_same


def test_compare_takes_numpy_arrays_and_torch_tensors():
    b = np.linspace(-2, 2, 100, dtype=np.float32)
    report = perpendis.compare(np.nextafter(b, np.float32(np.inf)), b, preset="fp32-cpu")
    assert report.verdict == "rounding" and report.max_ulp == 1 and report.tolerance.preset == "fp32-cpu"
    x = torch.linspace(-1, 1, 64)
    bf16 = perpendis.compare(x.to(torch.bfloat16), (-x).to(torch.bfloat16))
    assert bf16.compared_as == "bfloat16" and bf16.verdict == "investigate"
    assert bf16.a["source"] == "A" and bf16.b["source"] == "B"
    assert perpendis.compare(x, x.clone(), atol=0.0, rtol=0.0).verdict == "identical"


def test_the_public_entry_points_are_functions_of_the_layers_beneath():
    # perpendis.compare and perpendis.capture are plain functions now, not modules made callable.
    from perpendis.layers.capture.check import check_export
    from perpendis.layers.capture.torch import capture

    assert perpendis.compare is perpendis.testing.compare and perpendis.assert_same is perpendis.testing.assert_same
    assert perpendis.capture is capture and perpendis.check_export is check_export
    with pytest.raises(AttributeError, match="no attribute 'comparee'"):
        perpendis.comparee  # noqa: B018


def test_compare_needs_no_torch_for_numpy_inputs():
    code = (
        "import sys, numpy as np, perpendis; "
        "r = perpendis.compare(np.ones(3, np.float32), np.ones(3, np.float32)); "
        "print(r.verdict, 'torch' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "py")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["identical", "False"]


def test_failing_assert_same_carries_its_report():
    b = np.linspace(-2, 2, 100, dtype=np.float32)
    with pytest.raises(ComparisonError) as info:
        assert_same(-b, b)
    assert info.value.report.verdict == "investigate"
    assert str(info.value).startswith("Perpendis: INVESTIGATE")


def test_a_report_prints_short_in_a_repl():
    b = np.linspace(-2, 2, 100, dtype=np.float32)
    report = perpendis.compare(-b, b)
    assert repr(report).startswith("<perpendis Report INVESTIGATE: ") and "\n" not in repr(report)
    assert len(repr(report)) < 300  # not every field, sample and aligned array


def _npy(array):
    import io

    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_the_notebook_report_is_the_pages_report_of_the_same_arrays():
    """``perpendis.compare`` asks the service the page's worker asks: the same arrays sent as
    .npy bytes in the page's request give the same report, but for each side's source."""
    from perpendis.service import api

    b = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    a = b * np.float32(1.001)
    mine = perpendis.compare(a, b, preset="fp16").to_dict()
    request = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}},
               "options": {"preset": "fp16"}}
    page = api.handle(request, {"a": _npy(a), "b": _npy(b)})["report"]
    assert mine["verdict"] == page["verdict"] == "investigate"
    sides = ("a", "b")
    assert {k: v for k, v in mine.items() if k not in sides} == {k: v for k, v in page.items() if k not in sides}


def test_assert_same_asks_the_service_except_for_bits_it_has_decided(monkeypatch):
    import perpendis.testing as testing

    asked = []
    real = testing.serve
    monkeypatch.setattr(testing, "serve", lambda request, *a, **kw: asked.append(request) or real(request, *a, **kw))
    b = np.linspace(-2, 2, 100, dtype=np.float32)
    passed = assert_same(b.copy(), b)
    assert asked == []  # the bit check answered in front of the service
    assert passed.verdict == "identical" and len(asked) == 1  # its report, made when first read
    with pytest.raises(ComparisonError):
        assert_same(b + 1, b)
    assert len(asked) == 2 and type(asked[-1]).__name__ == "CompareRequest"
    assert asked[-1].inputs["a"].shape == (100,)


def test_bad_input_the_service_finds_is_raised_as_an_input_error():
    from perpendis.errors import InputError

    b = np.ones((8, 16), dtype=np.float32)
    with pytest.raises(InputError, match="reference has shape") as info:
        perpendis.compare(b, b, ref=np.ones(3))
    assert info.value.side == "ref"
