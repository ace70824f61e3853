// The bisect view: captures of many tensors compared layer by layer. It collects the
// inputs (several files per side, more runs than two, a name mapping), asks the core for
// the `bisect` or `runs` result, renders the table, the error-against-depth chart and the
// runs × layers matrix, and opens one pair as the core's last compared pair so the
// ordinary report (bits, heatmap, navigation) shows it; it saves the core's Model Explorer
// node-data files as they come. It computes no number itself.
import { renderDepthChart } from "./render/bisect_chart.js";
import { renderRunsMatrix } from "./render/bisect_matrix.js";
import { renderBisectTable, renderUnpaired } from "./render/bisect_table.js";
import { download, dropTarget, el, fill } from "./render/dom.js";

const $ = (id) => document.getElementById(id);
const RUN_LABELS = ["C", "D", "E", "F"];

/**
 * An input as the worker wants it: text stays text; file bytes are copied into a buffer
 * put in `transfer` (transferring the page's own bytes would empty them); a list of files
 * becomes a list.
 */
export function packInput(input, transfer) {
  if (Array.isArray(input)) return input.map((item) => packInput(item, transfer));
  // Big files go unread: the worker slices them, or has read them already (`ahead`, app/main.js).
  if (input.file) return { name: input.name, file: input.file, ahead: input.ahead };
  if (!input.bytes) return { text: input.text };
  const buffer = input.bytes.slice().buffer;
  transfer.push(buffer);
  return { name: input.name, buffer };
}

/** Files picked or dropped, read into memory: one {name, bytes}, or a list when several.
 * Rejects with a message for the user when one cannot be read (changed, moved or deleted
 * since it was chosen). */
export async function readFiles(fileList) {
  const files = await Promise.all([...fileList].map(async (file) => {
    try {
      return { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
    } catch (err) {
      throw new Error(`${file.name} could not be read (${err.name}): it was changed, moved or deleted after it was chosen; choose it again`);
    }
  }));
  return files.length === 1 ? files[0] : files;
}

/** What a chip says about the files of one side or run. An .onnx model among them is read for
 * its exporter metadata (pairing, and the order of a capture that kept none), not paired by
 * file name as a list of one-tensor files is. */
export function describeFiles(files) {
  if (!Array.isArray(files)) return `${files.name} (${files.bytes.length} bytes)`;
  const models = files.filter((f) => /\.onnx$/i.test(f.name));
  if (models.length) {
    const rest = files.filter((f) => !models.includes(f));
    const model = `model ${models.map((f) => f.name).join(", ")}, whose exporter metadata pairs and orders the layers`;
    return rest.length ? `${describeFiles(rest.length === 1 ? rest[0] : rest)}; ${model}` : model;
  }
  const bytes = files.reduce((sum, f) => sum + f.bytes.length, 0);
  const names = files.slice(0, 3).map((f) => f.name).join(", ");
  return `${files.length} files (${names}${files.length > 3 ? ", …" : ""}; ${bytes} bytes), paired by file name`;
}

/**
 * The bisect report of `python -m perpendis bisect --json` (with --isolate, its own-error
 * column) when a box holds one, else null: the page shows it as it shows its own.
 */
export function cliResult(input) {
  if (!input || Array.isArray(input) || !input.bytes || !/\.json$/i.test(input.name || "")) return null;
  try {
    const data = JSON.parse(new TextDecoder().decode(input.bytes));
    return data && Array.isArray(data.pairs) && "first_failing" in data && Array.isArray(data.only_a) ? data : null;
  } catch {
    return null;
  }
}

/** "A name = B name" lines as a mapping; the first "=" splits, as in `--map A=B`. */
function parseMapping(text) {
  const mapping = {};
  const bad = [];
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf("=");
    const [a, b] = at < 0 ? ["", ""] : [line.slice(0, at).trim(), line.slice(at + 1).trim()];
    if (a && b) mapping[a] = b;
    else bad.push(line);
  }
  return { mapping, bad };
}

function mappingText(mapping) {
  return Object.entries(mapping).map(([a, b]) => `${a} = ${b}`).join("\n");
}

/**
 * The view, wired to the page through `ctx`: ask(op, payload, transfer, job), newJob(),
 * isCurrent(job), setBusy(busy, stage?), showError(error), clearError(), openPair(result) (shows
 * a compare result as the page's report).
 */
export function createBisectView(ctx) {
  const view = {
    runs: [], // extra runs: {label, files, box}
    pair: null, // {a, b, aLabel, bLabel}: the inputs of the table shown
    allRuns: null, // {label: input} when more than two runs are compared
    names: {}, // label → what the user gave for it
    options: {},
    result: null, // the core's `bisect` dict
    matrix: null, // the core's `runs` dict
    openRun: null,
    selected: null,
    order: null, // A names in the order the user put the rows in, or null for the saved order
    nodeData: [], // the core's Model Explorer files of the bisect shown: [{figure, file, label}]
  };

  function extraRuns() {
    return view.runs.filter((r) => r.files);
  }

  // ------------------------------------------------------------ more runs than two

  function renderReferencePick() {
    const pick = $("run-reference");
    const labels = ["A", "B", ...view.runs.map((r) => r.label)];
    const keep = labels.includes(pick.value) ? pick.value : "A";
    fill(pick, labels.map((label) => el("option", { value: label }, label)));
    pick.value = keep;
    $("run-reference-pick").hidden = view.runs.length === 0;
    $("runs-extra").hidden = view.runs.length === 0;
    $("add-run").disabled = view.runs.length >= RUN_LABELS.length;
  }

  function renderRunChip(run) {
    const chip = run.box.querySelector(".file-chip");
    chip.hidden = !run.files;
    if (run.files) chip.querySelector(".file-name").textContent = describeFiles(run.files);
  }

  async function setRunFiles(run, fileList) {
    if (!fileList.length) return;
    try {
      run.files = await readFiles(fileList);
    } catch (err) {
      ctx.showError({ message: err.message, where: null, side: null });
      return;
    }
    renderRunChip(run);
  }

  function addRun() {
    const label = RUN_LABELS.find((l) => !view.runs.some((r) => r.label === l));
    if (!label) return;
    const input = el("input", { type: "file", multiple: true, "data-testid": `file-${label.toLowerCase()}`,
      "aria-label": `Open the capture of run ${label}` });
    const remove = el("button", { type: "button", class: "chip-remove", "aria-label": `Remove run ${label}` }, "×");
    const box = el("div", { class: "side run", "data-run": label },
      el("div", { class: "side-head" }, el("span", { class: "run-label" }, `Run ${label}`,
        el("span", { class: "hint" }, " — another capture of the same model")),
      el("label", { class: "file-pick" }, "Open files…", input)),
      el("p", { class: "file-chip", hidden: true }, el("span", { class: "file-name" })),
      el("p", { class: "empty" }, "Drop an archive or several .npy files here."),
      remove,
      el("div", { class: "drop-hint", "aria-hidden": "true" }, `Drop files for run ${label}`));
    const run = { label, files: null, box };
    input.addEventListener("change", () => setRunFiles(run, input.files));
    remove.addEventListener("click", () => {
      view.runs = view.runs.filter((r) => r !== run);
      box.remove();
      renderReferencePick();
    });
    dropTarget(box, (dropped) => setRunFiles(run, dropped.files));
    view.runs.push(run);
    $("runs-extra").append(box);
    renderReferencePick();
  }

  // ------------------------------------------------------------ talking to the core

  /** Tolerance plus the mapping typed in the field; null (and the error shown) when a line is bad. */
  function requestOptions() {
    const { mapping, bad } = parseMapping($("mapping").value);
    if (bad.length) {
      ctx.showError({ message: `each mapping line must read "A name = B name"; "${bad[0]}" does not`,
        where: "mapping", side: null });
      return null;
    }
    const only = $("only-layers").value.split(",").map((p) => p.trim()).filter(Boolean);
    return { ...view.options, mapping, only };
  }

  /** One request with a fresh job; the result when it is still wanted and ok, else null. */
  async function request(op, payload, transfer, stage) {
    const job = ctx.newJob();
    ctx.setBusy(true, stage);
    const result = await ctx.ask(op, payload, transfer, job);
    if (!ctx.isCurrent(job)) return null;
    ctx.setBusy(false);
    if (!result) return null;
    if (!result.ok) {
      ctx.showError(result.error);
      return null;
    }
    return result;
  }

  async function bisectPair(a, b, labels = { a: "A", b: "B" }) {
    const options = requestOptions();
    if (!options) return false;
    const transfer = [];
    const inputs = { a: packInput(a, transfer), b: packInput(b, transfer) };
    const result = await request("bisect", { inputs, options }, transfer, "comparing layers");
    if (!result) return false;
    view.pair = { a, b, labels };
    view.nodeData = result.model_explorer;
    const bisect = view.order ? await inOrder(result.bisect) : result.bisect;
    if (!bisect) return false;
    showResult(bisect);
    return true;
  }

  /** A fresh bisect put in the user's order; the core judges which pair now fails first. */
  async function inOrder(bisect) {
    const present = new Set(bisect.pairs.map((p) => p.a_name));
    const result = await request("bisect_order", { order: view.order.filter((n) => present.has(n)) }, [],
      "ordering the layers");
    return result && result.bisect;
  }

  async function runMatrix() {
    const options = requestOptions();
    if (!options) return false;
    const reference = $("run-reference").value;
    const transfer = [];
    const runs = Object.fromEntries(Object.entries(view.allRuns).map(([label, input]) => [label, packInput(input, transfer)]));
    const result = await request("runs", { inputs: { runs }, options: { ...options, reference } }, transfer, "comparing runs");
    if (!result) return false;
    view.matrix = result.runs;
    const target = result.runs.departs_first ?? Object.keys(result.runs.runs)[0];
    return openRun(target);
  }

  async function openRun(label) {
    const reference = view.matrix.reference;
    const shown = await bisectPair(view.allRuns[reference], view.allRuns[label], { a: reference, b: label });
    if (shown) {
      view.openRun = label;
      renderMatrix();
    }
    return shown;
  }

  function renderMatrix() {
    $("runs-card").hidden = !view.matrix;
    if (view.matrix) renderRunsMatrix($("runs-matrix"), view.matrix, { names: view.names, open: view.openRun, onOpen: openRun });
  }

  // ------------------------------------------------------------ rendering

  function showResult(result, fromCli = false) {
    view.fromCli = fromCli;
    if (fromCli) view.nodeData = [];
    view.result = result;
    view.selected = null;
    $("bisect").hidden = false;
    $("report").hidden = true;
    const { a, b } = view.pair.labels;
    $("bisect-sides").textContent = `— ${a}: ${view.names[a] ?? a}; ${b}: ${view.names[b] ?? b}`;
    $("bisect-moved").textContent = "";
    renderRows(null, false);
    renderUnpaired($("unpaired"), result, pairByHand);
    const skipped = result.only && result.only.length ? result.n_skipped : 0;
    $("skipped").hidden = !skipped;
    $("skipped").textContent = skipped
      ? `${skipped} other paired layer(s) not named like ${result.only.join(" or ")} were skipped.`
      : "";
    renderNodeData();
  }

  /** One download per figure the core lists; without a model, one disabled button and why. */
  function renderNodeData() {
    $("node-data-status").textContent = "";
    if (!view.nodeData.length) {
      const why = view.fromCli
        ? "This table holds the command line's results, not the captures: perpendis bisect --model M " +
          "--model-explorer nodes.json writes these files."
        : "Needs the .onnx model to name the graph's nodes: drop it beside the captures and compare again.";
      fill($("node-data"), el("button", { type: "button", disabled: true, "aria-describedby": "node-data-why",
        "data-testid": "node-data-download" }, "Download nodes.json"),
      el("span", { id: "node-data-why", class: "hint", "data-testid": "node-data-why" }, ` ${why}`));
      return;
    }
    fill($("node-data"), ...view.nodeData.map(({ figure, file, label }) => {
      const button = el("button", { type: "button", "data-testid": "node-data-download", "data-figure": figure,
        title: label }, `Download ${file}`);
      button.addEventListener("click", () => saveNodeData(figure));
      return button;
    }));
  }

  /** The core writes the figure's file (the CLI's very text); the page only saves it. */
  async function saveNodeData(figure) {
    ctx.clearError();
    const result = await request("model_explorer", { figure }, [], "writing Model Explorer node data");
    if (!result) return;
    download(result.file, new Blob([result.text], { type: "application/json" }));
    $("node-data-status").textContent = `${result.file} downloaded: in Model Explorer, open the .onnx model ` +
      "and add it as per-node data.";
  }

  /** The table and chart drawn again; `again`: over the same table (a move, a selection), whose
   * rows in view are then built at once, not a slice later. */
  function renderRows(focus = null, again = true) {
    renderBisectTable($("bisect-table"), view.result, { selected: view.selected, onSelect: select, onMove: move, focus,
      again });
    renderDepthChart($("depth-chart"), view.result, { selected: view.selected, onSelect: select });
  }

  /** Move row `from` to place `to`: the core re-judges the first failing row in the new order. */
  async function move(from, to, control) {
    ctx.clearError();
    const order = view.result.pairs.map((p) => p.a_name);
    const [name] = order.splice(from, 1);
    order.splice(to, 0, name);
    const open = view.selected === null ? null : view.result.pairs[view.selected].a_name;
    const result = await request("bisect_order", { order }, [], "ordering the layers");
    if (!result) return;
    view.order = order;
    view.result = result.bisect;
    view.selected = open === null ? null : order.indexOf(open);
    renderRows(control ? { index: to, control } : null);
    if (open !== null) renderPairTitle();
    const first = view.result.first_failing;
    $("bisect-moved").textContent = `${name} moved to row ${to + 1} of ${order.length}. ` +
      (first ? `First failing: ${first.a_name}, row ${first.index + 1}.` : "No layer fails.");
  }

  function renderPairTitle() {
    const index = view.selected;
    const pair = view.result.pairs[index];
    const { a, b } = view.pair.labels;
    const back = el("button", { type: "button", class: "link" }, "back to the layers");
    back.addEventListener("click", () => $("bisect-table").scrollIntoView({ block: "start" }));
    fill($("pair-title"),
      `Layer ${index + 1} of ${view.result.pairs.length}: ${a} ${pair.a_name} against ${b} ${pair.b_name} `, back);
    $("pair-title").hidden = false;
  }

  async function select(index) {
    ctx.clearError();
    if (view.fromCli) {
      ctx.showError({ message: "this table was loaded from the command line's results, which hold no tensors: " +
        "drop the two captures to open a layer's full report", where: null, side: null });
      return;
    }
    const result = await request("bisect_pair", { index }, [], "opening the pair");
    if (!result) return;
    view.selected = index;
    renderRows();
    ctx.openPair(result);
    renderPairTitle();
  }

  function pairByHand(aName, bName) {
    const { mapping } = parseMapping($("mapping").value);
    mapping[aName] = bName;
    $("mapping").value = mappingText(mapping);
    again(true);
  }

  /** Run whatever is shown again, after the mapping or the tolerance changed; the open
   * layer, if any, is opened again, so a new tolerance shows on the report being read.
   * A changed mapping (`fromChosen`) compares the files chosen now; a changed tolerance
   * judges the pairs shown again, in the user's order. */
  async function again(fromChosen = false) {
    ctx.clearError();
    const open = view.selected === null ? null : view.result.pairs[view.selected].a_name;
    let shown = false;
    if (fromChosen && ctx.compareAgain && !view.allRuns) {
      // The files chosen now, with the mapping just edited: not those of the table shown.
      const before = view.result;
      await ctx.compareAgain();
      shown = view.result !== before && !$("bisect").hidden;
    } else if (view.allRuns) shown = await runMatrix();
    else if (view.pair) shown = await bisectPair(view.pair.a, view.pair.b, view.pair.labels);
    const index = shown && open !== null ? view.result.pairs.findIndex((p) => p.a_name === open) : -1;
    if (index >= 0) select(index);
  }

  function describe(label, input) {
    if (Array.isArray(input) || input.bytes) return describeFiles(input);
    return `pasted text of box ${label}`;
  }

  function start(inputs, options, note) {
    view.options = options;
    view.matrix = null;
    view.openRun = null;
    view.allRuns = null;
    view.order = null;
    view.names = { A: describe("A", inputs.a), B: describe("B", inputs.b) };
    const noteBox = $("bisect-note");
    noteBox.textContent = note ?? "";
    noteBox.hidden = !note;
    renderMatrix();
  }

  $("add-run").addEventListener("click", addRun);
  $("run-reference").addEventListener("change", () => view.allRuns && runMatrix());
  $("apply-mapping").addEventListener("click", () => again(true));
  $("mapping").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      again(true);
    }
  });
  $("only-layers").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      again(true);
    }
  });

  return {
    get active() {
      return !$("bisect").hidden;
    },

    /** Whether these inputs need the bisect view: several files on a side, more runs, or
     * the command line's bisect results. */
    takes(inputs) {
      return Array.isArray(inputs.a) || Array.isArray(inputs.b) || extraRuns().length > 0 ||
        Boolean(cliResult(inputs.a) || cliResult(inputs.b));
    },

    /** The mapping and name patterns, for a Compare the core may answer layer by layer. */
    pairingOptions() {
      const { mapping } = parseMapping($("mapping").value);
      const only = $("only-layers").value.split(",").map((p) => p.trim()).filter(Boolean);
      return { mapping, only };
    },

    /** Compare the inputs layer by layer (two sides) or as runs × layers (more runs). */
    run(inputs, options) {
      const loaded = cliResult(inputs.a) || cliResult(inputs.b);
      if (loaded) {
        start(inputs, options, "Results of python -m perpendis bisect --json, as the command line computed them" +
          (loaded.isolated ? ", with each layer run alone in ONNX Runtime (the page cannot run ONNX Runtime itself)." : "."));
        view.pair = { a: inputs.a, b: inputs.b, labels: { a: "A", b: "B" } };
        showResult(loaded, true);
        return Promise.resolve(true);
      }
      const runs = extraRuns();
      start(inputs, options, runs.length
        ? `${runs.length + 2} runs: each is compared layer by layer with the reference run.`
        : "Several files on a side: an .onnx model among them gives the exporter's names; two captures " +
        "in one box are the pair; a list of files pairs by file name.");
      if (!runs.length) return bisectPair(inputs.a, inputs.b);
      view.allRuns = { A: inputs.a, B: inputs.b, ...Object.fromEntries(runs.map((r) => [r.label, r.files])) };
      for (const r of runs) view.names[r.label] = describeFiles(r.files);
      return runMatrix();
    },

    /** A `compare` that the core answered layer by layer (an input held several tensors). */
    show(result, inputs, options) {
      start(inputs, options, `${result.switched}. Showing the layer-by-layer view; select a row for its full report.`);
      view.pair = { a: inputs.a, b: inputs.b, labels: { a: "A", b: "B" } };
      view.nodeData = result.model_explorer;
      showResult(result.bisect);
    },

    /** The tolerance changed: judge every layer again; settles when the table is redrawn. */
    rejudge(options) {
      view.options = options;
      return again();
    },

    hide() {
      $("bisect").hidden = true;
      $("pair-title").hidden = true;
    },

    /** Back to a blank page: no extra runs, no mapping. */
    clear() {
      for (const run of view.runs) run.box.remove();
      view.runs = [];
      view.pair = null;
      view.allRuns = null;
      view.order = null;
      $("mapping").value = "";
      $("only-layers").value = "";
      renderReferencePick();
      this.hide();
    },
  };
}
