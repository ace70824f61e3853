"""Write the page's example inputs and tolerance presets into this folder.

The examples are real model outputs from ``tests/fixtures/models`` (PyTorch and ONNX
Runtime on CPU), printed the way a user pastes them: NumPy's ``repr`` with every float
written in its shortest round-trip form, so the pasted text loses no bit.  The presets
are :data:`perpendis.numerics.tolerance.PRESETS`, so the page's selector offers exactly what the
core accepts (``tests/browser/test_page_examples.py`` checks both stay current).

Run: ``python app/examples/make_examples.py`` (from anywhere).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODELS = ROOT / "tests" / "fixtures" / "models"
sys.path.insert(0, str(ROOT / "py"))

from perpendis.numerics.tolerance import PRESETS, preset_label  # noqa: E402

EXAMPLES = {
    "rounding": {
        "a": "transformer.ort.npy",
        "b": "transformer.torch.npy",
        "about": "A small transformer's output from ONNX Runtime (A) and PyTorch (B) on CPU, same input.",
    },
    "bug": {
        "a": "transformer.ln_eps.npy",
        "b": "transformer.lowvar.ort.npy",
        "about": "The same transformer in ONNX Runtime with every LayerNorm epsilon edited from 1e-5 to 1e-3 (A) "
        "against the correct graph (B), on an input with one low-variance token.",
    },
}


def pasted_text(array: np.ndarray) -> str:
    """``repr`` as a REPL prints it, but lossless and never summarised with ``...``."""
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        return repr(array)


def examples() -> dict[str, dict[str, str]]:
    return {
        name: {
            "a": pasted_text(np.load(MODELS / spec["a"])),
            "b": pasted_text(np.load(MODELS / spec["b"])),
            "about": spec["about"],
        }
        for name, spec in EXAMPLES.items()
    }


def presets() -> dict[str, dict[str, object]]:
    """JSON has no NaN: a preset whose numbers depend on the dtype gets null.  ``label`` is
    the entry the page's list shows as it is (naming the peer a preset mimics), and
    ``formula`` the rule it applies."""

    def number(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        name: {
            "atol": number(p.atol),
            "rtol": number(p.rtol),
            "description": p.description,
            "label": preset_label(name),
            "mimics": p.mimics,
            "formula": p.formula,
        }
        for name, p in PRESETS.items()
    }


def main() -> None:
    for name, example in examples().items():
        (HERE / f"{name}.json").write_text(json.dumps(example, indent=1) + "\n")
    (HERE / "presets.json").write_text(json.dumps(presets(), indent=1) + "\n")


if __name__ == "__main__":
    main()
