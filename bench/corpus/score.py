"""Score the diagnosis on the mutation corpus: ``perpendis.compare(A, B, preset=...)`` on
each case of the manifest ``generate.py`` wrote, per operator and overall.

Usage: ``python bench/corpus/score.py [--half tuning|held-back|all] [--limit N]
[--operator NAME ...] [--arch NAME ...] [--json FILE] [--seed N] [-v]``
``--seed N`` scores the corpus ``generate.py --seed N`` wrote (all of it is unseen data:
use ``--half all``).

What is measured, and how it is judged:

- *verdict*: a bug case is right when the verdict is ``investigate``; a legitimate pair
  is right when it is not (``identical`` or ``rounding``); a legitimate pair called
  ``investigate`` is a *false alarm*.  A precision case (a float16/bfloat16 round trip
  inserted mid-graph) is neither: its effect may be as small as deep rounding, so either
  verdict stands, and the table counts how many were called ``investigate``.
- *named cause*: the report's most severe finding among those that carry causes (kinds
  in :data:`NOT_A_CAUSE` such as ``tolerance`` or ``rounding`` do not name one).  It is
  *right* when its kind is among :data:`FAMILY_KINDS` of the case's family.  Cause
  precision = right / named, over the bug and precision cases; cause recall = right /
  cases whose family has kinds that count (a family with none, such as a weight redrawn
  mid-graph, is right to name nothing, and counts for precision only).
- *location*: for cases whose label has one (every failing element on a strict subset of
  one axis's indices, computed from A and B at generation), the named finding's ``where``
  is right when it names that axis and indices that are all among the label's and at
  least half of them.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "py"))

from perpendis.engine.compare import compare_values  # noqa: E402
from perpendis.report.headline import main_finding  # noqa: E402

from bench.corpus import cases, effects, models  # noqa: E402
from bench.corpus.mutate import NotApplicable, node_by_name, readers  # noqa: E402


def manifest() -> Path:
    """The manifest of the corpus seed in use (:func:`models.use_seed`)."""
    return models.CACHE / "cases" / "manifest.json"


# Finding kinds that report the tolerance or the error's size, not a cause.
NOT_A_CAUSE = {"tolerance", "tolerance_warning", "rounding", "deep_rounding", "not_rounding", "reference", "dtype"}

# Which finding kinds name each cause family rightly.  The one table to edit when the
# engine's findings change: a family missing here (or mapped to nothing) has no cause a
# report could rightly name from the output alone.
FAMILY_KINDS: dict[str, set[str]] = {
    "scale": {"scale", "row_scale", "slice_scale", "affine"},
    "offset": {"offset", "row_offset", "slice_offset", "affine"},
    "sign": {"sign_flip"},
    "slice": {"slice_scale", "slice_offset", "slice_affine", "sign_flip", "region"},
    "normalisation": {"row_scale", "row_offset", "scale", "normalisation"},
    "activation": {"value_dependence", "sign_bias", "clipped", "elementwise"},
    "clip": {"clipped"},
    "precision": {"precision", "grid", "elementwise"},
    "reorder": {"reversed", "shifted", "permuted", "transposed", "layout"},
    "layout": {"layout", "transposed", "shape"},
    "position": {"position_dependence", "shifted", "rotation", "spared_start"},
    "region": {"region", "slice_scale", "slice_offset", "slice_affine", "border"},
    # A per-index map s·B + c that holds at the output (a LayerNorm gain changed where
    # nothing follows it), whatever the mutation's family: :func:`family_of`.
    "feature_map": {"slice_affine", "slice_scale", "slice_offset", "sign_flip", "affine", "scale", "offset"},
    "weight": set(),
    "propagated": set(),
    "structure": set(),
    "preprocessing": set(),
    "mask": set(),
}


# Inputs that add to a node's result: an Add's operands, the bias of Gemm, Conv and the
# normalisations.  Changing a tensor read only there changes an additive term.
_ADDITIVE_INPUTS = {"Add": (0, 1), "Gemm": (2,), "Conv": (2,), "LayerNormalization": (2,),
                    "BatchNormalization": (2,), "InstanceNormalization": (2,)}


def changes_an_additive_term(graph: onnx.GraphProto | None, lab: dict[str, Any]) -> bool:
    """Whether the mutation changed an additive term (a bias): a constant added after a
    node, an Add bypassed or doubled, or an initializer read only as an addend."""
    if lab["operator"] == "add_offset":
        return True
    if lab["operator"] in ("bypass", "double"):
        return lab.get("op_type") == "Add"
    if graph is None or not lab["operator"].startswith("init_"):
        return False
    uses = [(n.op_type, i) for n in graph.node for i, name in enumerate(n.input) if name == lab["target"]]
    return bool(uses) and all(i in _ADDITIVE_INPUTS.get(op, ()) for op, i in uses)


def family_of(
    lab: dict[str, Any], a: np.ndarray, b: np.ndarray, graph: onnx.GraphProto | None, by_relation: bool = True
) -> str | None:
    """What the mutation did to the output, decided from the mutation and the arrays (never
    from a report): a changed bias whose output difference is mostly one constant per index
    of an axis (:func:`.effects.offset`) is an offset, whatever the
    operator's family (``init_half`` of a LayerNorm bias, a bias redrawn); an output that is
    B reversed along an axis is a reordering (an input reversed through an equivariant
    model); a family whose relation the output does not carry (:mod:`.effects`) is
    ``propagated``, nameable by nothing; otherwise the generator's family stands.

    With ``by_relation`` a case no family names (a weight, a gain, propagated) whose output
    is a per-index affine map of B that holds (:func:`.effects.holds_per_slice`: a
    LayerNorm gain doubled, redrawn or scaled by 1/√d where nothing follows it) is a
    ``feature_map``: that is the relation it leaves, which a report can name; one whose
    output is one scale and offset per fibre that holds (:func:`.effects.holds_per_fibre`:
    the last RMSNorm's mean of squares computed otherwise) is a ``normalisation``.  Without it,
    the labels know only global maps and per-index offsets (the figures before this
    label, printed beside it)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if changes_an_additive_term(graph, lab) and effects.offset(a64, b64) <= effects.SHARE:
        return "offset"
    if reversed_axis(a, b) is not None:
        return "reorder"
    family = lab.get("family")
    if family and not effects.carries(family, lab["operator"], a, b, added_after(graph, lab, a.shape)):
        family = "propagated"
    if by_relation and not FAMILY_KINDS.get(family or ""):
        if effects.holds_per_slice(a, b):
            return "feature_map"
        if effects.holds_per_fibre(a, b):
            return "normalisation"
    return family


def added_after(graph: onnx.GraphProto | None, lab: dict[str, Any], shape: tuple[int, ...]) -> np.ndarray | None:
    """The constant an Add right after the mutated node adds to its output (a Linear's bias
    after its MatMul), when it broadcasts to ``shape``; else None."""
    if graph is None or not lab.get("node"):
        return None
    inits = {t.name: t for t in graph.initializer}
    try:
        node = node_by_name(graph, lab["node"])
    except NotApplicable:
        return None
    reader = readers(graph, node.output[0])
    if len(reader) != 1 or reader[0].op_type != "Add":
        return None
    const = [numpy_helper.to_array(inits[i]) for i in reader[0].input if i in inits]
    if len(const) != 1:
        return None
    try:
        return np.broadcast_to(const[0].astype(np.float64), shape)
    except ValueError:
        return None


def reversed_axis(a: np.ndarray, b: np.ndarray) -> int | None:
    """The axis along which A is B reversed, to a thousandth of their difference in the given
    order (an input reversed along an axis a model is equivariant to comes out reversed)."""
    if a.shape != b.shape:
        return None
    a64 = a.astype(np.float64)
    given = float(np.max(np.abs(a64 - b), initial=0.0))
    for axis in range(a.ndim):
        if a.shape[axis] > 1 and np.max(np.abs(a64 - np.flip(b, axis))) <= 1e-3 * given:
            return axis
    return None


def named_cause(findings: list) -> Any:
    """The finding whose causes the report puts first, or None when it names none."""
    return main_finding([f for f in findings if f.kind not in NOT_A_CAUSE and f.causes])


def location_right(where: dict[str, Any] | None, truth: dict[str, Any], ndim: int) -> bool:
    if not where or "axis" not in where or "indices" not in where:
        return False
    if where["axis"] % ndim != truth["axis"] % ndim:
        return False
    got, want = set(where["indices"]), set(truth["indices"])
    return bool(got) and got <= want and 2 * len(got) >= len(want)


@functools.cache
def clean_graph(arch: str) -> onnx.GraphProto | None:
    """The clean export's graph (without its weights' data), to see what a target feeds."""
    path = models.onnx_path(arch)
    return onnx.load(path, load_external_data=False).graph if path.exists() else None


def judge(entry: dict[str, Any]) -> dict[str, Any]:
    """Compare one case and judge the report against its label."""
    a, b = cases.load(entry, manifest().parent)
    report = compare_values(a, b, preset=entry["preset"])
    lab = entry["label"]
    bug = entry["class"] != "legitimate"
    top = named_cause(report.findings)
    family = family_of(lab, a, b, clean_graph(entry["arch"])) if bug else None
    plain = family_of(lab, a, b, clean_graph(entry["arch"]), by_relation=False) if bug else None
    kinds = FAMILY_KINDS.get(family or "", set())
    plain_kinds = FAMILY_KINDS.get(plain or "", set())
    called = report.verdict == "investigate"
    out = {
        "id": entry["id"],
        "operator": lab["operator"],
        "class": entry["class"],
        "family": family,
        "verdict": report.verdict,
        "verdict_right": True if entry["class"] == "precision" else called == bug,
        "named": top.kind if top else None,
        "nameable": bool(kinds),
        "cause_right": bool(top and top.kind in kinds),
        "nameable_plain": bool(plain_kinds),
        "cause_right_plain": bool(top and top.kind in plain_kinds),
        "located": None,
    }
    if bug and lab.get("location"):
        out["located"] = bool(top) and location_right(top.where, lab["location"], a.ndim)
    return out


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:5.1f}%" if n else "    -"


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    bug = [r for r in rows if r["class"] != "legitimate"]
    legit = [r for r in rows if r["class"] == "legitimate"]
    named = [r for r in bug if r["named"]]
    nameable = [r for r in bug if r["nameable"]]
    located = [r for r in bug if r["located"] is not None]
    return {
        "cases": len(rows),
        "bug_cases": len(bug),
        "legitimate": len(legit),
        "verdict_right": sum(r["verdict_right"] for r in rows),
        "false_alarms": sum(not r["verdict_right"] for r in legit),
        "missed_bugs": sum(not r["verdict_right"] for r in bug),
        "precision_cases": sum(r["class"] == "precision" for r in rows),
        "precision_investigate": sum(r["class"] == "precision" and r["verdict"] == "investigate" for r in rows),
        "named": len(named),
        "named_right": sum(r["cause_right"] for r in named),
        "nameable": len(nameable),
        "recalled": sum(r["cause_right"] for r in nameable),
        "named_right_plain": sum(r["cause_right_plain"] for r in named),
        "nameable_plain": sum(r["nameable_plain"] for r in bug),
        "recalled_plain": sum(r["cause_right_plain"] for r in bug if r["nameable_plain"]),
        "with_location": len(located),
        "located": sum(bool(r["located"]) for r in located),
    }


def group_of(row: dict[str, Any], by: str) -> str:
    """The row's operator, or its family as scored (legitimate pairs by how they were made)."""
    if by == "family" and row["class"] != "legitimate":
        return str(row["family"])
    return str(row["operator"])


def print_table(rows: list[dict[str, Any]], by: str = "operator") -> None:
    groups: dict[str, list] = defaultdict(list)
    for r in rows:
        groups[group_of(r, by)].append(r)
    print(f"{by:28s} {'n':>4s} {'verdict':>7s} {'named':>5s} {'prec':>6s} {'recall':>6s} {'loc':>9s}")
    for op in sorted(groups, key=lambda o: (o.startswith("legit_"), o)):
        s = summarise(groups[op])
        loc = f"{s['located']}/{s['with_location']}" if s["with_location"] else "-"
        print(
            f"{op:28s} {s['cases']:4d} {_pct(s['verdict_right'], s['cases']):>7s} {s['named']:5d} "
            f"{_pct(s['named_right'], s['named']):>6s} {_pct(s['recalled'], s['nameable']):>6s} {loc:>9s}"
        )
    s = summarise(rows)
    print(f"\noverall: {s['cases']} cases ({s['bug_cases']} bug or precision, {s['legitimate']} legitimate)")
    print(
        f"  verdict accuracy {_pct(s['verdict_right'], s['cases'])}; missed bugs {s['missed_bugs']}; "
        f"false alarms {s['false_alarms']} of {s['legitimate']} legitimate"
    )
    print(
        f"  precision round trips called investigate: {s['precision_investigate']} of {s['precision_cases']} "
        "(not scored: either verdict stands)"
    )
    print(
        f"  cause precision {_pct(s['named_right'], s['named'])} ({s['named_right']}/{s['named']} named); "
        f"cause recall {_pct(s['recalled'], s['nameable'])} ({s['recalled']}/{s['nameable']} nameable)"
    )
    print(
        f"  without the labels by a map that holds (feature_map, a last normalisation's statistic): cause precision "
        f"{_pct(s['named_right_plain'], s['named'])} ({s['named_right_plain']}/{s['named']}); cause recall "
        f"{_pct(s['recalled_plain'], s['nameable_plain'])} ({s['recalled_plain']}/{s['nameable_plain']})"
    )
    print(f"  location {s['located']}/{s['with_location']} of the cases with a labelled location")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=["tuning", "held-back", "all"], default="tuning")
    parser.add_argument("--limit", type=int, default=None, help="score the first N cases only")
    parser.add_argument("--operator", nargs="*", help="only these operators (legit_* for legitimate pairs)")
    parser.add_argument("--arch", nargs="*", choices=list(models.ARCHITECTURES), help="only these architectures")
    parser.add_argument("--json", type=Path, help="write every case's judgement here")
    parser.add_argument("--by", choices=["operator", "family"], default="operator", help="rows of the table")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each wrong case")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed generate.py was run with")
    args = parser.parse_args(argv)
    models.use_seed(args.seed)
    if not manifest().exists():
        print(f"no corpus yet: run python bench/corpus/generate.py --seed {args.seed} first (manifest missing)")
        return 2
    entries = json.loads(manifest().read_text())["cases"]
    entries = [e for e in entries if args.half == "all" or e["half"] == args.half]
    if args.operator:
        entries = [e for e in entries if e["label"]["operator"] in args.operator]
    if args.arch:
        entries = [e for e in entries if e["arch"] in args.arch]
    entries = entries[: args.limit]
    started = time.perf_counter()
    rows = [judge(e) for e in entries]
    print(f"{len(rows)} cases of the {args.half} half scored in {time.perf_counter() - started:.1f} s\n")
    print_table(rows, args.by)
    if args.verbose:
        for r in rows:
            if not r["verdict_right"] or (r["class"] != "legitimate" and r["named"] and not r["cause_right"]):
                print(f"  {r['id']}: verdict {r['verdict']}, named {r['named']} (family {r['family']})")
    if args.json:
        args.json.write_text(json.dumps({"summary": summarise(rows), "cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
