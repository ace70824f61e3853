"""``python -m perpendis A B`` on every kind of bad file: exit status 2, exactly one line
on stderr saying what is wrong, nothing on stdout, no traceback.

Each bad file is made here by the library that writes the good kind, then broken the
way files really break (cut off, corrupted, hostile), so the CLI sees real bytes.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fuzzkit import zip_bomb
from numpy.lib import format as npformat

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "files"


def npy(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=allow_pickle)
    return out.getvalue()


def npz(**arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def flipped(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


def huge_shape() -> bytes:
    out = io.BytesIO()
    npformat.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": (10**6, 10**6)})
    return out.getvalue()


def plain_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("readme.txt", "not an array")
    return out.getvalue()


def safetensors_file() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    return struct.pack("<Q", len(header)) + header + np.arange(4, dtype="<f4").tobytes()


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def evil_torch_zip() -> bytes:
    """The committed real torch.save file with its pickle replaced by one that calls os.system."""
    source = zipfile.ZipFile(FIXTURES / "torch_tensor.pt")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            content = source.read(info)
            archive.writestr(info.filename, pickle.dumps(Evil(), 2) if info.filename.endswith("data.pkl") else content)
    return out.getvalue()


def onnx_wrong_size() -> bytes:
    onnx = pytest.importorskip("onnx")
    return onnx.TensorProto(dims=[3], data_type=1, raw_data=b"\x00" * 8).SerializeToString()


BAD_FILES = {
    "empty.npy": lambda: b"",
    "truncated.npy": lambda: npy(np.arange(10, dtype=np.float32))[:-7],
    "truncated_header.npy": lambda: npy(np.arange(10, dtype=np.float32))[:40],
    "pickled.npy": lambda: npy(np.array([{"a": 1}, None], dtype=object), allow_pickle=True),
    "structured.npy": lambda: npy(np.zeros(3, dtype=[("a", "<f4"), ("b", "<i2")])),
    "strings.npy": lambda: npy(np.array(["a", "bc"])),
    "huge_shape.npy": huge_shape,
    "corrupted.npz": lambda: flipped(npz(a=np.arange(64, dtype=np.float32)), 120),
    "truncated.npz": lambda: npz(a=np.arange(64, dtype=np.float32))[:-30],
    "bomb.npz": lambda: zip_bomb(64 << 20),
    "plain.zip": plain_zip,
    "truncated.safetensors": lambda: safetensors_file()[:-5],
    "huge_header.safetensors": lambda: struct.pack("<Q", 2**63) + safetensors_file()[8:],
    "evil.pt": evil_torch_zip,
    "legacy.pt": lambda: (FIXTURES / "torch_legacy.pt").read_bytes(),
    "module.pt": lambda: (FIXTURES / "torch_module.pt").read_bytes(),
    "raw.pkl": lambda: pickle.dumps({"a": [1.0, 2.0]}, 2),
    "wrong_size.pb": onnx_wrong_size,
    "truncated.json": lambda: b'[{"x": {"polygraphy_class": "ndarray", "array": "k05VTV',
    "summarised.txt": lambda: b"tensor([1.0000, 2.0000, ..., 9.0000])",
    "ragged.txt": lambda: b"[[1.0, 2.0], [3.0]]",
    "three.txt": lambda: b"tensor([1.]) tensor([2.]) tensor([3.])",
    "random.bin": lambda: bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)),
    "latin1.txt": lambda: "[1.5, 2.5 \u00b5]".encode("latin-1"),
}


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py")}
    return subprocess.run(
        [sys.executable, "-m", "perpendis", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def assert_one_line_error(proc: subprocess.CompletedProcess, prefix: str = "perpendis: ") -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(prefix) and len(lines[0]) > 30, lines[0]
    assert proc.stdout == ""
    return lines[0]


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.npy"
    path.write_bytes(npy(np.arange(4, dtype=np.float32)))
    return path


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_as_a_exits_2_with_one_line(name, tmp_path, good):
    bad = tmp_path / name
    bad.write_bytes(BAD_FILES[name]())
    line = assert_one_line_error(run_cli(bad.name, good.name, cwd=tmp_path))
    assert "A" in line.split(":")[1]


def test_bad_file_as_b_and_as_ref_names_the_side(tmp_path, good):
    bad = tmp_path / "truncated.npy"
    bad.write_bytes(BAD_FILES["truncated.npy"]())
    assert "B" in assert_one_line_error(run_cli(good.name, bad.name, cwd=tmp_path)).split(":")[1]
    assert "ref" in assert_one_line_error(run_cli(good.name, good.name, "--ref", bad.name, cwd=tmp_path)).split(":")[1]


def test_missing_file_and_directory_exit_2(tmp_path, good):
    assert_one_line_error(run_cli("does-not-exist.npy", good.name, cwd=tmp_path))
    (tmp_path / "folder").mkdir()
    assert_one_line_error(run_cli("folder", good.name, cwd=tmp_path))


def test_bad_standard_input_exits_2(tmp_path, good):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py")}
    proc = subprocess.run(
        [sys.executable, "-m", "perpendis", "-", good.name], cwd=tmp_path, env=env, input=b"array([1.0, oops])",
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert_one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(),
                                                      proc.stderr.decode()))  # fmt: skip


BISECTED = ["truncated.npy", "corrupted.npz", "bomb.npz", "evil.pt", "truncated.json", "ragged.txt"]


@pytest.mark.parametrize("name", BISECTED)
def test_bisect_with_a_bad_file_exits_2_with_one_line(name, tmp_path):
    bad = tmp_path / name
    bad.write_bytes(BAD_FILES[name]())
    (tmp_path / "good.npz").write_bytes(npz(a=np.arange(4, dtype=np.float32)))
    assert_one_line_error(run_cli("bisect", bad.name, "good.npz", cwd=tmp_path), prefix="perpendis bisect: ")
