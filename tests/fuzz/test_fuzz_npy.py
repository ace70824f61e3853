"""Fuzzing ``.npy`` reading: real ``np.save`` output, mutated, and hostile headers.

Whenever Perpendis accepts a mutated file, NumPy itself must load it to the same bits:
a mutation that leaves the file valid must give the right array, not a plausible one.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from fuzzkit import FUZZ, assert_same, mutated, outcome
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.lib import format as npformat
from perpendis.inputs import formats

ml_dtypes = pytest.importorskip("ml_dtypes")

DTYPES = ["<f2", ">f2", "<f4", ">f8", "<i1", "<u2", ">i4", "<i8", "|b1", "<c8", ">c16"]
ML_DTYPES = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


def npy_bytes(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    out = io.BytesIO()
    npformat.write_array(out, array, version=version, allow_pickle=False)
    return out.getvalue()


@st.composite
def real_npy(draw) -> tuple[bytes, np.ndarray]:
    """A file written by NumPy: any supported dtype and byte order, C or Fortran, every version."""
    if draw(st.booleans()):
        dtype = np.dtype(draw(st.sampled_from(DTYPES)))
        array = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))
    else:
        bits = draw(hnp.arrays(np.uint16, hnp.array_shapes(max_dims=3, max_side=5)))
        array = (
            bits.view(ml_dtypes.bfloat16)
            if draw(st.booleans())
            else bits.astype(np.uint8).view(draw(st.sampled_from(ML_DTYPES[1:])))
        )
    if draw(st.booleans()):
        array = np.asfortranarray(array)
    version = draw(st.sampled_from([None, (1, 0), (2, 0), (3, 0)]))
    return npy_bytes(array, version), array


def numpy_reads(data: bytes) -> np.ndarray:
    """NumPy's reading of a file; ``'<f1'`` (ml_dtypes' float8_e5m2, which NumPy cannot load) as its bits."""
    head = data[:256]
    if b"'descr': '<f1'" in head:
        data = head.replace(b"'descr': '<f1'", b"'descr': '|u1'", 1) + data[256:]
    return np.load(io.BytesIO(data), allow_pickle=False)


def same_as_numpy(tensor, data: bytes) -> None:
    reference = numpy_reads(data)
    if reference.dtype.kind == "V":
        reference = reference.view(np.uint16 if reference.dtype.itemsize == 2 else np.uint8)
    assert_same(tensor, reference)


@FUZZ
@given(real_npy())
def test_real_files_read_exactly(sample):
    data, array = sample
    result = outcome(formats.read, data, "x.npy")
    assert result.error is None, result.error
    [tensor] = result.tensors
    if array.dtype.kind == "V" or array.dtype in ML_DTYPES:
        array = array.view(np.uint16 if array.dtype.itemsize == 2 else np.uint8)
    assert_same(tensor, array)


@FUZZ
@given(st.data())
def test_mutated_files_read_exactly_or_fail_cleanly(data):
    original, _ = data.draw(real_npy())
    broken = data.draw(mutated(original))
    result = outcome(formats.read, broken, "x.npy")
    if result.error is None and broken[:6] == b"\x93NUMPY":
        [tensor] = result.tensors
        same_as_numpy(tensor, broken)


# Shapes that are valid tuples of ints but absurd: huge, zero-size with huge sides, too many dimensions.
ABSURD_SHAPES = st.one_of(
    st.lists(st.integers(0, 2**70), max_size=4).map(tuple),
    st.lists(st.sampled_from([0, 1, 2, 10**6, 2**31, 2**62, 2**63 - 1, 2**64]), min_size=1, max_size=4).map(tuple),
    st.integers(60, 200).map(lambda n: (1,) * n),
    st.integers(60, 200).map(lambda n: (0,) * n),
)
SHAPES = st.one_of(
    ABSURD_SHAPES,
    st.just((-1, 3)),
    st.just((True, 2)),
    st.just((2.0,)),
    st.just("(3,)"),
    st.just([2, 2]),
    st.just(None),
)
DESCRS = st.one_of(
    st.sampled_from(["<f4", ">f2", "|V2", "|V1", "<f1", "|b1"]),
    st.sampled_from(
        ["<f4", ">f2", "|O", "<U4", "|S0", "|S3", "<M8[s]", "<m8[ns]", "|V0", "|V2", "|V3", "|V1", "<f16", "<c32",
         "<g", "?", "b", "<e", "f4", "<f4 ", "", "|b1", "<i16", "<q"]
    ),
    st.just([("a", "<f4"), ("b", "<i2")]),
    st.just(("<f4", (2, 3))),
    st.just([("a", "|O")]),
    st.text(max_size=10),
)  # fmt: skip


@st.composite
def hostile_header(draw) -> bytes:
    """A ``.npy`` whose header dict says anything: huge or odd shapes, any descr, junk keys."""
    fields = {
        "descr": draw(DESCRS),
        "fortran_order": draw(st.booleans() | st.sampled_from([0, 1, None, "no"])),
        "shape": draw(SHAPES),
    }
    if draw(st.integers(0, 7)) == 0:
        del fields[draw(st.sampled_from(sorted(fields)))]
    if draw(st.integers(0, 7)) == 0:
        fields["extra"] = draw(st.integers())
    text = repr(fields)
    if draw(st.integers(0, 9)) == 0:
        depth = draw(st.integers(100, 5000))
        text = text.replace("'shape': ", "'shape': " + "(" * depth, 1).replace("}", ")" * depth + "}")
    major = draw(st.sampled_from([1, 2, 3]))
    header = text.encode("utf-8" if major == 3 else "latin-1", "replace") + b"\n"
    length = len(header).to_bytes(2 if major == 1 else 4, "little")
    payload = draw(st.binary(max_size=64) | st.integers(0, 4096).map(bytes))
    return b"\x93NUMPY" + bytes([major, 0]) + length + header + payload


@FUZZ
@given(st.sampled_from(["<f4", ">f2", "|V2", "<f1", "<c8"]), st.booleans(), ABSURD_SHAPES, st.binary(max_size=64))
# Complex with NumPy's most dimensions: the component axis would be one too many (was a ValueError).
@example(descr="<c8", fortran_order=False, shape=(0,) * 64, payload=b"")
def test_absurd_shapes_are_refused_or_read(descr, fortran_order, shape, payload):
    out = io.BytesIO()
    npformat.write_array_header_2_0(out, {"descr": descr, "fortran_order": fortran_order, "shape": shape})
    data = out.getvalue() + payload
    result = outcome(formats.read, data, "x.npy")
    if result.error is None:
        [tensor] = result.tensors
        same_as_numpy(tensor, data)


@FUZZ
@given(hostile_header())
def test_hostile_headers_never_crash_or_allocate(data):
    result = outcome(formats.read, data, "x.npy")
    if result.error is None:
        [tensor] = result.tensors
        same_as_numpy(tensor, data)


def test_declared_trillion_elements_are_refused_before_allocating():
    out = io.BytesIO()
    npformat.write_array_header_1_0(out, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    result = outcome(formats.read, out.getvalue(), "big.npy")
    assert result.error is not None
    assert "MAX_ELEMENTS" in result.error.message and "1000000000000" in result.error.message
    assert result.peak_bytes < 1 << 20
