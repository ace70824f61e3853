"""Folders given where a checkpoint or a tensor is expected: an empty folder, one of unrelated
files and one holding a single tensor file each get their own sentence, from the plain
command and from ``checkpoints``, with exit 2 and never "a sharded checkpoint".

Real folders, written by numpy and safetensors in tmp_path.
"""

from __future__ import annotations

import numpy as np
import pytest
from perpendis.checkpoints import compare_checkpoints, folder
from perpendis.checkpoints.contents import contents
from perpendis.cli.main import main
from perpendis.errors import InputError

save_file = pytest.importorskip("safetensors.numpy").save_file


@pytest.fixture
def folders(tmp_path):
    """``empty``, ``unrelated`` (a README and notes), ``single`` (one .safetensors),
    ``sharded`` (two numbered shards) and a tensor file ``x.npy``."""
    (tmp_path / "empty").mkdir()
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    (unrelated / "README").write_text("weights are elsewhere\n")
    (unrelated / "notes.txt").write_text("see the wiki\n")
    (unrelated / ".hidden").write_text("")
    single = tmp_path / "single"
    single.mkdir()
    save_file({"w": np.arange(6, dtype=np.float32)}, str(single / "model.safetensors"))
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    for i in (1, 2):
        save_file({f"w{i}": np.ones(4, np.float32)}, str(sharded / f"model-0000{i}-of-00002.safetensors"))
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32))
    return tmp_path


def test_the_four_kinds_of_folder(folders):
    def kind(name: str) -> str:
        return contents(p.name for p in (folders / name).iterdir()).kind

    assert [kind(n) for n in ("empty", "unrelated", "single", "sharded")] == ["empty", "unrelated", "single", "several"]
    assert contents(p.name for p in (folders / "unrelated").iterdir()).others == ["README", "notes.txt"]


@pytest.mark.parametrize("side", ["A", "B"])
def test_checkpoints_names_an_empty_folder(folders, capsys, side):
    pair = [folders / "empty", folders / "single"]
    if side == "B":
        pair.reverse()
    assert main(["checkpoints", *map(str, pair), "--single", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    said = "is an empty folder: there is no tensor file in it to compare"
    assert err == f"perpendis checkpoints: {side}: {folders / 'empty'} {said}"


def test_checkpoints_names_the_unrelated_files(folders, capsys):
    assert main(["checkpoints", str(folders / "single"), str(folders / "unrelated"), "--single", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"B: {folders / 'unrelated'} holds no tensor files, only README, notes.txt;" in err
    assert ".hidden" not in err and len(err.strip().splitlines()) == 1


def test_the_library_refuses_the_same_folders(folders):
    with pytest.raises(InputError, match="A is an empty folder"):
        compare_checkpoints(folder(folders / "empty"), folder(folders / "single"))
    with pytest.raises(InputError, match=r"B holds no tensor files, only README, notes\.txt"):
        compare_checkpoints(folder(folders / "single"), folder(folders / "unrelated"))


def test_a_single_file_checkpoint_folder_is_compared(folders, capsys):
    assert main(["checkpoints", str(folders / "single"), str(folders / "single"), "--single", "--no-progress"]) == 0
    assert "1 identical" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("empty", "is an empty folder: there is no tensor file in it to compare"),
        ("unrelated", "holds no tensor files, only README, notes.txt;"),
        ("single", "is a folder holding one tensor file, model.safetensors: give the file itself"),
        ("sharded", "is a sharded checkpoint"),
    ],
)
def test_the_plain_command_says_what_each_folder_is(folders, capsys, name, said):
    assert main([str(folders / name), str(folders / "x.npy")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perpendis: {folders / name} {said}")
    assert len(err.strip().splitlines()) == 1
    if name != "sharded":
        assert "sharded" not in err


def test_the_single_file_is_offered_in_its_place(folders, capsys):
    assert main([str(folders / "x.npy"), str(folders / "single")]) == 2
    assert f"`perpendis {folders / 'x.npy'} {folders / 'single' / 'model.safetensors'}`" in capsys.readouterr().err
    assert main([str(folders / "single" / "model.safetensors"), str(folders / "x.npy")]) == 0  # the line it offers runs
