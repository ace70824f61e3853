"""The worst-elements table and the bisect table fit a 1280-px-wide window: long cells wrap
and secondary columns stack, so neither scrolls sideways (at 390 px they still may, and say
so)."""

from __future__ import annotations

import numpy as np
import pytest
from made import numpy_text
from test_page_bisect import bisect_captures

pytestmark = pytest.mark.browser

REPORT_TIMEOUT_MS = 60_000
FITS = "b => ({scroll: b.scrollWidth, client: b.clientWidth})"
# The number of lines each text part of the cells' names spans.
SEGMENT_LINES = """cells => cells.flatMap(c => [...c.firstChild.childNodes].filter(n => n.nodeType === 3).map(t => {
  const range = document.createRange();
  range.selectNodeContents(t);
  return new Set([...range.getClientRects()].map(q => Math.round(q.top))).size;
}))"""


def test_worst_elements_table_fits_1280_px_with_long_float64_values(ready_page, tmp_path):
    page = ready_page
    page.set_viewport_size({"width": 1280, "height": 900})
    rng = np.random.default_rng(12)
    b = -rng.uniform(1e-3, 1e3, (16, 24)) * np.pi  # negative float64 values, 17 significant digits
    a = b * (1 + rng.uniform(-1e-15, 1e-15, b.shape))
    a[3, 17] = b[3, 17] * 1.0000001
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    table = page.get_by_test_id("worst-table")
    values = table.locator("[data-testid=worst-a-value], [data-testid=worst-b-value]")
    assert max(len(t) for t in values.all_text_contents()) >= 18
    # Every value whole on one line: B sits under A, neither is cut into a narrow column.
    assert values.evaluate_all("vs => vs.map(v => v.getClientRects().length)") == [1] * values.count()
    page.locator("#worst").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "worst-1280.png"))
    box = page.locator("#worst .scroll-x")
    size = box.evaluate(FITS)
    assert size["scroll"] <= size["client"], size
    assert not page.locator("#worst .scroll-hint").is_visible()


@pytest.mark.parametrize("model", ["cnn", "transformer"])
def test_bisect_table_fits_1280_px(ready_page, tmp_path, model):
    page = ready_page
    page.set_viewport_size({"width": 1280, "height": 900})
    bisect_captures(page, model, "ort_bug", "pt")
    rows = page.get_by_test_id("bisect-row")
    assert rows.count() >= 5
    page.locator(".bisect-table").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / f"bisect-{model}-1280.png"), full_page=True)
    # Names break at their separators only: each part between two separators is on one line.
    lines = page.get_by_test_id("bisect-a-name").evaluate_all(SEGMENT_LINES)
    assert lines and set(lines) == {1}, lines
    box = page.locator(".bisect-table").locator("xpath=..")
    size = box.evaluate(FITS)
    assert size["scroll"] <= size["client"], size
    # Nothing was dropped: every layer's name, verdict and failing share are still in its row.
    first = rows.first
    for testid in ("bisect-a-name", "bisect-verdict", "bisect-fail", "bisect-max-ulp"):
        assert first.get_by_test_id(testid).is_visible(), testid


def test_a_bisect_brings_its_first_failing_row_into_view_at_1280_px(ready_page):
    page = ready_page
    page.set_viewport_size({"width": 1280, "height": 900})
    bisect_captures(page, "cnn", "ort_bug")
    page.wait_for_function("() => document.getElementById('bisect').getBoundingClientRect().top < innerHeight")
    seen = page.evaluate("""() => {
      const row = document.querySelector('[data-testid=bisect-row][data-standing=first-failing]')
        .getBoundingClientRect();
      const summary = document.querySelector('[data-testid=bisect-summary]').getBoundingClientRect();
      return {row: [row.top, row.bottom], summary: summary.top, height: innerHeight, scrolled: scrollY};
    }""")
    assert seen["summary"] >= 0 and seen["row"][1] <= seen["height"], seen
    assert seen["scrolled"] > 0, seen  # it was below the fold at first
