"""Zip archives (``.npz``, ``torch.save``) read from a buffer, bounded and without copies.

``zipfile`` parses the directory; members stored uncompressed (``np.savez``, every
``torch.save`` storage) are then sliced straight out of the buffer, and compressed ones
inflated into a buffer of exactly their declared size.  Sizes come from the zip
directory and are checked against :mod:`.limits` before anything is inflated; since a
directory can lie, inflating stops at the declared size and the CRC must then match.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from ...errors import InputError
from .limits import ZIP_MAX_MEMBERS, ZIP_MAX_RATIO, ZIP_MAX_TOTAL_BYTES, ZIP_RATIO_MIN_BYTES

ZIP_MAGIC = b"PK\x03\x04"
_LOCAL_HEADER = struct.Struct("<4s2xH18xHH")  # magic, flag bits, name and extra lengths
_INFLATE_STEP = 1 << 20


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a memoryview, so ``zipfile`` needs no copy of it."""

    def __init__(self, view: memoryview):
        self._view = view
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """As ``io.BytesIO`` seeks: a negative absolute offset is an error, a relative one
        stops at the start.  A member a corrupted directory places before the file's start
        (zipfile seeks to it absolutely) is then refused, as ``numpy.load`` refuses it,
        rather than read from offset 0."""
        if whence == io.SEEK_SET and offset < 0:
            raise ValueError(f"negative seek value {offset}")
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        chunk = self._view[self._pos : self._pos + len(buffer)]
        buffer[: len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


def open_zip(view: memoryview, what: str) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]]:
    """The archive and its members in archive order, after checking the directory's sizes."""
    try:
        archive = zipfile.ZipFile(_ViewFile(view))
    # NotImplementedError: zipfile's word for a "version needed to extract" it does not know.
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError) as err:
        raise InputError(f"the {what} is not a readable zip archive ({err}); it may be truncated") from err
    # Not ZipInfo.is_dir(), which fails on an empty name.
    members = [info for info in archive.infolist() if not info.filename.endswith("/")]
    if len(members) > ZIP_MAX_MEMBERS:
        raise InputError(
            f"the {what} has {len(members)} members, more than the limit ZIP_MAX_MEMBERS = {ZIP_MAX_MEMBERS}"
        )
    total = sum(info.file_size for info in members)
    if total > ZIP_MAX_TOTAL_BYTES:
        raise InputError(
            f"the {what} unpacks to {total} bytes, more than the limit ZIP_MAX_TOTAL_BYTES = {ZIP_MAX_TOTAL_BYTES}"
        )
    for info in members:
        if info.compress_size > len(view):
            # Checked first: the ratio below trusts the compressed size, which a directory can inflate.
            raise InputError(
                f"member {info.filename!r} of the {what} claims {info.compress_size} compressed bytes, more than "
                f"the whole file ({len(view)} bytes); the zip directory is corrupted"
            )
        if info.flag_bits & 0x1:
            raise InputError(f"member {info.filename!r} of the {what} is encrypted; save it without a password")
        if info.file_size > ZIP_RATIO_MIN_BYTES and info.file_size > ZIP_MAX_RATIO * max(info.compress_size, 1):
            raise InputError(
                f"member {info.filename!r} of the {what} claims to inflate {info.compress_size} bytes to "
                f"{info.file_size}, beyond the limit ZIP_MAX_RATIO = {ZIP_MAX_RATIO} (a zip bomb?)"
            )
    return archive, members


def member_bytes(archive: zipfile.ZipFile, view: memoryview, info: zipfile.ZipInfo, what: str) -> memoryview:
    """The uncompressed contents of one member: a slice of ``view`` when it is stored."""
    where = f"member {info.filename!r} of the {what}"
    if info.compress_type == zipfile.ZIP_STORED:
        return _stored(view, info, where)
    out = bytearray(info.file_size)
    filled = 0
    try:
        with archive.open(info) as stream:
            # zipfile never inflates past the declared size, and checks the CRC at the end.
            while chunk := stream.read(_INFLATE_STEP):
                out[filled : filled + len(chunk)] = chunk
                filled += len(chunk)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as err:
        raise InputError(f"{where} cannot be inflated ({err}); the file may be corrupted or truncated") from err
    if filled != info.file_size:
        raise InputError(f"{where} inflates to {filled} bytes, not the {info.file_size} the zip directory declares")
    return memoryview(out)


def _stored(view: memoryview, info: zipfile.ZipInfo, where: str) -> memoryview:
    """An uncompressed member, located through its local header and checked by its CRC."""
    start = info.header_offset
    if start < 0 or start + _LOCAL_HEADER.size > len(view):
        raise InputError(f"{where} lies outside the file; the file is truncated or its zip directory corrupted")
    magic, flag_bits, name_len, extra_len = _LOCAL_HEADER.unpack(view[start : start + _LOCAL_HEADER.size])
    name_start = start + _LOCAL_HEADER.size
    # The local header's own flag says how its name is encoded, as zipfile reads it.
    encoding = "utf-8" if flag_bits & 0x800 else "cp437"
    if magic != ZIP_MAGIC or bytes(view[name_start : name_start + name_len]).decode(encoding, "replace") != (
        info.orig_filename
    ):
        # zipfile makes the same check on the members it inflates.
        raise InputError(f"{where} has a corrupted local header (another name than the zip directory's)")
    begin = name_start + name_len + extra_len
    end = begin + info.file_size
    if info.compress_size != info.file_size or end > len(view):
        raise InputError(f"{where} is truncated: it declares {info.file_size} bytes that the file does not hold")
    data = view[begin:end]
    if zlib.crc32(data) != info.CRC:
        raise InputError(f"{where} fails its CRC check; the file is corrupted")
    return data
