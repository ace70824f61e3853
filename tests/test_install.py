"""``pip install ./py``: the command, the pytest plugin and the extras, as ``py/pyproject.toml`` declares them."""

import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

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
    assert project["scripts"] == {"perpendis": "perpendis.cli:main"}
    assert project["dependencies"] == ["numpy>=2.0"]
    assert set(project["optional-dependencies"]) == {"onnx", "torch", "dask"}


@pytest.mark.slow
def test_installed_wheel_gives_the_command_and_the_plugin(tmp_path):
    """The wheel of ``py/``, installed in a fresh venv (seeing this machine's numpy and pytest, so no
    network): the ``perpendis`` command runs, ``--open`` says how to build the page the wheel
    does not ship, and pytest loads the plugin with no ``-p``."""
    env_dir = tmp_path / "venv"
    # Without a pip of its own (ensurepip is most of this test's time): this interpreter's pip
    # builds the wheel and installs it into the venv (`pip --python`).
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # From a copy: setuptools writes build/ and perpendis.egg-info beside the sources, and an
    # egg-info in py/ would register the plugin a second time in every later test session.
    source = tmp_path / "py"
    shutil.copytree(ROOT / "py", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels, source],
        check=True, env=clean, cwd=tmp_path,
    )
    (wheel,) = wheels.glob("perpendis-*.whl")
    subprocess.run([*pip, "install", "-q", "--no-deps", wheel], check=True, env=clean, cwd=tmp_path)
    cli = subprocess.run(
        [env_dir / "bin" / "perpendis", MODELS / "transformer.signflip.npy", MODELS / "transformer.ort.npy"],
        capture_output=True, text=True, env=clean, cwd=tmp_path,
    )
    assert cli.returncode == 1 and cli.stdout.startswith("INVESTIGATE")
    # the wheel ships no built page: --open says how to build one
    clean.pop("PERPENDIS_SITE", None)
    opened = subprocess.run(
        [env_dir / "bin" / "perpendis", MODELS / "cnn.ort.npy", MODELS / "cnn.offset.npy", "--open", "--no-browser"],
        capture_output=True, text=True, env=clean, cwd=tmp_path,
    )
    assert opened.returncode == 2 and "run `python build.py`" in opened.stderr
    (tmp_path / "test_installed.py").write_text(FAILING)
    run_ = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perpendis-report", "out", "test_installed.py"],
        capture_output=True, text=True, env=clean, cwd=tmp_path,
    )
    assert run_.returncode == 1, run_.stdout + run_.stderr
    assert str(env_dir) in subprocess.run(
        [python, "-c", "import perpendis; print(perpendis.__file__)"], capture_output=True, text=True, env=clean,
        cwd=tmp_path, check=True,
    ).stdout
    assert sorted(p.suffix for p in (tmp_path / "out").glob("[!.]*")) == [".html", ".json", ".md"]
