"""The heat map's colour scale: absolute and shared by every slice, linear or log, with a
legend of its bounds; the caption names no colour (light and dark pages differ).

The bounds are worked out here with NumPy on the arrays the test made.
"""

from __future__ import annotations

import numpy as np
import pytest
from heatmap_cells import OPACITY_STEP, cell, hovered_value
from heatmap_cells import wait_slice as wait_canvas
from made import numpy_text
from test_page_ui2 import g4

REPORT_TIMEOUT_MS = 60_000
STEP = 2.0**-10  # the same |A − B| in the rounding slice and in the bug's slice, exactly


def pair() -> tuple[np.ndarray, np.ndarray]:
    """float32 (3, 6, 8): slice 0 holds small differences, slice 2 a bug up to 0.75."""
    rng = np.random.default_rng(5)
    b = rng.uniform(1.0, 2.0, (3, 6, 8)).astype(np.float32)
    a = b.copy()
    a[0, 0, :4] = np.nextafter(a[0, 0, :4], np.float32(np.inf))
    b[0, 1, 1] = b[2, 3, 3] = 1.0
    a[0, 1, 1] = a[2, 3, 3] = 1.0 + STEP
    a[2, 4, 2:6] += np.float32([0.25, 0.5, 0.75, 0.125])
    return a, b


def cell_opacity(page, row: int, col: int) -> float:
    painted = cell(page, row, col)
    assert painted.kind == "heat"
    return painted.opacity


def wait_slice(page, axis0: int) -> None:
    """Wait until the heat map shows the slice at `axis0` along axis 0 (its label names it)."""
    wait_canvas(page, f"axis 0 index {axis0}", REPORT_TIMEOUT_MS)


def legend(page) -> dict:
    return page.eval_on_selector("[data-testid=heatmap-legend]", """l => ({
        log: l.dataset.log,
        min: l.querySelector('[data-testid=legend-min]').textContent,
        max: l.querySelector('[data-testid=legend-max]').textContent,
        minFull: l.querySelector('[data-testid=legend-min] span').title,
        maxFull: l.querySelector('[data-testid=legend-max] span').title })""")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_scale_is_shared_by_slices_with_a_legend_and_a_log_option(ready_page, scheme):
    page = ready_page
    page.emulate_media(color_scheme=scheme)
    a, b = pair()
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    top, bottom = float(diff.max()), float(diff[diff > 0].min())
    assert diff[0].max() < top / 100  # the slices' own maxima differ a hundredfold
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)

    wait_slice(page, 2)  # opens on the bug's slice
    shown = legend(page)
    assert shown == {"log": "false", "min": "0", "max": g4(top), "minFull": "0", "maxFull": repr(top)}
    # (the titles are JavaScript's shortest form of the same double: compared as numbers below)
    in_bug = cell_opacity(page, 3, 3)
    assert hovered_value(page, 3, 3) == STEP  # the value the colour stands for, named on hover
    assert cell_opacity(page, 4, 4) == pytest.approx(1.0, abs=OPACITY_STEP)  # the pair's largest, 0.75
    caption = page.get_by_test_id("heatmap-caption").text_content()
    assert "darkest" not in caption and "lightest" not in caption
    assert g4(float(diff[2].max())) in caption  # the slice's own largest, in words

    page.get_by_test_id("slice-index-0").fill("0")
    page.get_by_test_id("slice-index-0").dispatch_event("change")
    wait_slice(page, 0)
    assert legend(page) == shown  # the same bounds on the rounding slice
    assert cell_opacity(page, 1, 1) == in_bug  # same value, same colour
    assert in_bug == pytest.approx(0.15 + 0.85 * STEP / top, abs=OPACITY_STEP)  # linear from 0 to the pair's largest

    page.get_by_test_id("heatmap-log").check()
    page.wait_for_function("() => document.querySelector('[data-testid=heatmap-legend]').dataset.log === 'true'")
    logged = legend(page)
    assert logged["min"] == g4(bottom) and float(logged["minFull"]) == bottom and logged["max"] == g4(top)
    log_pos = (np.log(STEP) - np.log(bottom)) / (np.log(top) - np.log(bottom))
    assert cell_opacity(page, 1, 1) == pytest.approx(0.15 + 0.85 * log_pos, abs=OPACITY_STEP)
    page.get_by_test_id("slice-index-0").fill("2")
    page.get_by_test_id("slice-index-0").dispatch_event("change")
    wait_slice(page, 2)
    assert legend(page) == logged and cell_opacity(page, 3, 3) == pytest.approx(0.15 + 0.85 * log_pos, abs=OPACITY_STEP)
