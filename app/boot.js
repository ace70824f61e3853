// Starts Pyodide with NumPy and perpendis from this site's trimmed lock. Shared by the core's
// worker (app/worker.js) and its fold helpers (app/fold_worker.js): classic workers, since
// Pyodide 0.27 loads its runtime with importScripts.

const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;

// The wheels the core loads (build.py writes their names over this line).
const PREFETCH = []; // build.py: wheels
const PACKAGES = ["numpy", "perpendis"];
// What Python needs first: the runtime's WebAssembly and standard library. On a first visit
// every download shares one link, and the wheels (4 MB) would slow these down while they are
// not needed until Python is up: the core asks for the wheels once these have arrived, so
// that the WebAssembly compiles and Python starts while they download.
const RUNTIME_FIRST = ["pyodide.asm.wasm", "python_stdlib.zip"];
// Should resource timing never report them (a browser without it in workers), the wheels
// are still fetched by Pyodide itself once Python is up.
const RUNTIME_WAIT_MS = 20000;

// A returning visit has the site in the service worker's cache (app/sw.js names its caches
// so): nothing to fetch ahead then, and requests through the service worker would only cost.
const OFFLINE_CACHE_PREFIX = "perpendis-";

async function returning() {
  const names = self.caches ? await self.caches.keys().catch(() => []) : [];
  return names.some((name) => name.startsWith(OFFLINE_CACHE_PREFIX));
}

/** Resolves once every file of `names` (in pyodide/) has downloaded, or after `waitMs`. */
function downloaded(names, waitMs) {
  return new Promise((resolve) => {
    const left = new Set(names.map((name) => PYODIDE_URL + name));
    let observer = null;
    const seen = (entries) => {
      for (const entry of entries) left.delete(entry.name);
      if (left.size) return;
      observer?.disconnect();
      resolve();
    };
    try {
      observer = new PerformanceObserver((list) => seen(list.getEntries()));
      observer.observe({ type: "resource", buffered: true });
    } catch {
      resolve(); // no resource timing here: fetch at once
    }
    setTimeout(resolve, waitMs);
  });
}

// Fetched ahead, the wheels are in the HTTP cache when Pyodide asks for them (a 304 then).
async function prefetchWheels() {
  if (await returning()) return;
  await downloaded(RUNTIME_FIRST, RUNTIME_WAIT_MS);
  for (const name of PREFETCH) {
    fetch(PYODIDE_URL + name)
      .then((response) => response.arrayBuffer())
      .catch(() => {}); // Pyodide's own request reports a failure
  }
}

// Only the core's worker: its helpers (fold_worker.js) start once everything is cached.
const CORE = !self.location.pathname.endsWith("/fold_worker.js");
if (CORE) prefetchWheels();

importScripts(PYODIDE_URL + "pyodide.js");

self.bootPython = async () => {
  const pyodide = await loadPyodide({
    indexURL: PYODIDE_URL,
    lockFileURL: PYODIDE_URL + "pyodide-lock.json",
    // Given here, Pyodide would fetch the wheels as soon as its lock arrives, alongside the
    // runtime; the core asks for them once Python is up (they are on their way by then).
    packages: CORE ? [] : PACKAGES,
  });
  if (CORE) await pyodide.loadPackage(PACKAGES, { messageCallback: () => {} });
  return pyodide;
};

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

// The bytes of a checkpoint unit's reads ([file, offset, length], files by place in `files`):
// Blob.arrayBuffer() reads a big slice several times faster than FileReaderSync.
self.readRanges = (files, reads) =>
  Promise.all(reads.map(([file, offset, length]) => files[file].slice(offset, offset + length).arrayBuffer()))
    .then((buffers) => buffers.map((buffer) => new Uint8Array(buffer)));
