"""The build's parts that need no built site: the one import reader (``buildsite/imports.py``)
and the Python the build runs inside Pyodide (``buildsite/pyodide_side/``), run here by the
host's CPython on files written for the purpose."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from buildsite import common, trim  # noqa: E402
from buildsite.imports import (  # noqa: E402
    LAZY_ATTRIBUTES,
    import_graph,
    lazy_graph,
    named_imports,
    package_sources,
    reachable_modules,
)
from buildsite.pyodide_side import precompile, trace_imports  # noqa: E402


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return root / next(iter(files)).split("/")[0]


LAZY_PACKAGE = {
    "pkg/__init__.py": """
        def __getattr__(name):
            from . import heavy
            return getattr(heavy, name)
    """,
    "pkg/heavy.py": "from . import deep\n",
    "pkg/deep.py": "",
    "pkg/light.py": "",
    "pkg/asks_submodule.py": "from pkg import light\n",
    "pkg/asks_lazily.py": "from pkg import Heavy\n",
    "pkg/typed.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from . import heavy
        def later():
            from .light import thing
    """,
}


def test_a_lazy_attribute_is_reached_only_by_a_module_that_asks_for_one(tmp_path):
    graph = lazy_graph(package_sources(write_package(tmp_path, LAZY_PACKAGE)))
    assert graph["pkg" + LAZY_ATTRIBUTES] == {"pkg.heavy"}
    assert graph["pkg.asks_lazily"] == {"pkg", "pkg" + LAZY_ATTRIBUTES}
    assert "pkg.heavy" not in reachable_modules({"pkg.asks_submodule"}, graph)
    assert {"pkg.heavy", "pkg.deep"} <= reachable_modules({"pkg.asks_lazily"}, graph)


def test_type_checking_imports_are_skipped_and_function_imports_counted(tmp_path):
    package = write_package(tmp_path, LAZY_PACKAGE)
    assert import_graph(package)["pkg.typed"] == {"pkg.light"}  # pkg.light.thing: a name, not a module
    source = (package / "typed.py").read_text()
    assert named_imports("pkg.typed", ast.parse(source), False) == {"typing", "typing.TYPE_CHECKING", "pkg.light",
                                                                   "pkg.light.thing"}


def test_import_graph_folds_a_package_s_lazy_attributes_into_the_package(tmp_path):
    graph = import_graph(write_package(tmp_path, LAZY_PACKAGE))
    assert graph["pkg"] == {"pkg.heavy"}
    assert graph["pkg.asks_lazily"] == {"pkg"}
    assert not any(LAZY_ATTRIBUTES in node for targets in graph.values() for node in {*targets, *graph})


@pytest.mark.parametrize(("name", "is_package", "statement", "expected"), [
    ("a.b.c", False, "from ..x import y", {"a.x", "a.x.y"}),
    ("a.b.c", False, "from . import z", {"a.b", "a.b.z"}),
    ("a.b.c", False, "from .z import *", {"a.b.z"}),
    ("a.b", True, "from .c import d as e", {"a.b.c", "a.b.c.d"}),
    ("a", False, "import os.path, json", {"os.path", "json"}),
])
def test_named_imports_are_absolute(name, is_package, statement, expected):
    assert named_imports(name, ast.parse(statement), is_package) == expected


def test_the_trace_finds_encodings_and_numpy_subpackages_asked_for():
    source = textwrap.dedent("""
        import numpy as np
        from numpy.linalg import norm
        def f(raw, path):
            open(path, encoding="utf-16").read()
            return raw.decode("latin-1"), np.fft.rfft(raw), np.float32(1)
    """)
    assert trace_imports.encodings_named(ast.parse(source)) == {"utf-16", "latin-1"}
    asked = trace_imports.numpy_subpackages("perpendis.m", source, False)
    assert asked == {"numpy.linalg", "numpy.fft", "numpy.float32"}  # np.X: the trace keeps X if it is a module


@pytest.mark.parametrize("layout", ["zip", "wheel"])
def test_precompile_adds_bytecode_the_importer_uses(tmp_path, layout, monkeypatch):
    src, dst = tmp_path / "in.zip", tmp_path / "out.zip"
    with zipfile.ZipFile(src, "w") as archive:
        archive.writestr("mod_b34.py", "def where():\n    return where.__code__.co_filename\n")
        archive.writestr("broken_b34.py", "def (:\n")
    precompile.precompile(str(src), str(dst), layout, "/lib/at/run/time")
    with zipfile.ZipFile(dst) as archive:
        names = set(archive.namelist())
        pyc = precompile.pyc_name("mod_b34.py", layout)
        flags = int.from_bytes(archive.read(pyc)[4:8], "little")
    assert names == {"mod_b34.py", "broken_b34.py", pyc}  # a source that does not compile stays source
    assert flags == 0b01  # PEP 552: checked by hash, never against the source
    if layout == "zip":  # zipimport prefers the bytecode, which names the run-time path
        monkeypatch.syspath_prepend(str(dst))
        module = importlib.import_module("mod_b34")
        monkeypatch.delitem(sys.modules, "mod_b34")
        assert module.where() == "/lib/at/run/time/mod_b34.py"
    else:
        assert pyc == f"__pycache__/mod_b34.{sys.implementation.cache_tag}.pyc"


GUARD_RUN = """
import sys
sys.path.insert(0, sys.argv[1])
import sitecustomize
for name in sys.argv[2:]:
    try:
        __import__(name)
    except ModuleNotFoundError as err:
        print(err.name, err, sep="|")
"""
LEFT_OUT = ("no_such_module_b34", "numpy.gone_b34", f"{common.PROJECT_PACKAGE}.gone_b34")


def test_the_guard_names_a_left_out_module_and_where_to_keep_it(tmp_path):
    """The guard the build writes into the trimmed standard library, run by this CPython
    (no site: no other sitecustomize; stand-in numpy and perpendis packages)."""
    guard = ROOT / "buildsite" / "pyodide_side" / trim.TRIM_GUARD
    (tmp_path / trim.TRIM_GUARD).write_bytes(guard.read_bytes())
    (tmp_path / trim.TRIMMED_LIST).write_text("\n".join(LEFT_OUT) + "\n")
    for package in ("numpy", common.PROJECT_PACKAGE):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    done = subprocess.run([sys.executable, "-S", "-c", GUARD_RUN, str(tmp_path), *LEFT_OUT, "not_listed_b34"],
                          capture_output=True, text=True, check=True, cwd=tmp_path)
    caught = dict(line.split("|", 1) for line in done.stdout.splitlines())
    assert list(caught) == [*LEFT_OUT, "not_listed_b34"]
    stdlib, numpy, project, unlisted = caught.values()
    assert "left it out of this site's Python standard library" in stdlib and "add it to STDLIB_KEEP" in stdlib
    assert "NumPy wheel" in numpy and "add 'gone_b34' to NUMPY_KEEP" in numpy
    assert f"{common.PROJECT_PACKAGE} wheel served to this page" in project
    assert unlisted == "No module named 'not_listed_b34'"  # not the guard's: a plain miss
    assert done.stderr.splitlines() == [f"perpendis: {message}" for message in (stdlib, numpy, project)]
    for message in (stdlib, numpy):  # the file it names holds the list it names
        keep, where = re.search(r"to (\w+) in (\S+) and build again", message).groups()
        assert re.search(rf"^{keep}\b.* = ", (ROOT / where).read_text(), re.MULTILINE), (keep, where)
