"""Big ``.npy`` files are streamed by the worker (``Blob.slice``), with progress and cancel.

Two 160 MB files written by ``np.save`` are opened in the real page; the worker reads them
chunk by chunk instead of receiving them whole, and the report it returns is the one the
in-memory comparison of the same bytes gives in the same page, and natively up to the
rounding of sums (NumPy in the browser has no BLAS, so its float32 dot products round
differently: the SNR differs in the fifth digit).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import wait_for_all_cores
from perpendis.engine import stream
from perpendis.engine.compare import compare
from perpendis.inputs.load import load_path

N = 40 * 2**20  # float32 elements per file: 160 MB each, together over stream.STREAM_MIN_BYTES
STREAM_TIMEOUT_MS = 300_000  # a busy 2-core machine; the benchmark measures the real speed

# Every text the progress element shows, recorded as it changes.
WATCH_PROGRESS_JS = """() => {
  window.__progress = [];
  const job = document.querySelector('[data-testid="progress"]');
  new MutationObserver(() => window.__progress.push(job.hidden ? "" : job.textContent))
    .observe(job, { childList: true, characterData: true, subtree: true, attributes: true });
}"""


@pytest.fixture(scope="module")
def big_pair(tmp_path_factory) -> tuple[Path, Path, dict]:
    """Two files that differ by rounding in a tenth of their elements and by a bug in one."""
    directory = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(64)
    a = rng.standard_normal((4096, N // 4096), dtype=np.float32)
    b = a.copy()
    hit = rng.random(a.shape) < 0.1
    b[hit] = np.nextafter(b[hit], np.float32(np.inf))
    b[4000, 123] += 1.0
    paths = directory / "run_a.npy", directory / "run_b.npy"
    np.save(paths[0], a)
    np.save(paths[1], b)
    assert sum(p.stat().st_size for p in paths) >= stream.STREAM_MIN_BYTES, "too small to be streamed"
    del a, b, hit
    [ta], [tb] = load_path(paths[0]), load_path(paths[1])
    expected = json.loads(compare(ta, tb).to_json())
    return paths[0], paths[1], expected


# The same two files compared in memory by the page's core: read whole, handed over as buffers.
IN_MEMORY_JS = """async () => {
  const { core } = await import(new URL("app/client.js", location.href));
  const files = ["a", "b"].map((side) => document.querySelector(`[data-testid="file-${side}"]`).files[0]);
  const [a, b] = await Promise.all(files.map((file) => file.arrayBuffer()));
  const inputs = { a: { name: files[0].name, buffer: a }, b: { name: files[1].name, buffer: b } };
  const result = await core.request("compare", { inputs, options: {} }, [a, b]);
  return { streamed: Boolean(result.streamed), report: result.report };
}"""


def assert_close(got: object, expected: object, where: str = "report") -> None:
    """Equal, except floats, which may differ by the rounding of a float32 sum."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), where
        for key in expected:
            assert_close(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_close(g, e, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert got == pytest.approx(expected, rel=1e-4, abs=1e-300), where
    else:
        assert got == expected, where


def open_files(page, paths: tuple[Path, Path]) -> None:
    page.get_by_test_id("file-a").set_input_files(str(paths[0]))
    page.get_by_test_id("file-b").set_input_files(str(paths[1]))


def streaming_texts(page) -> list[str]:
    return [t for t in page.evaluate("() => window.__progress") if t.startswith("streaming")]


def test_big_files_stream_with_progress_and_give_the_in_memory_report(ready_page, big_pair):
    page = ready_page
    path_a, path_b, expected = big_pair
    page.evaluate(WATCH_PROGRESS_JS)
    open_files(page, (path_a, path_b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=STREAM_TIMEOUT_MS)
    with page.expect_download() as info:
        page.get_by_test_id("download-json").click()
    report = json.loads(Path(info.value.path()).read_text())
    in_memory = page.evaluate(IN_MEMORY_JS)
    assert not in_memory["streamed"]
    assert report == in_memory["report"]
    assert_close(report, expected)
    assert report["verdict"] == "investigate" and report["n_bitwise_diff"] > N // 20
    shown = streaming_texts(page)
    percents = [int(t.rstrip("%").split()[-1]) for t in shown if t.endswith("%")]
    assert percents and any(0 < p < 100 for p in percents), shown
    assert percents == sorted(percents)


# Every text the core's status shows from now on, recorded as it changes.
WATCH_STATUS_JS = """() => {
  window.__status = [];
  const status = document.querySelector('[data-testid="status"]');
  new MutationObserver(() => window.__status.push(status.textContent))
    .observe(status, { childList: true, characterData: true, subtree: true });
}"""


def test_cancel_stops_a_stream_between_chunks_and_the_core_stays_warm(ready_page, big_pair, tmp_path):
    page = ready_page
    path_a, path_b, _ = big_pair
    # Served with COOP and COEP (scripts/serve.py): the page shares its cancel flag with the core.
    assert page.evaluate("() => crossOriginIsolated")
    page.evaluate(WATCH_PROGRESS_JS)
    open_files(page, (path_a, path_b))
    page.get_by_test_id("compare").click()
    page.wait_for_function("() => window.__progress.some((t) => /^streaming \\d+%/.test(t))", timeout=STREAM_TIMEOUT_MS)
    page.evaluate(WATCH_STATUS_JS)
    page.get_by_role("button", name="Cancel").click()
    assert page.get_by_test_id("progress").is_hidden()
    assert page.get_by_test_id("verdict").text_content().strip() == ""
    assert page.get_by_test_id("error").is_hidden()

    # The next comparison is answered by the same core: no restart, no second start-up.
    small = np.linspace(-1, 1, 1000, dtype=np.float32)
    np.save(tmp_path / "small_a.npy", small)
    np.save(tmp_path / "small_b.npy", np.nextafter(small, np.float32(2)))
    open_files(page, (tmp_path / "small_a.npy", tmp_path / "small_b.npy"))
    page.get_by_text("small_b.npy (").wait_for()
    start = page.evaluate("() => performance.now()")
    page.get_by_test_id("compare").click()
    page.wait_for_selector("#verdict-box[data-verdict='rounding']", timeout=STREAM_TIMEOUT_MS)
    took = page.evaluate("() => performance.now()") - start
    statuses = page.evaluate("() => window.__status")
    assert not [s for s in statuses if "restarting" in s or "importing" in s or "loading" in s], statuses
    print(f"\ncancel of a streamed compare: next compare answered {took:.0f} ms after its click, core not restarted")


# The two files in the page's inputs handed to the core unread, as the page does with big files.
UNREAD_JS = """async () => {
  const { core } = await import(new URL("app/client.js", location.href));
  const files = ["a", "b"].map((side) => document.querySelector(`[data-testid="file-${side}"]`).files[0]);
  const inputs = { a: { name: files[0].name, file: files[0] }, b: { name: files[1].name, file: files[1] } };
  const result = await core.request("compare", { inputs, options: {} });
  return { streamed: Boolean(result.streamed), workers: result.workers ?? 1, report: result.report };
}"""


def test_a_stream_is_shared_across_cores_each_reading_its_share(ready_page, big_pair):
    workers = wait_for_all_cores(ready_page)
    path_a, path_b, expected = big_pair
    open_files(ready_page, (path_a, path_b))
    got = ready_page.evaluate(UNREAD_JS)
    assert got["streamed"] and got["workers"] == workers
    assert_close(got["report"], expected)
