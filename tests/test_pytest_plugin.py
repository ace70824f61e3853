"""The pytest plugin, run inside real pytest sessions (``pytester``) on real model outputs."""

import json
import os
import shutil
import subprocess
import tomllib
import venv
from pathlib import Path

import numpy as np
import perpendis
import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"

FAILING = f'''
import numpy as np
from perpendis import assert_same

MODELS = {str(MODELS)!r}

def test_export_matches():
    # ONNX Runtime against the transformer with one LayerNorm feature's weight and bias negated
    assert_same(np.load(MODELS + "/transformer.signflip.npy"), np.load(MODELS + "/transformer.ort.npy"))

def test_rounding_passes():
    assert_same(np.load(MODELS + "/linear.ort.npy"), np.load(MODELS + "/linear.torch.npy"))

def test_other_failure():
    assert 1 == 2
'''


def run(pytester, *args):
    pytester.makepyfile(test_model=FAILING)
    return pytester.runpytest("-p", "perpendis.pytest_plugin", *args)


def test_failing_comparison_explains_itself_on_one_screen(pytester):
    result = run(pytester, "-k", "export")
    result.assert_outcomes(failed=1, deselected=2)
    explanation = [line for line in result.outlines if line.startswith("E ")]
    assert len(explanation) <= 12
    text = "\n".join(explanation)
    assert "ComparisonError: Perpendis: INVESTIGATE" in text
    assert "top finding [error]" in text and "(at axis 2 index 3)" in text
    assert "first difference at (0, 0, 0)" in text and "A bits " in text and "B bits " in text
    # the failure points at the test's own line, not into perpendis
    assert any(line.startswith(">       assert_same(") for line in result.outlines)
    assert not any("testing.py" in line for line in result.outlines)


def test_report_dir_gets_markdown_json_and_html_of_each_failing_comparison(pytester):
    out = pytester.path / "reports"
    result = run(pytester, "--perpendis-report", str(out))
    result.assert_outcomes(failed=2, passed=1)
    stem = "test_model.py__test_export_matches"
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}.html", f"{stem}.json", f"{stem}.md"]
    expected = perpendis.compare(
        np.load(MODELS / "transformer.signflip.npy"), np.load(MODELS / "transformer.ort.npy"),
        sources=("actual", "expected"),
    )
    assert json.loads((out / f"{stem}.json").read_text()) == expected.to_dict()
    assert (out / f"{stem}.md").read_text() == expected.to_markdown()
    html = (out / f"{stem}.html").read_text()
    assert html.startswith("<!doctype html>") and "test_model.py::test_export_matches" in html
    assert "http:" not in html and "https:" not in html and "src=" not in html
    result.stdout.fnmatch_lines([
        "*- perpendis report -*",
        f"*reports/{stem}.md",
        "*1 failing comparison(s): Markdown, JSON and HTML reports in *reports",
    ])


def test_without_the_option_nothing_is_written(pytester):
    result = run(pytester)
    result.assert_outcomes(failed=2, passed=1)
    assert not list(pytester.path.rglob("*.html")) and "perpendis report" not in result.stdout.str()


def test_a_comparison_behind_another_error_is_kept(pytester):
    pytester.makepyfile(test_wrapped=f'''
import numpy as np
from perpendis import assert_same

def test_wrapped():
    try:
        assert_same(np.load({str(MODELS / "cnn.offset.npy")!r}), np.load({str(MODELS / "cnn.ort.npy")!r}))
    except AssertionError as exc:
        raise RuntimeError("output check failed") from exc
''')
    out = pytester.path / "reports"
    pytester.runpytest("-p", "perpendis.pytest_plugin", f"--perpendis-report={out}").assert_outcomes(failed=1)
    assert len(list(out.glob("*.json"))) == 1


def test_option_is_in_help(pytester):
    pytester.runpytest("-p", "perpendis.pytest_plugin", "--help").stdout.fnmatch_lines(["*--perpendis-report=DIR*"])


def test_entry_points_are_declared():
    project = tomllib.loads((ROOT / "py" / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"perpendis": "perpendis.pytest_plugin"}
    assert project["scripts"] == {"perpendis": "perpendis.cli:main"}
    assert project["dependencies"] == ["numpy>=2.0"]
    assert set(project["optional-dependencies"]) == {"onnx", "dask"}


@pytest.mark.slow
def test_installed_wheel_gives_the_command_and_the_plugin(tmp_path):
    """``pip install ./py`` in a fresh venv (seeing this machine's numpy and pytest, so no
    network): the ``perpendis`` command runs, and pytest loads the plugin with no ``-p``."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # From a copy: setuptools writes build/ and perpendis.egg-info beside the sources, and an
    # egg-info in py/ would register the plugin a second time in every later test session.
    source = tmp_path / "py"
    shutil.copytree(ROOT / "py", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(source)],
        check=True, env=clean, cwd=tmp_path,
    )
    cli = subprocess.run(
        [env_dir / "bin" / "perpendis", MODELS / "transformer.signflip.npy", MODELS / "transformer.ort.npy"],
        capture_output=True, text=True, env=clean, cwd=tmp_path,
    )
    assert cli.returncode == 1 and cli.stdout.startswith("INVESTIGATE")
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
    assert sorted(p.suffix for p in (tmp_path / "out").iterdir()) == [".html", ".json", ".md"]
