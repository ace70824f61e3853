"""The page's own files as the build rewrites them: the scripts written into the classic
scripts that import them, the page's modules bundled into one (esbuild), and the service
worker's list of every file of the site with its hash."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from buildsite.common import ROOT, BuildError, sha256_of
from buildsite.compress import PRECOMPRESSED_SUFFIXES

# The service worker is published at the site root, so its scope covers the page; the build
# writes the file list over this exact line of the source.
SERVICE_WORKER = ROOT / "app" / "sw.js"
SERVICE_WORKER_FILES_LINE = 'const BUILD = { version: "unbuilt", files: [] }; // build.py: files'
# Scripts build.py writes into the classic scripts that import them (inline_scripts), each over
# its one importScripts line, innermost first: (importing script, imported script), in app/.
INLINED = (("boot.js", "archives.js"), ("worker.js", "boot.js"), ("worker.js", "protocol.js"))
# The page's modules, bundled into one file by esbuild (package.json): all of them but the
# core's client, which stays a module of its own (index.html loads it first, and the page,
# the tests and the benchmarks must share its one instance).
PAGE_BUNDLE = "page.js"
PAGE_UNBUNDLED = ("./client.js",)
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"


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


def import_line(script: str) -> str:
    """The line of a classic script that imports ``script``, which ``inline_scripts`` replaces."""
    return f'importScripts("{script}");'


def inline_scripts(app: Path) -> None:
    """Write each script of ``INLINED`` into the one importing it (``app/archives.js`` into
    ``app/boot.js``, then that and ``app/protocol.js`` into ``app/worker.js``) in place of its ``importScripts``
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
