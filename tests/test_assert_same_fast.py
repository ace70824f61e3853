"""``assert_same``'s bit check decides exactly as the full analysis: a property test over
dtypes, shapes, NaN payloads, signed zeros, one-bit changes, casts and transposes, and the
presets whose NaN rules differ; and the lazy report it returns is the full one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis import compare
from perpendis.compare import compare as compare_tensors
from perpendis.errors import InputError
from perpendis.tensor import as_tensor
from perpendis.testing import ComparisonError, PassedReport, assert_same, bit_identical

DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64]
PRESETS = [None, "torch-default", "numpy-allclose", "exact", "fp16", "numpy-default"]


@st.composite
def pairs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    a = draw(hnp.arrays(dtype, shape))
    b = a.copy()
    change = draw(st.sampled_from(["same", "bit", "nan_payload", "signed_zero", "cast", "transpose", "reshape"]))
    if change == "bit" and b.size and dtype not in (np.bool_, np.complex64):
        flat = b.reshape(-1).view(np.dtype(f"u{b.itemsize}"))
        flat[draw(st.integers(0, b.size - 1))] ^= 1 << draw(st.integers(0, 8 * b.itemsize - 1))
    elif change == "nan_payload" and dtype == np.float32 and b.size:
        a.reshape(-1)[0] = np.nan  # equal as values, not as bits: another payload
        b.reshape(-1)[0] = np.uint32(0x7FC00001).view(np.float32)
    elif change == "signed_zero" and dtype in (np.float16, np.float32, np.float64) and b.size:
        a.reshape(-1)[-1], b.reshape(-1)[-1] = 0.0, -0.0
    elif change == "cast" and dtype in (np.float16, np.float32):
        b = b.astype(np.float64)
    elif change == "transpose" and b.ndim >= 2:
        b = np.ascontiguousarray(b.T)
    elif change == "reshape" and b.ndim >= 1:
        b = b.reshape(-1, 1)
    return a, b, draw(st.sampled_from(PRESETS))


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(pairs())
def test_the_bit_check_says_identical_exactly_when_the_full_analysis_does(pair):
    a, b, preset = pair
    ta, tb = as_tensor(a, "actual"), as_tensor(b, "expected")
    full = compare_tensors(ta, tb, preset=preset)
    assert bit_identical(ta, tb, preset, None, None, 1.0) == (full.verdict == "identical")
    try:
        assert_same(a, b, preset=preset)
        passed = True
    except ComparisonError:
        passed = False
    assert passed == (full.verdict != "investigate")


def test_bad_options_are_refused_by_the_bit_check_as_by_the_full_analysis():
    x = np.ones(4, dtype=np.float32)
    for kwargs in ({"preset": "fp31"}, {"atol": -1.0}, {"depth": 0}):
        with pytest.raises(InputError) as fast:
            assert_same(x, x.copy(), **kwargs)
        with pytest.raises(InputError) as full:
            compare(x, x.copy(), **kwargs)
        assert str(fast.value) == str(full.value)


def test_the_report_of_a_pair_passed_by_its_bits_is_the_full_report_when_used():
    x = torch.linspace(-1, 1, 64).to(torch.bfloat16)
    passed = assert_same(x, x.clone(), preset="bf16")
    assert isinstance(passed, PassedReport) and passed._report is None  # nothing made yet
    full = compare(x, x.clone(), preset="bf16", sources=("actual", "expected"))
    assert passed.verdict == "identical" and passed.to_dict() == full.to_dict()
    assert passed.report.to_text() == full.to_text() and "IDENTICAL" in repr(passed)


def test_a_reference_always_takes_the_full_analysis():
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    report = assert_same(x, x.copy(), ref=x.astype(np.float64))
    assert not isinstance(report, PassedReport) and report.reference is not None
