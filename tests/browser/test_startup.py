"""The built page starts the Python core in a worker, stays on its origin, and really runs
``perpendis`` there: the same request gives the same report in the browser as natively."""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

import numpy as np
import pytest
from made import npy_bytes

pytest.importorskip("playwright")
from playwright.sync_api import expect

# Sends one request through the page's own client module (the instance main.js uses).
# Buffers are given as lists of byte values and become transferred ArrayBuffers.
REQUEST_JS = """async ([op, payload, files]) => {
  const { core } = await import(new URL("app/client.js", location.href));
  const buffers = [];
  for (const [side, name, bytes] of files) {
    const buffer = new Uint8Array(bytes).buffer;
    buffers.push(buffer);
    payload.inputs[side] = { name, buffer };
  }
  const progress = [];
  const result = await core.request(op, payload, buffers, (stage, fraction) => progress.push([stage, fraction]));
  return { result, progress, leftBytes: buffers.map((b) => b.byteLength) };
}"""


def native(request: dict, payloads: dict) -> dict:
    from perpendis.service import api

    return json.loads(json.dumps(api.handle(request, payloads)))




def test_page_becomes_ready_with_the_project_wheel(ready_page, context, server):
    assert "ready" in ready_page.get_by_test_id("status").text_content().lower()
    paths = [urlsplit(url).path for url in context.page_requests]
    # Fetched by the worker, not the page: proves worker requests are seen by the harness.
    assert "/pyodide/pyodide.asm.wasm" in paths
    assert any(path.startswith("/pyodide/perpendis-") and path.endswith(".whl") for path in paths)
    assert not any("micropip" in path for path in paths), "the project wheel must load from the lock, not micropip"


def test_every_request_stays_on_the_origin(ready_page, context, server):
    assert context.requests, "no request was recorded"
    assert all(url.startswith(server.origin + "/") for url in context.requests), context.requests
    logged = server.log_path.read_text()
    assert "GET /pyodide/pyodide-lock.json" in logged


def test_text_comparison_matches_native_perpendis(ready_page):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(12).astype(np.float32)
    b = a.copy()
    b[3] = np.nextafter(b[3], np.float32(np.inf))
    request = {"op": "compare", "inputs": {"a": {"text": repr(a)}, "b": {"text": repr(b)}}, "options": {}}

    answer = ready_page.evaluate(REQUEST_JS, ["compare", request, []])
    expected = native(request, {})

    got = answer["result"]
    assert got["ok"], got
    for key in ("verdict", "n_elements", "n_bitwise_diff", "max_ulp", "first_diff", "identical"):
        assert got["report"][key] == expected["report"][key], key


def test_file_buffers_are_transferred_and_read(ready_page):
    a = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    b = a.copy()
    b[1, 2, 3] = -b[1, 2, 3]
    data_a, data_b = npy_bytes(a), npy_bytes(b)
    request = {"op": "compare", "inputs": {}, "options": {}}
    files = [["a", "a.npy", list(data_a)], ["b", "b.npy", list(data_b)]]

    answer = ready_page.evaluate(REQUEST_JS, ["compare", request, files])
    expected = native(
        {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}},
         "options": {}},
        {"a": data_a, "b": data_b},
    )

    assert answer["leftBytes"] == [0, 0], "buffers must be moved to the worker, not copied"
    got = answer["result"]
    assert got["ok"], got
    assert got["report"]["a"]["shape"] == list(a.shape)
    for key in ("verdict", "n_bitwise_diff", "first_diff", "max_abs_diff"):
        assert got["report"][key] == expected["report"][key], key


def test_input_errors_come_back_as_results(ready_page):
    request = {"op": "compare", "inputs": {"a": {"text": "tensor([1., 2.,"}, "b": {"text": "tensor([1., 2.])"}},
               "options": {}}
    got = ready_page.evaluate(REQUEST_JS, ["compare", request, []])["result"]
    assert got["ok"] is False
    assert not got["error"]["message"].startswith("internal error"), got
    assert got["error"]["side"] == "a"


def test_cancel_rejects_the_pending_request_and_the_next_one_runs(page, server):
    page.goto(server.url)
    text = repr(np.linspace(0, 1, 5, dtype=np.float32))
    outcome = page.evaluate(
        """async (text) => {
             const { core } = await import(new URL("app/client.js", location.href));
             const payload = { inputs: { a: { text }, b: { text } }, options: {} };
             const first = core.request("compare", payload).then(() => "resolved", (err) => err.name);
             core.cancel();  // while the core is still loading: the request is queued in the worker
             const second = await core.request("compare", payload);
             return { first: await first, second, state: core.status.state };
           }""",
        text,
    )
    assert outcome["first"] == "CancelledError"
    assert outcome["second"]["ok"], outcome["second"]
    assert outcome["second"]["report"]["identical"] is True
    assert outcome["state"] == "ready"


def test_cancel_of_a_tiny_compare_keeps_the_core(ready_page):
    """Cancel right after a small compare is sent: the request rejects at once, the core is
    not restarted (no status but ready), and the next request is answered by the same core."""
    text = repr(np.linspace(0, 1, 5, dtype=np.float32))
    outcome = ready_page.evaluate(
        """async (text) => {
             const { core } = await import(new URL("app/client.js", location.href));
             const states = [];
             core.onStatus((s) => states.push(s.state));
             const payload = { inputs: { a: { text }, b: { text } }, options: {} };
             const first = core.request("compare", payload).then(() => "resolved", (err) => err.name);
             core.cancel();
             const start = performance.now();
             const second = await core.request("compare", payload);
             const ms = performance.now() - start;
             // What Cancel cost before: a fresh core (a new worker, files from the HTTP cache).
             const { CoreClient } = await import(new URL("app/client.js", location.href));
             const restart = performance.now();
             await new CoreClient().request("compare", payload);
             return { first: await first, second, states, ms, restartMs: performance.now() - restart };
           }""",
        text,
    )
    assert outcome["first"] == "CancelledError"
    assert outcome["second"]["ok"] and outcome["second"]["report"]["identical"] is True
    assert set(outcome["states"]) == {"ready"}, outcome["states"]
    print(f"\ncancel of a tiny compare: next answer {outcome['ms']:.0f} ms later, core not restarted "
          f"(a restarted core answers it {outcome['restartMs']:.0f} ms later)")


def test_comparison_through_the_ui(ready_page):
    a = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    b = (a.astype(np.float64) * 1.5).astype(np.float32)
    ready_page.get_by_test_id("paste-a").fill(repr(a))
    ready_page.get_by_test_id("paste-b").fill(repr(b))
    ready_page.get_by_test_id("compare").click()
    request = {"op": "compare", "inputs": {"a": {"text": repr(a)}, "b": {"text": repr(b)}}, "options": {}}
    verdict = native(request, {})["report"]["verdict"]
    expect(ready_page.get_by_test_id("verdict")).to_have_text(re.compile(f"^{verdict}\\b", re.I), timeout=30_000)
