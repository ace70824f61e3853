// The page: collects the two inputs, sends them to the Python core, renders the report
// and asks the core for anything more (an element's bits, the next difference, a slice,
// scatter points). It computes no number itself.
import { createBisectView, describeFiles, packInput, readFiles } from "./bisect.js";
import { CancelledError, core } from "./client.js";
import { openedInputs } from "./open.js";
import { renderAxes } from "./render/axes.js";
import { renderElement } from "./render/bits.js";
import { download, dropTarget, fill, formatIndex } from "./render/dom.js";
import { renderFindings } from "./render/findings.js";
import { moveMark, renderHeatmap, renderSliceControls } from "./render/heatmap.js";
import { renderPasteBack } from "./render/paste_back.js";
import { renderEmptyChart, renderHistogram } from "./render/histogram.js";
import { renderInputNotes } from "./render/inputs.js";
import { copyFullValues } from "./render/numbers.js";
import { renderReference } from "./render/reference.js";
import { renderScatter } from "./render/scatter.js";
import { afterFrame } from "./render/slices.js";
import { renderStats, renderSummary } from "./render/summary.js";
import { renderTask } from "./render/task.js";
import { renderTolerance } from "./render/tolerance.js";
import { isExact, renderVerdict } from "./render/verdict.js";
import { renderWorst } from "./render/worst.js";
import { BUNDLE_EXTENSION, decodeBundle, decodeShare, encodeShare } from "./share.js";

const $ = (id) => document.getElementById(id);
const SIDES = ["a", "b"];
const INPUTS = [...SIDES, "ref"]; // the reference is optional
const IN_PLACE_BYTES = 32 * 2 ** 20; // files from this size are handed to the worker unread
// Pasted or dropped text longer than this is kept beside its box, not in it: a text box
// holding megabytes takes seconds to lay out, and 120 kB (10 k float32 numbers) was a
// 187 ms frame of text shaping and layout; 32 k characters keep that frame near 50 ms.
const KEEP_ASIDE_CHARS = 2 ** 15;
const SCATTER_POINTS = 2000;
const SLICE_CELLS = 4096;

const state = {
  files: { a: null, b: null, ref: null }, // {name, bytes: Uint8Array}, or a list of them, when files replace the text
  voidFormat: {}, // per input: how a .npy of anonymous void elements is read; absent = the core's default
  tolerance: {}, // what the user chose: {preset} or {atol, rtol}; empty = the core's default
  task: false, // the prediction check on the last axis (report.task), asked with the toggle or the offer
  result: null, // last successful compare/rejudge result: {report, markdown, text}
  compared: null, // the inputs of that result, kept for the share link
  example: null, // the inputs of the example whose description is shown
  judged: null, // {inputs, options} of the report or layer table on screen: what "stale" is measured against
  badField: false, // an atol/rtol field holds what is not a number: the report shown does not use it
  rejudging: null, // the job judging the report shown again at a new tolerance, until it answers
  selected: null, // flat index of the element shown in the inspector
  selectedIndex: null,
  view: null, // heatmap slice: {axes: [row, col], index: [...], metric}
  job: 0, // generation counter: a result of an older job than the latest is ignored
};

// ---------------------------------------------------------------- status and errors

function showStatus(status) {
  $("status").textContent = status.state === "ready" ? "ready" : status.message;
  $("status").title = status.message; // when ready: on how many CPU cores big comparisons run
  $("status").dataset.state = status.state;
  const bar = $("status-progress");
  bar.hidden = status.state !== "loading" || typeof status.fraction !== "number";
  if (!bar.hidden) bar.value = status.fraction;
}

function setBusy(busy, stage = "comparing", fraction = null) {
  document.body.classList.toggle("busy", busy);
  $("cancel").hidden = !busy;
  const job = $("job");
  job.hidden = !busy;
  job.textContent = busy ? `${stage}${fraction === null ? "…" : ` ${Math.round(fraction * 100)}%`}` : "";
}

function clearError() {
  const error = $("error");
  error.hidden = true;
  error.textContent = "";
  document.querySelector(".error-home").append(error);
  for (const also of document.querySelectorAll(".error-also")) also.remove();
  for (const side of INPUTS) $(`paste-${side}`).removeAttribute("aria-invalid");
}

/**
 * Show an error next to the input it concerns (`side`); one that concerns several boxes
 * (`sides`: both hold summarised prints) is repeated beside each of the others, announced
 * once. The inputs themselves are never touched.
 */
function showError({ message, where, side, sides }) {
  const error = $("error");
  error.textContent = where ? `${message} (${where})` : message;
  error.hidden = false;
  if (INPUTS.includes(side)) {
    if (side === "ref") $("ref-box").open = true;
    $(`side-${side}`).querySelector(".error-slot").append(error);
    for (const other of (sides ?? []).filter((s) => s !== side && INPUTS.includes(s))) {
      const also = error.cloneNode(true);
      also.removeAttribute("id");
      also.removeAttribute("role");
      also.className = "error-also";
      also.dataset.testid = `error-${other}`;
      $(`side-${other}`).querySelector(".error-slot").append(also);
    }
    for (const flagged of new Set([side, ...(sides ?? [])])) {
      if (INPUTS.includes(flagged)) $(`paste-${flagged}`).setAttribute("aria-invalid", "true");
    }
  } else {
    document.querySelector(".error-home").append(error);
  }
}

// ---------------------------------------------------------------- is the report on screen still the answer?

/** Whether two sets of inputs are the same: the same text, or the very same chosen files. */
function sameInputs(x, y) {
  return INPUTS.every((side) => {
    const [p, q] = [x[side], y[side]];
    if (!p || !q) return !p && !q;
    return typeof p.text === "string" && typeof q.text === "string" && !p.file ? p.text === q.text : p === q;
  });
}

/** What differs between the report on screen and the inputs and options on screen; empty when
 * the report is the answer to what is shown, or when no report is shown. */
function staleReasons() {
  const judged = state.judged;
  const shown = !$("report").hidden || bisectView.active;
  if (!shown || !judged) return [];
  const reasons = [];
  if (!sameInputs(judged.inputs, currentInputs())) reasons.push("the inputs changed");
  if (JSON.stringify(judged.options) !== JSON.stringify(toleranceOptions())) reasons.push("the tolerance changed");
  if (state.badField) reasons.push("a tolerance field is not a number");
  return reasons;
}

/**
 * Dim the report and say so (the note is a live region: screen readers hear it) whenever it no
 * longer answers what is on screen: an answer for other inputs must never look like this one's.
 * Compare makes it fresh again.
 */
function refreshStale() {
  if (state.example && !sameInputs(state.example, currentInputs())) {
    // Other inputs than the example's: its description no longer describes them.
    $("example-about").hidden = true;
    state.example = null;
  }
  const reasons = staleReasons();
  // A new tolerance is being judged on the same inputs: the answer on screen is the old
  // tolerance's until the new one arrives, so it is marked as such (and busy) meanwhile.
  const pending = state.rejudging !== null && state.rejudging === state.job;
  const stale = reasons.length > 0 || pending;
  for (const id of ["report", "bisect"]) {
    $(id).classList.toggle("stale", stale);
    $(id).dataset.stale = String(stale);
    $(id).setAttribute("aria-busy", String(pending));
  }
  const note = $("stale-note");
  const text = pending
    ? "Judging again at the new tolerance: until the answer arrives, this report shows the earlier tolerance's."
    : stale
    ? `Out of date: ${reasons.join(", and ")} since this report was made. It still shows the earlier answer; ` +
      "press Compare to judge what is on screen."
    : "";
  if (note.textContent !== text) note.textContent = text;
  note.hidden = !stale;
}

/** Whether the core's last comparison is the one on screen, and its inputs still the ones
 * shown: only then can a new tolerance be judged on the core's copy of them. */
function canRejudge() {
  return Boolean(state.judged) && sameInputs(state.judged.inputs, currentInputs());
}

// ---------------------------------------------------------------- inputs

function renderChip(side) {
  const chip = $(`chip-${side}`);
  const file = state.files[side];
  chip.hidden = !file;
  $(`side-${side}`).classList.toggle("has-file", Boolean(file));
  const what = !file ? null
    : file.file ? `${file.name} (${file.file.size} bytes, read in place)`
    : typeof file.text === "string" ? `pasted text (${file.text.length} characters, kept beside the box)`
    : describeFiles(file);
  if (file) chip.querySelector(".file-name").textContent = `${what} — used instead of the text`;
}

async function setFiles(side, fileList) {
  if (fileList.length === 1 && fileList[0].name.endsWith(BUNDLE_EXTENSION)) {
    await openBundle(fileList[0]);
    return;
  }
  // A big file stays where it is: the worker reads it (streaming big .npy pairs) without
  // the page ever holding a copy.
  const [first] = fileList;
  const inPlace = fileList.length === 1 && first.size >= IN_PLACE_BYTES;
  try {
    state.files[side] = inPlace ? { name: first.name, file: first, ahead: nextAhead++ } : await readFiles(fileList);
  } catch (err) {
    showError({ message: err.message, where: null, side }); // what was chosen before stays
    return;
  }
  delete state.voidFormat[side];
  renderChip(side);
  reserveFor(state.files);
  prefetchFor(state.files);
  refreshStale();
}

/** Bytes of the files chosen for the inputs. */
function chosenBytes(files) {
  const size = (input) =>
    Array.isArray(input) ? input.reduce((sum, item) => sum + size(item), 0)
    : input?.file ? input.file.size
    : input?.bytes ? input.bytes.length
    : 0;
  return INPUTS.reduce((sum, side) => sum + size(files[side]), 0);
}

// Big files chosen: the core grows its heap for them now, while the user has yet to press
// Compare, rather than during the comparison (perpendis.heap).
const RESERVE_MIN_BYTES = 16 * 2 ** 20;

function reserveFor(files) {
  const bytes = chosenBytes(files);
  if (bytes >= RESERVE_MIN_BYTES) core.request("reserve", { bytes }).catch(() => {});
}

// Files handed over unread are read by the core now, while the user has yet to press
// Compare, when the comparison would read them whole anyway (the core decides); choosing
// again, or removing a file, lets go of what is no longer chosen. Each chosen file has its
// own number (`ahead`), by which the comparison's request names the copy read ahead: a File
// posted twice arrives as two objects.
let nextAhead = 1;
let readingAhead = false; // the core was last sent files to read ahead: it holds them

function prefetchFor(files) {
  const chosen = INPUTS.map((side) => files[side]).filter((input) => input?.file);
  if (!chosen.length && !readingAhead) return;
  readingAhead = chosen.length > 0;
  core.request("prefetch", { files: chosen.map((input) => [input.ahead, input.file]) }).catch(() => {});
}

/** A long text stays beside the box, as a dropped file would: compared, never shown. */
function putText(side, text) {
  if (text.length <= KEEP_ASIDE_CHARS) {
    $(`paste-${side}`).value = text;
    return;
  }
  state.files[side] = { name: "pasted text", text };
  delete state.voidFormat[side];
  renderChip(side);
  prefetchFor(state.files);
  refreshStale();
}

function removeFile(side) {
  state.files[side] = null;
  delete state.voidFormat[side];
  $(`file-${side}`).value = "";
  renderChip(side);
  prefetchFor(state.files);
  refreshStale();
}

/** The inputs as the share link and the core want them; files win over text. An empty
 * reference is left out. */
function currentInputs() {
  const inputs = {};
  for (const side of INPUTS) {
    const file = state.files[side];
    const text = $(`paste-${side}`).value;
    if (side === "ref" && !file && !text.trim()) continue;
    inputs[side] = file ?? { text };
  }
  return inputs;
}

/** Worker inputs: file bytes are copied, because transferring them would empty ours. */
function toRequest(inputs) {
  const transfer = [];
  const out = {};
  for (const [side, input] of Object.entries(inputs)) {
    out[side] = packInput(input, transfer);
  }
  return { inputs: out, transfer };
}

function wireSide(side) {
  const box = $(`side-${side}`);
  $(`file-${side}`).addEventListener("change", (event) => {
    if (event.target.files.length) setFiles(side, event.target.files);
  });
  box.querySelector(".chip-remove").addEventListener("click", () => removeFile(side));
  dropTarget(box, (dropped) => {
    const text = dropped.getData("text/plain");
    if (dropped.files.length) setFiles(side, dropped.files);
    else if (text) putText(side, text); // a drop without text (a bisect row) keeps the input
  });
  $(`paste-${side}`).addEventListener("paste", (event) => {
    const text = event.clipboardData ? event.clipboardData.getData("text/plain") : "";
    if (text.length <= KEEP_ASIDE_CHARS) return; // the box takes it as usual
    event.preventDefault();
    putText(side, text);
  });
  $(`paste-${side}`).addEventListener("input", refreshStale);
  $(`paste-${side}`).addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      compare();
    }
  });
}

// ---------------------------------------------------------------- talking to the core

/**
 * One request to the core; null when cancelled or superseded by a newer job. Progress marks
 * the page busy, and the answer (of the current job) clears it, whatever the operation.
 */
async function ask(op, payload = {}, transfer = [], job = state.job) {
  try {
    const result = await core.request(op, payload, transfer, (stage, fraction) => {
      if (job === state.job) setBusy(true, stage, fraction);
    });
    return job === state.job ? result : null;
  } catch (err) {
    if (err instanceof CancelledError) return null;
    showError({ message: err.message, where: null, side: null });
    return null;
  } finally {
    if (job === state.job) setBusy(false);
  }
}

function toleranceOptions() {
  return state.task ? { ...state.tolerance, task: { axis: -1 } } : { ...state.tolerance };
}

/** Compare options: the tolerance, and for each side re-read by the user, its void format. */
function compareOptions() {
  const voidFormat = Object.fromEntries(Object.entries(state.voidFormat).filter(([side, f]) => f && state.files[side]));
  // The name mapping counts for Compare too: archives of several tensors are bisected by the core.
  const options = { ...toleranceOptions(), ...bisectView.pairingOptions() };
  return Object.keys(voidFormat).length ? { ...options, void_format: voidFormat } : options;
}

function readVoidAs(side, format) {
  state.voidFormat[side] = format;
  compare();
}

/** The first Compare folds the list of accepted forms away, for this visit and the next: it
 * stood between the controls and the verdict. Folded in the click's own task, so the shift it
 * makes is the user's, not a layout shift. */
const ONBOARDED_KEY = "perpendis.onboarded";

function foldOnboarding() {
  $("onboarding").open = false;
  try {
    localStorage.setItem(ONBOARDED_KEY, "1");
  } catch {
    // storage refused (a private window): folded for this visit only
  }
}

function restoreOnboarding() {
  try {
    if (localStorage.getItem(ONBOARDED_KEY)) $("onboarding").open = false;
  } catch {
    // storage refused: the list stays open
  }
}

/** After Compare, the verdict and the first cards (findings, tolerance) in view. Measured in
 * the next frame, whose layout is done anyway: measuring at once forced a layout of the whole
 * new report into the task that built it (two tasks of ~50 ms instead of one over 100 ms). */
function revealVerdict() {
  requestAnimationFrame(() => {
    const box = $("verdict-box").getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight / 2) $("report").scrollIntoView({ block: "start" });
  });
}

/** After a layer-by-layer Compare, its summary and the first failing row in view. Measured
 * in the next frame, as the verdict is: measured at once, it laid the new table out in the
 * task that built it (~37 ms of a 64-ms task for 60 rows). */
function revealLayers() {
  requestAnimationFrame(() => {
    const first = document.querySelector("[data-testid=bisect-row][data-standing=first-failing]")
      ?? document.querySelector("[data-testid=bisect-summary]");
    if (!first || $("bisect").hidden) return;
    const bottom = first.getBoundingClientRect().bottom;
    const top = $("bisect").getBoundingClientRect().top;
    if (top >= 0 && bottom <= window.innerHeight) return;
    $("bisect").scrollIntoView({ block: "start" });
  });
}

async function compare() {
  foldOnboarding();
  clearError();
  // Fields typed just before pressing Compare count, even before their debounce fires.
  if (fieldsTimer !== null && !applyFields()) return;
  const inputs = currentInputs();
  state.result = null;
  if (bisectView.takes(inputs)) {
    $("report").hidden = true;
    $("input-notes").hidden = true;
    const options = toleranceOptions();
    await bisectView.run(inputs, options);
    state.judged = { inputs, options };
    refreshStale();
    revealLayers();
    return;
  }
  bisectView.hide();
  const job = ++state.job;
  const { inputs: requestInputs, transfer } = toRequest(inputs);
  setBusy(true);
  const result = await ask("compare", { inputs: requestInputs, options: compareOptions() }, transfer, job);
  if (!result) return;
  state.judged = { inputs, options: toleranceOptions() };
  if (!result.ok) {
    // No report is left on screen for inputs the error is about.
    $("report").hidden = true;
    $("input-notes").hidden = true;
    state.judged = null;
    refreshStale();
    showError(result.error);
    return;
  }
  if (result.bisect) {
    // An input held several tensors: the core compared them layer by layer.
    $("report").hidden = true;
    $("input-notes").hidden = true;
    bisectView.show(result, inputs, toleranceOptions());
    refreshStale();
    revealLayers();
    return;
  }
  renderInputNotes($("input-notes"), result, readVoidAs);
  state.compared = { ...inputs, options: toleranceOptions() };
  showReport(result, { fresh: true });
}

/**
 * The report shown marked stale and busy (visibly, and in the live note) while `work` — the
 * same inputs judged at a new tolerance — is in flight: the old tolerance's answer must not
 * look like the new one's. The marking is the job's: a newer job (Compare) replaces it.
 */
async function whileRejudging(work) {
  const job = state.job;
  state.rejudging = job;
  setBusy(true, "judging again");
  refreshStale();
  try {
    return await work;
  } finally {
    if (state.rejudging === job) state.rejudging = null;
    refreshStale();
  }
}

async function rejudge() {
  if (!canRejudge()) {
    // The core holds the arrays of the report shown, not those on screen: judging them again
    // would pass an old answer off as new. The report is marked out of date instead.
    refreshStale();
    return;
  }
  if (bisectView.active) {
    state.judged = { ...state.judged, options: toleranceOptions() };
    await whileRejudging(bisectView.rejudge(toleranceOptions()));
    return;
  }
  if (!state.result) return;
  if (state.result.streamed) {
    // The core kept nothing of a streamed pair: stream it again with the new tolerance.
    await whileRejudging(compare());
    return;
  }
  clearError();
  const job = ++state.job;
  const options = toleranceOptions();
  const result = await whileRejudging(ask("rejudge", { options }, [], job));
  if (!result) return;
  if (!result.ok) {
    refreshStale();
    showError(result.error);
    return;
  }
  if (state.compared) state.compared.options = options;
  state.judged = { ...state.judged, options };
  showReport(result, { fresh: false });
}

// ---------------------------------------------------------------- the report

function showReport(result, { fresh }) {
  state.result = result;
  const report = result.report;
  $("report").hidden = false;
  refreshStale();
  // Shapes that cannot be aligned: no value was compared, so the cards about values go.
  $("report").dataset.compared = String(report.tolerance !== null);
  renderVerdict($("verdict-box"), $("verdict"), $("evidence"), report);
  renderSummary($("summary"), report);
  renderReference($("reference-card"), $("reference"), report);
  renderFindings($("findings"), report.findings);
  renderTask($("task-card"), $("task"), report, selectElement, () => setTask(true));
  renderTolerance($("tolerance"), report, selectElement);
  renderWorst($("worst"), report, selectElement);
  renderStats($("stats"), report);
  const exact = isExact(report.compared_as);
  renderHistogram($("histogram"), report.ulp_histogram, exact);
  $("h-hist").textContent = exact ? "Distances |A − B|" : "ULP distances";
  renderPasteBack($("paste-back-card"), $("paste-back"), report, (code) => copyText(code, "Lines copied."));
  syncToleranceFields(report.tolerance);
  const shape = comparedShape(report);
  $("axes-card").hidden = !report.axes.length;
  renderAxes($("axes"), report.axes);
  if (!fresh) {
    if (state.view && state.view.metric === "fail") loadSlice();
    return;
  }
  $("export-status").textContent = "";
  $("share-link").hidden = true;
  $("download-bundle").hidden = true;
  revealVerdict();
  // The inspector opens at the top finding's place when it has one, else at the first element
  // that fails the tolerance (the first difference is a click away).
  const start = findingElement(report, shape) ?? report.tolerance?.first_fail ?? report.first_diff;
  $("first-diff").hidden = !report.first_diff;
  if (result.streamed) {
    // Not kept by the core: only the report's own elements can be shown.
    showStreamed(report, start?.a_bits !== undefined ? start : report.tolerance?.first_fail ?? report.first_diff);
    return;
  }
  state.view = shape && shape.length >= 2 && report.n_bitwise_diff > 0
    ? { axes: [shape.length - 2, shape.length - 1], index: openingIndex(report, shape), metric: "abs" }
    : null;
  $("slice-card").hidden = !state.view;
  lastSlice = null; // the last report's slice: never redrawn for this one
  // What the report itself holds is drawn now, with it; what the core computes, a frame later.
  if (state.view) renderSliceControls($("slice-controls"), shape, state.view, changeView, isExact(report.compared_as));
  if (start && start.a_bits !== undefined) showElement(start, null);
  if (!start && !(report.n_elements > 0 && report.shape_match)) showNoElement();
  // The evidence (element, heat map, scatter) is asked for once the report's first frame is
  // painted: asked at once, the core computed it on the other core while that frame was laid
  // out, and on two cores shared with the helpers' start the frame took 4x its CPU time.
  const job = state.job;
  afterFrame(() => {
    if (state.result === result && state.job === job) askEvidence(report, start);
  });
}

/** The element view emptied: the report has no element to show. */
function showNoElement() {
  state.selected = null;
  state.selectedIndex = null;
  fill($("element"));
  $("element-index").textContent = "";
}

/** The element at `start` (else the first element), the heat map's slice and the scatter
 * plot of a fresh report, from the core. */
function askEvidence(report, start) {
  if (state.view) loadSlice();
  if (start) selectElement(start.flat, { follow: false }); // the heat map stays on the finding's slice
  else if (report.n_elements > 0 && report.shape_match) selectElement(0);
  loadScatter(report);
}

/** Row-major flat position of `index` in `shape`. */
function flatOf(index, shape) {
  return index.reduce((flat, i, axis) => flat * shape[axis] + i, 0);
}

/**
 * The element the top finding points at: its element, or for a finding about some indices of
 * an axis the first of the report's elements (first failure, worst ones, first difference)
 * that lies there. An element of the report, or {flat, index} for the core to fill in; null
 * when the finding has no place.
 */
function findingElement(report, shape) {
  const where = report.findings[0]?.where;
  if (!where || !shape) return null;
  if (where.element?.length === shape.length) {
    const flat = flatOf(where.element, shape);
    const known = [report.tolerance?.first_fail, report.first_diff, ...Object.values(report.worst ?? {})]
      .find((e) => e && e.flat === flat);
    return known ?? { flat, index: [...where.element] };
  }
  if (Number.isInteger(where.axis) && where.indices?.length) {
    const on = new Set(where.indices);
    return [report.tolerance?.first_fail, report.worst?.abs, report.worst?.rel, report.worst?.ulp, report.first_diff]
      .find((e) => e && e.index.length === shape.length && on.has(e.index[where.axis])) ?? null;
  }
  return null;
}

/**
 * The slice the heat map opens on: the one holding the top finding's element, else its axis at
 * its first index, else the worst element's (docs/contracts.md, findings).
 */
function openingIndex(report, shape) {
  const where = report.findings[0]?.where;
  const worst = report.worst?.abs?.index;
  const index = worst && worst.length === shape.length ? [...worst] : shape.map(() => 0);
  if (where?.element?.length === shape.length) return [...where.element];
  if (Number.isInteger(where?.axis) && where.axis < shape.length && where.indices?.length) index[where.axis] = where.indices[0];
  return index;
}

/** A streamed pair is not kept by the core: the report's own elements are all there is to show. */
function showStreamed(report, start) {
  state.view = null;
  $("slice-card").hidden = true;
  if (start) showElement(start, null);
  else {
    fill($("element"));
    $("element-index").textContent = "";
  }
  $("nav-status").textContent = "The files were streamed, not kept: stepping between differences, the heat map " +
    "and the scatter plot need them in memory.";
  renderEmptyChart($("scatter"), "Not available for streamed files.");
}

function comparedShape(report) {
  if (report.compared_shape) return report.compared_shape;
  return report.shape_match ? report.a.shape : null;
}

function showElement(element, detail) {
  state.selected = element.flat;
  state.selectedIndex = element.index;
  $("element-index").textContent = formatIndex(element.index);
  renderElement($("element"), element, detail, isExact(state.result?.report.compared_as));
}

/** Show element `flat` in the inspector; with `follow`, the heat map moves to its slice. */
async function selectElement(flat, { follow = true } = {}) {
  if (state.result && state.result.streamed) return;
  const asked = state.view;
  const result = await ask("element", { flat });
  if (!result || !result.ok) {
    if (result) showError(result.error);
    return;
  }
  showElement(result.element, result.element);
  if (state.view) {
    // The heat map follows the element to its slice, unless the user moved it meanwhile.
    const outside = follow && state.view === asked
      && result.element.index.some((i, axis) => !state.view.axes.includes(axis) && state.view.index[axis] !== i);
    if (outside) {
      state.view = { ...state.view, index: [...result.element.index] };
      renderSliceControls($("slice-controls"), comparedShape(state.result.report), state.view, changeView,
        isExact(state.result.report.compared_as));
      loadSlice();
    } else {
      markSlice();
    }
  }
}

async function step(direction) {
  if (state.selected === null || (state.result && state.result.streamed)) return;
  const result = await ask("step", { flat: state.selected, direction });
  if (!result || !result.ok) {
    if (result) showError(result.error);
    return;
  }
  if (result.flat === null) {
    $("nav-status").textContent = direction > 0 ? "No later difference." : "No earlier difference.";
    return;
  }
  $("nav-status").textContent = "";
  selectElement(result.flat);
}

async function loadScatter(report) {
  if (report.n_bitwise_diff === 0) {
    renderEmptyChart($("scatter"), "No differing elements to plot.");
    return;
  }
  const result = await ask("scatter", { max_points: SCATTER_POINTS });
  if (result && result.ok) renderScatter($("scatter"), result.points);
}

function changeView(view) {
  const drawn = lastSlice?.view;
  const redraw = drawn && ["axes", "index", "metric"].every((key) => String(view[key]) === String(drawn[key]));
  state.view = view;
  if (redraw) {
    // Only the log toggle changed: the cells are the same, drawn on the other scale.
    renderSliceControls($("slice-controls"), comparedShape(state.result.report), view, changeView,
      isExact(state.result.report.compared_as));
    markSlice();
  } else {
    loadSlice();
  }
}

let lastSlice = null; // the slice drawn, with the view it was asked for

async function loadSlice() {
  const view = state.view;
  renderSliceControls($("slice-controls"), comparedShape(state.result.report), view, changeView,
    isExact(state.result.report.compared_as));
  const result = await ask("slice", { axes: view.axes, index: view.index, metric: view.metric, max_cells: SLICE_CELLS });
  if (!result || !result.ok || view !== state.view) return;
  lastSlice = { ...result.slice, view };
  markSlice();
}

/** Redraw the heatmap with the selected element's cell marked, if it lies in this slice. */
function markSlice() {
  if (!lastSlice || !state.view) return;
  const { axes, index, metric } = state.view;
  const at = state.selectedIndex;
  const inSlice = at && at.every((i, axis) => axes.includes(axis) || index[axis] === i);
  const mark = inSlice ? [Math.floor(at[axes[0]] / lastSlice.row_step), Math.floor(at[axes[1]] / lastSlice.col_step)] : null;
  // The same slice on the same scale: only the mark moves.
  const drawn = { slice: lastSlice, log: Boolean(state.view.log) };
  if (drawnMap && drawnMap.slice === drawn.slice && drawnMap.log === drawn.log) {
    moveMark($("heatmap"), mark);
    return;
  }
  renderHeatmap($("heatmap"), lastSlice, metric, mark, selectElement, { log: state.view.log });
  drawnMap = drawn;
}

let drawnMap = null; // the slice and scale the heat map shows now

// ---------------------------------------------------------------- tolerance controls

function syncToleranceFields(t) {
  if (!t) return; // nothing was judged: the fields keep what the user typed
  const custom = state.tolerance.atol !== undefined || state.tolerance.rtol !== undefined;
  $("preset").value = state.tolerance.preset ?? (custom ? "custom" : "");
  $("atol").value = String(t.atol);
  $("rtol").value = String(t.rtol);
}

/** A tolerance field: undefined when empty (the core's default), null when not a number. */
function readNumber(id) {
  const text = $(id).value.trim();
  if (text === "") return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) {
    showError({ message: `${id} must be a non-negative number such as 1e-5; "${text}" is not.`, where: id, side: null });
    return null;
  }
  return value;
}

let fieldsTimer = null;

/** Take atol/rtol as typed; false when one of them is not a number. */
function applyFields() {
  clearTimeout(fieldsTimer);
  fieldsTimer = null;
  const atol = readNumber("atol");
  const rtol = readNumber("rtol");
  state.badField = atol === null || rtol === null;
  refreshStale();
  if (state.badField) return false;
  state.tolerance = Object.fromEntries(Object.entries({ atol, rtol }).filter(([, v]) => v !== undefined));
  return true;
}

/** Ask for the prediction check (or stop asking) and judge the pair again. */
function setTask(on) {
  state.task = on;
  $("task-toggle").checked = on;
  rejudge();
}

function wireTolerance() {
  $("task-toggle").addEventListener("change", () => setTask($("task-toggle").checked));
  $("preset").addEventListener("change", () => {
    const preset = $("preset").value;
    state.tolerance = preset && preset !== "custom" ? { preset } : {};
    rejudge();
  });
  for (const id of ["atol", "rtol"]) {
    $(id).addEventListener("input", () => {
      clearTimeout(fieldsTimer);
      fieldsTimer = setTimeout(() => {
        clearError();
        if (applyFields()) rejudge();
      }, 250);
    });
  }
}

// ---------------------------------------------------------------- export and share

async function copyText(text, done) {
  try {
    await navigator.clipboard.writeText(text);
    $("export-status").textContent = done;
  } catch {
    $("export-status").textContent = "The browser refused the clipboard; select the text below and copy it.";
    const field = $("share-link");
    field.value = text;
    field.hidden = false;
    field.select();
  }
}

function downloadJson() {
  download("perpendis-report.json", new Blob([JSON.stringify(state.result.report, null, 2)], { type: "application/json" }));
}

async function share() {
  if (!state.compared) {
    $("export-status").textContent = "A layer of a layer-by-layer comparison cannot be shared as a link; " +
      "download the JSON, or open its two tensors as files and share that comparison.";
    return;
  }
  const { a, b, ref, options } = state.compared;
  if ((a && a.file) || (b && b.file)) {
    $("export-status").textContent = "Files this big are read in place and cannot travel in a link; " +
      "share the downloaded JSON report instead.";
    return;
  }
  const packed = await encodeShare({ a, b, ref: ref && !ref.file ? ref : null, options });
  $("download-bundle").hidden = !packed.bundle;
  if (!packed.ok) {
    bundleBytes = packed.bundle;
    $("export-status").textContent = `${packed.reason} Download them as one ${BUNDLE_EXTENSION} file ` +
      `(${Math.ceil(packed.bundle.length / 1024).toLocaleString("en-US")} kB, not quantised) instead: opened ` +
      `in this page (Open file… or a drop), it shows this comparison again. ${whatItCarries("file")}`;
    $("download-bundle").focus();
    return;
  }
  const note = ref && ref.file
    ? "The reference was left out: a file this big is read in place and cannot travel in a link."
    : packed.note;
  const url = `${location.href.split("#")[0]}${packed.fragment}`;
  history.replaceState(null, "", packed.fragment);
  const field = $("share-link");
  field.value = url;
  field.hidden = false;
  await copyText(url, "Link copied.");
  // Said whether or not the clipboard took the link.
  $("export-status").textContent += ` The link is ${url.length.toLocaleString("en-US")} characters long ` +
    `(${Math.ceil(packed.size / 1024).toLocaleString("en-US")} kB of inputs); nothing is uploaded.` +
    `${note ? ` ${note}` : ""} ${whatItCarries("link")}`;
}

/** Says which inputs an export carries: always those of the report shown, which are not the
 * ones on screen when the report is out of date. */
function whatItCarries(what) {
  return staleReasons().length
    ? `The ${what} holds the report shown and its inputs and tolerance, not what was edited since: ` +
      "press Compare first to share that."
    : `The ${what} holds the inputs and tolerance of this report.`;
}

let bundleBytes = null; // the last comparison too big for a link, ready to download

function downloadBundle() {
  download(`comparison${BUNDLE_EXTENSION}`, new Blob([bundleBytes], { type: "application/octet-stream" }));
}

/** A `.perpendis` file opened or dropped: its inputs and options take the boxes, compared at once. */
async function openBundle(file) {
  let shared;
  try {
    shared = await decodeBundle(new Uint8Array(await file.arrayBuffer()));
  } catch (err) {
    showError({ message: err.message, where: file.name, side: null });
    return;
  }
  showShared(shared);
}

async function openShared() {
  let shared;
  try {
    shared = await decodeShare(location.hash);
  } catch (err) {
    showError({ message: err.message, where: "share link", side: null });
    return;
  }
  if (shared) showShared(shared);
}

/** Inputs and options from a link or a bundle put on screen and compared. */
function showShared(shared) {
  for (const side of INPUTS) {
    const input = shared[side] ?? { text: "" }; // a link without a reference leaves that box empty
    $(`paste-${side}`).value = input.text ?? "";
    state.files[side] = input.bytes ? { name: input.name, bytes: input.bytes } : null;
    renderChip(side);
  }
  prefetchFor(state.files);
  if (shared.ref) $("ref-box").open = true;
  const { task, ...tolerance } = shared.options; // a link made with the Prediction check on keeps it on
  state.tolerance = tolerance;
  state.task = Boolean(task);
  $("task-toggle").checked = state.task;
  compare();
}

/** Files handed over by `python -m perpendis A B --open` (see open.js), compared at once. */
async function openHandedOver() {
  let opened;
  try {
    opened = await openedInputs(location.href);
  } catch (err) {
    showError({ message: err.message, where: null, side: null });
    return;
  }
  if (!opened) return;
  for (const [side, file] of Object.entries(opened.files)) await setFiles(side, [file]);
  if (opened.files.ref) $("ref-box").open = true;
  state.tolerance = opened.options;
  compare();
}

// ---------------------------------------------------------------- comfort

function swap() {
  const [a, b] = [$("paste-a"), $("paste-b")];
  [a.value, b.value] = [b.value, a.value];
  [state.files.a, state.files.b] = [state.files.b, state.files.a];
  [state.voidFormat.a, state.voidFormat.b] = [state.voidFormat.b, state.voidFormat.a];
  SIDES.forEach(renderChip);
  refreshStale();
}

function clearAll() {
  state.job += 1;
  setBusy(false);
  for (const side of INPUTS) {
    $(`paste-${side}`).value = "";
    removeFile(side);
  }
  $("input-notes").hidden = true;
  state.tolerance = {};
  state.result = null;
  $("preset").value = "";
  $("atol").value = "";
  $("rtol").value = "";
  clearError();
  $("report").hidden = true;
  bisectView.clear();
  state.judged = null;
  state.badField = false;
  refreshStale();
  $("example-about").hidden = true;
  history.replaceState(null, "", location.pathname + location.search);
}

async function loadExample(name) {
  clearError();
  const response = await fetch(`app/examples/${name}.json`);
  if (!response.ok) {
    showError({ message: `The example "${name}" is missing from this build.`, where: null, side: null });
    return;
  }
  const example = await response.json();
  for (const side of SIDES) {
    $(`paste-${side}`).value = example[side];
    removeFile(side);
  }
  state.example = currentInputs();
  $("example-about").textContent = example.about;
  $("example-about").hidden = false;
  compare();
}

async function loadPresets() {
  const response = await fetch("app/examples/presets.json");
  if (!response.ok) return;
  const presets = await response.json();
  const select = $("preset");
  const custom = select.querySelector('option[value="custom"]');
  for (const [name, p] of Object.entries(presets)) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = p.label; // made in Python: the numbers and the peer the preset mimics
    option.title = `${p.description}. ${p.formula}`;
    custom.before(option);
  }
}

const bisectView = createBisectView({
  ask,
  setBusy,
  showError,
  clearError,
  newJob: () => ++state.job,
  isCurrent: (job) => job === state.job,
  compareAgain: () => compare(), // the files chosen now, not those of the table shown
  openPair(result) {
    state.compared = null; // one pair of two captures: no pair of inputs to put in a link
    showReport(result, { fresh: true });
  },
});

function init() {
  core.onStatus(showStatus);
  document.addEventListener("copy", copyFullValues);
  INPUTS.forEach(wireSide);
  // A file dropped beside the drop targets must not navigate away from the page.
  window.addEventListener("dragover", (event) => event.preventDefault());
  window.addEventListener("drop", (event) => event.preventDefault());
  $("compare").addEventListener("click", compare);
  $("cancel").addEventListener("click", () => {
    state.job += 1;
    setBusy(false);
    core.cancel();
  });
  $("swap").addEventListener("click", swap);
  $("clear").addEventListener("click", clearAll);
  $("example-rounding").addEventListener("click", () => loadExample("rounding"));
  $("example-bug").addEventListener("click", () => loadExample("bug"));
  $("first-diff").addEventListener("click", () => {
    const first = state.result?.report.first_diff;
    if (first && state.result.streamed) showElement(first, null);
    else if (first) selectElement(first.flat);
  });
  $("prev-diff").addEventListener("click", () => step(-1));
  $("next-diff").addEventListener("click", () => step(1));
  $("copy-markdown").addEventListener("click", () =>
    copyText(state.result.markdown, `Markdown report copied. ${whatItCarries("report")}`));
  $("download-json").addEventListener("click", () => {
    downloadJson();
    $("export-status").textContent = `JSON report downloaded. ${whatItCarries("report")}`;
  });
  $("share").addEventListener("click", share);
  $("download-bundle").addEventListener("click", downloadBundle);
  wireTolerance();
  restoreOnboarding();
  loadPresets();
  openShared();
  openHandedOver();
}

init();
