// Writes a memory snapshot of Pyodide's interpreter right after start-up, made with the
// built site's own runtime and stdlib under Node.js. The worker restores it instead of
// running Python's start-up (about a hundred stdlib imports) on every page load. It is
// taken before NumPy loads: extension modules are not part of the saved memory.
// Gzipped, since the memory image is mostly zeros (21 MB -> about 4 MB).
//
// Usage: node scripts/snapshot.mjs PYODIDE_DIR OUT
//   PYODIDE_DIR: the built pyodide/ folder (ends with "/"); its python_stdlib.zip must be
//   the one served, since the saved interpreter holds offsets into that very file.

import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { loadPyodide } from "pyodide";

const [dir, out] = process.argv.slice(2);
const pyodide = await loadPyodide({
  indexURL: dir,
  lockFileURL: dir + "pyodide-lock.json",
  stdLibURL: dir + "python_stdlib.zip",
  _makeSnapshot: true,
});
writeFileSync(out, gzipSync(pyodide.makeMemorySnapshot(), { level: 9 }));
