// The bisect table: one row per paired tensor, in A's order until the user reorders the
// rows (by dragging, or with the keyboard). The first failing row is the place to look,
// so it is marked, and the rows before it are marked as passing: together they say
// "everything up to here agrees, the fault is in this layer".
import { el, fill } from "./dom.js";
import { bisectRow, line, pendingRow, stacked, widestRows, wireRows } from "./bisect_rows.js";
import { inSlices } from "./slices.js";

// A table of more rows than this is built in slices: the rows in view first (the first ones,
// and those around the first failing row), the others one slice per frame, each in the
// place held for it. 60 rows built at once were one task of ~60 ms of CPU (bench/longtasks.py).
const AT_ONCE = 24;
const HEAD = 14;
const AROUND = 2;
const SLICE = 12;

/** The header row: shape and dtype, |A − B| and relative, cosine and SQNR share a column each. */
function header(described, isolated) {
  const th = (...labels) => labels.length === 1 ? el("th", { scope: "col" }, labels[0])
    : stacked("th", { scope: "col" }, line(labels[0]), line(labels[1]));
  return el("thead", {}, el("tr", {}, th("order"), th("#"), th("A"), th("B"),
    ...(described ? [th("op"), th("torch module")] : []), th("shape", "dtype"), th("max ULP"),
    th("max |A − B|", "max relative"), th("cosine", "SQNR dB"), th("failing"), th("verdict"),
    ...(isolated ? [th("alone")] : []), th("main finding")));
}

/**
 * bisect: the `bisect` dict of the core, its pairs in the order shown. onSelect(index)
 * opens a pair's full report; selected is the index of the open pair or null;
 * onMove(from, to, control) moves a row (control: the one that moved it, to focus on its new
 * row, or null for a drag); focus: {index, control} to focus after a move; again: drawn over
 * the same table (its rows in view are built at once).
 */
export function renderBisectTable(node, bisect, { selected = null, onSelect, onMove, focus = null, again = false }) {
  const first = bisect.first_failing ? bisect.first_failing.index : null;
  const culprit = bisect.culprit ? bisect.culprit.index : null;
  const count = bisect.pairs.length;
  const described = bisect.pairs.some((p) => p.op_type || p.module);
  const head = header(described, bisect.isolated);
  const unordered = bisect.order === "unknown" && bisect.failing && bisect.failing.length > 0;
  const table = { first, culprit, described, selected, unordered };
  const now = rowsAtOnce(count, [first, selected, focus && focus.index, ...(again ? rowsInView(node) : [])],
    count > AT_ONCE ? widestRows(bisect.pairs) : []);
  const columns = head.querySelectorAll("th").length;
  const rows = bisect.pairs.map((_, index) => (now.has(index) ? bisectRow(bisect, index, table) : pendingRow(index, columns)));
  const body = el("tbody", {}, rows);
  wireRows(body, count, { onSelect, onMove });
  const summary = !count ? "No tensor of A pairs with one of B: pair them below, or drop the .onnx model for its names."
    : unordered
    ? `${bisect.failing.length} failing: ${bisect.failing.slice(0, 8).join(", ")}` +
      `${bisect.failing.length > 8 ? ", …" : ""}. No first failing layer: ${bisect.order_note}.`
    : first === null
    ? `No layer fails: all ${bisect.pairs.length} paired tensors agree up to rounding.`
    : `First failing: ${bisect.first_failing.a_name}` +
      (bisect.first_failing.b_name !== bisect.first_failing.a_name ? ` (B: ${bisect.first_failing.b_name})` : "") +
      ` — row ${first + 1} of ${bisect.pairs.length}; the ${first} rows before it agree up to rounding.` +
      (bisect.first_sure_failing ? ` Unsure: that pair rests on order and shape; the first surely paired failing ` +
        `layer is ${bisect.first_sure_failing.a_name}.` : "");
  const chip = count ? pairingChip(bisect.pairing) : null;
  const nonfinite = bisect.nan_origin
    ? `First op making NaN or Inf from finite inputs: ${bisect.nan_origin.value} (${bisect.nan_origin.op_type ?? "op"}` +
      `${bisect.nan_origin.module ? `, in ${bisect.nan_origin.module}` : ""}).`
    : bisect.first_nonfinite ? `First layer holding NaN or Inf: ${bisect.first_nonfinite.a_name}.` : null;
  const blame = culprit === null ? (bisect.isolated ? "Run alone, no layer's own error fails." : null)
    : `Run alone in ONNX Runtime on A's inputs, ${bisect.culprit.a_name} is the first layer whose own error fails: ` +
      "the culprit; the failing layers after it inherit its error." +
      (bisect.culprit.finding && !bisect.sure_culprit ? ` Run alone: ${bisect.culprit.finding.message}` : "") +
      (bisect.sure_culprit ? ` That culprit rests on order and shape; the first surely paired layer whose ` +
        `own error fails is ${bisect.sure_culprit.a_name}` +
        (bisect.sure_culprit.finding ? `; run alone: ${bisect.sure_culprit.finding.message}` : ".") : "");
  fill(node,
    el("p", { class: `bisect-summary ${first === null && !unordered ? "pass" : "fail"}`, "data-testid": "bisect-summary" },
      summary),
    bisect.order === "model" && bisect.order_note
      ? el("p", { class: "hint", "data-testid": "bisect-order" }, `Order: ${bisect.order_note}.`) : null,
    blame ? el("p", { class: "bisect-summary", "data-testid": "bisect-culprit" }, blame) : null,
    nonfinite ? el("p", { class: "bisect-summary fail", "data-testid": "bisect-nonfinite" }, nonfinite) : null,
    chip,
    el("p", { class: "hint" }, "Drag a row by ⠿, or use ▲ ▼ (Alt+ArrowUp/Down), to put the layers in execution order."),
    // A region that may scroll (on a phone): focusable and named, so a keyboard can scroll it.
    el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Paired tensors table" },
      el("table", { class: "bisect-table" }, head, body)));
  if (focus && rows[focus.index]) {
    const control = rows[focus.index].querySelector(`[data-move=${focus.control}]`);
    (control && !control.disabled ? control : rows[focus.index].querySelector("button.link")).focus();
  }
  buildLater(node, body, bisect, table, rows.filter((row) => row.classList.contains("bisect-pending")));
}

/** The rows built at once: all of a small table; of a bigger one, those the view shows first —
 * the first ones, those around the first failing row —, those a move or a selection needs, and
 * the widest of each column (`widest`, which fix the columns' widths). */
function rowsAtOnce(count, wanted, widest) {
  if (count <= AT_ONCE) return new Set(Array.from({ length: count }, (_, i) => i));
  const now = new Set([...Array.from({ length: Math.min(HEAD, count) }, (_, i) => i), ...widest]);
  for (const index of wanted) {
    if (index === null || index === undefined) continue;
    for (let i = Math.max(0, index - AROUND); i <= Math.min(count - 1, index + AROUND); i++) now.add(i);
  }
  return now;
}

/** The indices of the rows of the table in `node` that are in the window now. Read before
 * the table is drawn again over itself (a move, a selection: its layout is clean then), so those
 * rows are built at once and what the user looks at never blinks. */
function rowsInView(node) {
  const seen = [];
  for (const row of node.querySelectorAll("tbody > tr")) {
    const box = row.getBoundingClientRect();
    if (box.height > 0 && box.bottom >= 0 && box.top <= window.innerHeight) seen.push(Number(row.dataset.index));
  }
  return seen;
}

/**
 * The pending rows of `body` built one slice per frame, each put in the place held for it,
 * until the table is rendered again. `node.dataset.rows` says "complete" once every row is
 * built ("building" until then), for what waits on the whole table.
 */
function buildLater(node, body, bisect, table, pending) {
  const token = String((Number(node.dataset.render) || 0) + 1);
  node.dataset.render = token;
  node.dataset.rows = pending.length ? "building" : "complete";
  if (!pending.length) return;
  inSlices(pending, SLICE, (part) => {
    for (const placeholder of part) placeholder.replaceWith(bisectRow(bisect, Number(placeholder.dataset.index), table));
  }, {
    current: () => node.dataset.render === token && body.isConnected,
    done: () => {
      node.dataset.rows = "complete";
    },
  });
}

/** The chip saying how the pairs were made: a count per rule, the unsure ones, the copies left out. */
function pairingChip(pairing) {
  if (!pairing) return null;
  const rules = [["metadata", "by the exporter's scopes"], ["name", "by name"], ["order and shape", "by values"],
    ["mapping", "by your mapping"]];
  const parts = rules.filter(([key]) => pairing[key]).map(([key, label]) => `${pairing[key]} ${label}`);
  if (pairing.unsure) parts.push(`${pairing.unsure} unsure`);
  if (pairing.likely_mispaired) parts.push(`${pairing.likely_mispaired} likely mispaired, set aside`);
  if (pairing.copies) parts.push(`${pairing.copies} copies (eval Dropout, Identity) not compared`);
  return el("p", { class: "hint", "data-testid": "bisect-pairing" }, `Pairs: ${parts.join(", ")}.`);
}

/**
 * Tensors only one side holds. Each one of A can be paired by hand with one of B that is
 * left over: onPair(aName, bName) adds the pair to the mapping and runs again.
 */
export function renderUnpaired(node, bisect, onPair) {
  const { only_a: onlyA, only_b: onlyB } = bisect;
  if (!onlyA.length && !onlyB.length) {
    fill(node, el("p", { class: "empty", "data-testid": "unpaired-none" }, "Every tensor has a partner on the other side."));
    return;
  }
  const itemA = (name) => {
    const pick = el("select", { "aria-label": `Pair ${name} with a tensor of B` },
      el("option", { value: "" }, "pair with…"), onlyB.map((b) => el("option", { value: b }, b)));
    pick.addEventListener("change", () => pick.value && onPair(name, pick.value));
    return el("li", { "data-testid": "only-a-item" }, el("span", { class: "mono" }, name), onlyB.length ? pick : null);
  };
  fill(node,
    el("div", { class: "unpaired" },
      el("section", {}, el("h3", {}, `Only in A (${onlyA.length})`),
        onlyA.length ? el("ul", { "data-testid": "only-a", tabindex: 0, "aria-label": "Tensors only in A" }, onlyA.map(itemA)) : el("p", { class: "empty" }, "none")),
      el("section", {}, el("h3", {}, `Only in B (${onlyB.length})`),
        onlyB.length
          ? el("ul", { "data-testid": "only-b", tabindex: 0, "aria-label": "Tensors only in B" }, onlyB.map((b) => el("li", { class: "mono", "data-testid": "only-b-item" }, b)))
          : el("p", { class: "empty" }, "none"))));
}
