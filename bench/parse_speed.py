"""Pasted-text parsing speed: ``parse_text`` against ``np.fromstring`` on the same numbers.

The target (issue #4) is ``parse_text`` within 2x of NumPy's own text reader given only the
numbers, for a million of them.  Three texts cover the printers people paste from: a
NumPy float32 ``repr`` (maximum-precision decimals, checked for lost digits), PyTorch's
default print of a float32 tensor in full (fixed 4-decimal scientific notation, checked
too), and ``tolist()`` of float64 (shortest round-trip decimals, no check needed).  Best of
five runs each, the two readers taking turns, in CPU time: on a shared machine wall time
mostly measures the neighbours.  Nothing asserts; a ratio above 2 is something to profile.

Usage::

    python bench/parse_speed.py            # 1M numbers per text
    python bench/parse_speed.py --n 100000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT / "bench"))

from perpendis.inputs.parse import parse_text  # noqa: E402
from run import pasted_text  # noqa: E402

REPEAT = 5
_NO_BRACKETS = str.maketrans("", "", "[]")


def torch_text(n: int) -> str | None:
    """PyTorch's full print of a float32 tensor of ``n`` elements (rows of 1000), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(4)
    values = torch.randn(max(1, n // 1000), 1000)
    torch.set_printoptions(profile="full")
    try:
        return repr(values)  # slow (tens of seconds for 1M): PyTorch formats each element in Python
    finally:
        torch.set_printoptions(profile="default")


def tolist_text(n: int) -> str:
    """``repr(arr.tolist())`` of float64: Python's shortest round-trip decimals."""
    return repr(np.random.default_rng(6).standard_normal(n).tolist())


def best_of(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Fastest CPU milliseconds of each run, the runs taking turns so that both see the same load."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for label, run in runs.items():
            start = time.process_time()
            run()
            best[label] = min(best[label], (time.process_time() - start) * 1000)
    return best


def numbers_only(text: str) -> str:
    """The comma-separated numbers of a printed tensor: what ``np.fromstring`` is given."""
    return text[text.index("[") : text.rindex("]") + 1].translate(_NO_BRACKETS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="numbers per text")
    args = parser.parse_args(argv)
    texts = {
        "NumPy float32 repr": pasted_text(args.n),
        "PyTorch float32 print": torch_text(args.n),
        "tolist() float64": tolist_text(args.n),
    }
    print(f"{'text':24} {'MB':>6} {'parse_text ms':>14} {'fromstring ms':>14} {'ratio':>6}")
    for label, text in texts.items():
        if text is None:
            print(f"{label:24} skipped: PyTorch is not installed")
            continue
        numbers = numbers_only(text)
        [tensor] = parse_text(text)
        assert tensor.size == np.fromstring(numbers, sep=",").size, label
        runs = {
            "parse": lambda text=text: parse_text(text),
            "numpy": lambda numbers=numbers: np.fromstring(numbers, sep=","),
        }
        best = best_of(runs, REPEAT)
        parse_ms, numpy_ms = best["parse"], best["numpy"]
        print(f"{label:24} {len(text) / 1e6:6.1f} {parse_ms:14.0f} {numpy_ms:14.0f} {parse_ms / numpy_ms:6.2f}")


if __name__ == "__main__":
    main()
