"""Big ``.npy`` files are streamed by the worker (``Blob.slice``), with progress and cancel.

Two 64 MB files written by ``np.save`` are opened in the real page; the worker reads them
chunk by chunk instead of receiving them whole, and the report it returns is the one the
in-memory comparison gives natively.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.compare import compare
from perpendis.load import load_path

N = 16 * 2**20  # float32 elements per file: 64 MB each
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
    del a, b, hit
    [ta], [tb] = load_path(paths[0]), load_path(paths[1])
    expected = json.loads(compare(ta, tb).to_json())
    return paths[0], paths[1], expected


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
    assert report == expected
    assert report["verdict"] == "investigate" and report["n_bitwise_diff"] > N // 20
    shown = streaming_texts(page)
    percents = [int(t.rstrip("%").split()[-1]) for t in shown if t.endswith("%")]
    assert percents and any(0 < p < 100 for p in percents), shown
    assert percents == sorted(percents)


def test_cancel_stops_a_stream_and_the_core_comes_back(ready_page, big_pair):
    page = ready_page
    path_a, path_b, _ = big_pair
    page.evaluate(WATCH_PROGRESS_JS)
    open_files(page, (path_a, path_b))
    page.get_by_test_id("compare").click()
    page.wait_for_function("() => window.__progress.some((t) => /^streaming \\d+%/.test(t))", timeout=STREAM_TIMEOUT_MS)
    page.get_by_test_id("cancel").click()
    assert page.get_by_test_id("progress").is_hidden()
    page.wait_for_function(
        "() => /\\bready\\b/i.test(document.querySelector('[data-testid=\"status\"]').textContent)",
        timeout=STREAM_TIMEOUT_MS,
    )
    assert page.get_by_test_id("verdict").text_content().strip() == ""
    assert page.get_by_test_id("error").is_hidden()
