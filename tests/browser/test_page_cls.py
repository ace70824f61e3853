"""Layout stability: the cumulative layout shift after each action stays at most 0.1 (the
"good" bound of Core Web Vitals), at a phone's 390 px and a laptop's 1280 px.

Shifts are the browser's own ``layout-shift`` entries, those without recent input (what a
click moves within half a second is expected and not counted, as CLS does not count it),
grouped into session windows (gaps under 1 s, windows under 5 s); an action's CLS is its
largest window, from the action until the page has settled. Each action is a real one on
the page's controls: an example, a pasted pair compared, the folds opened, a bisect of two
captured runs (tests/fixtures/models), and a plain compare after the bisect view.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import wait_until_ready
from made import numpy_text
from test_page_bisect import capture_path

CLS_MAX = 0.1
SETTLE_MS = 1500  # after the page is idle: the scatter plot and heat map arrive after the verdict
TIMEOUT_MS = 120_000

SHIFTS_INIT = """
window.__shifts = [];
const name = (node) => node && node.nodeType === 1
  ? node.tagName.toLowerCase() + (node.id ? `#${node.id}` : "") + (node.className && typeof node.className === "string"
    ? `.${node.className.trim().split(/\\s+/).join(".")}` : "")
  : String(node?.nodeName ?? "");
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.hadRecentInput) continue;
    window.__shifts.push({ at: entry.startTime, value: entry.value,
      sources: (entry.sources || []).map((s) =>
        `${name(s.node)} ${JSON.stringify(s.previousRect)} -> ${JSON.stringify(s.currentRect)}`) });
  }
}).observe({ type: "layout-shift", buffered: true });
"""

# The largest session window of the shifts since `from` (ms of the page's clock), and its shifts.
CLS_SINCE_JS = """(from) => {
  let best = { value: 0, shifts: [] };
  let window_ = { value: 0, shifts: [], start: -Infinity, last: -Infinity };
  for (const shift of window.__shifts.filter((s) => s.at >= from)) {
    if (shift.at - window_.last > 1000 || shift.at - window_.start > 5000) {
      window_ = { value: 0, shifts: [], start: shift.at, last: shift.at };
    }
    window_.value += shift.value;
    window_.shifts.push(shift);
    window_.last = shift.at;
    if (window_.value > best.value) best = { value: window_.value, shifts: [...window_.shifts] };
  }
  return best;
}"""

IDLE_JS = """() => !document.body.classList.contains('busy') &&
  (!document.getElementById('report').hidden || !document.getElementById('bisect').hidden)"""


def pair() -> tuple[np.ndarray, np.ndarray]:
    """float32 (4, 6, 8) with rounding everywhere and a bug in one channel: every card shows."""
    rng = np.random.default_rng(36)
    a = rng.standard_normal((4, 6, 8)).astype(np.float32)
    b = a.copy()
    b[:, ::2] = np.nextafter(b[:, ::2], np.float32(np.inf))
    b[2, 3, :5] += np.float32(0.25)
    return a, b


def settle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(IDLE_JS, timeout=TIMEOUT_MS)
    page.wait_for_timeout(SETTLE_MS)


def shift_after(page, action) -> dict:
    """Run ``action`` and let the page settle; the largest session window of shifts since."""
    start = page.evaluate("() => performance.now()")
    action()
    settle(page)
    return page.evaluate(CLS_SINCE_JS, start)


def open_folds(page) -> None:
    for summary in ("#onboarding > summary", "#ref-box > summary", "#checkpoints > summary"):
        if page.locator(summary).is_visible():
            page.locator(summary).click()
    page.wait_for_timeout(300)


def compare_pasted(page) -> None:
    a, b = pair()
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(b))
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=TIMEOUT_MS)


def bisect(page) -> None:
    page.get_by_test_id("file-a").set_input_files(str(capture_path("cnn", "torch")))
    page.get_by_test_id("file-b").set_input_files(str(capture_path("cnn", "ort_bug")))
    page.wait_for_selector("#chip-b:not([hidden])")
    page.get_by_test_id("compare").click()
    page.locator("[data-testid=bisect-row]").first.wait_for(timeout=TIMEOUT_MS)


def compare_after_bisect(page) -> None:
    page.get_by_test_id("clear").click()
    compare_pasted(page)


def example(page) -> None:
    page.get_by_test_id("example-bug").click()
    page.get_by_test_id("verdict").wait_for(timeout=TIMEOUT_MS)


ACTIONS = [("example", example), ("compare", compare_pasted), ("folds", open_folds),
           ("bisect", bisect), ("compare after bisect", compare_after_bisect), ("example again", example)]


@pytest.mark.parametrize("width, height", [(390, 844), (1280, 900)])
def test_no_action_shifts_the_layout_more_than_a_tenth(page, server, width, height):
    page.set_viewport_size({"width": width, "height": height})
    page.add_init_script(script=SHIFTS_INIT)
    page.goto(server.url)
    wait_until_ready(page)
    measured = {name: shift_after(page, lambda act=act: act(page)) for name, act in ACTIONS}
    print({name: round(m["value"], 4) for name, m in measured.items()})
    over = {name: m for name, m in measured.items() if m["value"] > CLS_MAX}
    assert not over, "; ".join(f"{name}: CLS {m['value']:.3f} from {m['shifts']}" for name, m in over.items())
