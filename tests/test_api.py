"""``api.handle``: the worker's requests, with inputs as pasted text and as real .npy bytes."""

import io
import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.inputs import formats
from perpendis.layers.bisect import bisect
from perpendis.service import api, heap


def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


@pytest.fixture
def pair():
    b = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    a = b.copy()
    a[1, 2, 3] = np.nextafter(a[1, 2, 3], np.float32(np.inf))
    a[2, 0, 1] = np.nextafter(a[2, 0, 1], np.float32(-np.inf))
    return a, b


def compare_files(a, b, options=None, text=True):
    request = {
        "op": "compare",
        "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}},
        "options": options or {},
        "text": text,
    }
    return api.handle(request, {"a": npy_bytes(a), "b": memoryview(npy_bytes(b))})


def test_compare_files(pair):
    out = compare_files(*pair)
    assert out["ok"] and out["report"]["verdict"] == "rounding"
    assert out["report"]["n_bitwise_diff"] == 2
    assert out["markdown"].startswith("**Perpendis") and out["text"].startswith("ROUNDING")


def test_compare_text_and_progress(pair):
    a, b = pair
    seen = []
    request = {"op": "compare", "inputs": {"a": {"text": repr(a)}, "b": {"text": repr(b)}}, "options": {}}
    out = api.handle(request, {}, progress=lambda stage, f: seen.append((stage, f)))
    assert out["ok"] and out["report"]["first_diff"]["index"] == [1, 2, 3]
    assert seen[-1] == ("compare", 1.0)


def test_two_tensors_in_box_a(pair):
    a, b = pair
    request = {"op": "compare", "inputs": {"a": {"text": f"{a!r}\n\n{b!r}"}, "b": {"text": "  "}}, "options": {}}
    out = api.handle(request, {})
    assert out["ok"] and out["report"]["n_bitwise_diff"] == 2
    assert any("box B was empty" in n for n in out["report"]["notes"])


def test_errors_name_the_side(pair):
    out = api.handle({"op": "compare", "inputs": {"a": {"text": repr(pair[0])}, "b": {"text": ""}}}, {})
    assert not out["ok"] and out["error"]["side"] == "b"
    junk = {"op": "compare", "inputs": {"a": {"name": "x.bin", "data": "x"}, "b": {"text": repr(pair[1])}}}
    out = api.handle(junk, {"x": bytes(range(256))})
    assert not out["ok"] and out["error"]["side"] == "a" and out["error"]["message"]
    out = compare_files(*pair, options={"preset": "nope"})
    assert not out["ok"] and "unknown tolerance preset" in out["error"]["message"]


def test_rejudge_keeps_the_pair(pair):
    a, b = pair
    compare_files(a + np.float32(1e-3), b)
    strict = api.handle({"op": "rejudge", "options": {"atol": 0, "rtol": 0}}, {})
    assert strict["ok"] and strict["report"]["tolerance"]["n_fail"] == a.size
    loose = api.handle({"op": "rejudge", "options": {"preset": "fp32-tf32"}}, {})
    assert loose["report"]["tolerance"]["passed"] and loose["report"]["tolerance"]["preset"] == "fp32-tf32"


def test_element_and_step(pair):
    a, b = pair
    compare_files(a, b)
    first = 1 * 20 + 2 * 5 + 3
    second = 2 * 20 + 0 * 5 + 1
    el = api.handle({"op": "element", "flat": first}, {})["element"]
    assert el["index"] == [1, 2, 3] and el["ulp"] == 1
    assert el["a_prev"] == el["b"] and el["b_next"] == el["a"]
    assert el["a_fields"]["class"] == "normal"
    assert api.handle({"op": "step", "flat": -1, "direction": 1}, {})["flat"] == first
    assert api.handle({"op": "step", "flat": first, "direction": 1}, {})["flat"] == second
    assert api.handle({"op": "step", "flat": second, "direction": 1}, {})["flat"] is None
    assert api.handle({"op": "step", "flat": second, "direction": -1}, {})["flat"] == first
    bad = api.handle({"op": "element", "flat": 10**6}, {})
    assert not bad["ok"] and "flat" in bad["error"]["message"]


def test_slice_and_scatter(pair):
    a, b = pair
    compare_files(a, b)
    out = api.handle({"op": "slice", "axes": [1, 2], "index": [1, 0, 0], "metric": "ulp", "max_cells": 100}, {})
    s = out["slice"]
    assert (s["rows"], s["cols"], s["row_step"], s["col_step"]) == (4, 5, 1, 1)
    assert s["values"][2 * 5 + 3] == 1.0 and s["max"] == 1.0 and sum(s["values"]) == 1.0
    pooled = api.handle({"op": "slice", "axes": [2, 1], "index": [1, 0, 0], "metric": "abs", "max_cells": 4}, {})
    p = pooled["slice"]
    assert p["rows"] * p["cols"] <= 4 and p["max"] == float(abs(np.float64(a[1, 2, 3]) - b[1, 2, 3]))
    points = api.handle({"op": "scatter", "max_points": 10}, {})["points"]
    assert len(points) == 2 and points[0][0] == abs(float(b[1, 2, 3]))
    bad = api.handle({"op": "slice", "axes": [1, 1], "index": [0, 0, 0], "metric": "abs", "max_cells": 4}, {})
    assert not bad["ok"]


def test_slice_colour_scale_is_shared_by_every_slice():
    """Each slice carries the scale of the whole pair: the largest finite and the smallest
    positive value of the metric, as NumPy measures them, whatever slice was asked for."""
    rng = np.random.default_rng(3)
    b = rng.standard_normal((3, 6, 7)).astype(np.float32)
    a = b.copy()
    a[0, 1, 2] = np.nextafter(a[0, 1, 2], np.float32(np.inf))  # slice 0: one ULP of rounding
    a[2] += np.float32(0.5)  # slice 2: the bug
    b[1, 0, 0], a[1, 0, 0] = 0.0, 1.0  # relative difference infinite: left out of the scale
    compare_files(a, b)
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    for metric, want in (("abs", diff), ("rel", diff / np.abs(b.astype(np.float64)))):
        with np.errstate(divide="ignore"):
            finite = want[np.isfinite(want) & (want > 0)]
        scales = []
        for i in range(3):
            req = {"op": "slice", "axes": [1, 2], "index": [i, 0, 0], "metric": metric, "max_cells": 100}
            s = api.handle(req, {})["slice"]
            scales.append(s["scale"])
            assert s["max"] == "inf" or s["max"] <= s["scale"]["max"]  # infinite cells: drawn apart
        assert scales[0] == scales[1] == scales[2], metric
        assert scales[0]["max"] == float(finite.max()) and scales[0]["min"] == float(finite.min()), metric
    s0 = api.handle({"op": "slice", "axes": [1, 2], "index": [0, 0, 0], "metric": "abs", "max_cells": 100}, {})["slice"]
    assert s0["max"] < s0["scale"]["max"] / 1000  # the rounding slice is pale on the shared scale


def test_slice_cells_name_the_element_they_show(pair):
    """A cell's ``flat`` is the element it shows: itself unpooled, the worst of its block pooled."""
    a, b = pair
    compare_files(a, b)
    whole = api.handle({"op": "slice", "axes": [2, 0], "index": [0, 3, 0], "metric": "abs", "max_cells": 100}, {})
    s = whole["slice"]
    rows, cols = np.meshgrid(np.arange(5), np.arange(3), indexing="ij")
    assert s["flat"] == np.ravel_multi_index((cols, np.full_like(rows, 3), rows), a.shape).ravel().tolist()

    diff = np.abs(a.astype(np.float64) - b.astype(np.float64)).ravel()
    pooled = api.handle({"op": "slice", "axes": [1, 2], "index": [1, 0, 0], "metric": "abs", "max_cells": 4}, {})
    p = pooled["slice"]
    assert p["row_step"] * p["col_step"] > 1
    assert [float(diff[f]) for f in p["flat"]] == p["values"]
    assert np.ravel_multi_index((1, 2, 3), a.shape) in p["flat"]  # the one differing element of that plane
    assert all(np.unravel_index(f, a.shape)[0] == 1 for f in p["flat"])

    compare_files(a[1, 2], b[1, 2])  # one dimension: a single row of cells
    line = api.handle({"op": "slice", "metric": "abs", "max_cells": 2}, {})["slice"]
    assert line["flat"][int(np.argmax(line["values"]))] == 3


def test_bisect_op(pair):
    a, b = pair
    files = {"a1": npy_bytes(a), "a2": npy_bytes(a * 2), "b1": npy_bytes(b), "b2": npy_bytes(b * 3)}
    request = {
        "op": "bisect",
        "inputs": {
            "a": [{"name": "conv.npy", "data": "a1"}, {"name": "relu.npy", "data": "a2"}],
            "b": [{"name": "conv.npy", "data": "b1"}, {"name": "relu.npy", "data": "b2"}],
        },
        "options": {},
    }
    out = api.handle(request, files)
    assert out["ok"], out
    result = out["bisect"]
    assert [p["report"]["verdict"] for p in result["pairs"]] == ["rounding", "investigate"]
    assert result["first_failing"]["index"] == 1


def test_bisect_order_rejudges_the_first_failing_pair_without_comparing_again():
    request, payloads = capture_request("bisect", {"a": "torch", "b": "ort_bug"}, {"mapping": CNN["mapping"]})
    before = api.handle(request, payloads)["bisect"]
    names = [p["a_name"] for p in before["pairs"]]
    verdicts = {p["a_name"]: p["verdict"] for p in before["pairs"]}
    bug = CNN["bug_layer"]
    assert before["first_failing"]["a_name"] == bug
    # The bug layer and everything after it moved behind the rest, in reverse: the first
    # failing pair is now the first of those that fails, by the verdicts of the same reports.
    after_bug = names[names.index(bug) :]
    moved = [n for n in names if n not in after_bug] + after_bug[::-1]
    out = api.handle({"op": "bisect_order", "order": moved}, {})
    assert out["ok"], out
    result = out["bisect"]
    assert [p["a_name"] for p in result["pairs"]] == moved
    assert {p["a_name"]: p for p in result["pairs"]} == {p["a_name"]: p for p in before["pairs"]}  # same reports
    want = next(i for i, n in enumerate(moved) if verdicts[n] == "investigate")
    assert result["first_failing"] == {"a_name": moved[want], "b_name": result["pairs"][want]["b_name"], "index": want}
    assert moved[want] != bug
    # Rows are opened by their new position.
    opened = api.handle({"op": "bisect_pair", "index": want}, {})
    assert opened["report"] == next(p["report"] for p in before["pairs"] if p["a_name"] == moved[want])

    # A partial order puts the named pairs first and keeps the others in their order.
    partial = api.handle({"op": "bisect_order", "order": [bug]}, {})["bisect"]
    assert [p["a_name"] for p in partial["pairs"]] == [bug] + [n for n in moved if n != bug]
    assert partial["first_failing"]["index"] == 0

    for order, words in ((["no such layer"], "no pair"), ([bug, bug], "more than once"), ("conv1", "must list")):
        bad = api.handle({"op": "bisect_order", "order": order}, {})
        assert not bad["ok"] and words in bad["error"]["message"]


# --- bisect in the page: real captures, several files per side, rows opened, several runs

MODELS = Path(__file__).parent / "fixtures" / "models"
CNN = next(c for c in json.loads((MODELS / "manifest.json").read_text())["captures"] if c["model"] == "cnn")


def capture_request(op, sides, options=None):
    """A worker request whose inputs are capture files of the cnn model, by side name."""
    payloads = {}
    inputs = {}
    for side, kind in sides.items():
        name = f"cnn.capture.{kind}.npz"
        payloads[side] = (MODELS / name).read_bytes()
        inputs[side] = {"name": name, "data": side}
    return {"op": op, "inputs": inputs, "options": options or {}}, payloads


def test_compare_of_archives_switches_to_bisect():
    request, payloads = capture_request("compare", {"a": "torch", "b": "ort_bug"})
    out = api.handle(request, payloads)
    assert out["ok"] and "switched" in out and "report" not in out
    native = bisect(formats.read(payloads["a"], "a.npz"), formats.read(payloads["b"], "b.npz"))
    assert out["bisect"]["first_failing"] == native.to_dict()["first_failing"]
    assert out["bisect"]["first_failing"]["a_name"] == CNN["bug_layer"]
    # The classifier's output has no name alike on the ONNX side: it pairs by order and shape
    # with the graph's output, which the known mapping confirms, and says it is unsure.
    last = out["bisect"]["pairs"][-1]
    assert (last["a_name"], last["b_name"]) == ("head.fc", CNN["mapping"]["head.fc"])
    assert last["paired_by"] == "order and shape" and last["confidence"] == "low"
    assert out["bisect"]["only_a"] == []


def test_bisect_mapping_progress_and_opening_a_row():
    seen = []
    request, payloads = capture_request("bisect", {"a": "torch", "b": "ort_bug"}, {"mapping": CNN["mapping"]})
    out = api.handle(request, payloads, progress=lambda stage, f: seen.append((stage, f)))
    assert out["ok"], out
    result = out["bisect"]
    assert result["only_a"] == [] and "output" not in result["only_b"]
    assert [p["paired_by"] for p in result["pairs"]][-1] == "mapping"
    names = [p["a_name"] for p in result["pairs"]]
    assert [s for s, _ in seen] == [f"comparing {n}" for n in names]
    assert [f for _, f in seen] == sorted(f for _, f in seen)

    first = result["first_failing"]["index"]
    opened = api.handle({"op": "bisect_pair", "index": first}, {})
    assert opened["ok"] and opened["report"] == result["pairs"][first]["report"]
    # The opened pair is the last compared pair: follow-up questions are about it.
    flat = opened["report"]["first_diff"]["flat"]
    element = api.handle({"op": "element", "flat": flat}, {})["element"]
    assert element["a"] == opened["report"]["first_diff"]["a"]
    bad = api.handle({"op": "bisect_pair", "index": len(names)}, {})
    assert not bad["ok"] and "index" in bad["error"]["message"]


def test_bisect_of_npy_files_pairs_by_file_name():
    rng = np.random.default_rng(3)
    layers = {"conv": rng.standard_normal((2, 8)).astype(np.float32), "fc": rng.standard_normal(4).astype(np.float32)}
    payloads, a_files, b_files = {}, [], []
    for i, (name, x) in enumerate(layers.items()):
        payloads[f"a{i}"], payloads[f"b{i}"] = npy_bytes(x), npy_bytes(x + np.float32(i))
        a_files.append({"name": f"{name}.npy", "data": f"a{i}"})
        b_files.append({"name": f"{name}.npy", "data": f"b{i}"})
    out = api.handle({"op": "bisect", "inputs": {"a": a_files, "b": b_files[::-1]}, "options": {}}, payloads)
    assert [(p["a_name"], p["b_name"], p["verdict"]) for p in out["bisect"]["pairs"]] == [
        ("conv", "conv", "identical"),
        ("fc", "fc", "investigate"),
    ]
    bad = api.handle({"op": "bisect", "inputs": {"a": a_files, "b": b_files}, "options": {"mapping": ["x"]}}, payloads)
    assert not bad["ok"] and bad["error"]["where"] == "mapping"


def test_runs_matrix_against_a_reference():
    payloads = {k: (MODELS / f"cnn.capture.{k}.npz").read_bytes() for k in ("torch", "ort", "ort_bug")}
    runs = {k: {"name": f"{k}.npz", "data": k} for k in payloads}
    request = {"op": "runs", "inputs": {"runs": runs}, "options": {"reference": "torch", "mapping": CNN["mapping"]}}
    out = api.handle(request, payloads)
    assert out["ok"], out
    matrix = out["runs"]
    assert matrix["first_failing"] == {"ort": None, "ort_bug": CNN["bug_layer"]}
    assert matrix["departs_first"] == "ort_bug"
    torch_run, ort_run = (formats.read(payloads[k], f"{k}.npz") for k in ("torch", "ort"))
    native = bisect(torch_run, ort_run, mapping=CNN["mapping"])
    assert [c["max_ulp"] for c in matrix["runs"]["ort"]] == [p.report.max_ulp for p in native.pairs]
    bad = api.handle({**request, "options": {"reference": "nope"}}, payloads)
    assert not bad["ok"] and "reference" in bad["error"]["message"]


# --- what the page needs to offer choices: void .npy formats, two tensors from one box


def test_void_npy_offers_its_formats_and_is_reread_as_asked():
    ml_dtypes = pytest.importorskip("ml_dtypes")

    values = np.array([0.5, -1.75, 3.0, 0.0], dtype=ml_dtypes.float8_e4m3fn)
    void, named = npy_bytes(values), npy_bytes(values.astype(np.float32))
    inputs = {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}
    out = api.handle({"op": "compare", "inputs": inputs, "options": {}}, {"a": void, "b": void})
    assert out["ok"] and out["report"]["a"]["dtype"] == "float8_e4m3fn"
    assert out["void_choices"] == {"a": ["float8_e4m3fn", "float8_e5m2"], "b": ["float8_e4m3fn", "float8_e5m2"]}
    options = {"void_format": {"a": "float8_e5m2"}}
    out = api.handle({"op": "compare", "inputs": inputs, "options": options}, {"a": void, "b": void})
    assert (out["report"]["a"]["dtype"], out["report"]["b"]["dtype"]) == ("float8_e5m2", "float8_e4m3fn")
    as_e5m2 = values.view(np.uint8).view(ml_dtypes.float8_e5m2)
    first = out["report"]["first_diff"]
    assert ml_dtypes.float8_e5m2(float(first["a"])) == as_e5m2[first["flat"]]
    out = api.handle({"op": "compare", "inputs": inputs, "options": {}}, {"a": named, "b": void})
    assert out["void_choices"] == {"b": ["float8_e4m3fn", "float8_e5m2"]}
    bad = api.handle({"op": "compare", "inputs": inputs, "options": {"void_format": "e5m2"}}, {"a": void, "b": void})
    assert not bad["ok"] and bad["error"]["where"] == "void_format"
    misfit = api.handle(
        {"op": "compare", "inputs": inputs, "options": {"void_format": {"b": "bfloat16"}}}, {"a": void, "b": void}
    )
    assert not misfit["ok"] and misfit["error"]["side"] == "b" and "does not fit 1-byte" in misfit["error"]["message"]


def test_one_box_is_named_in_the_result(pair):
    a, b = pair
    both = api.handle({"op": "compare", "inputs": {"a": {"text": f"{a!r}\n{b!r}"}, "b": {"text": ""}}}, {})
    assert both["ok"] and both["one_box"] == "a"
    apart = api.handle({"op": "compare", "inputs": {"a": {"text": repr(a)}, "b": {"text": repr(b)}}}, {})
    assert apart["ok"] and apart["one_box"] is None and apart["void_choices"] == {}


def test_several_tensors_in_box_a_and_none_in_b_are_named(pair):
    buffer = io.BytesIO()
    np.savez(buffer, **{f"layer{i}": pair[0] for i in range(10)})
    request = {"op": "compare", "inputs": {"a": {"name": "all.npz", "data": "a"}, "b": {"text": ""}}}
    out = api.handle(request, {"a": buffer.getvalue()})
    assert not out["ok"] and out["error"]["side"] == "b"
    message = out["error"]["message"]
    assert message.startswith("box A holds 10 tensors ('layer0', 'layer1', ") and "'layer7' and 2 more" in message


def test_warm_up_keeps_the_compared_pair():
    """The page's workers warm up between jobs: the pair kept for follow-up questions stays."""
    a = np.linspace(-1, 1, 100, dtype=np.float32)
    b = a.copy()
    b[7] = np.nextafter(b[7], np.float32(2))
    payloads = {"a": npy_bytes(a), "b": npy_bytes(b)}
    request = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}}
    assert api.handle(request, payloads)["ok"]
    api.warm_up()
    element = api.handle({"op": "element", "flat": 7}, {})
    assert element["ok"] and element["element"]["ulp"] == 1


def test_reserve_grows_the_heap_for_the_inputs_and_refuses_a_bad_size(monkeypatch):
    assert api.handle({"op": "reserve", "bytes": 1000}, {}) == {"ok": True, "reserved": 1000 * heap.RESERVE_FACTOR}
    assert api.handle({"op": "reserve", "bytes": 0}, {}) == {"ok": True, "reserved": 0}
    monkeypatch.setattr(heap, "RESERVE_MAX", 4096)
    assert api.handle({"op": "reserve", "bytes": 10**12}, {})["reserved"] == 4096
    for bad in (-1, 1.5, "10", None, True):
        result = api.handle({"op": "reserve", "bytes": bad}, {})
        assert result["ok"] is False and "whole number of bytes" in result["error"]["message"], bad
