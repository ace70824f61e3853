// The page's handle on the Python core in app/worker.js. The worker starts as soon as this
// module is imported, so Pyodide loads while the user is still pasting.
// Protocol: docs/contracts.md, "Worker protocol".

const WORKER_URL = new URL("./worker.js", import.meta.url);
// Published at the site root by build.py, so its scope covers the page (see app/sw.js).
const SERVICE_WORKER_URL = new URL("../sw.js", import.meta.url);

/** Rejection reason of a request the page cancelled (`err.name === "CancelledError"`). */
export class CancelledError extends Error {
  constructor() {
    super("cancelled");
    this.name = "CancelledError";
  }
}

// The worker's start-up status from which every download is done (app/worker.js: Pyodide and
// its packages loaded, "importing NumPy"): from there to ready takes 1-3 s, and a core silent
// for this long is hung (WebKit and Firefox were both seen freezing a worker mid-start),
// not slow. Before it, a slow network can take any time.
const DOWNLOADED_FRACTION = 0.7;
const START_BOUND_MS = 60_000;
const WATCHDOG_RESTARTS = 2; // then the core is reported failed, rather than loop
// How long cancelled work may take to stop at its next chunk (a streamed chunk, a layer of
// a bisect, a checkpoint tensor: well under a second each) before the core is restarted:
// work that reports no progress cannot stop otherwise.
const CANCEL_BOUND_MS = 3_000;

export class CoreClient {
  #worker = null;
  #nextId = 1;
  #pending = new Map(); // id -> {resolve, reject, onProgress}
  #queued = new Map(); // id -> message sent before ready: sent again to a core the watchdog restarts
  #watchdog = null;
  #watchdogRestarts = 0;
  #listeners = new Set();
  #draining = new Set(); // ids cancelled and not answered yet: the core is still stopping them
  #held = []; // [message, transfer] sent while it is: posted once it has
  #cancelBound = null;
  // The cancel flag the core's Python reads between chunks: shared memory, which a page has
  // only when it is cross-origin isolated (scripts/serve.py's COOP and COEP headers), and
  // not even then in every browser (WebKitGTK 2.50 says isolated, and has no SharedArrayBuffer).
  #flag = globalThis.crossOriginIsolated && typeof SharedArrayBuffer === "function"
    ? new Int32Array(new SharedArrayBuffer(4)) : null;
  #status = { type: "status", state: "loading", message: "starting the Python core", fraction: 0 };

  /** `startBoundMs`: how long a core whose downloads are done may stay silent before it is
   * restarted (tests make it short). */
  constructor(url = WORKER_URL, { startBoundMs = START_BOUND_MS, cancelBoundMs = CANCEL_BOUND_MS } = {}) {
    this.url = url;
    this.startBoundMs = startBoundMs;
    this.cancelBoundMs = cancelBoundMs;
    this.#start();
  }

  /** Calls `cb(status)` now with the latest status and on every change; returns an unsubscribe function. */
  onStatus(cb) {
    this.#listeners.add(cb);
    cb(this.#status);
    return () => this.#listeners.delete(cb);
  }

  get status() {
    return this.#status;
  }

  /**
   * Sends one job; resolves with the service's answer (`perpendis.service.serve`) (`{ok: true, ...}` or `{ok: false, error}`).
   * Buffers in `transfer` are moved, not copied: they are unusable here afterwards.
   * Requests sent before the core is ready wait in the worker's queue.
   */
  request(op, payload = {}, transfer = [], onProgress = null) {
    const id = this.#nextId++;
    const message = { ...payload, id, op };
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      if (this.#draining.size) {
        this.#held.push([message, transfer]);
        return;
      }
      if (this.#status.state === "ready") {
        this.#worker.postMessage(message, transfer);
        return;
      }
      // Copied, not moved: a core restarted by the watchdog is sent it again.
      this.#queued.set(id, message);
      this.#worker.postMessage(message);
    });
  }

  /** Stops whatever runs now; pending requests reject with CancelledError at once. The core
   * stops the running one at its next chunk and stays warm; requests sent meanwhile wait
   * for that. Work that has not stopped within `cancelBoundMs` is stopped by restarting the
   * core, so the next request never waits long behind a cancelled one. */
  cancel() {
    const ids = [...this.#pending.keys()];
    if (!ids.length) return;
    const upTo = Math.max(...ids);
    for (const id of ids) {
      this.#pending.get(id).reject(new CancelledError());
      this.#pending.delete(id);
      this.#queued.delete(id);
    }
    if (this.#flag) Atomics.store(this.#flag, 0, upTo);
    this.#worker.postMessage({ op: "cancel", upTo });
    // A core still starting skips them when it is ready; its watchdog covers a hang.
    if (this.#status.state !== "ready") return;
    for (const id of ids) this.#draining.add(id);
    clearTimeout(this.#cancelBound);
    this.#cancelBound = setTimeout(() => this.#stuck(), this.cancelBoundMs);
  }

  /** The cancelled work has stopped: the requests held meanwhile go to the core. */
  #drained() {
    clearTimeout(this.#cancelBound);
    this.#cancelBound = null;
    this.#draining.clear();
    const held = this.#held;
    this.#held = [];
    for (const [message, transfer] of held) {
      if (this.#status.state !== "ready") this.#queued.set(message.id, message);
      this.#worker.postMessage(message, transfer);
    }
  }

  /** The cancelled work did not stop in time: a fresh core, which is sent the held requests. */
  #stuck() {
    this.#disarm();
    this.#queued.clear();
    this.#worker.terminate();
    this.#setStatus({ type: "status", state: "loading", fraction: 0,
      message: "restarting the Python core: the cancelled work could not stop" });
    this.#start();
    this.#drained();
  }

  #start() {
    const worker = new Worker(this.url);
    // A terminated worker can still deliver an event queued before it stopped (e.g. its
    // runtime download failing because it was cut off): that must not touch its successor.
    const current = () => this.#worker === worker;
    worker.onmessage = (event) => current() && this.#receive(event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      if (current()) this.#crashed(event.message || "the worker failed");
    };
    worker.onmessageerror = () => current() && this.#crashed("a message from the worker could not be read");
    if (this.#flag) {
      Atomics.store(this.#flag, 0, 0);
      worker.postMessage({ op: "cancel", upTo: 0, flag: this.#flag });
    }
    this.#worker = worker;
  }

  #restart(reason) {
    this.#disarm();
    this.#queued.clear();
    clearTimeout(this.#cancelBound);
    this.#draining.clear();
    this.#held = []; // pending like the rest: rejected below
    this.#worker.terminate();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const job of pending) job.reject(reason());
    this.#setStatus({ type: "status", state: "loading", message: "restarting the Python core", fraction: 0 });
    this.#start();
  }

  #crashed(why) {
    this.#restart(() => new Error(`the Python core stopped (${why}); it is restarting, try again`));
  }

  /** Restart a core that hung after its downloads, keeping every request: they are sent again. */
  #hung() {
    this.#disarm();
    this.#worker.terminate();
    const seconds = Math.round(this.startBoundMs / 1000);
    if (++this.#watchdogRestarts > WATCHDOG_RESTARTS) {
      this.#setStatus({ type: "status", state: "failed",
        message: `the Python core did not start: it stopped answering ${WATCHDOG_RESTARTS + 1} times; reload the page` });
      return;
    }
    this.#setStatus({ type: "status", state: "loading", fraction: 0,
      message: `restarting the Python core: it had not answered for ${seconds} s after its downloads` });
    this.#start();
    for (const message of this.#queued.values()) this.#worker.postMessage(message);
  }

  #disarm() {
    clearTimeout(this.#watchdog);
    this.#watchdog = null;
  }

  #setStatus(status) {
    this.#status = status;
    for (const cb of this.#listeners) cb(status);
  }

  #receive(message) {
    if (message.type === "status") {
      const wasReady = this.#status.state === "ready";
      this.#disarm();
      if (message.state === "loading" && message.fraction >= DOWNLOADED_FRACTION) {
        this.#watchdog = setTimeout(() => this.#hung(), this.startBoundMs);
      } else if (message.state !== "loading") {
        this.#queued.clear(); // the core took them: a restart from now on is Cancel's or a crash's
      }
      this.#setStatus(message);
      // A core that fails after it was ready (out of memory, fatal error) is replaced; one that
      // cannot start at all is not, or the page would loop.
      if (message.state === "failed" && wasReady) this.#crashed(message.message);
      return;
    }
    if (message.type === "result" && this.#draining.delete(message.id) && !this.#draining.size) this.#drained();
    const job = this.#pending.get(message.id);
    if (!job) return;
    if (message.type === "progress") {
      if (job.onProgress) job.onProgress(message.stage, message.fraction);
    } else if (message.type === "result") {
      this.#pending.delete(message.id);
      job.resolve(message.result);
    }
  }
}

// The runtime's WebAssembly, the largest download of a first visit. The core's worker asks
// for it only after two scripts in a row (worker.js, into which build.py writes boot.js, then
// pyodide.js): 0.38-0.45 s into a first visit at 50 Mbit/s, in three waterfalls.
const RUNTIME_WASM_URL = new URL("../pyodide/pyodide.asm.wasm", import.meta.url);

/** On a first visit, starts the runtime's WebAssembly downloading at once. The worker's own
 * request for it then takes the same response from the HTTP cache, even while it is still
 * arriving: it is downloaded once (tests/browser/test_hosting.py). A prefetch, not a preload:
 * a preload hands the whole 10 MB body to this thread, one 55 ms task on the two cores the
 * core's start needs; a prefetch only fills the HTTP cache (README, "Speed").
 * Not on a returning visit: the service worker then has every file, and would read it twice. */
function prefetchRuntime() {
  if (navigator.serviceWorker?.controller) return;
  const link = document.createElement("link");
  link.rel = "prefetch";
  // A prefetch is idle priority, and Chromium held it back behind the page's modules in 3 of
  // 56 first visits (test_hosting.py), past the worker's request for pyodide.js; asked at high
  // priority, in none of 48. At 50 Mbit/s, 4 visits each: 3.86 s without, 3.81 s with.
  link.fetchPriority = "high";
  link.href = RUNTIME_WASM_URL.href;
  document.head.append(link);
}

prefetchRuntime();

/** The one client of the page, started on import. */
export const core = new CoreClient();

// How long after the core is ready the offline copy waits for its helpers to start.
const HELPERS_START_MS = 20_000;

/** Installs the service worker that lets the next visit start offline, once the core and its
 * helpers have started: its downloads then never compete with start-up, and come from the
 * HTTP cache. Nor does it take control of the page while the core starts its helper workers:
 * the Firefox tests saw the core's worker freeze at that moment, about one start in thirty. */
function keepOfflineCopy(client) {
  if (!("serviceWorker" in navigator)) return;
  let registered = false;
  let timer = null;
  const register = () => {
    if (registered) return;
    registered = true;
    clearTimeout(timer);
    navigator.serviceWorker
      .register(SERVICE_WORKER_URL)
      // Offline, the update check fails while the installed worker keeps serving the page.
      .catch((err) => console.info(`offline copy not updated: ${err.message}`));
  };
  client.onStatus((status) => {
    if (status.state !== "ready" || registered) return;
    if (status.helpersStarted) register();
    else if (timer === null) timer = setTimeout(register, HELPERS_START_MS);
  });
}

keepOfflineCopy(core);
