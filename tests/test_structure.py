"""The package's shape (docs/architecture.md): each layer imports only the layers below it,
no import cycle in ``py/perpendis``, no module over 400 lines and no function over 60
lines outside a short, named allowlist.

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
LAYERS = ("errors", "numerics", "inputs", "report", "diagnosis", "engine", "layers", "checkpoints", "service",
          "cli")
"""docs/architecture.md's layers, bottom first; the package root's own modules (the entry
points: ``perpendis``, ``testing``, ``pytest_plugin``, ``__main__``) sit above them all."""
LONG_MODULE_LINES = 400
LONG_FUNCTION_LINES = 60


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


LONG_MODULES: dict[str, str] = {
}
"""Modules still over 400 lines, each with the reason it has not been split yet."""

LONG_FUNCTIONS: dict[str, str] = {
}
"""Functions still over 60 lines, each with the reason it stays whole."""


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 20, "the package's modules were not found"
    assert cycles(graph) == []


def layer_of(name: str) -> int:
    """The rank of a module's layer in :data:`LAYERS`; the root's entry points rank above all."""
    parts = name.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def test_every_module_lives_in_a_layer_or_is_an_entry_point():
    entry_points = {"perpendis", "perpendis.__main__", "perpendis.testing", "perpendis.pytest_plugin"}
    stray = [name for name in modules() if layer_of(name) == len(LAYERS) and name not in entry_points]
    assert stray == [], "put these in a layer of docs/architecture.md"


def test_each_layer_imports_only_the_layers_below_it():
    graph = import_graph()
    upward = [f"{name} -> {other}" for name, imported in graph.items() for other in sorted(imported)
              if layer_of(other) > layer_of(name) and other != "perpendis"]
    assert upward == [], "a layer imports one above it (docs/architecture.md)"


def test_the_layer_rule_sees_an_upward_import(tmp_path, monkeypatch):
    package = tmp_path / "perpendis"
    for layer in ("numerics", "engine"):
        (package / layer).mkdir(parents=True)
        (package / layer / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "engine" / "fold.py").write_text("from ..numerics import bits\n")
    (package / "numerics" / "bits.py").write_text("def later():\n    from ..engine import fold\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", package)
    graph = import_graph()
    upward = [(n, o) for n, imported in graph.items() for o in imported if layer_of(o) > layer_of(n)]
    assert upward == [("perpendis.numerics.bits", "perpendis.engine.fold")]


def test_no_module_is_over_400_lines():
    long = [f"{name} ({path.read_text().count(chr(10))} lines)" for name, path in modules().items()
            if path.read_text().count("\n") > LONG_MODULE_LINES and name not in LONG_MODULES]
    assert long == [], "split these modules (docs/architecture.md)"


def long_functions() -> dict[str, int]:
    found = {}
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > LONG_FUNCTION_LINES:
                    found[f"{name}.{node.name}"] = lines
    return found


def test_no_function_is_over_60_lines_outside_the_allowlist():
    long = {name: lines for name, lines in long_functions().items() if name not in LONG_FUNCTIONS}
    assert long == {}, "split these functions, or name them in LONG_FUNCTIONS with a reason"


def test_the_allowlists_name_only_what_is_still_long():
    long = long_functions()  # one walk of the package, not one per entry
    stale = [name for name in LONG_FUNCTIONS if name not in long]
    stale += [name for name in LONG_MODULES if modules()[name].read_text().count("\n") <= LONG_MODULE_LINES]
    assert stale == [], "these are short now: take them off the allowlist"


REPORT_WRITERS = {"perpendis.engine.compare", "perpendis.report.model"}
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
            if isinstance(node, ast.Dict) and name not in ("perpendis.errors", "perpendis.service.boundary"):
                pairs = zip(node.keys, node.values, strict=True)
                if any(getattr(k, "value", None) == "ok" and getattr(v, "value", None) is False for k, v in pairs):
                    found.append(f"{name}:{node.lineno} builds an error answer")
    assert found == []
