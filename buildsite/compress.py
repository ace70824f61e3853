"""The precompressed copies beside the site's files (``name.br``, ``name.gz``), which a host
may send in their place with ``Content-Encoding: br`` or ``gzip`` (``scripts/serve.py``
does); a host that ignores them serves the plain files, and the page works the same, at
full size. Deterministic and cached by content in ``.cache/``, so an identical rebuild
writes identical bytes at no cost."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

from buildsite.common import CACHE, BuildError, sha256_of

# Precompressed copies: a host sends ``name.br`` or ``name.gz`` for ``name`` to a browser that
# accepts Brotli or gzip (the same list, best first, as scripts/serve.py's PRECOMPRESSED).
BROTLI_SUFFIX, GZIP_SUFFIX = ".br", ".gz"
PRECOMPRESSED_SUFFIXES = (BROTLI_SUFFIX, GZIP_SUFFIX)
PRECOMPRESS_MIN_BYTES = 1024
PRECOMPRESS_MAX_RATIO = 0.9  # a copy that saves less than a tenth is not worth a second file
# Zopfli writes gzip any gzip decoder reads, about 4 % smaller than `gzip -9` (the runtime's
# WebAssembly: 3.14 -> 3.02 MB), at a hundred times the time: one pass (more passes saved
# 7 KB of it for 20 % more time), cached by content in .cache/gz.
ZOPFLI_ITERATIONS = 1
# Brotli at its best and its widest window (16 MB, which every browser's decoder accepts):
# the runtime's WebAssembly 3.02 MB gzip'd -> 2.27 MB, for 35 s of one build (cached in
# .cache/br); a first visit at 50 Mbit/s transfers 0.8 MB less.
BROTLI_QUALITY, BROTLI_WINDOW_BITS = 11, 24


def packed_by_content(data: bytes, cache: Path, pack: Callable[[bytes], bytes]) -> bytes:
    """``pack(data)``, cached in ``cache`` by the content's hash: a rebuild of unchanged files
    costs nothing."""
    cached = cache / sha256_of(data)
    if cached.is_file():
        return cached.read_bytes()
    packed = pack(data)
    cache.mkdir(parents=True, exist_ok=True)
    # A part file of this process's own: two builds at once (the test workers) must not
    # write into, or move away, each other's half-written copy.
    part = cached.with_name(f"{cached.name}.{os.getpid()}.part")
    part.write_bytes(packed)
    part.replace(cached)
    return packed


def gzipped(data: bytes) -> bytes:
    """``data`` as gzip, by Zopfli (``requirements-dev.txt``). Zopfli's header says mtime 0,
    so an identical rebuild writes identical bytes."""
    try:
        import zopfli.gzip
    except ImportError:
        raise BuildError("the zopfli package is needed to write the gzip'd copies: "
                         "pip install -r requirements-dev.txt") from None
    return packed_by_content(data, CACHE / f"gz-{ZOPFLI_ITERATIONS}",
                             lambda raw: zopfli.gzip.compress(raw, numiterations=ZOPFLI_ITERATIONS))


def brotlied(data: bytes) -> bytes:
    """``data`` as Brotli (``requirements-dev.txt``)."""
    try:
        import brotli
    except ImportError:
        raise BuildError("the brotli package is needed to write the Brotli copies: "
                         "pip install -r requirements-dev.txt") from None
    return packed_by_content(data, CACHE / f"br-{BROTLI_QUALITY}-{BROTLI_WINDOW_BITS}",
                             lambda raw: brotli.compress(raw, quality=BROTLI_QUALITY, lgwin=BROTLI_WINDOW_BITS))


def precompress(out: Path) -> list[tuple[str, int, int, int]]:
    """Write ``name.gz`` and ``name.br`` beside each file of the site they shrink enough;
    returns (path, size, gzip'd size, Brotli size or 0) of each. A Brotli copy no smaller
    than the gzip'd one is left out. Deterministic, so an identical rebuild writes identical
    bytes."""
    written = []
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.suffix not in PRECOMPRESSED_SUFFIXES):
        copies = {suffix: path.with_name(path.name + suffix) for suffix in PRECOMPRESSED_SUFFIXES}
        # A copy left from an earlier build of this folder would be sent for the new file.
        for copy in copies.values():
            copy.unlink(missing_ok=True)
        data = path.read_bytes()
        if len(data) < PRECOMPRESS_MIN_BYTES:
            continue
        # A quick test first: a file gzip cannot shrink (an archive) is not worth Zopfli's time.
        if len(gzip.compress(data, compresslevel=1)) > len(data) * (PRECOMPRESS_MAX_RATIO + 0.05):
            continue
        packed = gzipped(data)
        if len(packed) > PRECOMPRESS_MAX_RATIO * len(data):
            continue
        copies[GZIP_SUFFIX].write_bytes(packed)
        smaller = brotlied(data)
        kept = len(smaller) < len(packed)
        if kept:
            copies[BROTLI_SUFFIX].write_bytes(smaller)
        written.append((path.relative_to(out).as_posix(), len(data), len(packed), len(smaller) if kept else 0))
    return written
