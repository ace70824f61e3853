"""The paste-back lines, run on the real arrays they were computed from: each line said to
pass passes in its own library, and the reproducing line fails (differential, not string matching)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import perpendis
import pytest
from perpendis.report.paste_back import number_up, paste_back
from perpendis.testing import compare

ml_dtypes = pytest.importorskip("ml_dtypes")
torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _cases() -> list[tuple[str, Path, Path, str | None]]:
    models = FIXTURES / "models"
    out = [(f"{p['a']}-{p['b']}", models / p["a"], models / p["b"], None)
           for p in json.loads((models / "manifest.json").read_text())["pairs"]]
    signatures = FIXTURES / "signatures"
    out += [(c["name"], signatures / c["a"], signatures / c["b"], c["preset"])
            for c in json.loads((signatures / "manifest.json").read_text())["cases"]]
    return out


CASES = _cases()


def load(path: Path) -> np.ndarray:
    """A fixture; bfloat16 ones are saved as 2-byte voids (NumPy has no bfloat16): ml_dtypes reads them."""
    array = np.load(path)
    return array.view(ml_dtypes.bfloat16) if array.dtype.kind == "V" and array.dtype.itemsize == 2 else array


def core_input(array: np.ndarray) -> np.ndarray | torch.Tensor:
    """What the core takes: a bfloat16 array as a torch tensor of the same bits."""
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return array


def run(code: str, a: np.ndarray, b: np.ndarray) -> None:
    """Execute one pasted line with the names it uses bound to the arrays (tensors for torch)."""
    def tensor(x: np.ndarray) -> torch.Tensor:
        taken = core_input(x)
        return taken if isinstance(taken, torch.Tensor) else torch.from_numpy(x.copy())

    if code.startswith("torch."):
        names = {"actual": tensor(a), "expected": tensor(b)}
    elif code.startswith("perpendis."):
        names = {"actual": core_input(a), "expected": core_input(b)}
    else:
        names = {"actual": a, "desired": b}
    exec(code, {"np": np, "torch": torch, "perpendis": perpendis, **names})


@pytest.mark.parametrize(("name", "a_path", "b_path", "preset"), CASES, ids=[c[0] for c in CASES])
def test_the_lines_do_what_they_say_on_the_real_arrays(name, a_path, b_path, preset):
    a, b = load(a_path), load(b_path)
    report = compare(core_input(a), core_input(b), preset)
    lines = paste_back(report)
    if report.compared_shape is None:
        assert lines == []
        return
    assert lines and lines[0]["what"] == "assert_same"
    assert [line["what"] == "reproduce" for line in lines].count(True) == (not report.tolerance.passed)
    for line in lines:
        code = line["code"]
        if code.startswith("#"):
            assert not line["passes"]
            continue
        if line["passes"]:
            run(code, a, b)
        else:
            with pytest.raises(AssertionError):
                run(code, a, b)
    # The emitted tolerance is the smallest one, to printing: a tenth of it fails in NumPy.
    allclose = next((line["code"] for line in lines if line["what"] == "numpy"), None)
    need = report.min_tolerance.atol_at_rtol
    if allclose and need > 0:
        tighter = allclose.replace(f"atol={number_up(need)}", f"atol={need / 10!r}")
        with pytest.raises(AssertionError):
            run(tighter, a, b)


def test_a_rounding_pair_gets_a_passing_assert_same():
    models = FIXTURES / "models"
    report = compare(np.load(models / "linear.torch.npy"), np.load(models / "linear.ort.npy"))
    assert [line["what"] for line in paste_back(report)] == ["assert_same", "numpy", "torch"]
    assert paste_back(report)[0]["passes"]
    assert "perpendis.assert_same(actual, expected, atol=" in report.to_markdown()
    assert report.to_dict()["paste_back"] == paste_back(report)


@pytest.mark.parametrize("x", [5e-324, 2.2e-310, 1e-300, 2.5e-8, 0.1, 1.0, 3.14159, 123456.0, 9.999e5])
def test_number_up_never_prints_below(x):
    text = number_up(x)
    assert float(text) >= x
    assert float(text) <= x * 1.01


def test_a_subnormal_tolerance_is_printed_not_a_crash():
    # Zero against the smallest float64 needs atol = 5e-324, whose scale 10.0**-326 is 0.0:
    # the report used to fail with a ZeroDivisionError (found by test_stream's property).
    actual, expected = np.array(0.0), np.array(5e-324)
    report = compare(actual, expected)
    lines = report.to_dict()["paste_back"]
    assert lines == paste_back(report)
    assert lines[0]["passes"], lines
    atol, rtol = (float(v) for v in re.search(r"atol=([^,]+), rtol=([^)]+)\)", lines[0]["code"]).groups())
    assert 0 < atol < 1e-320
    perpendis.assert_same(actual, expected, atol=atol, rtol=rtol)  # the printed line passes
