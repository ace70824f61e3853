"""A checkpoint as files: which tensors it holds, in which file and where, and what is wrong with it.

A checkpoint is a set of files named by their path inside it (a folder on disk, or the
files of a folder the page was given), each read through a reader (:data:`Opener`):
safetensors shards with ``model.safetensors.index.json``, ``torch.save`` shards with
``pytorch_model.bin.index.json``, or any mix of ``.safetensors``, ``.npz``, ``.npy``
and ``torch.save`` files without an index.  :func:`scan` reads only what locates each
tensor (a safetensors header, an ``.npy`` header, an archive's directory and pickle)
and :func:`open_tensor` gives one tensor as a :class:`~perpendis.engine.stream.Source`, read
chunk by chunk when it is compared.

Bad input is collected, not raised: a missing shard, an index naming a file that is
not there, a truncated or corrupted shard, a tensor name in two shards are each a
:class:`Problem` naming the file, and the tensors they concern cannot be compared,
while every other tensor still is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np

from ..engine.stream import Source, open_source
from ..errors import InputError
from ..inputs.formats import distcp, gguf, safetensors
from ..inputs.formats import read as read_any
from ..inputs.formats.buffer import Reader, view_reader
from ..inputs.formats.npy import MAGIC, NpyHeader
from ..inputs.tensor import Tensor
from ..numerics.bits import format_of
from .rotary import permuted_heads, unpermute
from .scanned import Located, Opener, Problem, Scan

INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
TENSOR_SUFFIXES = (".safetensors", ".npy", ".npz", ".bin", ".pt", ".pth", ".gguf")
RANGED = ("safetensors", "gguf", "distcp")
"""Kinds of :class:`Located` whose ``begin``/``end`` are the tensor's own bytes (else the whole file is read)."""
_SHARD_OF = re.compile(r"^(?P<stem>.*?)-(?P<i>\d+)-of-(?P<n>\d+)(?P<suffix>\.[A-Za-z0-9]+)$")


def tensor_files(names: Iterable[str]) -> list[str]:
    """The names of files that may hold tensors, or index them, sorted; hidden files left out."""
    keep = []
    for name in names:
        base = name.rsplit("/", 1)[-1]
        if name == distcp.METADATA:  # a torch.distributed.checkpoint folder's index
            keep.append(name)
            continue
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
    if distcp.METADATA in present:
        return _scan_distcp(set(names), present, open_file)
    problems: list[Problem] = []
    notes: list[str] = []
    index_name = next((n for n in INDEX_FILES if n in present), None)
    expected: dict[str, list[str]] = {}  # shard → the tensors the index places in it
    if index_name is not None:
        shards = _indexed_shards(index_name, present, open_file, expected, problems, notes)
    else:
        shards = present
        problems += _missing_numbered(shards)
    found = _locate_shards(shards, present, index_name, expected, open_file, problems)
    blocked: dict[str, str] = {}
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
    notes += _permuted_note(tensors.values())
    return Scan(tensors, problems, blocked, notes)


def _indexed_shards(index_name: str, present: list[str], open_file: Opener, expected: dict[str, list[str]],
                    problems: list[Problem], notes: list[str]) -> list[str]:
    """The shards an index names (each one's tensors into ``expected``); every file but the
    index when it cannot be read."""
    weight_map = _weight_map(index_name, open_file)
    if isinstance(weight_map, Problem):
        problems.append(weight_map)
        return [n for n in present if n not in INDEX_FILES]
    for tensor, shard in weight_map.items():
        expected.setdefault(shard, []).append(tensor)
    ignored = [n for n in present if n not in INDEX_FILES and n not in expected]
    if ignored:
        notes.append(f"{len(ignored)} file(s) not named by {index_name} were not read: {_few(ignored)}")
    return sorted(expected)


def _locate_shards(shards: list[str], present: list[str], index_name: str | None, expected: dict[str, list[str]],
                   open_file: Opener, problems: list[Problem]) -> dict[str, list[Located]]:
    """Each tensor name → where the shards hold it; a shard missing, unreadable or short of
    what the index places in it is a problem."""
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
    return found


def _permuted_note(located: Iterable[Located]) -> list[str]:
    """Say plainly which tensors were read in another row order than they are stored in."""
    permuted = sorted((loc.name, loc.heads) for loc in located if loc.heads)
    if not permuted:
        return []
    heads = ", ".join(sorted({f"{h} heads" for _, h in permuted}))
    return [
        f"{len(permuted)} GGUF attn_q/attn_k weights ({_few([n for n, _ in permuted], 2)}) are stored with each "
        f"head's rows permuted for llama.cpp's rotary layout (convert_hf_to_gguf.py's permute, {heads}): "
        "they were put back in Hugging Face's order before pairing"
    ]


def _scan_distcp(names: set[str], present: list[str], open_file: Opener) -> Scan:
    """A ``torch.distributed.checkpoint`` folder: its tensors located by ``.metadata``, each
    checked to lie inside its ``.distcp`` file."""
    meta = distcp.METADATA
    try:
        read, size = open_file(meta)
        distcp.check_metadata(read(0, min(size, 16)), size)  # refused by size and magic, before it is read
        layout = distcp.read_metadata(bytes(read(0, size)))
    except InputError as err:
        problem = Problem(meta, err.message)
        return Scan({}, [problem], {}, [])
    problems = [Problem(meta, f"{name} cannot be read: {why}", [name]) for name, why in layout.unreadable.items()]
    sizes: dict[str, int | str] = {}
    for file in sorted({e.file for e in layout.entries}):
        if file not in names:
            sizes[file] = f"{meta} names {file}, which is not in the checkpoint"
            continue
        try:
            sizes[file] = open_file(file)[1]
        except InputError as err:
            sizes[file] = err.message
    tensors: dict[str, Located] = {}
    lost: dict[str, list[str]] = {}
    for e in layout.entries:
        size = sizes[e.file]
        if isinstance(size, str) or e.end > size:
            lost.setdefault(e.file, []).append(e.name)
        else:
            tensors[e.name] = Located(e.name, e.file, "distcp", size, e.dtype, e.shape, e.begin, e.end)
    for file, names_lost in lost.items():
        size = sizes[file]
        message = size if isinstance(size, str) else f"{file} is cut short: {meta} places tensors past its {size} bytes"
        problems.append(Problem(file, message, sorted(names_lost)))
    blocked = {t: f"{p.file}: {p.message}" for p in problems for t in p.tensors}
    notes = []
    if layout.not_tensors:
        notes.append(
            f"{len(layout.not_tensors)} entries that are not tensors were not compared: {_few(layout.not_tensors)}"
        )
    others = [n for n in present if n != meta]
    if others:
        notes.append(f"{len(others)} tensor file(s) beside the distributed checkpoint were not read: {_few(others)}")
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
    if head.startswith(gguf.MAGIC):
        entries, meta = gguf.index(read, size)
        return [
            Located(e.name, file, "gguf", size, e.dtype, e.shape, e.begin, e.end, permuted_heads(e.name, meta))
            for e in entries
        ]
    if head[8:9] == b"{":
        entries, _ = safetensors.index(read, size)
        return [Located(e.name, file, "safetensors", size, e.dtype, e.shape, e.begin, e.end) for e in entries]
    return [Located(t.name or file, file, "archive", size, t.format, t.shape) for t in _archive(file, read, size)]


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
    header so that :class:`~perpendis.engine.stream.Source` reads it chunk by chunk as it reads one."""

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
        raise InputError(message, where=loc.file, side=side)
    if loc.kind == "npy":
        return open_source(read, size, loc.name, side)
    if loc.kind == "safetensors":
        return Source(_header(loc.dtype, loc.shape, loc.begin, safetensors.SOURCE), read, loc.name, side)
    if loc.kind == "gguf":
        return _gguf_source(loc, read, side)
    if loc.kind == "distcp":
        return _whole(_chunk(loc, read), loc, side)
    tensor = _archive_by_name((loc.file, size, id(read)), read, size).get(loc.name)
    return _whole(tensor, loc, side)


def _chunk(loc: Located, read: Reader) -> Tensor:
    """A distributed checkpoint's tensor: the ``torch.save`` of it at its place in the ``.distcp`` file."""
    found = read_any(read(loc.begin, loc.end - loc.begin), loc.file)
    if len(found) != 1 or found[0].shape != loc.shape or found[0].format != loc.dtype:
        got = ", ".join(f"{t.format} {list(t.shape)}" for t in found) or "nothing"
        message = f"{loc.file} holds {got} where .metadata places {loc.name!r} ({loc.dtype} {list(loc.shape)})"
        raise InputError(message, where=loc.file)
    return found[0]


def _whole(tensor: Tensor | None, loc: Located, side: str) -> Source:
    """A tensor read whole (from an archive, or a distributed checkpoint's chunk) as a source over its bytes."""
    if tensor is None:
        raise InputError(f"{loc.file} no longer holds the tensor {loc.name!r}", where=loc.file)
    if tensor.array.dtype.kind == "c":
        raise InputError(f"{loc.name!r} is complex, which checkpoints are not compared in", where=loc.file)
    raw = np.ascontiguousarray(tensor.array).reshape(-1).view(np.uint8)
    return Source(_header(tensor.format, tensor.shape, 0, tensor.source), view_reader(raw)[0], loc.name, side)


def _gguf_source(loc: Located, read: Reader, side: str) -> Source:
    """A GGUF tensor: unquantised and in place, read chunk by chunk; else read whole, and
    dequantised (its grid bounds kept in the header, :class:`GridHeader`) or its rows put
    back in Hugging Face's rotary order."""
    if loc.dtype not in gguf.BLOCK_BYTES and not loc.heads:
        return Source(_header(loc.dtype, loc.shape, loc.begin, gguf.SOURCE), read, loc.name, side)
    raw = np.frombuffer(bytes(read(loc.begin, loc.end - loc.begin)), dtype=np.uint8)
    grid: tuple[np.ndarray, ...] = ()
    if loc.dtype in gguf.BLOCK_BYTES:
        grid = gguf.dequantise(raw, loc.dtype)
        values, fmt = grid[0], "float32"
    else:
        fmt = loc.dtype
        values = raw.view(_header(fmt, loc.shape, 0, "").dtype)
    if loc.heads:
        grid = tuple(unpermute(x.reshape(loc.shape), loc.heads).reshape(-1) for x in grid)
        values = unpermute(values.reshape(loc.shape), loc.heads).reshape(-1)
    raw = np.ascontiguousarray(values).view(np.uint8)
    header = GridHeader(*astuple_header(_header(fmt, loc.shape, 0, f"{gguf.SOURCE} {loc.dtype}")), grid, loc.dtype)
    return Source(header, view_reader(raw)[0], loc.name, side)


@dataclass(frozen=True, eq=False)
class GridHeader(TensorHeader):
    """A dequantised tensor's header: besides its float32 values, each value's grid bound
    and its block's range (:func:`perpendis.inputs.formats.gguf.dequantise`), and the type."""

    grid: tuple[np.ndarray, ...] = ()
    quant: str = ""


def astuple_header(h: TensorHeader) -> tuple[object, ...]:
    """A header's fields in order, to build a subclass's from it."""
    return tuple(getattr(h, f.name) for f in fields(h))


def _few(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
