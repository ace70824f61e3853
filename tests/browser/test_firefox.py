"""The page in Firefox: paste, file, bisect, share, offline, axe-core and a short action fuzz,
in Debian's ``firefox-esr``.

Playwright cannot drive a stock Firefox (it speaks Juggler, a protocol only its own patched
Firefox build has, and that build cannot be downloaded here), so each test runs
``tests/firefox/run.mjs`` in node, which drives Firefox over WebDriver BiDi with
puppeteer-core.  This side makes the inputs with real NumPy, asks CPython's perpendis what
the page must show, and serves the built site; node fails on any mismatch, uncaught error
or console error in the page.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import Server, archives, serving
from heatmap_cells import CELLS_JS, CLICK_CELL_JS
from made import npy_bytes, numpy_text
from perpendis.inputs import formats
from perpendis.layers.bisect import bisect
from perpendis.service import api
from stale_journey import check, journey_spec
from test_page_actions_fuzz import CAPTURES, CASES, shape_text

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "tests" / "firefox" / "run.mjs"
FIREFOX = Path("/usr/bin/firefox-esr")
MODELS = ROOT / "tests" / "fixtures" / "models"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
JOURNEY_JS = ROOT / "tests" / "browser" / "stale_journey.js"
TEST_TIMEOUT_S = 420


def index_text(index: list[int]) -> str:
    return f"({index[0]},)" if len(index) == 1 else "(" + ", ".join(map(str, index)) + ")"


def shown(inputs: dict, payloads: dict | None = None) -> dict:
    """What the page must show for these inputs: CPython's verdict and the element the
    inspector opens on (the first failing element, else the first difference)."""
    answer = api.handle({"op": "compare", "inputs": inputs}, payloads or {})
    assert answer["ok"], answer
    report = json.loads(json.dumps(answer))["report"]
    start = (report["tolerance"] or {}).get("first_fail") or report["first_diff"]
    return {"verdict": report["verdict"], "index": index_text(start["index"]) if start else ""}


@pytest.fixture
def server(site: Path, tmp_path: Path) -> Iterator[Server]:
    """A server of each test's own, so the offline test can stop it."""
    with serving(site, tmp_path / "access.log") as running:
        yield running


def run_in_firefox(name: str, server: Server, spec: dict, tmp_path: Path) -> list[str]:
    """Runs the runner's test `name`; the lines it printed."""
    if not FIREFOX.exists():
        pytest.fail("Firefox is not installed: run `apt-get install firefox-esr` (scripts/test.sh does)")
    if shutil.which("node") is None or not (ROOT / "node_modules" / "puppeteer-core").exists():
        pytest.fail("node and puppeteer-core are needed: run `npm ci` (scripts/test.sh does)")
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    stderr = (tmp_path / "stderr.txt").open("w+")  # a file: a full pipe would stall the runner
    process = subprocess.Popen(
        ["node", str(RUNNER), name, server.url, str(spec_path)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, bufsize=1,
    )
    try:
        # The runner asks for the server to go away when it wants to be offline.
        printed = []
        for line in iter(process.stdout.readline, ""):
            printed.append(line.rstrip("\n"))
            if line.strip() == "stop-server":
                server.stop()
                process.stdin.write("stopped\n")
                process.stdin.flush()
        process.wait(timeout=TEST_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
    if process.returncode != 0:
        stderr.seek(0)
        pytest.fail(f"Firefox: {stderr.read().strip()[-4000:]}")
    return printed


def pair(seed: int, n: int, nudge: list[int]) -> tuple[np.ndarray, np.ndarray]:
    a = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    b = a.copy()
    b[nudge] = np.nextafter(b[nudge], np.float32(np.inf))
    return a, b


def paste_spec() -> dict:
    """Pastes for the runner's "paste" test: short, long (past what the box keeps) and refused."""
    a, b = pair(1, 64, [5, 40])
    short = {"a": numpy_text(a), "b": numpy_text(b)}
    long_a, long_b = pair(2, 150_000, [1234])
    long = {"a": numpy_text(long_a), "b": numpy_text(long_b)}
    assert len(long["a"]) > 2**20  # more than the page keeps in its box
    bad = {"a": "hello world", "b": "[1, 2]"}
    refused = api.handle({"op": "compare", "inputs": {k: {"text": v} for k, v in bad.items()}}, {})
    spec = {
        "short": short, "short_expect": shown({k: {"text": v} for k, v in short.items()}),
        "long": long, "long_expect": shown({k: {"text": v} for k, v in long.items()}),
        "bad": {**bad, "says": refused["error"]["message"]},
    }
    return spec


def test_paste(server, tmp_path):
    run_in_firefox("paste", server, paste_spec(), tmp_path)
    # A first visit: app/client.js prefetches the runtime's WebAssembly, and the worker's own
    # request must take that download, not fetch the 10 MB again.
    asked = server.asked()
    assert asked.count("/pyodide/pyodide.asm.wasm") == 1, asked


def test_paste_from_a_host_that_compresses_nothing(site: Path, tmp_path: Path):
    # The archives then come from their gzip'd copies, inflated in the page (app/archives.js).
    with serving(site, tmp_path / "access.log", compress=False) as plain:
        run_in_firefox("paste", plain, paste_spec(), tmp_path)
        asked = plain.asked()
    assert len(archives(site)) == 3, archives(site)
    assert all(path + ".gz" in asked for path in archives(site)), asked


def test_file(server, tmp_path):
    a = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float16)
    b = a.copy()
    b[2, 3] = -b[2, 3]  # a sign flip: a bug
    files = {}
    for side, array in (("a", a), ("b", b)):
        files[side] = tmp_path / f"{side}.npy"
        files[side].write_bytes(npy_bytes(array))
    want = shown({side: {"name": path.name, "data": side} for side, path in files.items()},
                 {side: path.read_bytes() for side, path in files.items()})
    assert want["verdict"] == "investigate"
    run_in_firefox("file", server, {"files": {k: str(v) for k, v in files.items()}, "expect": want}, tmp_path)


def test_heatmap(server, tmp_path):
    a = np.random.default_rng(9).standard_normal((12, 16)).astype(np.float32)
    b = a.copy()
    b[::4, ::3] = np.nextafter(b[::4, ::3], np.float32(np.inf))  # rounding
    b[3:6, 8:12] += np.float32(0.5)  # the bug
    spec = {"a": numpy_text(a), "b": numpy_text(b), "cells_js": CELLS_JS, "click_js": CLICK_CELL_JS,
            "hot": sorted(f"{r},{c}" for r, c in np.argwhere(a != b).tolist()),
            "bug": [f"{r},{c}" for r in range(3, 6) for c in range(8, 12)], "path": str(tmp_path / "heatmap.png")}
    run_in_firefox("heatmap", server, spec, tmp_path)
    assert (tmp_path / "heatmap.png").stat().st_size > 0


def test_bisect(server, tmp_path):
    manifest = json.loads((MODELS / "manifest.json").read_text())
    cnn = next(c for c in manifest["captures"] if c["model"] == "cnn")
    paths = {run: MODELS / next(f for f in cnn[run] if f.endswith(".npz")) for run in ("torch", "ort_bug")}
    native = bisect(*(formats.read(paths[run].read_bytes(), paths[run].name) for run in ("torch", "ort_bug")))
    first = native.first_failing
    assert first.a_name == cnn["bug_layer"]
    spec = {"files": {"a": str(paths["torch"]), "b": str(paths["ort_bug"])}, "bug_layer": cnn["bug_layer"],
            "bug_verdict": first.report.verdict}
    run_in_firefox("bisect", server, spec, tmp_path)


def test_bisect_of_60_layers_in_slices(server, tmp_path):
    from test_page_bisect_slices import native, write_captures

    paths = write_captures(tmp_path)
    truth = native(paths)
    first = truth.first_failing
    spec = {"files": {"a": str(paths[0]), "b": str(paths[1])}, "bug_layer": first.a_name,
            "bug_verdict": first.report.verdict, "names": [p.a_name for p in truth.pairs]}
    run_in_firefox("bisect", server, spec, tmp_path)


def test_share(server, tmp_path):
    a, b = pair(4, 32, [7])
    b[20] += 1.0  # and one element that is plainly off
    spec = {"a": numpy_text(a), "b": numpy_text(b)}
    spec["expect"] = shown({"a": {"text": spec["a"]}, "b": {"text": spec["b"]}})
    run_in_firefox("share", server, spec, tmp_path)


def test_every_stale_path(server, tmp_path):
    """The report is marked out of date, judged again or replaced, as in Chromium (stale_journey.js)."""
    spec = {**journey_spec(), "journey": str(JOURNEY_JS)}
    printed = run_in_firefox("stale", server, spec, tmp_path)
    [line] = [line for line in printed if line.startswith("journey: ")]
    check(json.loads(line.removeprefix("journey: ")), spec)


def test_offline(server, tmp_path):
    a, b = pair(5, 16, [3])
    spec = {"a": numpy_text(a), "b": numpy_text(b)}
    spec["expect"] = shown({"a": {"text": spec["a"]}, "b": {"text": spec["b"]}})
    run_in_firefox("offline", server, spec, tmp_path)


def cases() -> dict:
    """The action fuzz's real cases (tests/browser/test_page_actions_fuzz.py), as the runner reads them."""
    return {name: {"a": a, "b": b} for name, (a, b) in CASES.items()}


def test_axe(server, tmp_path):
    """axe-core finds nothing in Firefox either: empty, input error, report, shapes, bisect."""
    assert AXE.exists(), "axe-core is missing: run `npm ci`"
    spec = {"axe": str(AXE), "cases": cases(), "captures": {k: str(v) for k, v in CAPTURES.items()}}
    run_in_firefox("axe", server, spec, tmp_path)


def screen_answers() -> dict:
    """For every pair of texts the fuzz can leave in the boxes (each case, swapped or not, and
    the examples), what a current report of them shows (test_page_actions_fuzz.off_screen's
    figures: shapes and count of differing elements), or None when CPython refuses them;
    keyed by A's text, a NUL, B's text."""
    examples = ROOT / "app" / "examples"
    pairs = [*CASES.values(), *((e["a"], e["b"]) for e in (json.loads((examples / f"{n}.json").read_text())
                                                            for n in ("bug", "rounding")))]
    answers = {}
    for a, b in [*pairs, *((b, a) for a, b in pairs)]:
        answer = api.handle({"op": "compare", "inputs": {"a": {"text": a}, "b": {"text": b}}}, {})
        report = answer.get("report")
        answers[f"{a}\0{b}"] = report and [shape_text(report["a"]["shape"]), shape_text(report["b"]["shape"]),
                                            str(report["n_bitwise_diff"])]
    return answers


def test_action_fuzz(server, tmp_path):
    """A shorter run of the Chromium action fuzz: one seed, 15 actions; no page error, no
    console error, no current-looking report of other text than the boxes hold."""
    spec = {"seed": 1, "steps": 15, "cases": cases(), "captures": {k: str(v) for k, v in CAPTURES.items()},
            "screen": screen_answers()}
    run_in_firefox("fuzz", server, spec, tmp_path)
