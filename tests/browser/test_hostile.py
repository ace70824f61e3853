"""Hostile input in the page: names and text from the input are shown as text, never
parsed as HTML, and a failing input shows its error beside it and is kept as it was.

Every payload sets ``window.__pwned`` if it ever runs; each is also looked for as an
element (an ``<img>`` or ``<script>`` that is not the page's own), so markup that was
inserted but blocked by the Content-Security-Policy is caught too.
"""

from __future__ import annotations

import base64
import json
import zlib

import numpy as np
from made import npy_bytes, npz_bytes, numpy_text

REPORT_TIMEOUT_MS = 60_000
IMG = "<img src=x onerror=window.__pwned=1>"
SCRIPT = "<script>window.__pwned=1</script>"
SVG = "<svg onload=window.__pwned=1>"


def set_file(page, side: str, name: str, data: bytes) -> None:
    page.get_by_test_id(f"file-{side}").set_input_files(
        {"name": name, "mimeType": "application/octet-stream", "buffer": data}
    )
    page.wait_for_function(
        "side => !document.getElementById(`chip-${side}`).hidden", arg=side, timeout=REPORT_TIMEOUT_MS
    )


def compare_and_wait(page) -> None:
    """Click Compare and wait for the outcome: a report or an error."""
    page.get_by_test_id("compare").click()
    page.wait_for_function(
        """() => {
             const report = document.getElementById("report");
             const error = document.querySelector('[data-testid="error"]');
             return !document.body.classList.contains("busy")
               && ((report && !report.hidden) || (error && !error.hidden));
           }""",
        timeout=REPORT_TIMEOUT_MS,
    )


def assert_nothing_injected(page) -> None:
    found = page.evaluate(
        """() => ({
             pwned: window.__pwned,
             imgs: [...document.querySelectorAll("img")].map((n) => n.outerHTML),
             scripts: [...document.querySelectorAll("script")].filter((n) => !n.src).map((n) => n.outerHTML),
             handlers: [...document.querySelectorAll("[onerror], [onload]")].map((n) => n.outerHTML),
             svgs: [...document.querySelectorAll("svg")].filter((n) => n.hasAttribute("onload")).length,
           })"""
    )
    assert found == {"pwned": None, "imgs": [], "scripts": [], "handlers": [], "svgs": 0}, found


def page_text(page) -> str:
    return page.evaluate("() => document.body.innerText")


def test_hostile_names_and_text_render_as_text(ready_page):
    page = ready_page
    a = np.linspace(-1, 1, 6, dtype=np.float32)
    b = a.copy()
    b[2] = np.nextafter(b[2], np.float32(2))

    # An .npz whose member (and so the tensor's name) is markup, in a file whose name is markup.
    set_file(page, "a", f"{SVG}.npz", npz_bytes(**{IMG: a}))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    compare_and_wait(page)
    assert page.get_by_test_id("verdict").is_visible()
    assert IMG in page_text(page)
    assert SVG in page_text(page)
    assert_nothing_injected(page)

    # Pasted text with a script in it: refused, and the message quoting it stays text.
    hostile = f"array([1.0, 2.0, {SCRIPT}], dtype=float32)"
    page.get_by_test_id("paste-b").fill(hostile)
    compare_and_wait(page)
    error = page.locator("#side-b [data-testid='error']")
    assert error.count() == 1 and error.text_content().strip()
    assert page.get_by_test_id("paste-b").input_value() == hostile
    assert_nothing_injected(page)

    # A label next to a printed tensor is kept as a note: shown, as text.
    page.get_by_test_id("paste-b").fill(f"{IMG}\n{numpy_text(b)}")
    compare_and_wait(page)
    assert_nothing_injected(page)


def test_failing_parse_shows_error_beside_its_input_and_keeps_it(ready_page):
    page = ready_page
    good = numpy_text(np.arange(4, dtype=np.float32))
    for side, other in (("a", "b"), ("b", "a")):
        bad = "tensor([[1.0, 2.0], [3.0]])"  # ragged: cannot be a tensor
        page.get_by_test_id(f"paste-{side}").fill(bad)
        page.get_by_test_id(f"paste-{other}").fill(good)
        compare_and_wait(page)
        error = page.locator(f"#side-{side} [data-testid='error']")
        assert error.count() == 1
        assert "ragged" in error.text_content()
        assert page.get_by_test_id(f"paste-{side}").input_value() == bad
        assert page.get_by_test_id(f"paste-{other}").input_value() == good
        assert page.get_by_test_id(f"paste-{side}").get_attribute("aria-invalid") == "true"

    # A broken file: the error sits beside B, the file stays chosen.
    page.get_by_test_id("paste-a").fill(good)
    set_file(page, "b", "cut.npy", npy_bytes(np.arange(64, dtype=np.float32))[:-10])
    compare_and_wait(page)
    error = page.locator("#side-b [data-testid='error']")
    assert error.count() == 1 and "truncated" in error.text_content()
    assert not page.locator("#chip-b").is_hidden()
    assert_nothing_injected(page)


def share_fragment(header: dict, blobs: list[bytes]) -> str:
    """A share link fragment as the page packs one (see app/share.js): deflate-raw, base64url."""
    head = json.dumps(header).encode()
    packed = len(head).to_bytes(4, "little") + head + b"".join(blobs)
    compressor = zlib.compressobj(wbits=-15)
    raw = compressor.compress(packed) + compressor.flush()
    return "#v1=" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def open_fresh(page, url: str) -> None:
    """Load ``url`` as a new document (going to another fragment of the same page would not)."""
    page.goto("about:blank")
    page.goto(url)


def test_hostile_share_links(ready_page, server):
    page = ready_page
    a = np.arange(3, dtype=np.float32)
    data = npy_bytes(a)
    header = {"a": {"name": f"{IMG}.npy", "size": len(data)}, "b": {"text": f"{SCRIPT}\n{numpy_text(a)}"},
              "options": {}}  # fmt: skip
    open_fresh(page, server.url + share_fragment(header, [data]))
    page.wait_for_function(
        "() => !document.getElementById('chip-a').hidden && document.getElementById('paste-b').value.length > 0",
        timeout=REPORT_TIMEOUT_MS,
    )
    assert IMG in page.locator("#chip-a").text_content()
    assert page.get_by_test_id("paste-b").input_value().startswith(SCRIPT)
    assert_nothing_injected(page)

    # A damaged link says so, and the page stays usable.
    open_fresh(page, server.url + "#v1=" + "A" * 40 + "%3Cimg%3E")
    error = page.get_by_test_id("error")
    error.wait_for(timeout=REPORT_TIMEOUT_MS)
    assert "damaged" in error.text_content()
    assert_nothing_injected(page)


def test_hostile_member_names_in_the_layer_table(ready_page):
    """Archives compared layer by layer: every member name is shown, as text."""
    page = ready_page
    layers = {IMG: np.ones(3, np.float32), SCRIPT: np.zeros(2, np.float32), SVG: np.arange(4, dtype=np.float32)}
    set_file(page, "a", "a.npz", npz_bytes(**layers))
    set_file(page, "b", "b.npz", npz_bytes(**{name: value + 1 for name, value in layers.items()}))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("bisect-summary").wait_for(timeout=REPORT_TIMEOUT_MS)
    shown = page_text(page)
    assert all(name in shown for name in layers), shown
    assert_nothing_injected(page)
