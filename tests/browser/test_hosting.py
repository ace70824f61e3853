"""The page works from any static host: one that sends build.py's gzip'd copies (as
scripts/serve.py, nginx's gzip_static or Caddy's precompressed do) transfers far fewer bytes,
and from one that ignores them the page takes the archives' gzip'd copies by name
(app/archives.js) and every other file at full size, and works the same."""

from __future__ import annotations

import gzip
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from conftest import Server, archives, serving, wait_until_ready
from perpendis.service import api

pytest.importorskip("playwright")
from playwright.sync_api import expect


@pytest.fixture(params=["gzip", "plain"])
def server(request, site: Path, tmp_path: Path) -> Iterator[Server]:
    """A server of this test's own (overrides the session one): sending the gzip'd copies, or
    not; given ("plain", "damaged"), a plain host of a copy of the site with a damaged copy."""
    mode, *damaged = (request.param,) if isinstance(request.param, str) else request.param
    served = with_a_damaged_numpy_copy(site, tmp_path / "dist") if damaged else site
    with serving(served, tmp_path / "access.log", compress=mode == "gzip") as running:
        running.compress = mode == "gzip"
        yield running


def with_a_damaged_numpy_copy(site: Path, to: Path) -> Path:
    """A copy of ``site`` whose NumPy wheel's gzip'd copy inflates to bytes one bit off."""
    shutil.copytree(site, to)
    (wheel,) = (to / "pyodide").glob("numpy-*.whl")
    copy = wheel.with_name(wheel.name + ".gz")
    data = bytearray(gzip.decompress(copy.read_bytes()))
    data[-1] ^= 1
    copy.write_bytes(gzip.compress(bytes(data)))
    return to


def full_size(site: Path, paths) -> int:
    """The bytes of the files of ``site`` at these request paths, as a plain host sends them."""
    return sum((site / (path.lstrip("/") or "index.html")).stat().st_size for path in paths)


def test_first_visit_starts_and_compares_with_or_without_compression(page, context, server, site: Path):
    page.goto(server.url)
    wait_until_ready(page)
    sent = server.httpd.bytes_sent
    requested = {urlsplit(url).path for url in context.page_requests}
    plain = full_size(site, requested)
    assert "/pyodide/pyodide.asm.wasm" in requested
    asked = server.asked()
    if server.compress:
        # The wasm alone shrinks from 10 MB to about 3: gzip'd copies were sent.
        assert sent < 0.75 * plain, (sent, plain)
        # Each archive came compressed in transit, so its copy was not asked for by name.
        assert not [path for path in archives(site) if path + ".gz" in asked], asked
    else:
        # Each archive from its gzip'd copy, inflated in the page; the rest at full size.
        assert all(path + ".gz" in asked for path in archives(site)), asked
        at_full_size = full_size(site, [path for path in requested if not path.endswith((".whl", ".zip", ".gz"))])
        assert sent > at_full_size, (sent, at_full_size)

    a = np.array([0.5, 1.25, -2.0], dtype=np.float32)
    b = a.copy()
    b[1] = np.nextafter(b[1], np.float32(2))
    page.get_by_test_id("paste-a").fill(repr(a))
    page.get_by_test_id("paste-b").fill(repr(b))
    page.get_by_test_id("compare").click()
    request = {"op": "compare", "inputs": {"a": {"text": repr(a)}, "b": {"text": repr(b)}}, "options": {}}
    verdict = api.handle(request, {})["report"]["verdict"]
    expect(page.get_by_test_id("verdict")).to_have_text(re.compile(f"^{verdict}\\b", re.I), timeout=30_000)


def test_a_first_visit_downloads_the_runtime_once_and_before_the_worker_asks(page, server):
    # app/client.js prefetches the WebAssembly; the worker's request must take that response
    # (the HTTP cache), not download 10 MB again, and the prefetch must come first.
    page.goto(server.url)
    wait_until_ready(page)
    asked = server.asked()
    assert asked.count("/pyodide/pyodide.asm.wasm") == 1, asked
    assert asked.index("/pyodide/pyodide.asm.wasm") < asked.index("/pyodide/pyodide.js"), asked


@pytest.mark.parametrize("server", [("plain", "damaged")], indirect=True)
def test_a_damaged_archive_copy_stops_the_start_naming_the_file(page, server, site: Path):
    # The copy a plain host's visitor gets must inflate to the bytes the lock pins.
    (wheel,) = (site / "pyodide").glob("numpy-*.whl")
    page.goto(server.url)
    status = page.get_by_test_id("status")
    expect(status).to_contain_text("could not start", timeout=60_000)
    text = status.text_content()
    assert f"numpy could not be loaded: {server.origin}/pyodide/{wheel.name}: its bytes do not match" in text, text
    assert "Traceback" not in text, text
