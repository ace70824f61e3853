"""The input planner: every input becomes a reader, and the job is decided once.

A request's inputs arrive as bytes the worker copied in (``payloads``), as files the page
handed over unread (``files``: ``(read, size)`` over a ``Blob``), or as files read ahead
of the click (``ahead``).  :func:`plan` looks at them once and says which of three jobs
this is:

``Captures``
    Two Polygraphy captures (a ``bisect``, or a ``compare`` of files holding several
    tensors): each indexed through its reader and decoded one tensor at a time, never held
    whole (a Polygraphy file of hundreds of megabytes is mostly base64).
``StreamedPair``
    Two big ``.npy`` files (together at least :data:`~perpendis.engine.stream.STREAM_MIN_BYTES`)
    compared chunk by chunk straight from their readers; nothing is kept for follow-up
    questions.
``InMemoryPair``
    Anything else: every file read whole (files read ahead are not read again) and the
    request handled as if the page had sent the bytes.

The page asks the same planner, ahead of the click, whether chosen files are worth
reading before Compare is pressed (:func:`read_ahead`): exactly those it would read whole.

The readers of captures (:mod:`perpendis.inputs.formats.polygraphy`, :mod:`perpendis.bisect`) and
the streamed comparison (:mod:`perpendis.stream`) are imported when files first arrive,
not with the service.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, blame
from ..inputs.formats.buffer import Reader, view_reader
from ..inputs.formats.npy import MAGIC
from .boxes import several
from .requests import BisectRequest, CompareRequest, Request

if TYPE_CHECKING:
    from ..engine.stream import Source

WHOLE_MAX_BYTES = 1 << 30
"""Largest file the worker reads whole: beyond it a 32-bit heap cannot also compare it."""

Files = Mapping[str, tuple[Reader, int]]


def read_ahead(sizes: list[int]) -> bool:
    """Whether files of ``sizes``, chosen together for a comparison, may be read before it
    is asked for: the planner reads them whole then anyway, since it streams only pairs of
    :data:`~perpendis.engine.stream.STREAM_MIN_BYTES` or more.  Reading them while the user has
    yet to press Compare takes that time off the comparison (``app/worker.js``, op
    ``prefetch``)."""
    from ..engine import stream

    return 0 < sum(sizes) < stream.STREAM_MIN_BYTES


@dataclass(frozen=True)
class Captures:
    """Two captures indexed through their readers: ``a`` and ``b`` are their lazy entries."""

    a: list[Any]
    b: list[Any]


@dataclass(frozen=True)
class StreamedPair:
    """Two ``.npy`` files streamed; ``keys`` are their payload keys, for helpers that read them too."""

    a: Source
    b: Source
    keys: dict[str, str]


@dataclass(frozen=True)
class InMemoryPair:
    """The request handled with every input in memory: ``payloads`` holds them all, as bytes."""

    payloads: dict[str, Any]


Plan = Captures | StreamedPair | InMemoryPair


def _side_readers(request: Request, payloads: Mapping[str, Any], files: Files) -> dict[str, tuple[Reader, int]] | None:
    """Readers of boxes A and B when each is one file (unread or copied in) and there is no reference."""
    if not isinstance(request, CompareRequest | BisectRequest) or request.inputs.get("ref") is not None:
        return None
    readers: dict[str, tuple[Reader, int]] = {}
    for side in ("a", "b"):
        spec = request.inputs.get(side)
        key = spec.get("data") if isinstance(spec, Mapping) else None
        if not isinstance(key, str):
            return None
        if key in files:
            readers[side] = files[key]
        elif key in payloads:
            readers[side] = view_reader(payloads[key])
        else:
            return None
    return readers


def npy_files(sized: Sequence[tuple[Reader, int]]) -> bool:
    """Whether every input, ``(read, size)``, starts with the ``.npy`` magic: only those stream."""
    return all(size >= len(MAGIC) and bytes(read(0, len(MAGIC))) == MAGIC for read, size in sized)


def streams(sized: Sequence[tuple[Reader, int]]) -> bool:
    """The one rule of when A and B are compared chunk by chunk, for the page and the CLI alike:
    two ``.npy`` files of :data:`~perpendis.engine.stream.STREAM_MIN_BYTES` or more together
    (smaller ones are read whole, which lets the page ask about elements afterwards)."""
    from ..engine import stream

    return sum(size for _, size in sized) >= stream.STREAM_MIN_BYTES and npy_files(sized)


def _streamable(request: Request, files: Files) -> bool:
    """Whether a request compares two ``.npy`` files big enough to stream, and nothing else."""
    if not isinstance(request, CompareRequest) or request.inputs.get("ref"):
        return False
    specs = [request.inputs.get(side) for side in ("a", "b")]
    keys = [spec.get("data") if isinstance(spec, Mapping) else None for spec in specs]
    if not all(k in files for k in keys):
        return False
    sized = [files[k] for k in keys]
    return streams(sized) or (request.stream and npy_files(sized))


def plan(
    request: Request, payloads: Mapping[str, Any], files: Files, ahead: Mapping[str, np.ndarray] | None = None
) -> Plan:
    """The one decision of how a request's inputs are read (see the module's docstring)."""
    readers = _side_readers(request, payloads, files) if files else None
    if readers is not None:
        from ..inputs.formats import polygraphy

        if all(polygraphy.recognised(*reader) for reader in readers.values()):
            captures = _indexed(readers, request.void_format)
            # A compare of two captures of one tensor each is a pair like any other.
            if isinstance(request, BisectRequest) or several(len(captures.a), len(captures.b)):
                return captures
    if _streamable(request, files):
        from ..engine.stream import open_source

        inputs, void = request.inputs, request.void_format
        a, b = (
            open_source(*files[inputs[side]["data"]], inputs[side].get("name"), side, void_format=void.get(side))
            for side in ("a", "b")
        )
        return StreamedPair(a, b, {"a": inputs["a"]["data"], "b": inputs["b"]["data"]})
    too_big = [size for _, size in files.values() if size > WHOLE_MAX_BYTES]
    if too_big:
        raise InputError(
            f"a file of {max(too_big) / 2**20:.0f} MiB is too big to load whole in the browser (the limit is "
            f"{WHOLE_MAX_BYTES // 2**20} MiB); two .npy files of one shape are streamed instead, "
            "or use the command line"
        )
    early = ahead or {}
    whole = {
        key: early[key] if key in early and early[key].size == size else read(0, size)
        for key, (read, size) in files.items()
    }
    return InMemoryPair({**payloads, **whole})


def _indexed(readers: Mapping[str, tuple[Reader, int]], void_format: Mapping[str, str]) -> Captures:
    """Each capture's lazy entries, indexed through its reader."""
    from ..layers.bisect import polygraphy_entries

    entries = {}
    for side, (read, size) in readers.items():
        with blame(side):
            entries[side] = polygraphy_entries(read, size, void_format.get(side))
    return Captures(entries["a"], entries["b"])
