"""The cost of the diagnosis on the 16 M-element float32 report, before and after a change.

Times ``perpendis.compare`` natively on 2 × 16 M float32 for three pairs: rounding (one ULP
on a tenth of the elements, as ``bench/run.py``), a bug everywhere (A = exp(B), which the
relation search names) and a bug in one region (one row scaled), each with the code of two
revisions checked out by ``git archive`` into a temporary folder, alternating runs in one
process per revision so both see the same machine.  Prints the median seconds per pair and
revision and the ratio; asserts nothing.

On a machine shared with other jobs the wall-clock medians swing by ±25 % from run to run;
``--cpu`` times CPU seconds (``time.process_time``) on one thread instead, with the two
revisions' runs alternating one at a time, which sees the work done, not the waiting.

Usage::

    python bench/relations_cost.py [BASE_REV] [--repeat 3] [--cpu]   # BASE_REV defaults to main
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N = 16 * 1024 * 1024

CHILD = r"""
import json, sys, time
n, repeat = int(sys.argv[1]), int(sys.argv[2])
sys.path.insert(0, sys.argv[3])  # bench/, for the pairs; the package comes from PYTHONPATH
from relations_cost import pairs
try:
    from perpendis.engine.compare import compare_values
except ImportError:  # a revision from before the package was cut into layers
    from perpendis.compare import compare_values
out = {}
for name, (a, ref) in pairs(n).items():
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = compare_values(a, ref)
        times.append(time.perf_counter() - t)
    out[name] = {"seconds": sorted(times)[len(times) // 2], "top": r.findings[0].kind if r.findings else None}
print(json.dumps(out))
"""


def pairs(n: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The three (A, B) float32 pairs of ``n`` elements, seeded, that both cost benches time
    (this one natively, ``relations_cost_tab.py`` in the page): rounding, exp everywhere, one
    row of a 4,096-row matrix scaled by 0.667."""
    rng = np.random.default_rng(0)
    b = rng.standard_normal(n, dtype=np.float32)
    ulp = b.copy()
    hit = rng.random(n) < 0.1
    ulp[hit] = np.nextafter(ulp[hit], np.float32(np.inf))
    rows = b.reshape(4096, -1)
    row = rows.copy()
    row[17] *= np.float32(0.667)
    return {"rounding": (ulp, b), "exp everywhere": (np.exp(b), b), "one row scaled": (row, rows)}


ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def measure(py_dir: Path, repeat: int, cpu: bool = False) -> dict:
    child = CHILD.replace("time.perf_counter()", "time.process_time()") if cpu else CHILD
    env = {"PYTHONPATH": str(py_dir), "PATH": "/usr/bin:/bin", **(ONE_THREAD if cpu else {})}
    command = [sys.executable, "-c", child, str(N), str(repeat), str(ROOT / "bench")]
    got = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(got.stdout.strip().splitlines()[-1])


def alternating(base_py: Path, repeat: int) -> tuple[dict, dict]:
    """CPU-second medians of ``repeat`` single runs per revision, alternating."""
    runs: dict[str, list[dict]] = {"base": [], "head": []}
    for _ in range(repeat):
        runs["base"].append(measure(base_py, 1, cpu=True))
        runs["head"].append(measure(ROOT / "py", 1, cpu=True))

    def median(side: list[dict]) -> dict:
        return {name: {"seconds": sorted(r[name]["seconds"] for r in side)[len(side) // 2],
                       "top": side[-1][name]["top"]} for name in side[0]}

    return median(runs["base"]), median(runs["head"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", default="main")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", action="store_true", help="CPU seconds on one thread, runs alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", args.base, "py"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=tar.stdout, check=True)
        if args.cpu:
            base, head = alternating(Path(tmp) / "py", args.repeat)
        else:
            base = measure(Path(tmp) / "py", args.repeat)
            head = measure(ROOT / "py", args.repeat)
    unit = "CPU seconds, one thread, alternating" if args.cpu else "wall seconds"
    print(f"compare() on 2 x {N // (1024 * 1024)}M float32, median of {args.repeat} ({unit})")
    print(f"{'pair':18s} {args.base + ' s':>10s} {'this tree s':>12s} {'ratio':>7s}  top finding (base -> this)")
    for name in base:
        b, h = base[name]["seconds"], head[name]["seconds"]
        print(f"{name:18s} {b:10.3f} {h:12.3f} {h / b:7.3f}  {base[name]['top']} -> {head[name]['top']}")
    total = sum(h["seconds"] for h in head.values()) / sum(b["seconds"] for b in base.values())
    print(f"ratio of the sums: {total:.3f}")


if __name__ == "__main__":
    main()
