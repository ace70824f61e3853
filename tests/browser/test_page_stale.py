"""The report on screen always answers the inputs on screen, or says that it does not.

Every way of changing what is judged (text typed, files opened, Swap, a preset, atol typed,
an invalid atol) either runs the comparison again or dims the report and says, in a live
region, that it is out of date; a share link and an export carry the report's own inputs
and say so; an error leaves no report of other inputs looking current.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from made import npy_bytes, numpy_text
from stale_journey import JOURNEY, check, journey_spec
from test_page_actions_fuzz import settle

pytest.importorskip("playwright")
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

REPORT_TIMEOUT_MS = 60_000


def pair(shape: tuple[int, ...], seed: int, ulps: int) -> tuple[np.ndarray, np.ndarray]:
    """A float32 pair whose B is A moved `ulps` steps up at every third element."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    b = a.copy()
    flat = b.reshape(-1)
    for _ in range(ulps):
        flat[::3] = np.nextafter(flat[::3], np.float32(np.inf))
    return a, b


def stale(page) -> bool:
    return page.locator("#report").get_attribute("data-stale") == "true"


def compare(page) -> None:
    page.get_by_test_id("compare").click()
    settle(page)
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)


def compared(page, shape: tuple[int, ...], seed: int, ulps: int) -> tuple[np.ndarray, np.ndarray]:
    """A pair pasted into A and B and compared: the report every stale test starts from."""
    a, b = pair(shape, seed=seed, ulps=ulps)
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    compare(page)
    return a, b


def report_json(page) -> dict:
    with page.expect_download() as info:
        page.get_by_test_id("download-json").click()
    return json.loads(Path(info.value.path()).read_text())


def test_files_opened_after_an_example_mark_the_report_stale_and_rtol_does_not_rejudge_it(ready_page, tmp_path):
    page = ready_page
    page.get_by_test_id("example-rounding").click()
    settle(page)
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    example = report_json(page)
    assert not stale(page) and page.get_by_test_id("stale-note").is_hidden()

    a, b = pair((7, 9), seed=3, ulps=40)
    for side, array in (("a", a), ("b", b)):
        path = tmp_path / f"{side}.npy"
        path.write_bytes(npy_bytes(array))
        page.get_by_test_id(f"file-{side}").set_input_files(str(path))
        page.wait_for_selector(f"#chip-{side}:not([hidden])")
    assert stale(page)
    assert page.locator("#example-about").is_hidden()  # the example's words no longer describe the inputs
    note = page.get_by_test_id("stale-note")
    assert note.is_visible() and "the inputs changed" in note.text_content()
    assert note.get_attribute("aria-live") == "polite"
    assert "stale" in page.locator("#report").get_attribute("class")

    verdict_before = page.get_by_test_id("verdict").text_content()
    page.get_by_test_id("rtol").fill("0.5")
    page.get_by_test_id("rtol").press("Enter")
    settle(page)
    # Not judged again on the example's arrays: still marked, still the example's report.
    assert stale(page)
    assert "the tolerance changed" in note.text_content()
    assert page.get_by_test_id("verdict").text_content() == verdict_before
    assert report_json(page)["a"]["shape"] == example["a"]["shape"]
    assert "not what was edited since" in page.get_by_test_id("export-status").text_content()

    compare(page)
    assert not stale(page) and note.is_hidden()
    fresh = report_json(page)
    assert fresh["a"]["shape"] == [7, 9] and fresh["n_bitwise_diff"] == a.reshape(-1)[::3].size
    assert fresh["tolerance"]["rtol"] == 0.5


def test_typed_text_marks_stale_and_typing_it_back_makes_it_current(ready_page):
    page = ready_page
    _a, b = compared(page, (4, 5), seed=4, ulps=1)
    assert not stale(page)
    page.get_by_test_id("paste-b").fill(numpy_text(b * 2))
    assert stale(page)
    # A preset chosen now is not judged on the old arrays either.
    page.get_by_test_id("preset").select_option("fp16")
    settle(page)
    assert stale(page)
    assert report_json(page)["tolerance"]["preset"] != "fp16"
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("preset").select_option("")
    settle(page)
    assert not stale(page)
    page.get_by_test_id("swap").click()
    assert stale(page)
    page.get_by_test_id("swap").click()
    assert not stale(page)


def test_a_preset_on_unchanged_inputs_is_judged_again_at_once(ready_page):
    page = ready_page
    _a, _b = compared(page, (4, 5), seed=5, ulps=300)
    page.get_by_test_id("preset").select_option("fp16")
    settle(page)
    assert not stale(page)
    assert report_json(page)["tolerance"]["preset"] == "fp16"


# A preset chosen, then what the report says at once, in the change event's own task: before
# the re-judged answer can arrive.
PRESET_AT_ONCE_JS = """(preset) => {
  const select = document.getElementById("preset");
  select.value = preset;
  select.dispatchEvent(new Event("change", { bubbles: true }));
  const report = document.getElementById("report");
  const note = document.getElementById("stale-note");
  return { stale: report.dataset.stale, busy: report.getAttribute("aria-busy"),
           dimmed: report.classList.contains("stale"), note: note.hidden ? "" : note.textContent,
           pageBusy: document.body.classList.contains("busy") };
}"""


def test_a_preset_change_marks_the_report_busy_until_the_new_answer_arrives(ready_page):
    page = ready_page
    _a, _b = compared(page, (4, 5), seed=8, ulps=300)
    before = report_json(page)["tolerance"]
    at_once = page.evaluate(PRESET_AT_ONCE_JS, "fp16")
    # While the answer is in flight the old tolerance's report is marked, for eyes and ears.
    assert at_once["stale"] == "true" and at_once["dimmed"] and at_once["busy"] == "true"
    assert "Judging again at the new tolerance" in at_once["note"]
    assert at_once["pageBusy"]
    expect(page.locator("#report")).to_have_attribute("data-stale", "false", timeout=REPORT_TIMEOUT_MS)
    settle(page)
    assert page.locator("#report").get_attribute("aria-busy") == "false"
    assert page.get_by_test_id("stale-note").is_hidden()
    after = report_json(page)["tolerance"]
    assert after["preset"] == "fp16" and after != before


def test_share_link_of_a_stale_report_carries_the_reports_inputs_and_says_so(ready_page, context):
    page = ready_page
    a, _b = compared(page, (3, 4), seed=6, ulps=2)
    page.get_by_test_id("paste-a").fill(numpy_text(a[:2]))
    page.get_by_test_id("share").click()
    # the link is compressed before the status is written: wait for it
    expect(page.get_by_test_id("export-status")).to_contain_text("not what was edited since", timeout=30_000)
    status = page.get_by_test_id("export-status").text_content()
    link = page.get_by_test_id("share-link").input_value()
    assert f"{len(link):,} characters" in status

    other = context.new_page()
    other.goto(link)
    other.get_by_test_id("verdict").wait_for(timeout=90_000)
    settle(other)
    assert other.get_by_test_id("paste-a").input_value() == numpy_text(a)
    assert report_json(other)["a"]["shape"] == [3, 4]
    assert other.locator("#report").get_attribute("data-stale") == "false"


def test_an_invalid_atol_marks_the_report_and_an_input_error_removes_it(ready_page):
    page = ready_page
    _a, _b = compared(page, (3, 4), seed=7, ulps=2)
    page.get_by_test_id("atol").fill("abc")
    settle(page)
    assert page.get_by_test_id("error").is_visible()
    assert stale(page)
    assert "not a number" in page.get_by_test_id("stale-note").text_content()
    page.get_by_test_id("atol").fill("")
    settle(page)
    assert not stale(page)

    page.get_by_test_id("paste-b").fill("loss went down")
    page.get_by_test_id("compare").click()
    settle(page)
    assert page.get_by_test_id("error").is_visible()
    assert page.locator("#report").is_hidden()


def test_every_stale_path_in_one_journey(ready_page, tmp_path):
    """Paste, reference, preset, tolerance, file, share and error paths, as the Firefox and
    WebKit lanes walk them too (stale_journey.js)."""
    spec = journey_spec()
    seen = ready_page.evaluate(f"({JOURNEY})", spec)
    ready_page.screenshot(path=str(tmp_path / "journey-end.png"))
    check(seen, spec)
