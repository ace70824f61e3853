"""The one reader of a Python package's imports, from its source (no module is run).

Three users read imports the same way through it: the build (which modules of perpendis
the page can reach, ``trim.trim_project_wheel``), the import trace that runs inside
Pyodide (what a loaded module could import on first use, ``pyodide_side/trace_imports.py``)
and ``tests/test_structure.py`` (no import cycle). An import counts wherever it is written
(a function's import runs when the function is called), except under ``if TYPE_CHECKING:``,
which never runs. ``from package import name`` is the submodule ``package.name`` when there
is one, else a name asked of ``package``.

The trace runs this module in the page's own interpreter and counts every standard-library
module loaded there as one the page needs, so it imports ``ast`` alone.
"""

from __future__ import annotations

import ast

TYPE_CHECKING = False  # not typing's: importing typing here would make the trace keep it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

LAZY_ATTRIBUTES = ":__getattr__"  # the node of a package's lazy attributes (PEP 562) in the graph


def runnable_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:``, which never runs."""
    never_run = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    return (node for node in ast.walk(tree) if id(node) not in never_run)


def absolute(package: str, module: str | None, level: int) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in ``package``."""
    target = module or ""
    if level:
        base = package.split(".")
        target = ".".join(base[: len(base) - level + 1] + ([target] if target else []))
    return target


def import_statements(tree: ast.AST, package: str) -> Iterator[tuple[ast.AST, str, list[str] | None]]:
    """Each import that can run, as (statement, module, names taken from it): ``import a.b``
    gives ``a.b`` and None, ``from .a import b, c`` the absolute ``package.a`` and [b, c]."""
    for node in runnable_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            yield node, absolute(package, node.module, node.level), [alias.name for alias in node.names]


def package_of(name: str, is_package: bool) -> str:
    """The package a module's relative imports start from."""
    return name if is_package else name.rpartition(".")[0]


def named_imports(name: str, tree: ast.AST, is_package: bool) -> set[str]:
    """Every absolute name module ``name`` imports, known or not: ``from a import b`` names
    both ``a`` and ``a.b`` (which may be a submodule). What the import trace tries to import."""
    names: set[str] = set()
    for _, target, taken in import_statements(tree, package_of(name, is_package)):
        if taken is None:
            names.add(target)
        elif target:
            names.add(target)
            names.update(f"{target}.{alias}" for alias in taken if alias != "*")
    return names


def module_edges(name: str, source: str, is_package: bool, known: set[str]) -> dict[str, set[str]]:
    """The modules among ``known`` that module ``name`` imports, as graph edges: ``name`` to
    what it imports, and ``name:__getattr__`` to what a module-level ``__getattr__`` imports,
    which runs only when a module asks the package for a name it does not hold (``from
    package import other``, ``package.other``): such an ask is an edge to
    ``package:__getattr__``, so a lazy attribute nobody asks for is not reached."""
    tree = ast.parse(source, name)
    lazy = {
        id(inner)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
        for inner in ast.walk(node)
    }
    edges: dict[str, set[str]] = {name: set(), name + LAZY_ATTRIBUTES: set()}
    for node, target, taken in import_statements(tree, package_of(name, is_package)):
        found = edges[name + LAZY_ATTRIBUTES] if id(node) in lazy else edges[name]
        for alias in taken or ():
            submodule = f"{target}.{alias}"
            found.update([submodule] if submodule in known else [target, target + LAZY_ATTRIBUTES])
        if taken is None:
            found.add(target)
    for node in runnable_nodes(tree):
        if isinstance(node, ast.Attribute) and (owner := ast.unparse(node.value)) in known:
            submodule = f"{owner}.{node.attr}"
            found = edges[name + LAZY_ATTRIBUTES] if id(node) in lazy else edges[name]
            found.add(submodule if submodule in known else owner + LAZY_ATTRIBUTES)
    targets = known | {module + LAZY_ATTRIBUTES for module in known}
    return {node: {module for module in found if module in targets and module != node} for node, found in edges.items()}


def lazy_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """The graph of a package given as {module: (source, is a package)}, each package's lazy
    attributes a node of their own (``module_edges``): what the build's reach follows."""
    known = set(sources)
    graph: dict[str, set[str]] = {}
    for name, (source, is_package) in sources.items():
        graph |= module_edges(name, source, is_package, known)
    return graph


def package_sources(package_dir: Path) -> dict[str, tuple[str, bool]]:
    """{dotted module: (source, is a package)} of every ``.py`` file under ``package_dir``."""
    sources = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        sources[".".join(parts[:-1] if is_package else parts)] = (path.read_text(), is_package)
    return sources


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """{module: the modules of the package it imports} for the package at ``package_dir``,
    lazy imports (in functions, in a PEP 562 ``__getattr__``) counted as the module's own:
    a cycle they close is still a cycle, hidden only until they run."""
    graph: dict[str, set[str]] = {}
    for node, targets in lazy_graph(package_sources(package_dir)).items():
        module = node.removesuffix(LAZY_ATTRIBUTES)
        imported = {target.removesuffix(LAZY_ATTRIBUTES) for target in targets}
        graph.setdefault(module, set()).update(imported - {module})
    return graph


def reachable_modules(entries: set[str], graph: dict[str, set[str]]) -> set[str]:
    """Every module an import of ``entries`` can run: their imports, to a fixpoint, and
    the packages above each module (importing ``a.b`` runs ``a/__init__.py`` first)."""
    seen: set[str] = set()
    todo = sorted(entries)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(graph.get(module, ()))
    return seen
