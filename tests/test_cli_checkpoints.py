"""``python -m perpendis checkpoints``: exit codes, JSON, resuming, and saying when Dask is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from perpendis.cli import checkpoints as cli_checkpoints
from perpendis.cli.main import main

pytest.importorskip("torch")
pytest.importorskip("safetensors")
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "checkpoints"))
import make_conversion

RENAME = r"^model\.layers\.(\d+)\.=layers.\1."


@pytest.fixture(scope="module")
def conversion(tmp_path_factory):
    return make_conversion.make(tmp_path_factory.mktemp("cli"))


def test_json_report_and_exit_1_for_the_corrupted_conversion(conversion, capsys):
    fp32, bf16 = conversion
    code = main(["checkpoints", str(fp32), str(bf16), "--rename", RENAME, "--single", "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert set(out) >= {"tensors", "only_a", "only_b", "summary"}
    first = out["tensors"][0]
    assert (first["name"], first["verdict"]) == (make_conversion.CORRUPTED, "investigate")
    assert {"name", "verdict", "max_ulp", "max_abs_diff", "fraction_fail", "dtype_a", "dtype_b"} <= set(first)
    assert out["summary"]["different"] == 1 and out["summary"]["converted"] == len(out["tensors"]) - 2


def test_exit_0_when_every_tensor_agrees(conversion, capsys):
    fp32, _ = conversion
    assert main(["checkpoints", str(fp32), str(fp32), "--single", "--no-progress"]) == 0
    assert "0 different" in capsys.readouterr().out


def test_without_the_rename_rule_the_layers_are_on_one_side_only(conversion, capsys):
    fp32, bf16 = conversion
    assert main(["checkpoints", str(fp32), str(bf16), "--single", "--no-progress"]) == 1
    assert "only in A (48)" in capsys.readouterr().out


def test_bad_input_exits_2_with_one_line(tmp_path, conversion, capsys):
    assert main(["checkpoints", str(tmp_path / "nowhere"), str(conversion[1]), "--single"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perpendis checkpoints:") and "nowhere is neither a folder nor a file" in err
    assert main(["checkpoints", str(conversion[0]), str(conversion[1]), "--rename", "(=x", "--single"]) == 2
    assert "rename rule" in capsys.readouterr().err


def test_one_process_when_dask_is_missing(conversion, capsys, monkeypatch):
    monkeypatch.setattr(cli_checkpoints, "available", lambda: False)
    fp32, bf16 = conversion
    assert main(["checkpoints", str(fp32), str(bf16), "--rename", RENAME, "--no-progress"]) == 1
    assert "one process does the work: Dask is not installed" in capsys.readouterr().err
    assert main(["checkpoints", str(fp32), str(bf16), "--workers", "2"]) == 2
    assert "need Dask" in capsys.readouterr().err


def test_resume_file(conversion, tmp_path, capsys):
    fp32, bf16 = conversion
    rows = tmp_path / "rows.jsonl"
    args = ["checkpoints", str(fp32), str(bf16), "--rename", RENAME, "--single", "--json", "--no-progress"]
    main([*args, "--resume", str(rows)])
    first = json.loads(capsys.readouterr().out)
    assert len(rows.read_text().splitlines()) == len(first["tensors"])
    main([*args, "--resume", str(rows)])
    again = json.loads(capsys.readouterr().out)
    assert again["tensors"] == first["tensors"] and again["summary"] == first["summary"]
    assert any("compared by an earlier run" in n for n in again["notes"])


def test_the_cli_asks_the_service_and_answers_as_the_page(conversion, capsys, monkeypatch):
    """``perpendis checkpoints`` sends its opened checkpoints to the service's ``checkpoints``
    op: its JSON is the page's answer to the same folders' files sent as readers."""
    from perpendis import service
    from perpendis.inputs.formats.buffer import view_reader
    from perpendis.service import handle

    asked = []
    real = handle._run
    monkeypatch.setattr(handle, "_run", lambda s, request, *a: asked.append(request) or real(s, request, *a))
    code = main(["checkpoints", *map(str, conversion), "--rename", RENAME, "--single", "--json", "--no-progress"])
    mine = json.loads(capsys.readouterr().out)
    assert code == 1 and [type(r).__name__ for r in asked] == ["CheckpointsRequest"]
    files, inputs = {}, {}
    for side, root in zip("ab", conversion, strict=True):
        inputs[side] = []
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            files[f"p{len(files)}"] = view_reader(path.read_bytes())
            inputs[side].append({"name": path.relative_to(root).as_posix(), "data": f"p{len(files) - 1}"})
    page = service.serve({"op": "checkpoints", "inputs": inputs, "options": {"rename": [RENAME]}}, {}, files)
    assert page["ok"] and mine == page["checkpoints"]
