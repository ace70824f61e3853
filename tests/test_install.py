"""``pip install ./py``: the command, the pytest plugin and the extras, as ``py/pyproject.toml`` declares them.

The slow tests build the wheel and the sdist of ``py/`` and install each into a fresh
virtual environment that sees nothing of this machine's packages but the distributions
the installed ``perpendis`` declares for the extra under test (and what those declare in
turn), read from the built wheel's own metadata. Those are linked from this machine's
site-packages rather than downloaded (no network here, and the same files pip would put
there), so a command that imports anything its extra does not declare fails with
ModuleNotFoundError: each extra's command running there proves its extra is complete.
"""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
FAILING = f'''
import numpy as np
from perpendis import assert_same

def test_export_matches():
    # ONNX Runtime, and the same model with a constant added to its output bias
    assert_same(np.load({str(MODELS / "cnn.offset.npy")!r}), np.load({str(MODELS / "cnn.ort.npy")!r}))
'''


def test_entry_points_are_declared():
    project = tomllib.loads((ROOT / "py" / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"perpendis": "perpendis.pytest_plugin"}
    assert project["scripts"] == {"perpendis": "perpendis.cli.main:main"}
    assert project["dependencies"] == ["numpy>=2.0"]
    assert set(project["optional-dependencies"]) == {"onnx", "torch", "dask"}


def test_every_optional_module_the_cli_names_has_its_extra():
    """The extra the CLI tells people to install for a missing module declares that module."""
    from perpendis.cli.main import EXTRAS

    extras = tomllib.loads((ROOT / "py" / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for module, extra in EXTRAS.items():
        names = {Requirement(r).name for r in extras[extra]} | {
            Requirement(n).name for r in extras[extra] if Requirement(r).name == "perpendis"
            for e in Requirement(r).extras for n in extras[e]}
        assert module in names, (module, extra)


# ------------------------------------------------------------------ installed in a fresh venv

def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requires: list[str], extra: str) -> set[str]:
    """The distributions ``perpendis[extra]`` needs, transitively: its Requires-Dist (as the
    built wheel states them) and theirs, from this machine's metadata, markers evaluated."""
    own = {"perpendis": requires}
    found: set[str] = set()
    todo = [("perpendis", (extra,) if extra else ())]
    while todo:
        name, extras = todo.pop()
        if (_key(name), extras) in found:
            continue
        found.add((_key(name), extras))
        reqs = own.get(_key(name)) or importlib.metadata.distribution(name).requires or []
        for text in reqs:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in (extras or ("",))):
                todo.append((req.name, tuple(sorted(req.extras))))
    return {name for name, _ in found} - {"perpendis"}


def expose(site: Path, names: set[str]) -> None:
    """Link each distribution's top-level files (packages, modules, .dist-info, .libs) into
    ``site``: that environment sees these and nothing else of this machine's."""
    for name in names:
        dist = importlib.metadata.distribution(name)
        base = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            if not top.endswith(".pth") and (base / top).exists() and not (site / top).exists():
                (site / top).symlink_to(base / top)


def fresh_env(tmp: Path, name: str, artifact: Path, extra: str, also: set[str] = frozenset()) -> Path:
    """A venv with ``artifact`` installed (no dependencies from anywhere) and the declared
    closure of ``extra`` (plus ``also``, the user's own tools such as pytest) exposed."""
    env_dir = tmp / name
    venv.create(env_dir, system_site_packages=False, with_pip=False)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    subprocess.run([*pip, "install", "-q", "--no-deps", "--no-index", artifact], check=True, env=CLEAN, cwd=tmp)
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    requires = json.loads(subprocess.run(
        [python, "-c", "import importlib.metadata as m, json; print(json.dumps(m.requires('perpendis')))"],
        capture_output=True, text=True, check=True, env=CLEAN, cwd=tmp).stdout)
    names = declared(requires, extra)
    for tool in also:
        names |= {tool} | declared(importlib.metadata.distribution(tool).requires or [], "")
    expose(site, names)
    return env_dir


CLEAN = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PERPENDIS_SITE")}
EXPORT = ROOT / "tests" / "fixtures" / "export"


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """The wheel, and the wheel built from the sdist, of a copy of ``py/`` (setuptools writes
    build/ and an egg-info beside the sources, which would register the plugin twice)."""
    tmp = tmp_path_factory.mktemp("dist")
    source = tmp / "py"
    shutil.copytree(ROOT / "py", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    wheels, sdists = tmp / "wheels", tmp / "sdists"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels,
                    source], check=True, env=CLEAN, cwd=tmp)
    sdists.mkdir()
    subprocess.run([sys.executable, "-c", f"import setuptools.build_meta as b; b.build_sdist({str(sdists)!r})"],
                   check=True, env=CLEAN, cwd=source, capture_output=True)
    (sdist,) = sdists.glob("perpendis-*.tar.gz")
    from_sdist = tmp / "from_sdist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    from_sdist, sdist], check=True, env=CLEAN, cwd=tmp)
    (wheel,) = wheels.glob("perpendis-*.whl")
    (rebuilt,) = from_sdist.glob("perpendis-*.whl")
    return {"wheel": wheel, "sdist": rebuilt}


def perpendis(env_dir: Path, *args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([env_dir / "bin" / "perpendis", *map(str, args)], capture_output=True, text=True,
                          env=CLEAN, cwd=cwd, timeout=600, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("built", ["wheel", "sdist"])
def test_core_install_gives_the_command_the_page_and_the_plugin(artifacts, tmp_path, built):
    """NumPy only (and pytest, the user's): the command, --version, the help naming every
    command, --open with no checkout (the report page), the plugin with no ``-p``, and a
    command of an extra saying which extra to install."""
    env_dir = fresh_env(tmp_path, "core", artifacts[built], "", also={"pytest"})
    import perpendis as here

    assert perpendis(env_dir, "--version", cwd=tmp_path).stdout.strip() == f"perpendis {here.__version__}"
    help_text = perpendis(env_dir, "--help", cwd=tmp_path).stdout
    assert all(f"perpendis {c} " in help_text for c in ("bisect", "capture", "check-export", "checkpoints"))
    cli = perpendis(env_dir, MODELS / "transformer.signflip.npy", MODELS / "transformer.ort.npy", cwd=tmp_path)
    assert cli.returncode == 1 and cli.stdout.startswith("INVESTIGATE"), cli.stderr
    opened = perpendis(env_dir, MODELS / "cnn.ort.npy", MODELS / "cnn.offset.npy", "--open", "--no-browser",
                       "--preset", "fp32-tf32", cwd=tmp_path)
    assert opened.returncode == 1, opened.stderr
    page = Path(opened.stdout.split("file://")[1].split()[0])
    assert page.read_text().startswith("<!doctype html>") and "fp32-tf32" in page.read_text()
    page.unlink()
    needs = perpendis(env_dir, "capture", EXPORT / "cnn.onnx", "--input", EXPORT / "cnn.input.npy", "-o",
                      tmp_path / "c.safetensors", cwd=tmp_path)
    assert needs.returncode == 2 and "pip install 'perpendis[onnx]'" in needs.stderr, needs.stderr
    (tmp_path / "test_installed.py").write_text(FAILING)
    python = env_dir / "bin" / "python"
    run_ = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perpendis-report", "out", "test_installed.py"],
        capture_output=True, text=True, env=CLEAN, cwd=tmp_path,
    )
    assert run_.returncode == 1 and "greatest failing difference" in run_.stdout, run_.stdout + run_.stderr
    assert str(env_dir) in subprocess.run(
        [python, "-c", "import perpendis; print(perpendis.__file__)"], capture_output=True, text=True, env=CLEAN,
        cwd=tmp_path, check=True,
    ).stdout
    assert sorted(p.suffix for p in (tmp_path / "out").glob("[!.]*")) == [".html", ".json", ".md"]


@pytest.mark.slow
def test_onnx_extra_runs_capture_and_check_export_of_a_capture(artifacts, tmp_path):
    env_dir = fresh_env(tmp_path, "onnx", artifacts["wheel"], "onnx")
    out = tmp_path / "cnn.ort.safetensors"
    captured = perpendis(env_dir, "capture", EXPORT / "cnn.onnx", "--input", EXPORT / "cnn.input.npy", "-o", out,
                         cwd=tmp_path)
    assert captured.returncode == 0, captured.stderr
    assert out.stat().st_mode & 0o077 == 0o044 & ~_umask()  # readable by others, as other outputs
    checked = perpendis(env_dir, "check-export", EXPORT / "cnn.onnx", "--torch", EXPORT / "cnn.torch.safetensors",
                        "--input", EXPORT / "cnn.input.npy", cwd=tmp_path)
    assert checked.returncode == 0 and "features.1" in checked.stdout, checked.stderr  # every layer: rounding


@pytest.mark.slow
def test_torch_extra_exports_and_checks_a_model(artifacts, tmp_path):
    """``perpendis.check_export`` exports with torch.onnx (dynamo: onnxscript), and
    ``check-export --module`` runs the PyTorch model: both with [torch] alone."""
    env_dir = fresh_env(tmp_path, "torch", artifacts["wheel"], "torch")
    checked = perpendis(env_dir, "check-export", EXPORT / "transformer.onnx", "--input",
                        EXPORT / "transformer.input.npy", "--module", f"{EXPORT / 'models.py'}:transformer",
                        cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    script = (f"import sys; sys.path.insert(0, {str(EXPORT)!r}); import models, perpendis; "
              f"model, x = models.build('cnn'); r = perpendis.check_export(model, (x,), 'cnn.onnx'); "
              f"print('investigate' if r.must_investigate else 'ok')")
    exported = subprocess.run([env_dir / "bin" / "python", "-c", script], capture_output=True, text=True, env=CLEAN,
                              cwd=tmp_path, timeout=600, check=False)
    assert exported.returncode == 0 and exported.stdout.strip().endswith("ok"), exported.stderr[-3000:]


@pytest.mark.slow
def test_dask_extra_runs_checkpoints_on_a_local_cluster(artifacts, tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "checkpoints"))
    import make_conversion

    fp32, bf16 = make_conversion.make(tmp_path / "ckpt")
    env_dir = fresh_env(tmp_path, "dask", artifacts["wheel"], "dask")
    # the fixture's script needs torch, which [dask] does not bring: the files were written above
    done = perpendis(env_dir, "checkpoints", fp32, bf16, "--rename", r"^model\.layers\.(\d+)\.=layers.\1.",
                     "--workers", "2", "--min-cluster-bytes", "0", "--no-progress", cwd=tmp_path)
    assert done.returncode == 1 and make_conversion.CORRUPTED in done.stdout, done.stderr
    assert "one process" not in done.stderr  # the cluster ran (forced, on files this small): dask was there


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


