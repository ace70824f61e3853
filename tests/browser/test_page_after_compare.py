"""After Compare the answer is in view: the verdict and the first cards (findings, tolerance)
inside the window at 1280 x 900, the list of accepted forms folded away (and still folded on
the next visit), and the whole-checkpoints panel below the report rather than above it."""

from __future__ import annotations

import pytest
from conftest import wait_until_ready
from test_page_actions_fuzz import settle

pytestmark = pytest.mark.browser


def in_view(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector, "n => { const r = n.getBoundingClientRect(); return r.top >= -1 && r.top < innerHeight - 40; }"
    )


def test_the_verdict_and_top_finding_are_in_view_and_onboarding_folds(ready_page):
    page = ready_page
    page.set_viewport_size({"width": 1280, "height": 900})
    assert page.get_by_test_id("onboarding").get_attribute("open") is not None  # a first visit: shown
    page.get_by_test_id("example-bug").click()
    settle(page)
    page.get_by_test_id("verdict").wait_for()
    assert page.get_by_test_id("onboarding").get_attribute("open") is None
    tops = page.evaluate("() => ['verdict-box', 'findings', 'tolerance'].map((id) => "
                         "document.getElementById(id).getBoundingClientRect().top)")
    assert in_view(page, "#verdict-box") and in_view(page, "#findings li") and in_view(page, "#tolerance"), tops
    # The panel of whole checkpoints comes after the report.
    assert page.evaluate("""() => Boolean(document.getElementById('report')
      .compareDocumentPosition(document.getElementById('checkpoints')) & Node.DOCUMENT_POSITION_FOLLOWING)""")
    page.reload()
    wait_until_ready(page)
    assert page.get_by_test_id("onboarding").get_attribute("open") is None
