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
from perpendis.inputs import formats
from perpendis.inputs.formats import limits

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
@given(
    real_npz(),
    st.sampled_from([None, 0, 1, 100, 2**20 + 1, 2**30, 2**31 - 1, 2**32 - 1]),
    st.sampled_from([None, 0, 1, 100, 2**20 + 1, 2**30, 2**31 - 1, 2**32 - 1]),
)
def test_lying_directory_sizes_fail_cleanly(data, compressed, uncompressed):
    """The zip directory declares other compressed and uncompressed sizes than the member has."""
    lied = bytearray(data)
    for at in central_entries(data):
        for offset, size in ((20, compressed), (24, uncompressed)):
            if size is not None:
                struct.pack_into("<I", lied, at + offset, size)
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


def tampered(data: bytes, where: str, offset: int, fmt: str, value: int) -> bytes:
    """``data`` with one field of its first central directory entry or of its end record rewritten."""
    out = bytearray(data)
    base = central_entries(data)[0] if where == "central" else data.rfind(b"PK\x05\x06")
    struct.pack_into(fmt, out, base + offset, value)
    return bytes(out)


@pytest.mark.parametrize(
    "where, offset, fmt, value",
    [
        ("central", 6, "<H", 0xFF),  # "version needed to extract" 25.5: zipfile raises NotImplementedError
        ("central", 8, "<H", 0x60),  # flag bits 5 and 6: patched data, strong encryption
        ("central", 10, "<H", 99),  # an unknown compression method
        ("central", 42, "<I", 2**32 - 1),  # local header offset past the end
        ("end", 16, "<I", 10_000),  # directory offset too large: members' offsets come out negative
        ("end", 16, "<I", 0),  # directory offset too small
        ("end", 10, "<H", 0xFFFF),  # more entries declared than present
    ],
)  # fmt: skip
@pytest.mark.parametrize("compressed", [False, True])
def test_tampered_directories_fail_cleanly(where, offset, fmt, value, compressed):
    """Found by atheris: zip fields that make zipfile raise what open_zip did not expect."""
    out = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(out, a=np.arange(8.0), b=np.ones(3, np.float32))
    outcome(formats.read, tampered(out.getvalue(), where, offset, fmt, value), "x.npz")


def test_local_header_encoding_flag_disagreeing_with_the_directory_is_refused():
    """Found by the fuzzer: a non-ASCII member name whose local header lost its UTF-8 flag.

    zipfile (and so ``np.load``) decodes the local name by the local flag and refuses the
    member; reading it by the directory's flag would accept a file NumPy cannot read.
    """
    out = io.BytesIO()
    np.savez(out, **{"\x80": np.arange(3, dtype=np.float16)})
    data = bytearray(out.getvalue())
    assert data[:4] == b"PK\x03\x04" and data[7] & 0x08  # the UTF-8 flag (bit 11) of the first local header
    data[7] &= ~0x08 & 0xFF
    with pytest.raises(zipfile.BadZipFile):
        np.load(io.BytesIO(bytes(data)), allow_pickle=False)["\x80"]
    result = outcome(formats.read, bytes(data), "x.npz")
    assert result.error is not None and "local header" in result.error.message
