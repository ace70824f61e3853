"""The service layer's own parts: typed requests, the input planner, the session and the
one error boundary (:mod:`perpendis.service`)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from numpy_written import npy
from perpendis import service
from perpendis.engine import stream
from perpendis.engine.options import ComparisonOptions
from perpendis.errors import InputError
from perpendis.inputs.formats.buffer import view_reader
from perpendis.service import planner, requests
from perpendis.service.boundary import answering
from perpendis.service.planner import Captures, InMemoryPair, StreamedPair, plan
from perpendis.service.session import Session


def reader(data: bytes) -> tuple:
    return view_reader(np.frombuffer(data, np.uint8))


def compare(**options) -> requests.CompareRequest:
    raw = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "p0"}, "b": {"name": "b.npy", "data": "p1"}}}
    return requests.parse({**raw, "options": options})


def test_each_op_parses_to_its_own_frozen_request():
    parsed = {
        "compare": requests.parse({"op": "compare", "inputs": {}, "options": {"atol": 1e-3, "depth": 2}}),
        "element": requests.parse({"op": "element", "flat": 3}),
        "reserve": requests.parse({"op": "reserve", "bytes": 10}),
        "bisect_order": requests.parse({"op": "bisect_order", "order": ["x"]}),
    }
    assert parsed["compare"].options == ComparisonOptions(atol=1e-3, depth=2)
    assert requests.parse({"op": "rejudge"}).options == ComparisonOptions()
    assert parsed["element"] == requests.ElementRequest(3)
    assert parsed["reserve"].bytes == 10 and parsed["bisect_order"].order == ["x"]
    for request in parsed.values():
        with pytest.raises(dataclasses.FrozenInstanceError):
            request.options = None  # type: ignore[misc]
    assert set(requests.OPS) == {
        "reserve", "compare", "rejudge", "element", "step", "slice", "scatter", "bisect", "bisect_pair",
        "bisect_order", "model_explorer", "runs", "checkpoints",
    }


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"op": "reserve", "bytes": -1}, "bytes must be a whole number"),
        ({"op": "reserve", "bytes": True}, "bytes must be a whole number"),
        ({"op": "compare", "options": {"void_format": {"c": "float8_e5m2"}}}, "void_format must map sides"),
        ({"op": "bisect", "options": {"mapping": {"a": 1}}}, "mapping must map names of A"),
        ({"op": "bisect_order", "order": "conv1"}, "order must list names"),
        ({"op": "runs", "inputs": {"runs": {"only": {}}}}, "give at least two runs"),
    ],
)
def test_bad_fields_are_refused_once_with_the_message_the_page_shows(request_, message):
    with pytest.raises(InputError, match=message):
        requests.parse(request_)
    assert message in service.serve(request_, {})["error"]["message"]


@pytest.mark.parametrize(
    ("request_", "named", "known"),
    [
        ({"op": "compare", "inputs": {}, "options": {"atoll": 1e-3}}, "'atoll'", "atol, check_dtype, depth"),
        ({"op": "rejudge", "options": {"preset": "fp16", "mapping": {}}}, "'mapping'", "preset, rtol, task"),
        ({"op": "checkpoints", "inputs": {}, "options": {"only": ["x"]}}, "'only'", "rename, rtol"),
        ({"op": "runs", "inputs": {"runs": {"r": {}, "s": {}}}, "options": {"referense": "r"}}, "'referense'",
         "only, preset, reference"),
        ({"op": "element", "flat": 3, "falt": 4}, "'falt'", "op, id, flat"),
        ({"op": "compare", "inputs": {}, "option": {"atol": 1}}, "'option'", "inputs, options, text"),
    ],
)
def test_unknown_keys_are_refused_naming_the_key_and_the_known_ones(request_, named, known):
    with pytest.raises(InputError) as refused:
        requests.parse(request_)
    assert named in refused.value.message and known in refused.value.message
    answer = service.serve(request_, {}, session=Session())
    assert not answer["ok"] and named in answer["error"]["message"]


def test_a_misspelt_atol_no_longer_compares_at_the_default_tolerance():
    a, b = npy(np.float32([1.0, 2.0])), npy(np.float32([1.0, 2.001]))
    inputs = {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}
    good = service.serve({"op": "compare", "inputs": inputs, "options": {"atol": 1e-2}}, {"a": a, "b": b},
                         session=Session())
    assert good["ok"] and good["report"]["tolerance"]["atol"] == 1e-2
    typo = service.serve({"op": "compare", "inputs": inputs, "options": {"atoll": 1e-2}}, {"a": a, "b": b},
                         session=Session())
    assert not typo["ok"] and "unknown option 'atoll'" in typo["error"]["message"]


def test_the_text_report_is_built_only_when_asked():
    a, b = npy(np.float32([1.0, 2.0, 3.0])), npy(np.float32([1.0, 2.0, 3.0001]))
    raw = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}}
    session = Session()
    page = service.serve(raw, {"a": a, "b": b}, session=session)
    assert page["ok"] and "text" not in page and page["markdown"].startswith("**Perpendis")
    asked = service.serve({**raw, "text": True}, {"a": a, "b": b}, session=session)
    assert asked["text"] == session.report().to_text() and asked["report"] == page["report"]
    rejudged = service.serve({"op": "rejudge", "options": {"atol": 1.0}, "text": True}, {}, session=session)
    assert rejudged["text"].startswith(rejudged["report"]["verdict"].upper())
    assert "text" not in service.serve({"op": "rejudge", "options": {}}, {}, session=session)
    bad = service.serve({**raw, "text": "yes"}, {"a": a, "b": b}, session=session)
    assert bad["error"]["message"] == "text must be true or false, got 'yes'"


def test_an_unknown_op_is_a_bug_in_the_worker_not_bad_input():
    with pytest.raises(ValueError, match="unknown op 'compute'"):
        requests.parse({"op": "compute"})
    with pytest.raises(ValueError, match="unknown op"):
        service.serve({"op": "compute"}, {})


def test_the_boundary_answers_bad_input_and_lets_bugs_through():
    def bad() -> dict:
        raise InputError("box A is empty", side="a")

    assert answering(bad) == {"ok": False, "error": {"message": "box A is empty", "where": None, "side": "a"}}
    with pytest.raises(KeyError):
        answering(lambda: {}["missing"])


def test_the_planner_keeps_small_pairs_in_memory_and_streams_big_npy_pairs(monkeypatch):
    a, b = npy(np.ones((20, 30), np.float32)), npy(np.zeros((20, 30), np.float32))
    files = {"p0": reader(a), "p1": reader(b)}
    kept = plan(compare(), {}, files)
    assert isinstance(kept, InMemoryPair) and set(kept.payloads) == {"p0", "p1"}
    assert bytes(kept.payloads["p0"]) == a
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", len(a) + len(b))
    streamed = plan(compare(), {}, files)
    assert isinstance(streamed, StreamedPair) and streamed.keys == {"a": "p0", "b": "p1"}
    assert streamed.a.shape == (20, 30) and streamed.b.side == "b"
    # Bytes copied in are never streamed: they are in memory already.
    assert isinstance(plan(compare(), {"p0": a, "p1": b}, {}), InMemoryPair)
    assert not planner.read_ahead([len(a), len(b)]) and planner.read_ahead([len(a)])


def polygraphy_capture(seed: int) -> bytes:
    """A capture of two layers' outputs, as Polygraphy itself saves it (``RunResults``)."""
    pytest.importorskip("polygraphy")
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult
    from polygraphy.json import to_json

    rng = np.random.default_rng(seed)
    outputs = {"conv1": rng.standard_normal((2, 3)).astype(np.float32), "relu1": np.arange(4, dtype=np.float32)}
    results = RunResults()
    results.append(("onnxrt-runner", [IterationResult(outputs, runner_name="onnxrt-runner")]))
    return to_json(results).encode()


def test_the_planner_reads_two_polygraphy_captures_through_their_readers():
    a, b = polygraphy_capture(1), polygraphy_capture(2)
    raw = {"op": "bisect", "inputs": {"a": {"name": "a.json", "data": "p0"}, "b": {"name": "b.json", "data": "p1"}}}
    job = plan(requests.parse(raw), {}, {"p0": reader(a), "p1": reader(b)})
    assert isinstance(job, Captures) and [e.name for e in job.a] == [e.name for e in job.b]
    assert len(job.a) == 2
    answer = service.serve(raw, {}, {"p0": reader(a), "p1": reader(b)}, session=Session())
    assert answer["ok"] and len(answer["bisect"]["pairs"]) == 2
    # A compare of two captures of several tensors is a bisect too, and says so.
    switched = service.serve({**raw, "op": "compare"}, {}, {"p0": reader(a), "p1": reader(b)}, session=Session())
    assert switched["ok"] and "pair by pair" in switched["switched"]


def test_a_session_forgets_on_fresh_ops_only():
    session = Session()
    a, b = npy(np.ones(8, np.float32)), npy(np.ones(8, np.float32))
    raw = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}}
    assert service.serve(raw, {"a": a, "b": b}, session=session)["ok"]
    session.forget("element")
    assert session.pair is not None and session.report().identical
    session.forget("bisect")
    assert session.pair is None
    after = service.serve({"op": "element", "flat": 0}, {}, session=session)
    assert after["error"]["message"] == "nothing has been compared yet: compare two inputs first"
    opened = service.serve({"op": "bisect_pair", "index": 0}, {}, session=session)
    assert "nothing has been bisected yet" in opened["error"]["message"]
    assert json.dumps(after)  # plain JSON
