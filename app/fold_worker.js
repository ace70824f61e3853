// A helper of the core's worker (app/worker.js), on another CPU core: it folds one share of
// a big comparison and sends the partial result back as bytes, then may select order
// statistics of the errors (perpendis.service.bridge.HelperWorker over perpendis.service.helper.Helper,
// which keeps the last partial for that).
// Messages in: {id, method, ...fields}, the methods and their fields declared in app/protocol.js
// (PROTOCOL.helper) and handled by HANDLERS below:
//   fold {share: JSON, a, b: ArrayBuffer, at: [[offset, length] x2]}: fold the share, whose
//     bytes lie at `at` in a and b (HelperWorker.fold);
//   fold_files {share, void: JSON, files: [Blob, Blob]}: fold the share of two big .npy files it
//     reads itself, a slice at a time (HelperWorker.fold_files);
//   fold_checkpoint {job: JSON, files: [Blob, ...], reads}: fold a unit of a checkpoint comparison,
//     its tensors' bytes at `reads` read first (readRanges, app/boot.js) (HelperWorker.fold_checkpoint);
//   select {ranks: JSON, values: ArrayBuffer, pooled}: order statistics of the errors `values`
//     (Helper.select), or of those and the errors of the share it folded last, `ranks` then
//     being those of `values` (Helper.select_pooled).
//   spare {buffer: ArrayBuffer}: a buffer of an earlier answer, given back to hold a later one;
//   reserve {bytes}: grow the heap for a share of a comparison of inputs of that size (heap.reserve).
// Out: {type: "ready"} once, then {id, bytes: ArrayBuffer, length} (the answer is the first
// `length` bytes) or {id, error} per message with an id.

importScripts("boot.js");
importScripts("protocol.js");

// The Python side is perpendis.service.bridge.HelperWorker (named methods, plain data).
// Ready (so given shares) only once warmed up.
const ready = bootPython().then(async (pyodide) => {
  const helper = pyodide.pyimport("perpendis.service.bridge").HelperWorker(self.readSlice);
  await warmUp(pyodide);
  return helper;
});
ready.then(
  () => self.postMessage({ type: "ready" }),
  (err) => self.postMessage({ type: "failed", message: String((err && err.message) || err) }),
);

// A big answer's bytes are copied out of Python's heap into `spare`, a buffer of an earlier
// answer that the core's worker sent back, when it fits (and is not wasted on a small one):
// a fresh 18 MB buffer costs 11-19 ms here (its pages are touched for the first time), a
// copy into a used one about 3 ms.
let spare = null;

function answerBuffer(size) {
  if (!spare || spare.byteLength < size || 2 * size < spare.byteLength) return new ArrayBuffer(size);
  const buffer = spare;
  spare = null;
  return buffer;
}

// Each method of PROTOCOL.helper: its message's fields made the values HelperWorker's method
// takes, once the helper has started (through `call`, which dispatches through the Python
// table), or handled here alone. A handler that answers nothing returns undefined.
const python = (name, ...args) => ready.then((helper) => helper.call(name, ...args));
const HANDLERS = {
  fold: ({ share, a, b, at }) => python("fold", share, new Uint8Array(a, ...at[0]), new Uint8Array(b, ...at[1])),
  fold_files: ({ share, void: empty, files }) => python("fold_files", share, empty, files[0], files[1]),
  fold_checkpoint: async ({ job, files, reads }) => python("fold_checkpoint", job, files, await readRanges(files, reads)),
  select: ({ ranks, values, pooled }) => python("select", ranks, new Uint8Array(values), Boolean(pooled)),
  reserve: async ({ bytes }) => void (await python("reserve", bytes)),
  spare: ({ buffer }) => void (spare = buffer), // kept at once, so no answer after it misses it
};
const handler = protocolHandlers(PROTOCOL.helper, HANDLERS);

self.onmessage = async (event) => {
  const { id, method } = event.data;
  try {
    const out = await handler(method)(event.data);
    if (out === undefined) return;
    const { buffer, length } = copyOut(out, answerBuffer);
    self.postMessage({ id, bytes: buffer, length }, [buffer]);
  } catch (err) {
    self.postMessage({ id, error: String((err && err.message) || err) });
  }
};
