"""``python -m perpendis``: exit codes and output, run as a real subprocess on real files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PY = Path(__file__).resolve().parent.parent / "py"


def run(*args, stdin: bytes | None = None):
    env = {**os.environ, "PYTHONPATH": str(PY)}
    return subprocess.run(
        [sys.executable, "-m", "perpendis", *map(str, args)], input=stdin, capture_output=True, env=env, check=False
    )


@pytest.fixture
def arrays():
    b = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    a = b.copy()
    a[1, 2] = np.nextafter(a[1, 2], np.float32(np.inf))
    return a, b


def save(tmp_path, name, array):
    path = tmp_path / name
    np.save(path, array)
    return path


def test_rounding_exits_0(tmp_path, arrays):
    a, b = arrays
    out = run(save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b))
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().startswith("ROUNDING")


def test_identical_exits_0(tmp_path, arrays):
    out = run(save(tmp_path, "a.npy", arrays[1]), save(tmp_path, "b.npy", arrays[1]))
    assert out.returncode == 0 and out.stdout.decode().startswith("IDENTICAL")


def test_bug_exits_1_and_json_is_the_report(tmp_path, arrays):
    a, b = arrays
    a = a.copy()
    a[2] += 1
    out = run(save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b), "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["schema"] == 1 and data["verdict"] == "investigate"
    assert any(f["kind"] == "region" for f in data["findings"])


def test_unreadable_input_exits_2_with_one_line(tmp_path, arrays):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 4)
    for args in ((junk, save(tmp_path, "b.npy", arrays[1])), (tmp_path / "missing.npy", junk)):
        out = run(*args)
        err = out.stderr.decode()
        assert out.returncode == 2
        assert err.startswith("perpendis: A: ") and err.count("\n") == 1 and "Traceback" not in err


def test_text_files_of_numpy_repr(tmp_path, arrays):
    a, b = arrays
    (tmp_path / "a.txt").write_text(repr(a))
    (tmp_path / "b.txt").write_text(repr(b))
    out = run(tmp_path / "a.txt", tmp_path / "b.txt", "--preset", "fp32-tf32")
    assert out.returncode == 0, out.stderr
    assert "tolerance fp32-tf32" in out.stdout.decode()


def test_two_tensors_on_stdin(arrays):
    a, b = arrays
    a = a.copy()
    a[0, 0] = -a[0, 0]
    out = run("-", stdin=f"{a!r}\n{b!r}\n".encode())
    assert out.returncode == 1
    assert "first difference at (0, 0)" in out.stdout.decode()


@pytest.mark.slow
def test_tolerance_options_decide(tmp_path, arrays):
    a, b = arrays
    # Differences of 1e-3 of random sign: too big for the default atol, but no structure
    # (a constant offset would be systematic, and investigated at any tolerance).
    a = a + np.float32(1e-3) * np.where(np.random.default_rng(7).random(a.shape) < 0.5, -1, 1).astype(np.float32)
    pa, pb = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b)
    assert run(pa, pb).returncode == 1
    assert run(pa, pb, "--atol", "1e-2").returncode == 0
    bad = run(pa, pb, "--atol", "-1")
    assert bad.returncode == 2 and "atol" in bad.stderr.decode()


def test_reference_option(tmp_path):
    truth = np.random.default_rng(1).standard_normal(1000)
    a = (truth * (1 + 1e-3 * np.random.default_rng(2).standard_normal(1000))).astype(np.float32)
    b = truth.astype(np.float32)
    paths = save(tmp_path, "a.npy", a), save(tmp_path, "b.npy", b), save(tmp_path, "r.npy", truth)
    assert run(paths[0], paths[1]).returncode == 1
    out = run(paths[0], paths[1], "--ref", paths[2])
    assert out.returncode == 0, out.stdout
    assert "against ref" in out.stdout.decode()


def test_bisect_subcommand(tmp_path, arrays):
    a, b = arrays
    for side, scale in (("a", 1), ("b", 1)):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "0_conv.npy", a if side == "a" else b)
        np.save(tmp_path / side / "1_relu.npy", b * 2 * scale if side == "a" else b)
    out = run("bisect", tmp_path / "a", tmp_path / "b")
    assert out.returncode == 1, out.stderr
    assert "first failing layer: 1_relu" in (out.stdout + out.stderr).decode()


@pytest.mark.parametrize("command", [[], ["bisect"]])
def test_unknown_preset_exits_2_naming_the_presets(tmp_path, arrays, command):
    a, b = arrays
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pa, pb = save(tmp_path / "a", "x.npy", a), save(tmp_path / "b", "x.npy", b)
    inputs = [pa.parent, pb.parent] if command else [pa, pb]
    out = run(*command, *inputs, "--preset", "fp31")
    err = out.stderr.decode()
    assert out.returncode == 2 and len(err.strip().splitlines()) == 1, err
    assert "'fp31'" in err and "fp32-cpu" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [[], ["bisect"]])
def test_help_lists_the_presets_and_depth(command):
    from perpendis.numerics.tolerance import PRESETS

    out = run(*command, "--help")
    text = "".join(out.stdout.decode().split())  # help wraps lines, even at a name's hyphen
    assert out.returncode == 0
    assert all(name in text for name in PRESETS) and "--depth" in text
