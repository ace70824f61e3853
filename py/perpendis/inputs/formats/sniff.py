"""Which reader can take a file, decided from its first :data:`PREFIX_BYTES` and its size.

A file that is no tensor file used to be read whole before a reader refused it: a 3 GB
file of garbage cost 9-18 s and 3.1 GB of memory to be told "no form Perpendis
understands" (``bench/refusal.py``).  Every refusal a reader makes from a file's first
bytes (a magic, a header, the first protobuf fields) is made here first, from a bounded
prefix (and, for a zip archive, its bounded tail, where the directory is), so a bad file
costs what its prefix costs; a file that passes is then read by the reader as before,
which still checks the rest.  :func:`family` follows :func:`perpendis.inputs.formats.read`
test for test, so both name the same form and refuse with the same words.

A check that needs bytes past the prefix (a safetensors header longer than 64 KiB, a
Polygraphy payload further on) asks a reader that stops it (:class:`PastPrefix`); the file
is then let through, for the reader to decide on all of it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from ...errors import InputError
from .buffer import BytesLike, Reader, as_view
from .limits import TEXT_MAX_CHARS

PREFIX_BYTES = 64 * 2**10
"""Bytes read of a file before any reader is chosen: every magic, the .npy header (at most
10 KB), most safetensors headers and the first fields of a protobuf fit in it."""

ZIP_TAIL_BYTES = 22 + 65535
"""The end-of-central-directory record and the longest comment a zip may end with."""
ZIP_END = b"PK\x05\x06"


class PastPrefix(BaseException):  # not an error: "undecided", caught only here
    """A check asked for bytes past the prefix: it cannot decide, so the file is let through.

    A BaseException so that a reader's ``except Exception`` (a broken pickle raises anything)
    does not turn "not decided" into a refusal."""


def prefix_reader(head: BytesLike, size: int) -> Reader:
    """A reader of a file of ``size`` bytes that holds only ``head``: past it, :class:`PastPrefix`."""
    view = as_view(head)

    def read(offset: int, length: int) -> BytesLike:
        end = min(offset + length, size)
        if end > len(view):
            raise PastPrefix
        return view[offset:end]

    return read


def decided(check: Callable[[], object]) -> bool:
    """Run ``check`` on the prefix: True when it passed, False when it needed more bytes;
    its :class:`InputError` goes through, as the refusal."""
    try:
        check()
    except PastPrefix:
        return False
    return True


def family(head: BytesLike, size: int, tail: BytesLike = b"") -> str:
    """The reader of a file of ``size`` bytes whose first bytes are ``head`` (and, for a zip,
    last bytes ``tail``): ``npy``, ``zip``, ``safetensors``, ``polygraphy``, ``text`` or
    ``onnx_pb``; an :class:`InputError` when its prefix already shows none can read it."""
    from . import _PICKLE_PROTOCOL, UNDERSTOOD, looks_like_text, npy, polygraphy, safetensors, torchsave
    from .zipview import ZIP_MAGIC

    view = as_view(head)
    if size == 0:
        raise InputError("the file is empty")
    if bytes(view[: len(npy.MAGIC)]) == npy.MAGIC:
        _npy(view, size)
        return "npy"
    if bytes(view[:4]) == ZIP_MAGIC:
        if size > len(view) and ZIP_END not in bytes(tail):
            raise InputError(
                "the zip archive is not a readable zip archive (its end-of-central-directory record is not in its "
                "last 64 KiB); it may be truncated"
            )
        return "zip"
    if safetensors.header_length(view, size) is not None:
        decided(lambda: safetensors.index(prefix_reader(view, size), size))
        return "safetensors"
    if polygraphy.looks_like_polygraphy(view):
        decided(lambda: polygraphy.index(prefix_reader(view, size), size, window=4096))
        return "polygraphy"
    if bytes(view[: len(torchsave.LEGACY_MAGIC)]) == torchsave.LEGACY_MAGIC:
        torchsave.read(view)  # refuses the legacy format from its magic
        return "torchsave"
    if view[0] == _PICKLE_PROTOCOL:
        raise InputError(
            "the file is a Python pickle; Perpendis never unpickles arbitrary files, since that runs code "
            f"from them: save the tensors as one of {UNDERSTOOD}"
        )
    if looks_like_text(view, size):
        if size > 4 * TEXT_MAX_CHARS:  # UTF-8 spends at most 4 bytes a character
            raise InputError(
                f"the file is text of {size} bytes ({size / 2**20:.0f} MiB), more than the limit TEXT_MAX_CHARS = "
                f"{TEXT_MAX_CHARS} characters can take: save the tensor with np.save('a.npy', x) instead"
            )
        return "text"
    from .onnx_pb import _WIRE_TYPES

    try:
        fields_fit(view, size, _WIRE_TYPES, "ONNX TensorProto")
    except InputError:
        raise InputError(f"the file is in no form Perpendis understands; it reads {UNDERSTOOD}") from None
    return "onnx_pb"


def _npy(view: memoryview, size: int) -> None:
    """The .npy header's own refusals, and a file shorter than the data its header declares."""
    from .limits import NPY_HEADER_PREFIX
    from .npy import check_size, read_header

    check_size(read_header(view[:NPY_HEADER_PREFIX]), size)


def fields_fit(view: memoryview, size: int, wire_types: Mapping[int, tuple[int, ...]] | None, what: str) -> None:
    """The top-level protobuf fields of a message of ``size`` bytes, as far as ``view`` (its
    prefix) holds them: each a wire type protobuf has, each length within the file, and, when
    ``wire_types`` is given, each a field and wire type the message has; :class:`InputError`
    naming ``what`` for the first that is not."""
    pos = 0
    while pos < len(view):
        key, pos = _varint(view, pos, what)
        if key is None:
            return  # the prefix ends inside a number: undecided
        number, wire = key >> 3, key & 7
        if number == 0 or wire in (3, 4, 6, 7):
            raise InputError(f"not an {what}: wire type {wire} of field {number} does not occur in one")
        if wire_types is not None and (number not in wire_types or wire not in wire_types[number]):
            raise InputError(f"not an {what}: field {number} with wire type {wire} is not one it has")
        if wire == 0:
            value, pos = _varint(view, pos, what)
            if value is None:
                return
            continue
        if wire in (1, 5):
            length = 8 if wire == 1 else 4
        else:
            length, pos = _varint(view, pos, what)
            if length is None:
                return
        if pos + length > size:
            raise InputError(f"not an {what}, or a truncated one: a field of {length} bytes runs past the end")
        pos += length


def _varint(view: memoryview, pos: int, what: str) -> tuple[int | None, int]:
    """A varint at ``pos``, None when the prefix ends inside it."""
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(view):
            return None, pos
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
    raise InputError(f"not an {what}: a number is longer than protobuf allows")


def read_checked(path: str | os.PathLike[str], check: Callable[[memoryview, int, bytes], object]) -> memoryview:
    """The bytes of the file at ``path``, once ``check(prefix, size, tail)`` passed on its first
    :data:`PREFIX_BYTES` (and last :data:`ZIP_TAIL_BYTES`): a refusal costs the prefix only."""
    from .zipview import ZIP_MAGIC

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(PREFIX_BYTES)
        tail = b""
        if head[:4] == ZIP_MAGIC and size > len(head):
            f.seek(max(len(head), size - ZIP_TAIL_BYTES))
            tail = f.read()
        check(memoryview(head), size, tail)
        if size <= len(head):
            return memoryview(head)
        whole = bytearray(size)  # one buffer the size of the file, as read_bytes made
        whole[: len(head)] = head
        f.seek(len(head))
        got = len(head) + f.readinto(memoryview(whole)[len(head) :])
    return memoryview(whole)[:got].toreadonly()


def check_prefix(path: str | os.PathLike[str], check: Callable[[memoryview, int, bytes], object]) -> None:
    """``check(prefix, size, b"")`` on the first :data:`PREFIX_BYTES` of the file at ``path``,
    for a caller that then reads the file its own way (onnx's parser wants ``bytes``)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        check(memoryview(f.read(PREFIX_BYTES)), size, b"")
