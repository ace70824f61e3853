"""Numbers on the cards: 4 significant digits shown, the full value on hover and in the
clipboard, shares as percentages, an infinite relative difference in words.

The full values are the ones in the report the page downloads (Python's own repr of each
float); the short forms are worked out here with Python's ``%.4g``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from made import numpy_text
from test_page_export import downloaded_report
from test_page_ui2 import g4

REPORT_TIMEOUT_MS = 60_000

# The last copy event's text/plain, as the page's handler left it (read in the bubbling
# phase on window, after the document's handler ran).
RECORD_COPIES = """() => {
  window.__copied = null;
  window.addEventListener("copy", (event) => { window.__copied = event.clipboardData.getData("text/plain"); });
}"""

SELECT = """([selector, whole]) => {
  const node = document.querySelector(selector);
  const range = document.createRange();
  if (whole) range.selectNode(node);
  else range.setStart(node.firstChild.firstChild, 1), range.setEnd(node.firstChild.firstChild, 3);
  const selection = document.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}"""


def digits(text: str) -> int:
    """Significant digits of a number as written ("0.0123" → 3, "1.5e-7" → 2)."""
    return len(text.split("e")[0].replace("-", "").replace(".", "").lstrip("0"))


def bug_pair() -> tuple[np.ndarray, np.ndarray]:
    """float32 (4, 8): rounding noise everywhere, one row scaled by 1.37 (a bug), one B zero."""
    rng = np.random.default_rng(19)
    b = rng.standard_normal((4, 8)).astype(np.float32)
    a = (b.astype(np.float64) * (1 + rng.uniform(-3e-7, 3e-7, b.shape))).astype(np.float32)
    a[2] = b[2] * np.float32(1.37)
    b[3, 5] = 0.0
    a[3, 5] = np.float32(1e-3)
    return a, b


def compared(page) -> dict:
    """Compare the bug pair; the report the page downloads."""
    a, b = bug_pair()
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    return downloaded_report(page)


def copied(page, selector: str, whole: bool) -> str:
    page.evaluate(SELECT, [selector, whole])
    page.keyboard.press("Control+c")
    page.wait_for_function("() => window.__copied !== null", timeout=5_000)
    text = page.evaluate("() => window.__copied")
    page.evaluate("() => { window.__copied = null; }")
    return text


def test_cards_show_four_digits_and_copy_the_full_value(ready_page):
    page = ready_page
    page.evaluate(RECORD_COPIES)
    report = compared(page)

    # The largest |A − B|: 4 significant digits shown, every digit in the title.
    full_abs = report["max_abs_diff"]
    assert isinstance(full_abs, float) and len(repr(full_abs)) > 8
    number = page.get_by_test_id("max-abs").locator("span.figure")
    assert number.text_content() == g4(full_abs)
    assert number.get_attribute("title") == repr(full_abs)
    # Copying the number (or a part of it) copies the full value; a wider selection copies
    # the full value in place of the short one.
    assert copied(page, "[data-testid=max-abs]", whole=False) == repr(full_abs)
    whole = copied(page, "#summary dl.facts", whole=True)
    assert repr(full_abs) in whole and g4(full_abs) not in whole.replace(repr(full_abs), "")
    assert "max |A − B|" in whole and "\n" in whole  # the labels and lines are kept

    # The infinite relative difference (B is 0 at (3, 5)) in words, with the raw value behind it.
    rel = page.get_by_test_id("max-rel").locator("span.figure")
    assert report["max_rel_diff"] == "inf"
    assert rel.text_content() == "infinite: B is 0 and A is not" and rel.get_attribute("title") == "inf"

    # Failing elements: the count, and the share as a percentage (never "0.03125 of all").
    t = report["tolerance"]
    n_fail = page.get_by_test_id("n-fail").text_content()
    shown = re.fullmatch(rf"{t['n_fail']} \(([0-9.]+)% of all\)", n_fail)
    assert shown, n_fail
    assert digits(shown.group(1)) <= 4 and float(shown.group(1)) == pytest.approx(100 * t["fraction_fail"], rel=5e-4)
    fraction = page.get_by_test_id("n-fail").locator("span.figure").nth(1)
    assert fraction.get_attribute("title") == repr(t["fraction_fail"])

    # The worst-elements table: |A − B| of the largest-difference row with 4 digits, full on hover.
    row = page.locator("[data-testid=worst-table] tr", has=page.get_by_test_id("worst-abs"))
    worst = report["worst"]["abs"]
    cell = row.get_by_test_id("worst-abs-value")
    assert cell.text_content() == g4(worst["abs_diff"])
    assert cell.locator("span").get_attribute("title") == repr(worst["abs_diff"])
    # A and B keep every digit: they are the values whose bits are shown.
    assert row.get_by_test_id("worst-a-value").text_content() == worst["a"]
    assert row.get_by_test_id("worst-b-value").text_content() == worst["b"]

    # Minimal tolerances, statistics: no card number longer than 4 significant digits. (No
    # rtol alone passes here, B being 0 where A is not: that one is "—".)
    assert report["min_tolerance"]["rtol_at_atol"] is None
    assert page.get_by_test_id("min-rtol").text_content() == "—"
    for testid in ("min-atol", "stat-mean_abs", "stat-rmse", "stat-p99_rel"):
        node = page.get_by_test_id(testid).locator("span.figure")
        text = node.text_content()
        assert digits(text) <= 4, (testid, text)
        assert float(node.get_attribute("title")) == float(node.get_attribute("data-full"))


def test_axis_shares_are_percentages(ready_page):
    page = ready_page
    report = compared(page)
    page.get_by_test_id("axes").locator(".axis-top").first.wait_for()
    tops = page.get_by_test_id("axes").locator(".axis-top").all_text_contents()
    axis0 = next(x for x in report["axes"] if x["axis"] == 0)
    index, share = axis0["top"][0]
    shown = re.search(rf"\b{index} \(([0-9.]+)%\)", tops[0])
    assert shown and float(shown.group(1)) == pytest.approx(100 * share, rel=5e-4), tops
    assert "share" not in " ".join(tops)


def test_counts_are_grouped_and_one_failing_element_is_not_zero_percent(ready_page, tmp_path):
    """A 300,000-element float32 pair with one element off by 50 %: every count on the page has
    digit grouping and the one failing element's share is not shown as 0 %."""
    from made import npy_bytes
    from test_hostile import set_file

    page = ready_page
    rng = np.random.default_rng(5)
    b = rng.standard_normal(300_000).astype(np.float32)
    a = b.copy()
    a[123_456] = b[123_456] * np.float32(1.5)
    set_file(page, "a", "a.npy", npy_bytes(a))
    set_file(page, "b", "b.npy", npy_bytes(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    page.screenshot(path=str(tmp_path / "numbers.png"), full_page=True)
    assert page.get_by_test_id("n-elements").locator("span.figure").text_content() == "300,000"
    n_fail = page.get_by_test_id("n-fail").text_content()
    shown = re.fullmatch(r"1 \(([0-9.]+)% of all\)", n_fail)
    assert shown and float(shown.group(1)) == pytest.approx(100 / 300_000, rel=5e-4), n_fail
    text = page.locator("main").inner_text()
    assert "1 of 300,000 elements" in text
    assert "300000 elements" not in text and "of 300000" not in text
    assert "0.000%" not in text and "(0%" not in text
