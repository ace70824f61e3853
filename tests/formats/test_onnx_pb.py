"""ONNX ``TensorProto`` files written by the ``onnx`` library, raw and typed fields."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.errors import InputError
from perpendis.inputs.formats import onnx_pb

ml_dtypes = pytest.importorskip("ml_dtypes")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

DTYPES = [
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "bool", "complex64", "complex128", ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2,
]  # fmt: skip


def sample(dtype) -> np.ndarray:
    array = np.linspace(-5, 5, 12).reshape(3, 4, 1)
    return (array > 0) if dtype == "bool" else array.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_raw_data_from_numpy_helper(dtype, assert_bits):
    array = sample(dtype)
    tensor = onnx_pb.read(numpy_helper.from_array(array, "output").SerializeToString(), "output_0.pb")
    assert (tensor.name, tensor.source) == ("output", "ONNX TensorProto")
    assert_bits(tensor, array)


@pytest.mark.parametrize("dtype", DTYPES)
def test_typed_fields_from_make_tensor(dtype, assert_bits):
    array = sample(dtype)
    data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    proto = helper.make_tensor("x", data_type, array.shape, array.flatten(), raw=False)
    assert not proto.raw_data
    assert_bits(onnx_pb.read(proto.SerializeToString()), array)


def test_unnamed_tensor_takes_the_file_name():
    proto = numpy_helper.from_array(np.zeros(2, np.float32))
    assert onnx_pb.read(proto.SerializeToString(), "input_0.pb").name == "input_0.pb"


def test_external_data_is_refused():
    proto = numpy_helper.from_array(np.zeros(2, np.float32), "w")
    onnx.external_data_helper.set_external_data(proto, location="weights.bin")
    proto.data_location = TensorProto.EXTERNAL
    proto.ClearField("raw_data")
    with pytest.raises(InputError, match="external file"):
        onnx_pb.read(proto.SerializeToString())


def test_unsupported_types_and_count_mismatch():
    with pytest.raises(InputError, match="STRING"):
        onnx_pb.read(helper.make_tensor("s", TensorProto.STRING, [1], [b"a"]).SerializeToString())
    proto = numpy_helper.from_array(np.zeros(4, np.float32), "w")
    proto.dims[0] = 5
    with pytest.raises(InputError, match="raw_data has 16 bytes but its dims need 20"):
        onnx_pb.read(proto.SerializeToString())


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from(["float16", "float32", "float64", "int8", "int64", "uint16", "bool", "complex64"]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    ),
    st.booleans(),
)
def test_round_trip(assert_bits, array, raw):
    if raw:
        proto = numpy_helper.from_array(array, "t")
    else:
        proto = helper.make_tensor("t", helper.np_dtype_to_tensor_dtype(array.dtype), array.shape, array.flatten())
    assert_bits(onnx_pb.read(proto.SerializeToString()), array)


@settings(max_examples=80, deadline=None)
@given(st.data(), st.booleans())
def test_truncation_and_corruption_raise_input_error(data, raw):
    array = np.linspace(0, 1, 10, dtype=np.float32).reshape(2, 5)
    proto = numpy_helper.from_array(array, "t") if raw else helper.make_tensor("t", 1, [2, 5], array.flatten())
    blob = bytearray(proto.SerializeToString())
    cut = data.draw(st.integers(1, len(blob) - 1))
    # Values come last in raw form and before the name in typed form: cutting there leaves a valid, unnamed tensor.
    if raw or cut < blob.index(b"B\x01t"):
        with pytest.raises(InputError):
            onnx_pb.read(bytes(blob[:cut]))
    at = data.draw(st.integers(0, len(blob) - 1))
    blob[at] ^= data.draw(st.integers(1, 255))
    try:
        tensor = onnx_pb.read(bytes(blob))
    except InputError:
        return
    assert tensor.array.dtype == np.dtype(tensor.fmt.storage)
