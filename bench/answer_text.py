"""What the page's answer saves by leaving out the text report it never reads, natively.

    python bench/answer_text.py                 # 1,000,000 float32 elements, 5 repeats
    python bench/answer_text.py --n 100000 --repeats 20

B is seeded normal values, A is B with rounding-sized noise on every element and a block
of larger errors, so the report carries findings, a histogram and worst elements, as a
real comparison's does.  Prints, for ``service.serve``'s ``compare`` answer, the median
wall time without ``"text": true`` (the page's request) and with it (the CLI's), and the
median time of ``Report.to_text`` and ``to_markdown`` alone, and the size of the answer's
JSON (what crosses from the worker to the page) without and with the text; the shared
machine makes the absolute times noisy, so read the rendering's share of the answer.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from perpendis.service import handle
from perpendis.service.session import Session


def npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="elements a side")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    b = rng.standard_normal(args.n).astype(np.float32)
    a = (b * (1 + rng.standard_normal(args.n).astype(np.float32) * np.float32(6e-8))).astype(np.float32)
    a[: args.n // 100] += np.float32(1e-3)
    payloads = {"a": npy(a), "b": npy(b)}
    inputs = {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}
    page = {"op": "compare", "inputs": inputs, "options": {}}
    cli = {**page, "text": True}
    session = Session()
    for request in (page, cli):  # warm up: imports, first allocations
        assert handle.serve(request, payloads, session=session)["ok"]
    without = median_seconds(lambda: handle.serve(page, payloads, session=session), args.repeats)
    with_text = median_seconds(lambda: handle.serve(cli, payloads, session=session), args.repeats)
    report = session.report()
    text = median_seconds(report.to_text, args.repeats * 4)
    markdown = median_seconds(report.to_markdown, args.repeats * 4)
    print(f"{args.n:,} float32 elements a side, verdict {report.verdict}, median of {args.repeats}")
    print(f"page's answer (no text)   {without * 1e3:9.1f} ms")
    print(f"CLI's answer (with text)  {with_text * 1e3:9.1f} ms")
    print(f"Report.to_text alone      {text * 1e3:9.2f} ms  ({text / with_text:.1%} of the CLI's answer)")
    print(f"Report.to_markdown alone  {markdown * 1e3:9.2f} ms")
    sizes = [len(json.dumps(handle.serve(r, payloads, session=session)).encode()) for r in (page, cli)]
    print(f"answer JSON               {sizes[0]:,} bytes without the text, {sizes[1]:,} with it")


if __name__ == "__main__":
    main()
