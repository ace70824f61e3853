"""Compare two ``.npy`` files chunk by chunk, never holding either one whole.

A file larger than memory (or than a 32-bit browser heap) can still be compared,
because the report is a fold over aligned chunks (:func:`compare.compare_chunks`).
This module only feeds that fold: it reads both headers, checks the files can be
paired element for element, then reads the same run of elements from each file, one
chunk at a time.  Reading is the caller's, as a function ``read(offset, length)``:
the CLI reads a memory map (:func:`map_file`), the browser worker ``Blob.slice``
(:mod:`perpendis.service.planner` decides when streaming is worth it there).

Chunks start at the same flat indices as the in-memory comparison's
(:data:`compare.CHUNK` values each), so the streamed report *is* the in-memory one,
bounded samples included, not an approximation of it.

Streaming pairs elements in C order.  It does not transpose, broadcast or squeeze
(those need whole arrays), has no reference input, and refuses a file whose elements
are stored in Fortran order, with messages saying what to do instead.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, blame
from ..inputs.formats.buffer import Reader, view_reader
from ..inputs.formats.limits import NPY_HEADER_PREFIX
from ..inputs.formats.npy import NpyHeader, decode_chunk, read_header
from ..inputs.tensor import Tensor, from_numpy
from ..numerics.bits import Format, format_of
from ..report.model import Report
from .align import align, compared_format, convert
from .compare import Prepared, prepare_chunks
from .fold.chunk import CHUNK, Chunk
from .fold.partial import Partial
from .fold.share import Share
from .options import DEFAULT, ComparisonOptions

Progress = Callable[[float], object]
Stop = Callable[[], bool]

STREAM_MIN_BYTES = 256 * 2**20
"""Combined size of two ``.npy`` files from which they are streamed rather than loaded.

Below it, loading is cheap and keeps the pair for follow-up questions (an element's
bits, the heat map); above it, a comparison in memory (up to three times the inputs'
size) would take a large share of a 32-bit browser heap.
"""


class Cancelled(Exception):
    """The caller asked to stop: the comparison was abandoned between two chunks."""


@dataclass(frozen=True)
class Source:
    """One side of a streamed comparison: its header, how to read it, and what it is called."""

    header: NpyHeader
    read: Reader
    name: str | None = None
    side: str = "a"

    @property
    def shape(self) -> tuple[int, ...]:
        """The compared shape: complex files gain a trailing axis of 2 (real, imaginary)."""
        return self.header.shape + ((2,) if self.header.is_complex else ())

    @property
    def per_element(self) -> int:
        """Compared values per file element: 2 for complex, else 1."""
        return 2 if self.header.is_complex else 1

    @property
    def size(self) -> int:
        """Compared values in the whole file."""
        return self.header.n_elements * self.per_element

    @property
    def fmt(self) -> Format:
        return format_of(self.header.format)

    def sample(self) -> Tensor:
        """A one-value tensor of this file's element type, read as a whole file would be.

        How an input is described (its dtype, notes on void or complex elements) is
        decided by the readers of :mod:`perpendis.formats` and :mod:`perpendis.tensor`;
        asking them about one value keeps that decision in one place.
        """
        h = self.header
        notes = list(h.notes)
        if h.dtype.kind == "V":
            return Tensor(np.zeros(1, self.fmt.storage), h.format, h.source, name=self.name, notes=notes)
        return from_numpy(np.zeros(1, h.dtype), h.source, name=self.name, notes=notes)

    def describe(self) -> dict[str, object]:
        """:meth:`Tensor.describe` of the whole file, without reading its data."""
        info = self.sample().describe()
        info["shape"] = list(self.shape)
        info["n_elements"] = self.size
        return info

    def values(self, start: int, count: int) -> np.ndarray:
        """``count`` compared values from flat index ``start``, in this file's storage dtype."""
        h, per = self.header, self.per_element
        offset = h.data_offset + start // per * h.itemsize
        length = count // per * h.itemsize
        with blame(self.side):
            raw = self.read(offset, length)
            if len(raw) != length:
                raise InputError(
                    f"the .npy file ended early: {length} bytes were expected at offset {offset} but "
                    f"{len(raw)} were read; was it changed while being compared?"
                )
            return decode_chunk(h, raw)


def open_source(
    read: Reader, size: int, name: str | None = None, side: str = "a", *, void_format: str | None = None
) -> Source:
    """Read and check the header of a ``.npy`` file of ``size`` bytes.

    Refuses, with :class:`InputError` tagged with ``side``, anything but a complete
    ``.npy`` file whose elements are stored in C order.  ``void_format`` is as for
    :func:`formats.npy.read_header`.
    """
    with blame(side):
        header = read_header(read(0, min(size, NPY_HEADER_PREFIX)), void_format=void_format)
        present = size - header.data_offset
        if present < header.nbytes:
            raise InputError(
                f"the .npy file is truncated: its header declares {header.n_elements} elements of "
                f"{header.itemsize} bytes ({header.nbytes} bytes) but only {present} bytes follow"
            )
        # Fortran order is C order when at most one axis is longer than 1.
        if header.fortran_order and sum(n > 1 for n in header.shape) > 1:
            raise InputError(
                "the .npy file stores its elements in Fortran order, which cannot be streamed in C order; "
                "save it with np.save(path, np.ascontiguousarray(x)), or compare it in memory"
            )
    return Source(header, read, name, side)


def _chunks(
    a: Source, b: Source, fmt: Format, size: int, stop: Stop | None, first: int = 0, last: int | None = None
) -> Iterator[Chunk]:
    """Aligned chunks of ``size`` compared values in ``fmt``'s storage from ``first`` to
    ``last`` (the end by default), read on demand."""
    total = a.size if last is None else last
    for start in range(first, total, size):
        if stop is not None and stop():
            raise Cancelled(f"cancelled after {start - first} of {total - first} values")
        count = min(size, total - start)
        yield start, convert(a.values(start, count), a.fmt, fmt), convert(b.values(start, count), b.fmt, fmt)


def compare_sources(
    a: Source, b: Source, options: ComparisonOptions = DEFAULT, *, progress: Progress | None = None, **reading: Any
) -> Report:
    """The report of A against B, read chunk by chunk: equal to :func:`compare.compare`'s.

    ``progress(fraction)`` is called after each chunk; ``options`` as :func:`compare.compare`'s,
    ``reading`` (``chunk``, ``cancelled``) as :func:`prepare_sources`'s.
    """
    prepared = prepare_sources(a, b, options, **reading)
    report = prepared.finish(prepared.fold(progress=progress))
    if progress is not None and a.size == 0:
        progress(1.0)
    return report


def prepare_sources(
    a: Source, b: Source, options: ComparisonOptions = DEFAULT, *, cancelled: Stop | None = None, chunk: int = CHUNK
) -> Prepared:
    """:func:`compare_sources` up to its fold, which can then run here or in shares.

    ``cancelled()`` is asked before each read and, once true, stops the comparison with
    :class:`Cancelled`.  ``chunk`` (values per chunk, even so that complex pairs stay
    whole) sets how much is read at once; at the default the report equals the in-memory
    one exactly.  ``options`` are as for :func:`compare.compare` (a task check's classes axis
    last: whole rows are read again in blocks once the fold is done).
    """
    if chunk < 2 or chunk % 2:
        raise ValueError(f"chunk must be an even number of values >= 2, got {chunk}")
    if a.shape != b.shape:
        raise InputError(
            f"A has shape {list(a.shape)} and B has {list(b.shape)}: streaming pairs the files element for "
            "element, so their shapes must be equal; compare them in memory to transpose or broadcast"
        )
    fmt = compared_format(a.fmt, b.fmt)
    tol = options.tolerance(fmt)
    if a.header.is_complex and b.header.is_complex:  # the same shape: the pairs stay whole
        tol = replace(tol, complex=True)
    prepared = prepare_chunks(
        a.describe(),
        b.describe(),
        fmt,
        a.shape,
        lambda first, last: _chunks(a, b, fmt, chunk, cancelled, first, last),
        tolerance=tol,
        depth=options.depth,
        notes=align(a.sample(), b.sample(), tol).notes,
        task=options.task,
    )
    prepared.check_dtype, prepared.preset = options.check_dtype, options.preset
    return prepared


def fold_share(share_json: str, void_json: str, a: tuple[Reader, int], b: tuple[Reader, int]) -> Partial:
    """A helper worker's job for a streamed comparison: open both files itself (``(read,
    size)`` each, ``void_json`` the sides' void formats) and fold its share of them."""
    share = Share(**json.loads(share_json))
    void = json.loads(void_json)
    sa, sb = (open_source(*f, side=side, void_format=void.get(side)) for f, side in ((a, "a"), (b, "b")))
    chunks = _chunks(sa, sb, format_of(share.fmt), CHUNK, None, share.start, share.stop)
    return share.fold_chunks(chunks)


def map_file(path: str | Path, side: str = "a") -> Source:
    """A source over a read-only memory map of ``path``: pages are read as the fold reaches them.

    The map is closed when the last view of it is gone, not here, so arrays a caller
    still holds stay valid.
    """
    with blame(side):
        read, size = map_reader(path)
    return open_source(read, size, Path(path).name, side)


def map_reader(path: str | Path) -> tuple[Reader, int]:
    """A reader over a read-only memory map of ``path``, and its size (closed as :func:`map_file` says).

    A file cut short after it was mapped would make a read of the map past its new end a
    SIGBUS, which kills the process (or a Dask worker) with no word of which file: each
    read first asks the file's size now (one ``fstat`` of the map's own descriptor), and a
    read past it is bad input naming the file.  The check and the read are not atomic; a
    file cut in the microseconds between them still ends the process.
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            if not size:
                return view_reader(b"")
            held = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}", where=str(path)) from None
    view = memoryview(held)

    def read(offset: int, length: int) -> memoryview:
        end = min(offset + length, size)
        if end > offset and end > (now := _size_now(held, size)):
            raise InputError(
                f"{path.name} is {now} bytes now, {size} when it was opened; was it changed while it was read?",
                where=str(path),
            )
        return view[offset : offset + length]

    return read, size


def _size_now(held: mmap.mmap, mapped: int) -> int:
    """The size of the file under ``held`` now (``mapped`` when it cannot be asked)."""
    try:
        return held.size()
    except (OSError, ValueError):  # closed, or a file system that cannot say
        return mapped
