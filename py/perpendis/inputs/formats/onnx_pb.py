"""ONNX ``TensorProto`` files (``input_0.pb``, ``output_0.pb`` of ONNX test data),
decoded from the protobuf wire format directly, since the browser has no onnx library.

A ``TensorProto`` holds ``dims``, a ``data_type`` and the values either as
``raw_data`` (little-endian bytes, viewed in place) or in one typed repeated field:
``float_data`` (float, complex64), ``int32_data`` (every type of 16 bits or less,
including the bits of float16, bfloat16 and float8), ``int64_data``, ``double_data``
(double, complex128) or ``uint64_data`` (uint32, uint64).  Protobuf has no magic
number, so recognising a file as a ``TensorProto`` is decoding it: any field or wire
type ONNX does not define there, or a value count that does not match the dims, means
the bytes are something else.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ...errors import InputError
from ...numerics.bits import FORMATS
from ..tensor import Tensor, from_numpy
from .buffer import BytesLike, as_view
from .limits import element_count

SOURCE = "ONNX TensorProto"

# ONNX data_type → (NumPy dtype of one element, typed field that may hold the values).
_DATA_TYPES: dict[int, tuple[str, int]] = {
    1: ("float32", 4),
    2: ("uint8", 5),
    3: ("int8", 5),
    4: ("uint16", 5),
    5: ("int16", 5),
    6: ("int32", 5),
    7: ("int64", 7),
    9: ("bool", 5),
    10: ("float16", 5),
    11: ("float64", 10),
    12: ("uint32", 11),
    13: ("uint64", 11),
    14: ("complex64", 4),
    15: ("complex128", 10),
    16: ("bfloat16", 5),
    17: ("float8_e4m3fn", 5),
    19: ("float8_e5m2", 5),
}
_UNSUPPORTED = {
    8: "STRING",
    18: "FLOAT8E4M3FNUZ",
    20: "FLOAT8E5M2FNUZ",
    21: "UINT4",
    22: "INT4",
    23: "FLOAT4E2M1",
}
_WIRE_TYPES = {  # field number → wire types ONNX writes for it (2 = packed repeated)
    1: (0, 2),  # dims
    2: (0,),  # data_type
    3: (2,),  # segment
    4: (2, 5),  # float_data
    5: (0, 2),  # int32_data
    6: (2,),  # string_data
    7: (0, 2),  # int64_data
    8: (2,),  # name
    9: (2,),  # raw_data
    10: (1, 2),  # double_data
    11: (0, 2),  # uint64_data
    12: (2,),  # doc_string
    13: (2,),  # external_data
    14: (0,),  # data_location
    16: (2,),  # metadata_props
}
_FIXED = {4: "<f4", 10: "<f8"}  # typed fields of fixed-width values; the others are varints
_REPEATED = (1, 4, 5, 7, 10, 11)  # dims and the typed value fields
_NESTED = (16,)  # metadata_props: messages, whose contents Perpendis does not use


def read(data: BytesLike, name: str | None = None) -> Tensor:
    """The tensor in a serialized ``TensorProto``."""
    view = as_view(data)
    fields: dict[int, list[int | memoryview]] = {}
    for number, wire, value in _fields(view):
        if number not in _WIRE_TYPES or wire not in _WIRE_TYPES[number]:
            raise InputError(f"not an ONNX TensorProto: field {number} with wire type {wire} is not one it has")
        fields.setdefault(number, []).append(value)
    if 2 not in fields:
        raise InputError("not an ONNX TensorProto: it has no data_type")
    if 13 in fields or 1 in fields.get(14, []):
        raise InputError(
            "the ONNX tensor keeps its data in an external file, which a single .pb cannot provide; "
            "save it with its data inside (onnx.numpy_helper.from_array(...).SerializeToString())"
        )
    if 3 in fields:
        raise InputError("the ONNX tensor is segmented, which Perpendis does not read; save it whole")
    data_type = fields[2][-1]
    if data_type in _UNSUPPORTED:
        raise InputError(f"ONNX tensors of type {_UNSUPPORTED[data_type]} cannot be compared")
    if data_type not in _DATA_TYPES:
        raise InputError(f"not an ONNX TensorProto: data_type {data_type} is not an ONNX element type")
    dtype_name, typed_field = _DATA_TYPES[data_type]
    # Every repeated field is decoded, and every nested message walked, used or not: protobuf
    # refuses a message in which any of them is malformed, so reading one as a tensor would
    # read what ONNX itself cannot.
    repeated = {number: _repeated(fields.get(number, []), number) for number in _REPEATED}
    for number in _NESTED:
        for message in fields.get(number, []):
            for _ in _fields(message):  # type: ignore[arg-type]
                pass
    shape = tuple(int(d) for d in repeated[1].view(np.int64))
    count = element_count(list(shape), "the ONNX tensor")
    flat = _values(fields, repeated[typed_field], dtype_name, typed_field, count)
    tensor_name = bytes(fields[8][-1]).decode("utf-8", "replace") if 8 in fields else ""
    array = flat.reshape(shape)
    if dtype_name in FORMATS and not FORMATS[dtype_name].native:
        return Tensor(array, dtype_name, SOURCE, name=tensor_name or name)
    return from_numpy(array, SOURCE, name=tensor_name or name)


def _values(fields: dict, values: np.ndarray, dtype_name: str, typed_field: int, count: int) -> np.ndarray:
    """The flat values, from ``raw_data`` or the typed field's ``values``, checked against the element count."""
    element = np.dtype(FORMATS[dtype_name].storage if dtype_name in FORMATS else dtype_name)
    per_element = 2 if element.kind == "c" else 1
    if 9 in fields:
        raw = fields[9][-1]
        if len(raw) != count * element.itemsize:
            raise InputError(
                f"the ONNX tensor's raw_data has {len(raw)} bytes but its dims need {count * element.itemsize}"
            )
        flat = np.frombuffer(raw, dtype=element.newbyteorder("<"))
        return flat if flat.dtype.isnative else flat.astype(element)
    if values.size != count * per_element:
        raise InputError(f"the ONNX tensor holds {values.size // per_element} values but its dims need {count}")
    if element.kind == "c":
        return values.view(element)
    if typed_field in _FIXED:
        return values.astype(element)
    if element.kind == "b":
        return values != 0
    # Varint fields hold narrower types in their low bits (float16 and bfloat16 as bit patterns).
    return values.astype(f"u{element.itemsize}").view(element)


def _repeated(chunks: list[int | memoryview], number: int) -> np.ndarray:
    """All values of a repeated field, however its occurrences were split or packed."""
    parts = []
    for value in chunks:
        if isinstance(value, int):
            parts.append(np.array([value], dtype=np.uint64))
        elif number in _FIXED:
            if len(value) % np.dtype(_FIXED[number]).itemsize:
                raise InputError("not an ONNX TensorProto: a packed floating-point field has a partial value")
            parts.append(np.frombuffer(value, dtype=_FIXED[number]))
        else:
            parts.append(_varints(value))
    if not parts:
        return np.zeros(0, dtype=_FIXED.get(number, "uint64"))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _varints(buf: memoryview) -> np.ndarray:
    """Decode a packed run of base-128 varints at once, as uint64 (negatives wrap)."""
    b = np.frombuffer(buf, dtype=np.uint8)
    if b.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if b[-1] & 0x80:
        raise InputError("not an ONNX TensorProto: a packed field ends inside a number")
    ends = np.flatnonzero(b < 0x80)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise InputError("not an ONNX TensorProto: a number in a packed field is longer than 10 bytes")
    position = np.arange(b.size) - np.repeat(starts, lengths)
    parts = (b & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
    return np.add.reduceat(parts, starts)  # the 7-bit groups do not overlap, so + is |


def _fields(view: memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) of each field at the top level of a message."""
    pos = 0
    while pos < len(view):
        key, pos = _varint(view, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(view, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(view):
                raise InputError("not an ONNX TensorProto, or a truncated one: a field runs past the end")
            value, pos = view[pos : pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(view, pos)
            if pos + size > len(view):
                raise InputError("not an ONNX TensorProto, or a truncated one: a field runs past the end")
            value, pos = view[pos : pos + size], pos + size
        else:
            raise InputError(f"not an ONNX TensorProto: wire type {wire} does not occur in one")
        yield number, wire, value


def _varint(view: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(view):
            raise InputError("not an ONNX TensorProto, or a truncated one: it ends inside a number")
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & (2**64 - 1), pos
    raise InputError("not an ONNX TensorProto: a number is longer than 10 bytes")
