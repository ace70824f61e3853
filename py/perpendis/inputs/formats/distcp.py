"""PyTorch distributed checkpoints (``torch.distributed.checkpoint``): where each tensor lies, read safely.

``torch.distributed.checkpoint.save`` writes a folder: ``.metadata`` (a pickled
``Metadata``: each tensor's dtype, size and chunks, and where each chunk's bytes are,
as a file name, offset and length) and ``__<rank>_<n>.distcp`` files holding each chunk
as a ``torch.save`` of that chunk, one after another.  A single process saves without a
process group (torch warns and writes rank 0's files), and every tensor is then one
chunk.

A pickle can run anything, so ``.metadata`` is read by :class:`_Restricted`, which
admits only the classes a checkpoint's metadata is made of (torch's checkpoint
metadata classes, ``torch.Size``, torch dtypes and layouts, paths), each rebuilt as a
plain record here: torch is not needed, and a ``.metadata`` naming anything else is
refused, naming it.  Each chunk is then read by this project's own ``torch.save``
reader (:mod:`.torchsave`), which unpickles nothing it does not know either.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from typing import Any

from ...errors import InputError
from .buffer import BytesLike, as_view
from .limits import PICKLE_MAX_BYTES

METADATA = ".metadata"
SUFFIX = ".distcp"

_META = "torch.distributed.checkpoint.metadata"
_RECORDS = {
    (_META, "Metadata"),
    (_META, "TensorStorageMetadata"),
    (_META, "TensorProperties"),
    (_META, "ChunkStorageMetadata"),
    (_META, "MetadataIndex"),
    (_META, "BytesStorageMetadata"),
    (_META, "StorageMeta"),
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
}
_DTYPES = {
    "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
    "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64", "complex64", "complex128",
}  # fmt: skip
_LAYOUTS = {"strided", "sparse_coo", "sparse_csr", "contiguous_format", "channels_last", "preserve_format"}


class _Record:
    """A metadata object rebuilt as plain attributes (a dataclass's fields, or the state it pickled)."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[0], dict | None):
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self.__dict__["state"] = state

    def __reduce__(self) -> Any:  # never pickled again
        raise TypeError("a checkpoint metadata record is not pickled")


def _record(name: str) -> type:
    return type(name, (_Record,), {})


_CLASSES = {key: _record(key[1]) for key in _RECORDS}


def _size(*args: Any) -> tuple[int, ...]:
    return tuple(args[0]) if args else ()


def _joined(*parts: Any) -> str:
    return "/".join(str(p) for p in parts)


class _Restricted(pickle.Unpickler):
    """Unpickles a ``.metadata``, admitting only what a checkpoint's metadata is made of."""

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in _RECORDS:
            return _CLASSES[key]
        if key == (_META, "_MEM_FORMAT_ENCODING"):
            return lambda value: value
        if module == "torch" and name == "Size":
            return _size
        if module == "torch" and (name in _DTYPES or name in _LAYOUTS):
            return name
        if key == ("torch.serialization", "_get_layout"):
            return lambda text: str(text).rsplit(".", 1)[-1]
        if module == "pathlib" and name in ("PosixPath", "WindowsPath", "PurePosixPath", "PureWindowsPath", "Path"):
            return _joined
        if key == ("collections", "OrderedDict"):
            return dict
        raise InputError(
            f"{METADATA} names {module}.{name}, which is not part of a torch.distributed.checkpoint's metadata: "
            "it was not unpickled"
        )


@dataclass(frozen=True)
class Entry:
    """One tensor of a distributed checkpoint: its dtype, shape and the ``torch.save`` bytes of it."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str
    begin: int
    end: int


@dataclass
class Layout:
    """A checkpoint's tensors, what it holds that is not a tensor, and the tensors it cannot give whole."""

    entries: list[Entry]
    not_tensors: list[str]
    unreadable: dict[str, str]  # name → why


def check_metadata(head: BytesLike, size: int) -> None:
    """Refuse a ``.metadata`` from its size and first bytes, before it is read: over the pickle
    cap, or not a pickle of protocol 2 or later (``torch.save`` writes 2, ``pickle`` 4-5)."""
    if size > PICKLE_MAX_BYTES:
        raise InputError(f"{METADATA} is {size} bytes, over the {PICKLE_MAX_BYTES}-byte cap on pickles")
    view = as_view(head)
    if len(view) < 2 or view[0] != 0x80 or not 2 <= view[1] <= pickle.HIGHEST_PROTOCOL:
        raise InputError(f"{METADATA} is not a torch.distributed.checkpoint metadata pickle: it does not start as one")


def read_metadata(data: bytes) -> Layout:
    """Where each tensor of a distributed checkpoint lies, from its ``.metadata`` bytes."""
    if len(data) > PICKLE_MAX_BYTES:
        raise InputError(f"{METADATA} is {len(data)} bytes, over the {PICKLE_MAX_BYTES}-byte cap on pickles")
    try:
        meta = _Restricted(io.BytesIO(data)).load()
    except InputError:
        raise
    except Exception as err:  # a broken pickle raises anything: say what, never a traceback
        raise InputError(f"{METADATA} is not a readable torch.distributed.checkpoint metadata pickle ({err})") from None
    tensors = getattr(meta, "state_dict_metadata", None)
    storage = getattr(meta, "storage_data", None)
    if not isinstance(tensors, dict) or not isinstance(storage, dict):
        raise InputError(f"{METADATA} holds no state_dict_metadata and storage_data: not a distributed checkpoint")
    where = {(getattr(k, "fqn", None), _offsets(getattr(k, "offset", None))): v for k, v in storage.items()}
    layout = Layout([], [], {})
    for name, item in tensors.items():
        if type(item).__name__ != "TensorStorageMetadata":
            layout.not_tensors.append(str(name))
            continue
        try:
            layout.entries.append(_entry(str(name), item, where))
        except InputError as err:
            layout.unreadable[str(name)] = err.message
    return layout


def _offsets(offset: Any) -> tuple[int, ...] | None:
    return None if offset is None else tuple(int(x) for x in offset)


def _entry(name: str, item: Any, where: dict[tuple[Any, Any], Any]) -> Entry:
    properties = getattr(item, "properties", None)
    dtype = getattr(properties, "dtype", None)
    if dtype is None and isinstance(getattr(properties, "state", None), tuple):
        dtype = properties.state[0]  # type: ignore[union-attr]
    shape = tuple(int(x) for x in getattr(item, "size", ()))
    chunks = list(getattr(item, "chunks", []))
    if dtype not in _DTYPES:
        raise InputError(f"its dtype {dtype!r} is not one read here")
    if len(chunks) != 1 or tuple(int(x) for x in getattr(chunks[0], "sizes", ())) != shape:
        raise InputError(f"it is saved in {len(chunks)} chunks (a save by several ranks); only whole tensors are read")
    info = where.get((name, _offsets(getattr(chunks[0], "offsets", None))))
    if info is None:
        raise InputError("the metadata gives no file for it")
    if getattr(info, "transform_descriptors", None):
        raise InputError(f"it is stored with transforms ({info.transform_descriptors}), which are not read here")
    file, offset, length = (getattr(info, key, None) for key in ("relative_path", "offset", "length"))
    if not (isinstance(file, str) and isinstance(offset, int) and isinstance(length, int) and min(offset, length) >= 0):
        raise InputError("the metadata gives no valid place (file, offset, length) for it")
    return Entry(name, dtype, shape, file, offset, offset + length)
