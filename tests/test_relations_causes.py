"""Precision before recall: the wrong causes of issue 32's examples are gone, on real inputs
(the page's own bug example, real runs) and on pairs whose relation is known exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from perpendis.engine.compare import compare, compare_values
from perpendis.inputs.load import load_text

ROOT = Path(__file__).parent.parent


def test_the_pages_layernorm_epsilon_example_names_no_positional_cause():
    """Every LayerNorm epsilon edited in a transformer: the difference wanders along the
    features, which no relation of the grammar fits, so no cause is named."""
    example = json.loads((ROOT / "app" / "examples" / "bug.json").read_text())
    (a,), (b,) = load_text(example["a"]), load_text(example["b"])
    r = compare(a, b)
    assert r.verdict == "investigate"
    text = " ".join(c for f in r.findings for c in f.causes).lower()
    assert "position" not in text and "rotary" not in text
    assert "no known cause fits" in r.headline


def test_an_exact_preset_never_turns_rounding_into_an_offset_or_scale():
    rng = np.random.default_rng(0)
    b = rng.standard_normal((2, 16, 64)).astype(np.float32)
    a = b.copy()
    for _ in range(3):  # 1 to 3 ULP up, on about half the elements
        hit = rng.random(b.shape) < 0.3
        a[hit] = np.nextafter(a[hit], np.float32(np.inf))
    r = compare_values(a, b, preset="exact")
    assert r.verdict == "investigate" and r.findings[0].kind == "tolerance"  # the user asked for bit equality
    assert not {f.kind for f in r.findings} & {"offset", "scale", "affine", "sign_flip"}
    assert any(f.kind == "rounding" for f in r.findings)


def test_a_sign_flip_in_one_channel_leads_with_that_channel():
    x = np.random.default_rng(1).standard_normal((2, 16, 64)).astype(np.float32)
    a = x.copy()
    a[:, :, 5] *= -1
    top = compare_values(a, x).findings[0]
    assert top.kind == "sign_flip" and top.where["axis"] == 2 and top.where["indices"] == [5]


def test_one_row_scaled_is_located_in_that_row():
    b = np.random.default_rng(2).standard_normal((512, 256)).astype(np.float32)
    a = b.copy()
    a[17] *= np.float32(0.667)
    top = compare_values(a, b).findings[0]
    assert top.where["axis"] == 0 and top.where["indices"] == [17] and "row 17" in top.message


def _half_and_bfloat16_runs():
    """A float32 Linear layer and the same layer run in float16 and in bfloat16 (torch)."""
    torch = pytest.importorskip("torch")

    torch.manual_seed(0)
    layer, x = torch.nn.Linear(64, 32), torch.randn(16, 64)
    with torch.no_grad():
        ref = layer(x)
        half = layer.half()(x.half())
        bf16 = layer.bfloat16()(x.bfloat16())
    return ref.numpy(), half, bf16


def test_a_dtype_mismatch_leads_and_says_whether_the_values_agree_to_the_narrower_rounding():
    ref, half, bf16 = _half_and_bfloat16_runs()
    for narrow, name in ((half, "float16"), (bf16, "bfloat16")):
        r = compare_values(narrow, ref)
        top = r.findings[0]
        assert r.verdict == "investigate" and top.kind == "dtype" and top.severity == "error"
        assert top.evidence == {"agree_to_rounding": True, "format": name}
        assert r.headline.startswith(f"Investigate: A is {name} but B is float32")
        # Every other finding agrees: nothing but the dtype is wrong.
        assert [f.kind for f in r.findings if f.severity == "error"] == ["dtype"]
        judged = compare_values(narrow, ref, check_dtype=False)
        assert judged.verdict == "rounding" and not [f for f in judged.findings if f.severity == "error"]


def test_a_dtype_mismatch_with_a_bug_says_the_values_differ_too():
    ref, half, _ = _half_and_bfloat16_runs()
    wrong = half.clone()
    wrong[:, 3] = -wrong[:, 3]
    r = compare_values(wrong, ref)
    assert r.findings[0].kind == "dtype" and r.findings[0].evidence["agree_to_rounding"] is False
    assert any(f.kind == "sign_flip" for f in r.findings)
    assert compare_values(wrong, ref, check_dtype=False).verdict == "investigate"


def test_the_cli_flag_judges_two_float_dtypes_as_rounding(tmp_path, capsys):
    from perpendis.cli.main import main

    ref, half, _ = _half_and_bfloat16_runs()
    np.save(tmp_path / "a.npy", half.numpy())
    np.save(tmp_path / "b.npy", ref)
    files = [str(tmp_path / "a.npy"), str(tmp_path / "b.npy")]
    assert main(files) == 1 and "A is float16 but B is float32" in capsys.readouterr().out
    assert main([*files, "--no-check-dtype"]) == 0


def test_a_region_is_said_in_the_users_terms():
    b = np.random.default_rng(4).standard_normal((4, 64, 32)).astype(np.float32)
    a = b.copy()
    a[:, 48:, :] = np.random.default_rng(5).standard_normal((4, 16, 32))  # the last 16 positions garbage
    region = next(f for f in compare_values(a, b).findings if f.kind == "region")
    assert region.message.startswith("A equals B within the tolerance except on the last 16 positions of axis 1")


@pytest.mark.slow  # about 4 s: the checkpoints command reads its files through the shared fold
def test_checkpoints_and_compare_place_one_scaled_row_alike(tmp_path, capsys):
    """A checkpoint's tensor is read from the files in chunks and only its differing elements
    are sampled: the map found on them is said to hold in row 17, as compare says."""
    from perpendis.cli.main import main
    from safetensors.numpy import save_file

    b = np.random.default_rng(6).standard_normal((512, 256)).astype(np.float32)
    a = b.copy()
    a[17] *= np.float32(0.667)
    for side, w in (("a", a), ("b", b)):
        (tmp_path / side).mkdir()
        save_file({"layer.weight": w}, str(tmp_path / side / "model.safetensors"))
    assert main(["checkpoints", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    row = next(line for line in capsys.readouterr().out.splitlines() if "layer.weight" in line)
    assert "in row 17 of axis 0, A ≈ B × 0.667" in row and "everywhere" not in row
    top = compare_values(a, b).findings[0]
    assert (top.where["axis"], top.where["indices"]) == (0, [17])


def _bfloat16_mlp(seed: int):
    """A three-layer MLP (weights of std 0.2, as the corpus draws them) run in float32 and in
    bfloat16 widened back to float32 (torch)."""
    torch = pytest.importorskip("torch")

    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.Linear(256, 256), torch.nn.GELU(),
                            torch.nn.Linear(256, 64))
    for layer in m:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.normal_(layer.weight, std=0.2)
    x = torch.randn(16, 256)
    with torch.no_grad():
        ref = m(x).numpy()
        low = m.bfloat16()(x.bfloat16()).float().numpy()
    return low, ref


def test_a_bfloat16_run_under_its_preset_is_rounding_where_the_preset_fails_cancelling_sums():
    """Its verdict agrees with its findings: every difference is bfloat16 rounding of B's
    scale, so the bf16 preset failing near-zero outputs is a warning, not a bug; the same
    pair under float32's preset is still the bug it is there."""
    low, ref = _bfloat16_mlp(0)
    r = compare_values(low, ref, preset="bf16")
    assert r.tolerance.n_fail > 0 and r.verdict == "rounding"
    assert [(f.kind, f.severity) for f in r.findings] == [("tolerance", "warning"), ("precision", "info"),
                                                          ("rounding", "info")]
    strict = compare_values(low, ref)
    assert strict.verdict == "investigate" and strict.findings[0].kind == "precision"


def test_the_paste_back_line_for_a_dtype_mismatch_passes_with_check_dtype_off():
    """The line offered is the call that passes, and it does pass."""
    from perpendis.testing import assert_same

    ref, half, _ = _half_and_bfloat16_runs()
    line = compare_values(half, ref).to_dict()["paste_back"][0]
    assert line["passes"] and line["code"].endswith(", check_dtype=False)")
    atol = float(line["code"].split("atol=")[1].split(",")[0])
    rtol = float(line["code"].split("rtol=")[1].split(",")[0])
    assert_same(half, ref, atol=atol, rtol=rtol, check_dtype=False)
