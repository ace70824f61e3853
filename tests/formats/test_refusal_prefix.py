"""A huge file that is no tensor file is refused from its first bytes, never read whole.

Each file is 3 GiB and sparse (a few bytes of a family's magic, then ``os.truncate``), the
way a mislabelled or broken download looks to the readers.  Every byte read from it is
counted (``open`` and the checkpoints' memory-mapped readers wrapped), and each refusal
must name what is wrong having read at most the 64 KiB prefix (and a zip's 64 KiB tail).
Bad prefixes are refused; good files whose checks run past the prefix still load.
"""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path

import numpy as np
import pytest
from perpendis.checkpoints import folder
from perpendis.checkpoints import run as checkpoints_run
from perpendis.checkpoints.inputs import scan
from perpendis.errors import InputError
from perpendis.inputs.formats.onnx_model import check_model
from perpendis.inputs.formats.sniff import PREFIX_BYTES, ZIP_TAIL_BYTES
from perpendis.inputs.load import load_path
from perpendis.layers.bisect import model_info

from bench.refusal import BAD_PREFIXES, GARBAGE
from bench.refusal import sparse as bench_sparse

HUGE = 3 * 2**30


def sparse(path: Path, head: bytes, size: int = HUGE) -> Path:
    return bench_sparse(path, head, size)


class Counted:
    """Bytes read from the files under ``root``, through ``open``, while the test runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.read = 0
        real = builtins.open

        def counting_open(file, mode="r", *args, **kwargs):
            f = real(file, mode, *args, **kwargs)
            if "b" in mode and str(file).startswith(str(root)):
                return _CountingFile(f, self)
            return f

        monkeypatch.setattr(builtins, "open", counting_open)


class _CountingFile(io.RawIOBase):
    def __init__(self, f, counted: Counted) -> None:
        self.f, self.counted = f, counted

    def read(self, n=-1):
        data = self.f.read(n)
        self.counted.read += len(data)
        return data

    def readinto(self, buffer):
        n = self.f.readinto(buffer)
        self.counted.read += n or 0
        return n

    def seek(self, *args):
        return self.f.seek(*args)

    def fileno(self):
        return self.f.fileno()

    def close(self):
        self.f.close()
        super().close()

    def __exit__(self, *exc):
        self.close()


SAID = {
    "npy": "the .npy header is malformed",
    "npz": "end-of-central-directory record is not in its last 64 KiB",
    "safetensors": "the safetensors header is not valid JSON",
    "torchsave": "legacy torch.save file",
    "onnx_pb": "the file is in no form Perpendis understands",
    "polygraphy": "the Polygraphy file is not valid JSON",
    "pickle": "the file is a Python pickle",
}
CASES = {family: (BAD_PREFIXES[family], said) for family, said in SAID.items()}


@pytest.mark.parametrize("family", sorted(CASES))
def test_a_huge_file_with_a_bad_prefix_is_refused_from_the_prefix(tmp_path, monkeypatch, family):
    head, said = CASES[family]
    bad = sparse(tmp_path / f"{family}.bin", head)
    counted = Counted(monkeypatch, tmp_path)
    with pytest.raises(InputError) as refused:
        load_path(bad)
    assert said in refused.value.message
    limit = PREFIX_BYTES + (ZIP_TAIL_BYTES if family == "npz" else 0)
    assert 0 < counted.read <= limit


def test_huge_text_is_refused_from_its_size(tmp_path, monkeypatch):
    bad = tmp_path / "huge.txt"
    with bad.open("wb") as f:
        f.write(b"tensor([1.0, 2.0, 3.0])\n" * 3000)
    os.truncate(bad, HUGE)  # the rest are NUL bytes: the prefix alone reads as text
    counted = Counted(monkeypatch, tmp_path)
    with pytest.raises(InputError, match="more than the limit TEXT_MAX_CHARS"):
        load_path(bad)
    assert counted.read <= PREFIX_BYTES


def test_a_truncated_npy_is_refused_from_its_header(tmp_path, monkeypatch):
    good = tmp_path / "big.npy"
    np.save(good, np.zeros(200_000, np.float32))
    os.truncate(good, 100_000)
    counted = Counted(monkeypatch, tmp_path)
    said = r"truncated: its header declares 200000 elements of 4 bytes \(800000 bytes\) but only 99872 bytes follow"
    with pytest.raises(InputError, match=said):
        load_path(good)
    assert counted.read <= PREFIX_BYTES


def test_files_whose_checks_run_past_the_prefix_still_load(tmp_path):
    """A safetensors header longer than the prefix, a Polygraphy-like JSON and a zip are let
    through by the prefix, for their readers to read whole."""
    save_file = pytest.importorskip("safetensors.numpy").save_file

    many = {f"layer.{i:05d}.weight": np.full(2, i, np.float32) for i in range(3000)}
    save_file(many, str(tmp_path / "many.safetensors"))
    header = int.from_bytes((tmp_path / "many.safetensors").read_bytes()[:8], "little")
    assert header > PREFIX_BYTES
    assert len(load_path(tmp_path / "many.safetensors")) == 3000
    np.savez(tmp_path / "pair.npz", a=np.ones(3), b=np.zeros(2))
    assert [t.name for t in load_path(tmp_path / "pair.npz")] == ["a", "b"]


def test_a_huge_onnx_model_of_garbage_is_refused_from_the_prefix(tmp_path, monkeypatch):
    bad = sparse(tmp_path / "model.onnx", BAD_PREFIXES["onnx_pb"])
    counted = Counted(monkeypatch, tmp_path)
    with pytest.raises(InputError, match="not an ONNX model: wire type 7"):
        check_model(bad)
    with pytest.raises(InputError, match="not an ONNX model"):
        model_info(bad, ["a"], ["b"], {}, {})
    assert counted.read <= 2 * PREFIX_BYTES
    good = Path(__file__).resolve().parent.parent / "fixtures" / "export" / "cnn.onnx"
    check_model(good)  # a real model passes


def test_a_huge_onnx_model_whose_first_field_runs_past_the_end_is_refused(tmp_path):
    bad = sparse(tmp_path / "model.onnx", b"\x3a\xff\xff\xff\xff\x7f", size=1000)  # graph, 34 GB long
    with pytest.raises(InputError, match="runs past the end"):
        check_model(bad)


class CountedReaders:
    """Bytes asked of the checkpoints' memory-mapped readers."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read = 0
        real = checkpoints_run.map_reader

        def counting(path):
            read, size = real(path)

            def counted(offset, length):
                data = read(offset, length)
                self.read += len(data)
                return data

            return counted, size

        monkeypatch.setattr(checkpoints_run, "map_reader", counting)


@pytest.mark.parametrize(
    ("name", "head", "said"),
    [
        ("model.gguf", BAD_PREFIXES["gguf"], "GGUF"),
        (".metadata", BAD_PREFIXES["distcp"], "over the 67108864-byte cap on pickles"),
    ],
)
def test_a_huge_checkpoint_file_with_a_bad_prefix_is_a_problem_read_from_the_prefix(
    tmp_path, monkeypatch, name, head, said
):
    sparse(tmp_path / "ckpt" / name, head)
    if name == ".metadata":
        (tmp_path / "ckpt" / "__0_0.distcp").write_bytes(GARBAGE)
    counted = CountedReaders(monkeypatch)
    checkpoint = folder(tmp_path / "ckpt")
    found = scan(checkpoint.names, checkpoint.open)
    assert any(said in p.message for p in found.problems), [p.message for p in found.problems]
    assert counted.read <= PREFIX_BYTES


def test_a_small_metadata_that_is_no_pickle_is_refused_from_its_first_bytes(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / ".metadata").write_bytes(b"not a pickle at all")
    (tmp_path / "ckpt" / "__0_0.distcp").write_bytes(GARBAGE)
    checkpoint = folder(tmp_path / "ckpt")
    found = scan(checkpoint.names, checkpoint.open)
    assert any("does not start as one" in p.message for p in found.problems)
