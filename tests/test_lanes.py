"""The test lanes themselves (``tests/conftest.py``): what CI refuses to skip, which
Hypothesis profile runs, and which tests the markers select.  Each case runs pytest in a
fresh process on a small test file, with the suite's conftest loaded as a plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

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
