"""Lighthouse (from npm) on the built page, mobile preset, in Debian's Chromium.

Prints the performance score and its metrics (FCP, LCP, TBT, CLS, Speed Index) for each
run and the median score, then the layout shift of a mobile visit up to the core being
ready (which Lighthouse, stopping at the load event, does not see), with the machine's
load average: figures on a shared machine are noisy, so nothing here asserts.

Usage: ``python bench/lighthouse_page.py [--runs 3] [--site DIR]`` (builds to a temporary
folder unless ``--site`` names a built one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from served import served

ROOT = Path(__file__).resolve().parent.parent

LIGHTHOUSE = ROOT / "node_modules" / ".bin" / "lighthouse"
METRICS = ["first-contentful-paint", "largest-contentful-paint", "total-blocking-time", "cumulative-layout-shift",
           "speed-index"]


def run_once(url: str, out: Path) -> dict:
    subprocess.run(
        [str(LIGHTHOUSE), url, "--only-categories=performance", "--output=json", f"--output-path={out}",
         "--quiet", "--chrome-flags=--headless=new --no-sandbox --disable-gpu"],
        check=True, env={**os.environ, "CHROME_PATH": "/usr/bin/chromium"},
    )
    result = json.loads(out.read_text())
    figures = {"score": round(result["categories"]["performance"]["score"] * 100)}
    for metric in METRICS:
        figures[metric] = result["audits"][metric]["displayValue"]
    return figures


# Sums layout shifts (without recent input) from navigation until the core is ready and a
# second after: Lighthouse stops at the load event, before the header's status says "ready".
CLS_JS = """async () => {
  let cls = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (!entry.hadRecentInput) cls += entry.value;
  }).observe({ type: "layout-shift", buffered: true });
  const status = document.getElementById("status");
  while (status.dataset.state !== "ready" && status.dataset.state !== "failed") {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return cls;
}"""


def cls_to_ready(url: str) -> float:
    """CLS of a cold mobile visit (390 × 844) in Debian's Chromium, up to the core being ready."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--headless"])
        page = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=3, is_mobile=True)
        page.goto(url)
        value = page.evaluate(CLS_JS)
        browser.close()
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--site", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, served(args.site, Path(tmp)) as url:
        scores = []
        for i in range(args.runs):
            figures = run_once(url, Path(tmp) / f"run{i}.json")
            scores.append(figures["score"])
            print(f"run {i + 1}: " + ", ".join(f"{k} {v}" for k, v in figures.items()), flush=True)
        shifts = [cls_to_ready(url) for _ in range(args.runs)]
        print("CLS from navigation to ready (mobile): " + ", ".join(f"{v:.3f}" for v in shifts), flush=True)
    print(f"median performance score {statistics.median(scores)} (mobile); load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
