// Hosts Pyodide and the `perpendis` package off the main thread, so a long comparison never
// freezes the page. It computes nothing itself: it moves bytes into Python and JSON out.
// Protocol: docs/contracts.md, "Worker protocol". A classic worker, because Pyodide 0.27
// loads its runtime with importScripts.

const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;

importScripts(PYODIDE_URL + "pyodide.js");

// Glue run once in Python: copy each transferred buffer into a NumPy array in one memcpy
// (`assign_to`), then call the one entry point.
const GLUE = `
import inspect
import json
import numpy as np
from perpendis import api

# api.handle may take a progress callback (stage, fraction); pass it only if it does.
TAKES_PROGRESS = "progress" in inspect.signature(api.handle).parameters

def serve(request_json, buffers, progress):
    payloads = {}
    for key, view in buffers:
        array = np.empty(view.byteLength, dtype=np.uint8)
        view.assign_to(array)
        payloads[key] = array
    kwargs = {"progress": progress} if TAKES_PROGRESS else {}
    return json.dumps(api.handle(json.loads(request_json), payloads, **kwargs), allow_nan=False)

serve
`;

let serve = null;
const queue = [];

function status(state, message, fraction) {
  self.postMessage({ type: "status", state, message, fraction });
}

// Replaces every {name, buffer} in the inputs by {name, data: key} and collects the buffers,
// the shape api.handle expects. Walks nested lists too (bisect takes lists of files).
function splitPayloads(value, buffers) {
  if (Array.isArray(value)) return value.map((item) => splitPayloads(item, buffers));
  if (value && typeof value === "object") {
    if (value.buffer instanceof ArrayBuffer) {
      const key = `p${buffers.length}`;
      buffers.push([key, new Uint8Array(value.buffer)]);
      return { name: value.name, data: key };
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, splitPayloads(v, buffers)]));
  }
  return value;
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

function handle(message) {
  const { id, op } = message;
  if (op === "cancel") return; // cancelling is the page terminating this worker
  const buffers = [];
  const request = splitPayloads(message, buffers);
  const progress = (stage, fraction) => self.postMessage({ id, type: "progress", stage, fraction });
  let result;
  try {
    result = JSON.parse(serve(JSON.stringify(request), buffers, progress));
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

self.onmessage = (event) => {
  if (serve) handle(event.data);
  else queue.push(event.data);
};

async function start() {
  status("loading", "loading the Python runtime", 0.1);
  const pyodide = await loadPyodide({
    indexURL: PYODIDE_URL,
    lockFileURL: PYODIDE_URL + "pyodide-lock.json",
    // Fetched while the runtime boots, rather than after it.
    packages: ["numpy", "perpendis"],
  });
  status("loading", "importing NumPy", 0.7);
  pyodide.runPython("import numpy");
  status("loading", "importing perpendis", 0.85);
  serve = pyodide.runPython(GLUE);
  status("ready", "ready", 1);
  while (queue.length) handle(queue.shift());
}

start().catch((err) => status("failed", `could not start the Python core: ${(err && err.message) || err}`));
