"""Take the README's screenshots of the real page comparing the real example inputs.

Builds the site into a temporary folder, serves it on 127.0.0.1, opens it in Debian's
Chromium at 1280×720, presses each example button and saves ``docs/screenshot-*.png``.

Run: ``python docs/make_screenshots.py`` (from anywhere).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import serve  # noqa: E402

import build  # noqa: E402

VIEWPORT = {"width": 1280, "height": 720}
TIMEOUT_MS = 120_000


def shoot(page, example: str, sections: dict[str, str]) -> None:
    """Run one example, then save the top of the report and, with the largest |A - B|
    selected (the heatmap follows it to its slice), each named section."""
    page.get_by_test_id(f"example-{example}").click()
    page.get_by_test_id("verdict").wait_for(timeout=TIMEOUT_MS)
    page.locator("[data-testid='scatter'] svg").wait_for(timeout=TIMEOUT_MS)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=DOCS / f"screenshot-{example}.png")
    page.get_by_test_id("worst-abs").click()
    page.get_by_test_id("heatmap-mark").wait_for(timeout=TIMEOUT_MS)
    for name, selector in sections.items():
        page.evaluate("sel => document.querySelector(sel).scrollIntoView({block: 'start'})", selector)
        page.screenshot(path=DOCS / f"screenshot-{example}-{name}.png")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "dist"
        build.build(site)
        httpd = serve.make_server(site, port=0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
                page = browser.new_page(viewport=VIEWPORT, color_scheme="light")
                page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/")
                page.wait_for_function(
                    "() => /ready/.test(document.querySelector('[data-testid=\"status\"]').textContent)",
                    timeout=TIMEOUT_MS,
                )
                shoot(page, "rounding", {})
                shoot(page, "bug", {"evidence": "#verdict-box ~ .inspector", "heatmap": "#slice-card"})
                browser.close()
        finally:
            httpd.shutdown()


if __name__ == "__main__":
    main()
