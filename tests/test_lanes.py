"""The test lanes themselves (``tests/conftest.py``): what CI refuses to skip, which
Hypothesis profile runs, which tests the markers select, and that the whole suite is
collected on a machine with only the core's dependencies.  Each case runs pytest in a
fresh process, so the module is marked ``slow`` (nested pytest runs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent

CORE = ("numpy", "pytest", "hypothesis")
"""What ``py/pyproject.toml`` lists as the core's dependency (NumPy) and what runs the tests."""

HIDER = """
import sys
from importlib.abc import MetaPathFinder

HIDDEN = set({hidden!r})


class Hide(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden)", name=name)
        return None


sys.meta_path.insert(0, Hide())
"""
"""A ``sitecustomize`` that makes every module it names unimportable, as on a bare machine."""

NEEDS_A_MISSING_MODULE = """
import pytest
pytest.importorskip("perpendis_no_such_module")

def test_never_runs():
    pass
"""

SAYS_ITS_PROFILE = """
from hypothesis import given, settings, strategies as st

@given(st.integers())
def test_profile(x):
    print("derandomize", settings().derandomize, "database", settings().database)
"""


def run_pytest(tmp_path: Path, source: str, *args: str, ci: bool) -> subprocess.CompletedProcess:
    (tmp_path / "test_case.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(TESTS)
    if ci:
        env["CI"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "conftest", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), "-c", os.devnull, *args, str(tmp_path / "test_case.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )


def test_a_missing_module_skips_locally_and_fails_under_ci(tmp_path):
    local = run_pytest(tmp_path, NEEDS_A_MISSING_MODULE, ci=False)
    assert local.returncode == 5, local.stdout  # pytest's "no tests ran": the module was skipped
    assert "1 skipped" in local.stdout
    ci = run_pytest(tmp_path, NEEDS_A_MISSING_MODULE, ci=True)
    assert ci.returncode in (1, 2), ci.stdout  # failed, or a collection error interrupted the run
    assert "under CI every test runs" in ci.stdout
    assert "perpendis_no_such_module" in ci.stdout


def test_ci_runs_the_derandomized_profile_and_local_runs_explore(tmp_path):
    ci = run_pytest(tmp_path, SAYS_ITS_PROFILE, ci=True)
    assert ci.returncode == 0, ci.stdout + ci.stderr
    assert "derandomize True database None" in ci.stdout
    local = run_pytest(tmp_path, SAYS_ITS_PROFILE, ci=False)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "derandomize False" in local.stdout


def test_browser_and_fuzz_tests_are_marked_by_their_folder():
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "-m", "browser or fuzz",
         str(TESTS / "browser" / "test_privacy.py"), str(TESTS / "fuzz" / "test_fuzz_npy.py"),
         str(TESTS / "test_lanes.py")],
        capture_output=True, text=True, cwd=TESTS.parent, timeout=120,
    ).stdout
    selected = [line for line in out.splitlines() if "::" in line]
    assert any(line.startswith("tests/browser/test_privacy.py::") for line in selected), out
    assert any(line.startswith("tests/fuzz/test_fuzz_npy.py::") for line in selected), out
    assert not any("test_lanes.py" in line for line in selected), out


def test_fuzz_tests_are_never_in_the_quick_lane():
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "-m", "not slow",
         str(TESTS / "fuzz" / "test_fuzz_npy.py"), str(TESTS / "test_assert_same_fast.py")],
        capture_output=True, text=True, cwd=TESTS.parent, timeout=120,
    ).stdout
    selected = [line for line in out.splitlines() if "::" in line]
    assert selected, out  # test_assert_same_fast's example tests stay
    fuzzed = ("fuzz/", "::test_the_bit_check_says_identical", "::test_the_rounding_check_passes_only")
    assert not any(name in line for line in selected for name in fuzzed), out


def closure(names: tuple[str, ...]) -> set[str]:
    """The installed distributions ``names`` need, theirs included (extras left out)."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue  # a dependency for another Python version, not installed here
        found.add(key)
        todo += [re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0] for r in requires if "extra ==" not in r]
    return found


def optional_modules() -> set[str]:
    """Every installed top-level module that is not the core's: torch, onnx, playwright, ..."""
    core = closure(CORE)
    return {module for module, dists in packages_distributions().items()
            if not any(re.sub(r"[-_.]+", "-", d).lower() in core for d in dists)}


def test_the_hider_hides_what_the_core_does_not_need():
    hidden = optional_modules()
    assert {"torch", "onnx", "playwright", "safetensors", "ml_dtypes"} <= hidden
    assert not {"numpy", "pytest", "_pytest", "hypothesis"} & hidden


def core_only(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The quick lane's pytest on this suite, with every module the core does not need hidden."""
    (tmp_path / "sitecustomize.py").write_text(HIDER.format(hidden=sorted(optional_modules())))
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(tmp_path)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # installed plugins (xdist, ...) are hidden too
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_hypothesis_pytestplugin", "-m",
         "not browser and not slow", "-rfEs", *args],
        capture_output=True, text=True, cwd=TESTS.parent, env=env, timeout=1200,
    )


def test_every_test_module_is_collected_with_only_the_core_installed(tmp_path):
    """A module importing torch, onnx, playwright... at its top must skip without them
    (``pytest.importorskip``), never stop the collection of the quick lane."""
    out = core_only(tmp_path, "--collect-only")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "error" not in out.stdout.splitlines()[-1], out.stdout[-4000:]
    assert "No module named 'torch' (hidden)" in out.stdout  # the hider did hide: some modules skipped
    assert re.search(r"^tests/test_compare\.py::", out.stdout, re.M), "the core's own tests are collected"


def test_the_quick_lane_passes_with_only_the_core_installed(tmp_path):
    """A test importing an optional package inside its body skips too, rather than failing on a
    machine that installed only the core (numpy) and pytest."""
    out = core_only(tmp_path)
    failed = "\n".join(line for line in out.stdout.splitlines() if line.startswith(("FAILED", "ERROR")))
    first = out.stdout[out.stdout.find("= FAILURES ="):][:6000]  # the tail is the skip list
    assert out.returncode == 0, failed + "\n" + first + out.stdout[-2000:] + out.stderr[-2000:]
    assert " passed" in out.stdout.splitlines()[-1] and " skipped" in out.stdout.splitlines()[-1], out.stdout[-2000:]
