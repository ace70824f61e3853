// Hosts Pyodide and the `perpendis` package off the main thread, so a long comparison never
// freezes the page. It computes nothing itself: it moves bytes into Python and JSON out.
// Protocol: docs/contracts.md, "Worker protocol". A classic worker, because Pyodide 0.27
// loads its runtime with importScripts.

importScripts("boot.js");

// Long pasted texts travel as UTF-8 bytes: Pyodide turns a JS string into a Python str
// several times slower than Python decodes the same text from a buffer.
const TEXT_AS_BYTES = 1 << 16;
const UTF8 = new TextEncoder();

// Glue run once in Python: copy each transferred buffer into a NumPy array in one memcpy
// (`assign_to`), put long texts back as str, then call the one entry point (`stream.serve`
// when the page handed over files unread: it streams big .npy pairs, reads the rest whole).
const GLUE = `
import json
import numpy as np
from js import readSlice
from pyodide.ffi import JsException
from perpendis import api, stream
from perpendis.errors import InputError
from perpendis.formats.buffer import view_reader

def blob_reader(blob):
    def read(offset, length):
        array = np.empty(length, dtype=np.uint8)
        try:
            readSlice(blob, offset, length).assign_to(array)
        except JsException as err:
            name = getattr(blob, "name", None) or "a chosen file"
            raise InputError(f"{name} could not be read ({err.name}): it was changed, moved or deleted after it "
                             "was chosen; choose it again") from None
        return array
    return read

def with_texts(value, payloads):
    if isinstance(value, list):
        return [with_texts(item, payloads) for item in value]
    if not isinstance(value, dict):
        return value
    if "utf8" in value:
        rest = {k: v for k, v in value.items() if k != "utf8"}
        return {**rest, "text": payloads.pop(value["utf8"]).tobytes().decode("utf-8")}
    return {k: with_texts(v, payloads) for k, v in value.items()}

def from_js(view):
    array = np.empty(view.byteLength, dtype=np.uint8)
    view.assign_to(array)
    return array

held = {}  # a split request's payloads, until it is finished: share_places looks in them
ahead = {}  # files read before Compare was pressed (op "prefetch"), by id, while the page lists them

def keep_ahead(ident, view):
    copy = from_js(view)
    copy.flags.writeable = False  # shared by every comparison of this file: none may change it
    ahead[ident] = copy

def drop_ahead(ident):
    ahead.pop(ident, None)

def serve(request_json, buffers, blobs, early, progress, workers):
    request = json.loads(request_json)
    api.forget(request.get("op"))
    held.clear()
    payloads = {key: from_js(view) for key, view in buffers}
    request = with_texts(request, payloads)
    if blobs:
        read = {key: ahead[ident] for key, ident in early if ident in ahead}
        files = {key: view_reader(read[key]) if key in read else (blob_reader(blob), int(blob.size))
                 for key, blob in blobs}
        result = stream.serve(request, payloads, files, progress, workers, read)
        if "stream" not in result:
            payloads = {**payloads, **read}
    else:
        result = api.handle(request, payloads, progress, workers=workers)
    if "split" in result:
        held.update(payloads)
    return json.dumps(result, allow_nan=False)

def merge_split(parts):
    held.clear()
    return json.dumps(api.merge_split([None if part is None else from_js(part) for part in parts]))

def finish_split(found):
    return json.dumps(api.finish_split(None if found is None else from_js(found)), allow_nan=False)

def share_places(index):
    return json.dumps(api.share_places(index, held))

serve, api.share_bytes, share_places, api.fold_own, api.pool_own, merge_split, api.offload_values, api.select_here, finish_split, stream.read_ahead, keep_ahead, drop_ahead
`;

// Helpers on the other CPU cores fold shares of big comparisons (app/fold_worker.js). They
// start once this core is ready, so they never slow its start; a comparison uses those
// ready by then, and folds here the share of any that fails.
const HELPERS = Math.min(Math.max((self.navigator.hardwareConcurrency || 1) - 1, 0), 3);

class Helper {
  #worker = new Worker("fold_worker.js");
  #jobs = new Map(); // id -> resolve(ArrayBuffer | undefined)
  #nextId = 1;
  ready = false;

  constructor(onReady) {
    this.#worker.onmessage = ({ data }) => {
      if (data.type === "ready") {
        this.ready = true;
        onReady();
      }
      else if (data.type === "failed") this.#fail();
      else this.#settle(data.id, data.bytes && new Uint8Array(data.bytes, 0, data.length));
    };
    this.#worker.onerror = (event) => {
      event.preventDefault();
      this.#fail();
    };
  }

  /** Has the helper grow its heap for its share of a comparison of inputs of `bytes`. */
  reserve(bytes) {
    if (this.ready) this.#worker.postMessage({ reserve: bytes });
  }

  /** Gives back the buffer of an answer, once read, for the helper to write a later one into. */
  giveBack(bytes) {
    if (this.ready && bytes) this.#worker.postMessage({ spare: bytes.buffer }, [bytes.buffer]);
  }

  /** Resolves with the share's partial as bytes (a Uint8Array), or undefined when this helper could not fold it.
   * `job` holds buffers {a, b} (transferred) with the share's bytes at {at: [[offset, length] x2]},
   * or the unread files {files, void}. */
  fold(share, job) {
    return this.#ask({ share, ...job }, job.a ? [...new Set([job.a, job.b])] : []);
  }

  /** Resolves with the order statistics at `ranks` (JSON) of `values` (float64, transferred)
   * as float64 bytes (a Uint8Array), or undefined when this helper could not select them. With `pooled`,
   * `ranks` are those of the errors `values` (another share's), and the statistics are of
   * these and the errors of the share this helper folded last. */
  select(ranks, values, pooled = false) {
    return this.#ask({ ranks, values, pooled }, [values]);
  }

  #ask(job, transfer) {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      if (!this.ready) return resolve(undefined);
      this.#jobs.set(id, resolve);
      this.#worker.postMessage({ id, ...job }, transfer);
    });
  }

  #settle(id, bytes) {
    const resolve = this.#jobs.get(id);
    this.#jobs.delete(id);
    if (resolve) resolve(bytes);
  }

  #fail() {
    this.ready = false;
    for (const id of [...this.#jobs.keys()]) this.#settle(id, undefined);
  }
}

let helpers = [];


let serve = null;
let shareBytes = null;
let sharePlaces = null;
let foldOwn = null;
let poolOwn = null;
let mergeSplit = null;
let offloadValues = null;
let selectHere = null;
let finishSplit = null;
let worthReadingAhead = null;
let keepAhead = null;
let dropAhead = null;
let done = Promise.resolve(); // jobs run one after another, even those that wait for helpers

function status(state, message, fraction) {
  self.postMessage({ type: "status", state, message, fraction });
}

// Replaces every {name, buffer} and {name, file} in the inputs by {name, data: key}, the
// shape api.handle expects, collecting buffers and unread files (Blobs); a long {text}
// becomes {utf8: key} with its bytes among the buffers. A file the page numbered for reading
// ahead ({file, ahead}) is listed in `tags` as [key, ahead]. Walks nested lists too (bisect
// takes lists of files).
function splitPayloads(value, buffers, blobs, tags = []) {
  const key = () => `p${buffers.length + blobs.length}`;
  if (Array.isArray(value)) return value.map((item) => splitPayloads(item, buffers, blobs, tags));
  if (value && typeof value === "object") {
    if (value.buffer instanceof ArrayBuffer) {
      const k = key();
      buffers.push([k, new Uint8Array(value.buffer)]);
      return { name: value.name, data: k };
    }
    if (value.file instanceof Blob) {
      const k = key();
      blobs.push([k, value.file]);
      if (Number.isSafeInteger(value.ahead)) tags.push([k, value.ahead]);
      return { name: value.name, data: k };
    }
    if (typeof value.text === "string" && value.text.length >= TEXT_AS_BYTES) {
      const k = key();
      buffers.push([k, UTF8.encode(value.text)]);
      const { text, ...rest } = value;
      return { ...rest, utf8: k };
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, splitPayloads(v, buffers, blobs, tags)]));
  }
  return value;
}

// Files the page chose, read before Compare is pressed (op "prefetch"), by the number the
// page gave each choice: {file, buffer}. Python holds a read-only copy of each (the glue's
// `ahead`, by that number) for every request whose input names it, until the page no longer
// lists the file; the buffer stays here to hand a helper its share, as a request's own
// buffers are, until a helper is given it whole (then shares are copied out of Python).
const readAhead = new Map();

const sameFile = (x, y) =>
  x.size === y.size && x.name === y.name && x.lastModified === y.lastModified && x.type === y.type;

function forgetAhead(ahead) {
  dropAhead(ahead);
  readAhead.delete(ahead);
}

// Reads the chosen files ([ahead, File] pairs) whole now when the comparison would read them
// whole anyway (Python says: stream.read_ahead), and forgets those read for files no longer
// chosen, or for all when the chosen ones will be streamed. A file that cannot be read is
// left for the comparison to read, and to report.
function prefetch(files) {
  const chosen = (Array.isArray(files) ? files : []).filter(
    (pair) => Array.isArray(pair) && Number.isSafeInteger(pair[0]) && pair[1] instanceof Blob,
  );
  const worth = worthReadingAhead(chosen.map(([, file]) => file.size));
  const numbers = new Set(worth ? chosen.map(([ahead]) => ahead) : []);
  for (const ahead of [...readAhead.keys()]) if (!numbers.has(ahead)) forgetAhead(ahead);
  let read = 0;
  if (!worth) return { ok: true, read };
  for (const [ahead, file] of chosen) {
    if (readAhead.has(ahead)) continue;
    try {
      const buffer = new FileReaderSync().readAsArrayBuffer(file);
      keepAhead(ahead, new Uint8Array(buffer));
      readAhead.set(ahead, { file, buffer });
      read += buffer.byteLength;
    } catch (err) {
      console.warn("perpendis worker: could not read a file ahead:", err);
    }
  }
  return { ok: true, read };
}

// The files of a request that were read ahead (`tags`: [key, ahead] of its file inputs):
// [key, ahead] for Python, which uses its copies, and [key, bytes] for the helpers' shares
// while the buffer is still here.
function takeAhead(tags, blobs) {
  const early = [];
  const buffers = [];
  const files = new Map(blobs);
  for (const [key, ahead] of tags) {
    const known = readAhead.get(ahead);
    if (!known || !sameFile(known.file, files.get(key))) continue;
    early.push([key, ahead]);
    if (known.buffer.byteLength) buffers.push([key, new Uint8Array(known.buffer)]);
  }
  return { early, buffers };
}

function internalError(err) {
  // A Python traceback's last line names the exception; the whole text goes in `detail`.
  const text = String((err && err.message) || err);
  const lines = text.trim().split("\n");
  return {
    ok: false,
    error: { message: `internal error: ${lines[lines.length - 1]}`, where: null, side: null, detail: text },
  };
}

// A copy of share `index`'s bytes of A and B, to hand to a helper, as {a, b, at}.
function shareCopies(index) {
  const pair = shareBytes(index);
  const copies = [0, 1].map((k) => copyOut(pair.get(k)).buffer);
  pair.destroy();
  return { a: copies[0], b: copies[1], at: copies.map((copy) => [0, copy.byteLength]) };
}

// Share `index`'s bytes for a helper, taken from the request's buffers, which Python copied
// in and which still hold them byte for byte: the last helper is given the buffers
// themselves (transferred: nothing is copied here), any other a slice of them. Falls back
// to copying out of Python's heap when a side's elements are in no buffer (converted on
// loading, or parsed from text).
function shareJob(index, last, buffers) {
  const places = JSON.parse(sharePlaces(index));
  const held = new Map(buffers);
  if (!places.every((place) => place && held.get(place[0])?.byteLength)) return shareCopies(index);
  const [[a, atA], [b, atB]] = places.map(([key, offset, length]) => {
    const bytes = held.get(key);
    const start = bytes.byteOffset + offset;
    return last ? [bytes.buffer, [start, length]] : [bytes.buffer.slice(start, start + length), [0, length]];
  });
  return { a, b, at: [atA, atB] };
}

// A comparison Python cut into shares: the helpers fold theirs while this worker folds the
// first. A streamed one names the unread files, which each helper reads itself.
async function foldShared({ split: shares, stream }, available, buffers, blobs) {
  const unread = stream && {
    files: [stream.a, stream.b].map((key) => blobs.find(([k]) => k === key)[1]),
    void: stream.void,
  };
  const jobs = shares.map((share, i) => {
    if (unread) return available[i].fold(share, unread);
    return available[i].fold(share, shareJob(i + 1, i === shares.length - 1, buffers));
  });
  foldOwn();
  // With many errors, the first helper selects one error column's quantiles while this worker
  // does the other's. It holds its own share's errors; this worker's go to it while it folds,
  // and it selects once it has sent its partial, unless the merge finds it cannot (see api).
  const own = available.length ? poolOwn() : undefined;
  let pooled;
  if (own) {
    const [ranks, values] = own.toJs({ depth: 1 });
    own.destroy();
    pooled = available[0].select(ranks, copyOut(values).buffer, true);
  }
  const parts = await Promise.all(jobs);
  const offer = JSON.parse(mergeSplit(parts));
  // Python has copied the partials in: their buffers go back to hold the helpers' next ones.
  parts.forEach((bytes, i) => available[i].giveBack(bytes));
  let found;
  if (offer && available.length) {
    const selected = offer.pooled ? pooled : available[0].select(JSON.stringify(offer.ranks), copyOut(offloadValues()).buffer);
    selectHere();
    found = await selected;
  }
  return JSON.parse(finishSplit(found));
}

async function handle(message) {
  const { id, op } = message;
  if (op === "cancel") return; // cancelling is the page terminating this worker
  if (op === "reserve" && Number.isSafeInteger(message.bytes) && message.bytes > 0) {
    const ready = helpers.filter((helper) => helper.ready);
    for (const helper of ready) helper.reserve(Math.ceil(message.bytes / (ready.length + 1)));
  }
  const buffers = [];
  const blobs = [];
  const tags = [];
  const request = op === "prefetch" ? null : splitPayloads(message, buffers, blobs, tags);
  const progress = (stage, fraction) => self.postMessage({ id, type: "progress", stage, fraction });
  const available = helpers.filter((helper) => helper.ready);
  let result;
  try {
    if (op === "prefetch") result = prefetch(message.files);
    else {
      const ahead = takeAhead(tags, blobs);
      result = JSON.parse(serve(JSON.stringify(request), buffers, blobs, ahead.early, progress, available.length + 1));
      if (result.ok && result.split) result = await foldShared(result, available, [...buffers, ...ahead.buffers], blobs);
    }
  } catch (err) {
    result = internalError(err);
    if (/fatal/i.test(result.error.detail)) {
      // Pyodide cannot recover from a fatal error (e.g. out of memory): answer, then ask
      // the page for a fresh worker.
      self.postMessage({ id, type: "result", result });
      status("failed", `the Python core stopped: ${result.error.message}`);
      return;
    }
  }
  self.postMessage({ id, type: "result", result });
}

const WARM_UP_AFTER_MS = 300;
let started = null; // resolves once the core is ready: jobs sent before then wait for it
let waiting = 0; // jobs received and not started yet

self.onmessage = (event) => {
  // Growing the heap and reading files ahead of a comparison are hints, not jobs anyone
  // waits for: they do not stop the warm-up.
  const counted = event.data.op !== "reserve" && event.data.op !== "prefetch";
  if (counted) waiting++;
  done = done
    .then(() => started)
    .then(() => {
      if (counted) waiting--;
      return handle(event.data);
    })
    .catch((err) => console.error("perpendis worker:", err));
};

async function start() {
  status("loading", "loading the Python runtime", 0.1);
  const pyodide = await bootPython();
  status("loading", "importing NumPy", 0.7);
  pyodide.runPython("import numpy");
  status("loading", "importing perpendis", 0.85);
  [serve, shareBytes, sharePlaces, foldOwn, poolOwn, mergeSplit, offloadValues, selectHere, finishSplit, worthReadingAhead, keepAhead, dropAhead] = pyodide
    .runPython(GLUE)
    .toJs({ depth: 1 });
  status("ready", "ready", 1);
  const cores = () => `ready, comparing on ${1 + helpers.filter((helper) => helper.ready).length} CPU cores`;
  helpers = Array.from({ length: HELPERS }, () => new Helper(() => status("ready", cores(), 1)));
  // Warming up queues as a job does and gives way to the first real job. It starts a little
  // after ready, leaving the moment to the helpers' start and the service worker's caching:
  // started at once, it made a reload right after ready start 0.1-0.3 s slower.
  setTimeout(() => {
    done = done.then(() => warmUp(pyodide, () => waiting > 0)).catch((err) => console.warn("perpendis: warm-up failed:", err));
  }, WARM_UP_AFTER_MS);
}

started = start();
started.catch((err) => status("failed", `could not start the Python core: ${(err && err.message) || err}`));
