"""The speed benchmark: start-up, full reports, parsing, memory and streaming, native and in the tab.

Every figure is measured in one run on one machine, so the ratios between them are fair
even where the absolute numbers are noisy.  Nothing here asserts: a missed target is
something to investigate (``py-spy`` natively, the per-stage timings in the tab), not a
failing test.

The tab figures come from the real built site served by ``scripts/serve.py`` in Debian's
Chromium driven by Playwright (never ``playwright install``).  Besides the page itself,
the benchmark adds three files of its own to the temporary site, all same-origin so the
page's Content-Security-Policy holds: a worker running a bare single-pass JavaScript diff
(the yardstick for the full report), a worker hosting Pyodide with ``perpendis`` the way
``app/worker.js`` does but reporting per-stage timings and the wasm heap size, and an
empty page with two file inputs, so that multi-gigabyte files reach a worker as ``File``
objects without the page ever reading them.

Long tasks (the page's main thread busy over 50 ms, from a ``PerformanceObserver``) are
charged to phases; ``longest_task_ms`` counts the page's own phases (start-up, a report
through the UI, streaming), not the harness fetching test files into the page.

Usage::

    python bench/run.py               # everything: sizes up to 64M elements, 2 x 3 GB streamed
    python bench/run.py --quick       # sizes up to 16M, 2 x 256 MB streamed: under five minutes
    python bench/run.py --json        # also print all figures as one JSON object (last line)
    python bench/run.py --no-browser  # native figures only
    python bench/run.py --only startup  # start-up alone: ready cold/warm, against the floor, first visits
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "py", ROOT / "scripts", ROOT / "tests" / "browser", ROOT / "bench"):
    sys.path.insert(0, str(path))

import serve  # noqa: E402
from conftest import CHROMIUM_ARGS, chromium_path  # noqa: E402
from perpendis.engine import stream  # noqa: E402
from perpendis.inputs.parse import parse_text  # noqa: E402
from perpendis.service import api  # noqa: E402
from startup import READY_AT_JS, SERVICE_WORKER_JS, add_floor, floor_figures  # noqa: E402

import build  # noqa: E402

M = 1 << 20
DIFF_FRACTION = 0.1  # share of elements one ULP apart: a typical rounding difference
TARGETS = {
    "interactive_ms": ("<=", 300),
    "ready_cold_s": ("<=", 3.0),
    "ready_warm_s": ("<=", 1.5),
    "ready_vs_floor_cold": ("<=", 1.05),
    "ready_vs_floor_warm": ("<=", 1.05),
    "first_visit_50mbit_s": ("<=", 3.0),
    "first_visit_20mbit_s": ("<=", 6.0),
    "first_visit_mb": ("<=", 9.0),
    "report_16m_vs_js": ("<=", 3.0),
    "report_16m_tab_vs_native": ("<=", 1.0),
    "parse_1m_tab_ms": ("<=", 1000),
    "parse_1m_vs_numpy": ("<=", 2.0),
    "peak_memory_ratio": ("<=", 3.0),
    "stream_mb_per_s": (">=", 200),
    "stream_heap_mb": ("<=", 512),
    "longest_task_ms": ("<=", 100),
}


# ---------------------------------------------------------------------------------------
# Inputs: written by NumPy, the same bytes natively and in the tab.


def rounding_pair(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 arrays where a tenth of the elements differ by one ULP, as after a reordered sum."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n, dtype=np.float32)
    b = a.copy()
    hit = rng.random(n) < DIFF_FRACTION
    b[hit] = np.nextafter(b[hit], np.where(rng.random(int(hit.sum())) < 0.5, -np.inf, np.inf).astype(np.float32))
    return a, b


def save_pair(directory: Path, n: int) -> tuple[Path, Path]:
    a, b = rounding_pair(n, seed=n)
    paths = directory / f"a{n}.npy", directory / f"b{n}.npy"
    np.save(paths[0], a)
    np.save(paths[1], b)
    return paths


def write_big_pair(directory: Path, n: int) -> tuple[Path, Path]:
    """Two ``.npy`` files of ``n`` float32 each, written chunk by chunk so they may exceed memory."""
    paths = directory / "big_a.npy", directory / "big_b.npy"
    maps = [np.lib.format.open_memmap(p, mode="w+", dtype=np.float32, shape=(n,)) for p in paths]
    for start in range(0, n, 16 * M):
        stop = min(n, start + 16 * M)
        maps[0][start:stop], maps[1][start:stop] = rounding_pair(stop - start, seed=start)
    for m in maps:
        m.flush()
    del maps
    return paths


def pasted_text(n: int) -> str:
    """What ``repr`` shows for a float32 NumPy array of ``n`` elements printed in full.

    NumPy's own repr takes minutes for a million elements (it grows its lines by string
    concatenation), so the text is assembled from NumPy's printing of 1000-element pieces:
    the same number formatting, separators and line layout as one ``repr``.
    """
    values = np.random.default_rng(5).standard_normal(n, dtype=np.float32)
    indent = " " * len("array([")
    with np.printoptions(threshold=sys.maxsize, suppress=True):
        pieces = [
            np.array2string(values[i : i + 1000], separator=", ", prefix=indent)[1:-1] for i in range(0, n, 1000)
        ]
    return "array([" + f",\n{indent}".join(pieces) + "], dtype=float32)"


# ---------------------------------------------------------------------------------------
# Native figures.


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def best_ms(run: Callable[[], object], repeat: int) -> float:
    """Fastest of ``repeat`` runs: the least disturbed by the other work on a shared machine."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def handle_compare(data_a: bytes, data_b: bytes) -> dict[str, Any]:
    """The worker's request for two dropped files, run natively through the same entry point."""
    request = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}}
    result = api.handle(request, {"a": data_a, "b": data_b})
    if not result["ok"]:
        raise RuntimeError(f"the benchmark's own inputs were refused: {result['error']}")
    return result


def native_reports(pairs: dict[int, tuple[Path, Path]], repeat: int) -> dict[int, float]:
    out = {}
    for n, (pa, pb) in pairs.items():
        data_a, data_b = pa.read_bytes(), pb.read_bytes()
        out[n] = best_ms(lambda a=data_a, b=data_b: handle_compare(a, b), repeat)
    return out


def native_peak_ratio(pa: Path, pb: Path) -> float:
    """Peak bytes NumPy and Python allocate for a full report, over the two files' size."""
    data_a, data_b = pa.read_bytes(), pb.read_bytes()
    tracemalloc.start()
    try:
        handle_compare(data_a, data_b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / (len(data_a) + len(data_b))


def native_parse(text: str, repeat: int) -> tuple[float, float]:
    """``parse_text`` against NumPy's own fastest text reader on the numbers alone."""
    numbers = text[text.index("[") + 1 : text.rindex("]")]
    parse_ms = best_ms(lambda: parse_text(text), repeat)
    numpy_ms = best_ms(lambda: np.fromstring(numbers, dtype=np.float32, sep=","), repeat)
    return parse_ms, numpy_ms


def native_stream(pa: Path, pb: Path) -> float:
    """MB/s of both files streamed through memory maps (the CLI's path)."""
    start = time.perf_counter()
    stream.compare_sources(stream.map_file(pa, "a"), stream.map_file(pb, "b"))
    return (pa.stat().st_size + pb.stat().st_size) / 1e6 / (time.perf_counter() - start)


# ---------------------------------------------------------------------------------------
# In the tab: helper files added to the temporary site.

JS_DIFF_WORKER = r"""
// One pass over two float32 .npy payloads with the core's per-element logic: bit compare,
// and for differing elements NaN mismatch, ULP distance by ordered keys and its histogram,
// absolute and relative error with their worst elements, the allclose test; plus the one
// full pass of float maths the core also makes (sum of b squared).
function payload(buffer) {
  const view = new DataView(buffer);
  const major = view.getUint8(6);
  const offset = major === 1 ? 10 + view.getUint16(8, true) : 12 + view.getUint32(8, true);
  return offset;
}
self.onmessage = (event) => {
  const { a, b, atol, rtol } = event.data.args;
  const t0 = performance.now();
  const oa = payload(a), ob = payload(b);
  const n = (a.byteLength - oa) / 4;
  const fa = new Float32Array(a, oa, n), fb = new Float32Array(b, ob, n);
  const ua = new Uint32Array(a, oa, n), ub = new Uint32Array(b, ob, n);
  const hist = new Float64Array(34);
  let nDiff = 0, first = -1, nNan = 0, nFail = 0, maxUlp = 0, iUlp = -1, maxAbs = 0, iAbs = -1;
  let maxRel = 0, iRel = -1, sbb = 0, sse = 0;
  for (let i = 0; i < n; i++) {
    const vb = fb[i];
    sbb += vb * vb;
    const x = ua[i], y = ub[i];
    if (x === y) continue;
    nDiff++;
    if (first < 0) first = i;
    const va = fa[i];
    if ((va !== va) !== (vb !== vb)) { nNan++; nFail++; continue; }
    const ka = x >= 0x80000000 ? 0x80000000 - (x - 0x80000000) : 0x80000000 + x;
    const kb = y >= 0x80000000 ? 0x80000000 - (y - 0x80000000) : 0x80000000 + y;
    const d = Math.abs(ka - kb);
    hist[d <= 2 ? d : 34 - Math.clz32(d - 1)]++;
    if (d > maxUlp) { maxUlp = d; iUlp = i; }
    const ad = Math.abs(va - vb);
    const rd = ad / Math.abs(vb);
    if (ad > maxAbs) { maxAbs = ad; iAbs = i; }
    if (rd > maxRel) { maxRel = rd; iRel = i; }
    sse += ad * ad;
    if (!(ad <= atol + rtol * Math.abs(vb))) nFail++;
  }
  const ms = performance.now() - t0;
  self.postMessage({ ms, n, nDiff, first, nNan, nFail, maxUlp, iUlp, maxAbs, iAbs, maxRel, iRel, sbb, sse });
};
"""

PY_WORKER = r"""
// Pyodide with perpendis, loaded as app/worker.js loads it, running one benchmark snippet per
// message and reporting the wasm heap size around it.
importScripts("../pyodide/pyodide.js");
const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;
self.readSlice = (blob, start, length) =>
  new Uint8Array(new FileReaderSync().readAsArrayBuffer(blob.slice(start, start + length)));
self.postProgress = (fraction) => self.postMessage({ type: "progress", fraction });
self.utf8 = (object, key) => new TextEncoder().encode(object[key]);  // a JS string as UTF-8, never a Python str
const ready = loadPyodide({
  indexURL: PYODIDE_URL, lockFileURL: PYODIDE_URL + "pyodide-lock.json", packages: ["numpy", "perpendis"],
}).then((py) => { py.runPython("import numpy, perpendis.service.api, perpendis.engine.stream"); return py; });
self.onmessage = async (event) => {
  try {
    const py = await ready;
    const heap = () => py._module.HEAP8.length;
    const before = heap();
    const main = py.runPython(event.data.code);
    const t0 = performance.now();
    const out = JSON.parse(main(event.data.args));
    self.postMessage({ type: "result", ms: performance.now() - t0, heapBefore: before, heapAfter: heap(), ...out });
  } catch (err) {
    self.postMessage({ type: "error", message: String(err && err.message || err) });
  }
};
"""

STREAM_PAGE = """<!doctype html>
<meta charset="utf-8"><title>stream benchmark</title>
<input type="file" id="a"><input type="file" id="b">
"""

# Python run in the benchmark worker: each is a function of the message's args, returning JSON.
PY_PARSE = """
import json, time
import numpy as np
from js import utf8
from perpendis.parse import parse_text
def main(args):
    # Two ways into Python: Pyodide's string conversion, and UTF-8 bytes moved as a buffer.
    t0 = time.perf_counter()
    encoded = utf8(args, "text")
    data = np.empty(encoded.byteLength, dtype=np.uint8)
    encoded.assign_to(data)
    via_utf8 = data.tobytes().decode("utf-8")
    t1 = time.perf_counter()
    text = args.text
    t2 = time.perf_counter()
    [tensor] = parse_text(text)
    t3 = time.perf_counter()
    assert via_utf8 == text
    return json.dumps({"utf8_ms": (t1 - t0) * 1000, "to_python_ms": (t2 - t1) * 1000,
                       "parse_ms": (t3 - t2) * 1000, "n": tensor.size})
main
"""

PY_COMPARE = """
import json, time
import numpy as np
from perpendis import api
def main(args):
    # As app/worker.js does: one copy of each transferred buffer into the heap, then api.handle.
    t0 = time.perf_counter()
    payloads = {}
    for key in ("a", "b"):
        view = getattr(args, key)
        payloads[key] = np.empty(view.byteLength, dtype=np.uint8)
        view.assign_to(payloads[key])
    t1 = time.perf_counter()
    request = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}}
    result = api.handle(request, payloads)
    t2 = time.perf_counter()
    json.dumps(result, allow_nan=False)
    t3 = time.perf_counter()
    # The first call also imports what the first report needs (the page does that in its
    # warm-up, after ready); the second is the report alone.  Forgetting the first pair
    # first, as the worker does, keeps the heap figure that of one report.
    api.forget("compare")
    api.handle(request, payloads)
    t4 = time.perf_counter()
    return json.dumps({"ok": result["ok"], "copy_ms": (t1 - t0) * 1000, "handle_ms": (t2 - t1) * 1000,
                       "handle_warm_ms": (t4 - t3) * 1000,
                       "json_ms": (t3 - t2) * 1000, "input_bytes": sum(p.size for p in payloads.values())})
main
"""

PY_STREAM = """
import json, time
import numpy as np
from js import readSlice, postProgress
from perpendis.engine import stream
reading = [0.0]
def reader(blob):
    def read(offset, length):
        t0 = time.perf_counter()
        out = np.empty(length, dtype=np.uint8)
        readSlice(blob, offset, length).assign_to(out)
        reading[0] += time.perf_counter() - t0
        return out
    return read
def main(args):
    t0 = time.perf_counter()
    a = stream.open_source(reader(args.a), int(args.a.size), args.a.name, "a")
    b = stream.open_source(reader(args.b), int(args.b.size), args.b.name, "b")
    report = stream.compare_sources(a, b, progress=postProgress)
    return json.dumps({"s": time.perf_counter() - t0, "read_s": reading[0], "verdict": report.verdict})
main
"""

LONGTASKS_INIT = """
window.__longtasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longtasks.push(entry.duration);
}).observe({ type: "longtask", buffered: true });
"""


@contextmanager
def served_site(data: dict[str, Path]) -> Iterator[tuple[str, Path, Any]]:
    """The built site plus the benchmark's files, served on a free port of 127.0.0.1:
    (its URL, a temporary folder for profiles, the server, which counts the bytes it sent)."""
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "dist"
        build.build(site)
        extra = site / "bench"
        extra.mkdir()
        (extra / "jsdiff.js").write_text(JS_DIFF_WORKER)
        (extra / "pyworker.js").write_text(PY_WORKER)
        (extra / "stream.html").write_text(STREAM_PAGE)
        add_floor(site)
        for name, path in data.items():
            (extra / name).symlink_to(path)
        httpd = serve.make_server(site, port=0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/", Path(tmp), httpd
        finally:
            httpd.shutdown()
            httpd.server_close()


class Tab:
    """One fresh Chromium profile with the long-task observer installed in every page."""

    def __init__(self, pw, profile: Path):
        self.context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=chromium_path(), args=CHROMIUM_ARGS
        )
        self.context.add_init_script(script=LONGTASKS_INIT)
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()
        self.longest: dict[str, float] = {}

    def goto(self, url: str) -> None:
        self.page.goto(url)

    def phase(self, name: str) -> None:
        """Charge the main thread's long tasks since the last phase to ``name``."""
        tasks = self.page.evaluate("() => (window.__longtasks || []).splice(0)")
        self.longest[name] = max([self.longest.get(name, 0.0), *tasks])

    def close(self) -> None:
        self.context.close()


def startup(pw, url: str, profiles: Path, runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """Navigation to interactive (inputs wired) and to core ready, cold then warm, median of runs.

    Warm is a returning visit: the next navigation once the first visit's service worker
    has cached the site and controls the page, as ``bench/startup.py`` measures it.  A
    reload the moment the first visit is ready, while that caching still runs, is shown
    apart (``ready_reload_s``).
    """
    interactive, cold, warm, reload, longest = [], [], [], [], {}
    for run in range(runs):
        tab = Tab(pw, profiles / f"startup{run}")
        for ready, phase in ((cold, "startup_cold"), (reload, "startup_reload"), (warm, "startup_warm")):
            if ready is warm:
                tab.page.evaluate(SERVICE_WORKER_JS)
            tab.goto(url)
            ready.append(tab.page.evaluate(READY_AT_JS) / 1000)
            interactive.append(
                tab.page.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
            )
            tab.phase(phase)
        tab.close()
        longest = {k: max(v, longest.get(k, 0.0)) for k, v in tab.longest.items()}
    figures = {
        "interactive_ms": statistics.median(interactive),
        "ready_cold_s": statistics.median(cold),
        "ready_warm_s": statistics.median(warm),
        "ready_reload_s": statistics.median(reload),
    }
    return figures, longest


# Waits until the core is ready with its helpers on the other CPU cores ready too (as a user
# who opened the page a few seconds ago finds it), or 20 s have gone.
READY_ON_ALL_CORES = """
const readyOnAllCores = (core) => new Promise((resolve) => {
  const cores = Math.min(navigator.hardwareConcurrency || 1, 4);
  const ready = (s) => s.state === "ready" && (cores < 2 || s.message.includes(`on ${cores} CPU cores`));
  core.onStatus((s) => ready(s) && resolve());
  setTimeout(resolve, 20000);
});
"""

TAB_REPORT_JS = """async ([urlA, urlB]) => {
  const { core } = await import(new URL("app/client.js", location.href));
  await readyOnAllCores(core);
  const [a, b] = await Promise.all([urlA, urlB].map((u) => fetch(u).then((r) => r.arrayBuffer())));
  const t0 = performance.now();
  const result = await core.request(
    "compare", { inputs: { a: { name: "a.npy", buffer: a }, b: { name: "b.npy", buffer: b } }, options: {} }, [a, b]);
  const ms = performance.now() - t0;
  if (!result.ok) throw new Error(result.error.message);
  const top = result.report.findings.length ? result.report.findings[0].kind : null;
  return { ms, n_diff: result.report.n_bitwise_diff, workers: result.workers || 1, top };
}""".replace("async ([urlA, urlB]) => {", "async ([urlA, urlB]) => {" + READY_ON_ALL_CORES, 1)

# Runs one snippet in a fresh benchmark worker: `fetch` lists [arg name, url, "buffer" | "text"].
WORKER_JOB_JS = """async ([script, code, args, fetches]) => {
  const worker = new Worker(new URL(script, location.href));
  const transfer = [];
  for (const [name, url, kind] of fetches) {
    const response = await fetch(url);
    args[name] = kind === "text" ? await response.text() : await response.arrayBuffer();
    if (kind !== "text") transfer.push(args[name]);
  }
  const out = await new Promise((resolve, reject) => {
    worker.onmessage = (event) => {
      if (event.data.type === "progress") return;
      if (event.data.type === "error") reject(new Error(event.data.message)); else resolve(event.data);
    };
    worker.onerror = (event) => reject(new Error(event.message || "the benchmark worker failed to start"));
    worker.postMessage({ code, args }, transfer);
  });
  worker.terminate();
  return out;
}"""

STREAM_JOB_JS = """async (code) => {
  const worker = new Worker(new URL("pyworker.js", location.href));  // this page is bench/stream.html
  const [a, b] = ["a", "b"].map((id) => document.getElementById(id).files[0]);
  const progress = [];
  const out = await new Promise((resolve, reject) => {
    worker.onmessage = (event) => {
      if (event.data.type === "progress") progress.push(event.data.fraction);
      else if (event.data.type === "error") reject(new Error(event.data.message));
      else resolve(event.data);
    };
    worker.onerror = (event) => reject(new Error(event.message || "the benchmark worker failed to start"));
    worker.postMessage({ code, args: { a, b } });
  });
  worker.terminate();
  return { ...out, progress: progress.length, size: a.size + b.size };
}"""


APP_STREAM_JS = """async () => {
  const { core } = await import(new URL("../app/client.js", location.href));  // this page is bench/stream.html
  await readyOnAllCores(core);
  const [a, b] = ["a", "b"].map((id) => document.getElementById(id).files[0]);
  const stages = new Set();
  let updates = 0;
  const t0 = performance.now();
  const result = await core.request(
    "compare", { inputs: { a: { name: a.name, file: a }, b: { name: b.name, file: b } }, options: {} }, [],
    (stage) => { stages.add(stage); updates += 1; });
  const ms = performance.now() - t0;
  if (!result.ok) throw new Error(result.error.message);
  return {
    ms, size: a.size + b.size, streamed: Boolean(result.streamed), stages: [...stages], updates,
    workers: result.workers || 1,
  };
}""".replace("async () => {", "async () => {" + READY_ON_ALL_CORES, 1)


# window.__uiTiming: resolves with the milliseconds from the next click on Compare to the verdict shown.
UI_TIMING_JS = """() => { window.__uiTiming = new Promise((resolve) => {
  const button = document.querySelector('[data-testid="compare"]');
  const verdict = document.querySelector('[data-testid="verdict"]');
  button.addEventListener("click", () => {
    const clicked = performance.now();
    const shown = () => verdict.checkVisibility() && verdict.textContent.trim() !== "";
    const observer = new MutationObserver(() => {
      if (!shown()) return;
      observer.disconnect();
      resolve(performance.now() - clicked);
    });
    observer.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  }, { capture: true, once: true });
}); }"""


USER_PAUSE_S = 1.0
"""Between choosing the files and pressing Compare: the page grows the core's heap for them meanwhile."""


def ui_report(tab: Tab, url: str, pair: tuple[Path, Path]) -> float:
    """Milliseconds from pressing Compare to the verdict shown, for two files opened in the
    page, Compare pressed :data:`USER_PAUSE_S` after they show, as a user would."""
    tab.goto(url)
    tab.page.evaluate(READY_AT_JS)
    tab.page.evaluate(
        'async () => { const { core } = await import(new URL("app/client.js", location.href));'
        + READY_ON_ALL_CORES
        + "await readyOnAllCores(core); }"
    )
    tab.phase("harness")
    tab.page.get_by_test_id("file-a").set_input_files(str(pair[0]))
    tab.page.get_by_test_id("file-b").set_input_files(str(pair[1]))
    # The chips show the files once the page has taken them.
    tab.page.wait_for_function("() => document.querySelectorAll('.has-file').length === 2")
    time.sleep(USER_PAUSE_S)
    # Timed in the page, from the click's event to the mutation that shows the verdict: a
    # Playwright wait polls at growing intervals (up to 500 ms), which it would add at random.
    tab.page.evaluate(UI_TIMING_JS)
    tab.page.get_by_test_id("compare").click()
    ms = tab.page.evaluate("() => window.__uiTiming")
    tab.phase("ui_report")
    return ms


def tab_figures(
    pw, url: str, profiles: Path, pairs: dict[int, tuple[Path, Path]], big: tuple[Path, Path]
) -> tuple[dict, dict]:
    """Reports at each size through the page's own client and its UI, then the benchmark workers' figures.

    Long tasks are charged to phases; those of the harness itself (fetching test files into
    the page to hand them to the client) are reported apart from the page's own.
    """
    sizes = sorted(pairs)
    out: dict[str, Any] = {}
    tab = Tab(pw, profiles / "work")
    tab.goto(url)
    page = tab.page
    for n in sizes:
        log(f"report of {n // M}M elements in the tab")
        runs = [page.evaluate(TAB_REPORT_JS, [f"bench/a{n}.npy", f"bench/b{n}.npy"]) for _ in range(2)]
        out[f"report_{n // M}m_tab_ms"] = min(run["ms"] for run in runs)
        out[f"report_{n // M}m_tab_cores"] = max(run["workers"] for run in runs)
        tab.phase("harness")
    n16 = 16 * M if 16 * M in sizes else max(sizes)
    log("the same report as a user gets it: open two files, press Compare, see the verdict")
    out[f"report_{n16 // M}m_ui_ms"] = ui_report(tab, url, pairs[n16])
    pair = [["a", f"bench/a{n16}.npy", "buffer"], ["b", f"bench/b{n16}.npy", "buffer"]]
    log("bare JavaScript diff")
    diff = page.evaluate(WORKER_JOB_JS, ["bench/jsdiff.js", "", {"atol": 1e-5, "rtol": 1.3e-6}, pair])
    out[f"js_diff_{n16 // M}m_ms"] = diff["ms"]
    tab.phase("harness")
    log("parsing pasted text in the tab")
    parse = page.evaluate(WORKER_JOB_JS, ["bench/pyworker.js", PY_PARSE, {}, [["text", "bench/text1m.txt", "text"]]])
    # The page's worker moves long texts into Python as UTF-8 bytes; Pyodide's own string
    # conversion is shown beside it, as the cost that avoids.
    out["parse_1m_tab_ms"] = parse["utf8_ms"] + parse["parse_ms"]
    out["parse_1m_tab_utf8_to_python_ms"] = parse["utf8_ms"]
    out["parse_1m_tab_str_to_python_ms"] = parse["to_python_ms"]
    tab.phase("harness")
    log("memory and stages of a full report in the tab")
    memory = page.evaluate(WORKER_JOB_JS, ["bench/pyworker.js", PY_COMPARE, {}, pair])
    out["peak_memory_ratio"] = (memory["heapAfter"] - memory["heapBefore"]) / memory["input_bytes"]
    out["heap_after_compare_mb"] = memory["heapAfter"] / 1e6
    for stage in ("copy", "handle", "handle_warm", "json"):
        out[f"stage_{stage}_ms"] = memory[f"{stage}_ms"]
    tab.phase("harness")
    log("streaming two big files in the tab")
    tab.goto(url + "bench/stream.html")
    page.set_input_files("#a", str(big[0]))
    page.set_input_files("#b", str(big[1]))
    app = page.evaluate(APP_STREAM_JS)
    if not app["streamed"]:
        raise RuntimeError("the page's worker read the big files whole instead of streaming them")
    out["stream_mb_per_s"] = app["size"] / 1e6 / (app["ms"] / 1000)
    out["stream_progress_updates"] = app["updates"]
    out["stream_cores"] = app["workers"]
    tab.phase("stream")
    log("streaming again in the benchmark worker, for the heap size and the time spent reading")
    streamed = page.evaluate(STREAM_JOB_JS, PY_STREAM)
    out["stream_bench_worker_mb_per_s"] = streamed["size"] / 1e6 / streamed["s"]
    out["stream_read_share"] = streamed["read_s"] / streamed["s"]
    out["stream_heap_mb"] = streamed["heapAfter"] / 1e6
    tab.phase("harness")
    tab.close()
    return out, tab.longest


# ---------------------------------------------------------------------------------------
# Putting it together.


def verdict(key: str, value: float) -> str:
    if key not in TARGETS or value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    op, limit = TARGETS[key]
    ok = value <= limit if op == "<=" else value >= limit
    return f"{'ok  ' if ok else 'MISS'} (target {op} {limit:g})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and files (under five minutes)")
    parser.add_argument("--json", action="store_true", help="also print every figure as one JSON object")
    parser.add_argument("--no-browser", action="store_true", help="native figures only")
    parser.add_argument("--only", choices=["startup"], help="measure only this part")
    parser.add_argument("--runs", type=int, default=None, help="start-up runs (default 3, 1 with --quick)")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    if args.only == "startup":
        return print_figures(startup_only(runs), args.json)
    sizes = [M, 4 * M, 16 * M] if args.quick else [M, 4 * M, 16 * M, 64 * M]
    big_n = (256 if args.quick else 3 * 1024) * M // 4  # float32 elements per streamed file
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        log("writing inputs")
        pairs = {n: save_pair(data, n) for n in sizes}
        text = pasted_text(M)
        (data / "text1m.txt").write_text(text)
        big = write_big_pair(data, big_n)
        log("native figures")
        for n, ms in native_reports(pairs, repeat=1 if args.quick else 2).items():
            figures[f"report_{n // M}m_native_ms"] = ms
        figures["peak_memory_ratio_native"] = native_peak_ratio(*pairs[16 * M])
        figures["parse_1m_native_ms"], figures["parse_1m_numpy_ms"] = native_parse(text, repeat=2)
        figures["parse_1m_text_mb"] = len(text) / 1e6
        figures["stream_native_mb_per_s"] = native_stream(*big)
        figures["stream_file_mb"] = big[0].stat().st_size / 1e6
        if not args.no_browser:
            from playwright.sync_api import sync_playwright

            served = {p.name: p for pair in pairs.values() for p in pair} | {"text1m.txt": data / "text1m.txt"}
            with served_site(served) as (url, profiles, httpd), sync_playwright() as pw:
                log("start-up in the tab")
                started, longest = startup(pw, url, profiles, runs=runs)
                log("start-up against its floor, and first visits over emulated links")
                started |= floor_figures(pw, url, httpd, profiles / "floor", runs=runs)
                log("reports, parsing, memory and streaming in the tab")
                worked, longest_work = tab_figures(pw, url, profiles, pairs, big)
            figures |= started | worked
            longest |= longest_work
            figures |= {f"longest_task_{phase}_ms": ms for phase, ms in longest.items()}
            figures["longest_task_ms"] = max(ms for phase, ms in longest.items() if phase != "harness")
            figures["report_16m_vs_js"] = figures["report_16m_tab_ms"] / figures["js_diff_16m_ms"]
            figures["report_16m_tab_vs_native"] = figures["report_16m_tab_ms"] / figures["report_16m_native_ms"]
        figures["parse_1m_vs_numpy"] = figures["parse_1m_native_ms"] / figures["parse_1m_numpy_ms"]
    for where in ("native", "tab"):
        per_m = [figures[k] / (n // M) for n in sizes if (k := f"report_{n // M}m_{where}_ms") in figures]
        if per_m:
            figures[f"report_{where}_ms_per_m_spread"] = max(per_m) / min(per_m)
    return print_figures(figures, args.json)


def startup_only(runs: int) -> dict[str, Any]:
    """The start-up figures alone (``--only startup``), as the full run measures them."""
    from playwright.sync_api import sync_playwright

    with served_site({}) as (url, profiles, httpd), sync_playwright() as pw:
        log("start-up in the tab")
        figures, longest = startup(pw, url, profiles, runs=runs)
        log("start-up against its floor, and first visits over emulated links")
        figures |= floor_figures(pw, url, httpd, profiles / "floor", runs=runs)
    figures |= {f"longest_task_{phase}_ms": ms for phase, ms in longest.items()}
    return figures


def print_figures(figures: dict[str, Any], as_json: bool) -> int:
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        shown = f"{value:12.2f}" if isinstance(value, float) else f"{value!s:>12}"
        print(f"{key:<{width}}  {shown}  {verdict(key, value)}")
    if as_json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
