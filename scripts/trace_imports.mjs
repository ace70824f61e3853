// Lists the standard-library modules the page can import, so build.py can leave the rest
// of Pyodide's standard library out of the site. Runs Pyodide's own CPython under Node.js
// on a built pyodide/ folder (full standard library, the served lock and wheels), then:
//   1. loads NumPy and perpendis from the lock, as the page's worker does;
//   2. imports every module of perpendis (so modules added later count without a list);
//   3. runs perpendis.service.api.warm_up, the made-up comparisons the page runs at start;
//   4. looks up every text encoding named in perpendis's sources (`.decode("latin-1")`,
//      `encoding="..."`): codecs are imported by name when first used;
//   5. imports every NumPy subpackage (numpy.X) that a loaded module of perpendis or NumPy
//      imports anywhere or uses as np.X (NumPy imports its subpackages on first attribute
//      access, which running nothing would not see), until nothing new comes;
//   6. imports, until nothing new comes, every module named by an import statement (at
//      the top or inside a function) in any loaded module of the packages SCANNED names
//      (perpendis by default; "stdlib" stands for the standard library): what a later call
//      could import on first use. Imports inside functions of NumPy and the standard
//      library are left out by default (they would keep unittest, doctest, pdb, email and
//      http for np.info and np.testing); one the page ever makes meets build.py's guard.
// Prints one JSON object: {"modules": [standard-library module names], "numpy": [the names X
// of the loaded modules numpy.X], "extensions": [NumPy's loaded extension modules, dotted],
// "failed": [...]}.
//
// Usage: node scripts/trace_imports.mjs DIST/pyodide/ [SCANNED, comma-separated]

import { loadPyodide } from "pyodide";

const TRACE = `
import ast
import codecs
import importlib
import importlib.util
import json
import pkgutil
import sys

STDLIB = "/lib/python312.zip/"
SCANNED = set(SCANNED_JS.split(","))


def origin(module):
    spec = getattr(module, "__spec__", None)
    return (getattr(spec, "origin", None) or "") if spec else ""


def parsed(source):
    """The module's syntax tree (empty for a source that does not parse)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


def named(name, tree, is_package):
    """Absolute module names the module's tree imports, wherever the statement is."""
    package = name if is_package else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            texts = [arg for arg in node.args[:1] if isinstance(node.func, ast.Attribute)
                     and node.func.attr in ("decode", "encode")]
            texts += [kw.value for kw in node.keywords if kw.arg == "encoding"]
            ENCODINGS.update(t.value for t in texts if isinstance(t, ast.Constant) and isinstance(t.value, str))
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                head = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{head}.{base}" if base else head
            if base:
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def source_of(name):
    """A module's source without running it (a module whose import fails is still scanned)."""
    try:
        spec = importlib.util.find_spec(name)
        return spec.loader.get_source(name), spec.submodule_search_locations is not None
    except Exception:
        return None, False


failed = set()
ENCODINGS = set()


def attempt(name):
    if name in sys.modules or name in failed:
        return
    try:
        importlib.import_module(name)
    except BaseException:  # optional imports of absent packages (torch, onnx, ...) and the like
        failed.add(name)


import perpendis

project = [info.name for info in pkgutil.walk_packages(perpendis.__path__, "perpendis.", onerror=failed.add)]
for name in project:
    if name.rpartition(".")[2] != "__main__":  # runs the command line
        attempt(name)
try:
    from perpendis import api

    warm_up = getattr(api, "warm_up", None)
    if warm_up is not None:
        warm_up()
except BaseException as exc:
    failed.add(f"perpendis.service.api.warm_up: {exc!r}")

for name in project:  # imported or not (one may need the page's JavaScript to import)
    source, is_package = source_of(name)
    for imported in sorted(named(name, parsed(source), is_package) if source else ()):
        attempt(imported)

for encoding in sorted(ENCODINGS):
    try:
        codecs.lookup(encoding)
    except LookupError:
        failed.add(f"encoding {encoding}")

# NumPy's __init__ imports its subpackages (fft, polynomial, testing, ...) only on first
# attribute access (np.fft), and numpy.test() imports numpy.testing: neither counts as a use.
NUMPY_LAZY = {"numpy", "numpy._pytesttester"}


def numpy_subpackages(name, source, is_package):
    """The NumPy subpackages (numpy.X) a module asks for: by an import anywhere in it, or as np.X."""
    tree = parsed(source)
    asked = {n for n in named(name, tree, is_package) if n.startswith("numpy.")}
    asked.update(f"numpy.{node.attr}" for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                 and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"))
    return {".".join(n.split(".")[:2]) for n in asked}


def is_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False


numpy_scanned = set()
while todo := [name for name in list(sys.modules) if name not in numpy_scanned
               and name.split(".")[0] in ("perpendis", "numpy") and name not in NUMPY_LAZY]:
    for name in todo:
        numpy_scanned.add(name)
        source, is_package = source_of(name)
        for sub in sorted(numpy_subpackages(name, source, is_package) if source else ()):
            if is_module(sub):
                attempt(sub)

scanned = set()
while todo := [name for name in list(sys.modules) if name not in scanned]:
    for name in todo:
        scanned.add(name)
        module = sys.modules.get(name)
        kind = "stdlib" if origin(module).startswith(STDLIB) else name.split(".")[0]
        if module is not None and kind in SCANNED:
            source, is_package = source_of(name)
            for imported in sorted(named(name, parsed(source), is_package) if source else ()):
                attempt(imported)

modules = sorted(name for name, m in sys.modules.items() if origin(m).startswith(STDLIB))
numpy_names = sorted({name.split(".")[1] for name in sys.modules if name.startswith("numpy.")})
extensions = sorted(name for name, m in sys.modules.items() if name.startswith("numpy.") and origin(m).endswith(".so"))
json.dumps({"modules": modules, "numpy": numpy_names, "extensions": extensions, "failed": sorted(failed)})
`;

const dir = process.argv[2];
const scanned = process.argv[3] || "perpendis";
const pyodide = await loadPyodide({ indexURL: dir, stdLibURL: dir + "python_stdlib.zip", lockFileURL: dir + "pyodide-lock.json" });
await pyodide.loadPackage(["numpy", "perpendis"], { messageCallback() {} });
pyodide.globals.set("SCANNED_JS", scanned);
console.log(pyodide.runPython(TRACE));
