"""The page works from any static host: one that sends build.py's gzip'd copies (as
scripts/serve.py, nginx's gzip_static or Caddy's precompressed do) transfers far fewer bytes,
and one that ignores them serves every file at full size, and the page works the same."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import serve
from conftest import Server, wait_until_ready
from perpendis import api
from playwright.sync_api import expect


@pytest.fixture(params=["gzip", "plain"])
def server(request, site: Path, tmp_path: Path) -> Iterator[Server]:
    """A server of this test's own (overrides the session one): sending the gzip'd copies, or not."""
    log_path = tmp_path / "access.log"
    httpd = serve.make_server(site, port=0, log_path=log_path, compress=request.param == "gzip")
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{httpd.server_address[1]}"
    running = Server(url=origin + "/", origin=origin, log_path=log_path, httpd=httpd)
    running.compress = request.param == "gzip"
    try:
        yield running
    finally:
        running.stop()


def test_first_visit_starts_and_compares_with_or_without_compression(page, context, server, site: Path):
    page.goto(server.url)
    wait_until_ready(page)
    sent = server.httpd.bytes_sent
    requested = {urlsplit(url).path for url in context.page_requests}
    plain = sum((site / (path.lstrip("/") or "index.html")).stat().st_size for path in requested)
    assert "/pyodide/pyodide.asm.wasm" in requested
    if server.compress:
        # The wasm alone shrinks from 10 MB to about 3: gzip'd copies were sent.
        assert sent < 0.75 * plain, (sent, plain)
    else:
        assert sent > plain, (sent, plain)  # every body at full size, plus headers

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
