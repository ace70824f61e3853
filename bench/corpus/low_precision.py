"""Legitimate low-precision pairs outside the corpus, for tuning what the corpus's
held-back half must not be tuned on: each architecture at batch 3 and 4 (the corpus uses
2), run in float16 and bfloat16 (cast and under CPU autocast) against float32, judged
under the format's preset.  Prints each pair's verdict and the count called investigate;
asserts nothing.

Usage: ``python bench/corpus/low_precision.py [--arch NAME ...]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "py"))

from perpendis.engine.compare import compare_values  # noqa: E402

from bench.corpus import cases, models  # noqa: E402

PRESET = {"float16": "fp16", "bfloat16": "bf16"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="*", choices=list(models.ARCHITECTURES), default=list(models.ARCHITECTURES))
    args = parser.parse_args(argv)
    alarms = total = 0
    for arch in args.arch:
        for batch in (3, 4):
            module, inputs = models.build(arch, batch)
            b = models.torch_run(module, inputs)
            for dtype, preset in PRESET.items():
                for autocast in (False, True):
                    try:
                        a = cases._torch_low(module, inputs, dtype, autocast)
                    except Exception as e:  # no CPU kernel for an op in this dtype
                        print(f"{arch} batch {batch} {dtype} {'autocast' if autocast else 'cast'}: not run ({e})")
                        continue
                    r = compare_values(a, b, preset=preset)
                    total += 1
                    alarms += r.verdict == "investigate"
                    print(f"{arch:20s} batch {batch} {dtype:9s} {'autocast' if autocast else 'cast':8s} {r.verdict}")
    print(f"\n{alarms} of {total} legitimate low-precision pairs called investigate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
