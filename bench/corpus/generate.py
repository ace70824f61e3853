"""Generate the mutation corpus: every architecture exported, mutated and run, with the
legitimate pairs, into ``bench/corpus/.cache/cases/`` and its ``manifest.json``.

Usage: ``python bench/corpus/generate.py [--arch NAME ...] [--per-operator K] [--no-compile] [--seed N]``
``--seed N`` (N > 0) draws other weights, inputs, mutation targets and perturbations and
writes to ``bench/corpus/.cache/seed<N>/``: a fresh corpus of cases nothing was tuned on.
Prints the counts (cases per operator, skipped, no effect) and the time taken.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.corpus import cases, models


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="*", choices=list(models.ARCHITECTURES), default=list(models.ARCHITECTURES))
    parser.add_argument("--per-operator", type=int, default=cases.PER_OPERATOR)
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile pairs")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (0: the original corpus)")
    args = parser.parse_args(argv)
    models.use_seed(args.seed)
    cases_dir = models.CACHE / "cases"
    # torch.compile's build products go to the corpus cache, not the machine-wide default,
    # where an interrupted run elsewhere can leave a truncated module behind.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(models.CACHE / "inductor"))
    tally = cases.new_tally()
    entries, started, per_arch = [], time.perf_counter(), {}
    for arch in args.arch:
        t = time.perf_counter()
        models.export(arch)
        for case in cases.bug_cases(arch, tally, args.per_operator):
            entries.append(cases.save(case, cases_dir))
        for case in cases.legitimate_cases(arch, tally, compile_=not args.no_compile):
            entries.append(cases.save(case, cases_dir))
        per_arch[arch] = round(time.perf_counter() - t, 1)
        print(f"{arch}: {sum(e['arch'] == arch for e in entries)} cases in {per_arch[arch]} s", flush=True)
    elapsed = time.perf_counter() - started
    (cases_dir / "manifest.json").write_text(
        json.dumps(
            {"cases": entries, "tally": tally, "seconds": round(elapsed, 1), "per_arch_seconds": per_arch}, indent=1
        )
    )
    by_op: dict[str, int] = {}
    for e in entries:
        by_op[e["label"]["operator"]] = by_op.get(e["label"]["operator"], 0) + 1
    n = {c: sum(e["class"] == c for e in entries) for c in ("bug", "precision", "legitimate")}
    ops = sorted(o for o in by_op if not o.startswith("legit_"))
    print(
        f"{len(entries)} cases ({n['bug']} bug, {n['precision']} precision, {n['legitimate']} legitimate) "
        f"over {len(ops)} mutation operators in {elapsed:.0f} s"
    )
    for op, k in sorted(by_op.items()):
        print(f"  {op:28s} {k}")
    for what in ("not_applicable", "invalid", "failed_run"):
        print(f"skipped ({what}): {sum(tally[what].values())} {json.dumps(tally[what])}")
    print(f"no effect (bit-identical to the clean run): {len(tally['no_effect'])}")
    print(f"within rounding (no further from float64 than the clean export): {len(tally['within_rounding'])}")
    for k, v in tally["legit_failed"].items():
        print(f"legitimate pair not made: {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
