"""The fold's steps, timed apart: one chunk's partial, a merge, and a partial to bytes and back.

    python bench/fold_steps.py              # best of 15 runs of each step
    python bench/fold_steps.py --runs 40

The full report (``bench/run.py``) adds alignment, diagnosis and rendering to the fold, and
on a shared machine its figures move by more than the fold costs; these steps are short
and repeated, and the best run of each is printed, which load can only slow.  Inputs are
seeded: float32 pairs of one million elements (a chunk), B one ULP from A at a tenth of
them ("rounding"), or that plus NaN and infinity mismatches and gross errors at one in a
thousand ("non-finite"), the path that masks the non-finite pairs out.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from perpendis.engine.fold.chunk import CHUNK, aligned_chunks, chunk_partial, fold
from perpendis.engine.fold.codec import partial_from_bytes, partial_to_bytes
from perpendis.numerics.bits import format_of
from perpendis.numerics.tolerance import resolve


def pair(n: int, nonfinite: bool) -> tuple[np.ndarray, np.ndarray]:
    """A seeded float32 pair: rounding at a tenth, and with ``nonfinite`` some NaN, inf and gross errors."""
    rng = np.random.default_rng(34)
    b = rng.standard_normal(n).astype(np.float32)
    a = b.copy()
    hit = rng.random(n) < 0.1
    a[hit] = np.nextafter(a[hit], np.float32(np.inf))
    if nonfinite:
        for value in (np.nan, np.inf, np.float32(7.0)):
            at = rng.random(n) < 0.001
            a[at] = value
    return a, b


def best_ms(step: Callable[[], object], runs: int) -> float:
    """The fastest of ``runs`` timings of ``step``, in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return 1000 * min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    fmt = format_of("float32")
    tol = resolve(fmt)
    figures = {}
    for kind, nonfinite in (("rounding", False), ("nonfinite", True)):
        x, y = pair(CHUNK, nonfinite)
        figures[f"chunk_partial_1m_{kind}_ms"] = best_ms(
            lambda x=x, y=y: chunk_partial(0, x, y, fmt, (CHUNK,), tol), runs
        )
    a, b = pair(4 * CHUNK, False)
    parts = [chunk_partial(s, x, y, fmt, (a.size,), tol) for s, x, y in aligned_chunks(a, b)]
    figures["merge_4_chunks_ms"] = best_ms(lambda: parts[0].merge(parts[1]).merge(parts[2]).merge(parts[3]), runs)
    whole = fold(aligned_chunks(a, b), fmt, (a.size,), tol)
    data = partial_to_bytes(whole)
    figures["partial_to_bytes_4m_ms"] = best_ms(lambda: partial_to_bytes(whole), runs)
    figures["partial_from_bytes_4m_ms"] = best_ms(lambda: partial_from_bytes(data), runs)
    figures["partial_bytes_4m_mb"] = data.nbytes / 1e6
    for name, value in figures.items():
        print(f"{name:32s} {value:9.2f}")


if __name__ == "__main__":
    main()
