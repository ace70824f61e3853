"""Serve the built site (``dist/``) on 127.0.0.1 with the headers the page relies on.

Why not ``python -m http.server``: the page needs a Content-Security-Policy header on every
response (a worker's CSP comes from its own response, not from the page's meta tag), the
``application/wasm`` type (streaming compilation refuses anything else), and caching
headers that let a second visit skip the 20 MB of runtime. And it sends the Brotli or gzip'd
copy ``build.py`` wrote beside a file (``name.br``, ``name.gz``) with ``Content-Encoding: br``
or ``gzip`` to a browser that accepts it, Brotli first, as nginx's ``brotli_static`` and
``gzip_static`` and Caddy's ``precompressed br gzip`` do (README,
"Hosting"); ``--plain`` serves every file as it is, as a host that does nothing would.

Usage: ``python scripts/serve.py [--port 8000] [--dir dist] [--log FILE] [--plain]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parent.parent

# Kept identical to the meta tag in index.html and docs/contracts.md.
CSP = (
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; connect-src 'self'; "
    "img-src 'self' data: blob:; style-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'"
)
IMMUTABLE = "public, max-age=31536000, immutable"
# Files in pyodide/ that build.py writes or rewrites (the project wheel, the lock, and the
# archives it adds bytecode to): their content can change under the same name.
MUTABLE_IN_PYODIDE = ("pyodide-lock.json", "perpendis-", "python_stdlib", "numpy-")


def cache_control(path: str) -> str:
    """Pyodide's own files are served byte for byte as released, so a second visit needs no
    request for them; everything else is revalidated (cheap 304s) so a rebuild shows at once."""
    parts = path.split("?", 1)[0].lstrip("/").split("/")
    if len(parts) == 2 and parts[0] == "pyodide" and not parts[1].startswith(MUTABLE_IN_PYODIDE):
        return IMMUTABLE
    return "no-cache"


# The precompressed copies build.py writes beside a file, best first: (Content-Encoding, suffix).
PRECOMPRESSED = (("br", ".br"), ("gzip", ".gz"))


def accepted(accept_encoding: str) -> set[str]:
    """The codings an Accept-Encoding header allows (``gzip;q=0`` refuses gzip; ``*``
    stands for every coding not named)."""
    allowed, refused, star = set(), set(), False
    for item in accept_encoding.split(","):
        token, _, params = item.strip().partition(";")
        token = token.strip().lower()
        quality = "1"
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                quality = value.strip()
        try:
            wanted = float(quality) > 0
        except ValueError:
            wanted = False
        if token == "*":
            star = wanted
        elif token:
            (allowed if wanted else refused).add(token)
    if star:
        allowed |= {coding for coding, _ in PRECOMPRESSED} - refused
    return allowed


class CountingWriter:
    """A response stream that adds every byte written to its server's ``bytes_sent``:
    what a visit really transfers, headers and encoding included (``bench/startup.py``)."""

    def __init__(self, stream, server: CountingServer):
        self.stream = stream
        self.server = server

    def write(self, data) -> int:
        written = self.stream.write(data)
        self.server.count(len(data))
        return written

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


class CountingServer(ThreadingHTTPServer):
    """A threading server that counts the bytes its responses carried."""

    daemon_threads = True
    # A first visit opens many connections at once (the page, its workers, the service
    # worker's install); past socketserver's backlog of 5, a client waits for its SYN retry.
    request_queue_size = 128

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bytes_sent = 0
        self._lock = threading.Lock()

    def count(self, n: int) -> None:
        with self._lock:
            self.bytes_sent += n

    def handle_error(self, request, client_address) -> None:
        """A browser that stops reading a response resets the connection: the page does that
        to an archive a plain host (``--plain``) sends whole (``app/archives.js``). Not an
        error of the server's; anything else is still printed."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Handler(SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".json": "application/json",
        ".whl": "application/zip",
        ".zip": "application/zip",
        ".css": "text/css",
        ".html": "text/html; charset=utf-8",
    }

    def __init__(self, *args, log_file=None, compress=True, **kwargs):
        self.log_file = log_file
        self.compress = compress
        self.content_encoding = None  # set per request by translate_path
        self.varies = False
        super().__init__(*args, **kwargs)

    def translate_path(self, path: str) -> str:
        """The file to send: the best precompressed copy of the file asked for that there is
        and the browser accepts (the response then names its ``Content-Encoding``)."""
        real = super().translate_path(path)
        self.content_encoding, self.varies = None, False
        wanted = real
        if os.path.isdir(real) and path.split("?", 1)[0].endswith("/"):
            wanted = os.path.join(real, "index.html")
        if not (self.compress and os.path.isfile(wanted)):
            return real
        codings = accepted(self.headers.get("Accept-Encoding", ""))
        for coding, suffix in PRECOMPRESSED:
            if os.path.isfile(wanted + suffix):
                self.varies = True
                if coding in codings:
                    self.content_encoding = coding
                    return wanted + suffix
        return real

    def guess_type(self, path) -> str:
        if self.content_encoding is not None:
            path = str(path).removesuffix(dict(PRECOMPRESSED)[self.content_encoding])
        return super().guess_type(path)

    def setup(self) -> None:
        super().setup()
        self.wfile = CountingWriter(self.wfile, self.server)

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Cache-Control", cache_control(self.path))
        if self.content_encoding is not None:
            self.send_header("Content-Encoding", self.content_encoding)
        if self.varies:
            self.send_header("Vary", "Accept-Encoding")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        # Cross-origin isolation: the page may then share memory with the core's worker, whose
        # Python reads Cancel there between the chunks of any long job (app/client.js). The
        # site loads nothing from other origins, so requiring same-origin costs nothing.
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        if self.log_file is not None:
            self.log_file.write(f"{self.address_string()} [{self.log_date_time_string()}] {format % args}\n")
            self.log_file.flush()


def make_server(
    directory: Path, port: int = 8000, log_path: Path | None = None, compress: bool = True
) -> CountingServer:
    """A server bound to 127.0.0.1 only (port 0 picks a free one); call ``serve_forever``.
    ``compress=False`` ignores the precompressed copies, as a host that does nothing would."""
    if not (directory / "index.html").is_file():
        raise SystemExit(f"{directory} holds no index.html: run `python build.py` first")
    log_file = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115 - lives as long as the server
    handler = functools.partial(Handler, directory=str(directory), log_file=log_file, compress=compress)
    return CountingServer(("127.0.0.1", port), handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--dir", type=Path, default=ROOT / "dist", help="the built site")
    parser.add_argument("--log", type=Path, default=None, help="append an access log to this file")
    parser.add_argument("--plain", action="store_true", help="ignore the .br and .gz copies (as a plain host)")
    args = parser.parse_args(argv)
    server = make_server(args.dir, args.port, args.log, compress=not args.plain)
    print(f"serving {args.dir} at http://127.0.0.1:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
