"""The page's checkpoint comparison folded on the core's worker and its helpers at once.

A checkpoint is many tensor pairs, so the work is cut into *units* of about
:data:`UNIT_BYTES` read: a big pair's shares of whole chunks, or several small pairs
batched into one unit, so that a checkpoint of thousands of small tensors costs a few
hundred messages rather than one round trip per tensor.  The core's worker
(``app/worker.js``) deals the units to whichever worker is free: a helper
(``app/fold_worker.js``) is told where each of its tensors lies (:class:`Located`) and
reads them from the unread files itself, a slice at a time, as it does a share of two
streamed ``.npy`` files; the core's worker folds the others itself.  Partials come back
as bytes and are merged in element order once a pair's shares are all in, as the
streamed fold merges them, so each row is the one a single process makes.

Each worker reads a unit's tensor bytes before folding it, with ``Blob.arrayBuffer()``
(``reads``: one byte range of each side per piece), since in Chromium that reads a 64 MB
slice in about 80 ms where the synchronous ``FileReaderSync`` a reader must use takes
240-330 ms.  The fold then reads those bytes through :func:`ranged`, so it is the
streamed fold, chunk by chunk, whichever way the bytes came.

Units of a pair read whole (``.npz``, ``torch.save``) are folded in the core's worker only:
a helper would have to read the whole archive again.
"""

from __future__ import annotations

import json
import math
import struct
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..engine.compare import Prepared
from ..engine.fold.codec import partial_from_bytes, partial_to_bytes
from ..engine.fold.partial import Partial
from ..engine.fold.share import Share
from ..engine.stream import Source
from ..errors import InputError
from ..inputs.formats.buffer import BytesLike, Reader, as_view
from .inputs import Located
from .job import Begun, task_bytes
from .pairs import Task, compare_pair, error_row, fold_located, merged_row, prepare_pair, sources
from .report import CheckpointReport, TensorRow

UNIT_BYTES = 64 * 2**20
"""Bytes of both sides read per unit: a fifth of a second of folding in the browser, so a
unit's round trip (a message each way, a partial copied out and in) is a small part of it,
and the last unit leaves the other worker idle only briefly."""

STREAMED = ("safetensors", "npy")
"""Kinds of tensor a helper reads itself, a slice at a time."""


@dataclass
class _Pair:
    """One pair being folded in shares: its sources and comparison (None: not prepared when
    planned, folded whole by :func:`compare_pair`), and the partials in so far."""

    task: Task
    sources: tuple[Source, Source] | None
    prepared: Prepared | None
    shares: list[Share]
    parts: list[Partial | None]
    left: int = 0


@dataclass
class _Piece:
    pair: int
    share: int
    nbytes: int
    reported: int = 0  # bytes of it told to ``done`` while it was folded


class UnitQueue:
    """Which unit each worker folds next: the one place the units are dealt, whoever folds
    them (the page's helpers and its core's worker, or a Dask cluster's workers).

    A worker asks when it is free.  A helper is given the first unit left that it can read
    (:attr:`CheckpointFold.helped`); the core's worker first any unit a helper gave back
    (it failed), then the first unit left of any kind, so units are folded roughly in
    order and the big pairs' shares come in together."""

    def __init__(self, helped: Sequence[bool]) -> None:
        self.helped = list(helped)
        self.left: list[int] = list(range(len(self.helped)))
        self.given_back: deque[int] = deque()

    def next(self, helper: bool) -> int | None:
        """The unit a helper (``helper``) or the core's worker folds next; None: none left for it."""
        if not helper and self.given_back:
            return self.given_back.popleft()
        at = next((k for k, index in enumerate(self.left) if self.helped[index]), None) if helper else 0
        return None if at is None or not self.left else self.left.pop(at)

    def give_back(self, index: int) -> None:
        """A helper could not fold unit ``index``: the core's worker folds it."""
        self.given_back.append(index)


@dataclass
class CheckpointFold:
    """The units of one checkpoint comparison, and the rows as units are folded or taken in."""

    begun: Begun
    keys: dict[str, dict[str, str]]  # side → file name → the request's payload key of the file
    pairs: list[_Pair] = field(default_factory=list)
    units: list[list[_Piece]] = field(default_factory=list)
    helped: list[bool] = field(default_factory=list)
    by_helpers: int = 0  # units whose partials a helper folded
    queue: UnitQueue = field(default_factory=lambda: UnitQueue([]))  # who folds which unit next

    @classmethod
    def plan(
        cls,
        begun: Begun,
        keys: dict[str, dict[str, str]],
        unit_bytes: int | None = None,
        kinds: tuple[str, ...] = STREAMED,
    ) -> CheckpointFold:
        """Prepare every pair (headers only) and cut the pairs into units; the rows of pairs
        with nothing to fold (shapes that differ, unreadable, empty) are made here.  Units
        whose tensors are all of ``kinds`` are sent out (:meth:`unit_jobs`); a Dask worker,
        which keeps an archive it has read, takes every kind."""
        unit_bytes = UNIT_BYTES if unit_bytes is None else unit_bytes
        fold = cls(begun, keys)
        job, batch, batch_bytes = begun.job, [], 0
        kind = None
        for task in job.tasks:
            try:
                sa, sb = sources(task, job.a.open, job.b.open)
                prepared = prepare_pair(task, sa, sb, job.options)
            except InputError as err:
                job.row(task, error_row(task, err))
                continue
            if isinstance(prepared, TensorRow):
                job.row(task, prepared)
                continue
            nbytes = task_bytes(task)
            if not prepared.size:
                job.row(task, merged_row(task, sa, sb, prepared, []))
                continue
            shares = prepared.shares(max(1, math.ceil(nbytes / unit_bytes)))
            index = len(fold.pairs)
            fold.pairs.append(_Pair(task, (sa, sb), prepared, shares, [None] * len(shares), len(shares)))
            helpable = task.a.kind in kinds and task.b.kind in kinds
            for k, share in enumerate(shares):
                piece = _Piece(index, k, nbytes * (share.stop - share.start) // prepared.size)
                if batch and (batch_bytes + piece.nbytes > unit_bytes or kind != helpable):
                    fold._close(batch, kind)
                    batch, batch_bytes = [], 0
                batch.append(piece)
                batch_bytes += piece.nbytes
                kind = helpable
        if batch:
            fold._close(batch, kind)
        fold.queue = UnitQueue(fold.helped)
        return fold

    @classmethod
    def whole(cls, begun: Begun, unit_bytes: int = UNIT_BYTES) -> CheckpointFold:
        """Every pair whole, batched into units of about ``unit_bytes``, for a fold in this
        process (the CLI's local run): a pair is prepared only when its unit is folded, so a
        tensor read whole (an archive's, a distributed checkpoint's chunk) is held only while
        it is folded, and each row is the one :func:`compare_pair` makes (a pair folded whole
        has its task rows judged on the way; cutting it would gain nothing in one process)."""
        fold = cls(begun, {})
        batch: list[_Piece] = []
        batch_bytes = 0
        for task in begun.job.tasks:
            nbytes = task_bytes(task)
            if batch and batch_bytes + nbytes > unit_bytes:
                fold._close(batch, False)
                batch, batch_bytes = [], 0
            batch.append(_Piece(len(fold.pairs), 0, nbytes))
            batch_bytes += nbytes
            fold.pairs.append(_Pair(task, None, None, [], [None], 1))
        if batch:
            fold._close(batch, False)
        fold.queue = UnitQueue(fold.helped)
        return fold

    def _close(self, batch: list[_Piece], helpable: bool | None) -> None:
        self.units.append(batch)
        self.helped.append(bool(helpable))

    def unit_jobs(self) -> list[dict[str, Any] | None]:
        """What a helper is sent for each unit (None: the core's worker folds it):
        ``{"job": JSON, "files": [payload key, ...], "reads": [[file, offset, length], ...]}``,
        the job and the reads naming files by their place in ``files``; the reads are each
        piece's bytes of A, then of B, in the job's order."""
        return [self._job(unit) if helped else None for unit, helped in zip(self.units, self.helped, strict=True)]

    def _job(self, unit: list[_Piece]) -> dict[str, Any]:
        files: list[str] = []

        def place(side: str, loc: Located) -> int:
            key = self.keys[side][loc.file]
            if key not in files:
                files.append(key)
            return files.index(key)

        pieces, reads = [], []
        for piece in unit:
            pair = self.pairs[piece.pair]
            a, b = pair.task.a, pair.task.b
            share = pair.shares[piece.share]
            fa, fb = place("a", a), place("b", b)
            ra, rb = (share_range(source, share) for source in pair.sources)
            pieces.append({
                "share": asdict(share), "a": asdict(a), "fa": fa, "ra": ra, "b": asdict(b), "fb": fb, "rb": rb,
            })
            reads += [[fa, *ra], [fb, *rb]]
        return {"job": json.dumps(pieces), "files": files, "reads": reads}

    def fold_unit(self, index: int, views: Sequence[BytesLike] | None = None) -> None:
        """Fold unit ``index`` here (never sent to a helper, or its helper failed); ``views``
        are the bytes of its ``reads`` when the worker read them, else the files are read here."""
        job = self.begun.job
        for k, piece in enumerate(self.units[index]):
            pair = self.pairs[piece.pair]
            if not pair.left:
                continue
            if pair.prepared is None:
                self._fold_whole(pair, piece)
                continue
            share = pair.shares[piece.share]
            try:
                if views is None:
                    partial = pair.prepared.fold(share.start, share.stop)
                else:
                    (sa, sb), task = pair.sources, pair.task
                    file_a = _read_from(job.a.open(task.a.file), sa, share, views[2 * k])
                    file_b = _read_from(job.b.open(task.b.file), sb, share, views[2 * k + 1])
                    partial = fold_located(share, task.a, file_a, task.b, file_b)
            except InputError as err:
                self._failed(pair, err)
                continue
            self._take(pair, piece, partial)

    def _fold_whole(self, pair: _Pair, piece: _Piece) -> None:
        """A pair not prepared when planned (:meth:`whole`) folded here, its progress told chunk
        by chunk and ``cancelled`` asked before each chunk, as one process folds it alone."""
        job = self.begun.job

        def progress(fraction: float) -> None:
            self.advance(piece, int(fraction * piece.nbytes))

        row = compare_pair(pair.task, job.a.open, job.b.open, job.options, progress=progress, cancelled=job.cancelled)
        self._done(pair, piece, row)

    def advance(self, piece: _Piece, nbytes: int) -> None:
        """``nbytes`` of ``piece`` folded so far: the bytes beyond what was told are told to ``done``."""
        done = self.begun.job.done
        if done is not None and nbytes > piece.reported:
            done(nbytes - piece.reported)
            piece.reported = nbytes

    def take_unit(self, index: int, data: BytesLike) -> None:
        """Take in the partials a helper folded for unit ``index`` (:func:`fold_unit_job`'s bytes)."""
        unit = self.units[index]
        parts = unpack(data)
        if len(parts) != len(unit):
            raise ValueError(f"unit {index} has {len(unit)} pieces, a helper sent {len(parts)} partials")
        for piece, part in zip(unit, parts, strict=True):
            pair = self.pairs[piece.pair]
            if pair.left:
                self._take(pair, piece, partial_from_bytes(part))
        self.by_helpers += 1

    def whole_pairs(self, index: int) -> list[Task] | None:
        """The pairs of unit ``index`` when each is whole in it (not cut across units), so
        that whoever folds the unit can make their rows itself; else None."""
        unit = self.units[index]
        pairs = [self.pairs[piece.pair] for piece in unit]
        if any(pair.prepared is not None and len(pair.shares) != 1 for pair in pairs):
            return None
        return [pair.task for pair in pairs]

    def take_rows(self, index: int, rows: Sequence[TensorRow]) -> None:
        """Take in the rows a worker made for unit ``index`` of whole pairs (:meth:`whole_pairs`)."""
        unit = self.units[index]
        if len(rows) != len(unit):
            raise ValueError(f"unit {index} has {len(unit)} pairs, a worker sent {len(rows)} rows")
        for piece, row in zip(unit, rows, strict=True):
            pair = self.pairs[piece.pair]
            if pair.left:
                self._done(pair, piece, row)

    def _done(self, pair: _Pair, piece: _Piece, row: TensorRow) -> None:
        """A whole pair's row made: the rest of its bytes told to ``done``, the row to the job."""
        pair.left, pair.parts = 0, []
        self.advance(piece, piece.nbytes)
        self.begun.job.row(pair.task, row)

    def fail_unit(self, index: int, err: InputError | str) -> None:
        """Unit ``index`` could not be folded (a file its worker cannot read, or ``err``: why
        its worker lost it): each of its pairs is an error row, a tensor not compared."""
        for piece in self.units[index]:
            pair = self.pairs[piece.pair]
            if pair.left:
                self._failed(pair, err)

    def _take(self, pair: _Pair, piece: _Piece, partial: Partial) -> None:
        job = self.begun.job
        pair.parts[piece.share] = partial
        pair.left -= 1
        self.advance(piece, piece.nbytes)
        if not pair.left:
            sa, sb = pair.sources
            job.row(pair.task, merged_row(pair.task, sa, sb, pair.prepared, pair.parts))  # type: ignore[arg-type]
            pair.parts = []

    def _failed(self, pair: _Pair, err: InputError | str) -> None:
        pair.left, pair.parts = 0, []
        self.begun.job.row(pair.task, error_row(pair.task, err))

    def units_done(self) -> dict[str, int]:
        """How the units were folded: ``{"units": n, "by_helpers": k}``."""
        return {"units": len(self.units), "by_helpers": self.by_helpers}

    def report(self) -> CheckpointReport:
        if any(pair.left for pair in self.pairs):
            raise RuntimeError("a checkpoint comparison was answered before all its units were folded")
        return self.begun.finish()


def share_range(source: Source, share: Share) -> tuple[int, int]:
    """Where a share's elements of one tensor lie in its file: ``(offset, length)`` in bytes."""
    h, per = source.header, source.per_element
    return h.data_offset + share.start // per * h.itemsize, (share.stop - share.start) // per * h.itemsize


def ranged(file: tuple[Reader, int], offset: int, data: BytesLike) -> tuple[Reader, int]:
    """``file`` read from ``data`` (its bytes from ``offset``, read ahead) where they cover a read;
    anything else (a header) from the file itself."""
    read, size = file
    view = as_view(data)
    end = offset + len(view)

    def read_ahead(at: int, length: int) -> Any:
        if offset <= at and at + length <= end:
            return view[at - offset : at - offset + length]
        return read(at, length)

    return read_ahead, size


def _read_from(file: tuple[Reader, int], source: Source, share: Share, data: BytesLike) -> tuple[Reader, int]:
    # Bytes missing from ``data`` (a file cut short since the scan) are read from the file, which says so.
    return ranged(file, share_range(source, share)[0], data)


def fold_unit_job(
    job_json: str, files: Sequence[tuple[Reader, int]], views: Sequence[BytesLike] | None = None
) -> np.ndarray:
    """A helper's unit: fold each piece, reading its tensors from ``files`` (``(read, size)``
    in the job's order), or from ``views``, the bytes of the unit's ``reads`` when the
    worker read them; the partials packed as bytes to send back."""
    parts = []
    for k, piece in enumerate(json.loads(job_json)):
        a, b = Located(**piece["a"]), Located(**piece["b"])
        share = Share(**piece["share"])
        file_a, file_b = files[piece["fa"]], files[piece["fb"]]
        if views is not None:
            (offset_a, _), (offset_b, _) = piece["ra"], piece["rb"]
            file_a, file_b = ranged(file_a, offset_a, views[2 * k]), ranged(file_b, offset_b, views[2 * k + 1])
        parts.append(partial_to_bytes(fold_located(share, a, file_a, b, file_b)))
    return pack(parts)


def pack(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Several partials' bytes as one buffer: their count and lengths (8 bytes each), then each."""
    head = struct.pack(f"<{len(parts) + 1}Q", len(parts), *(len(p) for p in parts))
    return np.concatenate([np.frombuffer(head, dtype=np.uint8), *parts])


def unpack(data: BytesLike) -> list[memoryview]:
    """The partials' bytes :func:`pack` wrote (views of ``data``)."""
    view = as_view(data)
    (count,) = struct.unpack_from("<Q", view, 0)
    lengths = struct.unpack_from(f"<{count}Q", view, 8)
    out, at = [], 8 * (count + 1)
    for n in lengths:
        out.append(view[at : at + n])
        at += n
    return out
