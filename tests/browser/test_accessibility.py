"""axe-core (from npm) finds nothing wrong with the page in any state it can be in: empty,
an input error, a single report in light and in dark, a bisect table and a runs matrix.
The verdict is announced in a live region.

axe is evaluated through the DevTools protocol, which the page's CSP (no string eval, no
inline script) does not govern, so the page runs under its real policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_page_actions_fuzz import CAPTURES, CASES, settle

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


def violations(page) -> list[str]:
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(f"() => {{ {AXE.read_text()}\n }}")
    found = page.evaluate(
        """async () => {
             const result = await axe.run(document, { resultTypes: ["violations"] });
             return result.violations.map((v) => `${v.id} ×${v.nodes.length}: ${v.help} — `
               + v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
           }"""
    )
    return found


def compare_texts(page, name: str) -> None:
    page.get_by_test_id("paste-a").fill(CASES[name][0])
    page.get_by_test_id("paste-b").fill(CASES[name][1])
    page.get_by_test_id("compare").click()
    settle(page)


def open_captures(page, sides=("a", "b")) -> None:
    for side in sides:
        page.get_by_test_id(f"file-{side}").set_input_files(str(CAPTURES[side]))
        page.wait_for_selector(f"#chip-{side}:not([hidden])")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_axe_violation_in_any_state(ready_page, scheme):
    page = ready_page
    page.emulate_media(color_scheme=scheme)
    found = {"empty": violations(page)}
    compare_texts(page, "words")
    assert page.get_by_test_id("error").is_visible()
    found["input error"] = violations(page)
    compare_texts(page, "bug")
    assert page.locator("#verdict-box").get_attribute("data-verdict") == "investigate"
    found["report"] = violations(page)
    compare_texts(page, "shapes")
    found["shapes"] = violations(page)
    page.get_by_test_id("clear").click()
    open_captures(page)
    page.get_by_test_id("compare").click()
    page.get_by_test_id("bisect-summary").wait_for(timeout=120_000)
    settle(page)
    found["bisect"] = violations(page)
    page.get_by_test_id("add-run").click()
    page.get_by_test_id("file-c").set_input_files(str(CAPTURES["c"]))
    page.wait_for_selector("[data-run=C] .file-chip:not([hidden])")
    page.get_by_test_id("compare").click()
    page.get_by_test_id("runs-matrix").locator("table").wait_for(timeout=120_000)
    settle(page)
    found["runs matrix"] = violations(page)
    bad = {state: v for state, v in found.items() if v}
    assert not bad, json.dumps(bad, indent=1)


def test_the_verdict_is_announced_in_a_live_region(ready_page):
    page = ready_page
    compare_texts(page, "bug")
    region = page.locator("#verdict-box [aria-live], #verdict-box[aria-live]").first
    assert region.get_attribute("aria-live") == "polite"
    assert region.text_content().lower().startswith("investigate")


@pytest.mark.parametrize("width", [390, 1280])
def test_no_axe_violation_in_the_bisect_view_with_its_scrolling_regions(ready_page, width):
    """A transformer bisect (74 tensors only in B: a list that scrolls) at a phone's and a
    laptop's width, then one layer's report opened from the table: axe finds nothing, and
    every region that scrolls can be reached with the keyboard and has a name."""
    from test_page_bisect import bisect_captures

    page = ready_page
    page.set_viewport_size({"width": width, "height": 900})
    bisect_captures(page, "transformer", "ort_bug")
    settle(page)
    scrolling = page.evaluate(
        """() => [...document.querySelectorAll('body *')].filter((n) => {
             const s = getComputedStyle(n);
             return (/(auto|scroll)/.test(s.overflowX) && n.scrollWidth > n.clientWidth + 1)
               || (/(auto|scroll)/.test(s.overflowY) && n.scrollHeight > n.clientHeight + 1);
           }).map((n) => ({cls: n.className, tab: n.getAttribute('tabindex'),
                          name: n.getAttribute('aria-label') || n.getAttribute('aria-labelledby')}))"""
    )
    assert scrolling  # at least the list of the 74 tensors only in B scrolls
    assert all(s["tab"] == "0" and s["name"] for s in scrolling), scrolling
    found = {"bisect": violations(page)}
    page.get_by_test_id("bisect-row").nth(13).click()
    page.get_by_test_id("verdict").wait_for(timeout=120_000)
    settle(page)
    found["layer report"] = violations(page)
    bad = {state: v for state, v in found.items() if v}
    assert not bad, json.dumps(bad, indent=1)
