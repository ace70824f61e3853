// Adds precompiled bytecode to Pyodide's stdlib zip and to wheels, using Pyodide's own
// CPython (run under Node.js), because bytecode is only valid for the exact interpreter that
// will load it. Without it, every import in the browser compiles source: seconds of start-up.
// The Python that does it is buildsite/pyodide_side/precompile.py.
//
// Usage: node scripts/precompile.mjs JOBS.json
//   JOBS.json: [{"src": path, "dst": path, "layout": "zip" | "wheel", "prefix": path}, ...]
//   "zip": foo.pyc next to foo.py (what zipimport looks for, stdlib zip);
//   "wheel": __pycache__/foo.cpython-312.pyc (what the site-packages importer looks for).
//   "prefix" is where the archive's files live at run time, so tracebacks name real paths.

import { readFileSync } from "node:fs";
import { loadPyodide } from "pyodide";
import { importBuildModule } from "./pyodide_side.mjs";

const jobs = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pyodide = await loadPyodide();
pyodide.FS.mkdir("/host");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: "/" }, "/host");
const { precompile } = importBuildModule(pyodide, "buildsite.pyodide_side.precompile");
for (const { src, dst, layout, prefix } of jobs) {
  precompile("/host" + src, "/host" + dst, layout, prefix);
}
