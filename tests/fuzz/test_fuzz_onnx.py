"""Fuzzing ONNX ``TensorProto`` reading: protos made by ``onnx.numpy_helper`` and
``onnx.helper``, mutated byte-wise and field-wise (huge or too many dims, wrong value
counts, unknown data types).

Protobuf has no magic number, so almost any bytes *might* be a TensorProto: whatever
Perpendis reads as one, ``onnx`` must parse to the same dims and bits.
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzzkit import FUZZ, assert_same, mutated, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.inputs import formats

ml_dtypes = pytest.importorskip("ml_dtypes")
pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

onnx = pytest.importorskip("onnx")
from google.protobuf.message import DecodeError  # noqa: E402

NUMPY_DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "int64", "uint32",
                "uint64", "bool", "complex64", "complex128"]  # fmt: skip
ML = {TensorProto.BFLOAT16: np.uint16, TensorProto.FLOAT8E4M3FN: np.uint8, TensorProto.FLOAT8E5M2: np.uint8}
ML_TYPES = {TensorProto.BFLOAT16: ml_dtypes.bfloat16, TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
            TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2}  # fmt: skip


@st.composite
def real_proto(draw) -> bytes:
    """A serialized TensorProto as ONNX writes it: raw_data, or a typed field via ``make_tensor``."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    name = draw(st.text(max_size=8))
    if draw(st.booleans()):
        array = draw(hnp.arrays(np.dtype(draw(st.sampled_from(NUMPY_DTYPES))), shape))
        return numpy_helper.from_array(array, name).SerializeToString()
    data_type = draw(st.sampled_from([TensorProto.FLOAT, TensorProto.INT32, TensorProto.FLOAT16, *ML]))
    if data_type in ML:
        bits = draw(hnp.arrays(ML[data_type], shape))
        values = bits.view(ML_TYPES[data_type]).astype(np.float32)
    else:
        dtype = {TensorProto.FLOAT: np.float32, TensorProto.INT32: np.int32, TensorProto.FLOAT16: np.float16}[data_type]
        values = draw(hnp.arrays(dtype, shape, elements={"allow_nan": False} if dtype != np.int32 else None))
    raw = draw(st.booleans())
    vals = values.tobytes() if raw and data_type not in ML else values.ravel().tolist()
    return helper.make_tensor(name, data_type, shape, vals, raw=raw and data_type not in ML).SerializeToString()


def onnx_reads(data: bytes) -> np.ndarray:
    proto = TensorProto.FromString(data)
    array = numpy_helper.to_array(proto)
    if array.dtype.kind == "V" or array.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        array = array.view(np.uint16 if array.dtype.itemsize == 2 else np.uint8)
    return array


@FUZZ
@given(real_proto())
def test_real_protos_read_exactly(data):
    result = outcome(formats.read, data, "x.pb")
    assert result.error is None, result.error
    [tensor] = result.tensors
    assert_same(tensor, onnx_reads(data))


@FUZZ
@given(st.data())
def test_mutated_protos_read_exactly_or_fail_cleanly(data):
    broken = data.draw(mutated(data.draw(real_proto())))
    result = outcome(formats.read, broken, "x.pb")
    if result.error is None and result.tensors[0].source == "ONNX TensorProto":
        [tensor] = result.tensors
        assert_same(tensor, onnx_reads(broken))


@st.composite
def hostile_proto(draw) -> bytes:
    """A TensorProto with fields set by hand to absurd but well-encoded values."""
    proto = TensorProto()
    proto.data_type = draw(st.integers(0, 25) | st.sampled_from([2**31 - 1, -1]))
    proto.dims.extend(
        draw(
            st.lists(st.sampled_from([0, 1, 2, 2**31, 2**40, 2**62, 2**63 - 1, -1, -(2**63)]), max_size=4)
            | st.integers(60, 100).map(lambda n: [1] * n)
            | st.integers(60, 100).map(lambda n: [0] * n)
        )
    )
    field = draw(st.sampled_from(["raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"]))
    if field == "raw_data":
        proto.raw_data = draw(st.binary(max_size=64))
    elif field in ("float_data", "double_data"):
        getattr(proto, field).extend(draw(st.lists(st.floats(width=32), max_size=8)))
    elif field == "uint64_data":
        proto.uint64_data.extend(draw(st.lists(st.integers(0, 2**64 - 1), max_size=8)))
    else:
        bits = 31 if field == "int32_data" else 63
        getattr(proto, field).extend(draw(st.lists(st.integers(-(2**bits), 2**bits - 1), max_size=8)))
    if draw(st.booleans()):
        proto.data_location = draw(st.sampled_from([0, 1]))
    return proto.SerializeToString()


@FUZZ
@given(hostile_proto())
def test_hostile_protos_never_crash_or_allocate(data):
    result = outcome(formats.read, data, "x.pb")
    if result.error is None and result.tensors[0].source == "ONNX TensorProto":
        [tensor] = result.tensors
        assert_same(tensor, onnx_reads(data))


def test_declared_trillion_elements_are_refused_before_allocating():
    proto = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[10**6, 10**6], raw_data=b"")
    result = outcome(formats.read, proto.SerializeToString(), "big.pb")
    assert result.error is not None and "MAX_ELEMENTS" in result.error.message


@pytest.mark.parametrize(
    "data",
    [
        # A FLOAT tensor of one 0.0, then a double_data field of 1 byte (found by the fuzzer:
        # its name field's tag mutated into double_data's): not a whole double.
        b'\x10\x01"\x04\x00\x00\x00\x00R\x010',
        # The same, then an int64_data field ending inside a number.
        b'\x10\x01"\x04\x00\x00\x00\x00:\x01\x80',
        # The same, then a metadata_props message whose only field runs past its end.
        b'\x10\x01"\x04\x00\x00\x00\x00\x82\x01\x02\n\x05',
    ],
)
def test_a_malformed_field_the_tensor_does_not_use_is_refused_as_onnx_refuses_it(data):
    with pytest.raises(DecodeError):
        TensorProto.FromString(data)
    assert outcome(formats.read, data, "x.pb").error is not None


def test_fields_the_tensor_does_not_use_are_read_past_when_well_formed():
    proto = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[2], float_data=[1.0, 2.0], int64_data=[7])
    proto.double_data.extend([3.0])
    proto.metadata_props.add(key="k", value="v")
    data = proto.SerializeToString()
    result = outcome(formats.read, data, "x.pb")
    assert result.error is None, result.error
    assert_same(result.tensors[0], onnx_reads(data))
