"""``torch.save`` files (``.pt``/``.pth``) in the zip format torch writes since 1.6,
read without torch and without running any code from the file.

Such a file is a zip of ``<prefix>/data.pkl``, a pickle describing the saved object,
and ``<prefix>/data/<key>``, the raw bytes of each storage.  The pickle is loaded by an
unpickler whose ``find_class`` knows only the few globals torch uses to rebuild tensors
(``torch._utils._rebuild_tensor_v2``/``_v3``, the storage types, ``_rebuild_parameter``,
the dtypes, ``collections.OrderedDict``; ``_rebuild_qtensor``, the quantized storages and the
qschemes for quantized tensors, read dequantized), each mapped to a function of ours that builds
a NumPy array from the storage bytes; any other global is refused by name, so a
malicious pickle has nothing to call.  Tensors may sit at the top, in (nested)
dicts such as a ``state_dict``, or in lists and tuples; their names join the keys with
dots, as ``state_dict`` keys do.
"""

from __future__ import annotations

import collections
import io
import itertools
import pickle
import struct
from collections.abc import Callable, Iterator
from typing import ClassVar, NamedTuple

import numpy as np

from ...errors import InputError
from ...numerics.bits import FORMATS
from ..tensor import Tensor, from_numpy
from .buffer import BytesLike, as_view
from .limits import PICKLE_MAX_BYTES, PICKLE_MAX_DEPTH, element_count
from .zipview import member_bytes, open_zip

SOURCE = "torch.save (zip)"
WHAT = "torch.save archive"
# A legacy (pre-1.6, or _use_new_zipfile_serialization=False) file starts by pickling this number.
LEGACY_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19."

# torch dtype name → NumPy dtype of one element as stored (complex kept whole).
_ELEMENT = {
    **{name: np.dtype(fmt.storage) for name, fmt in FORMATS.items()},
    "complex64": np.dtype("complex64"),
    "complex128": np.dtype("complex128"),
}
_STORAGE_TYPES = {
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "CharStorage": "int8",
    "ShortStorage": "int16",
    "IntStorage": "int32",
    "LongStorage": "int64",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
    # Quantized tensors' integers (torch.ao.quantization): dequantized when rebuilt.
    "QUInt8Storage": "uint8",
    "QInt8Storage": "int8",
    "QInt32Storage": "int32",
}
_QSCHEMES = ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric")


class _DType(NamedTuple):
    """A torch dtype or storage class named in the pickle; None for an untyped (byte) storage."""

    name: str | None


class _Storage(NamedTuple):
    """One storage's bytes; ``dtype`` is None for an untyped storage, typed by each tensor."""

    raw: memoryview
    dtype: str | None


class _QScheme(NamedTuple):
    """A torch.qscheme named in the pickle (``torch.per_tensor_affine``)."""

    name: str


class _Loaded(NamedTuple):
    """A rebuilt tensor: immutable, so the pickle's BUILD opcode cannot alter it."""

    array: np.ndarray
    dtype: str
    note: str | None = None  # how it was rebuilt, when not as stored (a quantized tensor dequantized)


Loaded = _Loaded


def is_torch_zip(names: list[str]) -> bool:
    """Whether a zip archive's member names are those ``torch.save`` writes."""
    return any(name.endswith("/data.pkl") and name.count("/") == 1 for name in names)


def read(data: BytesLike, name: str | None = None) -> list[Tensor]:
    """Every tensor in the saved object, in the order the pickle holds them."""
    obj, pickle_size = load_object(data)
    found: list[tuple[str | None, _Loaded]] = []
    skipped = _collect(obj, None, found, 0, itertools.count(), max(pickle_size, 1))
    if not found:
        raise InputError("the torch.save file holds no tensors")
    tensors = [_tensor(path if path is not None else name, loaded) for path, loaded in found]
    if skipped:
        tensors[0].notes.append(f"{skipped} non-tensor values in the saved object were skipped")
    return tensors


def load_object(data: BytesLike) -> tuple[object, int]:
    """The saved object, each tensor in it a :class:`Loaded` (see :func:`as_tensor`), and the
    pickle's size in bytes (the most values a walk of it may visit): for readers of
    structures other tools save (``inputs.formats.numeric_suite``), where keys and strings matter."""
    view = as_view(data)
    if bytes(view[: len(LEGACY_MAGIC)]) == LEGACY_MAGIC:
        raise InputError(
            "this is a legacy torch.save file (pre-1.6 format), which Perpendis does not read; "
            "load it in torch and save it again with torch.save (or save_file from safetensors)"
        )
    archive, members = open_zip(view, WHAT)
    by_name = {info.filename: info for info in members}
    pickles = [n for n in by_name if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise InputError("the zip archive is not a torch.save file: it has no single <name>/data.pkl member")
    prefix = pickles[0].removesuffix("data.pkl")
    pkl_info = by_name[pickles[0]]
    if pkl_info.file_size > PICKLE_MAX_BYTES:
        raise InputError(
            f"the torch.save pickle is {pkl_info.file_size} bytes, more than the limit PICKLE_MAX_BYTES = "
            f"{PICKLE_MAX_BYTES}; save a state_dict of tensors instead"
        )
    byteorder = "little"
    if prefix + "byteorder" in by_name:
        byteorder = bytes(member_bytes(archive, view, by_name[prefix + "byteorder"], WHAT)).decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise InputError(f"the torch.save byteorder member says {byteorder!r}, not little or big")

    def storage_bytes(key: str) -> memoryview:
        info = by_name.get(f"{prefix}data/{key}")
        if info is None:
            raise InputError(f"the torch.save archive lacks the storage {key!r} its pickle refers to")
        return member_bytes(archive, view, info, WHAT)

    unpickler = _Unpickler(
        member_bytes(archive, view, pkl_info, WHAT), storage_bytes, "<" if byteorder == "little" else ">"
    )
    try:
        return unpickler.load(), pkl_info.file_size
    except InputError:
        raise
    # The pickle is untrusted; with no callable but ours reachable, any failure of the
    # unpickling machinery (truncation, bad opcodes, wrong arguments) is a broken file.
    except Exception as err:
        raise InputError(f"the torch.save pickle is corrupted ({type(err).__name__}: {err})") from err


class _Unpickler(pickle._Unpickler):
    """An unpickler that can build tensors, dicts and plain Python values, and nothing else.

    It is Python's pure-Python unpickler, not the C one: the C unpickler grows its memo
    table to whatever index a ``PUT`` names, so a 1.5 kB file asking for memo slot 2**31
    costs 16 GiB; this one keeps the memo in a dict.
    """

    def __init__(self, pkl: memoryview, storage_bytes: Callable[[str], memoryview], byte_order: str):
        super().__init__(io.BytesIO(pkl))
        self._pickle_size = len(pkl)
        self._storage_bytes = storage_bytes
        self._byte_order = byte_order
        self._storages: dict[str, _Storage] = {}
        self._swapped: dict[tuple[int, str], np.ndarray] = {}
        self._rebuilders = {
            "_rebuild_tensor_v2": self._rebuild_tensor_v2,
            "_rebuild_tensor_v3": self._rebuild_tensor_v3,
            "_rebuild_parameter": _rebuild_parameter,
            "_rebuild_parameter_with_state": _rebuild_parameter_with_state,
            "_rebuild_qtensor": self._rebuild_qtensor,
        }

    def _load_bytearray8(self) -> None:
        """``BYTEARRAY8``, which allocates the length it declares before reading: a length
        past the pickle's own size is refused, not allocated (a mutated file asked for 10**17)."""
        (length,) = struct.unpack("<Q", self.read(8))
        if length > self._pickle_size:
            raise InputError(
                f"the torch.save pickle is corrupted: a byte array declares {length} bytes, more than the "
                f"{self._pickle_size} bytes of the whole pickle"
            )
        self.append(bytearray(self.read(length)))

    dispatch: ClassVar[dict] = {**pickle._Unpickler.dispatch, pickle.BYTEARRAY8[0]: _load_bytearray8}

    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name in self._rebuilders:
            return self._rebuilders[name]
        if module == "torch" and name in _STORAGE_TYPES:
            return _DType(_STORAGE_TYPES[name])
        if (module, name) == ("torch.storage", "UntypedStorage"):
            return _DType(None)
        if module == "torch" and name in _ELEMENT:
            return _DType(name)
        if module == "torch" and name in _QSCHEMES:
            return _QScheme(name)
        raise InputError(
            f"the torch.save file refers to the Python global {module}.{name}, which Perpendis does not load "
            "(it never runs code from a file); save tensors or a state_dict, not whole modules or objects"
        )

    def persistent_load(self, pid: object) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _DType)):
            raise InputError(f"the torch.save pickle refers to an unknown persistent object {pid!r:.80}")
        _, kind, key, _location, numel = pid
        key = str(key)
        if key not in self._storages:
            itemsize = 1 if kind.name is None else _ELEMENT[kind.name].itemsize
            raw = self._storage_bytes(key)
            # Exactly, as torch.load requires: a storage of another size is a corrupted file.
            if not isinstance(numel, int) or numel * itemsize != len(raw):
                raise InputError(
                    f"torch.save storage {key!r} holds {len(raw)} bytes, not the {numel} elements of {itemsize} "
                    "bytes its pickle declares; the file is corrupted"
                )
            self._storages[key] = _Storage(raw, kind.name)
        return self._storages[key]

    # The rebuild functions take exactly the arguments torch's do: a pickle whose calls were
    # run together by corruption then fails here as it fails in torch.load, rather than
    # building one tensor from the front of the arguments and dropping the rest.
    def _rebuild_tensor_v2(
        self, storage, storage_offset, size, stride, _requires_grad, _backward_hooks, _metadata=None
    ) -> _Loaded:
        dtype = storage.dtype if isinstance(storage, _Storage) else None
        return self._rebuild(storage, storage_offset, size, stride, dtype)

    def _rebuild_tensor_v3(
        self, storage, storage_offset, size, stride, _requires_grad, _backward_hooks, dtype, _metadata=None
    ) -> _Loaded:
        return self._rebuild(storage, storage_offset, size, stride, dtype.name if isinstance(dtype, _DType) else None)

    def _rebuild_qtensor(
        self, storage, storage_offset, size, stride, quantizer_params, _requires_grad, _backward_hooks
    ) -> _Loaded:
        """A quantized tensor (the numeric suite logs an int8 model's outputs so), dequantized to
        float32 as ``Tensor.dequantize`` does: ``(q − zero_point) · scale``, per tensor or per channel."""
        dtype = storage.dtype if isinstance(storage, _Storage) else None
        q = self._rebuild(storage, storage_offset, size, stride, dtype)
        params = quantizer_params if isinstance(quantizer_params, tuple) else ()
        scheme = params[0].name if params and isinstance(params[0], _QScheme) else None
        values = q.array.astype(np.int64)
        # Bit for bit as torch's CPU kernels: per tensor in float32 arithmetic, per channel in float64.
        if scheme in ("per_tensor_affine", "per_tensor_symmetric") and len(params) == 3:
            _, scale, zero = params
            if not isinstance(scale, (int, float)) or not isinstance(zero, int):
                raise InputError("a quantized torch.save tensor has a scale or zero point that is not a number")
            out = (values - zero).astype(np.float32) * np.float32(scale)
        elif scheme in ("per_channel_affine", "per_channel_symmetric") and len(params) == 4:
            _, scales, zeros, axis = params
            if not (isinstance(scales, _Loaded) and isinstance(zeros, _Loaded) and isinstance(axis, int)
                    and 0 <= axis < values.ndim and scales.array.shape == zeros.array.shape == (values.shape[axis],)):
                raise InputError("a per-channel quantized torch.save tensor has scales that do not fit its axis")
            shape = [1] * values.ndim
            shape[axis] = -1
            zero_points = zeros.array.astype(np.int64).reshape(shape)
            out = (values - zero_points) * scales.array.astype(np.float64).reshape(shape)
        else:
            raise InputError(f"a quantized torch.save tensor uses the scheme {scheme or quantizer_params!r:.60}, "
                             "which Perpendis does not read; dequantize it before saving")
        return _Loaded(out.astype(np.float32), "float32", f"dequantized from {q.dtype} ({scheme})")

    def _rebuild(self, storage: object, offset: object, size: object, stride: object, dtype: str | None) -> _Loaded:
        """A tensor as torch would view it: ``size`` elements ``stride`` apart from ``offset``.

        Offset and strides count elements of ``dtype``; every element they reach is
        checked to lie inside the storage before NumPy is asked for the view.
        """
        if not isinstance(storage, _Storage) or dtype is None:
            raise InputError("the torch.save pickle rebuilds a tensor from something that is not a storage")
        count = element_count(size, "a torch.save tensor")
        if not (
            isinstance(offset, int)
            and offset >= 0
            and isinstance(stride, tuple)
            and len(stride) == len(size)
            and all(isinstance(n, int) and n >= 0 for n in stride)
        ):
            raise InputError(f"a torch.save tensor has an invalid offset {offset!r} or strides {stride!r}")
        base = self._native(storage, _ELEMENT[dtype])
        last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if count and last >= base.size:
            raise InputError(
                f"a torch.save tensor of shape {tuple(size)} reaches element {last} of a storage of {base.size}"
            )
        array = np.lib.stride_tricks.as_strided(
            base[min(offset, base.size) :],
            shape=tuple(size),
            strides=tuple(s * base.itemsize for s in stride),
            writeable=False,
        )
        return _Loaded(array, dtype)

    def _native(self, storage: _Storage, element: np.dtype) -> np.ndarray:
        """A storage's elements in native byte order: a view of the file's bytes, or for a
        big-endian file one swapped copy per storage and dtype, made before any view of it
        (swapping a view instead could copy far more than the file: ``expand`` views repeat
        one element 2**31 times)."""
        wire = element.newbyteorder(self._byte_order)
        base = np.frombuffer(storage.raw, dtype=wire, count=len(storage.raw) // wire.itemsize)
        if wire.isnative:
            return base
        key = (id(storage), element.str)
        if key not in self._swapped:
            self._swapped[key] = base.astype(wire.newbyteorder("="))
        return self._swapped[key]


def _rebuild_parameter(data: object, _requires_grad: object, _backward_hooks: object) -> object:
    """A ``Parameter`` is its tensor; gradients and hooks do not matter for comparing."""
    return data


def _rebuild_parameter_with_state(data: object, _requires_grad: object, _backward_hooks: object, _state: object):
    """As :func:`_rebuild_parameter`, for a ``Parameter`` saved with extra state."""
    return data


def _collect(
    obj: object, path: str | None, found: list[tuple[str | None, _Loaded]], depth: int, visits: Iterator[int], most: int
) -> int:
    """Append every tensor under ``obj`` with its dotted path; return how many other values were skipped.

    At most ``most`` values are visited (the caller passes the pickle's size: every value
    a pickle holds costs it at least a byte).  Shared references let a few hundred bytes
    describe 2**40 paths, which would never finish walking.
    """
    if next(visits) > most:
        raise InputError(
            f"the torch.save object refers to its own parts so often that reading it would visit more than {most} "
            "values (a pickle bomb?); save a state_dict of tensors instead"
        )
    if depth > PICKLE_MAX_DEPTH:
        raise InputError(f"the torch.save object nests deeper than the limit PICKLE_MAX_DEPTH = {PICKLE_MAX_DEPTH}")
    if isinstance(obj, _Loaded):
        found.append((path, obj))
        return 0
    if isinstance(obj, dict):
        items = obj.items()
    elif type(obj) in (list, tuple):  # not our own NamedTuples, which are no containers
        items = enumerate(obj)
    else:
        return 1
    return sum(
        _collect(value, str(key) if path is None else f"{path}.{key}", found, depth + 1, visits, most)
        for key, value in items
    )


def _tensor(name: str | None, loaded: _Loaded) -> Tensor:
    fmt = FORMATS.get(loaded.dtype)
    notes = [loaded.note] if loaded.note else None
    if fmt is not None and not fmt.native:
        return Tensor(loaded.array, fmt.name, SOURCE, name=name, notes=notes or [])
    return from_numpy(loaded.array, SOURCE, name=name, notes=notes)


def as_tensor(name: str | None, loaded: Loaded) -> Tensor:
    """A :class:`Loaded` of :func:`load_object` as a Tensor named ``name``."""
    return _tensor(name, loaded)
