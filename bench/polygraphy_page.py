"""Bisect two ~500 MB Polygraphy outputs files in the page, handed to the worker unread.

The files are written by Polygraphy's own ``to_json`` (the ResNet-like captures of
``tests/browser/test_page_bisect_big.py``: float32 layers, run B rounding differently
everywhere and wrong in one layer).  The page gets them as files of 32 MB or more get
there: unread, so the worker indexes each file through ``Blob.slice`` and decodes one
tensor pair at a time.  Printed: the time from pressing Compare to the table being
shown, the WebAssembly heap before and after (it only grows, so after is its peak), and
whether the first failing row is the bugged layer; the same bisect natively beside it.
Not a test: nothing asserts, timings on a shared machine are noisy.

The heap is read inside the worker, through the Python function the worker keeps
(``serve``) to Pyodide's own module: ``pyodide_js._module.HEAP8.length``.

Usage: ``python bench/polygraphy_page.py [--file-megabytes 500]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "py", ROOT / "scripts", ROOT / "tests" / "browser", ROOT / "bench"):
    sys.path.insert(0, str(path))

from bisect_page import TIME_COMPARE_JS, open_captures, served_page  # noqa: E402
from perpendis.layers.bisect import bisect, path_entries  # noqa: E402
from startup import READY_AT_JS  # noqa: E402
from test_page_bisect_big import BUG, write_captures  # noqa: E402

import build  # noqa: E402

TIMEOUT_MS = 1_800_000
HEAP_JS = "() => serve.__globals__.get('__builtins__').__import__('pyodide_js')._module.HEAP8.length"
ROWS_JS = """rows => rows.map(r => ({
  a: r.querySelector('[data-testid=bisect-a-name]').firstChild.textContent, standing: r.dataset.standing }))"""


def native(a: Path, b: Path) -> tuple[float, str | None]:
    start = time.perf_counter()
    result = bisect(path_entries(a), path_entries(b))
    first = result.first_failing
    return time.perf_counter() - start, None if first is None else first.a_name


def in_page(site: Path, a: Path, b: Path) -> dict[str, object]:
    with served_page(site) as (page, url):
        page.goto(url)
        page.evaluate(READY_AT_JS)
        # The core's worker, not its helpers on the other cores (app/fold_worker.js).
        worker = next(w for w in page.workers if w.url.endswith("/app/worker.js"))
        heap_before = worker.evaluate(HEAP_JS)
        open_captures(page, a, b)
        unread = all("read in place" in page.locator(f"#chip-{side}").text_content() for side in "ab")
        seconds = page.evaluate(TIME_COMPARE_JS) / 1000
        heap_after = worker.evaluate(HEAP_JS)
        rows = page.eval_on_selector_all("[data-testid=bisect-row]", ROWS_JS)
    first = next((r["a"] for r in rows if r["standing"] == "first-failing"), None)
    return {"seconds": seconds, "heap_before": heap_before, "heap_after": heap_after, "rows": len(rows),
            "first": first, "unread": unread}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file-megabytes", type=float, default=500, help="size of each JSON file (default 500)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        # base64 writes 4 bytes for 3.
        a, b = write_captures(folder, megabytes=args.file_megabytes * 3 / 4, bug=BUG)
        sizes = ", ".join(f"{p.stat().st_size / 1e6:.0f} MB" for p in (a, b))
        print(f"captures: {sizes} (written in {time.perf_counter() - start:.0f} s); bugged layer {BUG}")
        seconds, first = native(a, b)
        print(f"native bisect (memory-mapped, lazy): {seconds:.1f} s, first failing {first}")
        build.build(folder / "dist")
        out = in_page(folder / "dist", a, b)
        print(f"page: handed over unread: {out['unread']}; Compare pressed to table shown: {out['seconds']:.1f} s")
        print(f"page: wasm heap {out['heap_before'] / 2**20:.0f} MiB before, {out['heap_after'] / 2**20:.0f} MiB after")
        verdict = "the bugged layer" if out["first"] == BUG else "NOT the bugged layer"
        print(f"page: {out['rows']} rows, first failing {out['first']} ({verdict})")


if __name__ == "__main__":
    main()
