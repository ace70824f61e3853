"""What ``assert_same`` costs on passing pairs, against ``numpy.testing.assert_allclose``.

Two passing float32 pairs of 10×10 and 1000×1000 elements: the same output twice (bit for
bit, as a deterministic kernel or a saved output gives), and a real rounding pair, a
matrix product in float32 against the same product in float64 rounded to float32. Each
call is timed as the best of ``--repeat`` runs (best, not mean: the machine is shared);
the ratio is assert_same over NumPy's check with the same tolerance (fp32-cpu: atol 1e-5,
rtol 1e-3). Not a test: nothing asserts.

Usage: ``python bench/assert_same.py [--repeat 20] [--source PY_DIR]`` (``--source``: the
``py/`` folder of another revision, to measure it the same way).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ATOL, RTOL = 1e-5, 1e-3  # the fp32-cpu preset, which assert_same picks for float32


def best_ms(call: Callable[[], object], repeat: int) -> float:
    call()  # warm: first-call imports and allocations are not the steady cost
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def pairs(rows: int, cols: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    inner = 64
    x = rng.standard_normal((rows, inner)).astype(np.float32)
    w = (rng.standard_normal((inner, cols)) / np.sqrt(inner)).astype(np.float32)
    product = x @ w
    exact = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    return {"identical": (product, product.copy()), "rounding": (product, exact)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--source", type=Path, default=ROOT / "py", help="the py/ folder to import perpendis from")
    args = parser.parse_args()
    sys.path.insert(0, str(args.source.resolve()))
    from perpendis.testing import assert_same

    rng = np.random.default_rng(0)
    print(f"perpendis from {args.source}; best of {args.repeat}")
    print(f"{'pair':<10} {'elements':>9} {'numpy ms':>9} {'assert_same ms':>15} {'ratio':>7}")
    for rows, cols in ((10, 10), (1000, 1000)):
        for name, (a, b) in pairs(rows, cols, rng).items():
            numpy_ms = best_ms(lambda a=a, b=b: np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL), args.repeat)
            ours_ms = best_ms(lambda a=a, b=b: assert_same(a, b), args.repeat)
            print(f"{name:<10} {a.size:>9} {numpy_ms:>9.3f} {ours_ms:>15.3f} {ours_ms / numpy_ms:>5.2f}x")


if __name__ == "__main__":
    main()
