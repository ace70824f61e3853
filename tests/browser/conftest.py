"""Shared Playwright harness: the real built site, served locally, in real Chromium.

Fixtures
--------
``site`` (session, from ``tests/conftest.py``)
    ``Path`` of the site built once per run: ``scripts/test.sh``'s fresh ``dist/``, else a
    build into a temporary folder (never into ``dist/``, so parallel sessions and a
    developer's own ``dist/`` never collide).
``server`` (session)
    The site served by ``scripts/serve.py`` from a background thread on a free port of
    127.0.0.1. Attributes: ``url`` (ends with ``/``), ``origin``, ``log_path`` (access log,
    one line per request, as the server saw it), ``stop()``. A test module that needs a
    server of its own (to stop it) overrides this fixture with ``serving(site, log_path)``.
``context`` (per test)
    A fresh Chromium profile (``launch_persistent_context`` on a new temporary folder), so
    every test starts cold: no cache, no storage, no service worker.
    ``context.requests`` lists every URL requested by the page, its workers and service
    worker; ``context.page_requests`` leaves out the service worker's own downloads (it
    caches the whole site for offline use, whatever the page needs). At teardown the test
    fails if any request went to another origin, if the page raised an uncaught error, or if
    the browser reported a Content-Security-Policy violation.
    ``context.console`` lists ``(type, text)`` of console messages, for assertions and
    debugging.
``page`` (per test)
    The context's page, not navigated yet.
``ready_page`` (per test)
    ``page`` navigated to the site and waited on until the ``data-testid="status"`` element
    says ``ready`` (the Python core is loaded). Fails with the last status text if it
    says ``failed`` or does not become ready in time (``wait_until_ready(page)``, also
    usable after a reload).

Chromium is Debian's ``chromium`` (``apt-get install chromium``), driven by Playwright's
Python package; Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

playwright_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import serve  # noqa: E402

READY_TIMEOUT_MS = 90_000  # cold Pyodide start on a busy 2-core machine, with a wide margin
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Nothing but the local server resolves: a request elsewhere fails fast and is still recorded.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
LOCAL_SCHEMES = ("data", "blob", "about", "chrome-extension", "devtools")


@dataclass
class Server:
    url: str
    origin: str
    log_path: Path
    httpd: ThreadingHTTPServer

    def asked(self) -> list[str]:
        """The paths of the GET requests the server has answered so far, in order (its log)."""
        lines = self.log_path.read_text().splitlines()
        return [line.split('"GET ', 1)[1].split(" ", 1)[0] for line in lines if '"GET ' in line]

    def stop(self) -> None:
        """Stop answering: afterwards connections to the origin are refused (safe to repeat)."""
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def serving(site: Path, log_path: Path, compress: bool = True) -> Iterator[Server]:
    """``site`` served from a background thread on a free port, stopped on exit; with
    ``compress=False`` as a host that compresses nothing (``scripts/serve.py --plain``)."""
    httpd = serve.make_server(site, port=0, log_path=log_path, compress=compress)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{httpd.server_address[1]}"
    server = Server(url=origin + "/", origin=origin, log_path=log_path, httpd=httpd)
    try:
        yield server
    finally:
        server.stop()


def archives(site: Path) -> list[str]:
    """The paths of the site's zip archives, which app/archives.js fetches (from their
    gzip'd copies when the host compresses nothing)."""
    return sorted(f"/pyodide/{path.name}" for path in (site / "pyodide").iterdir() if path.suffix in (".whl", ".zip"))


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("Chromium is not installed: run `apt-get install chromium` (scripts/test.sh does)")
    return path


@pytest.fixture(scope="session")
def server(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(site, tmp_path_factory.mktemp("server") / "access.log") as running:
        yield running


@pytest.fixture(scope="session")
def playwright() -> Iterator[object]:
    with playwright_api.sync_playwright() as pw:
        yield pw


@pytest.fixture
def context(playwright, server: Server, tmp_path: Path) -> Iterator[object]:
    ctx = playwright.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
    )
    ctx.requests = []
    ctx.page_requests = []
    ctx.console = []
    page_errors: list[str] = []

    # Context-level events include requests made by dedicated workers and service workers.
    def record(request) -> None:
        ctx.requests.append(request.url)
        if request.service_worker is None:
            ctx.page_requests.append(request.url)

    ctx.on("request", record)

    def watch(page) -> None:
        page.on("console", lambda message: ctx.console.append((message.type, message.text)))
        page.on("pageerror", lambda error: page_errors.append(str(error)))

    ctx.on("page", watch)
    for existing in ctx.pages:
        watch(existing)
    yield ctx
    ctx.close()

    foreign = [
        url for url in ctx.requests
        if urlsplit(url).scheme not in LOCAL_SCHEMES and not url.startswith(server.origin + "/")
    ]
    violations = [text for _, text in ctx.console if "Content Security Policy" in text]
    problems = []
    if foreign:
        problems.append(f"requests left the origin {server.origin}: {foreign}")
    if page_errors:
        problems.append(f"uncaught errors in the page: {page_errors}")
    if violations:
        problems.append(f"Content-Security-Policy violations: {violations}")
    if problems:
        pytest.fail("; ".join(problems))


@pytest.fixture
def page(context) -> object:
    return context.pages[0] if context.pages else context.new_page()


@pytest.fixture
def ready_page(page, server: Server) -> object:
    page.goto(server.url)
    wait_until_ready(page)
    return page


def wait_until_ready(page) -> None:
    """Wait until the page says its Python core is ready; fail the test if it cannot start."""
    # Also watch the client's own status, so a core that failed to start fails the test at
    # once instead of after the timeout, whatever words the page shows for it.
    page.evaluate(
        """async () => {
             const { core } = await import(new URL("app/client.js", location.href));
             core.onStatus((s) => { window.__coreStatus = s; });
           }"""
    )
    status = page.get_by_test_id("status")
    try:
        page.wait_for_function(
            """() => {
                 const text = document.querySelector('[data-testid="status"]')?.textContent ?? "";
                 return window.__coreStatus?.state === "failed" || /\\bready\\b/i.test(text);
               }""",
            timeout=READY_TIMEOUT_MS,
        )
    except playwright_api.TimeoutError:
        pytest.fail(f"the page did not become ready within {READY_TIMEOUT_MS} ms; status: {status.text_content()!r}")
    core_status = page.evaluate("() => window.__coreStatus")
    if core_status["state"] == "failed":
        pytest.fail(f"the Python core did not start: {core_status['message']}")


def wait_for_all_cores(page) -> int:
    """Wait until the core's helpers on the other CPU cores are ready; the number of cores
    comparisons then run on.  Skips the test on a one-core machine, where there are none."""
    cores = page.evaluate("navigator.hardwareConcurrency")
    if cores < 2:
        pytest.skip("one CPU core: the page has no helper to share the work with")
    workers = min(cores, 4)
    page.wait_for_function(
        "(n) => (window.__coreStatus?.message ?? '').includes(`on ${n} CPU cores`)", arg=workers, timeout=60_000
    )
    return workers
