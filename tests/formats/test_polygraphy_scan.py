"""Polygraphy files read a window at a time: the JSON scanner, the index of arrays, and
bisect of two captures decoding one tensor pair at a time.

Files are written by Polygraphy's own ``to_json``; the scanner's answers are checked
against ``json.loads`` and Polygraphy's ``from_json``, never against hard-coded values.
"""

from __future__ import annotations

import json
import math
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis import service
from perpendis.cli.main import bisect_main
from perpendis.errors import InputError
from perpendis.inputs import formats
from perpendis.inputs.formats import jsonscan, polygraphy
from perpendis.inputs.formats.buffer import view_reader
from perpendis.inputs.formats.limits import JSON_MAX_DEPTH
from perpendis.layers.bisect import bisect, path_entries, polygraphy_entries
from perpendis.service import api

torch = pytest.importorskip("torch")
pytest.importorskip("polygraphy")
from polygraphy.comparator import RunResults  # noqa: E402
from polygraphy.comparator.struct import IterationResult  # noqa: E402
from polygraphy.json import from_json, to_json  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
CAPTURES = {c["model"]: c for c in MANIFEST["captures"]}


def run_results(runs: dict[str, list[dict[str, object]]]) -> bytes:
    """Polygraphy's JSON for runner name → iterations of outputs (NumPy arrays or torch tensors)."""
    results = RunResults()
    for runner, iterations in runs.items():
        results.append((runner, [IterationResult(outputs, runner_name=runner) for outputs in iterations]))
    return to_json(results).encode()


def capture_as_polygraphy(model: str, run: str) -> bytes:
    """A real capture (PyTorch hooks or ONNX Runtime) saved as Polygraphy saves a run's outputs."""
    name = next(f for f in CAPTURES[model][run] if f.endswith(".npz"))
    with np.load(MODELS / name) as npz:
        outputs = {key: npz[key] for key in npz.files}
    return run_results({f"{run}-runner": [outputs]})


class CountingReader:
    """A reader over bytes that records the length of every read, as the worker's ``Blob.slice`` would see."""

    def __init__(self, data: bytes) -> None:
        self.read_whole, self.size = view_reader(data)
        self.lengths: list[int] = []

    def __call__(self, offset: int, length: int) -> memoryview:
        self.lengths.append(length)
        return self.read_whole(offset, length)


def mixed_file() -> tuple[bytes, list[np.ndarray]]:
    """Two runners, two iterations, NumPy and torch values, one array far bigger than a file's head."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal(50_000).astype(np.float32)
    runs = {
        "onnxrt-runner-N0": [
            {"big": big, "ids": np.arange(5, dtype=np.int64)},
            {"big": big[::-1].copy(), "half": rng.standard_normal((3, 4)).astype(np.float16)},
        ],
        "trt-runner-N0": [{"t": torch.from_numpy(rng.standard_normal((2, 3)))}],
    }
    arrays = []
    for iterations in runs.values():
        for outputs in iterations:
            arrays += [v.numpy() if isinstance(v, torch.Tensor) else v for v in outputs.values()]
    return run_results(runs), arrays


# --- the JSON scanner ------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def resolved(doc: object, read) -> object:
    """``doc`` with every span read back as its string."""
    if isinstance(doc, jsonscan.Span):
        return jsonscan.span_text(read, doc)
    if isinstance(doc, dict):
        return {k: resolved(v, read) for k, v in doc.items()}
    if isinstance(doc, list):
        return [resolved(v, read) for v in doc]
    return doc


def same(a: object, b: object) -> bool:
    """Equal as JSON values, NaN equal to NaN (json.loads reads Python's NaN too)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def scan(data: bytes, spans=(), window: int = jsonscan.WINDOW) -> object:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonscan, "WINDOW", window)
        read, size = view_reader(data)
        return resolved(jsonscan.parse(read, size, spans), read)


@pytest.mark.fuzz
@settings(max_examples=150, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 0, 2]), st.booleans(), st.integers(1, 40), st.sampled_from([(), ("a",)]))
def test_scanner_reads_what_json_loads_reads(value, indent, ascii_only, window, spans):
    text = json.dumps({"a": value, "b": [value]}, indent=indent, ensure_ascii=ascii_only)
    assert same(scan(text.encode(), spans, window), json.loads(text))


@pytest.mark.fuzz
@settings(max_examples=150, deadline=None)
@given(JSON_VALUES, st.data())
def test_scanner_is_as_strict_as_json_loads(value, data):
    """Truncated or with one byte changed, a document reads the same or fails, for both."""
    raw = bytearray(json.dumps([value, {"k": value}]).encode())
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif raw:
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        expected = json.loads(bytes(raw).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        with pytest.raises(InputError):
            scan(bytes(raw), window=data.draw(st.integers(1, 16)))
    else:
        assert same(scan(bytes(raw), window=data.draw(st.integers(1, 16))), expected)


def test_scanner_refuses_nesting_beyond_the_limit_and_names_truncation():
    deep = "[" * (JSON_MAX_DEPTH + 1) + "]" * (JSON_MAX_DEPTH + 1)
    with pytest.raises(InputError, match="JSON_MAX_DEPTH"):
        scan(deep.encode())
    deepest = "[" * JSON_MAX_DEPTH + "]" * JSON_MAX_DEPTH
    assert scan(deepest.encode()) == json.loads(deepest)
    with pytest.raises(InputError, match=r"ends inside a string .* truncated"):
        scan(b'{"array": "QUJD', spans=("array",))


def test_spans_are_skipped_without_reading_them_whole():
    data, _ = mixed_file()
    reader = CountingReader(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonscan, "WINDOW", 4096)
        index = polygraphy.index(reader, reader.size)
    assert max(reader.lengths) == 4096 < max(r.payload.stop - r.payload.start for r in index)
    assert sum(reader.lengths) < 2 * len(data)


# --- the Polygraphy index --------------------------------------------------------------


def polygraphy_outputs(data: bytes) -> list[tuple[str | None, int, str, object]]:
    """(runner, iteration, name, value) of every array, as Polygraphy's ``from_json`` reads the file."""
    doc = from_json(data.decode())
    runs = list(doc) if isinstance(doc, RunResults) else [(None, doc)]
    return [
        (runner, i, name, value)
        for runner, iterations in runs
        for i, outputs in enumerate(iterations)
        for name, value in outputs.items()
    ]


@pytest.mark.parametrize("window", [7, 4096, jsonscan.WINDOW])
def test_index_and_lazy_decode_match_polygraphy_and_the_whole_file_read(window, assert_bits):
    data, arrays = mixed_file()
    reader = CountingReader(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonscan, "WINDOW", window)
        index = polygraphy.index(reader, reader.size)
    assert [(r.runner, r.iteration, r.name) for r in index] == [o[:3] for o in polygraphy_outputs(data)]
    whole = polygraphy.read(data)
    for result, tensor, array in zip(index, whole, arrays, strict=True):
        lazy = polygraphy.decode(result, reader)
        assert (lazy.name, lazy.source) == (tensor.name, tensor.source)
        assert_bits(lazy, array)
        assert_bits(tensor, array)


CORPUS = Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "formats"


@pytest.mark.parametrize("name", ["outputs.json", "inputs.json"])
@pytest.mark.parametrize("window", [1, 64, jsonscan.WINDOW])
def test_committed_polygraphy_files_index_and_decode_as_polygraphy_reads_them(name, window, assert_bits):
    """The corpus files ``fuzz/make_corpus.py`` wrote with Polygraphy, scanned a few bytes at a time."""
    data = (CORPUS / name).read_bytes()
    expected = polygraphy_outputs(data)
    reader = CountingReader(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonscan, "WINDOW", window)
        index = polygraphy.index(reader, reader.size)
    assert [(r.runner, r.iteration, r.name) for r in index] == [e[:3] for e in expected]
    for result, tensor, (*_, value) in zip(index, polygraphy.read(data), expected, strict=True):
        lazy = polygraphy.decode(result, reader)
        assert (lazy.name, lazy.source) == (tensor.name, tensor.source)
        assert_bits(lazy, np.asarray(value))
        assert_bits(tensor, np.asarray(value))


def test_a_file_whose_first_array_outgrows_the_head_is_still_polygraphy(assert_bits):
    """Polygraphy writes the class marker after the payload, beyond the head of a big file."""
    data, arrays = mixed_file()
    assert polygraphy.CLASS_MARKER.encode() not in data[: polygraphy.HEAD_BYTES]
    tensors = formats.read(data, "outputs.json")
    assert tensors[0].source == "Polygraphy RunResults: runner onnxrt-runner-N0, iteration 0"
    assert_bits(tensors[0], arrays[0])


def test_every_truncation_of_a_real_file_is_an_input_error():
    data = run_results({"r": [{"x": np.arange(6, dtype=np.float32), "y": np.ones(2, np.int8)}]})
    for end in range(len(data) - 1):  # the last byte is a newline-free closing brace
        with pytest.raises(InputError):
            polygraphy.read(data[:end])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: {**d, "lst": {}}, "no list of runners"),
        (lambda d: {**d, "lst": [["r"]]}, r"not a \[runner name, \[iteration results\]\] pair"),
        (lambda d: {**d, "lst": [["r", [{"outputs": {}}]]]}, "is not a Polygraphy IterationResult"),
        (lambda d: _set_value(d, {"polygraphy_class": "ndarray"}), "class 'ndarray' is not an encoded array"),
        (lambda d: _set_value(d, {"polygraphy_class": "ndarray", "array": 3}), "not an encoded array"),
        (lambda d: _set_value(d, {"polygraphy_class": "ndarray", "array": "QUJD"}), "output 'x'"),
        (lambda d: _set_value(d, {"polygraphy_class": "Tensor", "tensor": "!!"}), "output 'x'"),
    ],
)
def test_malformed_structure_and_payloads_are_named(change, message):
    doc = json.loads(run_results({"r": [{"x": np.ones(3, np.float32)}]}))
    with pytest.raises(InputError, match=message):
        polygraphy.read(json.dumps(change(doc)).encode())


def _set_value(doc: dict, value: dict) -> dict:
    doc["lst"][0][1][0]["outputs"]["x"] = value
    return doc


def test_payload_with_an_invalid_escape_fails_when_decoded_not_before():
    data = run_results({"r": [{"x": np.ones(3, np.float32)}, {"x": np.zeros(3, np.float32)}]})
    first = data.index(b'"array": "') + len(b'"array": "')
    broken = data[:first] + b"\\q" + data[first + 2 :]
    reader, size = view_reader(broken)
    index = polygraphy.index(reader, size)
    assert polygraphy.decode(index[1], reader).array.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(InputError, match="not valid"):
        polygraphy.decode(index[0], reader)


# --- bisect of two files, one tensor pair at a time ------------------------------------


def layers(n: int, size: int, bug: int, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A run and a second run that rounds differently in every layer and is wrong in layer ``bug``."""
    rng = np.random.default_rng(seed)
    a, b = {}, {}
    for i in range(n):
        x = rng.standard_normal(size).astype(np.float32)
        y = np.nextafter(x, np.float32(np.inf)) if i % 2 else x.copy()
        if i == bug:
            y[size // 3] += 1
        a[f"layer{i}.conv"], b[f"/layer{i}/conv/Conv_output_0"] = x, y
    return a, b


@pytest.mark.slow
def test_cli_bisect_of_two_big_files_keeps_about_one_pair_in_memory(tmp_path):
    """Bisecting 64 layers costs what comparing the worst one pair costs, not what the files hold."""
    n, size = 64, 150_000
    a, b = layers(n=n, size=size, bug=41)
    paths = tmp_path / "a.json", tmp_path / "b.json"
    paths[0].write_bytes(run_results({"trt": [a]}))
    paths[1].write_bytes(run_results({"onnxrt": [b]}))
    assert paths[0].stat().st_size > 40e6
    tracemalloc.start()
    try:
        ea, eb = path_entries(paths[0]), path_entries(paths[1])
        base = tracemalloc.get_traced_memory()[0]
        one_pair = bisect(ea[41:42], eb[41:42])
        pair_cost = tracemalloc.get_traced_memory()[1] - base
        del one_pair
        tracemalloc.reset_peak()
        result = bisect(ea, eb)
        bisect_cost = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert result.first_failing.a_name == "layer41.conv"
    assert [p.a_name for p in result.pairs] == list(a)
    decoded_all = 2 * n * size * 4
    assert bisect_cost < 1.5 * pair_cost < decoded_all, (bisect_cost, pair_cost, decoded_all)


def test_cli_bisect_reads_polygraphy_files_and_names_the_first_failing_layer(tmp_path, capsys):
    a, b = layers(n=5, size=1_000, bug=3)
    paths = tmp_path / "a.json", tmp_path / "b.json"
    paths[0].write_bytes(run_results({"trt": [a]}))
    paths[1].write_bytes(run_results({"onnxrt": [b]}))
    assert bisect_main([str(paths[0]), str(paths[1]), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["first_failing"]["a_name"] == "layer3.conv"
    assert [p["b_name"] for p in out["pairs"]] == list(b)


def test_worker_bisects_unread_polygraphy_files_as_the_whole_file_read_does():
    a, b = layers(n=6, size=5_000, bug=4)
    data = {"p0": run_results({"trt": [a]}), "p1": run_results({"onnxrt": [b]})}
    readers = {key: CountingReader(raw) for key, raw in data.items()}
    files = {key: (reader, reader.size) for key, reader in readers.items()}
    for op in ("compare", "bisect"):
        request = {"op": op, "inputs": {"a": {"name": "a.json", "data": "p0"}, "b": {"name": "b.json", "data": "p1"}}}
        stages: list[str] = []
        lazy = service.serve(request, {}, files, lambda stage, _, seen=stages: seen.append(stage))
        whole = api.handle(request, data)
        assert lazy == whole
        assert lazy["bisect"]["first_failing"]["a_name"] == "layer4.conv"
        assert stages == [f"comparing {name}" for name in a]
    # Never a whole file at once: windows while indexing, then one payload per read.
    payload = max(r.payload.stop - r.payload.start for r in polygraphy.index(*view_reader(data["p0"])))
    assert max(n for reader in readers.values() for n in reader.lengths) <= max(payload, jsonscan.WINDOW)
    # The pair a row opens is decoded again from the unread file.
    opened = api.handle({"op": "bisect_pair", "index": 4}, {})
    assert opened["ok"] and opened["report"]["verdict"] == "investigate"


def test_worker_holds_one_pair_decoded_at_a_time(monkeypatch):
    """Each decoded array is watched; when the next one is decoded, at most its pair partner lives."""
    a, b = layers(n=8, size=20_000, bug=5)
    files = {"p0": view_reader(run_results({"trt": [a]})), "p1": view_reader(run_results({"onnxrt": [b]}))}
    decode, alive, most = polygraphy.decode, [], []

    def watched(result, read, void_format=None):
        tensor = decode(result, read, void_format)
        alive[:] = [ref for ref in alive if ref() is not None]
        alive.append(weakref.ref(tensor.array))
        most.append(len(alive))
        return tensor

    monkeypatch.setattr(polygraphy, "decode", watched)
    request = {"op": "bisect", "inputs": {"a": {"name": "a.json", "data": "p0"}, "b": {"name": "b.json", "data": "p1"}}}
    out = service.serve(request, {}, files)
    assert out["bisect"]["first_failing"]["a_name"] == "layer5.conv"
    assert len(most) == 2 * len(a) and max(most) == 2


def test_worker_answers_a_bad_unread_file_with_its_side():
    a, _ = layers(n=2, size=10, bug=0)
    good = run_results({"trt": [a]})
    files = {"p0": view_reader(good), "p1": view_reader(good[: len(good) // 2])}
    request = {"op": "bisect", "inputs": {"a": {"name": "a.json", "data": "p0"}, "b": {"name": "b.json", "data": "p1"}}}
    out = service.serve(request, {}, files)
    assert out["ok"] is False and out["error"]["side"] == "b" and "truncated" in out["error"]["message"]


def test_real_captures_saved_by_polygraphy_bisect_to_the_known_layer():
    """PyTorch hooks against ONNX Runtime with a bugged normalisation, both saved as Polygraphy outputs."""
    model = "cnn"
    entries = [polygraphy_entries(*view_reader(capture_as_polygraphy(model, run))) for run in ("torch", "ort_bug")]
    result = bisect(*entries)
    assert result.first_failing.a_name == CAPTURES[model]["bug_layer"]
    npz = [MODELS / next(f for f in CAPTURES[model][run] if f.endswith(".npz")) for run in ("torch", "ort_bug")]
    assert [p.report.max_ulp for p in result.pairs] == [
        p.report.max_ulp for p in bisect(*(path_entries(p) for p in npz)).pairs
    ]
