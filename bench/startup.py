"""Measure navigation → "core ready" in headless Chromium, cold and warm, against its floor.

Cold is a fresh profile (empty HTTP cache, no service worker); warm is a second navigation
in the same profile, once the service worker the first visit installed controls the page
(a returning user). Also measures navigation → first contentful paint (the inputs are
shown and accept typing: module scripts never block parsing) and → DOMContentLoaded (the
page's scripts have run too). Prints the median and all runs, in seconds, with the
machine's load average: timings on a shared machine are noisy, so nothing here asserts.

The floor is a bare page added to the served site (``bench/floor.html``): a worker that
loads the same served Pyodide files with the same lock and imports NumPy, nothing else.
The page's own start-up is judged by its ratio to the floor, run for run, cold and warm
(``ready_vs_floor_cold``, ``ready_vs_floor_warm``): on a loaded machine the ratio moves
far less than either time.  A first visit over a real link is a fresh profile under
Chromium's network emulation (CDP ``Network.emulateNetworkConditions``, 30 ms latency),
timed to ready (``first_visit_50mbit_s``, ``first_visit_20mbit_s``), each beside the floor's
own first visit over the same link (``floor_first_visit_50mbit_s``...); ``first_visit_mb``
is what the server sent for it (bodies and headers, as encoded on the wire), counted by
``scripts/serve.py`` until the service worker has cached the site.

Usage: ``python bench/startup.py [--runs 5] [--site DIR]`` (builds to a temporary folder
unless ``--site`` names a built one); ``python bench/run.py --only startup`` measures the
same figures as the full benchmark does.
"""

from __future__ import annotations

import argparse
import os
import shutil
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


# The floor: the same served Pyodide files and lock, NumPy imported, nothing of the project.
FLOOR_PAGE = """<!doctype html>
<meta charset="utf-8"><title>start-up floor</title>
<script type="module" src="floor_page.js"></script>
"""
FLOOR_PAGE_JS = """window.__floorReady = new Promise((resolve, reject) => {
  const worker = new Worker(new URL("floor_worker.js", import.meta.url));
  worker.onmessage = (event) => (event.data === "ready" ? resolve(performance.now()) : reject(new Error(event.data)));
  worker.onerror = (event) => reject(new Error(event.message || "the floor worker failed"));
});
"""
FLOOR_WORKER_JS = """const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;
importScripts(PYODIDE_URL + "pyodide.js");
loadPyodide({ indexURL: PYODIDE_URL, lockFileURL: PYODIDE_URL + "pyodide-lock.json", packages: ["numpy"] })
  .then((pyodide) => { pyodide.runPython("import numpy"); self.postMessage("ready"); })
  .catch((err) => self.postMessage(String((err && err.message) || err)));
"""
FLOOR_URL = "bench/floor.html"
FLOOR_READY_JS = "() => window.__floorReady"
LINKS_MBIT = (50, 20)
LATENCY_MS = 30


def add_floor(site: Path) -> None:
    """Writes the floor page into ``site/bench/`` (outside the service worker's file list)."""
    bench = site / "bench"
    bench.mkdir(exist_ok=True)
    (bench / "floor.html").write_text(FLOOR_PAGE)
    (bench / "floor_page.js").write_text(FLOOR_PAGE_JS)
    (bench / "floor_worker.js").write_text(FLOOR_WORKER_JS)


def fresh_context(pw, profile: Path):
    if profile.exists():
        shutil.rmtree(profile)
    context = pw.chromium.launch_persistent_context(str(profile), executable_path=chromium_path(), args=CHROMIUM_ARGS)
    return context, context.pages[0] if context.pages else context.new_page()


def floor_vs_page(pw, url: str, profiles: Path, runs: int) -> dict[str, list[float]]:
    """Cold and warm ready times of the floor and of the page, alternating run by run, so
    both meet the same load on a shared machine."""
    times: dict[str, list[float]] = {f"{who}_{kind}": [] for who in ("floor", "page") for kind in ("cold", "warm")}
    for run in range(runs):
        for who in ("floor", "page"):
            context, page = fresh_context(pw, profiles / f"{who}{run}")
            for kind in ("cold", "warm"):
                if who == "floor":
                    page.goto(url + FLOOR_URL)
                    times[f"floor_{kind}"].append(page.evaluate(FLOOR_READY_JS) / 1000)
                else:
                    if kind == "warm":
                        page.evaluate(SERVICE_WORKER_JS)  # a returning visit: the service worker controls it
                    page.goto(url)
                    times[f"page_{kind}"].append(page.evaluate(READY_AT_JS) / 1000)
            context.close()
    return times


def first_visit(pw, url: str, server, profiles: Path, mbit: float, floor: bool = False) -> tuple[float, float, float]:
    """A fresh profile over an emulated link of ``mbit`` Mbit/s and 30 ms latency: (seconds
    to ready, MB the server sent by then, MB it sent until the service worker had cached the
    site). With ``floor``, the same first visit of the floor page (which has no service worker)."""
    context, page = fresh_context(pw, profiles / f"link{mbit}")
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    rate = mbit * 1e6 / 8  # bytes per second
    cdp.send("Network.emulateNetworkConditions",
             {"offline": False, "latency": LATENCY_MS, "downloadThroughput": rate, "uploadThroughput": rate})
    start = server.bytes_sent
    page.goto(url + FLOOR_URL if floor else url)
    ready = page.evaluate(FLOOR_READY_JS if floor else READY_AT_JS) / 1000
    at_ready = server.bytes_sent - start
    if not floor:
        page.evaluate(SERVICE_WORKER_JS)
    total = server.bytes_sent - start
    context.close()
    return ready, at_ready / 1e6, total / 1e6


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def floor_figures(pw, url: str, server, profiles: Path, runs: int) -> dict[str, float]:
    """The figures of issue "first visit": ratios to the floor and first visits over real links,
    medians of ``runs`` runs; each run's values are logged to stderr."""
    load_before = os.getloadavg()[0]
    times = floor_vs_page(pw, url, profiles, runs)
    figures: dict[str, float] = {}
    for kind in ("cold", "warm"):
        ratios = [p / f for p, f in zip(times[f"page_{kind}"], times[f"floor_{kind}"], strict=True)]
        figures[f"ready_vs_floor_{kind}"] = statistics.median(ratios)
        figures[f"floor_{kind}_s"] = statistics.median(times[f"floor_{kind}"])
        figures[f"page_{kind}_s"] = statistics.median(times[f"page_{kind}"])
        print(f"ready {kind}: page {spread(times[f'page_{kind}'])} s, floor {spread(times[f'floor_{kind}'])} s, "
              f"ratio {spread(ratios)}", file=sys.stderr)
    sent, by_ready = [], []
    for mbit in LINKS_MBIT:
        # The page and the floor take turns, so both meet the same load.
        pairs = [tuple(first_visit(pw, url, server, profiles, mbit, floor) for floor in (False, True))
                 for _ in range(runs)]
        visits, floors = [page for page, _ in pairs], [bare for _, bare in pairs]
        figures[f"first_visit_{mbit}mbit_s"] = statistics.median(v[0] for v in visits)
        figures[f"floor_first_visit_{mbit}mbit_s"] = statistics.median(v[0] for v in floors)
        sent += [v[2] for v in visits]
        by_ready += [v[1] for v in visits]
        print(f"first visit at {mbit} Mbit/s: ready {spread([v[0] for v in visits])} s, "
              f"sent {spread([v[1] for v in visits])} MB by ready, {spread([v[2] for v in visits])} MB in all; "
              f"the floor ready {spread([v[0] for v in floors])} s, sent {spread([v[1] for v in floors])} MB",
              file=sys.stderr)
    figures["first_visit_mb"] = statistics.median(sent)
    figures["first_visit_ready_mb"] = statistics.median(by_ready)
    figures["load_average"] = max(load_before, os.getloadavg()[0])
    print(f"load average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, "
          f"on {os.cpu_count()} CPUs", file=sys.stderr)
    return figures


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
        site = Path(tmp) / "dist"
        if args.site is None:
            build.build(site)
        else:
            shutil.copytree(args.site, site)  # the floor page is added to a copy
        add_floor(site)
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
            floor = floor_figures(pw, url, httpd, Path(tmp) / "floor", args.runs)
        loads.append(os.getloadavg()[0])
        httpd.shutdown()
        size = sum(path.stat().st_size for path in site.rglob("*") if path.is_file())
    for name, values in times.items():
        print(summary(name, values, loads))
    print(f"warm runs under the service worker: {controlled} of {args.runs}")
    for name, value in floor.items():
        print(f"{name}: {value:.2f}")
    print(f"dist size: {size / 1e6:.1f} MB; cpus: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
