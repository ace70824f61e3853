// A helper of the core's worker (app/worker.js), on another CPU core: it folds one share of
// a big comparison and sends the partial result back as bytes. It keeps nothing between
// jobs. Messages in: {id, share: JSON, a, b: ArrayBuffer, at: [[offset, length] x2]} (the
// share's bytes lie at `at` in a and b: perpendis.compare.fold_share) or {id, share,
// files: [Blob, Blob], void: JSON} (two big .npy files it reads itself, a slice at a time:
// perpendis.stream.fold_share), or {id, ranks: JSON, values: ArrayBuffer} (order statistics
// of an error column: perpendis.compare.select_share). Out: {type: "ready"} once, then
// {id, bytes: ArrayBuffer} or {id, error}.

importScripts("boot.js");

const GLUE = `
import numpy as np
from js import readSlice
from perpendis import compare, stream

def from_js(view):
    array = np.empty(view.byteLength, dtype=np.uint8)
    view.assign_to(array)
    return array

def run(share, a, b):
    return compare.fold_share(share, from_js(a), from_js(b))

def run_files(share, void, blob_a, blob_b):
    files = [(lambda offset, length, blob=blob: from_js(readSlice(blob, offset, length)), int(blob.size))
             for blob in (blob_a, blob_b)]
    return stream.fold_share(share, void, *files)

def select(ranks, values):
    return compare.select_share(from_js(values), ranks)

run, run_files, select
`;

// Ready (so given shares) only once warmed up.
const ready = bootPython().then(async (pyodide) => {
  const glue = pyodide.runPython(GLUE).toJs({ depth: 1 });
  await warmUp(pyodide);
  return glue;
});
ready.then(
  () => self.postMessage({ type: "ready" }),
  (err) => self.postMessage({ type: "failed", message: String((err && err.message) || err) }),
);

self.onmessage = async (event) => {
  const { id, share, a, b, at, files, ranks, values } = event.data;
  try {
    const [run, runFiles, select] = await ready;
    let out;
    if (values) out = select(ranks, new Uint8Array(values));
    else if (files) out = runFiles(share, event.data.void, files[0], files[1]);
    else out = run(share, new Uint8Array(a, ...at[0]), new Uint8Array(b, ...at[1]));
    const view = out.getBuffer("u8");
    const bytes = view.data.slice().buffer;
    view.release();
    out.destroy();
    self.postMessage({ id, bytes }, [bytes]);
  } catch (err) {
    self.postMessage({ id, error: String((err && err.message) || err) });
  }
};
