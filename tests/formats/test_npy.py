"""``.npy`` files written by NumPy itself (``numpy.lib.format.write_array``, ``np.save``)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.lib import format as npformat
from perpendis.errors import InputError
from perpendis.inputs.formats import limits, npy

ml_dtypes = pytest.importorskip("ml_dtypes")

DTYPES = [
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
]  # fmt: skip


def npy_bytes(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    out = io.BytesIO()
    npformat.write_array(out, array, version=version, allow_pickle=False)
    return out.getvalue()


def sample(dtype: str, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    if dtype == "bool":
        return (raw[: int(np.prod(shape))] & 1).astype(bool).reshape(shape)
    return raw.view(dtype).reshape(shape)


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("byteorder", ["<", ">"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_order_version_and_byte_order(dtype, order, byteorder, version, assert_bits):
    array = np.asarray(sample(dtype), order=order)
    array = array.astype(array.dtype.newbyteorder(byteorder), order=order)
    data = npy_bytes(array, version)
    [tensor] = [npy.read(data, "x.npy")]
    assert tensor.source == f".npy v{version[0]}.{version[1]}"
    assert tensor.name == "x.npy"
    header = npy.read_header(data)
    assert header.fortran_order == (order == "F" and array.ndim > 1)
    assert_bits(tensor, array.astype(array.dtype.newbyteorder("=")))


def test_header_fields_describe_the_file():
    array = np.arange(12, dtype=">i2").reshape(3, 4)
    data = npy_bytes(array, (2, 0))
    header = npy.read_header(data[: limits.NPY_HEADER_PREFIX])
    assert (header.version, header.shape, header.byte_order, header.itemsize) == ("v2.0", (3, 4), "big", 2)
    assert header.data_offset == len(data) - array.nbytes
    assert header.format == "int16" and header.n_elements == 12


@pytest.mark.parametrize("order", ["C", "F"])
def test_decode_chunk_streams_the_same_elements(order, assert_bits):
    array = np.asarray(sample("complex64", (5, 6)), order=order).astype(">c8", order=order)
    data = npy_bytes(array)
    header = npy.read_header(data[:200])
    payload = data[header.data_offset :]
    step = 7 * header.itemsize
    flat = np.concatenate([npy.decode_chunk(header, payload[i : i + step]) for i in range(0, len(payload), step)])
    assert flat.dtype == np.dtype("float32")
    file_order = array.ravel(order="K" if order == "C" else "F")
    np.testing.assert_array_equal(flat.view(np.complex64), file_order)


def test_decode_chunk_refuses_partial_elements():
    header = npy.read_header(npy_bytes(np.zeros(4, np.float32)))
    with pytest.raises(InputError, match="whole number of 4-byte"):
        npy.decode_chunk(header, b"\0" * 6)


@pytest.mark.parametrize(
    ("dtype", "default", "other"),
    [(ml_dtypes.bfloat16, "bfloat16", None), (ml_dtypes.float8_e4m3fn, "float8_e4m3fn", "float8_e5m2")],
)
def test_ml_dtypes_void_elements_keep_their_bits(dtype, default, other, assert_bits):
    array = np.linspace(-3, 3, 11).astype(dtype).reshape(1, 11)
    buffer = io.BytesIO()
    np.save(buffer, array)
    data = buffer.getvalue()
    assert npy.read_header(data).dtype.kind == "V"
    tensor = npy.read(data)
    assert_bits(tensor, array)
    assert default in tensor.notes[0]
    if other:
        assert other in tensor.notes[0]
        chosen = npy.read(data, void_format=other)
        assert chosen.format == other
        np.testing.assert_array_equal(chosen.array, tensor.array)


def test_ml_dtypes_float8_e5m2_descr_f1_is_recognised(assert_bits):
    # ml_dtypes saves float8_e5m2 with the descr '<f1', which NumPy itself cannot load.
    array = np.array([0.5, -2, 448, np.nan], dtype=ml_dtypes.float8_e5m2)
    buffer = io.BytesIO()
    np.save(buffer, array)
    assert b"'<f1'" in buffer.getvalue()
    tensor = npy.read(buffer.getvalue())
    assert_bits(tensor, array)
    assert "float8_e5m2" in tensor.notes[0]


def test_void_format_must_fit_the_width():
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(2, ml_dtypes.bfloat16))
    with pytest.raises(InputError, match="void_format 'float8_e5m2' does not fit 2-byte"):
        npy.read(buffer.getvalue(), void_format="float8_e5m2")


def test_object_arrays_are_refused_without_unpickling():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="pickled array"):
        npy.read(buffer.getvalue())


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.zeros(3, dtype=[("x", "<f4"), ("y", "<i4")]), "structured array"),
        (np.array(["ab", "c"]), "dtype <U2 cannot be compared"),
        (np.zeros(2, dtype="datetime64[s]"), "cannot be compared"),
        (np.zeros(2, dtype="V4"), "4-byte void"),
    ],
)
def test_unsupported_dtypes_are_refused_clearly(array, message):
    with pytest.raises(InputError, match=message):
        npy.read(npy_bytes(array))


def test_truncated_data_names_the_declared_size():
    data = npy_bytes(np.zeros((4, 4), np.float32))
    with pytest.raises(InputError, match="declares 16 elements of 4 bytes"):
        npy.read(data[:-1])


def test_truncated_header_says_how_much_is_needed():
    data = npy_bytes(np.zeros(3))
    with pytest.raises(InputError, match=f"at least {len(data) - 24} bytes"):
        npy.read_header(data[:40])


def test_oversized_header_is_refused_by_name():
    data = bytearray(npy_bytes(np.zeros(3), (2, 0)))
    data[8:12] = (limits.NPY_MAX_HEADER_BYTES + 1).to_bytes(4, "little")
    with pytest.raises(InputError, match="NPY_MAX_HEADER_BYTES"):
        npy.read_header(bytes(data))


def test_element_cap_is_checked_before_reading():
    buffer = io.BytesIO()
    npformat.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": (2**20, 2**20)})
    with pytest.raises(InputError, match="MAX_ELEMENTS"):
        npy.read_header(buffer.getvalue())


def test_input_may_be_a_uint8_array_or_memoryview_without_copy():
    array = np.arange(10, dtype=np.float32)
    data = np.frombuffer(npy_bytes(array), dtype=np.uint8)
    tensor = npy.read(data)
    assert np.shares_memory(tensor.array, data)
    assert npy.read(memoryview(data)).array.tolist() == array.tolist()


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from([*DTYPES, ">f2", ">f8", ">i4", ">u8", ">c16"]),
        shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
    ),
    st.sampled_from([(1, 0), (2, 0), (3, 0)]),
    st.booleans(),
)
def test_round_trip(assert_bits, array, version, fortran):
    array = np.asfortranarray(array) if fortran else array
    assert_bits(npy.read(npy_bytes(array, version)), array.astype(array.dtype.newbyteorder("=")))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_truncation_and_corruption_raise_input_error(data):
    raw = bytearray(npy_bytes(sample("float32", (4, 5)), (1, 0)))
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(InputError):
        npy.read(bytes(raw[:cut]))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] = data.draw(st.integers(0, 255))
    try:
        tensor = npy.read(bytes(raw))
    except InputError:
        return
    assert tensor.array.dtype == np.dtype(tensor.fmt.storage)
