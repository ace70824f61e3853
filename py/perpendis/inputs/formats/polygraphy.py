"""Polygraphy JSON files: ``polygraphy run --save-outputs`` (``RunResults``) and
``--save-inputs`` (a list of feed dicts).

Polygraphy marks each object it encodes with its class, ``{"polygraphy_class":
"RunResults", "lst": [[runner_name, [IterationResult, ...]], ...]}``, and stores each
array as a base64 ``.npy`` file (``{"polygraphy_class": "ndarray", "array": ...}``),
possibly wrapped in a ``LazyArray``, or a torch tensor as a base64 ``torch.save`` file.
Older versions mark classes with a ``"__polygraphy_encoded_<Class>"`` key instead.  One
file can hold several runners and iterations; every output of every one becomes a
tensor named after the output, with the runner and iteration in its ``source``, and
:func:`list_results` lets a caller show what is there to pick from.

Such a file can be hundreds of megabytes of base64, so it is never parsed whole: the
JSON is scanned a window at a time (:mod:`.jsonscan`) into an index of its arrays,
each with the byte span of its payload (:func:`index`), and an array is decoded only
when asked for (:func:`decode`).  :func:`read` is that over bytes in memory; a caller
with a file too big to hold reads it through a ``read(offset, length)`` function.
"""

from __future__ import annotations

import binascii
import re
from typing import NamedTuple

from ...errors import InputError
from ..tensor import Tensor
from . import npy, npz, torchsave
from .buffer import BytesLike, Reader, view_reader
from .jsonscan import Span, parse, span_bytes, span_text

CLASS_MARKER = "polygraphy_class"
LEGACY_PREFIX = "__polygraphy_encoded_"
# The keys whose string values are payloads, by the class of the object holding them.
PAYLOAD_KEYS = {"ndarray": "array", "Tensor": "tensor"}
HEAD_BYTES = 4096
"""How much of a file's start :func:`looks_like_polygraphy` looks at."""
# An encoded array's payload key then its string: Polygraphy writes the class marker
# after the payload, so in a big file the first marker lies beyond any head.
_PAYLOAD_START = re.compile(rb'"(?:array|tensor)"\s*:\s*"')


class Result(NamedTuple):
    """One array in a Polygraphy file: who produced it, its name, and where its payload is."""

    runner: str | None  # None for saved inputs, which no runner produced
    iteration: int
    name: str
    payload: Span
    torch: bool  # a base64 torch.save file, else a base64 .npy (or, in old files, .npz)


def looks_like_polygraphy(view: memoryview) -> bool:
    """Whether ``view`` is JSON that carries Polygraphy's class markers or encoded arrays."""
    head = bytes(view[:HEAD_BYTES]).lstrip()
    return head[:1] in (b"{", b"[") and (
        CLASS_MARKER.encode() in head or LEGACY_PREFIX.encode() in head or _PAYLOAD_START.search(head) is not None
    )


def recognised(read: Reader, size: int) -> bool:
    """Whether a file read through ``read`` is Polygraphy JSON, from its first bytes only."""
    return looks_like_polygraphy(memoryview(read(0, min(size, HEAD_BYTES))).cast("B"))


def index(read: Reader, size: int, window: int | None = None) -> list[Result]:
    """Every array in a file of ``size`` bytes read through ``read``, in saved order, none decoded.

    The file is read once, a window at a time; what is kept is the structure around the
    payloads, not the payloads.
    """
    return _results(parse(read, size, PAYLOAD_KEYS.values(), "the Polygraphy file", window))


def list_results(data: BytesLike) -> list[tuple[str | None, int, str]]:
    """(runner, iteration, output name) of every array in the file, without decoding any."""
    return [(r.runner, r.iteration, r.name) for r in index(*view_reader(data))]


def read(data: BytesLike, *, void_format: str | None = None) -> list[Tensor]:
    """Every array in the file: for each runner, each iteration, each output, in saved order."""
    reader, size = view_reader(data)
    return [decode(result, reader, void_format) for result in index(reader, size)]


def _class(obj: object) -> str | None:
    """The Polygraphy class an encoded JSON object was made from, if any."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get(CLASS_MARKER), str):
        return obj[CLASS_MARKER]
    legacy = [key.removeprefix(LEGACY_PREFIX) for key in obj if key.startswith(LEGACY_PREFIX)]
    return legacy[0] if len(legacy) == 1 else None


def _results(doc: object) -> list[Result]:
    if _class(doc) == "RunResults":
        runs = doc.get("lst")
        if not isinstance(runs, list):
            raise InputError("the Polygraphy RunResults has no list of runners ('lst')")
        return [result for run in runs for result in _runner(run)]
    if isinstance(doc, list) and all(isinstance(feed, dict) for feed in doc):
        return [
            _result(None, iteration, str(key), value)
            for iteration, feed in enumerate(doc)
            for key, value in feed.items()
            if key != CLASS_MARKER
        ]
    raise InputError(
        "the JSON file is not one Polygraphy writes for tensors: expected RunResults "
        "(polygraphy run --save-outputs) or a list of inputs (--save-inputs)"
    )


def _runner(run: object) -> list[Result]:
    if not (isinstance(run, list) and len(run) == 2 and isinstance(run[0], str) and isinstance(run[1], list)):
        raise InputError("a Polygraphy RunResults entry is not a [runner name, [iteration results]] pair")
    runner, iterations = run
    results = []
    for iteration, outputs in enumerate(iterations):
        if _class(outputs) != "IterationResult" or not isinstance(outputs.get("outputs"), dict):
            raise InputError(f"iteration {iteration} of runner {runner!r} is not a Polygraphy IterationResult")
        results += [
            _result(runner, iteration, str(key), value)
            for key, value in outputs["outputs"].items()
            if key != CLASS_MARKER
        ]
    return results


def _result(runner: str | None, iteration: int, name: str, value: object) -> Result:
    """The innermost encoded array of a value, unwrapping ``LazyArray`` (``{"values": ...}``) layers.

    The JSON scanner bounds how deep the layers can go.
    """
    kind = _class(value)
    while kind in ("LazyArray", "LazyNumpyArray"):
        value = value.get("values")
        kind = _class(value)
    payload = value.get(PAYLOAD_KEYS[kind]) if kind in PAYLOAD_KEYS else None
    if not isinstance(payload, Span):
        raise InputError(f"a Polygraphy value of class {kind!r} is not an encoded array or tensor")
    return Result(runner, iteration, name, payload, kind == "Tensor")


def decode(result: Result, read: Reader, void_format: str | None = None) -> Tensor:
    """The tensor of one indexed array, reading only its payload from the file."""
    where = f"iteration {result.iteration}"
    if result.runner is not None:
        where = f"runner {result.runner}, {where}"
    try:
        data = _payload(read, result.payload)
        if result.torch:
            tensor = torchsave.read(data, result.name)[0]
        else:
            tensor = _numpy_payload(data, result.name, void_format)
    except InputError as err:
        raise InputError(err.message, where=f"{where}, output {result.name!r}") from err
    kind = "RunResults" if result.runner is not None else "inputs"
    tensor.source = f"Polygraphy {kind}: {where}"
    return tensor


def _payload(read: Reader, span: Span) -> bytes:
    """The bytes a payload string encodes: base64, or in files older than base64, latin-1 text."""
    if not span.escaped:
        try:
            return binascii.a2b_base64(span_bytes(read, span), strict_mode=True)
        except binascii.Error:
            pass  # the text below decides; it also checks the characters are valid JSON
    text = span_text(read, span)
    try:
        return binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        return text.encode("latin-1", "replace")


def _numpy_payload(data: bytes, name: str, void_format: str | None) -> Tensor:
    """The array in an encoded ndarray: a ``.npy`` file, or in old files an ``.npz`` of one."""
    if data.startswith(npy.MAGIC):
        return npy.read(data, name, void_format=void_format)
    tensors = npz.read(data, void_format=void_format)
    tensors[0].name = name
    return tensors[0]
