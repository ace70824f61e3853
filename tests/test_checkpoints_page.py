"""The page's ``checkpoints`` request, answered natively as the worker answers it (files as readers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from perpendis import service
from perpendis.inputs.formats.buffer import view_reader

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "checkpoints"))
import make_conversion  # noqa: E402

RENAME = r"^model\.layers\.(\d+)\.=layers.\1."


def request_of(folders, **options):
    """A request and its files as the worker passes them: every file of each folder, by path inside it."""
    files, inputs = {}, {}
    for side, root in zip("ab", folders, strict=True):
        inputs[side] = []
        for path in sorted(root.rglob("*")):
            key = f"p{len(files)}"
            files[key] = view_reader(path.read_bytes())
            inputs[side].append({"name": path.relative_to(root).as_posix(), "data": key})
    return {"op": "checkpoints", "inputs": inputs, "options": options}, files


def test_page_request_gives_the_cli_report(tmp_path):
    from perpendis.checkpoints import compare_checkpoints, folder, parse_rule

    folders = make_conversion.make(tmp_path)
    request, files = request_of(folders, rename=[RENAME])
    seen = []
    answer = service.serve(request, {}, files, lambda stage, fraction: seen.append((stage, fraction)))
    assert answer["ok"], answer
    native = compare_checkpoints(folder(folders[0]), folder(folders[1]), rules=[parse_rule(RENAME)])
    assert answer["checkpoints"] == native.to_dict()
    assert answer["checkpoints"]["tensors"][0]["name"] == make_conversion.CORRUPTED
    assert seen and all(stage == "checkpoints" for stage, _ in seen) and seen[-1][1] == 1.0
    assert [f for _, f in seen] == sorted(f for _, f in seen)


def test_page_request_errors(tmp_path):
    folders = make_conversion.make(tmp_path)
    request, files = request_of(folders, rename=["(=x"])
    answer = service.serve(request, {}, files)
    assert not answer["ok"] and "rename rule" in answer["error"]["message"]
    request["inputs"]["b"] = []
    assert "choose a folder for B" in service.serve(request, {}, files)["error"]["message"]


def test_big_archive_is_a_problem_naming_it(tmp_path, monkeypatch):
    from perpendis.service import checkpoints as page

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    torch.save({"w": torch.ones(1000)}, tmp_path / "a" / "pytorch_model.bin")
    torch.save({"w": torch.ones(1000)}, tmp_path / "b" / "pytorch_model.bin")
    monkeypatch.setattr(page, "WHOLE_MAX_BYTES", 1000)
    request, files = request_of([tmp_path / "a", tmp_path / "b"])
    answer = service.serve(request, {}, files)
    problems = answer["checkpoints"]["problems"]
    assert [p["file"] for p in problems] == ["pytorch_model.bin", "pytorch_model.bin"]
    assert "read whole, more than the browser can hold" in problems[0]["message"]
