"""Measure navigation → "core ready" in headless Chromium, cold and warm.

Cold is a fresh profile (empty HTTP cache, no service worker); warm is a second navigation
in the same profile. Prints the median and all runs, in seconds. Not a test: timings on a
shared machine are noisy, so nothing here asserts.

Usage: ``python bench/startup.py [--runs 5] [--site DIR]`` (builds to a temporary folder
unless ``--site`` names a built one).
"""

from __future__ import annotations

import argparse
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


def ready_seconds(page, url: str) -> float:
    page.goto(url)
    return page.evaluate(READY_AT_JS) / 1000


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
        cold, warm = [], []
        with sync_playwright() as pw:
            for run in range(args.runs):
                context = pw.chromium.launch_persistent_context(
                    str(Path(tmp) / f"profile{run}"), executable_path=chromium_path(), args=CHROMIUM_ARGS
                )
                page = context.pages[0] if context.pages else context.new_page()
                cold.append(ready_seconds(page, url))
                warm.append(ready_seconds(page, url))
                context.close()
        httpd.shutdown()
        size = sum(path.stat().st_size for path in site.rglob("*") if path.is_file())
    print(f"cold: median {statistics.median(cold):.2f} s  runs {' '.join(f'{t:.2f}' for t in cold)}")
    print(f"warm: median {statistics.median(warm):.2f} s  runs {' '.join(f'{t:.2f}' for t in warm)}")
    print(f"dist size: {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
