"""GGUF files (llama.cpp's format): a strict reader of the header, and the block grids of its quantised types.

A GGUF file is the magic ``GGUF``, a version (2 or 3), the tensor and key-value counts,
the key-values (typed: integers, floats, strings, arrays), then one record per tensor
(name, dimensions fastest-first, type, offset into the data), and the data from the next
multiple of ``general.alignment`` (32 by default). :func:`index` reads only that,
checking every length against the file, so a truncated or hostile header is an
:class:`InputError` naming what is wrong, not a huge allocation.

Unquantised tensors (F32, F16, BF16) are plain little-endian arrays, read chunk by chunk
as a safetensors tensor is. A quantised tensor is blocks of 32 values sharing a scale
``d`` (and for ``_1`` types a minimum ``m``), each value ``d * q + m`` for a small
integer ``q``. :func:`dequantise` gives the values and, for each, its *grid bound*: how
far the value may honestly lie from the original, which is half a step of its block
(``|d| / 2``) plus the rounding of ``d`` itself to float16 (half a float16 ULP of ``d``
times ``|q|``), the original first clipped to the block's range (a Q4_0 block's range is
``-8 d`` to ``7 d``, so its largest value of the other sign is clipped by a whole step);
for ``_1`` types the rounding of ``m`` to float16 too. Float ULPs say nothing here: a
Q4_0 value is off by up to 1/16 of its block's largest magnitude, and that is the
format, not a bug.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from .buffer import Reader
from .limits import MAX_DIMS, element_count

MAGIC = b"GGUF"
SOURCE = "gguf"
MAX_STRING = 1 << 20  # a key, name or string value; llama.cpp's vocabularies are arrays of short strings
MAX_ARRAY = 1 << 24  # elements of one metadata array (a 256 k vocabulary and its scores fit)

RAW = {0: "float32", 1: "float16", 30: "bfloat16", 24: "int8", 25: "int16", 26: "int32", 27: "int64", 28: "float64"}
"""GGML type id → the Perpendis format of an unquantised tensor."""

QUANTISED = {2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0"}
"""GGML type id → the quantised types whose grid :func:`dequantise` knows (blocks of 32)."""

BLOCK_BYTES = {"Q4_0": 18, "Q4_1": 20, "Q5_0": 22, "Q5_1": 24, "Q8_0": 34}
BLOCK = 32
KNOWN_ELSEWHERE = {9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K"}

# Key-value types: (struct code, size) for the fixed-size ones; 8 string, 9 array.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


@dataclass(frozen=True)
class Entry:
    """One tensor of a GGUF file: its name, type, NumPy-order shape and byte range."""

    name: str
    dtype: str  # a Perpendis format ("float32") or a quantised type ("Q8_0")
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def quantised(self) -> bool:
        return self.dtype in BLOCK_BYTES


class _Cursor:
    """Reads the header's fields in order, each checked to lie inside the file."""

    def __init__(self, read: Reader, size: int):
        self.read, self.size, self.at = read, size, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.at + n > self.size:
            raise InputError(f"the GGUF header is cut short in {what} (at byte {self.at} of {self.size})")
        data = bytes(self.read(self.at, n))
        self.at += n
        return data

    def scalar(self, code: str, what: str) -> object:
        return struct.unpack("<" + code, self.take(struct.calcsize(code), what))[0]

    def string(self, what: str) -> str:
        n = int(self.scalar("Q", what))  # type: ignore[call-overload]
        if n > MAX_STRING:
            raise InputError(f"the GGUF header declares a {n}-byte string in {what}, over the {MAX_STRING} cap")
        try:
            return self.take(n, what).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"the GGUF header's {what} is not UTF-8") from None

    def value(self, kind: int, what: str) -> object:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind], what)
        if kind == 8:
            return self.string(what)
        if kind == 9:
            inner, count = int(self.scalar("I", what)), int(self.scalar("Q", what))  # type: ignore[call-overload]
            if count > MAX_ARRAY:
                raise InputError(f"the GGUF header declares {count} values in {what}, over the {MAX_ARRAY} cap")
            if inner in _SCALARS:  # read at once: a vocabulary's scores are 100 k floats
                code = _SCALARS[inner]
                return list(struct.unpack(f"<{count}{code}", self.take(count * struct.calcsize(code), what)))
            return [self.value(inner, what) for _ in range(count)]
        raise InputError(f"the GGUF header gives {what} the unknown value type {kind}")


def index(read: Reader, size: int) -> tuple[list[Entry], dict[str, object]]:
    """The tensors of a GGUF file and its key-values, from the header alone."""
    c = _Cursor(read, size)
    if c.take(4, "the magic") != MAGIC:
        raise InputError("not a GGUF file (no GGUF magic)")
    version = c.scalar("I", "the version")
    if version not in (2, 3):
        raise InputError(f"GGUF version {version} is not read here (versions 2 and 3 are)")
    n_tensors, n_kv = (int(c.scalar("Q", "the counts")) for _ in range(2))  # type: ignore[call-overload]
    if n_tensors > size // 24 or n_kv > size // 12:  # each record takes at least that many bytes
        raise InputError(f"the GGUF header declares {n_tensors} tensors and {n_kv} keys, more than {size} bytes hold")
    meta: dict[str, object] = {}
    for _ in range(n_kv):
        key = c.string("a key")
        meta[key] = c.value(int(c.scalar("I", key)), key)  # type: ignore[call-overload]
    records = []
    for _ in range(n_tensors):
        name = c.string("a tensor name")
        n_dims = int(c.scalar("I", name))  # type: ignore[call-overload]
        if n_dims > MAX_DIMS:
            raise InputError(f"the GGUF tensor {name!r} declares {n_dims} dimensions, over the {MAX_DIMS} cap")
        dims = [int(c.scalar("Q", name)) for _ in range(n_dims)]  # type: ignore[call-overload]
        kind, offset = int(c.scalar("I", name)), int(c.scalar("Q", name))  # type: ignore[call-overload]
        records.append((name, tuple(reversed(dims)), kind, offset))
    alignment = meta.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment < 1 or alignment & (alignment - 1):
        raise InputError(f"the GGUF general.alignment {alignment!r} is not a power of two")
    data = c.at + -c.at % alignment
    entries = [_entry(name, shape, kind, offset, data, size) for name, shape, kind, offset in records]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise InputError("the GGUF file names a tensor twice")
    return entries, meta


def _entry(name: str, shape: tuple[int, ...], kind: int, offset: int, data: int, size: int) -> Entry:
    n = element_count(shape, name)
    if kind in RAW:
        dtype, nbytes = RAW[kind], n * np.dtype(RAW[kind].replace("bfloat16", "uint16")).itemsize
    elif kind in QUANTISED:
        dtype = QUANTISED[kind]
        if n % BLOCK:
            raise InputError(f"the GGUF tensor {name!r} has {n} values, not whole blocks of {BLOCK}")
        nbytes = n // BLOCK * BLOCK_BYTES[dtype]
    else:
        known = KNOWN_ELSEWHERE.get(kind, f"type {kind}")
        raise InputError(
            f"the GGUF tensor {name!r} is {known}, which is not compared here "
            f"(F32, F16, BF16 and {', '.join(BLOCK_BYTES)} are)"
        )
    begin = data + offset
    if offset % 32 or begin + nbytes > size:
        raise InputError(f"the GGUF tensor {name!r} lies at {begin}..{begin + nbytes}, outside the {size}-byte file")
    return Entry(name, dtype, shape, begin, begin + nbytes)


def dequantise(raw: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A quantised tensor's bytes as float32 values, with each value's grid bound and the
    lowest and highest value its block can hold (float32 arrays, one per value).

    Blocks are ``d`` (float16), for ``_1`` types ``m`` (float16), for ``Q5`` the fifth
    bits (32 bits), then the low bits: 4 bits per value (values 0-15 in the low nibbles,
    16-31 in the high), or for Q8_0 one signed byte each.
    """
    blocks = raw.reshape(-1, BLOCK_BYTES[dtype])
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    at = 2
    m = np.zeros_like(d)
    if dtype in ("Q4_1", "Q5_1"):
        m, at = blocks[:, 2:4].copy().view(np.float16).astype(np.float32), 4
    if dtype == "Q8_0":
        q = blocks[:, at:].view(np.int8).astype(np.float32)
        lo, hi = -128.0, 127.0
    else:
        nibbles = blocks[:, at + 4 if dtype.startswith("Q5") else at :]
        q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int32)
        if dtype.startswith("Q5"):
            high = blocks[:, at : at + 4].copy().view("<u4")
            q |= ((high >> np.arange(BLOCK, dtype=np.uint32)) & 1).astype(np.int32) << 4
        top = 31 if dtype.startswith("Q5") else 15
        shift = 0 if dtype.endswith("_1") else (top + 1) // 2
        q = (q - shift).astype(np.float32)
        lo, hi = float(-shift), float(top - shift)
    values = d * q + m if dtype.endswith("_1") else d * q  # no + 0: -0.0 stays as llama.cpp gives it
    bound = np.abs(d) / 2 + _half_ulp16(d) * (np.abs(q) + 1) + _half_ulp16(m)
    ends = np.sort(np.concatenate([d * lo + m, d * hi + m], axis=1), axis=1)
    low, high = (np.broadcast_to(ends[:, k : k + 1], q.shape) for k in (0, 1))
    return (*(x.reshape(-1).astype(np.float32) for x in (values, bound, low, high)),)  # type: ignore[return-value]


def _half_ulp16(x: np.ndarray) -> np.ndarray:
    """Half a float16 ULP at each of ``x`` (float16 values held as float32): how far the
    writer's float32 scale or minimum may be from the float16 one stored."""
    return np.abs(np.spacing(x.astype(np.float16)).astype(np.float32)) / 2
