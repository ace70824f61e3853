"""Rewriting the site's archives (the standard library's zip, the wheels): keep, rename, add
or store their members, and say what a rewrite saved. Every trimming step goes through
``rewrite_zip``, so each removal is reported the same way."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

# A wheel's list of its files and their hashes, stale once the build has trimmed it, and
# read by nothing in the page (pip reads it to uninstall).
WHEEL_RECORD = ".dist-info/RECORD"


def rewrite_zip(
    path: Path,
    keep: Callable[[str, set[str]], bool],
    add: dict[str, bytes] | None = None,
    rename: Callable[[str, set[str]], str] = lambda name, _: name,
) -> list[tuple[str, int]]:
    """Rewrite the archive at ``path`` with only the members ``keep(name, all names)``
    accepts, each under ``rename(name, all names)``, plus ``add``; returns the removed
    members with their compressed sizes."""
    with zipfile.ZipFile(path) as source:
        infos = source.infolist()
        names = {info.filename for info in infos}
        removed = [(info.filename, info.compress_size) for info in infos if not keep(info.filename, names)]
        if not removed and not add:
            return []
        gone = {name for name, _ in removed}
        part = path.with_name(path.name + ".part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
            for info in infos:
                if info.filename not in gone:
                    data = source.read(info)
                    info.filename = rename(info.filename, names)
                    target.writestr(info, data, compresslevel=9)
            for name, data in (add or {}).items():
                target.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    part.replace(path)
    return removed


def store_uncompressed(path: Path) -> None:
    """Rewrite the archive at ``path`` with every member stored, not deflated.

    A host compresses the whole file in transit (``precompress`` writes its copies), and
    Brotli over the archive finds what its members share, which deflate, member by member,
    cannot: NumPy's wheel is 2.05 MB deflated against 1.45 MB stored and Brotli'd (1.92
    gzip'd), the standard library 1.53 against 1.07 (1.40), perpendis 0.71 against 0.43
    (0.54). Pyodide then reads the members without inflating them in WebAssembly. From a
    host that compresses nothing the page fetches the gzip'd copy (``app/archives.js``)."""
    with zipfile.ZipFile(path) as source:
        members = [(info, source.read(info)) for info in source.infolist()]
    part = path.with_name(path.name + ".part")
    with zipfile.ZipFile(part, "w", zipfile.ZIP_STORED) as target:
        for info, data in members:
            info.compress_type = zipfile.ZIP_STORED
            target.writestr(info, data)
    part.replace(path)


def report(what: str, removed: list[tuple[str, int]]) -> None:
    """Say what a trimming step removed and what it saved (compressed bytes in the archive)."""
    saved = sum(size for _, size in removed)
    print(f"removed {what}: {len(removed)} files, {saved / 1e6:.2f} MB", file=sys.stderr)


def cached_pyc(name: str) -> str:
    """Where the site-packages importer looks for the bytecode of the ``.py`` member ``name``."""
    head, _, tail = name.rpartition("/")
    return f"{head}/__pycache__/{tail[:-3]}.cpython-312.pyc".lstrip("/")


def has_bytecode(name: str, names: set[str]) -> bool:
    """Whether the ``.py`` member ``name`` has its ``.pyc`` in the archive (either layout)."""
    return name + "c" in names or cached_pyc(name) in names


def sourceless_place(name: str, names: set[str]) -> str:
    """Bytecode whose source is dropped moves from ``__pycache__/`` to beside where the source
    was: the only place the importer looks for a module without source."""
    head, _, tail = name.rpartition("/")
    if head.endswith("__pycache__") and tail.endswith(".cpython-312.pyc"):
        source = f"{head.removesuffix('__pycache__')}{tail.removesuffix('.cpython-312.pyc')}.py"
        if source in names:
            return source + "c"
    return name


def extension_module(member: str) -> str | None:
    """The dotted name of the extension module a wheel member is (``a/b.cpython-312-...so``
    is ``a.b``), or None for any other member."""
    if not member.endswith(".so"):
        return None
    head, _, tail = member.rpartition("/")
    return f"{head}/{tail.partition('.')[0]}".replace("/", ".")


def wheel_module(member: str) -> str | None:
    """The dotted module of a wheel member that is a module source, else None."""
    if not member.endswith(".py") or ".dist-info/" in member:
        return None
    return member[:-3].removesuffix("/__init__").replace("/", ".")


def module_of(member: str) -> str:
    """The dotted module a standard-library member belongs to (a data file: its package)."""
    if member.endswith((".py", ".pyc")):
        stem = member.rsplit(".", 1)[0].removesuffix("/__init__")
    else:
        stem = member.rstrip("/").rpartition("/")[0] if not member.endswith("/") else member.rstrip("/")
    return stem.replace("/", ".")
