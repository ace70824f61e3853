"""Fuzzing Polygraphy JSON reading: ``RunResults`` and saved inputs written by Polygraphy
itself, mutated as bytes, with their embedded ``.npy``/``torch.save`` payloads mutated,
and with nesting bombs where arrays go.

Whatever Perpendis reads, Polygraphy's own ``from_json`` must read to the same arrays;
and the file scanned a few bytes at a time, as bisect reads big files, must read exactly
as the file read whole, errors included.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from fuzzkit import FUZZ, assert_same, logical_bits, mutated, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.inputs import formats
from perpendis.inputs.formats import jsonscan, polygraphy
from perpendis.inputs.formats.buffer import view_reader

pytest.importorskip("polygraphy")
from polygraphy.comparator import RunResults
from polygraphy.comparator.struct import IterationResult
from polygraphy.json import from_json, to_json

pytest.importorskip("polygraphy")
torch = pytest.importorskip("torch")

DTYPES = ["<f2", "<f4", ">f8", "<i8", "|b1", "<c8"]
ARRAYS = hnp.arrays(st.sampled_from(DTYPES).map(np.dtype), hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
NAMES = st.text(max_size=8)


@st.composite
def real_file(draw) -> bytes:
    """Polygraphy's JSON for RunResults (runners, iterations, outputs) or for a list of feeds."""

    def value(array: np.ndarray) -> object:
        return torch.from_numpy(array.astype(array.dtype.newbyteorder("="))) if draw(st.integers(0, 4)) == 0 else array

    if draw(st.booleans()):
        feeds = draw(st.lists(st.dictionaries(NAMES, ARRAYS, min_size=1, max_size=2), min_size=1, max_size=2))
        return to_json([{k: value(v) for k, v in feed.items()} for feed in feeds]).encode()
    results = RunResults()
    for runner in draw(st.lists(NAMES, min_size=1, max_size=2, unique=True)):
        iterations = draw(st.lists(st.dictionaries(NAMES, ARRAYS, min_size=1, max_size=2), min_size=1, max_size=2))
        results.append(
            (runner, [IterationResult({k: value(v) for k, v in it.items()}, runner_name=runner) for it in iterations])
        )
    return to_json(results).encode()


def polygraphy_reads(data: bytes) -> list[np.ndarray]:
    """Every array, in saved order, as Polygraphy itself decodes the file."""
    doc = from_json(data.decode("utf-8"))
    feeds = [it for _, iterations in doc for it in iterations] if isinstance(doc, RunResults) else doc
    arrays = []
    for feed in feeds:
        for value in feed.values():
            value = value.numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
            arrays.append(value)
    return arrays


def same_as_polygraphy(tensors, data: bytes, original: bytes | None = None) -> None:
    """Perpendis read what Polygraphy reads; or, where Polygraphy (through torch) refuses a
    part Perpendis does not need (an embedded torch.save's ``version`` member, say), what
    it reads from the unmutated ``original``."""
    try:
        reference = polygraphy_reads(data)
    except Exception:
        if original is None:
            raise
        reference = polygraphy_reads(original)
    assert len(tensors) == len(reference)
    for tensor, array in zip(tensors, reference, strict=True):
        assert_same(tensor, array)


@pytest.mark.slow
@FUZZ
@given(real_file())
def test_real_files_read_exactly(data):
    result = outcome(formats.read, data, "outputs.json")
    assert result.error is None, result.error
    same_as_polygraphy(result.tensors, data)


@FUZZ
@given(st.data())
def test_mutated_bytes_read_exactly_or_fail_cleanly(data):
    original = data.draw(real_file())
    broken = data.draw(mutated(original))
    result = outcome(formats.read, broken, "outputs.json")
    if result.error is None and result.tensors and result.tensors[0].source.startswith("Polygraphy"):
        same_as_polygraphy(result.tensors, broken, original)


def scanned(data: bytes, window: int) -> list:
    """Index the file through reads of ``window`` bytes, then decode each array: bisect's way."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonscan, "WINDOW", window)
        read, size = view_reader(data)
        return [polygraphy.decode(result, read) for result in polygraphy.index(read, size)]


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_scanned_a_window_at_a_time_reads_as_read_whole(data):
    original = data.draw(real_file())
    broken = data.draw(st.one_of(st.just(original), mutated(original)))
    whole = outcome(polygraphy.read, broken)
    lazy = outcome(scanned, broken, data.draw(st.integers(1, 64)))
    if whole.error is not None:
        assert lazy.error is not None and lazy.error.to_dict() == whole.error.to_dict()
        return
    assert lazy.error is None, lazy.error
    assert [(t.name, t.source, t.format, t.shape) for t in lazy.tensors] == [
        (t.name, t.source, t.format, t.shape) for t in whole.tensors
    ]
    for got, want in zip(lazy.tensors, whole.tensors, strict=True):
        np.testing.assert_array_equal(logical_bits(got), logical_bits(want))


def _replace_payloads(node: object, change) -> object:
    if isinstance(node, dict):
        return {k: change(v) if k in ("array", "tensor") and isinstance(v, str) else _replace_payloads(v, change)
                for k, v in node.items()}  # fmt: skip
    if isinstance(node, list):
        return [_replace_payloads(v, change) for v in node]
    return node


@FUZZ
@given(st.data())
def test_mutated_payloads_read_exactly_or_fail_cleanly(data):
    """The base64 ``.npy``/``torch.save`` inside the JSON is mutated; the JSON stays valid."""

    def change(encoded: str) -> str:
        raw = base64.b64decode(encoded)
        return base64.b64encode(data.draw(mutated(raw))).decode() if data.draw(st.booleans()) else encoded

    doc = _replace_payloads(json.loads(data.draw(real_file())), change)
    outcome(formats.read, json.dumps(doc).encode(), "outputs.json")


@pytest.mark.parametrize("depth", [70, 10_000, 100_000])
@pytest.mark.parametrize("shape", ["lazy", "list", "dict"])
def test_nesting_bombs_are_refused(depth, shape):
    array = {"array": base64.b64encode(b"\x93NUMPY").decode(), "polygraphy_class": "ndarray"}
    if shape == "lazy":
        text = json.dumps([{"x": array}])
        for _ in range(min(depth, 500)):  # json.dumps itself recurses
            text = text.replace('{"array"', '{"polygraphy_class": "LazyArray", "values": {"array"', 1)
            text = text[:-2] + "}" + text[-2:]
    elif shape == "list":
        text = '[{"polygraphy_class": "x", "v": ' + "[" * depth + "]" * depth + "}]"
    else:
        text = '{"polygraphy_class": "RunResults", "lst": ' + '{"a":' * depth + "1" + "}" * depth + "}"
    result = outcome(formats.read, text.encode(), "outputs.json")
    assert result.error is not None
