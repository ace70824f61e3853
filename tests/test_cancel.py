"""Cancel stops a request between its chunks and leaves the core's worker ready for the next
one (``perpendis.service.cancel``), through the bridge the page's worker calls."""

from __future__ import annotations

import json

import numpy as np
from numpy_written import npy, npz
from perpendis.engine import stream
from perpendis.service import api
from perpendis.service.boundary import cancelled
from perpendis.service.bridge import CoreWorker
from perpendis.service.session import Session
from worker_fakes import Blob, View, read_slice


class Signal:
    """The page's cancel signal as the worker sees it: set after `after` progress calls."""

    def __init__(self, after: int | None) -> None:
        self.after, self.calls = after, []

    def progress(self, stage: str, fraction: float) -> None:
        self.calls.append((stage, fraction))

    def asked(self) -> bool:
        return self.after is not None and len(self.calls) >= self.after


def captures() -> tuple[bytes, bytes]:
    rng = np.random.default_rng(5)
    a = {f"layer{i}": rng.standard_normal((16, 16)).astype(np.float32) for i in range(8)}
    b = {name: np.nextafter(x, np.float32(9)) for name, x in a.items()}
    return npz(**a), npz(**b)


BISECT = {"op": "bisect", "inputs": {"a": [{"name": "a.npz", "data": "p0"}], "b": [{"name": "b.npz", "data": "p1"}]}}
COMPARE = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "p0"}, "b": {"name": "b.npy", "data": "p1"}}}


def test_a_bisect_stops_between_layers_and_the_next_request_is_answered():
    a, b = captures()
    signal = Signal(after=3)
    core = CoreWorker(read_slice, Session(), cancel_asked=signal.asked)
    got = json.loads(core.serve(json.dumps(BISECT), [("p0", View(a)), ("p1", View(b))], [], [], signal.progress, 1))
    assert got == cancelled()
    assert len(signal.calls) == 3  # three of the eight layers were started, no more
    # The same worker answers the next request as if nothing had been cancelled.
    signal.after = None
    again = json.loads(core.serve(json.dumps(BISECT), [("p0", View(a)), ("p1", View(b))], [], [], signal.progress, 1))
    expected = json.loads(json.dumps(api.handle(BISECT, {"p0": a, "p1": b})))
    assert again["ok"] and again["bisect"]["pairs"] == expected["bisect"]["pairs"]
    assert len(again["bisect"]["pairs"]) == 8


def test_a_streamed_comparison_stops_between_chunks_without_reading_the_rest(monkeypatch):
    x = np.random.default_rng(6).standard_normal(6 * stream.CHUNK + 5).astype(np.float32)
    a, b = npy(x), npy(np.nextafter(x, np.float32(9)))
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", len(a) + len(b))
    blobs = [("p0", Blob("a.npy", a)), ("p1", Blob("b.npy", b))]
    signal = Signal(after=1)
    core = CoreWorker(read_slice, Session(), cancel_asked=signal.asked)
    got = json.loads(core.serve(json.dumps(COMPARE), [], blobs, [], signal.progress, 1))
    assert got == cancelled()
    read = sum(length for _, blob in blobs for _, length in blob.reads)
    assert 0 < read < (len(a) + len(b)) / 2, read
    signal.after = None
    for _, blob in blobs:
        blob.reads.clear()
    done = json.loads(core.serve(json.dumps(COMPARE), [], blobs, [], signal.progress, 1))
    assert done["ok"] and done["report"]["n_bitwise_diff"] == x.size and done["streamed"]


def test_without_a_cancel_signal_the_answer_is_unchanged():
    a, b = captures()
    signal = Signal(after=None)
    core = CoreWorker(read_slice, Session(), cancel_asked=signal.asked)
    got = json.loads(core.serve(json.dumps(BISECT), [("p0", View(a)), ("p1", View(b))], [], [], signal.progress, 1))
    assert got["ok"] and len(got["bisect"]["pairs"]) == 8 and len(signal.calls) >= 8
