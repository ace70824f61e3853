"""The package's shape: no import cycle in ``py/perpendis``, and no long module without a
reason.

The import graph is read from the source by the build's own reader
(``buildsite/imports.py``, which also decides what the page's wheel holds): every
``import`` counted wherever it is written (a function-level import that closes a circle is
still a circle: it only hides it until that function runs; so is one in a PEP 562
``__getattr__``), except under ``if TYPE_CHECKING:``, which never runs. ``from package
import name`` is an edge to the submodule ``package.name`` when there is one, else to the
package.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from buildsite.imports import import_graph as shared_import_graph  # noqa: E402

PACKAGE = ROOT / "py" / "perpendis"
LONG_MODULE_LINES = 500
LONG_MODULE_REASON = "Why this module is long:"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def import_graph() -> dict[str, set[str]]:
    return shared_import_graph(PACKAGE)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_reader_finds_a_cycle_through_a_function_level_import(tmp_path, monkeypatch):
    package = tmp_path / "perpendis"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import thing\n")
    type_only = "if TYPE_CHECKING:\n    from .sub import b\n"  # never runs: no edge
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nfrom . import a\n" + type_only)
    # A PEP 562 __getattr__ runs only when asked, but the circle it closes is still one.
    (package / "d.py").write_text("def __getattr__(name):\n    from .e import value\n    return value\n")
    (package / "e.py").write_text("from . import d\nvalue = 1\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", package)
    graph = import_graph()
    assert graph["perpendis.c"] == {"perpendis.a"}
    assert sorted(cycles(graph)) == [["perpendis.a", "perpendis.sub.b"], ["perpendis.d", "perpendis.e"]]


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 20, "the package's modules were not found"
    assert cycles(graph) == []


def test_a_module_over_500_lines_says_why_in_its_docstring():
    unexplained = []
    for name, path in modules().items():
        source = path.read_text()
        docstring = ast.get_docstring(ast.parse(source)) or ""
        if source.count("\n") > LONG_MODULE_LINES and LONG_MODULE_REASON not in docstring:
            unexplained.append(f"{name} ({source.count(chr(10))} lines)")
    assert unexplained == [], f"split these, or say {LONG_MODULE_REASON!r} in their docstring"


REPORT_WRITERS = {"perpendis.compare", "perpendis.report"}
"""The report is built by compare (which puts in the diagnosis' findings and verdict) and
by its own class; everyone else reads it."""


def test_only_compare_writes_a_report():
    writes = []
    for name, path in modules().items():
        if name in REPORT_WRITERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if isinstance(target, ast.Attribute) and "report" in ast.unparse(target.value).lower():
                    writes.append(f"{name}:{node.lineno}: {ast.unparse(target)}")
    assert writes == []


def test_only_the_boundary_turns_bad_input_into_an_answer():
    """``InputError.to_answer`` is called in ``service.boundary`` alone, and no other module
    builds an error answer of its own."""
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            calls_it = isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "to_answer"
            if calls_it and name != "perpendis.service.boundary":
                found.append(f"{name}:{node.lineno} calls to_answer")
            if isinstance(node, ast.Dict) and name != "perpendis.errors":
                pairs = zip(node.keys, node.values, strict=True)
                if any(getattr(k, "value", None) == "ok" and getattr(v, "value", None) is False for k, v in pairs):
                    found.append(f"{name}:{node.lineno} builds an error answer")
    assert found == []
