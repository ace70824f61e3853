"""``.safetensors`` files written by the ``safetensors`` library itself."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.errors import InputError
from perpendis.inputs.formats import safetensors

ml_dtypes = pytest.importorskip("ml_dtypes")
pytest.importorskip("safetensors")
from safetensors.numpy import save  # noqa: E402

DTYPES = [
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "bool", ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
]  # fmt: skip


def with_header(data: bytes, edit) -> bytes:
    """The file with its JSON header changed by ``edit`` (lengths kept consistent)."""
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    edit(header)
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data[8 + length :]


def test_every_dtype_in_data_order(assert_bits):
    rng = np.random.default_rng(3)
    arrays = {
        f"t{i}": np.frombuffer(rng.bytes(6 * np.dtype(dt).itemsize), dtype=dt).reshape(2, 3)
        if dt != "bool"
        else rng.integers(0, 2, (2, 3)).astype(bool)
        for i, dt in enumerate(DTYPES)
    }
    data = save(arrays, metadata={"format": "np"})
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    by_offset = sorted((v["data_offsets"][0], k) for k, v in header.items() if k != "__metadata__")
    tensors = safetensors.read(data)
    assert [t.name for t in tensors] == [k for _, k in by_offset]
    for tensor in tensors:
        assert tensor.source == "safetensors"
        assert_bits(tensor, arrays[tensor.name])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h: h["a"].update(data_offsets=[0, 4]), "spans 4 bytes but its shape"),
        (lambda h: h["b"].update(data_offsets=[0, 8]), "overlaps"),
        (lambda h: h["a"].update(dtype="F4"), "dtype 'F4'"),
        (lambda h: h["a"].update(shape=[-1]), "invalid shape"),
        (lambda h: h["a"].pop("shape"), "exactly dtype, shape and data_offsets"),
    ],
)
def test_inconsistent_headers_are_refused(edit, message):
    data = save({"a": np.zeros(2, np.float32), "b": np.ones(2, np.float32)})
    with pytest.raises(InputError, match=message):
        safetensors.read(with_header(data, edit))


def test_header_cap_and_truncation():
    data = save({"a": np.zeros(4, np.float32)})
    with pytest.raises(InputError, match="SAFETENSORS_MAX_HEADER_BYTES"):
        safetensors.read((10**9).to_bytes(8, "little") + data[8:])
    with pytest.raises(InputError, match="truncated"):
        safetensors.read(data[:-1])


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        hnp.arrays(
            dtype=st.sampled_from(["float16", "float32", "float64", "int8", "uint32", "bool"]),
            shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_round_trip(assert_bits, arrays):
    tensors = safetensors.read(save(arrays))
    assert sorted(t.name for t in tensors) == sorted(arrays)
    for tensor in tensors:
        assert_bits(tensor, arrays[tensor.name])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_truncation_and_corruption_raise_input_error(data):
    raw = bytearray(save({"w": np.arange(6, dtype=np.float32), "b": np.ones(2, np.int64)}))
    with pytest.raises(InputError):
        safetensors.read(bytes(raw[: data.draw(st.integers(0, len(raw) - 1))]))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    try:
        tensors = safetensors.read(bytes(raw))
    except InputError:
        return
    assert sum(t.size for t in tensors) == 8


def test_capture_order_from_metadata():
    """A capture saved with its execution order in metadata comes back in that order."""
    names = ["layer2.conv", "layer1.conv", "head.fc"]
    arrays = {name: np.full(3, i, dtype=np.float32) for i, name in enumerate(names)}
    ordered = safetensors.read(save(arrays, metadata={"order": json.dumps(names)}))
    assert [t.name for t in ordered] == names
    assert "metadata 'order'" in ordered[0].notes[0]
    unordered = safetensors.read(save(arrays, metadata={"order": json.dumps(names[:2])}))
    assert sorted(t.name for t in unordered) == sorted(names)
    assert "does not record the order" in unordered[0].notes[0]
