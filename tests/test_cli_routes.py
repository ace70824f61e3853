"""The command line as a whole: --version, the main help naming every command, the line to run
when a file belongs to another command, exit 3 for Perpendis' own failures, and a closed pipe.

Run as real subprocesses on files written by numpy, safetensors, torch.onnx and the
checkpoint fixture's script.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from perpendis.cli import main as cli
from perpendis.cli.main import COMMANDS, main
from perpendis.service import judge

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / "py"
MODELS = ROOT / "tests" / "fixtures" / "models"
EXPORT = ROOT / "tests" / "fixtures" / "export"
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "checkpoints"))


def run(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PY)}
    return subprocess.run([sys.executable, "-m", "perpendis", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120, check=False)


@pytest.fixture(scope="module")
def conversion(tmp_path_factory):
    """Two checkpoints written by torch and safetensors: only the tests that use them need both."""
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    import make_conversion

    return make_conversion.make(tmp_path_factory.mktemp("routes"))


def quoted_line(stderr: str) -> list[str]:
    """The command between the first pair of backquotes, split as a shell would."""
    return shlex.split(stderr.split("`")[1])


def test_version():
    import perpendis

    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"perpendis {perpendis.__version__}"


def test_main_help_lists_every_command():
    out = run("--help")
    assert out.returncode == 0
    for name in ("bisect", "capture", "check-export", "checkpoints"):
        assert name in COMMANDS and f"perpendis {name} " in out.stdout
    assert "--open" in out.stdout and "--debug" in out.stdout


def test_every_listed_command_has_its_own_help():
    for name in COMMANDS:
        if name:
            out = run(name, "--help")
            assert out.returncode == 0 and out.stdout.startswith("usage:"), (name, out.stderr)


def test_an_onnx_model_names_check_export_and_capture():
    out = run(EXPORT / "cnn.onnx", MODELS / "cnn.ort.npy")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line = quoted_line(out.stderr)
    assert line[:3] == ["perpendis", "check-export", str(EXPORT / "cnn.onnx")]
    assert "perpendis capture " + str(EXPORT / "cnn.onnx") in out.stderr


def test_two_captures_name_bisect_with_the_exact_line_that_works():
    a, b = MODELS / "cnn.capture.ort_bug.npz", MODELS / "cnn.capture.torch.npz"
    out = run(a, b)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    line = quoted_line(out.stderr)
    assert line == ["perpendis", "bisect", str(a), str(b)]
    routed = run(*line[1:])  # the line as printed runs, and finds the bug
    assert routed.returncode == 1 and "first failing" in routed.stdout + routed.stderr


def test_a_capture_against_one_tensor_still_mentions_bisect():
    out = run(MODELS / "cnn.capture.ort.safetensors", MODELS / "cnn.ort.npy")
    assert out.returncode == 2 and "holds 11 tensors" in out.stderr and "perpendis bisect A B" in out.stderr


# One route in the quick lane; the others each run the CLI in a subprocess on the same checkpoint.
@pytest.mark.parametrize("given", ["folder", pytest.param("index", marks=pytest.mark.slow),
                                   pytest.param("shard", marks=pytest.mark.slow)])
def test_a_sharded_checkpoint_names_checkpoints(conversion, given):
    fp32, bf16 = conversion
    pick = {"folder": lambda d: d, "index": lambda d: d / "model.safetensors.index.json",
            "shard": lambda d: next(d.glob("model-00001-of-*.safetensors"))}[given]
    out = run(pick(fp32), pick(bf16))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line = quoted_line(out.stderr)
    assert line == ["perpendis", "checkpoints", str(fp32), str(bf16)]
    routed = run(*line[1:], "--single", "--no-progress")
    assert routed.returncode == 1 and "model.embed.weight" in routed.stdout  # the command ran on them


def test_a_crash_exits_3_with_one_line_and_the_traceback_only_with_debug(monkeypatch, capsys, tmp_path):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug in Perpendis")

    monkeypatch.setattr(judge, "prepare", broken)  # the service's judging of the pair the CLI asked about
    inputs = [str(MODELS / "cnn.ort.npy"), str(MODELS / "cnn.torch.npy")]
    assert main(inputs) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ZeroDivisionError: a bug in Perpendis" in err and "--debug" in err
    assert "Traceback" not in err
    assert main([*inputs, "--debug"]) == 3
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_a_crash_in_checkpoints_exits_3_too(monkeypatch, capsys, conversion):
    def broken(*args, **kwargs):
        raise KeyError("shard")

    from perpendis.service import checkpoints

    monkeypatch.setattr(checkpoints, "begin_checkpoints", broken)  # the CLI's checkpoints run in the service
    assert main(["checkpoints", *map(str, conversion), "--single", "--no-progress"]) == 3
    assert "internal error" in capsys.readouterr().err


def closed_pipe(*args: object) -> subprocess.CompletedProcess[str]:
    """The command with its stdout a pipe nobody reads any more, as ``| head`` leaves it."""
    env = {**os.environ, "PYTHONPATH": str(PY)}
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "perpendis", *map(str, args)], stdout=write,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=120, check=False)
    finally:
        os.close(write)


def test_json_into_a_closed_pipe_ends_quietly(conversion, tmp_path):
    rng = np.random.default_rng(0)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    np.save(tmp_path / "a.npy", b + 1)
    np.save(tmp_path / "b.npy", b)
    for args in (
        (tmp_path / "a.npy", tmp_path / "b.npy", "--json"),
        ("bisect", MODELS / "cnn.capture.ort_bug.npz", MODELS / "cnn.capture.torch.npz", "--json"),
        ("checkpoints", *conversion, "--json", "--single", "--no-progress"),
    ):
        out = closed_pipe(*args)
        assert out.returncode == 141, (args, out.stderr)
        assert "Traceback" not in out.stderr and "BrokenPipeError" not in out.stderr, out.stderr


# safetensors writes 0600 itself: the case to watch; .npz (two more ONNX Runtime subprocesses) is slow.
@pytest.mark.parametrize("suffix", [".safetensors", pytest.param(".npz", marks=pytest.mark.slow)])
def test_capture_files_get_the_mode_of_any_output_file(tmp_path, suffix):
    """0666 less the umask, as ``open()`` gives (safetensors itself writes 0600)."""
    out = tmp_path / f"cnn.capture{suffix}"
    env = {**os.environ, "PYTHONPATH": str(PY)}
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        done = subprocess.run(
            [sys.executable, "-m", "perpendis", "capture", str(EXPORT / "cnn.onnx"), "--input",
             str(EXPORT / "cnn.input.npy"), "-o", str(out)],
            capture_output=True, text=True, env=env, timeout=120, preexec_fn=lambda m=umask: os.umask(m), check=False,
        )
        assert done.returncode == 0, done.stderr
        assert out.stat().st_mode & 0o777 == mode
        out.unlink()


def test_a_missing_optional_module_names_its_extra(monkeypatch, capsys):
    def without_onnxruntime(*args, **kwargs):
        import onnxruntime_is_not_installed  # noqa: F401  (a real ModuleNotFoundError)

    monkeypatch.setattr(cli, "EXTRAS", {**cli.EXTRAS, "onnxruntime_is_not_installed": "onnx"})
    monkeypatch.setattr(judge, "prepare", without_onnxruntime)
    assert main([str(MODELS / "cnn.ort.npy"), str(MODELS / "cnn.torch.npy")]) == 2
    assert "pip install 'perpendis[onnx]'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["bisect", "nowhere.npz", "{models}/cnn.capture.torch.npz"], "perpendis bisect: cannot read nowhere.npz"),
        (["bisect", "{models}/cnn.capture.torch.npz", "{models}/cnn.capture.ort.npz", "--atol", "-1"],
         "perpendis bisect: atol must be a finite number >= 0, got -1.0 (atol)"),
        (["capture", "{models}/cnn.onnx", "--input", "x.npy", "-o", "out.txt"],
         "perpendis capture: save the capture as .safetensors or .npz, not out.txt (-o)"),
        (["checkpoints", "nowhere", "{models}"], "perpendis checkpoints: "),
        (["checkpoints", "{models}", "{models}", "--atol", "-1", "--single"],
         "perpendis checkpoints: atol must be a finite number >= 0, got -1.0 (atol)"),
        (["{models}/cnn.ort.npy", "{models}/cnn.torch.npy", "--preset", "fp17"], "perpendis: unknown tolerance preset"),
        (["{models}/cnn.ort.npy", "{models}/cnn.torch.npy", "--depth", "0"], "perpendis: depth must be a number > 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_for_every_command(argv, line, capsys):
    """Each command raises; ``main`` alone turns bad input into one line named by the command and exit 2."""
    assert main([arg.format(models=MODELS) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1 and "Traceback" not in err


def test_a_crash_in_bisect_exits_3_with_one_line(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug in the bisect")

    from perpendis.service import captures

    monkeypatch.setattr(captures, "bisect", broken)  # the CLI's bisect runs in the service, as the page's
    captures = [str(MODELS / "cnn.capture.torch.npz"), str(MODELS / "cnn.capture.ort.npz")]
    assert main(["bisect", *captures]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ZeroDivisionError: a bug in the bisect" in err


def test_the_cli_streams_by_the_planners_rule(monkeypatch, tmp_path, capsys):
    """Two .npy files reaching the planner's threshold are streamed (the page's rule), and
    below it read whole; the report is the same either way."""
    from perpendis.engine import stream
    from perpendis.service import planner

    b = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    np.save(tmp_path / "a.npy", b * np.float32(1.0001))
    np.save(tmp_path / "b.npy", b)
    paths = [str(tmp_path / "a.npy"), str(tmp_path / "b.npy")]
    sizes = [(tmp_path / name).stat().st_size for name in ("a.npy", "b.npy")]
    streamed = []
    real = stream.prepare_sources
    monkeypatch.setattr(stream, "prepare_sources", lambda *a, **k: streamed.append(1) or real(*a, **k))
    assert main([*paths, "--json"]) in (0, 1)
    whole = json.loads(capsys.readouterr().out)
    assert not streamed and not planner.streams([(None, size) for size in sizes])
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", sum(sizes))
    assert main([*paths, "--json"]) in (0, 1)
    assert streamed == [1] and json.loads(capsys.readouterr().out)["verdict"] == whole["verdict"]


def test_the_cli_and_the_page_get_the_same_answer_from_the_service(capsys):
    """The plain command builds a typed request for the service's one entry (``serve``), as
    the page's worker sends its dict: the report is the same, and only the CLI's carries text."""
    from perpendis import service
    from perpendis.service.session import Session

    a, b = MODELS / "cnn.ort.npy", MODELS / "cnn.torch.npy"
    page = service.serve({"op": "compare", "inputs": {"a": {"name": a.name, "data": "p0"},
                                                     "b": {"name": b.name, "data": "p1"}}, "options": {"depth": 2}},
                         {"p0": a.read_bytes(), "p1": b.read_bytes()}, session=Session())
    code = main([str(a), str(b), "--json", "--depth", "2"])
    assert json.loads(capsys.readouterr().out) == page["report"] and "text" not in page
    assert code == (0 if page["report"]["verdict"] in ("identical", "rounding") else 1)
    main([str(a), str(b), "--depth", "2"])
    assert capsys.readouterr().out.startswith(page["report"]["verdict"].upper())


def test_the_cli_bisect_is_the_pages_bisect_of_the_same_captures(capsys):
    """``perpendis bisect`` asks the service's bisect op: its JSON is the page's answer to
    the same two capture files sent as bytes."""
    from perpendis.service import api

    paths = [MODELS / "cnn.capture.torch.npz", MODELS / "cnn.capture.ort.npz"]
    code = main(["bisect", *map(str, paths), "--json"])
    mine = json.loads(capsys.readouterr().out)
    sides = dict(zip("ab", paths, strict=True))
    request = {"op": "bisect", "inputs": {side: {"name": p.name, "data": side} for side, p in sides.items()},
               "options": {}}
    page = api.handle(request, {side: p.read_bytes() for side, p in sides.items()})["bisect"]
    assert code == (1 if page["first_failing"] is not None else 0)
    assert [p["a_name"] for p in mine["pairs"]] == [p["a_name"] for p in page["pairs"]] != []
    assert [p["report"]["verdict"] for p in mine["pairs"]] == [p["report"]["verdict"] for p in page["pairs"]]


def test_the_cli_bisect_says_nothing_paired_as_bad_input(tmp_path, capsys):
    """The page answers two captures with no name in common with both lists of names; the
    CLI has no table to pair them by hand in, so it is bad input there (exit 2)."""
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "a.npz", conv=rng.standard_normal(6).astype(np.float32))
    np.savez(tmp_path / "b.npz", other=rng.standard_normal(7).astype(np.float32))
    assert main(["bisect", str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perpendis bisect: ") and err.count("\n") == 1
