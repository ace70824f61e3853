// A helper of the core's worker (app/worker.js), on another CPU core: it folds one share of
// a big comparison and sends the partial result back as bytes, then may select order
// statistics of the errors (perpendis.service.bridge.HelperWorker over perpendis.service.helper.Helper,
// which keeps the last partial for that).
// Messages in:
//   {id, share: JSON, a, b: ArrayBuffer, at: [[offset, length] x2]}: fold the share, whose
//     bytes lie at `at` in a and b (HelperWorker.fold);
//   {id, share, files: [Blob, Blob], void: JSON}: fold the share of two big .npy files it
//     reads itself, a slice at a time (HelperWorker.fold_files);
//   {id, checkpoint: JSON, files: [Blob, ...], reads}: fold a unit of a checkpoint comparison,
//     its tensors' bytes at `reads` read first (readRanges, app/boot.js) (HelperWorker.fold_checkpoint);
//   {id, ranks: JSON, values: ArrayBuffer, pooled}: order statistics of the errors `values`
//     (Helper.select), or of those and the errors of the share it folded last, `ranks` then
//     being those of `values` (Helper.select_pooled).
//   {spare: ArrayBuffer}: a buffer of an earlier answer, given back to hold a later one;
//   {reserve: bytes}: grow the heap for a share of a comparison of inputs of that size (heap.reserve).
// Out: {type: "ready"} once, then {id, bytes: ArrayBuffer, length} (the answer is the first
// `length` bytes) or {id, error} per message with an id.

importScripts("boot.js");

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

self.onmessage = async (event) => {
  const { id, share, a, b, at, files, ranks, values, pooled, checkpoint, reads } = event.data;
  if (event.data.spare) {
    spare = event.data.spare;
    return;
  }
  try {
    const helper = await ready;
    if (event.data.reserve !== undefined) return helper.reserve(event.data.reserve);
    let out;
    if (ranks) out = helper.select(ranks, new Uint8Array(values), Boolean(pooled));
    else if (checkpoint) out = helper.fold_checkpoint(checkpoint, files, await readRanges(files, reads));
    else if (files) out = helper.fold_files(share, event.data.void, files[0], files[1]);
    else out = helper.fold(share, new Uint8Array(a, ...at[0]), new Uint8Array(b, ...at[1]));
    const { buffer, length } = copyOut(out, answerBuffer);
    self.postMessage({ id, bytes: buffer, length }, [buffer]);
  } catch (err) {
    self.postMessage({ id, error: String((err && err.message) || err) });
  }
};
