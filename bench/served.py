"""The built site served on a free port of 127.0.0.1 for the length of a benchmark."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import serve  # noqa: E402

import build  # noqa: E402


@contextmanager
def served(site: Path | None, tmp: Path) -> Iterator[str]:
    """The URL of ``site`` (built into ``tmp`` first when None), served until the block ends."""
    if site is None:
        site = tmp / "dist"
        build.build(site)
    httpd = serve.make_server(site, port=0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
