"""``.npz`` archives written by ``np.savez`` and ``np.savez_compressed``, and zip bombs."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.errors import InputError
from perpendis.inputs.formats import npz, zipview

ml_dtypes = pytest.importorskip("ml_dtypes")


def npz_bytes(compressed: bool, *args: np.ndarray, **kwargs: np.ndarray) -> bytes:
    out = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(out, *args, **kwargs)
    return out.getvalue()


@pytest.mark.parametrize("compressed", [False, True])
def test_every_member_in_archive_order(compressed, assert_bits):
    arrays = {
        "weight": np.arange(12, dtype=">f4").reshape(3, 4),
        "bias": np.array([1 + 2j], dtype=np.complex128),
        "mask": np.array([[True, False]]),
        "bf16": np.linspace(-1, 1, 5).astype(ml_dtypes.bfloat16),
    }
    data = npz_bytes(compressed, np.float16([1, 2]), **arrays)
    arrays["arr_0"] = np.float16([1, 2])
    tensors = npz.read(data)
    assert [t.name for t in tensors] == [n.removesuffix(".npy") for n in zipfile.ZipFile(io.BytesIO(data)).namelist()]
    for tensor in tensors:
        array = arrays[tensor.name]
        assert_bits(tensor, array.astype(array.dtype.newbyteorder("=")))
    assert tensors[0].source == (".npz (compressed), .npy v1.0" if compressed else ".npz, .npy v1.0")
    assert "bfloat16" in next(t for t in tensors if t.name == "bf16").notes[0]


def test_stored_members_are_not_copied():
    data = np.frombuffer(npz_bytes(False, a=np.arange(1000.0)), dtype=np.uint8)
    [tensor] = npz.read(data)
    assert np.shares_memory(tensor.array, data)


def test_errors_name_the_member():
    data = npz_bytes(False, good=np.zeros(2), bad=np.array(["text"]))
    with pytest.raises(InputError, match="cannot be compared") as info:
        npz.read(data)
    assert info.value.where == "archive member 'bad.npy'"


def test_total_size_cap(monkeypatch):
    monkeypatch.setattr(zipview, "ZIP_MAX_TOTAL_BYTES", 1000)
    with pytest.raises(InputError, match="ZIP_MAX_TOTAL_BYTES = 1000"):
        npz.read(npz_bytes(True, a=np.zeros(200), b=np.zeros(10)))


def test_compression_ratio_cap_catches_a_bomb():
    data = npz_bytes(True, bomb=np.zeros(2**22, dtype=np.uint8))
    [info] = zipfile.ZipFile(io.BytesIO(data)).infolist()
    assert info.file_size / info.compress_size > 100
    with pytest.raises(InputError, match="ZIP_MAX_RATIO"):
        npz.read(data)


def test_a_directory_that_understates_the_size_stops_inflating_and_fails_the_crc():
    data = bytearray(npz_bytes(True, a=np.arange(100.0)))
    [info] = zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()
    lie = (info.file_size - 8).to_bytes(4, "little")
    central = data.rindex(b"PK\x01\x02")
    data[central + 24 : central + 28] = lie
    data[info.header_offset + 22 : info.header_offset + 26] = lie
    with pytest.raises(InputError, match="Bad CRC-32"):
        npz.read(bytes(data))


def test_a_corrupted_stored_member_fails_its_crc():
    data = bytearray(npz_bytes(False, a=np.arange(100.0)))
    data[-200] ^= 0xFF
    with pytest.raises(InputError, match="CRC"):
        npz.read(bytes(data))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        hnp.arrays(
            dtype=st.sampled_from(["float16", "float32", ">f8", "int8", "uint64", "bool", "complex64"]),
            shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
        ),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
)
def test_round_trip(assert_bits, arrays, compressed):
    tensors = npz.read(npz_bytes(compressed, *arrays))
    assert [t.name for t in tensors] == [f"arr_{i}" for i in range(len(arrays))]
    for tensor, array in zip(tensors, arrays, strict=True):
        assert_bits(tensor, array.astype(array.dtype.newbyteorder("=")))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.booleans())
def test_truncation_and_corruption_raise_input_error(data, compressed):
    raw = bytearray(npz_bytes(compressed, a=np.arange(30.0), b=np.ones((2, 3), np.int16)))
    with pytest.raises(InputError):
        npz.read(bytes(raw[: data.draw(st.integers(0, len(raw) - 1))]))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    try:
        tensors = npz.read(bytes(raw))
    except InputError:
        return
    assert all(t.array.dtype == np.dtype(t.fmt.storage) for t in tensors)


@pytest.mark.parametrize("compressed", [False, True])
def test_a_directory_placing_a_member_before_the_file_is_refused(compressed):
    """Found by the fuzzer: the end record's directory offset one byte too far makes zipfile
    place the first member at -1.  ``numpy.load`` fails on it; so does Perpendis, with a
    clear error, rather than reading the member from offset 0 (compressed) or crashing."""
    data = bytearray(npz_bytes(compressed, x=np.arange(40, dtype=np.float16)))
    end = data.rindex(b"PK\x05\x06")
    directory_at = int.from_bytes(data[end + 16 : end + 20], "little")
    data[end + 16 : end + 20] = (directory_at + 1).to_bytes(4, "little")
    with pytest.raises(ValueError, match="negative seek"):
        np.load(io.BytesIO(bytes(data)))["x"]
    with pytest.raises(InputError, match=r"'x\.npy' of the \.npz archive"):
        npz.read(bytes(data))
