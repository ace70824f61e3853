"""Lists the standard-library modules the page can import, run by ``scripts/trace_imports.mjs``
in Pyodide's own CPython under Node.js with NumPy and perpendis loaded from a built site's
lock, as the page's worker loads them. ``trace`` then:

1. imports every module of perpendis (so modules added later count without a list);
2. runs perpendis.service.api.warm_up, the made-up comparisons the page runs at start;
3. imports every module named by an import statement of a module of perpendis;
4. looks up every text encoding named in perpendis's sources (``.decode("latin-1")``,
   ``encoding="..."``): codecs are imported by name when first used;
5. imports every NumPy subpackage (numpy.X) that a loaded module of perpendis or NumPy
   imports anywhere or uses as np.X (NumPy imports its subpackages on first attribute
   access, which running nothing would not see), until nothing new comes;
6. imports, until nothing new comes, every module named by an import statement (at the top
   or inside a function) in any loaded module of the packages ``scanned`` names (perpendis
   by default; "stdlib" stands for the standard library): what a later call could import on
   first use. Imports inside functions of NumPy and the standard library are left out by
   default (they would keep unittest, doctest, pdb, email and http for np.info and
   np.testing); one the page ever makes meets the build's guard (``sitecustomize.py``).

Every standard-library module loaded in this interpreter counts, this script's own imports
too: they are few, and ``buildsite.imports`` (the build's one import reader) adds none.
"""

import ast
import codecs
import importlib
import importlib.util
import json
import pkgutil
import sys

from buildsite.imports import named_imports

STDLIB = "/lib/python312.zip/"
# NumPy's __init__ imports its subpackages (fft, polynomial, testing, ...) only on first
# attribute access (np.fft), and numpy.test() imports numpy.testing: neither counts as a use.
NUMPY_LAZY = {"numpy", "numpy._pytesttester"}


def origin(module) -> str:
    spec = getattr(module, "__spec__", None)
    return (getattr(spec, "origin", None) or "") if spec else ""


def parsed(source: str) -> ast.Module:
    """The module's syntax tree (empty for a source that does not parse)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


def encodings_named(tree: ast.AST) -> set[str]:
    """The text encodings a module names as a constant (``.decode("latin-1")``, ``encoding=``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            texts = [arg for arg in node.args[:1] if isinstance(node.func, ast.Attribute)
                     and node.func.attr in ("decode", "encode")]
            texts += [kw.value for kw in node.keywords if kw.arg == "encoding"]
            found.update(t.value for t in texts if isinstance(t, ast.Constant) and isinstance(t.value, str))
    return found


def source_of(name: str) -> tuple[str | None, bool]:
    """A module's source without running it (a module whose import fails is still scanned)."""
    try:
        spec = importlib.util.find_spec(name)
        return spec.loader.get_source(name), spec.submodule_search_locations is not None
    except Exception:
        return None, False


def imports_in(name: str) -> set[str]:
    """The absolute names module ``name``'s source imports (none if it has no source)."""
    source, is_package = source_of(name)
    return named_imports(name, parsed(source), is_package) if source else set()


def attempt(name: str, failed: set[str]) -> None:
    if name in sys.modules or name in failed:
        return
    try:
        importlib.import_module(name)
    except BaseException:  # optional imports of absent packages (torch, onnx, ...) and the like
        failed.add(name)


def numpy_subpackages(name: str, source: str, is_package: bool) -> set[str]:
    """The NumPy subpackages (numpy.X) a module asks for: by an import anywhere in it, or as np.X."""
    tree = parsed(source)
    asked = {n for n in named_imports(name, tree, is_package) if n.startswith("numpy.")}
    asked.update(f"numpy.{node.attr}" for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                 and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"))
    return {".".join(n.split(".")[:2]) for n in asked}


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False


def import_project(failed: set[str]) -> None:
    """Steps 1 to 4: perpendis's modules, its warm-up, their imports and their encodings."""
    import perpendis

    project = [info.name for info in pkgutil.walk_packages(perpendis.__path__, "perpendis.", onerror=failed.add)]
    for name in project:
        if name.rpartition(".")[2] != "__main__":  # runs the command line
            attempt(name, failed)
    try:
        from perpendis.service import api

        warm_up = getattr(api, "warm_up", None)
        if warm_up is not None:
            warm_up()
    except BaseException as exc:
        failed.add(f"perpendis.service.api.warm_up: {exc!r}")
    encodings = set()
    for name in project:  # imported or not (one may need the page's JavaScript to import)
        source, _ = source_of(name)
        encodings |= encodings_named(parsed(source)) if source else set()
        for imported in sorted(imports_in(name)):
            attempt(imported, failed)
    for encoding in sorted(encodings):
        try:
            codecs.lookup(encoding)
        except LookupError:
            failed.add(f"encoding {encoding}")


def import_numpy_subpackages(failed: set[str]) -> None:
    """Step 5: the NumPy subpackages loaded modules ask for, to a fixpoint."""
    numpy_scanned = set()
    while todo := [name for name in list(sys.modules) if name not in numpy_scanned
                   and name.split(".")[0] in ("perpendis", "numpy") and name not in NUMPY_LAZY]:
        for name in todo:
            numpy_scanned.add(name)
            source, is_package = source_of(name)
            for sub in sorted(numpy_subpackages(name, source, is_package) if source else ()):
                if is_module(sub):
                    attempt(sub, failed)


def import_what_scanned_import(scanned_kinds: set[str], failed: set[str]) -> None:
    """Step 6: the imports of every loaded module of the scanned packages, to a fixpoint."""
    scanned = set()
    while todo := [name for name in list(sys.modules) if name not in scanned]:
        for name in todo:
            scanned.add(name)
            module = sys.modules.get(name)
            kind = "stdlib" if origin(module).startswith(STDLIB) else name.split(".")[0]
            if module is not None and kind in scanned_kinds:
                for imported in sorted(imports_in(name)):
                    attempt(imported, failed)


def trace(scanned: str = "perpendis") -> str:
    """One JSON object: {"modules": [standard-library module names], "numpy": [the names X
    of the loaded modules numpy.X], "extensions": [NumPy's loaded extension modules, dotted],
    "failed": [...]}; ``scanned`` is a comma-separated list of the packages of step 6."""
    failed: set[str] = set()
    import_project(failed)
    import_numpy_subpackages(failed)
    import_what_scanned_import(set(scanned.split(",")), failed)
    modules = sorted(name for name, m in sys.modules.items() if origin(m).startswith(STDLIB))
    numpy_names = sorted({name.split(".")[1] for name in sys.modules if name.startswith("numpy.")})
    extensions = sorted(name for name, m in sys.modules.items()
                        if name.startswith("numpy.") and origin(m).endswith(".so"))
    return json.dumps({"modules": modules, "numpy": numpy_names, "extensions": extensions, "failed": sorted(failed)})
