"""``.safetensors`` files: an 8-byte little-endian header length, a JSON header, the data.

The header maps each tensor name to its dtype, shape and ``[begin, end)`` byte range in
the data that follows.  It is validated as strictly as the reference implementation
does (ranges in bounds, covering the data exactly with no overlap or gap, sizes that
match the shapes), because a file failing those checks is corrupted, and reading it
anyway would compare garbage.

safetensors keeps no insertion order (writers sort tensors by name), yet bisecting layer
captures needs execution order.  A capture script can record it as a JSON list of names
under the metadata key ``order`` (``save_file(..., metadata={"order": json.dumps(names)})``);
when that list names every tensor exactly once it gives the order, otherwise tensors come
in the order of their data and a note says the saving order is unknown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ...numerics.bits import format_of
from ..tensor import Tensor
from .buffer import BytesLike, Reader, as_view, view_reader
from .limits import SAFETENSORS_MAX_HEADER_BYTES, element_count

SOURCE = "safetensors"

# safetensors dtype → Perpendis format (all stored little-endian).
DTYPES = {
    "F16": "float16",
    "BF16": "bfloat16",
    "F32": "float32",
    "F64": "float64",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "I8": "int8",
    "I16": "int16",
    "I32": "int32",
    "I64": "int64",
    "U8": "uint8",
    "U16": "uint16",
    "U32": "uint32",
    "U64": "uint64",
    "BOOL": "bool",
}


def header_length(view: memoryview, size: int | None = None) -> int | None:
    """The declared JSON header length when ``view`` starts like a safetensors file (of
    ``size`` bytes, when ``view`` is only its first bytes), else None."""
    if len(view) < 9:
        return None
    length = int.from_bytes(view[:8], "little")
    if length < 2 or 8 + length > max(len(view), size or 0) or view[8] != ord("{"):
        return None
    return length


@dataclass(frozen=True)
class Entry:
    """Where one tensor of a safetensors file lies: ``begin``/``end`` are absolute byte
    offsets in the file, so it can be read through a reader without the rest."""

    name: str
    dtype: str  # the Perpendis format name
    shape: tuple[int, ...]
    begin: int
    end: int


def index(read: Reader, size: int) -> tuple[list[Entry], dict]:
    """The tensors of a safetensors file of ``size`` bytes, in the order of their data, and its
    metadata, from its header alone: a shard of gigabytes is checked by reading kilobytes.

    The checks are :func:`read`'s: a header that is not JSON, ranges that overlap, leave
    gaps or do not cover the data exactly (a truncated file) are refused.
    """
    if size < 8:
        raise InputError("the safetensors file is truncated: it is shorter than its 8-byte header length")
    length = int.from_bytes(bytes(read(0, 8)), "little")
    if length > SAFETENSORS_MAX_HEADER_BYTES:
        raise InputError(
            f"the safetensors header declares {length} bytes, more than the limit "
            f"SAFETENSORS_MAX_HEADER_BYTES = {SAFETENSORS_MAX_HEADER_BYTES}"
        )
    if 8 + length > size:
        raise InputError(f"the safetensors file is truncated: its header declares {length} bytes, the file is shorter")
    entries, metadata = _header(bytes(read(8, length)))
    payload = size - 8 - length
    spans = sorted((_span(key, entry), key) for key, entry in entries.items())
    expected = 0
    for (begin, end), key in spans:
        if begin != expected:
            problem = "overlaps the previous tensor" if begin < expected else "leaves a gap before it"
            raise InputError(f"safetensors tensor {key!r} {problem} (its data starts at {begin}, expected {expected})")
        expected = end
    if expected != payload:
        raise InputError(
            f"the safetensors header describes {expected} bytes of tensor data but the file holds {payload}"
            + ("; the file is truncated" if expected > payload else "")
        )
    base = 8 + length
    located = [
        Entry(key, DTYPES[entries[key]["dtype"]], tuple(entries[key]["shape"]), base + begin, base + end)
        for (begin, end), key in spans
    ]
    return located, metadata


def read(data: BytesLike) -> list[Tensor]:
    """Every tensor in the file, in the order of their data."""
    view = as_view(data)
    located, metadata = index(*view_reader(view))
    by_name = {e.name: e for e in located}
    order = _saved_order(metadata, by_name)
    note = (
        "tensors are in the capture order recorded in the file's metadata 'order'"
        if order
        else "safetensors does not record the order tensors were saved in: they are in the order of their data"
    )
    tensors = [_tensor(by_name[key], view[by_name[key].begin : by_name[key].end]) for key in order or list(by_name)]
    if tensors:
        tensors[0].notes.append(note)
    return tensors


def metadata(data: BytesLike) -> dict[str, str]:
    """The header's ``__metadata__`` (string → string), or ``{}`` when the bytes are not safetensors."""
    view = as_view(data)
    length = header_length(view)
    if length is None or length > SAFETENSORS_MAX_HEADER_BYTES:
        return {}
    try:
        _, meta = _header(bytes(view[8 : 8 + length]))
    except InputError:
        return {}
    return {k: v for k, v in meta.items() if isinstance(k, str) and isinstance(v, str)}


def records_order(data: BytesLike) -> bool:
    """Whether the bytes (a safetensors file, or at least its header) give their tensors' saving
    order: true unless they are safetensors whose metadata ``order`` is missing or names other
    tensors.  Bytes of another format are not judged here (true): their reader keeps their order."""
    view = as_view(data)
    length = header_length(view)
    if length is None or length > SAFETENSORS_MAX_HEADER_BYTES:
        return True
    try:
        entries, meta = _header(bytes(view[8 : 8 + length]))
    except InputError:
        return True  # a broken header is the reader's to refuse, with its reason
    return _saved_order(meta, entries) is not None


# Metadata keys a capture script writes its tensors' order under: Perpendis' own, and the
# name forward-hook scripts use for the hooks' firing order.
ORDER_KEYS = ("order", "execution_order")


def _saved_order(metadata: dict, entries: dict) -> list[str] | None:
    """The tensors' order from metadata ``order`` (or ``execution_order``): a JSON list of
    names, each once, naming every tensor (and maybe modules that saved none, left out)."""
    for key in ORDER_KEYS:
        try:
            order = json.loads(metadata.get(key, "null"))
        except (TypeError, json.JSONDecodeError):
            continue
        if (isinstance(order, list) and all(isinstance(n, str) for n in order) and len(set(order)) == len(order)
                and set(entries) <= set(order)):
            return [n for n in order if n in entries]
    return None


def _header(text: bytes) -> tuple[dict[str, dict], dict]:
    def no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise InputError("the safetensors header names a tensor twice")
        return dict(pairs)

    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise InputError(f"the safetensors header is not valid JSON ({err}); the file is corrupted") from err
    if not isinstance(header, dict):
        raise InputError("the safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if not isinstance(metadata, dict):
        metadata = {}
    for key, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise InputError(f"safetensors entry {key!r} does not have exactly dtype, shape and data_offsets")
        if not isinstance(entry["dtype"], str) or entry["dtype"] not in DTYPES:
            raise InputError(
                f"safetensors tensor {key!r} has dtype {entry['dtype']!r}, which Perpendis does not compare; "
                f"it reads {', '.join(DTYPES)}"
            )
    return header, metadata


def _span(key: str, entry: dict) -> tuple[int, int]:
    offsets = entry["data_offsets"]
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in offsets)
        and offsets[0] <= offsets[1]
    ):
        raise InputError(f"safetensors tensor {key!r} has invalid data_offsets {offsets!r}")
    count = element_count(entry["shape"], f"safetensors tensor {key!r}")
    size = count * format_of(DTYPES[entry["dtype"]]).width // 8
    if offsets[1] - offsets[0] != size:
        raise InputError(
            f"safetensors tensor {key!r} spans {offsets[1] - offsets[0]} bytes but its shape "
            f"{entry['shape']} of {entry['dtype']} needs {size}"
        )
    return offsets[0], offsets[1]


def _tensor(entry: Entry, raw: memoryview) -> Tensor:
    fmt = format_of(entry.dtype)
    array = np.frombuffer(raw, dtype=np.dtype(fmt.storage).newbyteorder("<"))
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return Tensor(array.reshape(entry.shape), fmt.name, SOURCE, name=entry.name)
