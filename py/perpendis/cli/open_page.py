"""``python -m perpendis A B --open``: the page, served on this machine with A and B preloaded.

The built site (``python build.py`` writes it to ``dist/``) is served on 127.0.0.1 at a free
port, and the browser is opened on ``/?open=TOKEN``. ``TOKEN`` is a fresh random string: the
page's loader (``app/open.js``) fetches ``open/TOKEN/manifest.json`` and then each input
from ``open/TOKEN/<side>``, same-origin, so the strict Content-Security-Policy
(``connect-src 'self'``) holds and the bytes go from this process to the tab over the
loopback interface and nowhere else. Only the files named on the command line are served
under that path; a wrong token is a 404. The server runs until Ctrl-C.

Where the site comes from, first found: ``--site DIR``, ``$PERPENDIS_SITE``, ``dist/`` of
the checkout this package is imported from. A wheel does not ship the site: it is built
from this very package with Pyodide by ``build.py`` (npm, and some 30 MB of wasm and
wheels), which a ``pip install`` cannot do and a wheel of it would carry for every user of
the CLI and the pytest plugin. So where no site is found (an installed package, no
checkout), the comparison is made here and its report opened as the self-contained HTML
page the pytest plugin writes: every finding, the worst elements and the histogram, with
no server and no request; the line printed says how to get the interactive page. A site
named by ``--site`` or ``$PERPENDIS_SITE`` that is not one is an error (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import sys
import webbrowser
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InputError
from . import exits

if TYPE_CHECKING:
    from ..report.model import Report

SITE_ENV = "PERPENDIS_SITE"
CHECKOUT_SITE = Path(__file__).resolve().parents[2] / "dist"  # py/perpendis/ -> the checkout's dist/
OPEN_PREFIX = "/open/"
SIDES = ("a", "b", "ref")
_CSP_META = re.compile(r'<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]+)"', re.IGNORECASE)


def build_hint() -> str:
    return (
        "the built page was not found. In a checkout of Perpendis, run `python build.py` (it fetches "
        "Pyodide with npm and writes the site to dist/, where this command finds it); or pass --site DIR "
        f"(or set {SITE_ENV}) to a site build.py wrote elsewhere"
    )


def built_site(explicit: Path | None) -> Path | None:
    """The built site to serve, None when there is none at all (an installed package);
    :class:`InputError` when the one named by ``--site`` or the environment is not a site."""
    named = explicit or (Path(os.environ[SITE_ENV]) if os.environ.get(SITE_ENV) else None)
    site = named or CHECKOUT_SITE
    if (site / "index.html").is_file() and (site / "pyodide").is_dir():
        return site
    if named is not None:
        raise InputError(f"{site} is not a site built by build.py (it lacks index.html or pyodide/); {build_hint()}")
    return None


def page_csp(site: Path) -> str:
    """The Content-Security-Policy of the built page, sent as a header on every response (a
    worker's policy comes from its own response); taken from the page so the two cannot differ."""
    found = _CSP_META.search((site / "index.html").read_text(encoding="utf-8"))
    if found is None:
        raise InputError(f"{site / 'index.html'} has no Content-Security-Policy meta tag; rebuild it with build.py")
    return found.group(1)


class OpenHandler(SimpleHTTPRequestHandler):
    """The static site, plus the inputs at ``/open/<token>/``; every response carries the CSP."""

    # Streaming compilation refuses wasm of any other type, whatever a system's mime.types says.
    extensions_map: ClassVar[dict[str, str]] = {
        **SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm", ".whl": "application/zip",
    }

    def __init__(self, *args: Any, token: str, inputs: dict[str, Path], options: dict[str, Any], csp: str,
                 **kwargs: Any) -> None:
        self.token, self.inputs, self.options, self.csp = token, inputs, options, csp
        super().__init__(*args, **kwargs)

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", self.csp)
        self.send_header("Cache-Control", "no-store" if self.path.startswith(OPEN_PREFIX) else "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        super().end_headers()

    def do_GET(self) -> None:
        if not self.path.startswith(OPEN_PREFIX):
            super().do_GET()
            return
        token, _, name = self.path.split("?", 1)[0][len(OPEN_PREFIX):].partition("/")
        if not secrets.compare_digest(token, self.token):
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        if name == "manifest.json":
            body = json.dumps({"inputs": {side: path.name for side, path in self.inputs.items()},
                               "options": self.options}).encode()
            self._headers(len(body), "application/json")
            self.wfile.write(body)
        elif name in self.inputs:
            # Copied through in blocks: an input may be gigabytes, streamed by the page.
            with open(self.inputs[name], "rb") as source:
                self._headers(os.fstat(source.fileno()).st_size, "application/octet-stream")
                shutil.copyfileobj(source, self.wfile, 1 << 20)
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def _headers(self, length: int, content_type: str) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the terminal shows the address and how to stop, not one line per file of Pyodide


class QuietServer(ThreadingHTTPServer):
    """A tab closed or reloaded mid-download resets its connections: nothing went wrong that
    the user must read about, so those are not printed as tracebacks; anything else is."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def make_server(site: Path, inputs: dict[str, Path], options: dict[str, Any], port: int = 0,
                token: str | None = None) -> tuple[ThreadingHTTPServer, str]:
    """A server on 127.0.0.1 (``port`` 0: a free one) and the page's URL with its token."""
    token = token or secrets.token_urlsafe(24)
    handler = functools.partial(OpenHandler, directory=str(site), token=token, inputs=inputs, options=options,
                                csp=page_csp(site))
    server = QuietServer(("127.0.0.1", port), handler)
    return server, f"http://127.0.0.1:{server.server_address[1]}/?open={token}"


def _parser() -> argparse.ArgumentParser:
    from .options import add_pair_options, add_tolerance_options

    p = argparse.ArgumentParser(
        prog="python -m perpendis A B --open",
        description="Open the Perpendis page on this machine with A and B preloaded. The page is served on "
        "127.0.0.1 only; the files go from this process to the browser tab and nowhere else.",
    )
    p.add_argument("a", type=Path, metavar="A", help="the tensor under test")
    p.add_argument("b", type=Path, metavar="B", help="the reference tensor")
    p.add_argument("--ref", type=Path, metavar="R", help="a higher-precision run to judge A and B against")
    p.add_argument("--open", action="store_true", required=True, help="open the page (this command)")
    add_tolerance_options(p)
    add_pair_options(p)
    p.add_argument("--site", type=Path, help=f"the built site (default: ${SITE_ENV}, else the checkout's dist/; "
                   "with none, the report is opened as a self-contained page)")
    p.add_argument("--port", type=int, help="port on 127.0.0.1 the built page is served on (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the address, do not open a browser")
    return p


def _inputs(args: argparse.Namespace) -> dict[str, Path]:
    inputs = {}
    for side, path in zip(SIDES, (args.a, args.b, args.ref), strict=True):
        if path is None:
            continue
        if not path.is_file():
            raise InputError(f"{path}: no such file", side=side.upper() if side != "ref" else side)
        inputs[side] = path.resolve()
    return inputs


def page_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options the page compares with, as its core takes them: the preset, atol and rtol
    (which override the preset's, as on the command line), the depth, the task check and
    ``--no-check-dtype``, each when given (the page's core reads every one of them)."""
    from .options import task_option

    given = (("preset", args.preset), ("atol", args.atol), ("rtol", args.rtol),
             ("depth", None if args.depth == 1.0 else args.depth), ("task", task_option(args)),
             ("check_dtype", None if args.check_dtype else False))
    return {k: v for k, v in given if v is not None}


def open_report(args: argparse.Namespace, report_of: Callable[[argparse.Namespace], Report]) -> int:
    """No built page: the report of A and B (``report_of``: the plain command's, given by the
    CLI, which imports this module) as a self-contained HTML page, opened in the browser from
    a private temporary file; exits as the plain command does (0, 1 or 2)."""
    import tempfile

    from ..report.html import render_page

    as_text = argparse.Namespace(**{**vars(args), "a": str(args.a), "b": str(args.b),
                                    "ref": None if args.ref is None else str(args.ref), "stream": False})
    report = report_of(as_text)
    fd, name = tempfile.mkstemp(prefix="perpendis-", suffix=".html")  # 0600: the values are the user's
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(render_page(report, title=f"Perpendis: {args.a.name} against {args.b.name}"))
    page = Path(name)
    print(f"Perpendis: {report.verdict.upper()}; the report of {args.a.name} and {args.b.name}: {page.as_uri()}",
          flush=True)
    print("No built page was found (an installed package ships none), so this is the report as one self-contained "
          "page. For the interactive page, run `python build.py` in a checkout and pass --site DIST.", flush=True)
    if not args.no_browser and not webbrowser.open(page.as_uri()):
        print("No browser could be started here: open the file above in one.", flush=True)
    return exits.of_verdict(report.verdict)


def main(argv: Sequence[str], report_of: Callable[[argparse.Namespace], Report]) -> int:
    args = _parser().parse_args(argv)
    inputs = _inputs(args)
    site = built_site(args.site)
    if site is None:
        if args.port is not None:  # no server to put on it: refused rather than dropped
            raise InputError(f"--port {args.port} is where the built page is served, and no built page was found; "
                             f"{build_hint()}, or leave --port out to open the report as one page")
        return open_report(args, report_of)
    try:
        server, url = make_server(site, inputs, page_options(args), port=args.port or 0)
    except OSError as err:  # the port asked for is taken
        raise InputError(f"cannot serve on 127.0.0.1:{args.port}: {err.strerror}") from None
    print(f"Perpendis with {args.a.name} and {args.b.name} preloaded: {url}", flush=True)
    print("Served to this machine only (127.0.0.1); press Ctrl-C to stop.", flush=True)
    if not args.no_browser and not webbrowser.open(url):
        print("No browser could be started here: open the address above in one on this machine.", flush=True)
    with server, contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it stops
        server.serve_forever()
    return 0
