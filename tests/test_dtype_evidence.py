"""The dtype finding (perpendis.diagnosis.dtype_evidence): a mismatch leads the report and
fails the pair, unless the user declared a preset for the narrower format or the wider
side only holds that format's values; on real ONNX Runtime float16 and PyTorch runs."""

from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.compare import compare
from perpendis.engine.options import ComparisonOptions
from perpendis.inputs import formats
from perpendis.inputs.tensor import from_numpy

MODELS = Path(__file__).parent / "fixtures" / "models"


def output(name: str) -> np.ndarray:
    """A model output of tests/fixtures/models (real PyTorch and ONNX Runtime runs)."""
    (tensor,) = formats.read((MODELS / name).read_bytes(), name)
    return np.asarray(tensor.array)


def first_dtype(findings):
    return next(f for f in findings if f.kind == "dtype")


@pytest.mark.parametrize("model", ["linear", "cnn", "transformer"])
def test_float16_results_stored_as_float32_are_judged_in_float16(model):
    """ONNX Runtime's float16 output widened by a Cast, as keep_io_types does, against
    torch's run rounded to float16: every value of A is a float16 value, so the mismatch is
    storage; it is said first, as a warning, and the values decide the verdict."""
    ort16 = output(f"{model}.ort16.npy")
    a = from_numpy(ort16.astype(np.float32), "ort")
    b = from_numpy(output(f"{model}.torch.npy").astype(np.float16), "torch")
    r = compare(a, b)
    dtype = first_dtype(r.findings)
    assert r.findings[0] is dtype and dtype.severity == "warning"
    assert "every value of A is a float16 value" in dtype.message
    assert r.verdict == "rounding" and r.layout["widened"] == "A"
    assert r.headline.startswith("A is float32 and B is float16, so both were judged in float16")


@pytest.mark.parametrize("model", ["linear", "cnn", "transformer"])
def test_a_declared_preset_for_the_narrower_format_is_respected(model):
    """torch's float32 run against ONNX Runtime's float16: a dtype error by default (as
    torch.testing), judged in float16 once the user declares --preset fp16, and still an
    error under a preset that mimics torch.testing's check_dtype=True."""
    a, b = (from_numpy(output(f"{model}.{side}.npy"), side) for side in ("torch", "ort16"))
    default = compare(a, b)
    assert first_dtype(default.findings).severity == "error" and default.verdict == "investigate"
    declared = compare(a, b, ComparisonOptions(preset="fp16"))
    dtype = first_dtype(declared.findings)
    assert declared.findings[0] is dtype and dtype.severity == "warning"
    assert "the declared preset fp16 is for float16" in dtype.message
    assert declared.verdict == "rounding"
    strict = compare(a, b, ComparisonOptions(preset="torch-default"))
    assert first_dtype(strict.findings).severity == "error" and strict.verdict == "investigate"
    other = compare(a, b, ComparisonOptions(preset="bf16"))
    assert first_dtype(other.findings).severity == "error"


def test_small_integers_are_no_evidence_of_a_narrower_computation():
    """Small integers are values of every float format: a float32 of class ids against a
    float16 copy still fails on the dtype."""
    ids = np.arange(64, dtype=np.float32) % 10
    r = compare(from_numpy(ids, "a"), from_numpy(ids.astype(np.float16), "b"))
    assert first_dtype(r.findings).severity == "error" and "widened" not in r.layout


def test_a_float32_run_is_not_mistaken_for_widened_float16():
    a = output("linear.torch.npy")
    b = output("linear.ort16.npy")
    r = compare(from_numpy(a, "torch"), from_numpy(b, "ort"))
    assert "widened" not in r.layout and first_dtype(r.findings).severity == "error"
