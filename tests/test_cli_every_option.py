"""Every option of every command does something: giving it changes the output or the exit
code, or it is refused with exit 2 and a reason.  No option is silently ignored.

Each parser is built from the real argparse definitions and every option is read from its
``_actions``; :data:`CHECKS` maps each one to a check that runs a real invocation (on .npy,
.npz and .safetensors files numpy and safetensors write in tmp_path, and the committed ONNX
export fixtures) and asserts the option's effect.  An option a parser gains without a
check here fails :func:`test_every_option_has_a_check`.
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from perpendis.cli import capture as cli_capture
from perpendis.cli import checkpoints as cli_checkpoints
from perpendis.cli import main as cli_main
from perpendis.cli import open_page

save_file = pytest.importorskip("safetensors.numpy").save_file
EXPORT = Path(__file__).parent / "fixtures" / "export"

PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "": cli_main._parser,
    "bisect": cli_main._bisect_parser,
    "checkpoints": cli_checkpoints._parser,
    "capture": cli_capture._capture_parser,
    "check-export": cli_capture._check_parser,
    "--open": open_page._parser,
}


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    """Every optional argument of ``parser``, each by its longest spelling."""
    return [max(a.option_strings, key=len) for a in parser._actions if a.option_strings]


ALL = [(command, option) for command, make in PARSERS.items() for option in options_of(make())]


@dataclass
class Cli:
    """One in-process run of ``perpendis`` after another, on the files of :func:`files`."""

    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch
    root: Path

    def __call__(self, *argv: object) -> tuple[int, str, str]:
        try:
            code = cli_main.main([str(a) for a in argv])
        except SystemExit as stop:  # argparse's --help and --version
            code = int(stop.code or 0)
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def json(self, *argv: object) -> dict:
        code, out, err = self(*argv, "--json")
        assert code in (0, 1), err
        return json.loads(out)

    def __getattr__(self, name: str) -> Path:
        """A file or folder of :func:`cli` by its name without suffix: ``c.base`` is base.npy."""
        found = [p for p in self.root.glob(f"{name}*") if p.stem == name]
        if len(found) != 1:
            raise AttributeError(name)
        return found[0]


@pytest.fixture
def cli(tmp_path, capsys, monkeypatch) -> Cli:
    """Tensors written by numpy: ``base`` (float32 4x8), ``round`` (one ULP up everywhere),
    ``off`` (0.01 up: past fp32-cpu's tolerance), ``half`` (float16), ``ref64`` (float64);
    two captures ``capa.npz``/``capb.npz``; two checkpoint folders ``ca``/``cb`` of one
    safetensors shard each."""
    rng = np.random.default_rng(45)
    base = rng.standard_normal((4, 8)).astype(np.float32)
    near = np.nextafter(base, np.float32(np.inf))
    off = base + np.float32(0.01)
    for name, array in (("base", base), ("round", near), ("off", off), ("half", base.astype(np.float16)),
                        ("ref64", base.astype(np.float64))):
        np.save(tmp_path / f"{name}.npy", array)
    np.savez(tmp_path / "capa.npz", l1=base, l2=base * 2)
    np.savez(tmp_path / "capb.npz", l1=near, l2=off * 2)
    for side, w in (("ca", base), ("cb", off)):
        (tmp_path / side).mkdir()
        tensors = {"blk.0.attn_q.weight": base, "w": w, "r": base if side == "ca" else near}
        save_file(tensors, str(tmp_path / side / "model.safetensors"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(open_page.SITE_ENV, raising=False)
    monkeypatch.setattr(open_page, "CHECKOUT_SITE", tmp_path / "no-dist")
    return Cli(capsys, monkeypatch, tmp_path)


def refused(result: tuple[int, str, str], said: str) -> None:
    code, _, err = result
    assert code == 2 and said in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1


def row(report: dict, name: str, key: str = "tensors") -> dict:
    return next(r for r in report[key] if r.get("name", r.get("a_name")) == name)


# --------------------------------------------------------------------------- the plain command


def plain_help(c: Cli) -> None:
    code, out, _ = c("--help")
    assert code == 0 and out.startswith("usage: perpendis") and "checkpoints" in out


def plain_version(c: Cli) -> None:
    code, out, _ = c("--version")
    assert code == 0 and out.startswith("perpendis ")


def plain_ref(c: Cli) -> None:
    assert c.json(c.base, c.round)["ref"] is None
    assert c.json(c.base, c.round, "--ref", c.ref64)["ref"] is not None


def plain_preset(c: Cli) -> None:
    default, fp16 = c.json(c.off, c.base), c.json(c.off, c.base, "--preset", "fp16")
    assert default["tolerance"]["preset"] == "fp32-cpu" and fp16["tolerance"]["preset"] == "fp16"
    assert fp16["tolerance"]["fraction_fail"] < default["tolerance"]["fraction_fail"]
    refused(c(c.off, c.base, "--preset", "nope"), "unknown tolerance preset 'nope'")


def plain_atol(c: Cli) -> None:
    assert c.json(c.off, c.base)["tolerance"]["fraction_fail"] > 0
    assert c.json(c.off, c.base, "--atol", "1")["tolerance"]["fraction_fail"] == 0
    refused(c(c.off, c.base, "--atol", "-1"), "atol must be a finite number >= 0")


def plain_rtol(c: Cli) -> None:
    loose = c.json(c.off, c.base, "--rtol", "0.5")["tolerance"]
    assert loose["rtol"] == 0.5 and loose["fraction_fail"] < c.json(c.off, c.base)["tolerance"]["fraction_fail"]


def plain_depth(c: Cli) -> None:
    assert "depth 1)" in c(c.base, c.round)[1]
    assert "depth 4)" in c(c.base, c.round, "--depth", "4")[1]
    refused(c(c.base, c.round, "--depth", "0"), "depth must be a number > 0")


def plain_stream(c: Cli) -> None:
    loaded: list[str] = []
    real = cli_main.load_path
    c.monkeypatch.setattr(cli_main, "load_path", lambda path: loaded.append(str(path)) or real(path))
    assert c(c.base, c.round)[0] == 0 and len(loaded) == 2  # small: loaded whole
    loaded.clear()
    assert c(c.base, c.round, "--stream")[0] == 0 and loaded == []  # read chunk by chunk, never whole
    refused(c(c.capa, c.capb, "--stream"), "--stream compares two .npy files")


def plain_json(c: Cli) -> None:
    assert c.json(c.base, c.round)["verdict"] == "rounding"
    assert not c(c.base, c.round)[1].startswith("{")


def plain_markdown(c: Cli) -> None:
    assert c(c.base, c.round, "--markdown")[1].startswith("**Perpendis: ROUNDING")
    refused(c(c.base, c.round, "--markdown", "--json"), "--json and --markdown")


def plain_no_check_dtype(c: Cli) -> None:
    assert c.json(c.half, c.base)["verdict"] == "investigate"
    assert c.json(c.half, c.base, "--no-check-dtype")["verdict"] == "rounding"


def plain_classes_axis(c: Cli) -> None:
    assert c.json(c.base, c.round)["task"] is None
    assert c.json(c.base, c.round, "--classes-axis", "1")["task"]["axis"] == 1
    refused(c(c.base, c.round, "--classes-axis", "5"), "axis")


def plain_top_k(c: Cli) -> None:
    assert set(c.json(c.base, c.round, "--top-k", "2")["task"]["topk"]) == {"2", "5"}


# --------------------------------------------------------------------------- bisect


def bisect_help(c: Cli) -> None:
    code, out, _ = c("bisect", "--help")
    assert code == 0 and out.startswith("usage: python -m perpendis bisect")


def bisect_json(c: Cli) -> None:
    assert [p["a_name"] for p in c.json("bisect", c.capa, c.capb)["pairs"]] == ["l1", "l2"]


def _l2(c: Cli, *extra: str) -> dict:
    return row(c.json("bisect", c.capa, c.capb, *extra), "l2", "pairs")


def bisect_preset(c: Cli) -> None:
    assert _l2(c, "--preset", "bf16")["fraction_fail"] < _l2(c)["fraction_fail"]


def bisect_atol(c: Cli) -> None:
    assert _l2(c)["fraction_fail"] > 0 and _l2(c, "--atol", "1")["fraction_fail"] == 0


def bisect_rtol(c: Cli) -> None:
    assert _l2(c, "--rtol", "0.5")["fraction_fail"] < _l2(c)["fraction_fail"]


def bisect_depth(c: Cli) -> None:
    def l1(*extra: str) -> str:
        return row(c.json("bisect", c.capa, c.capb, *extra), "l1", "pairs")["finding"]["message"]

    assert "depth 1)" in l1() and "depth 4)" in l1("--depth", "4")


def bisect_map(c: Cli) -> None:
    pairs = c.json("bisect", c.capa, c.capb, "--map", "l1=l2", "--map", "l2=l1")["pairs"]
    assert {(p["a_name"], p["b_name"]) for p in pairs} == {("l1", "l2"), ("l2", "l1")}
    refused(c("bisect", c.capa, c.capb, "--map", "l1"), "--map takes A_NAME=B_NAME")


def _export(c: Cli, *extra: str) -> dict:
    return c.json("bisect", EXPORT / "cnn.torch.safetensors", EXPORT / "cnn_bias.ort.npz", *extra)


def bisect_model(c: Cli) -> None:
    assert {p["paired_by"] for p in _export(c)["pairs"]} == {"order and shape"}
    assert {p["paired_by"] for p in _export(c, "--model", EXPORT / "cnn_bias.onnx")["pairs"]} == {"metadata"}


def bisect_isolate(c: Cli) -> None:
    assert all(p["isolated"] is None for p in _export(c, "--model", EXPORT / "cnn_bias.onnx")["pairs"])
    isolated = _export(c, "--model", EXPORT / "cnn_bias.onnx", "--isolate")
    assert any(p["isolated"] is not None for p in isolated["pairs"]) and isolated["culprit"] is not None
    refused(c("bisect", c.capa, c.capb, "--isolate"), "give it with --model")


def _node_data(path: Path) -> dict:
    """The per-node values of a Model Explorer node-data file, under its one graph."""
    import json

    [graph] = json.loads(path.read_text()).values()
    return graph["results"]


def bisect_model_explorer(c: Cli) -> None:
    out = c.root / "bisect.me.json"
    _export(c, "--model", EXPORT / "cnn_bias.onnx", "--model-explorer", out)
    assert _node_data(out) and any(v["value"] == 2 for v in _node_data(out).values())
    refused(c("bisect", c.capa, c.capb, "--model-explorer", out), "give it with --model")


def bisect_verbose(c: Cli) -> None:
    plain, verbose = c("bisect", c.capa, c.capb)[1], c("bisect", c.capa, c.capb, "-v")[1]
    assert "shape" not in plain.splitlines()[0] and "shape" in verbose.splitlines()[0]
    refused(c("bisect", c.capa, c.capb, "-v", "--json"), "--verbose adds columns to the table")


def bisect_only(c: Cli) -> None:
    assert [p["a_name"] for p in c.json("bisect", c.capa, c.capb, "--only", "l2")["pairs"]] == ["l2"]


# --------------------------------------------------------------------------- checkpoints


def ck(c: Cli, *extra: object) -> tuple[int, str, str]:
    return c("checkpoints", c.ca, c.cb, *extra)


def ck_json(c: Cli, *extra: object) -> dict:
    code, out, err = ck(c, "--json", "--no-progress", *extra)
    assert code in (0, 1), err
    return json.loads(out)


def checkpoints_help(c: Cli) -> None:
    code, out, _ = c("checkpoints", "--help")
    assert code == 0 and out.startswith("usage: python -m perpendis checkpoints")


def checkpoints_rename(c: Cli) -> None:
    assert "v" not in {r["name"] for r in ck_json(c)["tensors"]}
    assert "v" in {r["name"] for r in ck_json(c, "--rename", "^w$=v")["tensors"]}
    refused(ck(c, "--rename", "(=x"), "rename rule")


def checkpoints_rename_preset(c: Cli) -> None:
    names = {r["name"] for r in ck_json(c, "--rename-preset", "gguf-llama")["tensors"]}
    assert "model.layers.0.self_attn.q_proj.weight" in names


def checkpoints_preset(c: Cli) -> None:
    assert row(ck_json(c, "--preset", "fp16"), "w")["fraction_fail"] < row(ck_json(c), "w")["fraction_fail"]


def checkpoints_atol(c: Cli) -> None:
    assert row(ck_json(c), "w")["fraction_fail"] > 0 and row(ck_json(c, "--atol", "1"), "w")["fraction_fail"] == 0


def checkpoints_rtol(c: Cli) -> None:
    assert row(ck_json(c, "--rtol", "0.5"), "w")["fraction_fail"] < row(ck_json(c), "w")["fraction_fail"]


def checkpoints_depth(c: Cli) -> None:
    assert "depth 1)" in row(ck_json(c), "r")["description"]
    assert "depth 4)" in row(ck_json(c, "--depth", "4"), "r")["description"]


def checkpoints_workers(c: Cli) -> None:
    assert "less than" in ck(c, "--no-progress")[2]
    assert "a cluster of one worker thread" in ck(c, "--workers", "1", "--no-progress")[2]
    refused(ck(c, "--workers", "0"), "--workers must be at least 1")


def checkpoints_scheduler(c: Cli) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://", dashboard_address=None
    ) as cluster:
        code, _, err = ck(c, "--scheduler", cluster.scheduler_address, "--no-progress")
    assert code == 1 and f"folded on the Dask scheduler at {cluster.scheduler_address}" in err
    refused(ck(c, "--scheduler", "nowhere"), "--scheduler nowhere is not a reachable scheduler address")


def checkpoints_single(c: Cli) -> None:
    assert "one process does the work" in ck(c, "--no-progress")[2]
    assert ck(c, "--single", "--no-progress")[2] == ""


def checkpoints_min_cluster_bytes(c: Cli) -> None:
    assert "less than the 8.59 GB" in ck(c, "--no-progress")[2]
    assert "less than the 1.00 GB" in ck(c, "--min-cluster-bytes", "1000000000", "--no-progress")[2]
    refused(ck(c, "--single", "--min-cluster-bytes", "0"), "--single starts none")


def checkpoints_json(c: Cli) -> None:
    assert {"tensors", "summary"} <= set(ck_json(c, "--single"))
    assert not ck(c, "--single", "--no-progress")[1].startswith("{")


def checkpoints_resume(c: Cli) -> None:
    resume = c.root / "resume.jsonl"
    first = ck_json(c, "--single", "--resume", resume)
    assert len(resume.read_text().splitlines()) == 3
    again = ck_json(c, "--single", "--resume", resume)
    assert "3 tensor(s) were compared by an earlier run (resume.jsonl)" in again["notes"]
    assert again["tensors"] == first["tensors"]


def checkpoints_no_progress(c: Cli) -> None:
    pytest.importorskip("tqdm")
    assert "3 tensors" in ck(c, "--single")[2]  # the bar
    assert ck(c, "--single", "--no-progress")[2] == ""


# --------------------------------------------------------------------------- capture and check-export


def capture_help(c: Cli) -> None:
    code, out, _ = c("capture", "--help")
    assert code == 0 and out.startswith("usage: python -m perpendis capture")


def _capture(c: Cli, *extra: object) -> tuple[int, str, str]:
    return c("capture", EXPORT / "cnn.onnx", *extra)


def capture_input(c: Cli) -> None:
    refused(_capture(c, "-o", c.root / "c.npz"), "give the model's input with --input")
    assert _capture(c, "--input", EXPORT / "cnn.input.npy", "-o", c.root / "c.npz")[0] == 0


def capture_output(c: Cli) -> None:
    code, out, _ = _capture(c, "--input", EXPORT / "cnn.input.npy", "--output", c.root / "run.npz")
    assert code == 0 and f"saved to {c.root / 'run.npz'}" in out and len(np.load(c.root / "run.npz").files) > 3
    refused(_capture(c, "--input", EXPORT / "cnn.input.npy", "-o", c.root / "run.txt"), "not run.txt")


def capture_provider(c: Cli) -> None:
    ok = _capture(c, "--input", EXPORT / "cnn.input.npy", "-o", c.root / "c.npz", "--provider", "CPUExecutionProvider")
    assert ok[0] == 0
    refused(_capture(c, "--input", EXPORT / "cnn.input.npy", "-o", c.root / "c.npz", "--provider", "Nope"),
            "no execution provider 'Nope'")


def check_help(c: Cli) -> None:
    code, out, _ = c("check-export", "--help")
    assert code == 0 and out.startswith("usage: python -m perpendis check-export")


def _check(c: Cli, *extra: object) -> tuple[int, str, str]:
    return c("check-export", EXPORT / "cnn_bias.onnx", "--torch", EXPORT / "cnn.torch.safetensors",
             "--input", EXPORT / "cnn.input.npy", *extra)


def _check_json(c: Cli, *extra: object) -> dict:
    code, out, err = _check(c, "--json", *extra)
    assert code in (0, 1), err
    return json.loads(out)


def _failing(report: dict) -> float:
    return sum(p["fraction_fail"] or 0 for p in report["pairs"])


def check_input(c: Cli) -> None:
    refused(c("check-export", EXPORT / "cnn_bias.onnx", "--torch", EXPORT / "cnn.torch.safetensors"),
            "give the model's input with --input")


def check_torch(c: Cli) -> None:
    assert _check(c)[0] == 1
    refused(c("check-export", EXPORT / "cnn_bias.onnx", "--torch", c.root / "missing.safetensors",
              "--input", EXPORT / "cnn.input.npy"), "missing.safetensors")


def check_module(c: Cli) -> None:
    args = ["check-export", EXPORT / "transformer.onnx", "--input", EXPORT / "transformer.input.npy"]
    code, out, err = c(*args, "--module", f"{EXPORT / 'models.py'}:transformer")
    assert code == 0 and "no layer fails" in out, err
    refused(c(*args, "--module", f"{EXPORT / 'models.py'}:nothing"), "defines no 'nothing'")


def check_model_explorer(c: Cli) -> None:
    out = c.root / "check.me.json"
    assert not out.exists()
    _check(c, "--model-explorer", out)
    assert any(v["value"] == 2 for v in _node_data(out).values())


def check_json(c: Cli) -> None:
    assert _check_json(c)["culprit"] is not None and not _check(c)[1].startswith("{")


def check_preset(c: Cli) -> None:
    assert _failing(_check_json(c, "--preset", "bf16")) < _failing(_check_json(c))


def check_atol(c: Cli) -> None:
    assert _failing(_check_json(c, "--atol", "10")) < _failing(_check_json(c))


def check_rtol(c: Cli) -> None:
    assert _failing(_check_json(c, "--rtol", "0.5")) < _failing(_check_json(c))


def check_depth(c: Cli) -> None:
    assert "depth 1)" in _check_json(c)["pairs"][0]["finding"]["message"]
    assert "depth 4)" in _check_json(c, "--depth", "4")["pairs"][0]["finding"]["message"]


# --------------------------------------------------------------------------- --open


def _page(c: Cli, *extra: object) -> dict:
    """The options the served page is handed (its manifest), for these arguments."""
    return open_page.page_options(open_page._parser().parse_args([str(c.off), str(c.base), "--open", *map(str, extra)]))


def _report_page(c: Cli, *extra: object) -> tuple[int, str, str]:
    """``--open`` with no built site: the report opened as one page, the browser not started."""
    return c(c.off, c.base, "--open", "--no-browser", *extra)


def open_help(c: Cli) -> None:
    code, out, _ = c(c.off, c.base, "--open", "--help")
    assert code == 0 and out.startswith("usage: python -m perpendis A B --open")


def open_open(c: Cli) -> None:
    assert _report_page(c)[1].startswith("Perpendis: INVESTIGATE; the report of off.npy and base.npy")
    assert c(c.off, c.base)[1].startswith("INVESTIGATE")


def open_ref(c: Cli) -> None:
    parse = open_page._parser().parse_args
    assert "ref" in open_page._inputs(parse([str(c.base), str(c.round), "--open", "--ref", str(c.ref64)]))
    refused(c(c.base, c.round, "--open", "--ref", c.root / "missing.npy"), "missing.npy: no such file")


def open_preset(c: Cli) -> None:
    assert _page(c, "--preset", "fp16") == {"preset": "fp16"}


def open_atol(c: Cli) -> None:
    assert _page(c, "--atol", "1") == {"atol": 1.0}
    assert _report_page(c, "--atol", "1")[1].startswith("Perpendis: ROUNDING") or "atol 1," in next(
        c.root.glob("perpendis-*.html")).read_text()


def open_rtol(c: Cli) -> None:
    assert _page(c, "--rtol", "0.5") == {"rtol": 0.5}


def open_depth(c: Cli) -> None:
    assert _page(c, "--depth", "3") == {"depth": 3.0}


def open_no_check_dtype(c: Cli) -> None:
    assert _page(c, "--no-check-dtype") == {"check_dtype": False}
    assert c(c.half, c.base, "--open", "--no-browser")[1].startswith("Perpendis: INVESTIGATE")
    assert c(c.half, c.base, "--open", "--no-browser", "--no-check-dtype")[1].startswith("Perpendis: ROUNDING")


def open_classes_axis(c: Cli) -> None:
    assert _page(c, "--classes-axis", "1") == {"task": {"axis": 1}}


def open_top_k(c: Cli) -> None:
    assert _page(c, "--top-k", "3") == {"task": {"axis": -1, "k": 3}}


def open_site(c: Cli) -> None:
    refused(_report_page(c, "--site", c.root), "is not a site built by build.py")


def open_port(c: Cli) -> None:
    refused(_report_page(c, "--port", "8123"), "--port 8123 is where the built page is served")
    site = c.root / "site"
    (site / "pyodide").mkdir(parents=True)
    (site / "index.html").write_text('<meta http-equiv="Content-Security-Policy" content="default-src \'self\'">')
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused(_report_page(c, "--site", site, "--port", port), f"cannot serve on 127.0.0.1:{port}")


def open_no_browser(c: Cli) -> None:
    opened: list[str] = []
    c.monkeypatch.setattr(open_page.webbrowser, "open", lambda url: opened.append(url) or True)
    assert c(c.off, c.base, "--open")[0] == 1 and len(opened) == 1
    assert _report_page(c)[0] == 1 and len(opened) == 1


CHECKS: dict[tuple[str, str], Callable[[Cli], None]] = {
    ("", "--help"): plain_help, ("", "--version"): plain_version, ("", "--ref"): plain_ref,
    ("", "--preset"): plain_preset, ("", "--atol"): plain_atol, ("", "--rtol"): plain_rtol,
    ("", "--depth"): plain_depth, ("", "--stream"): plain_stream, ("", "--json"): plain_json,
    ("", "--markdown"): plain_markdown, ("", "--no-check-dtype"): plain_no_check_dtype,
    ("", "--classes-axis"): plain_classes_axis, ("", "--top-k"): plain_top_k,
    ("bisect", "--help"): bisect_help, ("bisect", "--json"): bisect_json, ("bisect", "--preset"): bisect_preset,
    ("bisect", "--atol"): bisect_atol, ("bisect", "--rtol"): bisect_rtol, ("bisect", "--depth"): bisect_depth,
    ("bisect", "--map"): bisect_map, ("bisect", "--model"): bisect_model, ("bisect", "--isolate"): bisect_isolate,
    ("bisect", "--model-explorer"): bisect_model_explorer, ("check-export", "--model-explorer"): check_model_explorer,
    ("bisect", "--verbose"): bisect_verbose, ("bisect", "--only"): bisect_only,
    ("checkpoints", "--help"): checkpoints_help, ("checkpoints", "--rename"): checkpoints_rename,
    ("checkpoints", "--rename-preset"): checkpoints_rename_preset, ("checkpoints", "--preset"): checkpoints_preset,
    ("checkpoints", "--atol"): checkpoints_atol, ("checkpoints", "--rtol"): checkpoints_rtol,
    ("checkpoints", "--depth"): checkpoints_depth, ("checkpoints", "--workers"): checkpoints_workers,
    ("checkpoints", "--scheduler"): checkpoints_scheduler, ("checkpoints", "--single"): checkpoints_single,
    ("checkpoints", "--min-cluster-bytes"): checkpoints_min_cluster_bytes,
    ("checkpoints", "--json"): checkpoints_json, ("checkpoints", "--resume"): checkpoints_resume,
    ("checkpoints", "--no-progress"): checkpoints_no_progress,
    ("capture", "--help"): capture_help, ("capture", "--input"): capture_input,
    ("capture", "--output"): capture_output, ("capture", "--provider"): capture_provider,
    ("check-export", "--help"): check_help, ("check-export", "--input"): check_input,
    ("check-export", "--torch"): check_torch, ("check-export", "--module"): check_module,
    ("check-export", "--json"): check_json, ("check-export", "--preset"): check_preset,
    ("check-export", "--atol"): check_atol, ("check-export", "--rtol"): check_rtol,
    ("check-export", "--depth"): check_depth,
    ("--open", "--help"): open_help, ("--open", "--open"): open_open, ("--open", "--ref"): open_ref,
    ("--open", "--preset"): open_preset, ("--open", "--atol"): open_atol, ("--open", "--rtol"): open_rtol,
    ("--open", "--depth"): open_depth, ("--open", "--no-check-dtype"): open_no_check_dtype,
    ("--open", "--classes-axis"): open_classes_axis, ("--open", "--top-k"): open_top_k,
    ("--open", "--site"): open_site, ("--open", "--port"): open_port, ("--open", "--no-browser"): open_no_browser,
}


def test_every_option_has_a_check():
    missing = sorted(set(ALL) - set(CHECKS))
    assert not missing, f"options with no check of their effect: {missing}"
    assert not sorted(set(CHECKS) - set(ALL)), "checks of options no parser has"


@pytest.mark.parametrize(("command", "option"), ALL, ids=[f"{c or 'compare'} {o}" for c, o in ALL])
def test_the_option_changes_the_outcome_or_is_refused(cli, command, option):
    check = CHECKS.get((command, option))
    assert check is not None, f"{command} {option} has no check of its effect"
    check(cli)
