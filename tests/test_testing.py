"""``assert_same`` on NumPy arrays and real PyTorch tensors."""

import numpy as np
import perpendis
import pytest
import torch
from perpendis.testing import assert_same


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
