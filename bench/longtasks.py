"""The page's longest main-thread task on the paths that froze it (issue 36), in Chromium.

Each path runs in the real built site through the page's own controls, and a
``PerformanceObserver`` for long tasks (over 50 ms) charges what the main thread did to it:

- ``heatmap x2``: two reports in a row, each with a full 4,096-cell heat map (a 512 x 512
  float32 pair with a bug spread over it), the second replacing the first;
- ``paste 10k`` and ``paste 1M``: that many float32 numbers as NumPy prints them, pasted
  into A and B (a paste event carrying the text, as Ctrl+V gives it), then compared;
- ``stream``: two ``.npy`` files of ``--stream-mb`` each (default 1024 MB: a 2 GB pair),
  streamed and reported;
- ``bisect 60``: two ``.npz`` captures of 60 layers each, compared layer by layer.

The harness's own work (handing the page the text it pastes, choosing files) is charged
apart. A long task is wall time: on a machine shared with other work a task is stretched
whenever the OS runs something else, so each path runs ``--repeat`` times in a fresh
profile and the median and the largest of its longest tasks are printed, beside the most
CPU time one task of the path used (bench/task_cpu.py: from a Chromium trace, unaffected by
the load). With ``--before
REF`` the same paths run, interleaved, on the site built from that git revision too, so one
run of the script prints before and after under the same load. Nothing asserts.

Usage::

    python bench/longtasks.py [--before main] [--repeat 3] [--stream-mb 1024] [--only heatmap,paste10k,...]
    python bench/longtasks.py --site DIR   # a site built elsewhere
    python bench/longtasks.py --settled    # each path once the helpers are ready too

By default each path starts as soon as the core is ready, as a user who pastes at once does:
the helper then loads its own Pyodide on the second core (app/worker.js starts helpers once
the core is ready), and on two cores a main-thread task of the path shares the CPU with it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import tempfile
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "py", ROOT / "bench", ROOT / "tests" / "browser"):
    sys.path.insert(0, str(path))

from playwright.sync_api import sync_playwright  # noqa: E402
from run import Tab  # noqa: E402
from served import served  # noqa: E402
from task_cpu import Trace, longest_cpu  # noqa: E402

ANSWER_MS = 600_000
READY_MS = 180_000
SETTLED = False  # --settled: each path starts once the helpers are ready too

IDLE_JS = """() => !document.body.classList.contains('busy') &&
  (!document.getElementById('report').hidden || !document.getElementById('bisect').hidden ||
   !document.getElementById('error').hidden)"""

PASTE_JS = """([side, key]) => {
  const data = new DataTransfer();
  data.setData("text/plain", window[key]);
  const box = document.getElementById(`paste-${side}`);
  const event = new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
  box.dispatchEvent(event);
  if (!event.defaultPrevented) {  // what the browser itself does with a paste the page lets through
    box.value = window[key];
    box.dispatchEvent(new Event("input", { bubbles: true }));
  }
  delete window[key];
}"""


def bug_pair(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A float32 pair whose B has a bug scattered over the whole of it."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = a.copy()
    b[rng.random((n, n)) < 0.3] += np.float32(0.01)
    return a, b


def printed(array: np.ndarray) -> str:
    """A 1-D float32 array as NumPy prints it, every value in its shortest round-trip form.
    Made with ``astype(str)`` (C): ``repr`` of a million elements takes minutes here."""
    return f"array([{', '.join(array.astype(str))}], dtype=float32)"


def settle(tab: Tab) -> None:
    tab.page.wait_for_timeout(300)
    tab.page.wait_for_function(IDLE_JS, timeout=ANSWER_MS)
    tab.page.wait_for_timeout(500)  # the scatter plot and the heat map arrive after the verdict


class TracedTab(Tab):
    """A tab whose phases are also marked in a Chromium trace, for the CPU time of its tasks."""

    trace: Trace | None = None

    def phase(self, name: str) -> None:
        super().phase(name)
        if self.trace:
            self.trace.mark(name)


# The core ready and its helpers too (app/worker.js starts them once the core is ready, each
# loading a Pyodide of its own): "ready, comparing on N CPU cores", N = 1 + helpers.
ALL_CORES_JS = """() => {
  const status = document.getElementById('status');
  const helpers = Math.min(Math.max((navigator.hardwareConcurrency || 1) - 1, 0), 3);
  return status.dataset.state === 'ready' && status.title.includes(`on ${1 + helpers} CPU cores`);
}"""


def fresh(tab: TracedTab, url: str) -> None:
    tab.goto(url)
    tab.page.wait_for_function("() => document.getElementById('status').dataset.state === 'ready'", timeout=READY_MS)
    if SETTLED:
        tab.page.wait_for_function(ALL_CORES_JS, timeout=READY_MS)
    tab.trace = Trace(tab.page)
    tab.phase("harness")


def compare(tab: Tab) -> None:
    tab.page.get_by_test_id("compare").click()
    settle(tab)


def heatmaps(tab: Tab, url: str, tmp: Path) -> None:
    fresh(tab, url)
    for seed in (1, 2):
        for side, array in zip("ab", bug_pair(512, seed), strict=True):
            path = tmp / f"heat{seed}{side}.npy"
            np.save(path, array)
            tab.page.get_by_test_id(f"file-{side}").set_input_files(str(path))
        tab.phase("harness")
        compare(tab)
    tab.phase("heatmap x2")


def paste(tab: Tab, url: str, n: int, name: str) -> None:
    fresh(tab, url)
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = a.copy()
    b[::7] = np.nextafter(b[::7], np.float32(np.inf))
    for side, array in zip("ab", (a, b), strict=True):
        tab.page.evaluate("([key, text]) => { window[key] = text; }", [f"__text_{side}", printed(array)])
        tab.phase("harness")
        tab.page.evaluate(PASTE_JS, [side, f"__text_{side}"])
        tab.page.wait_for_timeout(300)
    compare(tab)
    tab.phase(name)


def big_pair(tmp: Path, megabytes: int) -> list[Path]:
    """Two float32 ``.npy`` files of ``megabytes`` each, one ULP apart everywhere, made once."""
    n = megabytes * 2**20 // 4
    paths = [tmp / f"big{side}.npy" for side in "ab"]
    for path, value in zip(paths, (np.float32(1.5), np.float32(1.5000001)), strict=True):
        if not path.exists():
            array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n,))
            array[:] = value
            array.flush()
            del array
    return paths


def streamed(tab: Tab, url: str, tmp: Path, megabytes: int) -> None:
    fresh(tab, url)
    for side, path in zip("ab", big_pair(tmp, megabytes), strict=True):
        tab.page.get_by_test_id(f"file-{side}").set_input_files(str(path))
    tab.phase("harness")
    compare(tab)
    tab.phase("stream")


def bisect60(tab: Tab, url: str, tmp: Path) -> None:
    fresh(tab, url)
    rng = np.random.default_rng(60)
    layers = {f"layer{i:02d}.out": rng.standard_normal((8, 64)).astype(np.float32) for i in range(60)}
    other = {name: (v + np.float32(1e-3) if i >= 40 else v) for i, (name, v) in enumerate(layers.items())}
    for side, arrays in (("a", layers), ("b", other)):
        np.savez(tmp / f"run{side}.npz", **arrays)
        tab.page.get_by_test_id(f"file-{side}").set_input_files(str(tmp / f"run{side}.npz"))
    tab.phase("harness")
    compare(tab)
    # Every row: a table built in slices (app/render/bisect_table.js) is built after the answer.
    tab.page.wait_for_function("() => document.querySelectorAll('[data-testid=bisect-row]').length >= 60",
                               timeout=ANSWER_MS)
    tab.page.wait_for_timeout(500)
    tab.phase("bisect 60")


PATHS = ("heatmap", "paste10k", "paste1m", "stream", "bisect60")


def built_at(revision: str, tmp: Path) -> Path:
    """The site as the checkout's ``revision`` builds it (its own build.py), in ``tmp``."""
    source = tmp / "before-src"
    source.mkdir()
    archive = tmp / "before.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), revision], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(source, filter="data")
    if (ROOT / "node_modules").exists():  # the bundler, installed once per checkout (npm ci)
        (source / "node_modules").symlink_to((ROOT / "node_modules").resolve())
    site = tmp / "before-site"
    subprocess.run([sys.executable, "build.py", "--out", str(site)], cwd=source, check=True,
                   stdout=subprocess.DEVNULL)
    return site


def run_path(pw, name: str, url: str, tmp: Path, args: argparse.Namespace) -> tuple[float, float]:
    """One run of the path ``name`` in a fresh profile: its longest main-thread task (wall
    time, ms) and the most CPU time one of its main-thread tasks took (ms)."""
    tab = TracedTab(pw, Path(tempfile.mkdtemp(dir=tmp, prefix=f"profile-{name}-")))
    cpu: dict[str, float] = {}
    try:
        if name == "heatmap":
            heatmaps(tab, url, tmp)
        elif name == "paste10k":
            paste(tab, url, 10_000, "paste 10k")
        elif name == "paste1m":
            paste(tab, url, 1_000_000, "paste 1M")
        elif name == "stream":
            streamed(tab, url, tmp, args.stream_mb)
        else:
            bisect60(tab, url, tmp)
        cpu = longest_cpu(tab.trace.stop())
    finally:
        tab.close()
    path_only = [phase for phase in tab.longest if phase != "harness"]
    return max(tab.longest[p] for p in path_only), max(cpu.get(p, float("nan")) for p in path_only)


def figures(runs: list[float]) -> str:
    return f"median {statistics.median(runs):5.0f} ms, largest {max(runs):5.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build this checkout)")
    parser.add_argument("--before", help="a git revision to build and measure too, e.g. main")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each path on each site")
    parser.add_argument("--stream-mb", type=int, default=1024, help="size of each streamed file")
    parser.add_argument("--only", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    parser.add_argument("--settled", action="store_true",
                        help="start each path once the helpers have started too (by default, once the core is "
                             "ready: a helper then still loads its Pyodide on the other core)")
    args = parser.parse_args()
    global SETTLED
    SETTLED = args.settled
    only = args.only.split(",")
    for name in only:
        if name not in PATHS:
            parser.error(f"no path {name!r}")
    with tempfile.TemporaryDirectory() as tmp_name, sync_playwright() as pw:
        tmp = Path(tmp_name)
        sites = {"after": args.site}
        if args.before:
            sites = {"before": built_at(args.before, tmp), **sites}
        if "stream" in only:
            print(f"streamed pair: 2 x {args.stream_mb} MB", flush=True)
        with ExitStack() as stack:
            urls = {}
            for label, site in sites.items():
                (tmp / label).mkdir()
                urls[label] = stack.enter_context(served(site, tmp / label))
            for name in only:
                runs: dict[str, list[tuple[float, float]]] = {label: [] for label in urls}
                for _ in range(args.repeat):
                    for label, url in urls.items():  # interleaved: both sites under the same load
                        runs[label].append(run_path(pw, name, url, tmp, args))
                for label, measured in runs.items():
                    wall, cpu = [m[0] for m in measured], [m[1] for m in measured]
                    print(f"{name:9s} {label:6s} longest task {figures(wall)}; its CPU at most {figures(cpu)} "
                          f"(runs: {', '.join(f'{w:.0f}/{c:.0f}' for w, c in measured)})", flush=True)
        for path in tmp.glob("big?.npy"):
            path.unlink()


if __name__ == "__main__":
    main()
