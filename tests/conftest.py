"""What every test lane shares: the package importable from ``py/``, the markers applied by
folder, one built site per run, Hypothesis profiles, and CI's refusal to skip.

Markers (registered in ``pytest.ini``)
--------------------------------------
``browser``
    Every test under ``tests/browser/`` (applied here, by folder, so no test can forget it).
    ``python3 -m pytest -m "not browser"`` is the native lane.
``fuzz``
    Every test under ``tests/fuzz/``, also applied here, and property tests marked by hand.
``slow``
    Marked by hand on tests that take more than about 3 s natively or run pytest inside
    pytest, and applied here to every ``fuzz`` test: ``python3 -m pytest -m "not browser
    and not slow"`` is the quick lane (README), collectable with only the core installed.

The built site
--------------
``site`` (session) is the ``Path`` of the site ``build.py`` makes, built at most once per
run: ``scripts/test.sh`` builds ``dist/`` and names it in ``PERPENDIS_SITE``, which is used
when it is at least as new as every source the build reads; otherwise the site is built
here, once, into a temporary folder (never into ``dist/``, so parallel runs in several
worktrees and a developer's own ``dist/`` never collide).  Tests must not write into it.

Hypothesis
----------
Two explicit profiles.  ``ci`` is derandomized (the same examples every run, so a red CI
always means a change broke something) and keeps no example database; ``dev`` explores
new examples each run, which is how the fuzz tests find new bugs.  The profile is the one
``--hypothesis-profile`` names (``.ci/run`` names ``ci``), else ``ci`` when ``CI`` is set,
else ``dev``.

Under CI
--------
With ``CI`` set (``.ci/run`` sets ``CI=1``), a test or module skipped because a module it
needs cannot be imported (``pytest.importorskip``: torch, onnx, polygraphy, safetensors)
fails instead: CI must run every test, and a missing peer library is a broken machine,
not a reason to pass.  A missing Chromium already fails the browser tests
(``tests/browser/conftest.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT))

UNDER_CI = bool(os.environ.get("CI"))

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
# ``--hypothesis-profile`` (read by Hypothesis' own plugin, after this) overrides this choice.
settings.load_profile("ci" if UNDER_CI else "dev")

MARKED_BY_FOLDER = {"browser": ROOT / "tests" / "browser", "fuzz": ROOT / "tests" / "fuzz"}

SITE_ENV = "PERPENDIS_SITE"
"""Names a site already built for this run (``scripts/test.sh`` sets it to ``dist/``)."""

SITE_SOURCES = ("build.py", "buildsite", "scripts/precompile.mjs", "scripts/trace_imports.mjs",
                "scripts/pyodide_side.mjs", "index.html", "app", "py/perpendis", "py/pyproject.toml",
                "package-lock.json")
"""What ``build.py`` reads: a site older than any of them is stale."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        for marker, folder in MARKED_BY_FOLDER.items():
            if folder in path.parents:
                item.add_marker(marker)
        if item.get_closest_marker("fuzz") is not None:
            item.add_marker("slow")  # generated inputs by the hundred: never in the quick lane


def _missing_module(report: pytest.CollectReport | pytest.TestReport) -> str | None:
    """The reason of a skip made by ``pytest.importorskip``, else None."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return None
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    return reason if "could not import" in reason else None


def _failed_under_ci(report: pytest.CollectReport | pytest.TestReport) -> None:
    reason = _missing_module(report) if UNDER_CI else None
    if reason is not None:
        report.outcome = "failed"
        report.longrepr = f"under CI every test runs, but this one would be skipped: {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    report = yield
    _failed_under_ci(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    report = yield
    _failed_under_ci(report)
    return report


def _newest(paths: Iterable[Path]) -> float:
    newest = 0.0
    for path in paths:
        if path.is_dir():
            newest = max(newest, _newest(p for p in path.rglob("*") if "__pycache__" not in p.parts))
        elif path.exists():
            newest = max(newest, path.stat().st_mtime)
    return newest


def fresh_site(site: Path) -> bool:
    """Whether ``site`` is a complete build at least as new as every source the build reads."""
    marker = site / "sw.js"  # written last by build.py
    return marker.is_file() and marker.stat().st_mtime >= _newest(ROOT / s for s in SITE_SOURCES)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import build

    given = os.environ.get(SITE_ENV)
    if given and fresh_site(Path(given)):
        return Path(given)
    out = tmp_path_factory.mktemp("site") / "dist"
    try:
        build.build(out)
    except build.BuildError as exc:
        pytest.fail(f"build.py failed: {exc}")
    return out
