// Starts Pyodide with NumPy and perpendis from this site's trimmed lock. Shared by the core's
// worker (app/worker.js) and its fold helpers (app/fold_worker.js): classic workers, since
// Pyodide 0.27 loads its runtime with importScripts.

const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;

// Given to loadPyodide, which fetches the wheels as soon as its lock has arrived, alongside
// the runtime, and installs them once Python is up. Measured against fetching them only
// after the runtime's WebAssembly and standard library had arrived (bench/run.py --only
// startup, two runs each, same hour): a first visit at 50 Mbit/s ready in 3.14-3.48 s
// against 4.18-4.57 s, at 20 Mbit/s 5.28-5.60 s against 6.15-6.44 s.
const PACKAGES = ["numpy", "perpendis"];

// build.py writes app/archives.js itself over the next line, as it writes this script into
// the core's worker: a classic worker's importScripts is a round trip before the next line.
importScripts("archives.js");

// Pyodide fetches its standard library and the wheels through the global fetch, and takes
// no fetch of its own: the archives go through fetchArchive (app/archives.js).
self.fetch = (input, init) => (isArchive(input) ? fetchArchive(input, init) : networkFetch(input, init));

importScripts(PYODIDE_URL + "pyodide.js");

self.bootPython = async () => {
  const pyodide = await loadPyodide({
    indexURL: PYODIDE_URL,
    lockFileURL: PYODIDE_URL + "pyodide-lock.json",
    packages: PACKAGES,
    // Off: the core never calls asyncio's run_until_complete, and the option (on by default
    // since Pyodide 0.27) patches the event loop to switch stacks, which Safari's engine is
    // reported to crash on (docs/design-notes.md, "WebKit").
    enableRunUntilComplete: false,
  });
  // Pyodide logs a package it could not load and goes on without it: say which, and why.
  const missing = PACKAGES.filter((name) => !(name in pyodide.loadedPackages));
  if (missing.length > 0) {
    const why = archiveFailures.join("; ") || "the browser's console says why";
    throw new Error(`${missing.join(" and ")} could not be loaded: ${why}`);
  }
  return pyodide;
};

// Made-up comparisons (perpendis.service.api.warm_up, 1 M elements each) run once Python is up, so
// the browser has optimised NumPy's hot loops before the user's first big comparison: fresh
// WebAssembly runs baseline code, and the first 16 M-element report after load folded at
// half speed. One piece at a time, each ending with a turn of the event loop, until `stop()`.
const WARM_UP_PIECES = 8;

self.warmUp = async (pyodide, stop = () => false) => {
  const piece = pyodide.pyimport("perpendis.service.api").warm_up;
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
