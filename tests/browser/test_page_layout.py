"""Layout at 390, 1280 and 1920 px: no chart label overlaps another, and a table wider than
its card says that it scrolls (a focusable, named container marked as overflowing, and a hint).

The case spreads the ULP histogram over every bin up to 2³¹ (a sign flip across zero in
float32, beside rounding and a bug of a few thousand ULP), the most labels it can have.
Labels are compared as the quadrilaterals they cover on screen (their boxes turned by the
slant of the ticks), with the separating-axis test.
"""

from __future__ import annotations

import numpy as np
import pytest
from made import numpy_text

REPORT_TIMEOUT_MS = 60_000
WIDTHS = [390, 1280, 1920]

QUADS = """root => [...root.querySelectorAll("svg text")].map((t) => {
  const box = t.getBBox();
  const m = t.getScreenCTM();
  const at = (x, y) => { const p = new DOMPoint(x, y).matrixTransform(m); return [p.x, p.y]; };
  return { text: t.textContent, quad: [at(box.x, box.y), at(box.x + box.width, box.y),
    at(box.x + box.width, box.y + box.height), at(box.x, box.y + box.height)] };
})"""


def wide_pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    b = rng.standard_normal((6, 40)).astype(np.float32)
    a = b.copy()
    ulps = [1, 2, 3, 6, 12, 30, 60, 120, 250, 500, 1000, 3000, 9000, 30000, 10**5, 10**6, 10**7]
    for i, n in enumerate(ulps):
        a.flat[i * 7] = (b.flat[i * 7 : i * 7 + 1].view(np.int32) + n).view(np.float32)[0]
    a[5, :30] = -b[5, :30]  # sign flips: ULP distances up to 2³¹
    a[4, 3] = 123456.78  # one far-out value: a wide scatter
    return a, b


def overlapping(p: list, q: list) -> bool:
    """Whether two convex quadrilaterals overlap by more than a hair (separating-axis test)."""
    for poly in (p, q):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx, ny = y2 - y1, x1 - x2
            length = (nx * nx + ny * ny) ** 0.5 or 1.0
            pa = [(x * nx + y * ny) / length for x, y in p]
            qa = [(x * nx + y * ny) / length for x, y in q]
            if max(pa) <= min(qa) + 0.5 or max(qa) <= min(pa) + 0.5:
                return False
    return True


@pytest.mark.parametrize("width", WIDTHS)
def test_no_label_overlaps_and_wide_tables_say_they_scroll(ready_page, width):
    page = ready_page
    page.set_viewport_size({"width": width, "height": 900})
    a, b = wide_pair()
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    page.locator("[data-testid=scatter] svg").wait_for(timeout=REPORT_TIMEOUT_MS)
    bins = page.locator("[data-testid=histogram] rect.bar").count()
    assert bins >= 30  # the case fills the histogram

    for chart in ("histogram", "scatter"):
        labels = page.eval_on_selector(f"[data-testid={chart}]", QUADS)
        assert len(labels) >= 6, chart
        clashes = [(x["text"], y["text"]) for i, x in enumerate(labels) for y in labels[i + 1 :]
                   if overlapping(x["quad"], y["quad"])]
        assert not clashes, f"{chart} at {width} px: {clashes}"

    # The worst-elements table: a focusable, named scroll container that says when it overflows.
    box = page.locator("#worst .scroll-x")
    assert box.get_attribute("tabindex") == "0" and box.get_attribute("role") == "region"
    assert box.get_attribute("aria-label")
    page.wait_for_function("() => document.querySelector('#worst .scroll-x').dataset.overflowing !== undefined")
    over = box.evaluate("b => b.scrollWidth > b.clientWidth + 1")
    assert box.get_attribute("data-overflowing") == str(over).lower()
    assert page.locator("#worst .scroll-hint").is_visible() == over
    if width == 390:
        assert over  # the phone cuts the table: it must say so
