// The workers' protocol, declared once on the JavaScript side: the methods app/worker.js calls
// on its Python (perpendis.service.bridge.CoreWorker) and the messages it sends a helper
// (app/fold_worker.js, whose Python is perpendis.service.bridge.HelperWorker), each with the
// values it takes. perpendis.service.protocol holds the same tables for Python, and
// tests/test_protocol.py checks that both name the same methods with the same values.
// A classic script: the build writes it into app/worker.js; app/fold_worker.js imports it.

const PROTOCOL = {
  // app/worker.js → CoreWorker: [values, in order]; `views` of fold_checkpoint_unit may be left out.
  core: {
    serve: ["request", "buffers", "blobs", "early", "progress", "workers"],
    read_ahead: ["sizes"],
    keep_ahead: ["ahead", "view"],
    drop_ahead: ["ahead"],
    share_places: ["index"],
    share_bytes: ["index"],
    fold_first_share: [],
    own_errors_for_helper: [],
    merge_partials: ["parts"],
    merged_errors: [],
    select_kept_columns: [],
    answer_fold: ["found"],
    next_checkpoint_unit: ["helper"],
    give_back_checkpoint_unit: ["index"],
    fold_checkpoint_unit: ["index", "views"],
    take_checkpoint_unit: ["index", "bytes"],
    answer_checkpoints: [],
  },
  // app/worker.js → app/fold_worker.js: {id, method, ...fields}; answered {id, bytes, length} or {id, error}
  // (spare and reserve are not answered).
  helper: {
    fold: ["share", "a", "b", "at"],
    fold_files: ["share", "void", "files"],
    fold_checkpoint: ["job", "files", "reads"],
    select: ["ranks", "values", "pooled"],
    reserve: ["bytes"],
    spare: ["buffer"],
  },
  // The page (app/client.js) → app/worker.js: control ops, messages about the jobs rather than
  // jobs, {id?, op, ...fields}; reserve is also served by the core as a request of its op.
  control: {
    cancel: ["upTo", "flag"],
    reserve: ["bytes"],
    prefetch: ["files"],
  },
};

// `python` (a bridge class's proxy) as an object with one function per method of `table`,
// each calling Python through the bridge's `call`, which dispatches through the same table
// on its side: a method either side does not declare fails by name. `bridge` is the Python
// object itself, for the benchmarks that read the worker's heap through it.
function protocolProxy(python, table) {
  const methods = Object.keys(table).map((name) => [name, (...args) => python.call(name, ...args)]);
  return { ...Object.fromEntries(methods), bridge: python };
}

// The handler of each method of `table`, from `handlers` (a map of method names to
// functions); throws at once, naming them, when the two name different methods.
function protocolHandlers(table, handlers) {
  const declared = Object.keys(table).sort().join(", ");
  const handled = Object.keys(handlers).sort().join(", ");
  if (declared !== handled) throw new Error(`the protocol declares ${declared}; handled: ${handled}`);
  return (method) => {
    if (!Object.hasOwn(handlers, method)) throw new Error(`not a method of the workers' protocol: ${method}`);
    return handlers[method];
  };
}
