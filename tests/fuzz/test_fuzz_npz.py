"""Fuzzing ``.npz`` reading: archives written by ``np.savez``/``np.savez_compressed``,
mutated as bytes and as archives (members rewritten, names changed, the zip directory
lying about sizes), and zip bombs.

Whatever Perpendis reads, ``np.load`` must read to the same names and bits.
"""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest
from fuzzkit import FUZZ, assert_same, central_entries, mutated, outcome, zip_bomb
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis import formats
from perpendis.formats import limits

DTYPES = ["<f2", ">f4", "<f8", "<i2", "|u1", "|b1", "<c8"]
NAMES = st.text(st.characters(codec="utf-8", exclude_characters="/\\\x00"), min_size=1, max_size=10) | st.sampled_from(
    ["<img src=x onerror=window.__pwned=1>", "../../etc/passwd", "a.npy", "\u202etxt.exe", "x" * 200]
)


@st.composite
def real_npz(draw) -> bytes:
    arrays = {}
    for name in draw(st.lists(NAMES, min_size=1, max_size=3, unique=True)):
        dtype = np.dtype(draw(st.sampled_from(DTYPES)))
        arrays[name] = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
    out = io.BytesIO()
    (np.savez_compressed if draw(st.booleans()) else np.savez)(out, **arrays)
    return out.getvalue()


def same_as_numpy(tensors, data: bytes) -> None:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        names = archive.files
        assert [t.name for t in tensors] == names
        if len(set(names)) == len(names):
            for tensor in tensors:
                assert_same(tensor, archive[tensor.name])


@FUZZ
@given(real_npz())
def test_real_archives_read_exactly(data):
    result = outcome(formats.read, data, "x.npz")
    assert result.error is None, result.error
    same_as_numpy(result.tensors, data)


@FUZZ
@given(st.data())
def test_mutated_bytes_read_exactly_or_fail_cleanly(data):
    broken = data.draw(mutated(data.draw(real_npz())))
    result = outcome(formats.read, broken, "x.npz")
    if result.error is None and broken[:4] == b"PK\x03\x04" and result.tensors[0].source.startswith(".npz"):
        same_as_numpy(result.tensors, broken)


@st.composite
def mutated_members(draw) -> bytes:
    """A well-formed zip whose members are mutated ``.npy`` files, some renamed."""
    original = zipfile.ZipFile(io.BytesIO(draw(real_npz())))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))) as archive:
        for info in original.infolist():
            content = original.read(info)
            if draw(st.booleans()):
                content = draw(mutated(content))
            name = draw(st.sampled_from([info.filename, info.filename + ".txt", "d/" + info.filename, "x/data.pkl"]))
            archive.writestr(name, content)
    return out.getvalue()


@FUZZ
@given(mutated_members())
def test_mutated_members_read_exactly_or_fail_cleanly(data):
    result = outcome(formats.read, data, "x.npz")
    if result.error is None and result.tensors[0].source.startswith(".npz"):
        same_as_numpy(result.tensors, data)


@FUZZ
@given(real_npz(), st.sampled_from([0, 1, 100, 2**20 + 1, 2**31, 2**32 - 1]), st.booleans())
def test_lying_directory_sizes_fail_cleanly(data, size, compressed_field):
    """The zip directory declares another (un)compressed size than the member has."""
    lied = bytearray(data)
    for at in central_entries(data):
        struct.pack_into("<I", lied, at + (20 if compressed_field else 24), size)
    result = outcome(formats.read, bytes(lied), "x.npz")
    if result.error is None:
        same_as_numpy(result.tensors, bytes(lied))


def test_zip_bomb_is_refused_by_its_ratio_before_inflating():
    bomb = zip_bomb(256 << 20)
    assert len(bomb) < (256 << 20) // limits.ZIP_MAX_RATIO
    result = outcome(formats.read, bomb, "bomb.npz")
    assert result.error is not None and "ZIP_MAX_RATIO" in result.error.message
    assert result.peak_bytes < 16 << 20


def test_zip_bomb_whose_directory_understates_its_size_stops_inflating():
    bomb = zip_bomb(64 << 20, declared=1 << 20)
    result = outcome(formats.read, bomb, "bomb.npz")
    # zipfile stops at the declared size, then its CRC check fails.
    assert result.error is not None and "bomb.npy" in result.error.message
    assert result.peak_bytes < 16 << 20


@pytest.mark.parametrize("name", ["", "/", "a.npy/", "x/data.pkl"])
def test_odd_member_names_fail_cleanly(name):
    """Names zipfile writes when asked, found by atheris: an empty name broke ``ZipInfo.is_dir``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(zipfile.ZipInfo(name), b"\x93NUMPY")
    assert outcome(formats.read, out.getvalue(), "x.npz").error is not None
