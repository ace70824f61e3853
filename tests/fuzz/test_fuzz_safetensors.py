"""Fuzzing safetensors reading: files written by the ``safetensors`` library, mutated, and
hostile headers (huge header lengths, absurd shapes, junk where dtypes and offsets go).

The reference is the ``safetensors`` library itself: whatever Perpendis accepts, it
must also load, to the same names and bits.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from fuzzkit import FUZZ, assert_same, mutated, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.inputs import formats

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

TORCH_DTYPES = {
    torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64, torch.int8: np.int8,
    torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64, torch.uint8: np.uint8, torch.bool: np.bool_,
}  # fmt: skip
RAW = {torch.bfloat16: torch.uint16, torch.float8_e4m3fn: torch.uint8, torch.float8_e5m2: torch.uint8}


@st.composite
def real_file(draw) -> bytes:
    """``safetensors.torch.save`` of one to four tensors of any dtype it writes."""
    names = draw(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4, unique=True))
    tensors = {}
    for name in names:
        dtype = draw(st.sampled_from([*TORCH_DTYPES, *RAW]))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
        if dtype in RAW:
            bits = draw(hnp.arrays(np.uint16 if RAW[dtype] == torch.uint16 else np.uint8, shape))
            tensors[name] = torch.from_numpy(bits).view(dtype)
        else:
            tensors[name] = torch.from_numpy(draw(hnp.arrays(TORCH_DTYPES[dtype], shape)))
    metadata = draw(st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))
    return safetensors_torch.save(tensors, metadata=metadata)


def as_numpy(t) -> np.ndarray:
    t = t.contiguous()
    return t.view(RAW[t.dtype]).numpy() if t.dtype in RAW else t.numpy()


def same_as_library(tensors, data: bytes) -> None:
    reference = safetensors_torch.load(data)
    assert sorted(t.name for t in tensors) == sorted(reference)
    for tensor in tensors:
        assert_same(tensor, as_numpy(reference[tensor.name]))


@FUZZ
@given(real_file())
def test_real_files_read_exactly(data):
    result = outcome(formats.read, data, "x.safetensors")
    assert result.error is None, result.error
    same_as_library(result.tensors, data)


@FUZZ
@given(st.data())
def test_mutated_files_read_exactly_or_fail_cleanly(data):
    broken = data.draw(mutated(data.draw(real_file())))
    result = outcome(formats.read, broken, "x.safetensors")
    if result.error is None and result.tensors and result.tensors[0].source == "safetensors":
        same_as_library(result.tensors, broken)


JUNK = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4), st.just([]), st.just({}))
ENTRY = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["F32", "F16", "BF16", "F8_E4M3", "BOOL", "I64", "F4", "C64", "f32", ""]) | JUNK,
        "shape": st.one_of(
            st.lists(st.sampled_from([0, 1, 3, 2**31, 2**32, 2**62, 2**63, 2**64, 10**30]), max_size=4),
            st.integers(60, 100).map(lambda n: [1] * n),
            st.integers(60, 100).map(lambda n: [0] * n),
            st.lists(JUNK, max_size=2),
            JUNK,
        ),
        "data_offsets": st.lists(st.sampled_from([0, 1, 4, 12, 2**63, -1]) | JUNK, max_size=3) | JUNK,
    }
)


@st.composite
def hostile_header(draw) -> bytes:
    header = draw(st.dictionaries(st.text(max_size=6), ENTRY | JUNK, max_size=3))
    if draw(st.booleans()):
        header["__metadata__"] = draw(JUNK | st.dictionaries(st.text(max_size=3), JUNK, max_size=2))
    text = json.dumps(header).encode()
    length = draw(st.sampled_from([len(text)] * 4 + [len(text) - 1, len(text) + 1, 2**63, 2**64 - 1, 100_000_001]))
    return struct.pack("<Q", length) + text + draw(st.binary(max_size=48))


@FUZZ
@given(hostile_header())
def test_hostile_headers_never_crash_or_allocate(data):
    result = outcome(formats.read, data, "x.safetensors")
    if result.error is None and result.tensors:
        same_as_library(result.tensors, data)


@pytest.mark.parametrize("length", [2**64 - 1, 2**63, 100_000_001])
def test_huge_header_length_is_refused_without_reading_it(length):
    data = struct.pack("<Q", length) + b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}' + bytes(4)
    result = outcome(formats.read, data, "x.safetensors")
    assert result.error is not None
    assert result.peak_bytes < 1 << 20
