"""Cost of the task check in the tab: the page's own worker streams two .npy files of logits,
once plainly and once with ``options.task``, and the main thread's longest task is recorded.

    python bench/task_tab.py                        # (4, 2048, 32000) float32: 1 GB a side, streamed
    python bench/task_tab.py --shape 4,512,32000    # a quicker run (still streamed past 256 MiB)

Uses ``bench/run.py``'s harness: the built site served by ``scripts/serve.py``, Debian's
Chromium driven by Playwright, the files handed to the page's client as ``File`` objects
from the benchmark's two-input page (``bench/stream.html``), as a user's chosen files are.
Prints both times, their ratio and the longest main-thread task; one run each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import APP_STREAM_JS, Tab, served_site
from task_logits import logits_pair

# The page's stream request with the options given: {} or {task: ...}.
STREAM_WITH_OPTIONS_JS = APP_STREAM_JS.replace("async () => {", "async (options) => {", 1).replace(
    "options: {} }", "options }", 1
).replace("workers: result.workers || 1,", "workers: result.workers || 1, task: result.report.task,", 1)


def main() -> None:
    from playwright.sync_api import sync_playwright

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="4,2048,32000", help="comma-separated shape (default 4,2048,32000)")
    args = p.parse_args()
    shape = tuple(int(n) for n in args.shape.split(","))
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / "a.npy", Path(folder) / "b.npy"]
        for path, array in zip(paths, logits_pair(shape), strict=True):
            np.save(path, array)
        with served_site({}) as (url, tmp, _), sync_playwright() as pw:
            tab = Tab(pw, tmp / "profile")
            tab.goto(url + "bench/stream.html")
            tab.page.set_input_files("#a", str(paths[0]))
            tab.page.set_input_files("#b", str(paths[1]))
            plain = tab.page.evaluate(STREAM_WITH_OPTIONS_JS, {})
            tab.phase("plain")
            task = tab.page.evaluate(STREAM_WITH_OPTIONS_JS, {"task": {"axis": -1}})
            tab.phase("task")
            tab.close()
    size = plain["size"] / 2**30
    print(f"shape {shape}, {size:.2f} GiB both files, streamed {plain['streamed']}, {plain['workers']} worker(s)")
    print(f"plain report      {plain['ms'] / 1000:8.2f} s   longest main-thread task {tab.longest['plain']:.0f} ms")
    print(f"with task check   {task['ms'] / 1000:8.2f} s   longest main-thread task {tab.longest['task']:.0f} ms")
    print(f"ratio             {task['ms'] / plain['ms']:8.2f}x")
    t = task["task"]
    print(f"task: {t['rows']} rows, top-1 agreement {t['top1_agreement']}, KL mean {t['kl']['mean']}, {t['verdict']}")


if __name__ == "__main__":
    main()
