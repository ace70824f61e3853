"""Fuzzing the streamed comparison of two ``.npy`` files (``perpendis.stream``), which
reads headers and chunks through a ``read(offset, length)`` callback as the browser's
``Blob.slice`` and the CLI's memory map do: one file real, the other mutated, and
readers that return fewer bytes than asked (a file changed while being compared).

The streamed report must equal the in-memory one whenever both files still read.
"""

from __future__ import annotations

import io

import numpy as np
from fuzzkit import FUZZ, mutated, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.engine import stream
from perpendis.engine.compare import compare
from perpendis.inputs import formats
from perpendis.report.model import Report

DTYPES = ["<f2", "<f4", ">f4", "<f8", "<i4", "<c8"]


def npy_bytes(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


F8 = st.floats(width=64)


@st.composite
def pair(draw) -> tuple[bytes, bytes]:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    elements = F8 if dtype.kind == "f" and dtype.itemsize == 8 else None
    a = draw(hnp.arrays(dtype, shape, elements=elements))
    b = draw(hnp.arrays(dtype, shape, elements=elements)) if draw(st.booleans()) else a.copy()
    return npy_bytes(a), npy_bytes(b)


def streamed(a: bytes, b: bytes, chunk: int, short_read: int | None) -> list[Report]:
    def reader(data: bytes):
        def read(offset: int, length: int) -> memoryview:
            view = memoryview(data)[offset : offset + length]
            return view[: max(len(view) - short_read, 0)] if short_read and offset > 0 else view

        return read

    source_a = stream.open_source(reader(a), len(a), "a.npy", "a")
    source_b = stream.open_source(reader(b), len(b), "b.npy", "b")
    return [stream.compare_sources(source_a, source_b, chunk=chunk)]


@FUZZ
@given(pair(), st.data(), st.sampled_from([2, 4, 6, 64]), st.sampled_from([None, None, 1, 3]))
def test_mutated_streams_compare_or_fail_cleanly(files, data, chunk, short_read):
    a, b = files
    if data.draw(st.booleans()):
        b = data.draw(mutated(b))
    result = outcome(lambda both: streamed(*both, chunk, short_read), (a, b), returns=Report)
    if result.error is None and chunk == 64 and short_read is None:
        [report] = result.tensors
        [ta], [tb] = formats.read(a, "a.npy"), formats.read(b, "b.npy")
        assert report.to_dict()["n_bitwise_diff"] == compare(ta, tb).to_dict()["n_bitwise_diff"]


def test_tiny_float64_values_compare():
    a = npy_bytes(np.array([2.6e-82, -1e-90]))
    assert outcome(lambda both: streamed(*both, 64, None), (a, a), returns=Report).error is None


def test_huge_float64_values_compare():
    a, b = npy_bytes(np.array([0.0, 1.35e154])), npy_bytes(np.array([0.0, 1.0]))
    assert outcome(lambda both: streamed(*both, 64, None), (a, b), returns=Report).error is None
