"""What torch.onnx's dynamo exporter writes that Perpendis reads, as JSON, so two torch
releases' exports can be compared (docs/design-notes.md, "Torch releases").

    python scripts/torch_export_summary.py OUT.json      # under each torch, then diff the files
    python scripts/torch_export_summary.py --diff A.json B.json

Exports the export fixtures' models (tests/fixtures/export/models.py) the way
perpendis.check_export does (``torch.onnx.export(..., dynamo=True)``) and the corpus's
architectures the way bench/corpus/models.py does, each to a temporary file, and records
per graph: opset imports, IR version, producer, inputs, outputs, initializer count, and per
node its op type, name, outputs, metadata keys and what perpendis's reader makes of it
(the module a value belongs to, its name scopes, its class hierarchy).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def summary(path: Path) -> dict:
    import onnx
    from perpendis.inputs.formats.onnx_model import describe, read_graph

    model = onnx.load(str(path))
    values = describe(read_graph(path.read_bytes()))
    nodes = []
    for node in model.graph.node:
        info = values.get(node.output[0], {}) if node.output else {}
        nodes.append({
            "op_type": node.op_type, "name": node.name, "outputs": list(node.output),
            "meta": sorted(p.key for p in node.metadata_props),
            "module": info.get("module"), "scopes": info.get("scopes"), "classes": info.get("classes"),
        })
    return {
        "opset": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "ir_version": model.ir_version, "producer": f"{model.producer_name} {model.producer_version}",
        "model_meta": sorted(p.key for p in model.metadata_props),
        "inputs": [i.name for i in model.graph.input], "outputs": [o.name for o in model.graph.output],
        "initializers": len(model.graph.initializer), "nodes": nodes,
    }


def export_all(out: Path) -> None:
    import torch

    sys.path[:0] = [str(ROOT / "py"), str(ROOT / "tests" / "fixtures" / "export"), str(ROOT)]
    from models import build
    from perpendis.layers.capture.check import export_onnx

    from bench.corpus import models as corpus

    graphs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("cnn", "transformer"):
            model, x = build(name)
            export_onnx(model, (x,), Path(tmp) / f"{name}.onnx")
            graphs[f"fixture:{name}"] = summary(Path(tmp) / f"{name}.onnx")
        for arch in corpus.ARCHITECTURES:
            path = corpus.export(arch, Path(tmp) / f"corpus-{arch}.onnx")
            graphs[f"corpus:{arch}"] = summary(path)
    out.write_text(json.dumps({"torch": torch.__version__, "graphs": graphs}, indent=1))


def diff(a: dict, b: dict) -> list[str]:
    """What differs between two summaries, one line a difference, per graph."""
    lines = [f"torch {a['torch']} -> {b['torch']}"]
    for name in sorted(set(a["graphs"]) | set(b["graphs"])):
        ga, gb = a["graphs"].get(name), b["graphs"].get(name)
        if ga is None or gb is None:
            lines.append(f"{name}: only in {'b' if ga is None else 'a'}")
            continue
        before = len(lines)
        for key in ("opset", "ir_version", "model_meta", "inputs", "outputs", "initializers"):
            if ga[key] != gb[key]:
                lines.append(f"{name}: {key} {ga[key]} -> {gb[key]}")
        na, nb = ga["nodes"], gb["nodes"]
        if [n["op_type"] for n in na] != [n["op_type"] for n in nb]:
            lines.append(f"{name}: op sequence differs ({len(na)} -> {len(nb)} nodes)")
            continue
        for field in ("name", "outputs", "meta", "module", "scopes", "classes"):
            changed = [(x[field], y[field]) for x, y in zip(na, nb, strict=True) if x[field] != y[field]]
            if changed:
                lines.append(f"{name}: {field} differs on {len(changed)} of {len(na)} nodes, first {changed[0]}")
        if len(lines) == before:
            lines.append(f"{name}: same ({len(na)} nodes)")
    return lines


if __name__ == "__main__":
    if sys.argv[1] == "--diff":
        print("\n".join(diff(*(json.loads(Path(p).read_text()) for p in sys.argv[2:4]))))
    else:
        export_all(Path(sys.argv[1]))
