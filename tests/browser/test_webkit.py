"""The page's main journeys in WebKit, Safari's engine: Debian's WebKitGTK under Xvfb,
driven over W3C WebDriver (tests/browser/webkit.py).

Load until ready; paste two tensors and compare; an example; two ``.npy`` files opened;
a share link opened in a fresh session; and the report marked out of date when the
inputs change. Each answer is checked against CPython's perpendis, as in Firefox
(tests/browser/test_firefox.py). Any uncaught error, rejected promise or console error in
the page (from the moment it has loaded) fails the test, as does a request to another origin.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import webkit
from made import npy_bytes, numpy_text
from test_firefox import pair, shown

pytestmark = pytest.mark.browser

READY_S = 240  # a cold start of the core in WebKitGTK on a busy 2-core machine
ANSWER_S = 120

WATCH = """
window.__problems = [];
addEventListener("error", (e) => __problems.push(`uncaught: ${e.message}`));
addEventListener("unhandledrejection", (e) => __problems.push(`unhandled rejection: ${e.reason}`));
const error = console.error.bind(console);
console.error = (...args) => { __problems.push(`console error: ${args.join(" ")}`); error(...args); };
"""

FOREIGN = """
return performance.getEntriesByType("resource").map((e) => e.name)
  .filter((url) => !url.startsWith(location.origin + "/") && !/^(blob|data):/.test(url));
"""


@pytest.fixture
def browser(server, tmp_path: Path) -> Iterator[webkit.Session]:
    why = webkit.missing()
    if why:
        pytest.fail(why)
    with webkit.webkit(tmp_path) as session:
        yield session
        problems = session.run("return window.__problems ?? []") + [
            f"request to another origin: {url}" for url in session.run(FOREIGN)
        ]
        session.screenshot(tmp_path / "last.png")
    assert not problems, problems


def open_page(browser: webkit.Session, url: str) -> None:
    browser.go(url)
    browser.run(WATCH)
    browser.wait("return /\\bready\\b/.test(document.getElementById('status').textContent) || "
                 "document.getElementById('status').dataset.state === 'failed'", timeout=READY_S, what="ready")
    status = browser.run("return document.getElementById('status').textContent")
    assert status == "ready", status


def type_text(browser: webkit.Session, side: str, text: str) -> None:
    """Text put in a box as a paste does: its value, and the input event."""
    browser.run("const box = document.getElementById(arguments[0]); box.value = arguments[1];"
                "box.dispatchEvent(new Event('input', {bubbles: true}));", f"paste-{side}", text)


def answered(browser: webkit.Session) -> dict:
    """After Compare: what the report says, once the page is idle again."""
    browser.wait("return !document.body.classList.contains('busy') && "
                 "(!document.getElementById('report').hidden || !document.getElementById('error').hidden)",
                 timeout=ANSWER_S, what="an answer")
    return browser.run("""
      const box = document.getElementById("verdict-box");
      return {verdict: box.dataset.verdict, index: document.getElementById("element-index").textContent,
              stale: document.getElementById("report").dataset.stale,
              error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent};
    """)


def compare(browser: webkit.Session) -> dict:
    browser.click("#compare")
    return answered(browser)


def test_paste_compare_and_a_stale_report(browser, server, tmp_path):
    open_page(browser, server.url)
    a, b = pair(4, 48, [3, 30])
    b[11] += 0.25
    inputs = {"a": numpy_text(a), "b": numpy_text(b)}
    for side, text in inputs.items():
        type_text(browser, side, text)
    got = compare(browser)
    want = shown({side: {"text": text} for side, text in inputs.items()})
    assert (got["verdict"], got["index"], got["stale"]) == (want["verdict"], want["index"], "false"), got
    browser.screenshot(tmp_path / "compare.png")

    type_text(browser, "b", numpy_text(a))
    note = browser.run("const n = document.getElementById('stale-note'); return n.hidden ? null : n.textContent")
    assert note and "the inputs changed" in note, note
    assert browser.run("return document.getElementById('report').classList.contains('stale')")
    browser.screenshot(tmp_path / "stale.png")
    got = compare(browser)
    assert (got["verdict"], got["stale"]) == ("identical", "false"), got


def test_example_and_files(browser, server, tmp_path):
    open_page(browser, server.url)
    browser.click("#example-rounding")
    got = answered(browser)
    assert got["verdict"] == "rounding", got

    a = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float16)
    b = a.copy()
    b[2, 3] = -b[2, 3]  # a sign flip: a bug
    paths = {}
    for side, array in (("a", a), ("b", b)):
        paths[side] = tmp_path / f"{side}.npy"
        paths[side].write_bytes(npy_bytes(array))
        browser.choose_files(f"#file-{side}", [paths[side]])
        browser.wait("return !document.getElementById(arguments[0]).hidden", f"chip-{side}", timeout=30,
                     what=f"the chip of {side}")
    assert browser.run("return document.getElementById('report').dataset.stale") == "true"
    want = shown({side: {"name": p.name, "data": side} for side, p in paths.items()},
                 {side: p.read_bytes() for side, p in paths.items()})
    got = compare(browser)
    assert (got["verdict"], got["index"], got["stale"]) == (want["verdict"], want["index"], "false"), got
    browser.screenshot(tmp_path / "files.png")


def test_share_link_round_trip(server, tmp_path):
    why = webkit.missing()
    if why:
        pytest.fail(why)
    a, b = pair(4, 32, [7])
    b[20] += 1.0
    inputs = {"a": numpy_text(a), "b": numpy_text(b)}
    want = shown({side: {"text": text} for side, text in inputs.items()})
    for who in ("sender", "receiver"):
        (tmp_path / who).mkdir()
    with webkit.webkit(tmp_path / "sender") as sender:
        open_page(sender, server.url)
        for side, text in inputs.items():
            type_text(sender, side, text)
        compare(sender)
        sender.click("#share")
        link = sender.wait("const f = document.getElementById('share-link'); return f.hidden ? null : f.value",
                           timeout=30, what="the link")
        status = sender.run("return document.getElementById('export-status').textContent")
        assert f"{len(link):,} characters" in status, status
        assert sender.run("return window.__problems") == []
    with webkit.webkit(tmp_path / "receiver") as receiver:
        open_page(receiver, link)
        got = answered(receiver)
        assert (got["verdict"], got["index"], got["stale"]) == (want["verdict"], want["index"], "false"), got
        assert receiver.run("return document.getElementById('paste-a').value") == inputs["a"]
        assert receiver.run("return window.__problems") == []
