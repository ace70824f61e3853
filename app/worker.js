// Hosts Pyodide and the `perpendis` package off the main thread, so a long comparison never
// freezes the page. It computes nothing itself: it moves bytes into Python and JSON out.
// Protocol: docs/contracts.md, "Worker protocol". A classic worker, because Pyodide 0.27
// loads its runtime with importScripts.

// build.py writes app/boot.js itself over the next line (inline_boot): one request fewer.
importScripts("boot.js");
// build.py writes app/protocol.js over the next line too: the protocol's tables (PROTOCOL).
importScripts("protocol.js");

// Long pasted texts travel as UTF-8 bytes: Pyodide turns a JS string into a Python str
// several times slower than Python decodes the same text from a buffer.
const TEXT_AS_BYTES = 1 << 16;
const UTF8 = new TextEncoder();

// The Python side of this worker is perpendis.service.bridge.CoreWorker: it copies each
// transferred buffer into a NumPy array in one memcpy, puts long texts back as str, reads
// unread files a slice at a time (readSlice, app/boot.js), and runs the request through the
// service layer; a big comparison it shares with the helpers is stepped through its
// FoldCoordinator (docs/contracts.md, "Parallel fold"). Only the methods of PROTOCOL.core
// (app/protocol.js) are called here, with plain data: JSON strings, byte views, Blobs.
let core = null;

// Helpers on the other CPU cores fold shares of big comparisons (app/fold_worker.js). They
// start once this core is ready, so they never slow its start; a comparison uses those
// ready by then, and folds here the share of any that fails.
const HELPERS = Math.min(Math.max((self.navigator.hardwareConcurrency || 1) - 1, 0), 3);

class Helper {
  #worker = new Worker("fold_worker.js");
  #jobs = new Map(); // id -> resolve(ArrayBuffer | undefined)
  #nextId = 1;
  ready = false;

  /** `onStarted` is called once, when the helper is ready or has failed to start. */
  constructor(onStarted) {
    let started = false;
    const once = () => {
      if (!started) onStarted();
      started = true;
    };
    this.#worker.onmessage = ({ data }) => {
      if (data.type === "ready") {
        this.ready = true;
        once();
      }
      else if (data.type === "failed") {
        this.#fail();
        once();
      }
      else this.#settle(data.id, data.bytes && new Uint8Array(data.bytes, 0, data.length));
    };
    this.#worker.onerror = (event) => {
      event.preventDefault();
      this.#fail();
      once();
    };
  }

  /** Has the helper grow its heap for its share of a comparison of inputs of `bytes`. */
  reserve(bytes) {
    if (this.ready) this.#worker.postMessage({ method: "reserve", bytes });
  }

  /** Gives back the buffer of an answer, once read, for the helper to write a later one into. */
  giveBack(bytes) {
    if (this.ready && bytes) this.#worker.postMessage({ method: "spare", buffer: bytes.buffer }, [bytes.buffer]);
  }

  /** Resolves with the share's partial as bytes (a Uint8Array), or undefined when this helper could not fold it.
   * `job` holds buffers {a, b} (transferred) with the share's bytes at {at: [[offset, length] x2]},
   * or the unread files {files, void}. */
  fold(share, job) {
    if (!job.a) return this.#ask("fold_files", { share, ...job }, []);
    return this.#ask("fold", { share, ...job }, [...new Set([job.a, job.b])]);
  }

  /** Resolves with the partials (bytes, a Uint8Array) of a unit of a checkpoint comparison, whose
   * tensors the helper reads from `files` (Blobs) itself, at `reads`, or undefined when it could not fold them. */
  foldCheckpoint(job, files, reads) {
    return this.#ask("fold_checkpoint", { job, files, reads }, []);
  }

  /** Resolves with the order statistics at `ranks` (JSON) of `values` (float64, transferred)
   * as float64 bytes (a Uint8Array), or undefined when this helper could not select them. With `pooled`,
   * `ranks` are those of the errors `values` (another share's), and the statistics are of
   * these and the errors of the share this helper folded last. */
  select(ranks, values, pooled = false) {
    return this.#ask("select", { ranks, values, pooled }, [values]);
  }

  // Sends method `method` of PROTOCOL.helper (app/protocol.js) with its fields.
  #ask(method, fields, transfer) {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      if (!this.ready) return resolve(undefined);
      this.#jobs.set(id, resolve);
      this.#worker.postMessage({ id, method, ...fields }, transfer);
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


let done = Promise.resolve(); // jobs run one after another, even those that wait for helpers

// Cancel (app/client.js): the page cancels every job up to an id. It says so by a message,
// seen here between the await points of a job (a shared fold, a checkpoint comparison), and,
// when the page is cross-origin isolated, in shared memory too, which Python reads between
// the chunks of any long job (perpendis.service.cancel). A cancelled job stops at its next
// chunk and answers CANCELLED; one not started yet is not run. The core stays warm.
const CANCELLED = { ok: false, cancelled: true, error: { message: "cancelled", where: null, side: null } };
let cancelFlag = null; // Int32Array over the page's SharedArrayBuffer: the last cancelled id
let cancelledUpTo = 0; // the same, from the page's messages
let running = null; // the id of the job running now
let onCancel = () => {}; // wakes a job waiting on helpers

function cancelAsked() {
  const upTo = Math.max(cancelledUpTo, cancelFlag ? Atomics.load(cancelFlag, 0) : 0);
  return running !== null && running <= upTo;
}

// Resolves once the running job is cancelled (by a message: shared memory wakes nothing).
function whenCancelled() {
  return new Promise((resolve) => {
    onCancel = resolve;
  });
}

// `helpersStarted` (when ready): every helper is ready or has failed to start, so nothing
// of the start-up is left to load (the page installs its offline copy only then).
function status(state, message, fraction, helpersStarted = false) {
  self.postMessage({ type: "status", state, message, fraction, helpersStarted });
}

// Replaces every {name, buffer} and {name, file} in the inputs by {name, data: key}, the
// shape the service expects, collecting buffers and unread files (Blobs); a long {text}
// becomes {utf8: key} with its bytes among the buffers. A file the page numbered for reading
// ahead ({file, ahead}) is listed in `tags` as [key, ahead]. Walks nested lists too (bisect
// takes lists of files).
function takePayloads(value, buffers, blobs, tags = []) {
  const key = () => `p${buffers.length + blobs.length}`;
  if (Array.isArray(value)) return value.map((item) => takePayloads(item, buffers, blobs, tags));
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
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, takePayloads(v, buffers, blobs, tags)]));
  }
  return value;
}

// Files the page chose, read before Compare is pressed (op "prefetch"), by the number the
// page gave each choice: {file, buffer}. Python holds a read-only copy of each (CoreWorker's
// `ahead`, by that number) for every request whose input names it, until the page no longer
// lists the file; the buffer stays here to hand a helper its share, as a request's own
// buffers are, until a helper is given it whole (then shares are copied out of Python).
const readAhead = new Map();

const sameFile = (x, y) =>
  x.size === y.size && x.name === y.name && x.lastModified === y.lastModified && x.type === y.type;

function forgetAhead(ahead) {
  core.drop_ahead(ahead);
  readAhead.delete(ahead);
}

// Reads the chosen files ([ahead, File] pairs) whole now when the comparison would read them
// whole anyway (Python says: the input planner's read_ahead), and forgets those read for files no longer
// chosen, or for all when the chosen ones will be streamed. A file that cannot be read is
// left for the comparison to read, and to report.
function prefetch(files) {
  const chosen = (Array.isArray(files) ? files : []).filter(
    (pair) => Array.isArray(pair) && Number.isSafeInteger(pair[0]) && pair[1] instanceof Blob,
  );
  const worth = core.read_ahead(chosen.map(([, file]) => file.size));
  const numbers = new Set(worth ? chosen.map(([ahead]) => ahead) : []);
  for (const ahead of [...readAhead.keys()]) if (!numbers.has(ahead)) forgetAhead(ahead);
  let read = 0;
  if (!worth) return { ok: true, read };
  for (const [ahead, file] of chosen) {
    if (readAhead.has(ahead)) continue;
    try {
      const buffer = new FileReaderSync().readAsArrayBuffer(file);
      core.keep_ahead(ahead, new Uint8Array(buffer));
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
  const pair = core.share_bytes(index);
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
  const places = JSON.parse(core.share_places(index));
  const held = new Map(buffers);
  if (!places.every((place) => place && held.get(place[0])?.byteLength)) return shareCopies(index);
  const [[a, atA], [b, atB]] = places.map(([key, offset, length]) => {
    const bytes = held.get(key);
    const start = bytes.byteOffset + offset;
    return last ? [bytes.buffer, [start, length]] : [bytes.buffer.slice(start, start + length), [0, length]];
  });
  return { a, b, at: [atA, atB] };
}

// A comparison the core shares with the helpers, stepped as its FoldCoordinator says: each
// helper folds the share it is given while this worker folds the first. A streamed one
// names the unread files, which each helper reads itself.
async function foldShared({ fold_jobs: jobs, stream }, available, buffers, blobs) {
  const unread = stream && {
    files: [stream.a, stream.b].map((key) => blobs.find(([k]) => k === key)[1]),
    void: stream.void,
  };
  const last = Math.max(...jobs.map((job) => job.index));
  const parts = jobs.map(({ helper, share, index }) =>
    available[helper].fold(share, unread || shareJob(index, index === last, buffers)),
  );
  core.fold_first_share();
  // With many errors, the first helper selects one error column's quantiles while this worker
  // does the others'. It holds its own share's errors; this worker's go to it while it folds,
  // and it selects once it has sent its partial, unless the merge finds it cannot.
  const own = available.length ? core.own_errors_for_helper() : undefined;
  let pooled;
  if (own) {
    const [ranks, values] = own.toJs({ depth: 1 });
    own.destroy();
    pooled = available[0].select(ranks, copyOut(values).buffer, true);
  }
  const partials = await Promise.race([Promise.all(parts), whenCancelled()]);
  if (cancelAsked()) return CANCELLED; // the helpers' late answers settle nothing
  const job = JSON.parse(core.merge_partials(partials));
  // Python has copied the partials in: their buffers go back to hold the helpers' next ones.
  jobs.forEach(({ helper }, i) => available[helper].giveBack(partials[i]));
  let found;
  if (job && available[job.helper]) {
    const helper = available[job.helper];
    const selected = job.pooled ? pooled : helper.select(JSON.stringify(job.ranks), copyOut(core.merged_errors()).buffer);
    core.select_kept_columns();
    found = await selected;
  }
  return JSON.parse(core.answer_fold(found));
}

// Lets the messages waiting here (helpers' answers) be handled, without a timer's delay.
function messagesSeen() {
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

// A checkpoint comparison shared with the helpers (perpendis.checkpoints.shared): Python deals
// its units (CheckpointFold's UnitQueue) to whichever worker is free and asks for one. A
// helper is given the unread files its unit's tensors lie in, and two units at a time, so it
// never waits while this worker folds; this worker folds the units no helper can read, takes
// the helpers' partials in between its own, and folds any unit a helper gave back (it failed).
// Each worker reads a unit's bytes before folding it; a unit whose bytes cannot be read so is
// folded reading the files (which says why).
async function foldCheckpoints(units, available, blobs) {
  const files = new Map(blobs);
  const next = (helped) => core.next_checkpoint_unit(helped) ?? undefined;
  const unitFiles = (unit) => unit.files.map((key) => files.get(key));
  const feed = async (helper) => {
    for (let index = next(true); index !== undefined; index = next(true)) {
      const unit = units[index];
      const bytes = await helper.foldCheckpoint(unit.job, unitFiles(unit), unit.reads);
      if (cancelAsked()) return;
      if (!bytes) core.give_back_checkpoint_unit(index);
      else {
        core.take_checkpoint_unit(index, bytes);
        helper.giveBack(bytes);
      }
    }
  };
  const foldHere = async (index) => {
    const unit = units[index];
    const views = unit && (await readRanges(unitFiles(unit), unit.reads).catch(() => null));
    core.fold_checkpoint_unit(index, views || null);
  };
  const feeding = Promise.all(available.flatMap((helper) => [feed(helper), feed(helper)]));
  for (let index = next(false); index !== undefined; index = next(false)) {
    await foldHere(index);
    await messagesSeen();
    if (cancelAsked()) return CANCELLED; // the helpers stop at their next unit
  }
  await feeding;
  for (let index = next(false); index !== undefined; index = next(false)) await foldHere(index);
  return JSON.parse(core.answer_checkpoints());
}

// One job of the page served by the core: its payloads taken out, run through the service,
// and a big comparison's shares folded with the helpers ready now.
async function serveJob(message) {
  const { id } = message;
  const buffers = [];
  const blobs = [];
  const tags = [];
  const request = takePayloads(message, buffers, blobs, tags);
  const progress = (stage, fraction) => self.postMessage({ id, type: "progress", stage, fraction });
  const available = helpers.filter((helper) => helper.ready);
  const ahead = takeAhead(tags, blobs);
  const result = JSON.parse(core.serve(JSON.stringify(request), buffers, blobs, ahead.early, progress, available.length + 1));
  if (result.ok && result.fold_jobs) return foldShared(result, available, [...buffers, ...ahead.buffers], blobs);
  if (result.ok && result.checkpoint_units) return foldCheckpoints(result.checkpoint_units, available, blobs);
  return result;
}

// The page's control ops (PROTOCOL.control, app/protocol.js): messages about the jobs rather
// than jobs, one entry each. `now` runs as the message arrives, never queued behind the job
// it is about; `queued` runs in turn like a job and is answered like one, but it is a hint
// nobody waits for: it is never cancelled and does not hold back the warm-up.
const CONTROL = {
  cancel: {
    now(message) {
      if (message.flag instanceof Int32Array) cancelFlag = message.flag;
      cancelledUpTo = Math.max(cancelledUpTo, message.upTo ?? 0);
      if (cancelAsked()) onCancel();
    },
  },
  reserve: {
    // The helpers grow their heaps for their shares; the core grows its own through the service.
    queued(message) {
      if (Number.isSafeInteger(message.bytes) && message.bytes > 0) {
        const ready = helpers.filter((helper) => helper.ready);
        for (const helper of ready) helper.reserve(Math.ceil(message.bytes / (ready.length + 1)));
      }
      return serveJob(message);
    },
  },
  prefetch: {
    queued: (message) => prefetch(message.files),
  },
};
const controlOp = protocolHandlers(PROTOCOL.control, CONTROL);

/** The control entry of a message's op, or null for a job. */
function control(op) {
  return Object.hasOwn(PROTOCOL.control, op) ? controlOp(op) : null;
}

async function handle(message) {
  const { id, op } = message;
  const entry = control(op);
  let result;
  running = id;
  if (!entry && cancelAsked()) {
    running = null;
    self.postMessage({ id, type: "result", result: CANCELLED });
    return;
  }
  try {
    result = entry ? await entry.queued(message) : await serveJob(message);
  } catch (err) {
    result = cancelAsked() ? CANCELLED : internalError(err);
    if (/fatal/i.test(result.error.detail)) {
      // Pyodide cannot recover from a fatal error (e.g. out of memory): answer, then ask
      // the page for a fresh worker.
      self.postMessage({ id, type: "result", result });
      status("failed", `the Python core stopped: ${result.error.message}`);
      return;
    }
  }
  running = null;
  self.postMessage({ id, type: "result", result });
}

const WARM_UP_AFTER_MS = 300;
let started = null; // resolves once the core is ready: jobs sent before then wait for it
let waiting = 0; // jobs received and not started yet

self.onmessage = (event) => {
  const entry = control(event.data.op);
  if (entry && entry.now) {
    entry.now(event.data);
    return;
  }
  const counted = !entry; // control ops are hints: they do not stop the warm-up
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
  const bridge = pyodide.pyimport("perpendis.service.bridge");
  core = protocolProxy(bridge.CoreWorker.callKwargs(self.readSlice, { cancel_asked: cancelAsked }), PROTOCOL.core);
  const cores = () => `ready, comparing on ${1 + helpers.filter((helper) => helper.ready).length} CPU cores`;
  let starting = HELPERS;
  helpers = Array.from({ length: HELPERS }, () => new Helper(() => status("ready", cores(), 1, --starting === 0)));
  status("ready", "ready", 1, HELPERS === 0);
  // Warming up queues as a job does and gives way to the first real job. It starts a little
  // after ready, leaving the moment to the helpers' start and the service worker's caching:
  // started at once, it made a reload right after ready start 0.1-0.3 s slower.
  setTimeout(() => {
    done = done.then(() => warmUp(pyodide, () => waiting > 0)).catch((err) => console.warn("perpendis: warm-up failed:", err));
  }, WARM_UP_AFTER_MS);
}

started = start();
started.catch((err) => status("failed", `could not start the Python core: ${(err && err.message) || err}`));
