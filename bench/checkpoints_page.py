"""Two generated checkpoints compared in the page (Chromium), against the CLI's single process.

The checkpoints are those of ``bench/checkpoints.py`` (float32 safetensors shards with an
index; B re-sharded, a quarter of its tensors moved by one ulp, one corrupted).  The page
is given both folders through its ``webkitdirectory`` inputs, so every file reaches the
worker unread and each tensor is read chunk by chunk with ``Blob.slice``.  Printed: the
page's throughput (bytes of both checkpoints compared per second, from pressing Compare
to the table), the WebAssembly heap of the core's worker before and after (it only
grows, so after is its peak), whether the page's rows are the native report's, and the
native single-process throughput on the same files.  Not a test: nothing asserts.

The load average (``os.getloadavg()``) is printed beside each figure: on a shared machine the
page's rate means something only next to the CLI's, measured in the same run.

Usage: ``python bench/checkpoints_page.py [--size 8G] [--dir DIR [--keep]]`` (writes 2 x size in
/tmp, or in DIR, reusing checkpoints already there; deleted after unless ``--keep``)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "py", ROOT / "scripts", ROOT / "tests" / "browser", ROOT / "bench"):
    sys.path.insert(0, str(path))

from bisect_page import served_page  # noqa: E402
from checkpoints import parse_size, write  # noqa: E402
from perpendis.checkpoints import compare_checkpoints, folder  # noqa: E402

import build  # noqa: E402

# The core worker's WebAssembly heap, through the Python object it holds (``core.bridge``).
HEAP_JS = (
    "() => core.bridge.serve.__func__.__globals__.get('__builtins__').get('__import__')('pyodide_js')"
    "._module.HEAP8.length"
)

TIMEOUT_MS = 3_600_000
ROWS_JS = "rows => rows.map(r => [r.dataset.name, r.dataset.verdict])"


def in_page(site: Path, a: Path, b: Path) -> dict:
    with served_page(site) as (page, url):
        page.goto(url)
        # With a helper worker on a second core, once it is ready (the status's title says so).
        cores = 2 if page.evaluate("navigator.hardwareConcurrency") > 1 else 1
        page.wait_for_selector(f'[data-testid="status"][title*="on {cores} CPU"]', timeout=300_000)
        worker = next(w for w in page.workers if w.url.endswith("/app/worker.js"))
        heap_before = worker.evaluate(HEAP_JS)
        page.click('[data-testid="checkpoints"] > summary')
        page.set_input_files('[data-testid="checkpoint-a"]', str(a))
        page.set_input_files('[data-testid="checkpoint-b"]', str(b))
        page.click('[data-testid="checkpoint-compare"]')
        page.wait_for_selector('[data-testid="checkpoint-summary"]', timeout=TIMEOUT_MS)
        heap_after = worker.evaluate(HEAP_JS)
        rows = page.eval_on_selector_all('[data-testid="checkpoint-table"] tbody tr', ROWS_JS)
        mb_per_s = float(page.get_attribute('[data-testid="checkpoints"]', "data-mb-per-s"))
        status = page.text_content('[data-testid="checkpoint-progress"]')
    return {"MB_per_s": mb_per_s, "heap_before": heap_before, "heap_after": heap_after, "rows": rows, "status": status}


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="8G", help="bytes of each checkpoint (default 8G)")
    p.add_argument("--dir", default=None, help="where the checkpoints go (reused if there)")
    p.add_argument("--keep", action="store_true", help="keep the checkpoints")
    args = p.parse_args()
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="perpendis-ckpt-page-", dir="/tmp"))
    try:
        ckpt = root / "big"  # as bench/checkpoints.py writes them, so one pair serves both benches
        a, b = (ckpt / "a", ckpt / "b") if (ckpt / "b").is_dir() else write(ckpt, parse_size(args.size))
        print(f"checkpoints ready; {load()}", flush=True)
        t = time.perf_counter()
        native = compare_checkpoints(folder(a), folder(b))
        seconds = time.perf_counter() - t
        nbytes = native.summary["bytes_compared"]
        rate = nbytes / seconds / 1e6
        print(f"CLI, one process: {nbytes / 1e9:.2f} GB in {seconds:.1f} s, {rate:.0f} MB/s; {load()}")
        shutil.rmtree(root / "dist", ignore_errors=True)
        build.build(root / "dist")
        out = in_page(root / "dist", a, b)
        same = out["rows"] == [[r.name, r.verdict] for r in native.tensors]
        print(f"page: {out['status']}; {out['MB_per_s']:.0f} MB/s; rows as native: {same}; {load()}")
        print(f"page: wasm heap {out['heap_before'] / 2**20:.0f} MiB before, {out['heap_after'] / 2**20:.0f} MiB after")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
