"""pytest plugin: ``--perpendis-report DIR`` keeps the whole report of every failing comparison.

Registered through the ``pytest11`` entry point, so installing the package is enough. A
failing :func:`~perpendis.testing.assert_same` already explains itself on one screen; with
this option each failing test whose failure is (or was raised from) a comparison also leaves
three files in DIR, named after the test: the Markdown (for an issue), the JSON (every
number, for tools) and a self-contained HTML page (no server, no request: open it from the
CI artefacts). The test's report gets a section naming them (and, for ``--junitxml``, a
``perpendis_report`` property with the HTML's path), and the terminal summary says where
they went.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from .report_html import render_page
from .testing import ComparisonError

_KEY = pytest.StashKey[list[Path]]()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


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


def comparison_error(exc: BaseException | None) -> ComparisonError | None:
    """The failing comparison behind an exception: itself, or one it was raised from."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ComparisonError):
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
    return paths


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    rep = yield
    directory = item.config.getoption("perpendis_report")
    error = comparison_error(call.excinfo.value) if call.excinfo is not None else None
    if directory and error is not None and rep.failed:
        stem = file_stem(item.nodeid, call.when)
        written = {p.stem for p in item.config.stash[_KEY]}
        # Two test ids can differ only in the characters a file name cannot hold.
        stem = next(s for n in itertools.count(1) if (s := stem if n == 1 else f"{stem}-{n}") not in written)
        paths = write_report(Path(directory), stem, error, f"Perpendis: {item.nodeid}")
        item.config.stash[_KEY].extend(paths)
        rep.sections.append(("perpendis report", "\n".join(str(p) for p in paths)))
        item.user_properties.append(("perpendis_report", str(paths[-1])))  # the HTML, for --junitxml
    return rep


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    paths = config.stash.get(_KEY, [])
    if paths:
        directory = paths[0].parent
        terminalreporter.write_sep("-", "perpendis")
        terminalreporter.write_line(
            f"{len(paths) // 3} failing comparison(s): Markdown, JSON and HTML reports in {directory}"
        )
