"""Leaving out of the site what the page never uses: the standard-library modules no traced
import needs and their sources where bytecode is shipped, NumPy's tests, headers, stubs,
untraced subpackages and extension modules, and the modules of perpendis no import reaches
from those the page's scripts call. What is left out is listed for the guard
(``pyodide_side/sitecustomize.py``), which makes an import of it fail naming it."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

from buildsite.common import PROJECT_PACKAGE, ROOT, BuildError
from buildsite.imports import lazy_graph, reachable_modules
from buildsite.pyodide_runs import STDLIB_AT, precompile
from buildsite.zips import (
    WHEEL_RECORD,
    extension_module,
    has_bytecode,
    module_of,
    report,
    rewrite_zip,
    sourceless_place,
    wheel_module,
)

# The page's scripts, read for the modules of perpendis they call by name: the roots of the
# import graph that decides which of its modules the served wheel holds.
PAGE_SCRIPTS = ROOT / "app"
PAGE_ENTRY_PATTERN = re.compile(r"""pyimport\(\s*["'](perpendis(?:\.\w+)*)["']\s*\)""")
# Standard-library modules (or whole packages) kept besides those the trace finds. Add one
# here when the page's console says "build.py left it out": an import the trace cannot see
# (a name built at run time, a function of NumPy or of the standard library first called;
# a codec named at run time, `encodings.<name>`). `pyodide`, `_pyodide`: Pyodide's
# JavaScript calls into them by name.
STDLIB_KEEP = ("pyodide", "_pyodide")
# NumPy subpackages (numpy.X) and extension modules (numpy.X.Y, of a kept X) kept besides
# those the trace finds, named without "numpy.". NumPy imports a subpackage on first
# attribute access (np.fft), so a use the trace misses (a name built at run time) says
# "build.py left it out" on the page's console, naming what to add here.
NUMPY_KEEP: tuple[str, ...] = ()
# Written into the trimmed standard library: the guard (imported by `site` at every start)
# and the names of the modules left out, which it reads only when an import misses.
TRIM_GUARD = "sitecustomize.py"
TRIMMED_LIST = "_perpendis_trimmed.txt"
GUARD_FILE = Path(__file__).parent / "pyodide_side" / TRIM_GUARD
# NumPy files nothing imports at run time: its tests (Pyodide ships them apart already;
# any left are dropped), C headers, static libraries, Cython declarations and type stubs.
NUMPY_UNUSED_SUFFIXES = (".h", ".a", ".pxd", ".pyx", ".pyi", ".c", ".pc", ".ini", ".cfg", ".template", ".build")


def page_entry_modules(scripts: Path = PAGE_SCRIPTS) -> set[str]:
    """The modules of perpendis the page's JavaScript imports by name."""
    found = {match for path in sorted(scripts.rglob("*.js")) for match in PAGE_ENTRY_PATTERN.findall(path.read_text())}
    if not found:
        raise BuildError(f"no pyimport(\"{PROJECT_PACKAGE}...\") found in {scripts}: the page would load nothing")
    return found


def trim_project_wheel(wheel: Path, entries: set[str]) -> list[str]:
    """Leave out of the served wheel the modules of perpendis no import reaches from
    ``entries`` (the command line, the pytest plugin, ...); returns their names, for the
    guard that names one if it is ever imported in the page."""
    with zipfile.ZipFile(wheel) as archive:
        sources = {
            module: (archive.read(member).decode(), member.endswith("/__init__.py"))
            for member in archive.namelist()
            if (module := wheel_module(member)) is not None
        }
    missing = entries - set(sources)
    if missing:
        raise BuildError(f"the page's scripts import {sorted(missing)}, which {wheel.name} does not hold")
    known = set(sources)
    reached = reachable_modules(entries, lazy_graph(sources)) & known
    left_out = sorted(known - reached)
    removed = rewrite_zip(wheel, lambda member, _: wheel_module(member) not in left_out
                          and not member.endswith(WHEEL_RECORD))
    report(f"modules of {PROJECT_PACKAGE} the page cannot reach from {', '.join(sorted(entries))} "
           f"({len(left_out)}: {', '.join(left_out)}; their bytecode is not made either)", removed)
    return left_out


def is_test(name: str) -> bool:
    return "tests" in name.split("/")[:-1]


def numpy_needs(name: str, names: set[str]) -> bool:
    if (name.endswith(".py") and has_bytecode(name, names)) or name.endswith(WHEEL_RECORD):
        return False
    return not name.endswith(NUMPY_UNUSED_SUFFIXES)


def in_subpackage(member: str, package: str, subpackages: Iterable[str]) -> bool:
    """Whether the wheel member ``member`` lies in one of the subpackages ``package.X``."""
    head, _, rest = member.partition("/")
    return head == package and "/" in rest and rest.partition("/")[0] in subpackages


def untraced_subpackages(wheel: Path, package: str, traced: set[str]) -> list[str]:
    """The subpackages ``package.X`` of the wheel whose X is not in ``traced``."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    inits = {name.split("/")[1] for name in names if name.startswith(f"{package}/") and name.count("/") == 2
             and name.endswith(("/__init__.py", "/__init__.pyc"))}
    return sorted(inits - traced)


def untraced_extensions(wheel: Path, traced: set[str], kept: Iterable[str] = ()) -> list[str]:
    """The extension modules of the wheel neither in ``traced`` nor named by ``kept``, itself
    or by a package it lies in (a subpackage kept whole keeps its extension modules). Pyodide
    compiles every shared library of a wheel when it installs it, whether or not anything
    imports it."""
    with zipfile.ZipFile(wheel) as archive:
        found = {extension_module(name) for name in archive.namelist()} - {None}
    prefixes = tuple(f"{name}." for name in kept)
    return sorted(m for m in found - traced - set(kept) if not m.startswith(prefixes))


def kept_in_stdlib(module: str, traced: set[str]) -> bool:
    parts = module.split(".")
    wanted = {".".join(parts[: i + 1]) for i in range(len(parts))}
    return module in traced or bool(wanted & set(STDLIB_KEEP))


def trim_stdlib(path: Path, traced: set[str], wheels_left_out: Iterable[str] = ()) -> None:
    """Leave out of the standard library what no traced import needs, and the sources of
    what is kept where bytecode is shipped; add the guard that names a left-out module
    (of the standard library, or ``wheels_left_out``, left out of the project's or NumPy's wheel)."""
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
    modules = {module_of(name) for name in names if name.endswith((".py", ".pyc"))}
    left_out = sorted(m for m in modules if not kept_in_stdlib(m, traced))

    def needed(name: str, _: set[str]) -> bool:
        module = module_of(name)
        return not name.startswith("site-packages/") and (module == "" or kept_in_stdlib(module, traced))

    removed = rewrite_zip(path, needed)
    report(f"standard-library modules nothing imports ({len(left_out)} modules)", removed)
    removed = rewrite_zip(
        path,
        lambda name, _: not (name.endswith(".py") and has_bytecode(name, names)),
        {TRIM_GUARD: GUARD_FILE.read_bytes(),
         TRIMMED_LIST: "\n".join([*left_out, *wheels_left_out]).encode() + b"\n"},
    )
    report("the standard library's .py sources beside bytecode", removed)
    precompile([(path, "zip", STDLIB_AT)])  # the guard's own bytecode (cached by content)
    rewrite_zip(path, lambda name, _: name != TRIM_GUARD)


def trim_numpy_wheel(wheel: Path, traced: set[str], extensions_loaded: set[str]) -> list[str]:
    """Leave out of NumPy's wheel the subpackages and extension modules no import of the
    trace reaches (``traced``: the names X of numpy.X; besides ``NUMPY_KEEP``), then its
    sources where bytecode is shipped, headers, stubs and RECORD; returns the dotted names
    of what was left out, for the guard."""
    subpackages = untraced_subpackages(wheel, "numpy", traced | set(NUMPY_KEEP))
    report(f"NumPy subpackages nothing imports ({', '.join(subpackages)})",
           rewrite_zip(wheel, lambda name, _: not in_subpackage(name, "numpy", subpackages)))
    extensions = untraced_extensions(wheel, extensions_loaded, {f"numpy.{k}" for k in NUMPY_KEEP})
    report(f"NumPy extension modules nothing imports ({', '.join(extensions)})",
           rewrite_zip(wheel, lambda name, _: extension_module(name) not in extensions))
    report("NumPy's .py sources beside bytecode, headers, stubs, its RECORD",
           rewrite_zip(wheel, numpy_needs, rename=sourceless_place))
    return [*(f"numpy.{s}" for s in subpackages), *extensions]
