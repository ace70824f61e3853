// Starts Pyodide with NumPy and perpendis from this site's trimmed lock. Shared by the core's
// worker (app/worker.js) and its fold helpers (app/fold_worker.js): classic workers, since
// Pyodide 0.27 loads its runtime with importScripts.

const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;

// The wheels the core loads (build.py writes their names over this line). Pyodide fetches
// the runtime, the standard library and the lock as soon as loadPyodide is called, but the
// wheels only once Python is up, a second or more later: fetched here at once, they
// download meanwhile, and Pyodide's own requests find them in the HTTP cache. Only the
// core's worker does it: its helpers (fold_worker.js) start once everything is cached.
const PREFETCH = []; // build.py: wheels

// A returning visit has the site in the service worker's cache (app/sw.js names its caches
// so): nothing to fetch ahead then, and requests through the service worker would only cost.
const OFFLINE_CACHE_PREFIX = "perpendis-";

async function prefetchWheels() {
  const names = self.caches ? await self.caches.keys().catch(() => []) : [];
  if (names.some((name) => name.startsWith(OFFLINE_CACHE_PREFIX))) return;
  for (const name of PREFETCH) {
    fetch(PYODIDE_URL + name)
      .then((response) => response.arrayBuffer())
      .catch(() => {}); // Pyodide's own request reports a failure
  }
}

if (!self.location.pathname.endsWith("/fold_worker.js")) prefetchWheels();

importScripts(PYODIDE_URL + "pyodide.js");

self.bootPython = () =>
  loadPyodide({
    indexURL: PYODIDE_URL,
    lockFileURL: PYODIDE_URL + "pyodide-lock.json",
    // Fetched while the runtime boots, rather than after it.
    packages: ["numpy", "perpendis"],
  });

// Made-up comparisons (perpendis.api.warm_up, 1 M elements each) run once Python is up, so
// the browser has optimised NumPy's hot loops before the user's first big comparison: fresh
// WebAssembly runs baseline code, and the first 16 M-element report after load folded at
// half speed. One piece at a time, each ending with a turn of the event loop, until `stop()`.
const WARM_UP_PIECES = 8;

self.warmUp = async (pyodide, stop = () => false) => {
  const piece = pyodide.pyimport("perpendis.api").warm_up;
  try {
    for (let i = 0; i < WARM_UP_PIECES && !stop(); i++) {
      piece();
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  } finally {
    piece.destroy();
  }
};

// A NumPy array's bytes copied out of Python's heap, as a Uint8Array over `bufferFor(size)`
// (a fresh buffer unless the caller has one to reuse); the array's proxy is destroyed.
self.copyOut = (array, bufferFor = (size) => new ArrayBuffer(size)) => {
  const view = array.getBuffer("u8");
  try {
    const length = view.data.byteLength;
    const bytes = new Uint8Array(bufferFor(length), 0, length);
    bytes.set(view.data);
    return bytes;
  } finally {
    view.release();
    array.destroy();
  }
};

// Files handed over unread (too big to copy around whole) are read a slice at a time, when
// Python asks for the bytes: synchronously, since Python waits for them.
self.readSlice = (blob, start, length) =>
  new Uint8Array(new FileReaderSync().readAsArrayBuffer(blob.slice(start, start + length)));
