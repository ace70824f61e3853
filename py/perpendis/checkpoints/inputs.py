"""A checkpoint as files: which tensors it holds, in which file and where, and what is wrong with it.

A checkpoint is a set of files named by their path inside it (a folder on disk, or the
files of a folder the page was given), each read through a reader (:data:`Opener`):
safetensors shards with ``model.safetensors.index.json``, ``torch.save`` shards with
``pytorch_model.bin.index.json``, or any mix of ``.safetensors``, ``.npz``, ``.npy``
and ``torch.save`` files without an index.  :func:`scan` reads only what locates each
tensor (a safetensors header, an ``.npy`` header, an archive's directory and pickle)
and :func:`open_tensor` gives one tensor as a :class:`~perpendis.stream.Source`, read
chunk by chunk when it is compared.

Bad input is collected, not raised: a missing shard, an index naming a file that is
not there, a truncated or corrupted shard, a tensor name in two shards are each a
:class:`Problem` naming the file, and the tensors they concern cannot be compared,
while every other tensor still is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..bits import format_of
from ..errors import InputError
from ..formats import read as read_any
from ..formats import safetensors
from ..formats.buffer import Reader, view_reader
from ..formats.npy import MAGIC, NpyHeader
from ..stream import Source, open_source
from ..tensor import Tensor

Opener = Callable[[str], tuple[Reader, int]]
"""``open(file)``: a reader over one file of the checkpoint and its size; raises
:class:`InputError` when the file cannot be read."""

INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
TENSOR_SUFFIXES = (".safetensors", ".npy", ".npz", ".bin", ".pt", ".pth")
_SHARD_OF = re.compile(r"^(?P<stem>.*?)-(?P<i>\d+)-of-(?P<n>\d+)(?P<suffix>\.[A-Za-z0-9]+)$")


@dataclass(frozen=True)
class Located:
    """Where one tensor lies: its file and, for a safetensors shard, its bytes and layout.

    Small and plain, so that a worker on another machine can be told which tensor to
    read and open it itself.  ``size`` is the file's, so a resumed run can tell a file
    that changed.
    """

    name: str
    file: str
    kind: str  # "safetensors", "npy" or "archive" (.npz, torch.save: read whole, as a view where stored)
    size: int
    dtype: str = ""
    shape: tuple[int, ...] = ()
    begin: int = 0
    end: int = 0


@dataclass
class Problem:
    """One piece of bad input: which file, what is wrong, and which tensors it keeps from being compared."""

    file: str
    message: str
    tensors: list[str] = field(default_factory=list)
    side: str | None = None  # "a" or "b", once known

    def to_dict(self) -> dict[str, object]:
        return {"side": self.side, "file": self.file, "message": self.message, "tensors": list(self.tensors)}


@dataclass
class Scan:
    """What a checkpoint holds: every readable tensor by name, the bad input, and notes."""

    tensors: dict[str, Located]
    problems: list[Problem]
    blocked: dict[str, str]  # tensor name → the problem keeping it from being compared
    notes: list[str] = field(default_factory=list)


def tensor_files(names: Iterable[str]) -> list[str]:
    """The names of files that may hold tensors, or index them, sorted; hidden files left out."""
    keep = []
    for name in names:
        base = name.rsplit("/", 1)[-1]
        if base.startswith("."):
            continue
        if base.endswith(TENSOR_SUFFIXES) or base in INDEX_FILES:
            keep.append(name)
    return sorted(keep)


def scan(names: Iterable[str], open_file: Opener) -> Scan:
    """Locate every tensor of the checkpoint made of the files ``names``.

    With an index file, the shards it names are read and checked against it (a
    safetensors index is preferred when both kinds are present, as ``transformers``
    does); without one, every tensor file is read, and numbered shards
    (``model-00002-of-00003.safetensors``) are checked to be all there.
    """
    present = tensor_files(names)
    problems: list[Problem] = []
    blocked: dict[str, str] = {}
    notes: list[str] = []
    index_name = next((n for n in INDEX_FILES if n in present), None)
    expected: dict[str, list[str]] = {}  # shard → the tensors the index places in it
    if index_name is not None:
        weight_map = _weight_map(index_name, open_file)
        if isinstance(weight_map, Problem):
            problems.append(weight_map)
            shards = [n for n in present if n not in INDEX_FILES]
        else:
            for tensor, shard in weight_map.items():
                expected.setdefault(shard, []).append(tensor)
            shards = sorted(expected)
            ignored = [n for n in present if n not in INDEX_FILES and n not in expected]
            if ignored:
                notes.append(f"{len(ignored)} file(s) not named by {index_name} were not read: {_few(ignored)}")
    else:
        shards = present
        problems += _missing_numbered(shards)

    found: dict[str, list[Located]] = {}
    for shard in shards:
        if shard not in present:
            message = f"{index_name} names the shard {shard}, which is not in the checkpoint"
            problems.append(Problem(shard, message, sorted(expected.get(shard, []))))
            continue
        try:
            located = locate(shard, *open_file(shard))
        except InputError as err:
            problems.append(Problem(shard, err.message, sorted(expected.get(shard, []))))
            continue
        held = {loc.name for loc in located}
        absent = [t for t in expected.get(shard, []) if t not in held]
        if absent:
            message = f"{index_name} places {_few(absent)} in {shard}, which does not hold it"
            problems.append(Problem(shard, message, absent))
        for loc in located:
            found.setdefault(loc.name, []).append(loc)

    for problem in problems:
        for tensor in problem.tensors:
            blocked.setdefault(tensor, f"{problem.file}: {problem.message}")
    tensors: dict[str, Located] = {}
    for name, locs in found.items():
        if len(locs) > 1:
            files = [loc.file for loc in locs]
            message = f"the tensor {name!r} is in {len(files)} files: {', '.join(files)}; keep one of them"
            problems.append(Problem(files[0], message, [name]))
            blocked[name] = message
        elif name not in blocked:
            tensors[name] = locs[0]
    return Scan(tensors, problems, blocked, notes)


def _weight_map(index_name: str, open_file: Opener) -> dict[str, str] | Problem:
    """The ``weight_map`` (tensor → shard file) of an index file, or the problem with it."""
    try:
        read, size = open_file(index_name)
        data = json.loads(bytes(read(0, size)).decode("utf-8"))
    except InputError as err:
        return Problem(index_name, err.message)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return Problem(index_name, f"the index is not valid JSON ({err}); shards were read without it")
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        message = "the index has no weight_map of tensor names to shard files; shards were read without it"
        return Problem(index_name, message)
    return weight_map


def _missing_numbered(files: list[str]) -> list[Problem]:
    """A problem for each shard missing from a numbered series (``-00002-of-00003``)."""
    series: dict[tuple[str, str, str], set[int]] = {}
    for name in files:
        m = _SHARD_OF.match(name)
        if m:
            series.setdefault((m["stem"], m["n"], m["suffix"]), set()).add(int(m["i"]))
    problems = []
    for (stem, n, suffix), have in series.items():
        width = len(n)
        for i in range(1, int(n) + 1):
            if i not in have:
                shard = f"{stem}-{i:0{width}d}-of-{n}{suffix}"
                message = f"the shard {shard} is missing: {len(have)} of the {int(n)} shards are here"
                problems.append(Problem(shard, message))
    return problems


def locate(file: str, read: Reader, size: int) -> list[Located]:
    """The tensors of one file, recognised by its content."""
    if size == 0:
        raise InputError("the file is empty")
    head = bytes(read(0, min(size, 16)))
    if head.startswith(MAGIC):
        source = open_source(read, size, file)
        base = file.rsplit("/", 1)[-1].removesuffix(".npy")
        return [Located(base, file, "npy", size, source.header.format, tuple(source.shape))]
    if head[8:9] == b"{":
        entries, _ = safetensors.index(read, size)
        return [Located(e.name, file, "safetensors", size, e.dtype, e.shape, e.begin, e.end) for e in entries]
    return [
        Located(t.name or file, file, "archive", size, t.format, t.shape) for t in _archive(file, read, size)
    ]


def _archive(file: str, read: Reader, size: int) -> list[Tensor]:
    """The tensors of an ``.npz`` or ``torch.save`` file, as views of its bytes where stored."""
    return read_any(read(0, size), file)


@lru_cache(maxsize=4)
def _archive_by_name(key: tuple[str, int, int], read: Reader, size: int) -> dict[str, Tensor]:
    """An archive's tensors by name, kept for the next tensor asked of the same file (``key``
    is the file's name, size and the reader's identity)."""
    return {t.name or key[0]: t for t in _archive(key[0], read, size)}


@dataclass(frozen=True)
class TensorHeader(NpyHeader):
    """The layout of a tensor inside a file that is not an ``.npy``: told as an ``.npy``
    header so that :class:`~perpendis.stream.Source` reads it chunk by chunk as it reads one."""

    origin: str = ""

    @property
    def source(self) -> str:
        return self.origin


def _header(fmt_name: str, shape: tuple[int, ...], offset: int, origin: str) -> TensorHeader:
    fmt = format_of(fmt_name)
    dtype = np.dtype(fmt.storage).newbyteorder("<") if fmt.native else np.dtype(f"V{fmt.width // 8}")
    order = "none" if dtype.itemsize == 1 or not fmt.native else "little"
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    return TensorHeader("", tuple(shape), False, dtype, order, offset, fmt.name, False, n, (), origin)


def open_tensor(loc: Located, read: Reader, size: int, side: str) -> Source:
    """One located tensor as a source read chunk by chunk through ``read`` (its file's reader)."""
    if size != loc.size:
        message = f"{loc.file} is {size} bytes now, {loc.size} when it was scanned; was it changed?"
        raise InputError(message, where=loc.file)
    if loc.kind == "npy":
        return open_source(read, size, loc.name, side)
    if loc.kind == "safetensors":
        return Source(_header(loc.dtype, loc.shape, loc.begin, safetensors.SOURCE), read, loc.name, side)
    tensor = _archive_by_name((loc.file, size, id(read)), read, size).get(loc.name)
    if tensor is None:
        raise InputError(f"{loc.file} no longer holds the tensor {loc.name!r}", where=loc.file)
    if tensor.array.dtype.kind == "c":
        raise InputError(f"{loc.name!r} is complex, which checkpoints are not compared in", where=loc.file)
    raw = np.ascontiguousarray(tensor.array).reshape(-1).view(np.uint8)
    return Source(_header(tensor.format, tensor.shape, 0, tensor.source), view_reader(raw)[0], loc.name, side)


def _few(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
