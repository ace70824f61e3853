"""Pairing accuracy on the export fixtures: PyTorch module outputs paired with ONNX Runtime values.

For each model (a CNN, a 2-layer transformer; tests/fixtures/export) the right pairs are
those the exporter's metadata gives on the clean run, each checked to agree up to
rounding.  Each run, clean and bugged, is then paired twice: with the model
(``--model``: metadata) and without it, from an ``.npz`` capture that records nothing
(values, then order and shape).  Printed: pairs right out of the right pairs' total, and
pairs made that are wrong.  Not a test: it prints figures.

Usage: ``python bench/pairing_accuracy.py``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py"))

from perpendis.layers.bisect import bisect, model_info, path_entries, path_info  # noqa: E402

HERE = ROOT / "tests" / "fixtures" / "export"


def pairs_of(torch_path: Path, ort_path: Path, model: Path | None) -> dict[str, str]:
    a, b = path_entries(torch_path), path_entries(ort_path)
    info_a, info_b = model_info(model, [e.name for e in a], [e.name for e in b], path_info(torch_path), {})
    result = bisect(a, b, info_a=info_a, info_b=info_b)
    return {p.a_name: p.b_name for p in result.pairs}


def score(found: dict[str, str], truth: dict[str, str]) -> tuple[int, int, int]:
    right = sum(found.get(a) == b for a, b in truth.items())
    wrong = sum(truth.get(a) != b for a, b in found.items())
    return right, len(truth), wrong


def main() -> None:
    bugs = json.loads((HERE / "bugs.json").read_text())
    runs = [(m, m) for m in ("cnn", "transformer")] + [(fact["model"], bug) for bug, fact in bugs.items()]
    totals = {"with model": [0, 0, 0], "without model": [0, 0, 0]}
    print(f"{'run':<18} {'with model':>18} {'without model':>18}")
    for model, run in runs:
        truth = pairs_of(HERE / f"{model}.torch.safetensors", HERE / f"{model}.ort.safetensors", HERE / f"{model}.onnx")
        cells = []
        for how, onnx_model in (("with model", HERE / f"{run}.onnx"), ("without model", None)):
            ort = HERE / f"{run}.ort.npz"
            if not ort.exists():  # the clean runs are kept as safetensors; strip what they record
                ort = _plain(HERE / f"{run}.ort.safetensors")
            right, total, wrong = score(pairs_of(HERE / f"{model}.torch.safetensors", ort, onnx_model), truth)
            for k, v in enumerate((right, total, wrong)):
                totals[how][k] += v
            cells.append(f"{right}/{total} ({wrong} wrong)")
        print(f"{run:<18} {cells[0]:>18} {cells[1]:>18}")
    cells = [f"{r}/{t} ({w} wrong)" for r, t, w in totals.values()]
    print(f"{'all':<18} {cells[0]:>18} {cells[1]:>18}")


def _plain(path: Path) -> Path:
    import tempfile

    import numpy as np
    from perpendis.inputs.load import load_path

    out = Path(tempfile.mkdtemp()) / (path.name.replace(".safetensors", ".npz"))
    tensors = load_path(path)
    np.savez(out, **{t.name: t.array for t in tensors})
    return out


if __name__ == "__main__":
    main()
