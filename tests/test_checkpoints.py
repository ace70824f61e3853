"""Whole checkpoints compared tensor by tensor, on files written by torch, safetensors and numpy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.checkpoints import (
    Resume,
    compare_checkpoints,
    folder,
    parse_rule,
    shards,
)
from perpendis.checkpoints.rename import rename
from perpendis.errors import InputError

ml_dtypes = pytest.importorskip("ml_dtypes")
torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
from safetensors.numpy import save_file as save_numpy  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "checkpoints"))
import make_conversion  # noqa: E402

RULE = parse_rule(r"^model\.layers\.(\d+)\.=layers.\1.")


@pytest.fixture(scope="module")
def conversion(tmp_path_factory):
    return make_conversion.make(tmp_path_factory.mktemp("conversion"))


def rows_by_name(report):
    return {r.name: r for r in report.tensors}


def test_real_conversion_every_tensor_is_recognised(conversion):
    fp32, bf16 = conversion
    report = compare_checkpoints(folder(fp32), folder(bf16), rules=[RULE])
    rows = rows_by_name(report)
    assert report.tensors[0].name == make_conversion.CORRUPTED  # worst first
    assert rows[make_conversion.CORRUPTED].verdict == "investigate"
    assert rows["model.position_ids"].verdict == "identical"
    floats = [r for r in report.tensors if r.dtype_a == "float32"]
    assert all(r.dtype_b == "bfloat16" for r in floats)
    converted = [r for r in floats if r.name != make_conversion.CORRUPTED]
    assert converted
    assert all(r.verdict == "converted" and r.description == "exact rounding to bfloat16" for r in converted)
    s = report.summary
    assert (s["identical"], s["rounding_equivalent"], s["different"], s["only_a"], s["only_b"]) == (
        1, len(converted), 1, 0, 0,
    )  # fmt: skip
    on_disk = sum(
        t.numel() * t.element_size() for d in conversion for f in d.glob("*.safetensors") for t in load_file(f).values()
    )
    assert s["bytes_compared"] == on_disk
    assert report.must_investigate
    a = {k: v for f in fp32.glob("*.safetensors") for k, v in load_file(f).items()}
    last_row = a["model." + make_conversion.CORRUPTED][-1].to(torch.bfloat16)
    corrupted = rows[make_conversion.CORRUPTED]
    assert corrupted.n_bitwise_diff == int((last_row != 0).sum()) > 0
    assert corrupted.shape_a == list(a["model." + make_conversion.CORRUPTED].shape)


def test_converted_agrees_with_ml_dtypes_rounding(conversion):
    """Differential: a row is "converted" exactly when ml_dtypes' float32 → bfloat16 cast gives B's bits."""
    fp32, bf16 = conversion
    report = compare_checkpoints(folder(fp32), folder(bf16), rules=[RULE])
    a = {k: v for f in fp32.glob("*.safetensors") for k, v in load_file(f).items()}
    b = {k: v for f in bf16.glob("*.safetensors") for k, v in load_file(f).items()}
    for row in report.tensors:
        if row.dtype_a != "float32":
            continue
        ta, tb = a[row.a_name].numpy(), b[row.b_name].view(torch.int16).numpy().view(np.uint16)
        peer = np.array_equal(ta.astype(ml_dtypes.bfloat16).view(np.uint16), tb)
        assert (row.verdict == "converted") == peer, row.name


def test_truncating_conversion_is_rounding_not_exact(tmp_path):
    """A bfloat16 copy made by dropping the low bits (round toward zero) is not the exact rounding."""
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    truncated = (x.view(np.uint32) >> 16).astype(np.uint16)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    save_numpy({"w": x}, str(tmp_path / "a" / "m.safetensors"))
    bf16 = torch.from_numpy(truncated.view(np.int16)).view(torch.bfloat16)
    save_file({"w": bf16}, str(tmp_path / "b" / "m.safetensors"))
    row = compare_checkpoints(folder(tmp_path / "a"), folder(tmp_path / "b")).tensors[0]
    assert row.verdict == "rounding" and row.max_ulp == 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=200))
def test_exact_rounding_property(tmp_path_factory, words):
    """Any float32 bits (NaN, inf, subnormals included) cast by torch to bfloat16 are "converted" or identical."""
    root = tmp_path_factory.mktemp("prop")
    x = torch.from_numpy(np.array(words, dtype=np.uint32).view(np.float32).copy())
    for side, t in (("a", x), ("b", x.to(torch.bfloat16))):
        (root / side).mkdir()
        save_file({"w": t}, str(root / side / "m.safetensors"))
    row = compare_checkpoints(folder(root / "a"), folder(root / "b")).tensors[0]
    assert row.verdict == "converted"


def test_torch_save_shards_with_index(tmp_path):
    torch.manual_seed(1)
    state = {f"h.{i}.weight": torch.randn(16, 8) for i in range(4)}
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
    weight_map = {}
    for k, names in enumerate((["h.0.weight", "h.1.weight"], ["h.2.weight", "h.3.weight"]), 1):
        file = f"pytorch_model-0000{k}-of-00002.bin"
        torch.save({n: state[n] for n in names}, tmp_path / "a" / file)
        weight_map |= dict.fromkeys(names, file)
    (tmp_path / "a" / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    changed = dict(state)
    changed["h.3.weight"] = state["h.3.weight"] * 1.5
    save_file(changed, str(tmp_path / "b" / "model.safetensors"))
    report = compare_checkpoints(folder(tmp_path / "a"), folder(tmp_path / "b"))
    rows = rows_by_name(report)
    assert [rows[f"h.{i}.weight"].verdict for i in range(4)] == ["identical"] * 3 + ["investigate"]
    assert rows["h.0.weight"].file_a == "pytorch_model-00001-of-00002.bin"


def test_npy_and_npz_folders(tmp_path):
    rng = np.random.default_rng(2)
    w, v = rng.standard_normal((10, 3)).astype(np.float32), rng.standard_normal(7)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    np.save(tmp_path / "a" / "w.npy", w)
    np.save(tmp_path / "a" / "v.npy", v)
    np.savez(tmp_path / "b" / "all.npz", w=w, v=v + 1e-16)
    rows = rows_by_name(compare_checkpoints(folder(tmp_path / "a"), folder(tmp_path / "b")))
    assert rows["w"].verdict == "identical"
    assert rows["v"].verdict == "rounding"


def test_list_of_shard_files(conversion):
    fp32, bf16 = conversion
    files = sorted(fp32.glob("*.safetensors"))[:2]
    report = compare_checkpoints(shards(files), folder(bf16), rules=[RULE])
    # Without the third shard (nor the index) its tensors are on B's side only, and it is missing.
    assert report.only_b and not report.only_a
    assert any("model-00003-of-00003.safetensors is missing" in p.message for p in report.problems)


# ---------------------------------------------------------------------------------------
# Bad input: each a problem naming the file, the rest still compared


@pytest.fixture
def two(tmp_path):
    """A: three numbered shards with an index; B: the same tensors in one file."""
    rng = np.random.default_rng(3)
    state = {f"t{i}": rng.standard_normal(100 + i).astype(np.float32) for i in range(6)}
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    weight_map = {}
    for k in range(3):
        file = f"model-0000{k + 1}-of-00003.safetensors"
        names = [f"t{2 * k}", f"t{2 * k + 1}"]
        save_numpy({n: state[n] for n in names}, str(a / file))
        weight_map |= dict.fromkeys(names, file)
    (a / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    save_numpy(state, str(b / "model.safetensors"))
    return a, b


def check_rest_compared(report, broken: set[str]):
    rows = rows_by_name(report)
    for name, row in rows.items():
        assert row.verdict == ("error" if name in broken else "identical"), name
    assert set(rows) == {f"t{i}" for i in range(6)}
    assert report.must_investigate


def test_index_names_a_file_that_is_not_there(two):
    a, b = two
    (a / "model-00002-of-00003.safetensors").unlink()
    report = compare_checkpoints(folder(a), folder(b))
    (problem,) = report.problems
    assert problem.file == "model-00002-of-00003.safetensors" and problem.side == "a"
    assert "names the shard model-00002-of-00003.safetensors, which is not in the checkpoint" in problem.message
    check_rest_compared(report, {"t2", "t3"})
    assert "model-00002-of-00003.safetensors" in rows_by_name(report)["t2"].description


def test_missing_numbered_shard_without_index(two):
    a, b = two
    (a / "model.safetensors.index.json").unlink()
    (a / "model-00003-of-00003.safetensors").unlink()
    report = compare_checkpoints(folder(a), folder(b))
    (problem,) = report.problems
    assert problem.file == "model-00003-of-00003.safetensors"
    assert "missing: 2 of the 3 shards are here" in problem.message
    assert report.only_b == ["t4", "t5"]
    assert {r.verdict for r in report.tensors} == {"identical"}


def test_truncated_shard(two):
    a, b = two
    shard = a / "model-00001-of-00003.safetensors"
    shard.write_bytes(shard.read_bytes()[:-10])
    report = compare_checkpoints(folder(a), folder(b))
    (problem,) = report.problems
    assert problem.file == "model-00001-of-00003.safetensors" and "truncated" in problem.message
    check_rest_compared(report, {"t0", "t1"})


def test_tensor_name_in_two_shards(two):
    a, b = two
    (a / "model.safetensors.index.json").unlink()
    save_numpy({"t3": np.zeros(103, np.float32)}, str(a / "extra.safetensors"))
    report = compare_checkpoints(folder(a), folder(b))
    (problem,) = report.problems
    assert "'t3' is in 2 files: extra.safetensors, model-00002-of-00003.safetensors" in problem.message
    check_rest_compared(report, {"t3"})


def test_index_places_a_tensor_in_a_shard_that_lacks_it(two):
    a, b = two
    index = json.loads((a / "model.safetensors.index.json").read_text())
    index["weight_map"]["t9"] = "model-00001-of-00003.safetensors"
    (a / "model.safetensors.index.json").write_text(json.dumps(index))
    report = compare_checkpoints(folder(a), folder(b))
    (problem,) = report.problems
    assert "places t9 in model-00001-of-00003.safetensors, which does not hold it" in problem.message
    assert rows_by_name(report)["t9"].verdict == "error"


def test_shape_mismatch_is_investigated(two):
    a, b = two
    save_numpy({"t0": np.zeros((2, 50), np.float32)}, str(b / "model.safetensors"))
    row = rows_by_name(compare_checkpoints(folder(a), folder(b)))["t0"]
    assert row.verdict == "investigate" and "A has shape [100] and B [2, 50]" in row.description


def test_no_tensor_files_is_an_input_error(tmp_path, two):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(InputError, match="A holds no tensor files"):
        compare_checkpoints(folder(tmp_path / "empty"), folder(two[1]))


# ---------------------------------------------------------------------------------------
# Rename rules and resuming


def test_rename_rules():
    assert rename("model.layers.12.mlp.w", [RULE]) == "layers.12.mlp.w"
    assert rename("lm_head.weight", [RULE]) == "lm_head.weight"
    for bad in ("noequals", "(unclosed=x", r"^a=\2"):
        with pytest.raises(InputError, match="rename"):
            parse_rule(bad)


def test_names_renamed_alike_are_not_paired(two):
    a, b = two
    report = compare_checkpoints(folder(a), folder(b), rules=[parse_rule(r"^t[01]$=t")])
    rows = rows_by_name(report)
    assert rows["t"].verdict == "error" and "t0, t1 are all renamed to 't'" in rows["t"].description


def test_resume_skips_finished_tensors_and_gives_the_same_report(two, tmp_path):
    a, b = two
    path = tmp_path / "rows.jsonl"
    first = Resume(path)
    full = compare_checkpoints(folder(a), folder(b), resume=first)
    first.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 6
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])  # interrupted while writing the fourth
    planned = []
    again = Resume(path)
    resumed = compare_checkpoints(folder(a), folder(b), resume=again, planned=lambda n, nbytes: planned.append(n))
    again.close()
    assert planned == [3]
    assert [r.to_dict() for r in resumed.tensors] == [r.to_dict() for r in full.tensors]
    assert resumed.summary == full.summary
