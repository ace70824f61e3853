"""Adds bytecode to an archive, run by ``scripts/precompile.mjs`` in Pyodide's own CPython
under Node.js: bytecode is valid only for the exact interpreter that will load it.

Unchecked-hash pycs (PEP 552): never revalidated against the source, which keeps the
sources for tracebacks without an mtime check that unpacking would break.
"""

import os
import py_compile
import sys
import tempfile
import zipfile


def bytecode(source: bytes, display_name: str) -> bytes | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.py")
        with open(path, "wb") as f:
            f.write(source)
        try:
            py_compile.compile(path, cfile=path + "c", dfile=display_name, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        except py_compile.PyCompileError:
            return None  # e.g. a test file with deliberately invalid syntax: leave it as source
        with open(path + "c", "rb") as f:
            return f.read()


def pyc_name(name: str, layout: str) -> str:
    """Where the importer looks for a member's bytecode: "zip", ``foo.pyc`` beside
    ``foo.py`` (zipimport, the standard library's zip); "wheel", ``__pycache__/foo.<tag>.pyc``
    (the site-packages importer)."""
    if layout == "zip":
        return name + "c"
    head, _, tail = name.rpartition("/")
    return f"{head}/__pycache__/{tail[:-3]}.{sys.implementation.cache_tag}.pyc".lstrip("/")


def precompile(src: str, dst: str, layout: str, prefix: str) -> None:
    """Copy the archive ``src`` to ``dst`` with the bytecode of each ``.py`` member added;
    ``prefix`` is where the archive's files live at run time, so tracebacks name real paths."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        names = set(zin.namelist())
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, data)
            if not info.filename.endswith(".py"):
                continue
            target = pyc_name(info.filename, layout)
            if target in names:
                continue
            code = bytecode(data, prefix + "/" + info.filename)
            if code is not None:
                zout.writestr(zipfile.ZipInfo(target, date_time=info.date_time), code, zipfile.ZIP_DEFLATED)
