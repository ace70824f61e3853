// The checkpoints view: two folders picked (or dropped), every file handed to the worker
// unread, and the core's per-tensor report shown as a filterable table. The worker reads
// each tensor chunk by chunk with Blob.slice (py/perpendis/checkpoints/page.py), so the
// heap never holds a shard; this module only gathers Files, shows progress and renders.
import { CancelledError, core } from "./client.js";
import { renderCheckpointReport } from "./render/checkpoints_table.js";
import { dropTarget, el, fill } from "./render/dom.js";

const $ = (id) => document.getElementById(id);

/** The files of a folder picked with <input webkitdirectory>, by their path inside it. */
function pickedFiles(fileList) {
  return [...fileList].map((file) => {
    const path = file.webkitRelativePath || file.name;
    return { name: path.split("/").slice(1).join("/") || file.name, file };
  });
}

function readEntries(reader) {
  return new Promise((resolve, reject) => reader.readEntries(resolve, reject));
}

/** Every file under a dropped folder (a directory entry), by its path inside it. */
async function entryFiles(folder, prefix = "") {
  const out = [];
  const reader = folder.createReader();
  for (let batch = await readEntries(reader); batch.length; batch = await readEntries(reader)) {
    for (const child of batch) {
      if (child.isFile) out.push({ name: prefix + child.name, file: await new Promise((ok, fail) => child.file(ok, fail)) });
      else out.push(...(await entryFiles(child, `${prefix}${child.name}/`)));
    }
  }
  return out;
}

/** The files of a drop: a folder's files by path inside it, or loose files (a list of shards). */
async function droppedFiles(transfer) {
  const entries = [...transfer.items].map((item) => item.webkitGetAsEntry && item.webkitGetAsEntry()).filter(Boolean);
  if (entries.length === 1 && entries[0].isDirectory) return entryFiles(entries[0], "");
  return [...transfer.files].map((file) => ({ name: file.name, file }));
}

const MB = 1e6;

function bytesText(n) {
  return n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : `${(n / MB).toFixed(1)} MB`;
}

function createView(root) {
  const sides = { a: [], b: [] };
  const chips = {};
  const pick = (side) => {
    const input = el("input", {
      type: "file", webkitdirectory: true, multiple: true, "data-testid": `checkpoint-${side}`,
      "aria-label": `Choose the checkpoint folder of ${side.toUpperCase()}`,
    });
    chips[side] = el("span", { class: "hint", "data-testid": `checkpoint-chip-${side}` }, "no folder");
    input.addEventListener("change", () => choose(side, pickedFiles(input.files)));
    const box = el("div", { class: "side checkpoint-side" },
      el("label", { class: "file-pick" }, `${side.toUpperCase()}: choose folder… `, input), " ", chips[side],
      el("p", { class: "hint" }, "or drop a folder here"));
    dropTarget(box, async (transfer) => choose(side, await droppedFiles(transfer)));
    return box;
  };
  const rename = el("textarea", {
    rows: 2, spellcheck: "false", "data-testid": "checkpoint-rename",
    placeholder: "^model\\.layers\\.(\\d+)\\.=layers.\\1.", "aria-label": "Rename rules, one PATTERN=REPLACEMENT per line",
  });
  const go = el("button", { type: "button", class: "primary", "data-testid": "checkpoint-compare" }, "Compare checkpoints");
  const cancel = el("button", { type: "button", "data-testid": "checkpoint-cancel", hidden: true }, "Cancel");
  const bar = el("progress", { max: 1, value: 0, hidden: true, "data-testid": "checkpoint-bar" });
  const status = el("span", { class: "hint", "data-testid": "checkpoint-progress", role: "status" });
  const error = el("p", { role: "alert", "data-testid": "checkpoint-error", hidden: true });
  const out = el("div", { "data-testid": "checkpoint-report" });
  fill(root,
    el("summary", {}, "Whole checkpoints ", el("span", { class: "hint" }, "— two folders of safetensors shards, torch.save shards or .npz/.npy files, compared tensor by tensor in this tab")),
    el("div", { class: "inputs" }, pick("a"), pick("b")),
    el("label", {}, "Rename rules (regex PATTERN=REPLACEMENT, one a line, applied to both sides) ", rename),
    el("div", { class: "controls" }, go, " ", cancel, " ", bar, " ", status),
    error, out);

  function choose(side, files) {
    sides[side] = files;
    const bytes = files.reduce((sum, f) => sum + f.file.size, 0);
    chips[side].textContent = files.length ? `${files.length} files, ${bytesText(bytes)}` : "no folder";
  }

  function showError(message) {
    error.textContent = message;
    error.hidden = !message;
  }

  async function run() {
    showError("");
    for (const side of ["a", "b"]) {
      if (!sides[side].length) return showError(`Choose a folder for ${side.toUpperCase()}.`);
    }
    const total = [...sides.a, ...sides.b].reduce((sum, f) => sum + f.file.size, 0);
    const started = performance.now();
    go.disabled = true;
    cancel.hidden = false;
    bar.hidden = false;
    bar.value = 0;
    status.textContent = "reading shard headers…";
    const onProgress = (stage, fraction) => {
      if (stage !== "checkpoints" || fraction === null) return;
      bar.value = fraction;
      const seconds = (performance.now() - started) / 1000;
      const eta = fraction > 0 ? (seconds / fraction) * (1 - fraction) : null;
      status.textContent = `${bytesText(fraction * total)} of ≈${bytesText(total)}` +
        (eta === null ? "" : `, ${(fraction * total / MB / seconds).toFixed(0)} MB/s, ETA ${eta.toFixed(0)} s`);
    };
    const rules = rename.value.split("\n").map((line) => line.trim()).filter(Boolean);
    const inputs = { a: sides.a, b: sides.b };
    try {
      const result = await core.request("checkpoints", { inputs, options: { rename: rules } }, [], onProgress);
      if (!result.ok) return showError(result.error.where ? `${result.error.message} (${result.error.where})` : result.error.message);
      const seconds = (performance.now() - started) / 1000;
      const compared = result.checkpoints.summary.bytes_compared;
      const shared = result.shared ? `, ${result.shared.by_helpers} of ${result.shared.units} parts on a helper worker` : "";
      status.textContent = `${bytesText(compared)} compared in ${seconds.toFixed(1)} s (${(compared / MB / seconds).toFixed(0)} MB/s${shared})`;
      root.dataset.mbPerS = String(compared / MB / seconds);
      renderCheckpointReport(out, result.checkpoints);
    } catch (err) {
      if (err instanceof CancelledError) status.textContent = "cancelled";
      else showError(String((err && err.message) || err));
    } finally {
      go.disabled = false;
      cancel.hidden = true;
      bar.hidden = true;
    }
  }

  go.addEventListener("click", run);
  cancel.addEventListener("click", () => core.cancel());
}

const home = $("checkpoints");
if (home) createView(home);
