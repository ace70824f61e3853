"""A partial as bytes, for the workers that fold shares of a comparison elsewhere (the page's
helpers, a checkpoint run's processes, Dask workers), written and read by the encoding each
statistic of :class:`~.partial.Partial` declares.

The bytes are a magic line, the JSON length (8 bytes, little-endian), JSON of the numbers
and of each array's dtype, shape and place, then the arrays' bytes.  Numbers keep every bit
(JSON floats round-trip, sums are exact integers), so merging partials folded by other
workers gives the report folded in one place.  The arrays are read back as views of the
bytes, not copies: no zip, no checksums, since the bytes only ever pass between this
project's own workers.  Each array is written once, straight into place: a helper's error
sample is some 16 MB, and each further copy of it cost the browser 3-5 ms while the core's
worker waited.

The JSON lists the statistics by encoding (numbers, picks, exact sums, samples, then the
count of per-axis arrays) and the arrays likewise (the histogram, the per-axis counts, the
samples' groups), each in declaration order: the layout the format had before the
statistics were declarations, kept byte for byte.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import Field
from typing import Any

import numpy as np

from ...inputs.formats.buffer import BytesLike, as_view
from .exact import ExactSum
from .partial import STATS, Partial, Pick
from .reservoir import Sample

PARTIAL_MAGIC = b"PERPENDIS-PARTIAL-1\n"

META_ORDER = ("number", "pick", "exact", "sample", "arrays")
"""The encodings in the order their JSON is written."""
ARRAY_ORDER = ("array", "arrays", "sample")
"""The encodings in the order their arrays are written."""


def _name(f: Field) -> str:
    return f.metadata.get("name", f.name)


def _meta(f: Field, value: Any) -> dict[str, Any]:
    """The JSON entries of one statistic."""
    encoding = f.metadata["rule"].encoding
    if encoding in ("number", "pick"):
        return {_name(f): value}
    if encoding == "exact":
        return {_name(f): [value.scaled, value.special]}
    if encoding == "sample":
        return {_name(f): [value.count, value.cap, value.bound, len(value.groups)]}
    if encoding == "arrays":
        return {f.metadata["count"]: len(value)}
    return {}


def _arrays(f: Field, value: Any) -> dict[str, np.ndarray]:
    """The arrays of one statistic, by their names in the bytes."""
    encoding = f.metadata["rule"].encoding
    if encoding == "array":
        return {_name(f): value}
    groups = value.groups if encoding == "sample" else value if encoding == "arrays" else []
    return {f"{_name(f)}_{i}": rows for i, rows in enumerate(groups)}


def _read(f: Field, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """One statistic back from the JSON and the arrays."""
    encoding, name = f.metadata["rule"].encoding, _name(f)
    if encoding == "number":
        return meta[name]
    if encoding == "pick":
        return None if meta[name] is None else Pick(*meta[name])
    if encoding == "exact":
        return ExactSum(*meta[name])
    if encoding == "array":
        return arrays[name]
    if encoding == "arrays":
        return [arrays[f"{name}_{i}"] for i in range(meta[f.metadata["count"]])]
    count, cap, bound, n_groups = meta[name]
    return Sample(count, [arrays[f"{name}_{i}"] for i in range(n_groups)], cap, bound)


def _each(order: tuple[str, ...], entries: Callable[[Field, Any], dict], p: Partial) -> dict:
    """``entries`` of every statistic, encodings in ``order``, declarations in order within each."""
    out: dict = {}
    for encoding in order:
        for f in STATS:
            if f.metadata["rule"].encoding == encoding:
                out |= entries(f, getattr(p, f.name))
    return out


def partial_to_bytes(p: Partial) -> np.ndarray:
    """A partial as bytes (a uint8 array), as the module says."""
    meta, arrays = _each(META_ORDER, _meta, p), _each(ARRAY_ORDER, _arrays, p)
    places, offset = {}, 0
    for name, array in arrays.items():
        places[name] = [array.dtype.str, list(array.shape), offset]
        offset += -(-array.nbytes // 8) * 8
    header = json.dumps({"meta": meta, "arrays": places}).encode()
    head = PARTIAL_MAGIC + len(header).to_bytes(8, "little") + header
    start = len(head) + -len(head) % 8
    out = np.zeros(start + offset, dtype=np.uint8)
    out[: len(head)] = np.frombuffer(head, dtype=np.uint8)
    for name, array in arrays.items():
        at = start + places[name][2]
        out[at : at + array.nbytes].view(array.dtype).reshape(array.shape)[...] = array
    return out


def partial_from_bytes(data: BytesLike) -> Partial:
    """The partial :func:`partial_to_bytes` wrote (in this project's own workers)."""
    view = as_view(data)
    if bytes(view[: len(PARTIAL_MAGIC)]) != PARTIAL_MAGIC:
        raise ValueError("not a partial result written by perpendis.engine.fold.codec.partial_to_bytes")
    length = int.from_bytes(view[len(PARTIAL_MAGIC) : len(PARTIAL_MAGIC) + 8], "little")
    head_end = len(PARTIAL_MAGIC) + 8 + length
    header = json.loads(bytes(view[len(PARTIAL_MAGIC) + 8 : head_end]))
    start = head_end + (-head_end % 8)
    arrays = {}
    for name, (dtype, shape, offset) in header["arrays"].items():
        count = math.prod(shape)
        arrays[name] = np.frombuffer(view, dtype=np.dtype(dtype), count=count, offset=start + offset).reshape(shape)
    return Partial(**{f.name: _read(f, header["meta"], arrays) for f in STATS})
