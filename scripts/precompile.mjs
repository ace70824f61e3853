// Adds precompiled bytecode to Pyodide's stdlib zip and to wheels, using Pyodide's own
// CPython (run under Node.js), because bytecode is only valid for the exact interpreter that
// will load it. Without it, every import in the browser compiles source: seconds of start-up.
//
// Usage: node scripts/precompile.mjs JOBS.json
//   JOBS.json: [{"src": path, "dst": path, "layout": "zip" | "wheel", "prefix": path}, ...]
//   "zip": foo.pyc next to foo.py (what zipimport looks for, stdlib zip);
//   "wheel": __pycache__/foo.cpython-312.pyc (what the site-packages importer looks for).
//   "prefix" is where the archive's files live at run time, so tracebacks name real paths.
// Unchecked-hash pycs (PEP 552): never revalidated against the source, which keeps the
// sources for tracebacks without an mtime check that unpacking would break.

import { readFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const PRECOMPILE = `
import os
import py_compile
import sys
import tempfile
import zipfile


def bytecode(source, display_name):
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


def pyc_name(name, layout):
    if layout == "zip":
        return name + "c"
    head, _, tail = name.rpartition("/")
    return f"{head}/__pycache__/{tail[:-3]}.{sys.implementation.cache_tag}.pyc".lstrip("/")


def precompile(src, dst, layout, prefix):
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
`;

const jobs = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pyodide = await loadPyodide();
pyodide.FS.mkdir("/host");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: "/" }, "/host");
pyodide.runPython(PRECOMPILE);
const precompile = pyodide.globals.get("precompile");
for (const { src, dst, layout, prefix } of jobs) {
  precompile("/host" + src, "/host" + dst, layout, prefix);
}
