"""Cost of the task check (top-1, top-k, KL per row) against the plain report, natively.

    python bench/task_logits.py                          # (4, 2048, 32000) float32, 1 GB a side
    python bench/task_logits.py --shape 4,256,32000      # a quick run
    python bench/task_logits.py --stream                 # both sides as .npy files, streamed

B is seeded normal logits (scale 3), A is B plus float32 rounding-sized noise, so the
plain report folds real differences everywhere.  Prints the wall time of the plain
report, of the report with ``task="logits"``, their ratio, and the task section's
figures; one run each (the machine is shared, so read the ratio, not the absolute
times).  ``--stream`` writes both sides to .npy files in a temporary folder and compares
them chunk by chunk (``perpendis.stream``), the path files past ``STREAM_MIN_BYTES`` take.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from perpendis.engine import stream
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs.tensor import from_numpy


def logits_pair(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(35)
    b = rng.standard_normal(shape, dtype=np.float32)
    b *= 3
    noise = rng.standard_normal(shape, dtype=np.float32)
    noise *= 2e-6
    noise *= np.abs(b)
    return b + noise, b


def _timed(run: callable) -> tuple[float, object]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="4,2048,32000", help="comma-separated shape (default 4,2048,32000)")
    p.add_argument("--stream", action="store_true", help="compare two .npy files chunk by chunk")
    args = p.parse_args()
    shape = tuple(int(n) for n in args.shape.split(","))
    a, b = logits_pair(shape)
    print(f"shape {shape}, {a.nbytes / 2**30:.2f} GiB a side, {'streamed' if args.stream else 'in memory'}")
    if args.stream:
        with tempfile.TemporaryDirectory() as folder:
            paths = [Path(folder) / "a.npy", Path(folder) / "b.npy"]
            np.save(paths[0], a)
            np.save(paths[1], b)
            del a, b

            def run(task: object) -> object:
                sa, sb = stream.map_file(paths[0], "A"), stream.map_file(paths[1], "B")
                return stream.compare_sources(sa, sb, ComparisonOptions(task=task))

            plain_s, plain = _timed(lambda: run(None))
            task_s, report = _timed(lambda: run("logits"))
    else:
        ta, tb = from_numpy(a, "A"), from_numpy(b, "B")
        plain_s, plain = _timed(lambda: compare(ta, tb))
        task_s, report = _timed(lambda: compare(ta, tb, ComparisonOptions(task="logits")))
    t = report.task
    print(f"plain report      {plain_s:8.2f} s   verdict {plain.verdict}")
    print(f"with task check   {task_s:8.2f} s   verdict {report.verdict}")
    print(f"ratio             {task_s / plain_s:8.2f}x   (task check alone {task_s - plain_s:.2f} s)")
    print(f"task: {t.rows} rows, top-1 agreement {t.top1_agreement:.6f}, top-5 {t.topk['5']:.6f}, "
          f"KL mean {t.kl['mean']:.3g} p99 {t.kl['p99']:.3g} max {t.kl['max']:.3g} nats, "
          f"{t.n_flips} flips ({t.n_flips_beyond_rounding} beyond rounding), {t.n_near_ties} near-ties, {t.verdict}")


if __name__ == "__main__":
    main()
