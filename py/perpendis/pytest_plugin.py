"""pytest plugin: ``--perpendis-report DIR`` keeps the whole report of every failing comparison.

Registered through the ``pytest11`` entry point, so installing the package is enough. A
failing :func:`~perpendis.testing.assert_same` already explains itself on one screen; with
this option each failing test whose failure is (or was raised from) a comparison also leaves
three files in DIR, named after the test: the Markdown (for an issue), the JSON (every
number, for tools) and a self-contained HTML page (no server, no request: open it from the
CI artefacts). The test's report gets a section naming them (and, for ``--junitxml``, a
``perpendis_report`` property with the HTML's path), and the terminal summary says where
they went.

The plugin is loaded by every pytest run of every project that has Perpendis installed, so
it imports nothing of the engine (nor NumPy): a comparison error can only exist once
``perpendis.testing`` was imported by a test, and the report is rendered only then. Under
pytest-xdist the files are written by the workers, and the controller, which prints the
summary, learns of them from the test reports the workers send (their "perpendis report"
section). Each run starts by removing the reports earlier runs left in DIR (they are
listed in ``DIR/.perpendis-reports``; nothing else in DIR is touched), so that DIR holds
this run's failures only.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import ComparisonError

_KEY = pytest.StashKey[list[Path]]()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
SECTION = "perpendis report"
LISTING = ".perpendis-reports"  # in DIR: the files this plugin wrote there, one a line
SUFFIXES = (".md", ".json", ".html")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perpendis")
    group.addoption(
        "--perpendis-report",
        metavar="DIR",
        default=None,
        help="write the Markdown, JSON and a self-contained HTML page of every failing "
        "perpendis comparison (assert_same) into DIR",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_KEY] = []
    config.pluginmanager.register(_Collector(config.stash[_KEY]), "perpendis-collector")
    directory = config.getoption("perpendis_report", None)
    if directory and not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        clear_reports(Path(directory))


def clear_reports(directory: Path) -> list[Path]:
    """Remove the reports earlier runs listed in ``directory``; returns those removed.

    Only listed names of report files directly in ``directory`` are removed: a listing
    edited by hand cannot reach outside it, nor remove anything but a report.
    """
    listing = directory / LISTING
    try:
        names = listing.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    removed = []
    for name in dict.fromkeys(names):
        path = directory / name
        if name and Path(name).name == name and path.suffix in SUFFIXES and path.is_file():
            path.unlink()
            removed.append(path)
    listing.unlink()
    return removed


def _list_written(directory: Path, paths: list[Path]) -> None:
    """Append to the listing: one short write in append mode, so workers writing at once
    cannot interleave their lines."""
    with open(directory / LISTING, "a", encoding="utf-8") as listing:
        listing.write("".join(f"{p.name}\n" for p in paths))


def comparison_error(exc: BaseException | None) -> ComparisonError | None:
    """The failing comparison behind an exception: itself, or one it was raised from."""
    testing = sys.modules.get("perpendis.testing")
    if testing is None:  # no test called assert_same: nothing can be a comparison error
        return None
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, testing.ComparisonError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def file_stem(nodeid: str, when: str) -> str:
    """A file name for a test id: ``tests/test_m.py::test_x[a-1]`` → ``tests_test_m.py__test_x_a-1``."""
    stem = _UNSAFE.sub("_", nodeid.replace("::", "__")).strip("_")[:180]
    return stem if when == "call" else f"{stem}-{when}"


def write_report(directory: Path, stem: str, error: ComparisonError, title: str) -> list[Path]:
    """The three files of one failing comparison; returns their paths."""
    from .report.html import render_page

    directory.mkdir(parents=True, exist_ok=True)
    report = error.report
    files = {
        ".md": report.to_markdown(),
        ".json": report.to_json(indent=1),
        ".html": render_page(report, title=title),
    }
    paths = []
    for suffix, text in files.items():
        path = directory / f"{stem}{suffix}"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    _list_written(directory, paths)
    return paths


def _free_stem(directory: Path, stem: str) -> str:
    """``stem``, or ``stem-2``, ``-3``...: two test ids can differ only in the characters a
    file name cannot hold. Taken by creating its Markdown file exclusively, so that two
    xdist workers cannot take the same one (earlier runs' files are gone: see clear_reports)."""
    directory.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        candidate = stem if n == 1 else f"{stem}-{n}"
        try:
            os.close(os.open(directory / f"{candidate}.md", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return candidate
    raise AssertionError("unreachable")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    rep = yield
    directory = item.config.getoption("perpendis_report")
    error = comparison_error(call.excinfo.value) if call.excinfo is not None else None
    if directory and error is not None and rep.failed:
        stem = _free_stem(Path(directory), file_stem(item.nodeid, call.when))
        paths = write_report(Path(directory), stem, error, f"Perpendis: {item.nodeid}")
        rep.sections.append((SECTION, "\n".join(str(p) for p in paths)))
        item.user_properties.append(("perpendis_report", str(paths[-1])))  # the HTML, for --junitxml
    return rep


class _Collector:
    """Keeps the files each test's report names, in this process's run or sent by an xdist
    worker to the controller, whose terminal summary then names them (a hook of its own,
    as ``pytest_runtest_logreport`` is given no config)."""

    def __init__(self, found: list[Path]) -> None:
        self.found = found

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, content in report.sections:
            if name == SECTION:
                self.found.extend(Path(line) for line in content.splitlines())


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    paths = config.stash.get(_KEY, [])
    if paths:
        directory = paths[0].parent
        terminalreporter.write_sep("-", "perpendis")
        terminalreporter.write_line(
            f"{len(paths) // 3} failing comparison(s): Markdown, JSON and HTML reports in {directory}"
        )
