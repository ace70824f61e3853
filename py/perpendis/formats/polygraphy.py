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
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import NamedTuple

from ..errors import InputError
from ..tensor import Tensor
from . import npy, npz, torchsave
from .buffer import BytesLike, as_view
from .limits import JSON_MAX_DEPTH

CLASS_MARKER = "polygraphy_class"
LEGACY_PREFIX = "__polygraphy_encoded_"


class Result(NamedTuple):
    """One array in a Polygraphy file: which runner and iteration produced it, under what name."""

    runner: str | None  # None for saved inputs, which no runner produced
    iteration: int
    name: str
    value: dict


def looks_like_polygraphy(view: memoryview) -> bool:
    """Whether ``view`` is JSON that carries Polygraphy's class markers."""
    head = bytes(view[:4096]).lstrip()
    return head[:1] in (b"{", b"[") and (CLASS_MARKER.encode() in head or LEGACY_PREFIX.encode() in head)


def list_results(data: BytesLike) -> list[tuple[str | None, int, str]]:
    """(runner, iteration, output name) of every array in the file, without decoding any."""
    return [(r.runner, r.iteration, r.name) for r in _results(_load(as_view(data)))]


def read(data: BytesLike, *, void_format: str | None = None) -> list[Tensor]:
    """Every array in the file: for each runner, each iteration, each output, in saved order."""
    return [_tensor(result, void_format) for result in _results(_load(as_view(data)))]


def _load(view: memoryview) -> object:
    try:
        return json.loads(bytes(view).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise InputError(f"the Polygraphy file is not valid JSON ({err}); it may be truncated") from err


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
            Result(None, iteration, str(key), _array_object(value, 1))
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
            Result(runner, iteration, str(key), _array_object(value, 1))
            for key, value in outputs["outputs"].items()
            if key != CLASS_MARKER
        ]
    return results


def _array_object(value: object, depth: int) -> dict:
    """The innermost encoded array, unwrapping ``LazyArray`` (``{"values": ...}``) layers."""
    if depth > JSON_MAX_DEPTH:
        raise InputError(f"the Polygraphy file nests arrays deeper than the limit JSON_MAX_DEPTH = {JSON_MAX_DEPTH}")
    kind = _class(value)
    if kind in ("LazyArray", "LazyNumpyArray"):
        return _array_object(value.get("values"), depth + 1)
    if kind in ("ndarray", "Tensor") and isinstance(value.get("array", value.get("tensor")), str):
        return value
    raise InputError(f"a Polygraphy value of class {kind!r} is not an encoded array or tensor")


def _tensor(result: Result, void_format: str | None) -> Tensor:
    where = f"iteration {result.iteration}"
    if result.runner is not None:
        where = f"runner {result.runner}, {where}"
    value = result.value
    try:
        if "tensor" in value:
            tensor = torchsave.read(_decode(value["tensor"]), result.name)[0]
        else:
            tensor = _numpy_payload(_decode(value["array"]), result.name, void_format)
    except InputError as err:
        raise InputError(err.message, where=f"{where}, output {result.name!r}") from err
    kind = "RunResults" if result.runner is not None else "inputs"
    tensor.source = f"Polygraphy {kind}: {where}"
    return tensor


def _decode(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        # Polygraphy before base64 stored the bytes as latin-1 text.
        return text.encode("latin-1", "replace")


def _numpy_payload(data: bytes, name: str, void_format: str | None) -> Tensor:
    """The array in an encoded ndarray: a ``.npy`` file, or in old files an ``.npz`` of one."""
    if data.startswith(npy.MAGIC):
        return npy.read(data, name, void_format=void_format)
    tensors = npz.read(data, void_format=void_format)
    tensors[0].name = name
    return tensors[0]
