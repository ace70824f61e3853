// Lists the standard-library modules the page can import, so the build can leave the rest
// of Pyodide's standard library out of the site. Runs Pyodide's own CPython under Node.js
// on a built pyodide/ folder (full standard library, the served lock and wheels), loads
// NumPy and perpendis from the lock, as the page's worker does, then runs the trace of
// buildsite/pyodide_side/trace_imports.py (its docstring says what it imports, and why).
// Prints one JSON object: {"modules": [standard-library module names], "numpy": [the names X
// of the loaded modules numpy.X], "extensions": [NumPy's loaded extension modules, dotted],
// "failed": [...]}.
//
// Usage: node scripts/trace_imports.mjs DIST/pyodide/ [SCANNED, comma-separated]

import { loadPyodide } from "pyodide";
import { importBuildModule } from "./pyodide_side.mjs";

const dir = process.argv[2];
const scanned = process.argv[3] || "perpendis";
const pyodide = await loadPyodide({ indexURL: dir, stdLibURL: dir + "python_stdlib.zip", lockFileURL: dir + "pyodide-lock.json" });
await pyodide.loadPackage(["numpy", "perpendis"], { messageCallback() {} });
const { trace } = importBuildModule(pyodide, "buildsite.pyodide_side.trace_imports");
console.log(trace(scanned));
