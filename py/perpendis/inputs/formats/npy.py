"""``.npy`` files (format versions 1.0, 2.0 and 3.0), whole or streamed in chunks.

The header is parsed by ``numpy.lib.format`` from a small prefix, and the payload is
viewed in place with ``np.frombuffer``: a multi-gigabyte file is never copied just to
be read.  The same two steps, :func:`read_header` and :func:`decode_chunk`, serve a
streaming caller that reads the file piece by piece (``Blob.slice`` in the browser, a
memory map in the CLI).

Pickled (object) arrays are refused outright: loading them would run code from the
file.  ``ml_dtypes`` arrays (bfloat16, float8) have no NumPy descr, so ``np.save``
writes them as anonymous void bytes (``'<V2'``, ``'|V1'``); those are read as
bfloat16 and float8_e4m3fn unless the caller says otherwise, with a note saying so.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import numpy as np
from numpy.lib import format as npformat

from ...errors import InputError
from ...numerics.bits import FORMATS, format_of
from ..tensor import Tensor, from_numpy
from .buffer import BytesLike, as_view
from .limits import NPY_MAX_HEADER_BYTES, element_count

MAGIC = b"\x93NUMPY"
_F1_DESCR = re.compile(rb"('descr'\s*:\s*')[<>|=]f1'")

# Formats an anonymous void element of each width may hold, the default first.
VOID_FORMATS: dict[int, tuple[str, ...]] = {2: ("bfloat16",), 1: ("float8_e4m3fn", "float8_e5m2")}


@dataclass(frozen=True)
class NpyHeader:
    """What the header of a ``.npy`` file says, enough to decode any run of its elements.

    ``dtype`` is the element type as stored in the file; ``format`` the Perpendis
    format the elements are read as (for complex files, the real component format).
    ``data_offset`` is where the first element starts, ``n_elements`` how many
    elements the file declares, so the payload is ``nbytes`` bytes from there.
    Elements follow each other in Fortran order when ``fortran_order`` is set.
    """

    version: str
    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype
    byte_order: str  # "little", "big", or "none" for one-byte and void elements
    data_offset: int
    format: str
    is_complex: bool
    n_elements: int
    notes: tuple[str, ...] = field(default=())

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.n_elements * self.itemsize

    @property
    def source(self) -> str:
        return f".npy {self.version}"


def read_header(prefix: BytesLike, *, void_format: str | None = None) -> NpyHeader:
    """Parse the header at the start of a ``.npy`` file.

    ``prefix`` needs to hold only the header: ``limits.NPY_HEADER_PREFIX`` bytes (or the
    whole file, if shorter) always suffice.  ``void_format`` picks the format of
    anonymous void elements (see :data:`VOID_FORMATS`).
    """
    view = as_view(prefix)
    if bytes(view[: len(MAGIC)]) != MAGIC[: len(view)] or len(view) == 0:
        raise InputError("not a .npy file: it does not start with the .npy magic bytes \\x93NUMPY")
    length_bytes = 2 if len(view) > 6 and view[6] == 1 else 4
    if len(view) < 8 + length_bytes:
        raise InputError(f"the .npy file is truncated inside its header: it needs at least {8 + length_bytes} bytes")
    major, minor = npformat.read_magic(io.BytesIO(bytes(view[:8])))
    if (major, minor) not in ((1, 0), (2, 0), (3, 0)):
        raise InputError(f".npy format version {major}.{minor} is not one Perpendis reads (1.0, 2.0 or 3.0)")
    header_len = int.from_bytes(view[8 : 8 + length_bytes], "little")
    if header_len > NPY_MAX_HEADER_BYTES:
        raise InputError(
            f"the .npy header is {header_len} bytes, more than the limit NPY_MAX_HEADER_BYTES = "
            f"{NPY_MAX_HEADER_BYTES}; this is not a file np.save writes"
        )
    if len(view) < 8 + length_bytes + header_len:
        needed = 8 + length_bytes + header_len
        raise InputError(f"the .npy file is truncated inside its header: it needs at least {needed} bytes")
    raw_header = bytes(view[: 8 + length_bytes + header_len])
    # ml_dtypes gives float8_e5m2 the descr '<f1', which NumPy cannot parse: read it as
    # 1-byte void (same length, so offsets hold) and fix its format below.
    raw_header, e5m2 = _F1_DESCR.subn(rb"\1|V1'", raw_header)
    head = io.BytesIO(raw_header)
    head.seek(8)
    shape, fortran_order, dtype = _parse_header_dict(head, major)
    if e5m2:
        fmt, is_complex, notes = "float8_e5m2", False, ["descr '<f1' (ml_dtypes' float8_e5m2) read as float8_e5m2"]
    else:
        fmt, is_complex, notes = _element_format(dtype, void_format)
    count = element_count(shape, "the .npy header")
    return NpyHeader(
        version=f"v{major}.{minor}",
        shape=tuple(shape),
        fortran_order=fortran_order,
        dtype=dtype,
        byte_order={"<": "little", ">": "big", "=": "little" if np.little_endian else "big"}.get(
            dtype.byteorder, "none"
        ),
        data_offset=len(raw_header),
        format=fmt,
        is_complex=is_complex,
        n_elements=count,
        notes=tuple(notes),
    )


def _parse_header_dict(head: io.BytesIO, major: int) -> tuple[tuple[int, ...], bool, np.dtype]:
    """The header's shape, order and dtype, by NumPy's own (literal-only) parser.

    NumPy offers public readers for versions 1.0 and 2.0 only.  Version 3.0 has the
    2.0 layout with a UTF-8 instead of a latin-1 header; the two encodings differ only
    in non-ASCII characters, which can appear only in structured field names, and
    structured dtypes are refused anyway.
    """
    reader = npformat.read_array_header_1_0 if major == 1 else npformat.read_array_header_2_0
    try:
        return reader(head, max_header_size=NPY_MAX_HEADER_BYTES)
    # The header is untrusted text fed to NumPy's literal parser; whatever it raises
    # (ValueError, TypeError, SyntaxError, RecursionError, ...) means a bad header.
    except Exception as err:
        raise InputError(f"the .npy header is malformed: {err}") from err


def _element_format(dtype: np.dtype, void_format: str | None) -> tuple[str, bool, list[str]]:
    """The Perpendis format of a file's elements, whether they are complex, and notes."""
    if dtype.hasobject:
        raise InputError(
            "the .npy file holds Python objects (a pickled array); Perpendis never unpickles files, "
            "since that runs code from them: save a numeric array instead"
        )
    if dtype.names is not None or dtype.subdtype is not None:
        raise InputError(f"the .npy file holds a structured array ({dtype}); save each numeric field as its own array")
    if dtype.kind == "V":
        return _void_format(dtype.itemsize, void_format), False, _void_note(dtype, void_format)
    name = "bool" if dtype.kind == "b" else dtype.name
    if dtype.kind == "c":
        name = f"float{dtype.itemsize * 4}"
    if dtype.kind not in "biufc" or name not in FORMATS:
        raise InputError(
            f"arrays of dtype {dtype} cannot be compared; Perpendis compares float16, bfloat16, float32, "
            "float64, float8, integer, bool and complex arrays"
        )
    return name, dtype.kind == "c", []


def _void_format(itemsize: int, void_format: str | None) -> str:
    choices = VOID_FORMATS.get(itemsize)
    if choices is None:
        raise InputError(
            f"the .npy file holds {itemsize}-byte void elements, which are no number format Perpendis knows; "
            "1-byte void is float8, 2-byte void is bfloat16"
        )
    if void_format is None:
        return choices[0]
    if void_format not in choices:
        raise InputError(
            f"void_format {void_format!r} does not fit {itemsize}-byte void elements; choose one of "
            + ", ".join(choices)
        )
    return void_format


def _void_note(dtype: np.dtype, void_format: str | None) -> list[str]:
    if void_format is not None:
        return [f"{dtype.str} elements read as {void_format}, as asked"]
    chosen = _void_format(dtype.itemsize, None)
    others = [f for f in VOID_FORMATS[dtype.itemsize] if f != chosen]
    alternative = f"; pick {' or '.join(others)} if that is what was saved" if others else ""
    return [
        f"the file stores anonymous {dtype.itemsize}-byte elements ({dtype.str}, as np.save writes ml_dtypes "
        f"arrays); read as {chosen}{alternative}"
    ]


def _wire_dtype(header: NpyHeader) -> np.dtype:
    """How the payload's bytes are laid out: void elements are the raw bits of their format."""
    if header.dtype.kind == "V":
        # np.save writes ml_dtypes elements in the saving machine's order, little-endian in practice.
        return format_of(header.format).uint.newbyteorder("<")
    return header.dtype


def decode_chunk(header: NpyHeader, raw: BytesLike) -> np.ndarray:
    """Elements from the raw bytes of a whole number of them, as a flat storage array.

    The result has the storage dtype of ``header.format`` in native byte order (a view
    of ``raw`` when no byte swap is needed); complex elements come out as interleaved
    (real, imaginary) pairs, two values per element.  Elements are in file order, which
    is Fortran order when ``header.fortran_order`` is set.
    """
    view = as_view(raw)
    if len(view) % header.itemsize:
        raise InputError(f"a chunk of {len(view)} bytes is not a whole number of {header.itemsize}-byte .npy elements")
    wire = _wire_dtype(header)
    flat = np.frombuffer(view, dtype=wire)
    if not wire.isnative:
        flat = flat.astype(wire.newbyteorder("="))
    if header.is_complex:
        flat = flat.view(format_of(header.format).storage)
    return flat


def check_size(header: NpyHeader, size: int) -> None:
    """Refuse a file of ``size`` bytes that holds less data than its header declares."""
    present = size - header.data_offset
    if present < header.nbytes:
        raise InputError(
            f"the .npy file is truncated: its header declares {header.n_elements} elements of "
            f"{header.itemsize} bytes ({header.nbytes} bytes) but only {present} bytes follow"
        )


def read(data: BytesLike, name: str | None = None, *, void_format: str | None = None) -> Tensor:
    """The array in a whole ``.npy`` file."""
    view = as_view(data)
    header = read_header(view, void_format=void_format)
    check_size(header, len(view))
    present = len(view) - header.data_offset
    flat = decode_chunk(header, view[header.data_offset : header.data_offset + header.nbytes])
    if header.is_complex:
        flat = flat.view(header.dtype.newbyteorder("="))
    array = flat.reshape(header.shape[::-1]).T if header.fortran_order else flat.reshape(header.shape)
    notes = list(header.notes)
    if present > header.nbytes:
        notes.append(f"{present - header.nbytes} bytes after the array's data were ignored")
    if header.dtype.kind == "V":
        return Tensor(array, header.format, header.source, name=name, notes=notes)
    return from_numpy(array, header.source, name=name, notes=notes)
