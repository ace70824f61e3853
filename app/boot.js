// Starts Pyodide with NumPy and perpendis from this site's trimmed lock. Shared by the core's
// worker (app/worker.js) and its fold helpers (app/fold_worker.js): classic workers, since
// Pyodide 0.27 loads its runtime with importScripts.

const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;

importScripts(PYODIDE_URL + "pyodide.js");

self.bootPython = () =>
  loadPyodide({
    indexURL: PYODIDE_URL,
    lockFileURL: PYODIDE_URL + "pyodide-lock.json",
    // Fetched while the runtime boots, rather than after it.
    packages: ["numpy", "perpendis"],
  });

// Files handed over unread (too big to copy around whole) are read a slice at a time, when
// Python asks for the bytes: synchronously, since Python waits for them.
self.readSlice = (blob, start, length) =>
  new Uint8Array(new FileReaderSync().readAsArrayBuffer(blob.slice(start, start + length)));
