"""The self-contained HTML page ``--perpendis-report`` writes, opened from disk in real Chromium:
it shows the report and requests nothing but itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import perpendis
import pytest
from conftest import CHROMIUM_ARGS, chromium_path
from perpendis.report.html import render_page

pytestmark = pytest.mark.browser

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"


def test_report_page_opens_from_disk_without_a_request(playwright, tmp_path):
    report = perpendis.compare(np.load(MODELS / "cnn.offset.npy"), np.load(MODELS / "cnn.ort.npy"))
    path = tmp_path / "report.html"
    path.write_text(render_page(report, title="tests/test_cnn.py::test_export"), encoding="utf-8")
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
    try:
        page = browser.new_page()
        requests, console = [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: console.append(m.text))
        page.goto(path.as_uri())
        page.wait_for_load_state("networkidle")
        assert requests == [path.as_uri()]
        assert not [c for c in console if "Content Security Policy" in c]
        assert page.locator(".verdict").text_content() == "INVESTIGATE"
        assert page.locator("svg.histogram rect.bar").count() > 0
        assert page.title() == "tests/test_cnn.py::test_export"
        # the styles applied (inline styles are allowed by the page's CSP): the badge is coloured
        background = page.locator(".verdict").evaluate("e => getComputedStyle(e).backgroundColor")
        assert background == "rgb(179, 38, 30)"
    finally:
        browser.close()
