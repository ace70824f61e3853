"""A/B cost of the structure tests: the 16 M float32 report, another checkout against this
one, alternating in one run.

    python bench/signatures_ab.py OLD_PY_DIR [NEW_PY_DIR] [--rounds 4]

``OLD_PY_DIR`` is the ``py`` folder of the checkout to compare against (for example one
made with ``git worktree add /tmp/base main``); ``NEW_PY_DIR`` defaults to this
checkout's.  Each round runs both, in alternating order, each in a fresh process that
times ``compare`` three times on the same pair and keeps the fastest; the figures printed
are the median over rounds of those, for a rounding pair (every structure test runs) and
a pair with one channel scaled (the relations stop at the first that holds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from perpendis.compare import compare
from perpendis.tensor import from_numpy
rng = np.random.default_rng(0)
b = rng.standard_normal(1 << 24).astype(np.float32)
a = (b.astype(np.float64) * (1 + 2.0**-24 * rng.standard_normal(b.size))).astype(np.float32)
shape = (16, 1024, 1024)
out = {}
for name in ("rounding", "bug"):
    if name == "bug":
        a = a.reshape(shape).copy()
        a[:, 5] *= np.float32(1.01)
    A, B = from_numpy(a.reshape(shape), "a"), from_numpy(b.reshape(shape), "b")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        r = compare(A, B)
        times.append(time.perf_counter() - t)
    out[name] = {"seconds": min(times), "verdict": r.verdict, "top": r.findings[0].kind if r.findings else None}
print(json.dumps(out))
"""


def run(py: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(py)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path, nargs="?", default=Path(__file__).resolve().parent.parent / "py")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    got: dict[str, list[dict]] = {"old": [], "new": []}
    for i in range(args.rounds):
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        for side in order:
            got[side].append(run(getattr(args, side)))
    for case in ("rounding", "bug"):
        old = statistics.median(r[case]["seconds"] for r in got["old"])
        new = statistics.median(r[case]["seconds"] for r in got["new"])
        print(
            f"{case}: old {old:.3f} s ({got['old'][0][case]['verdict']}, {got['old'][0][case]['top']}), "
            f"new {new:.3f} s ({got['new'][0][case]['verdict']}, {got['new'][0][case]['top']}), "
            f"{(new / old - 1):+.1%}"
        )
        print(f"  old runs: {[round(r[case]['seconds'], 3) for r in got['old']]}")
        print(f"  new runs: {[round(r[case]['seconds'], 3) for r in got['new']]}")


if __name__ == "__main__":
    main()
