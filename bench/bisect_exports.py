"""Bisect real exports: stock architectures, clean and with single-node bugs, scored against the truth.

For each architecture (bench/export_archs.py) the model is exported with torch.onnx's
default (dynamo) exporter and run in PyTorch and ONNX Runtime on one input, captured
with ``perpendis.capture`` (leaf modules, ``.safetensors`` with the order and module
paths) and with plain forward hooks on every module saved by ``np.savez`` (nothing but
names and values).  Then:

* the clean run is bisected both ways: a failing layer there is a false alarm;
* pairs right: the plain ``.npz`` captures, paired by names and values, against the
  pairs the exporter's metadata gives;
* a unary op turned into a Log makes the first NaN: the bisect's ``nan_origin`` must name it;
* each single-node bug (bench/onnx_mutations.py) is captured by ``perpendis capture``
  and bisected with ``--isolate``: the first failing layer is right when its ONNX value
  is the first paired value downstream of the mutated node (the first place a layer
  comparison can see the bug), the culprit when the layer run alone that fails is it.
  A bug that leaves the model's output within rounding is counted as without effect.
  "first sure right" scores the first failing layer among those surely paired (by scope,
  name, or values agreeing to 1e-4), which the report names when the first failing pair is unsure.

Not a test: it prints a table.  Usage: ``python bench/bisect_exports.py [ARCH ...] [--limit N]``
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT / "bench"))

import onnx  # noqa: E402
import torch  # noqa: E402
from export_archs import ARCHITECTURES, build, export  # noqa: E402
from onnx_mutations import KINDS, mutations, nan_makers  # noqa: E402
from perpendis.bisect import bisect, path_entries  # noqa: E402
from perpendis.capture.check import bisect_runs_of  # noqa: E402
from perpendis.capture.onnx import capture_onnx  # noqa: E402
from perpendis.capture.torch import capture  # noqa: E402


def plain_hooks(model: torch.nn.Module, args: tuple, path: Path) -> None:
    """Every module's output as a user's own forward hooks save it: ``np.savez``, call order, no metadata."""
    saved: dict[str, np.ndarray] = {}

    def hook(name: str):
        def save(_m, _i, out):
            out = out[0] if isinstance(out, (tuple, list)) and out else out
            if isinstance(out, torch.Tensor) and name not in saved:
                saved[name] = out.detach().float().numpy().copy()

        return save

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    with torch.no_grad():
        model(*args)
    for h in handles:
        h.remove()
    np.savez(path, **saved)


def downstream(model: onnx.ModelProto, value: str) -> set[str]:
    """Every value that reads ``value``, directly or not, and the value itself."""
    reached = {value}
    for node in model.graph.node:
        if any(s in reached for s in node.input):
            reached.update(o for o in node.output if o)
    return reached


def expected_first(result, model: onnx.ModelProto, value: str, order: list[str]) -> str | None:
    """The first paired ONNX value, in ONNX order, that the mutated value reaches."""
    reached = downstream(model, value)
    paired = {p.b_name for p in result.pairs if not p.likely_mispaired}
    return next((v for v in order if v in reached and v in paired), None)


def run(name: str, limit: int, folder: Path, kinds: tuple[str, ...] = KINDS) -> dict:
    model, args = build(name)
    onnx_path = folder / f"{name}.onnx"
    export(model, args, onnx_path)
    feeds = [a.numpy() for a in args]
    with torch.no_grad(), capture(model) as torch_run:
        model(*args)
    torch_run.save(folder / f"{name}.torch.safetensors")
    plain_hooks(model, args, folder / f"{name}.plain.npz")
    clean = bisect_runs_of(torch_run, onnx_path, feeds)
    ort = capture_onnx(onnx_path, feeds)
    ort.save(folder / f"{name}.ort.npz")
    plain = bisect(path_entries(folder / f"{name}.plain.npz"), path_entries(folder / f"{name}.ort.npz"))
    truth = {p.a_name: p.b_name for p in clean.pairs if p.paired_by == "metadata"}
    common = {p.a_name: p.b_name for p in plain.pairs if p.a_name in truth}
    row = {
        "arch": name,
        "pairs": len(clean.pairs),
        "plain pairs right": f"{sum(truth[a] == b for a, b in common.items())}/{len(truth)}",
        "plain wrong": sum(truth[a] != b for a, b in common.items()),
        "false alarm": int(clean.first_failing is not None) + int(plain.first_failing is not None),
        "bugs": 0, "no effect": 0, "first right": 0, "first sure right": 0, "culprit right": 0, "misses": [],
    }
    graph = onnx.load(onnx_path)
    order = list(ort.names)
    reference = ort[graph.graph.output[0].name]
    for bug in mutations(graph, limit, kinds):
        bug_path = folder / f"{name}.bug.onnx"
        onnx.save(bug.model, bug_path)
        try:
            bugged = capture_onnx(bug_path, feeds)
        except Exception as err:  # a mutation ORT refuses is no bug of the model's
            row["misses"].append(f"{bug.name}: {str(err)[:80]}")
            continue
        if np.allclose(bugged[graph.graph.output[0].name], reference, rtol=1e-4, atol=1e-5):
            row["no effect"] += 1
            continue
        row["bugs"] += 1
        result = bisect_runs_of(torch_run, bug_path, feeds)
        want = expected_first(result, graph, bug.value, order)
        first = result.first_failing
        culprit = result.culprit
        row["first right"] += first is not None and first.b_name == want
        sure = result.first_sure_failing
        row["first sure right"] += sure is not None and sure.b_name == want
        row["culprit right"] += culprit is not None and culprit.b_name == want
        if first is None or first.b_name != want or culprit is None or culprit.b_name != want:
            row["misses"].append(
                f"{bug.name}: want {want}, first {first and first.b_name}, culprit {culprit and culprit.b_name}"
            )
    row["nan"], row["nan origin right"] = 0, 0
    for bug in nan_makers(graph):
        bug_path = folder / f"{name}.nan.onnx"
        onnx.save(bug.model, bug_path)
        result = bisect_runs_of(torch_run, bug_path, feeds)
        if result.first_nonfinite is None:
            continue  # the op's input held no negative value: no NaN made
        row["nan"] += 1
        origin = result.nan_origin or {}
        row["nan origin right"] += origin.get("value") == bug.value
        if origin.get("value") != bug.value:
            row["misses"].append(f"{bug.name}: NaN origin {origin.get('value')}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arch", nargs="*", default=list(ARCHITECTURES))
    parser.add_argument("--limit", type=int, default=12, help="bugs per architecture")
    options = parser.parse_args()
    logging.disable(logging.WARNING)
    columns = ["arch", "pairs", "plain pairs right", "plain wrong", "false alarm", "bugs", "no effect",
               "first right", "first sure right", "culprit right", "nan", "nan origin right"]
    print(" | ".join(columns))
    totals = {
        "bugs": 0, "first right": 0, "first sure right": 0, "culprit right": 0, "false alarm": 0, "nan": 0,
        "nan origin right": 0,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name in options.arch:
            start = time.perf_counter()
            row = run(name, options.limit, Path(tmp))
            print(" | ".join(str(row[c]) for c in columns) + f" | {time.perf_counter() - start:.0f} s", flush=True)
            for miss in row["misses"]:
                print(f"    miss: {miss}")
            for k in totals:
                totals[k] += row[k]
    bugs = max(1, totals["bugs"])
    print(
        f"total: {totals['false alarm']} false alarm(s) on clean exports; first failing right "
        f"{totals['first right']}/{totals['bugs']} ({totals['first right'] / bugs:.0%}), the first surely paired "
        f"one {totals['first sure right']}/{totals['bugs']}; culprit right "
        f"{totals['culprit right']}/{totals['bugs']} ({totals['culprit right'] / bugs:.0%}); first NaN traced to "
        f"the op that made it {totals['nan origin right']}/{totals['nan']}"
    )


if __name__ == "__main__":
    main()
