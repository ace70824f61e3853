"""Big files chosen in the page: the core grows its heap for them before Compare is pressed
(``perpendis.heap``), and a comparison after that is the native one."""

from __future__ import annotations

import json

import numpy as np
from perpendis.service import api, heap
from test_page_stream import assert_close

# Records the page's requests to the core (the bytes a reserve names, how many files a
# prefetch lists), with their answers.
SPY_JS = """async () => {
  const { core } = await import(new URL("app/client.js", location.href));
  window.__requests = [];
  const request = core.request.bind(core);
  core.request = (op, payload, ...rest) => {
    const entry = { op, bytes: payload && payload.bytes, files: payload && payload.files && payload.files.length };
    window.__requests.push(entry);
    const answer = request(op, payload, ...rest);
    answer.then((result) => { entry.answer = result; }, () => {});
    return answer;
  };
}"""


def test_big_files_chosen_grow_the_heap_before_compare(ready_page, tmp_path):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(3 << 20).astype(np.float32)  # 12 MiB a side: 24 MiB together
    b = a.copy()
    b[::7] = np.nextafter(b[::7], np.float32(np.inf))
    paths = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(paths[0], a)
    np.save(paths[1], b)
    ready_page.evaluate(SPY_JS)
    ready_page.get_by_test_id("file-a").set_input_files(paths[0])
    ready_page.get_by_test_id("file-b").set_input_files(paths[1])
    ready_page.wait_for_function("() => window.__requests.filter((r) => r.answer).length === 1")
    [reserve] = ready_page.evaluate("() => window.__requests")
    total = sum(path.stat().st_size for path in paths)
    # One file alone is under the 16 MiB the page asks for; both together are over.
    assert reserve["op"] == "reserve" and reserve["bytes"] == total
    assert reserve["answer"] == {"ok": True, "reserved": total * heap.RESERVE_FACTOR}

    ready_page.get_by_test_id("compare").click()
    ready_page.wait_for_function("() => window.__requests.some((r) => r.op === 'compare' && r.answer)")
    [compare] = [r for r in ready_page.evaluate("() => window.__requests") if r["op"] == "compare"]
    request = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}}
    expected = api.handle(request, {"a": paths[0].read_bytes(), "b": paths[1].read_bytes()})
    assert compare["answer"]["ok"], compare["answer"]
    assert_close(compare["answer"]["report"], json.loads(json.dumps(expected["report"])))
