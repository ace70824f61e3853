"""Measure navigation → "core ready" in headless Chromium, cold and warm.

Cold is a fresh profile (empty HTTP cache, no service worker); warm is a second navigation
in the same profile, once the service worker the first visit installed controls the page
(a returning user). Also measures navigation → first contentful paint (the inputs are
shown and accept typing: module scripts never block parsing) and → DOMContentLoaded (the
page's scripts have run too). Prints the median and all runs, in seconds, with the
machine's load average: timings on a shared machine are noisy, so nothing here asserts.

Usage: ``python bench/startup.py [--runs 5] [--site DIR]`` (builds to a temporary folder
unless ``--site`` names a built one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "scripts"))

import serve  # noqa: E402
from conftest import CHROMIUM_ARGS, chromium_path  # noqa: E402

import build  # noqa: E402

# Resolves with performance.now() (ms since navigation start) when the core is ready.
READY_AT_JS = """async () => {
  const { core } = await import(new URL("app/client.js", location.href));
  return new Promise((resolve, reject) => core.onStatus((s) => {
    if (s.state === "ready") resolve(performance.now());
    if (s.state === "failed") reject(new Error(s.message));
  }));
}"""


INTERACTIVE_AT_JS = """() => [
  performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN,
  performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd,
]"""
# The first visit registers the service worker once the core is ready; wait until it controls
# the page (it has cached the site by then), or give up after a minute.
SERVICE_WORKER_JS = """() => Promise.race([
  navigator.serviceWorker.ready.then(() => navigator.serviceWorker.controller !== null
    || new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", () => resolve(true)))),
  new Promise((resolve) => setTimeout(() => resolve(false), 60000)),
])"""


def load(page, url: str) -> tuple[float, float, float]:
    """(painted, scripts run, core ready) in seconds since navigation start."""
    page.goto(url)
    ready = page.evaluate(READY_AT_JS) / 1000
    painted, scripts = page.evaluate(INTERACTIVE_AT_JS)
    return painted / 1000, scripts / 1000, ready


def summary(name: str, times: list[float], loads: list[float]) -> str:
    return (f"{name}: median {statistics.median(times):.2f} s  runs {' '.join(f'{t:.2f}' for t in times)}"
            f"  (load average {min(loads):.1f}–{max(loads):.1f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--site", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "dist"
            build.build(site)
        httpd = serve.make_server(site, port=0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}/"
        times: dict[str, list[float]] = {
            f"{event} {kind}": [] for event in ("painted", "scripts run", "ready") for kind in ("cold", "warm")
        }
        loads, controlled = [], 0
        with sync_playwright() as pw:
            for run in range(args.runs):
                context = pw.chromium.launch_persistent_context(
                    str(Path(tmp) / f"profile{run}"), executable_path=chromium_path(), args=CHROMIUM_ARGS
                )
                page = context.pages[0] if context.pages else context.new_page()
                loads.append(os.getloadavg()[0])
                for event, seconds in zip(("painted", "scripts run", "ready"), load(page, url), strict=True):
                    times[f"{event} cold"].append(seconds)
                if (site / "sw.js").is_file():  # a site built before the service worker has none
                    controlled += bool(page.evaluate(SERVICE_WORKER_JS))
                loads.append(os.getloadavg()[0])
                for event, seconds in zip(("painted", "scripts run", "ready"), load(page, url), strict=True):
                    times[f"{event} warm"].append(seconds)
                context.close()
        loads.append(os.getloadavg()[0])
        httpd.shutdown()
        size = sum(path.stat().st_size for path in site.rglob("*") if path.is_file())
    for name, values in times.items():
        print(summary(name, values, loads))
    print(f"warm runs under the service worker: {controlled} of {args.runs}")
    print(f"dist size: {size / 1e6:.1f} MB; cpus: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
