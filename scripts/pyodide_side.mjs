// Imports a module of the build's own Python (buildsite/, its Pyodide-side scripts in
// buildsite/pyodide_side/) into a Pyodide running under Node.js, for the runners
// precompile.mjs and trace_imports.mjs. The package is mounted from the repository as it
// is, so the files ruff and the tests read are the files that run. Nothing is written back
// (no __pycache__), and only the package `buildsite` becomes importable.

import { fileURLToPath } from "node:url";

const BUILDSITE = fileURLToPath(new URL("../buildsite", import.meta.url));
const MOUNT = "/perpendis_build";

export function importBuildModule(pyodide, name) {
  pyodide.FS.mkdirTree(`${MOUNT}/buildsite`);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: BUILDSITE }, `${MOUNT}/buildsite`);
  pyodide.runPython(`import sys\nsys.dont_write_bytecode = True\nsys.path.append("${MOUNT}")`);
  return pyodide.pyimport(name);
}
