"""Long pastes are kept beside the text box rather than in it: a box holding megabytes takes
seconds to lay out, and tens of them froze the tab before any Python ran.  Such a text is
compared like any other, and one over the parser's cap gets its error with the text kept."""

from __future__ import annotations

import json

import numpy as np
from made import numpy_text
from perpendis.inputs.formats.limits import TEXT_MAX_CHARS
from perpendis.service import api

TIMEOUT_MS = 120_000

# Pastes `text` into a side's box as a user would (a paste event carrying it), or, with
# `repeat`, a text made in the page: `head + body × repeat + tail`, too big to send from here.
PASTE_JS = """([side, text, repeat]) => {
  const data = new DataTransfer();
  const [head, body, tail] = text;
  data.setData("text/plain", repeat ? head + body.repeat(repeat) + tail : head);
  const event = new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
  document.getElementById(`paste-${side}`).dispatchEvent(event);
  return event.defaultPrevented;
}"""


def paste(page, side: str, text: str) -> bool:
    return page.evaluate(PASTE_JS, [side, [text, "", ""], 0])


def wait_for_outcome(page) -> None:
    page.wait_for_function(
        """() => !document.body.classList.contains("busy")
             && (!document.getElementById("report").hidden || !document.getElementById("error").hidden)""",
        timeout=TIMEOUT_MS,
    )


def test_a_long_paste_is_kept_beside_the_box_and_compared(ready_page):
    page = ready_page
    rng = np.random.default_rng(21)
    a = rng.standard_normal(150_000).astype(np.float32)
    b = a.copy()
    b[1234] = np.nextafter(b[1234], np.float32(np.inf))
    text_a, text_b = numpy_text(a), numpy_text(b)
    assert len(text_a) > 2**20  # more than the page keeps in a box
    assert paste(page, "a", text_a) and paste(page, "b", text_b)
    # The boxes stay empty; the chips say what they hold.
    assert page.locator("#paste-a").input_value() == "" and page.locator("#paste-b").input_value() == ""
    chip = page.locator("#chip-a .file-name").text_content()
    assert f"pasted text ({len(text_a)} characters" in chip
    page.get_by_test_id("compare").click()
    wait_for_outcome(page)
    request = {"op": "compare", "inputs": {"a": {"text": text_a}, "b": {"text": text_b}}}
    expected = json.loads(json.dumps(api.handle(request, {})))["report"]
    assert page.locator("#verdict-box").get_attribute("data-verdict") == expected["verdict"] == "rounding"
    assert page.get_by_test_id("first-diff-index").text_content().strip() == "(1234,)"


def test_a_paste_of_ten_thousand_numbers_is_kept_beside_the_box(ready_page):
    """10 k float32 numbers (about 120 kB): in the box, laying them out was a frame of 187 ms."""
    page = ready_page
    rng = np.random.default_rng(22)
    a = rng.standard_normal(10_000).astype(np.float32)
    b = a.copy()
    b[::7] = np.nextafter(b[::7], np.float32(np.inf))
    text_a, text_b = numpy_text(a), numpy_text(b)
    assert 2**15 < len(text_a) < 2**20
    assert paste(page, "a", text_a) and paste(page, "b", text_b)  # prevented: kept beside the box
    assert page.locator("#paste-a").input_value() == ""
    assert f"pasted text ({len(text_b)} characters" in page.locator("#chip-b .file-name").text_content()
    page.get_by_test_id("compare").click()
    wait_for_outcome(page)
    request = {"op": "compare", "inputs": {"a": {"text": text_a}, "b": {"text": text_b}}}
    expected = json.loads(json.dumps(api.handle(request, {})))["report"]
    assert page.locator("#verdict-box").get_attribute("data-verdict") == expected["verdict"]
    assert page.get_by_test_id("first-diff-index").text_content().strip() == "(0,)"


def test_a_short_paste_goes_into_the_box_as_usual(ready_page):
    page = ready_page
    assert not paste(page, "a", "[1.0, 2.0]")  # not prevented: the box takes it
    assert page.locator("#chip-a").is_hidden()


def test_a_paste_over_the_parsers_cap_gets_its_error_and_is_kept(ready_page):
    page = ready_page
    head, body, tail = "array([", "0.5, ", "0.5], dtype=float32)"
    repeat = TEXT_MAX_CHARS // len(body) + 1
    assert page.evaluate(PASTE_JS, ["a", [head, body, tail], repeat])
    paste(page, "b", "array([0.5], dtype=float32)")
    page.get_by_test_id("compare").click()
    wait_for_outcome(page)
    error = page.get_by_test_id("error")
    assert error.is_visible()
    assert f"more than the limit TEXT_MAX_CHARS = {TEXT_MAX_CHARS}" in error.text_content()
    # Nothing pasted is lost: the chip still holds the text.
    size = len(head) + len(body) * repeat + len(tail)
    assert f"pasted text ({size} characters" in page.locator("#chip-a .file-name").text_content()


def test_summarised_prints_in_both_boxes_are_flagged_in_both(ready_page):
    """Real over-threshold prints of NumPy and PyTorch: one error, shown beside both boxes."""
    import torch

    page = ready_page
    values = np.arange(2000, dtype=np.float32) / 7
    a_text, b_text = repr(values), repr(torch.from_numpy(values))
    assert "..." in a_text and "..." in b_text
    page.get_by_test_id("paste-a").fill(a_text)
    page.get_by_test_id("paste-b").fill(b_text)
    page.get_by_test_id("compare").click()
    wait_for_outcome(page)
    want = api.handle({"op": "compare", "inputs": {"a": {"text": a_text}, "b": {"text": b_text}}}, {})["error"]
    shown = f"{want['message']} ({want['where']})"
    assert want["sides"] == ["a", "b"]
    in_a = page.locator("#side-a .error-slot [data-testid=error]")
    in_b = page.locator("#side-b .error-slot [data-testid=error-b]")
    assert in_a.text_content() == shown and in_b.text_content() == shown
    assert in_a.get_attribute("role") == "alert" and in_b.get_attribute("role") is None  # announced once
    for side in "ab":
        assert page.get_by_test_id(f"paste-{side}").get_attribute("aria-invalid") == "true"
    # Fixing both and comparing again clears both.
    page.get_by_test_id("paste-a").fill(numpy_text(values[:4]))
    page.get_by_test_id("paste-b").fill(numpy_text(values[:4]))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for()
    assert page.locator(".error-also").count() == 0
    assert page.get_by_test_id("paste-b").get_attribute("aria-invalid") is None
