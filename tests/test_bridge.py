"""The Python the page's workers call (:mod:`perpendis.service.bridge`), natively.

``app/worker.js`` and ``app/fold_worker.js`` hand these entry points JSON, byte views and
Blobs; here the views and Blobs are stand-ins with the same few members Pyodide's proxies
have (``byteLength``/``assign_to``, ``size``/``name``), and every answer is checked
against :func:`perpendis.service.api.handle` on the same bytes.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from perpendis.errors import InputError
from perpendis.service import api, bridge
from perpendis.service.bridge import CoreWorker, HelperWorker, blob_reader, with_texts
from perpendis.service.helper import Helper
from perpendis.service.session import Session
from worker_fakes import Blob, View, read_slice


def npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def pair() -> tuple[bytes, bytes]:
    a = np.linspace(-1, 1, 3000, dtype=np.float32).reshape(30, 100)
    b = a.copy()
    b[3, ::7] = np.nextafter(b[3, ::7], np.float32(2))
    return npy(a), npy(b)


REQUEST = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "p0"}, "b": {"name": "b.npy", "data": "p1"}}}


def test_buffers_copied_in_answer_as_the_service_does():
    a, b = pair()
    core = CoreWorker(read_slice, Session())
    got = json.loads(core.serve(json.dumps(REQUEST), [("p0", View(a)), ("p1", View(b))], [], [], None, 1))
    assert got == json.loads(json.dumps(api.handle(REQUEST, {"p0": a, "p1": b})))
    assert got["report"]["n_bitwise_diff"] == 15


def test_long_texts_travel_as_utf8_and_are_read_as_text():
    text_a = "tensor([1.0000, 2.0000, 3.0000])"
    payloads = {"u0": np.frombuffer(text_a.encode(), np.uint8)}
    value = {"inputs": {"a": {"utf8": "u0", "name": None}, "b": [{"text": "x"}]}}
    assert with_texts(value, payloads) == {"inputs": {"a": {"name": None, "text": text_a}, "b": [{"text": "x"}]}}
    assert payloads == {}  # the bytes are let go once decoded
    core = CoreWorker(read_slice, Session())
    request = {"op": "compare", "inputs": {"a": {"utf8": "u0"}, "b": {"text": "tensor([1.0, 2.0, 3.0001])"}}}
    got = json.loads(core.serve(json.dumps(request), [("u0", View(text_a.encode()))], [], [], None, 1))
    expected = api.handle({**request, "inputs": {**request["inputs"], "a": {"text": text_a}}}, {})
    assert got["report"] == json.loads(json.dumps(expected["report"]))


def test_files_handed_over_unread_are_read_through_read_slice():
    a, b = pair()
    blobs = [("p0", Blob("a.npy", a)), ("p1", Blob("b.npy", b))]
    core = CoreWorker(read_slice, Session())
    got = json.loads(core.serve(json.dumps(REQUEST), [], blobs, [], None, 1))
    assert got["report"] == json.loads(json.dumps(api.handle(REQUEST, {"p0": a, "p1": b})))["report"]
    assert all((0, blob.size) in blob.reads for _, blob in blobs)  # small: read whole


def test_files_read_ahead_are_not_read_again_and_are_read_only():
    a, b = pair()
    core = CoreWorker(read_slice, Session())
    assert core.read_ahead([len(a), len(b)])
    core.keep_ahead(7, View(a))
    core.keep_ahead(8, View(b))
    assert not core.ahead[7].flags.writeable
    blobs = [("p0", Blob("a.npy", a)), ("p1", Blob("b.npy", b))]
    got = json.loads(core.serve(json.dumps(REQUEST), [], blobs, [("p0", 7), ("p1", 8)], None, 1))
    assert got["ok"] and all(blob.reads == [] for _, blob in blobs)
    core.drop_ahead(7)
    core.drop_ahead(7)  # dropping twice is harmless
    assert list(core.ahead) == [8]


def test_a_chosen_file_that_cannot_be_read_any_more_is_named_in_the_answer():
    a, b = pair()

    def failing(blob: Blob, offset: int, length: int) -> View:
        error = bridge.JsException("NotReadableError")
        error.name = "NotReadableError"
        raise error

    read = blob_reader(failing, Blob("weights.npy", a))
    with pytest.raises(InputError, match=r"weights.npy could not be read \(NotReadableError\)"):
        read(0, 10)
    core = CoreWorker(failing, Session())
    got = json.loads(core.serve(json.dumps(REQUEST), [("p0", View(a))], [("p1", Blob("b.npy", b))], [], None, 1))
    assert got["ok"] is False and "b.npy could not be read" in got["error"]["message"]


def test_a_new_comparison_forgets_the_kept_pair_before_its_bytes_arrive():
    a, b = pair()
    session = Session()
    core = CoreWorker(read_slice, session)
    core.serve(json.dumps(REQUEST), [("p0", View(a)), ("p1", View(b))], [], [], None, 1)
    assert session.pair is not None
    element = json.loads(core.serve(json.dumps({"op": "element", "flat": 301}), [], [], [], None, 1))
    assert element["ok"] and element["element"]["flat"] == 301 and session.pair is not None
    bad = json.loads(core.serve(json.dumps({"op": "compare", "inputs": {"a": {"text": "nope"}}}), [], [], [], None, 1))
    assert bad["ok"] is False and session.pair is None


def test_a_helper_folds_a_share_as_the_helper_does_natively():
    from perpendis.engine.compare import prepare
    from perpendis.engine.fold.chunk import CHUNK
    from perpendis.inputs.tensor import from_numpy

    rng = np.random.default_rng(4)
    x = rng.standard_normal(2 * CHUNK + 5).astype(np.float32)
    y = x + np.float32(1e-6)
    prepared = prepare(from_numpy(x, "a"), from_numpy(y, "b"))
    share = prepared.shares(2)[1]
    raw_a, raw_b = (part.tobytes() for part in prepared.share_bytes(share))
    native = Helper().fold(share.to_json(), raw_a, raw_b)
    helper = HelperWorker(read_slice)
    assert helper.fold(share.to_json(), View(raw_a), View(raw_b)).tobytes() == native.tobytes()
    files = (Blob("a.npy", npy(x)), Blob("b.npy", npy(y)))
    assert helper.fold_files(share.to_json(), "{}", *files).tobytes() == native.tobytes()
    found = helper.select(json.dumps([0, 5]), View(np.array([3.0, 1.0, 2.0, 9, 8, 7], np.float64).tobytes()), False)
    assert np.frombuffer(found, np.float64).tolist() == [1.0, 9.0]
    assert helper.reserve(0) == 0
