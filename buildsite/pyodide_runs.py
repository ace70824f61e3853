"""The build's two runs of Pyodide's own CPython under Node.js (``scripts/*.mjs``, running
``buildsite/pyodide_side/*.py``): adding bytecode to archives, and tracing what the page
imports. Each takes seconds, so both are cached by the hash of everything they read."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from buildsite.common import CACHE, ROOT, BuildError, node_or_fail, sha256_of

# Where the archives live at run time in Pyodide, which bytecode names for its tracebacks.
STDLIB_AT = "/lib/python312.zip"
SITE_PACKAGES_AT = "/lib/python3.12/site-packages"
# Archives whose imports happen at every start: shipped with bytecode (scripts/precompile.mjs).
PRECOMPILE_SCRIPT = ROOT / "scripts" / "precompile.mjs"
TRACE_SCRIPT = ROOT / "scripts" / "trace_imports.mjs"
# What a runner reads besides its own script: the helper that imports the build's Python
# into Pyodide, and that Python.
RUNNER_HELPER = ROOT / "scripts" / "pyodide_side.mjs"
BUILDSITE = ROOT / "buildsite"
SIDE = BUILDSITE / "pyodide_side"
RUNNER_READS = (RUNNER_HELPER, BUILDSITE / "__init__.py", SIDE / "__init__.py")
PRECOMPILE_READS = (PRECOMPILE_SCRIPT, *RUNNER_READS, SIDE / "precompile.py")
TRACE_READS = (TRACE_SCRIPT, *RUNNER_READS, SIDE / "trace_imports.py", BUILDSITE / "imports.py")


def scripts_hash(paths: tuple[Path, ...]) -> str:
    """The hash of a runner's files: a changed one invalidates what the cache holds."""
    return sha256_of(b"".join(path.read_bytes() for path in paths))


def precompile(archives: list[tuple[Path, str, str]], cache: Path = CACHE / "pyc") -> None:
    """Replace each (path, layout, runtime prefix) archive by one that also holds bytecode.

    Results are cached by the hash of the input and of the scripts, since Pyodide under
    Node.js takes seconds to start and the inputs rarely change."""
    script_hash = scripts_hash(PRECOMPILE_READS)
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
        node = node_or_fail("precompile Python bytecode")
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            job_file = Path(tmp) / "jobs.json"
            job_file.write_text(json.dumps(jobs))
            subprocess.run([node, str(PRECOMPILE_SCRIPT), str(job_file)], cwd=ROOT, check=True)
        for job, cached in zip(jobs, made, strict=True):
            Path(job["dst"]).replace(cached)
    for path, cached in results:
        shutil.copyfile(cached, path)


def import_trace(out: Path, cache: Path = CACHE / "trace") -> dict[str, set[str]]:
    """What the page can import (``scripts/trace_imports.mjs`` on the built runtime in ``out``):
    ``stdlib``, the standard-library modules, ``numpy``, the names X of the modules numpy.X,
    and ``extensions``, NumPy's extension modules loaded (dotted names); cached by the hash
    of everything the trace reads."""
    key = hashlib.sha256()
    for path in sorted(out.iterdir()):
        if path.suffix in (".zip", ".whl", ".json"):
            key.update(path.read_bytes())
    key.update(scripts_hash(TRACE_READS).encode())
    cached = cache / f"{key.hexdigest()[:32]}.json"
    if not cached.is_file():
        node = node_or_fail("trace the standard library's imports")
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
