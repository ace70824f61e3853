"""Score the cause a bisect names where a bug first shows: the corpus's single-place bugs
bisected layer by layer, the cause named at the layer it blames judged as ``score.py``
judges an output's.

A bug mid-graph reaches the model's output through later layers, which may mix its
relation into something no report can name from the output alone (``score.py`` labels such
a case ``propagated``).  For a model the product bisects: it pairs PyTorch's module outputs
with ONNX Runtime's values and leads with the first layer that fails, where the bug's own
relation is still whole (a bias changed is one constant per feature there).  This script
measures that path on the same cases: for each bug or precision case of a corpus manifest
that changes one place of the graph (a node's attribute, a node bypassed or doubled, nodes
inserted after one, an initializer perturbed; not the pre/post-processing ones), the mutant
is rebuilt (``cases.mutant``), run in ONNX Runtime with every value an output, and bisected
against PyTorch's capture of the clean module with each layer also run alone
(``bisect_runs_of``, as ``perpendis bisect --model``).  Then:

- *verdict*: a bug case is right when some layer fails (the bisect calls investigate); a
  precision round trip counts either way, as in ``score.py``;
- *located*: the layer blamed (:func:`named_at`) is the first surely paired value the
  mutation reaches
  (:func:`.places.expected_first`, the rule ``bench/bisect_exports.py`` uses);
- *named cause*: the culprit's own relation (the layer run alone on PyTorch's inputs, which
  the bisect states beside the culprit) when it names a cause, else the first failing layer's
  leading cause (``score.named_cause``, as its row shows it) (:func:`named_at`); right when its
  kind is among ``score.FAMILY_KINDS`` of the family that layer's arrays carry: the label is
  computed from the two arrays (the whole run's) at that layer exactly
  as ``generate.py`` and ``score.py`` compute an output's (``cases.carried`` with the clean
  export's own error at that layer as the noise, then ``score.family_of``), never from the
  report;
- *false alarms*: each architecture's clean export bisected the same way; a failing layer
  there is one.

Not a test: it prints the table.  Usage:
``python bench/corpus/score_layers.py --seed N [--half held-back|tuning|all] [--arch ...]
[--operator ...] [--limit N] [--json FILE] [-v]``
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "py"))

import onnx  # noqa: E402
import torch  # noqa: E402
from perpendis.layers.capture.check import bisect_runs_of  # noqa: E402
from perpendis.layers.capture.onnx import capture_onnx  # noqa: E402
from perpendis.layers.capture.torch import capture  # noqa: E402

from bench.corpus import cases, models, score  # noqa: E402
from bench.corpus.places import expected_first, mutated_values  # noqa: E402


def single_place(entry: dict[str, Any]) -> bool:
    """A bug or precision case whose mutation changes one node or initializer of the graph."""
    return entry["class"] != "legitimate" and bool(entry["label"].get("node"))


class Architecture:
    """One clean architecture's runs, made once: PyTorch's capture and ONNX Runtime's clean
    capture (each layer's own error, the noise a label is judged against)."""

    def __init__(self, arch: str) -> None:
        self.arch = arch
        self.onnx_path, module, inputs = models.clean(arch)
        self.feeds = list(inputs)
        with torch.no_grad(), capture(module) as run:
            module(*(torch.from_numpy(x) for x in inputs))
        self.torch_run = run
        self.clean_ort = capture_onnx(self.onnx_path, self.feeds)
        self.graph = onnx.load(self.onnx_path, load_external_data=False)
        self.order = list(self.clean_ort.names)
        self.clean = bisect_runs_of(self.torch_run, self.onnx_path, self.feeds, ort_run=self.clean_ort)
        self.clean_value = {p.a_name: p.b_name for p in self.clean.pairs}

    def false_alarm(self) -> bool:
        """Whether the clean export's bisect has a failing layer."""
        return self.clean.first_failing is not None

    def noise(self, a_name: str) -> float:
        """The clean export's largest error against PyTorch at the layer of PyTorch's ``a_name``
        (0 when the clean bisect did not pair it)."""
        if a_name not in self.clean_value:
            return 0.0
        clean = self.clean_ort[self.clean_value[a_name]].astype(np.float64)
        ref = self.torch_run[a_name].astype(np.float64)
        if clean.shape != ref.shape:
            return 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            return float(np.nanmax(np.abs(clean - ref), initial=0.0))


def as_made(lab: dict[str, Any]) -> dict[str, Any]:
    """The mutation's label before the output was looked at: the family it was made with (a
    case the output calls ``propagated`` keeps it as ``done``), no output location."""
    made = {k: v for k, v in lab.items() if k not in ("done", "location")}
    return {**made, "family": lab.get("done", lab["family"])}


def _own_cause(pair: Any) -> str | None:
    """The kind of the culprit's own finding (its layer run alone) when it names a cause, by
    ``score.named_cause``'s rule."""
    finding = (pair.isolated or {}).get("finding") if pair is not None else None
    if finding and finding["kind"] not in score.NOT_A_CAUSE and finding.get("causes"):
        return finding["kind"]
    return None


def named_at(result: Any) -> tuple[Any, str | None]:
    """The layer the bisect blames and the cause it names there, among surely paired layers
    (a pair made by order and shape alone whose values disagree may be two different
    tensors; the report then names the first surely paired failing layer): the first whose
    own error fails (the culprit), by its own relation (the layer run alone, free of the
    rounding its inputs inherit) when that names a cause; else the first failing one's
    leading cause, as its row shows it."""
    culprit = result.sure_culprit
    if (own := _own_cause(culprit)) is not None:
        return culprit, own
    first = result.first_sure_failing
    top = score.named_cause(first.report.findings) if first is not None else None
    return first, top.kind if top else None


def judge(entry: dict[str, Any], base: Architecture) -> dict[str, Any]:
    """Bisect one case's mutant and judge the layer it blames (keys as ``score.judge``'s)."""
    lab = entry["label"]
    path, *_ = cases.mutant(entry["arch"], lab["operator"], lab["target"])
    mutant = capture_onnx(path, base.feeds)
    result = bisect_runs_of(base.torch_run, path, base.feeds, ort_run=mutant)
    want = expected_first(result, base.graph, mutated_values(base.graph, lab), base.order, sure=True)
    at, named = named_at(result)
    row = {
        "id": entry["id"], "operator": lab["operator"], "class": entry["class"], "family": None,
        "verdict": "investigate" if result.first_failing is not None else "rounding", "named": named,
        "nameable": False, "cause_right": False, "nameable_plain": False, "cause_right_plain": False,
        "located": at is not None and at.b_name == want, "layer": at and at.b_name, "want": want,
        "culprit": result.culprit is not None,
    }
    row["verdict_right"] = entry["class"] == "precision" or result.first_failing is not None
    if at is None:
        return row
    a, b = mutant[at.b_name], base.torch_run[at.a_name]
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        return row
    carried = cases.carried(as_made(lab), a, b, base.noise(at.a_name))
    for key, by_relation in (("", True), ("_plain", False)):
        family = score.family_of(carried, a, b, base.graph.graph, by_relation=by_relation)
        kinds = score.FAMILY_KINDS.get(family or "", set())
        row["family" if by_relation else "family_plain"] = family
        row[f"nameable{key}"] = bool(kinds)
        row[f"cause_right{key}"] = named in kinds
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="corpus seed generate.py was run with")
    parser.add_argument("--half", choices=["tuning", "held-back", "all"], default="tuning")
    parser.add_argument("--arch", nargs="*", choices=list(models.ARCHITECTURES))
    parser.add_argument("--operator", nargs="*")
    parser.add_argument("--limit", type=int, default=None, help="the first N cases only")
    parser.add_argument("--by", choices=["operator", "family"], default="family", help="rows of the table")
    parser.add_argument("--json", type=Path, help="write every case's judgement here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each wrong case")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    models.use_seed(args.seed)
    if not score.manifest().exists():
        print(f"no corpus yet: run python bench/corpus/generate.py --seed {args.seed} first (manifest missing)")
        return 2
    entries = [
        e for e in json.loads(score.manifest().read_text())["cases"]
        if single_place(e) and (args.half == "all" or e["half"] == args.half)
        and (not args.arch or e["arch"] in args.arch) and (not args.operator or e["label"]["operator"] in args.operator)
    ][: args.limit]
    started = time.perf_counter()
    by_arch: dict[str, list] = defaultdict(list)
    for e in entries:
        by_arch[e["arch"]].append(e)
    rows, alarms = [], []
    for arch, group in by_arch.items():
        base = Architecture(arch)
        alarms.append(base.false_alarm())
        rows += [judge(e, base) for e in group]
        print(f"{arch}: {len(group)} cases, {time.perf_counter() - started:.0f} s", flush=True)
    print(f"\n{len(rows)} single-place cases of the {args.half} half of seed {args.seed}, bisected in "
          f"{time.perf_counter() - started:.0f} s; loc = the layer blamed is the first surely paired value the "
          "mutation reaches\n")
    score.print_table(rows, args.by)
    print(f"  false alarms on the clean exports' bisects: {sum(alarms)} of {len(alarms)} architectures")
    if args.verbose:
        for r in rows:
            if ((r["named"] and not r["cause_right"]) or not r["verdict_right"] or (r["nameable"] and not r["named"])
                    or not r["located"]):
                print(f"  {r['id']}: layer {r['layer']} (want {r['want']}), named {r['named']}, family {r['family']}")
    if args.json:
        args.json.write_text(json.dumps({"summary": score.summarise(rows), "cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
