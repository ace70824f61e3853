"""Copy as Markdown, Download JSON, and share links that carry the inputs in the fragment."""

from __future__ import annotations

import json
import shutil
from urllib.parse import urlsplit

import numpy as np
import perpendis
from made import numpy_text

REPORT_TIMEOUT_MS = 60_000
READY_TIMEOUT_MS = 90_000




def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(21)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = a.copy()
    b[1, 2] = np.nextafter(b[1, 2], np.float32(np.inf))
    b[3, 5] = -b[3, 5]
    return a, b


def compared(page) -> None:
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)


def downloaded_report(page) -> dict:
    with page.expect_download() as info:
        page.get_by_test_id("download-json").click()
    return json.loads(open(info.value.path()).read())


def test_markdown_and_json_hold_the_numbers(ready_page, context, server):
    page = ready_page
    a, b = pair()
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    compared(page)

    report = downloaded_report(page)
    assert report["n_bitwise_diff"] == 2
    assert report["first_diff"]["index"] == [1, 2]
    assert report["first_diff"]["ulp"] == 1
    assert report["a"]["shape"] == [4, 6]
    assert report["worst"]["abs"]["index"] == [3, 5]
    assert report["max_abs_diff"] == float(abs(np.float64(a[3, 5]) * 2))

    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.origin)
    page.get_by_test_id("copy-markdown").click()
    page.get_by_text("Markdown report copied.").wait_for()
    markdown = page.evaluate("() => navigator.clipboard.readText()")
    assert "(1, 2)" in markdown  # the first difference
    assert "(3, 5)" in markdown  # the sign flip, the worst element
    assert "investigate" in markdown.lower()

    # The paste-back block: the page shows the core's lines, the Markdown carries them, and
    # run on these arrays the NumPy line passes while the reproducing one fails.
    lines = report["paste_back"]
    code = page.get_by_test_id("paste-back-code").text_content()
    assert code == "\n".join(line["code"] for line in lines)
    assert all(line["code"] in markdown for line in lines)
    names = {"np": np, "perpendis": perpendis, "actual": a, "desired": b, "expected": b}
    numpy_line = next(line["code"] for line in lines if line["what"] == "numpy")
    exec(numpy_line, dict(names))
    reproduce = next(line["code"] for line in lines if line["what"] == "reproduce")
    try:
        exec(reproduce, dict(names))
    except AssertionError:
        pass
    else:
        raise AssertionError(f"{reproduce} passed on the arrays it should fail on")


def test_share_link_round_trips_in_a_fresh_browser(ready_page, playwright, server, tmp_path):
    page = ready_page
    a, b = pair()
    np.save(tmp_path / "a.npy", a)
    page.get_by_test_id("file-a").set_input_files(tmp_path / "a.npy")
    page.get_by_text("a.npy (").wait_for()
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("atol").fill("1e-6")
    compared(page)
    original = downloaded_report(page)
    page.get_by_test_id("share").click()
    link = page.get_by_test_id("share-link")
    link.wait_for()
    url = link.input_value()
    assert url.startswith(server.url) and "#v1=" in url

    browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
    try:
        fresh = browser.new_context()
        requests: list[str] = []
        fresh.on("request", lambda request: requests.append(request.url))
        other = fresh.new_page()
        other.goto(url)
        other.get_by_test_id("verdict").wait_for(timeout=READY_TIMEOUT_MS)
        assert other.get_by_test_id("paste-b").input_value() == numpy_text(b)
        assert other.get_by_text("a.npy (").is_visible()
        assert downloaded_report(other) == original
        assert original["tolerance"]["atol"] == 1e-6
        # The inputs travelled in the fragment: no request carried them anywhere.
        assert all(urlsplit(u).fragment == "" for u in requests if u.startswith("http"))
        assert all(u.startswith(server.origin) for u in requests if u.startswith("http"))
    finally:
        browser.close()


def test_inputs_too_large_for_a_link_say_why(ready_page, tmp_path):
    page = ready_page
    rng = np.random.default_rng(5)
    a = rng.standard_normal(60_000).astype(np.float32)  # 240 kB of noise: does not compress
    np.save(tmp_path / "big.npy", a)
    page.get_by_test_id("file-a").set_input_files(tmp_path / "big.npy")
    page.get_by_test_id("file-b").set_input_files(tmp_path / "big.npy")
    page.get_by_text("big.npy (").first.wait_for()
    compared(page)
    page.get_by_test_id("share").click()
    status = page.get_by_test_id("export-status")
    page.wait_for_function(
        "() => /share link/.test(document.querySelector('[data-testid=\"export-status\"]').textContent)"
    )
    assert "more than the 100 kB" in status.text_content()
    assert page.get_by_test_id("share-link").is_hidden()
    assert "#" not in page.url
