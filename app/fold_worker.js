// A helper of the core's worker (app/worker.js), on another CPU core: it folds one share of
// a big comparison (perpendis.compare.fold_share) and sends the partial result back as
// bytes. It keeps nothing between jobs. Messages: in {id, share: JSON, a, b: ArrayBuffer};
// out {type: "ready"} once, then {id, bytes: ArrayBuffer} or {id, error}.

importScripts("boot.js");

const GLUE = `
import numpy as np
from perpendis.compare import fold_share

def run(share, a, b):
    arrays = []
    for view in (a, b):
        array = np.empty(view.byteLength, dtype=np.uint8)
        view.assign_to(array)
        arrays.append(array)
    return np.frombuffer(fold_share(share, *arrays), dtype=np.uint8)

run
`;

const ready = bootPython().then((pyodide) => pyodide.runPython(GLUE));
ready.then(
  () => self.postMessage({ type: "ready" }),
  (err) => self.postMessage({ type: "failed", message: String((err && err.message) || err) }),
);

self.onmessage = async (event) => {
  const { id, share, a, b } = event.data;
  try {
    const run = await ready;
    const out = run(share, new Uint8Array(a), new Uint8Array(b));
    const view = out.getBuffer("u8");
    const bytes = view.data.slice().buffer;
    view.release();
    out.destroy();
    self.postMessage({ id, bytes }, [bytes]);
  } catch (err) {
    self.postMessage({ id, error: String((err && err.message) || err) });
  }
};
