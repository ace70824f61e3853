"""Bisect real exports: the mutation corpus's architectures, clean and with single-node bugs, scored against the truth.

For each architecture of ``bench/corpus`` (``models.clean``: exported once with torch.onnx's
default (dynamo) exporter, cached in ``bench/corpus/.cache``) the model is run in PyTorch and
ONNX Runtime on the corpus's input, captured with ``perpendis.capture`` (leaf modules,
``.safetensors`` with the order and module paths) and with plain forward hooks on every module
(nothing but names and values) saved three ways: ``np.savez``, ``safetensors.torch.save_file``
with the call order under the metadata key ``order``, and ``save_file`` without it (tensors then
come in the file's data order, which ``save_file`` sorts by name).  Then:

* the clean run is bisected with each capture: a failing layer there is a false alarm;
* pairs right: each plain capture, paired by names and values, against the pairs the
  exporter's metadata gives;
* a unary op turned into a Log (``mutate.NAN_OPERATORS``) makes the first NaN: the bisect's
  ``nan_origin`` must name it;
* single-node bugs of the corpus's operators (attributes changed, nodes bypassed,
  initializers perturbed; the mutants are written by ``cases.mutant`` into the cache), taken in
  turn over the graph until ``--limit`` of them change the output, are bisected with
  ``--isolate``: the first failing layer is right when its ONNX value is the first paired value
  downstream of the mutated node (the first place a layer comparison can see the bug), the
  culprit when the layer run alone that fails is it.  A bug that leaves the model's output
  within rounding is counted as without effect.  "first sure right" scores the first failing
  layer among those surely paired (by scope, name, or values agreeing to 1e-4), which the
  report names when the first failing pair is unsure.

Not a test: it prints a table.  Usage: ``python bench/bisect_exports.py [ARCH ...] [--limit N]``
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT))

import onnx  # noqa: E402
import torch  # noqa: E402
from perpendis.errors import InputError  # noqa: E402
from perpendis.layers.bisect import bisect, path_entries  # noqa: E402
from perpendis.layers.capture.check import bisect_runs_of  # noqa: E402
from perpendis.layers.capture.onnx import capture_onnx  # noqa: E402
from perpendis.layers.capture.torch import capture  # noqa: E402

from bench.corpus import cases, models  # noqa: E402
from bench.corpus.mutate import NAN_OPERATORS, OPERATORS, NotApplicable, node_by_name, readers, targets  # noqa: E402
from bench.corpus.places import expected_first  # noqa: E402

# The corpus's operators that change one node or one initializer, by kind of bug.
KINDS = {
    "attribute": ("ln_epsilon", "gelu_approximate", "softmax_axis", "conv_pads"),
    "bypass": ("bypass",),
    "perturb": ("init_one_slice", "init_slice_negated", "init_redrawn", "init_half"),
}


def plain_hooks(model: torch.nn.Module, args: tuple, path: Path, order: bool = True) -> None:
    """Every module's output as a user's own forward hooks save it, in call order: ``np.savez`` for
    ``.npz``; for ``.safetensors``, ``safetensors.torch.save_file`` with the names in call order
    under the metadata key ``order`` (or, ``order=False``, no metadata at all)."""
    saved: dict[str, torch.Tensor] = {}

    def hook(name: str):
        def save(_m, _i, out):
            out = out[0] if isinstance(out, (tuple, list)) and out else out
            if isinstance(out, torch.Tensor) and name not in saved:
                saved[name] = out.detach().float().contiguous().clone()

        return save

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    with torch.no_grad():
        model(*args)
    for h in handles:
        h.remove()
    if path.suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(saved, str(path), metadata={"order": json.dumps(list(saved))} if order else None)
    else:
        np.savez(path, **{k: v.numpy() for k, v in saved.items()})


def _shapes(model: onnx.ModelProto) -> dict[str, tuple]:
    inferred = onnx.shape_inference.infer_shapes(model)
    out = {}
    for v in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        out[v.name] = tuple(d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim)
    return out


def _spread(items: list, n: int) -> list:
    """``n`` items evenly over ``items`` (early, middle and late layers), in order."""
    if len(items) <= n:
        return list(items)
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)] if n > 1 else items[:1]


def candidates(graph: onnx.ModelProto, kinds: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """``(operator, target, mutated value)`` of the single-node bugs of ``kinds``, each operator's
    targets spread over the graph, the operators taken in turn: bypasses of shape-keeping nodes,
    initializers read by one node only (so the bug has one first place)."""
    shapes = _shapes(graph)
    per_op: list[list[tuple[str, str, str]]] = []
    for kind in kinds:
        for name in KINDS[kind]:
            op = OPERATORS[name]
            found = []
            for target in targets(graph, op):
                if op.on == "node":
                    node = node_by_name(graph, target)
                    if name == "bypass" and (
                        not node.input or shapes.get(node.input[0]) != shapes.get(node.output[0])
                        or shapes.get(node.output[0]) is None
                    ):
                        continue
                    found.append((name, target, node.output[0]))
                else:
                    read = readers(graph, target)
                    if len(read) == 1 and int(np.prod(_dims(graph, target))) >= 4:
                        found.append((name, target, read[0].output[0]))
            per_op.append(_spread(found, 8))
    out = []
    for k in range(max((len(x) for x in per_op), default=0)):
        out += [x[k] for x in per_op if k < len(x)]
    return out


def _dims(graph: onnx.ModelProto, name: str) -> list[int]:
    return list(next(t.dims for t in graph.graph.initializer if t.name == name))


def _pairs_right(truth: dict[str, str], result) -> tuple[int, int]:
    """How many of the metadata's pairs a plain capture's bisect made, and how many it made wrong."""
    common = {p.a_name: p.b_name for p in result.pairs if p.a_name in truth}
    return sum(truth[a] == b for a, b in common.items()), sum(truth[a] != b for a, b in common.items())


def run(name: str, limit: int, folder: Path, kinds: tuple[str, ...] = tuple(KINDS), nans: int = 3) -> dict:
    """One architecture's row: ``limit`` bugs of ``kinds`` that change the output, ``nans`` NaN-making ones."""
    onnx_path, model, inputs = models.clean(name)
    args = tuple(torch.from_numpy(x) for x in inputs)
    feeds = list(inputs)
    with torch.no_grad(), capture(model) as torch_run:
        model(*args)
    torch_run.save(folder / f"{name}.torch.safetensors")
    ort = capture_onnx(onnx_path, feeds)
    clean = bisect_runs_of(torch_run, onnx_path, feeds, ort_run=ort)
    ort.save(folder / f"{name}.ort.npz")
    ort_entries = path_entries(folder / f"{name}.ort.npz")
    truth = {p.a_name: p.b_name for p in clean.pairs if p.paired_by == "metadata"}
    row = {"arch": name, "pairs": len(clean.pairs), "false alarm": int(clean.first_failing is not None)}
    for key, file, order in (
        ("npz", f"{name}.plain.npz", True), ("st", f"{name}.plain.safetensors", True),
        ("st no order", f"{name}.plain_no_order.safetensors", False),
    ):
        plain_hooks(model, args, folder / file, order=order)
        result = bisect(path_entries(folder / file), ort_entries)
        right, wrong = _pairs_right(truth, result)
        row[f"{key} pairs right"] = f"{right}/{len(truth)}"
        row[f"{key} wrong"] = wrong
        if order:
            row["false alarm"] += int(result.first_failing is not None)
        else:
            row["no order alarm"] = int(result.first_failing is not None)
    row.update({
        "bugs": 0, "no effect": 0, "first right": 0, "first sure right": 0, "culprit right": 0, "npz first right": 0,
        "st no order first right": 0, "misses": [],
    })
    graph = onnx.load(onnx_path)
    order = list(ort.names)
    out_name = graph.graph.output[0].name
    reference = ort[out_name]
    for operator, target, value in candidates(graph, kinds):
        if row["bugs"] >= limit:
            break
        try:
            bug_path, *_ = cases.mutant(name, operator, target)
        except Exception as err:  # not applicable here, or onnx.checker refused the graph
            if not isinstance(err, NotApplicable):
                row["misses"].append(f"{operator} {target}: invalid: {str(err)[:80]}")
            continue
        try:
            bugged = capture_onnx(bug_path, feeds)
        except Exception as err:  # a mutation ORT refuses is no bug of the model's
            row["misses"].append(f"{operator} {target}: {str(err)[:80]}")
            continue
        out = bugged[out_name]
        if out.shape == reference.shape and np.allclose(out, reference, rtol=1e-4, atol=1e-5):
            row["no effect"] += 1
            continue
        row["bugs"] += 1
        result = bisect_runs_of(torch_run, bug_path, feeds, ort_run=bugged)
        want = expected_first(result, graph, value, order)
        first = result.first_failing
        culprit = result.culprit
        row["first right"] += first is not None and first.b_name == want
        sure = result.first_sure_failing
        row["first sure right"] += sure is not None and sure.b_name == want
        row["culprit right"] += culprit is not None and culprit.b_name == want
        # The plain captures, bisected without the model: first failing layer by values, order and shape only.
        bugged.save(folder / f"{name}.bug.npz")
        for key, file in (("npz", f"{name}.plain.npz"), ("st no order", f"{name}.plain_no_order.safetensors")):
            try:
                plain = bisect(path_entries(folder / file), path_entries(folder / f"{name}.bug.npz")).first_failing
            except InputError:  # no value agrees with any module's (a bug in the first layers): nothing paired
                plain = None
            row[f"{key} first right"] += plain is not None and plain.b_name == want
        if first is None or first.b_name != want or culprit is None or culprit.b_name != want:
            row["misses"].append(
                f"{operator} {target}: want {want}, first {first and first.b_name}, "
                f"culprit {culprit and culprit.b_name}"
            )
    row["nan"], row["nan origin right"] = 0, 0
    op = NAN_OPERATORS["log_nan"]
    for target in _spread(targets(graph, op), 8):
        if row["nan"] >= nans:
            break
        value = node_by_name(graph, target).output[0]
        bug_path = folder / f"{name}.nan.onnx"
        onnx.save(op.fn(graph, target), bug_path)
        result = bisect_runs_of(torch_run, bug_path, feeds)
        if result.first_nonfinite is None:
            continue  # no paired layer turned non-finite (no negative input, or a later Where masked it)
        row["nan"] += 1
        origin = result.nan_origin or {}
        row["nan origin right"] += origin.get("value") == value
        if origin.get("value") != value:
            row["misses"].append(f"log_nan {target}: NaN origin {origin.get('value')}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arch", nargs="*", default=list(models.ARCHITECTURES))
    parser.add_argument("--limit", type=int, default=12, help="bugs per architecture")
    options = parser.parse_args()
    logging.disable(logging.WARNING)
    columns = ["arch", "pairs", "npz pairs right", "npz wrong", "st pairs right", "st wrong", "false alarm",
               "st no order pairs right", "st no order wrong", "no order alarm", "bugs", "no effect",
               "first right", "first sure right", "culprit right", "npz first right", "st no order first right", "nan",
               "nan origin right"]
    print(" | ".join(columns))
    totals = {
        "no order alarm": 0, "bugs": 0, "first right": 0, "first sure right": 0, "culprit right": 0,
        "false alarm": 0, "nan": 0, "nan origin right": 0, "npz first right": 0, "st no order first right": 0,
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
        f"total: {totals['false alarm']} false alarm(s) on clean exports ({totals['no order alarm']} more with plain "
        f"safetensors without order metadata); first failing right "
        f"{totals['first right']}/{totals['bugs']} ({totals['first right'] / bugs:.0%}), the first surely paired "
        f"one {totals['first sure right']}/{totals['bugs']}; culprit right "
        f"{totals['culprit right']}/{totals['bugs']} ({totals['culprit right'] / bugs:.0%}); first NaN traced to "
        f"the op that made it {totals['nan origin right']}/{totals['nan']}; plain hooks without the model: first "
        f"failing right {totals['npz first right']}/{totals['bugs']} (.npz), {totals['st no order first right']}/"
        f"{totals['bugs']} (.safetensors without order metadata)"
    )


if __name__ == "__main__":
    main()
