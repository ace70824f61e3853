// The rows of the bisect table (bisect_table.js): one per paired tensor, built without a
// listener of their own — the table body listens once for all of them (wireRows), so a row
// costs only its cells, and a row put in later (a slice) or moved is wired already.
import { breakable, el, formatIndex } from "./dom.js";
import { count as grouped, number, pct, sig } from "./numbers.js";

const HOW = {
  metadata: "paired by the exporter's metadata (the module each ONNX node was made in)",
  name: "paired by name (equal, or equal once the exporter's scope is read as a module path)",
  "order and shape": "paired by agreeing values, or by order and shape between layers that agree",
  mapping: "paired by your mapping",
};
const REASON = { metadata: "metadata", name: "name", "order and shape": "order, shape", mapping: "mapped" };

/**
 * The own-error cell: the layer run alone in ONNX Runtime on A's inputs (the command line's
 * `bisect --isolate`). "culprit" is the first layer whose own error fails; a failing layer
 * whose own error is rounding inherits its failure from upstream.
 */
function aloneCell(pair, index, culprit) {
  const iso = pair.isolated;
  if (!iso || iso.verdict === null || iso.verdict === undefined) {
    return el("td", { class: "alone none", "data-testid": "bisect-alone", title: iso ? iso.why : "not run alone" }, "—");
  }
  const own = iso.verdict === "investigate";
  const label = index === culprit ? "culprit" : own ? "own error" : pair.verdict === "investigate" ? "inherits" : "ok";
  return el("td", { class: `alone ${own ? "own" : "ok"}`, "data-testid": "bisect-alone", "data-own": String(own),
    title: `run alone: ${iso.verdict}, max ULP ${iso.max_ulp}` }, label);
}

function agreement(same, a, b, testid) {
  return el("span", { class: same ? "agree" : "disagree", "data-testid": testid }, same ? "=" : `${a} ≠ ${b}`);
}

/**
 * Two figures of a row stacked in one cell, the second under the first, so the table fits a
 * 1280-px window without dropping either. A header is stacked the same way.
 */
export function stacked(tag, attrs, first, second) {
  return el(tag, { ...attrs, class: `${attrs.class ?? ""} stack`.trim() }, first, second);
}

export const line = (text, attrs = {}) => el("span", attrs, text);

/** Where a row stands against the first failing one: before it, it, or after it; "unordered" when
 * layers fail but the order they ran in is unknown, so no row is first and none is passed. */
function standing(index, first, unordered) {
  if (unordered) return "unordered";
  if (first === null || index < first) return "pass";
  return index === first ? "first-failing" : "after";
}

/**
 * The row's grip: a handle to drag it by, and buttons to move it up or down one place
 * for the keyboard and screen readers (Alt+ArrowUp/Down on any control of the row does
 * the same); wireRows acts on them.
 */
function grip(pair, index, count) {
  const handle = el("span", { class: "drag-handle", draggable: "true", "data-testid": "bisect-drag", "aria-hidden": "true",
    title: "Drag to reorder" }, "⠿");
  const button = (direction, to, label) => el("button", { type: "button", class: "move", "data-move": direction,
    "data-testid": `bisect-move-${direction}`, "aria-label": `Move ${pair.a_name} ${direction} (now row ${index + 1} of ${count})`,
    disabled: to < 0 || to >= count, title: `Move ${direction} (Alt+Arrow${direction === "up" ? "Up" : "Down"})` }, label);
  return el("td", { class: "grip" }, handle, button("up", index - 1, "▲"), button("down", index + 1, "▼"));
}

function names(pair, where, described) {
  return [
    el("td", { class: "mono name", "data-testid": "bisect-a-name" }, breakable(pair.a_name),
      where === "first-failing" ? el("span", { class: "look", "data-testid": "first-failing" }, "look here") : null),
    el("td", { class: "mono name", "data-testid": "bisect-b-name",
      title: `${pair.b_name}: ${HOW[pair.paired_by] ?? pair.paired_by}${pair.evidence ? ` (${pair.evidence})` : ""}` },
    breakable(pair.b_name === pair.a_name ? "=" : pair.b_name, { class: "clip" }),
    el("span", { class: "how", "data-testid": "bisect-how", "data-confidence": pair.confidence ?? "high" },
      REASON[pair.paired_by] ?? pair.paired_by),
    pair.likely_mispaired ? el("span", { class: "how", "data-testid": "bisect-mispaired" }, "likely mispaired") : null),
    described ? el("td", { class: "mono", "data-testid": "bisect-op" }, pair.op_type ?? "") : null,
    described ? el("td", { class: "mono name", "data-testid": "bisect-module" }, breakable(pair.module ?? "")) : null,
  ];
}

function figures(pair) {
  return [
    stacked("td", {}, agreement(pair.shape_match, formatIndex(pair.shape_a), formatIndex(pair.shape_b), "bisect-shape"),
      agreement(pair.dtype_match, pair.dtype_a, pair.dtype_b, "bisect-dtype")),
    el("td", { class: "num", "data-testid": "bisect-max-ulp" }, grouped(pair.max_ulp)),
    stacked("td", { class: "num" }, line(number(pair.max_abs_diff), { "data-testid": "bisect-abs" }),
      line(number(pair.max_rel_diff), { "data-testid": "bisect-rel" })),
    stacked("td", { class: "num" },
      line(pair.cosine == null ? "" : pair.cosine.toFixed(6), { "data-testid": "bisect-cosine" }),
      line(pair.sqnr_db == null ? (pair.cosine == null ? "" : "∞") : number(pair.sqnr_db), { "data-testid": "bisect-sqnr" })),
    el("td", { class: "num", "data-testid": "bisect-fail" }, pct(pair.fraction_fail)),
  ];
}

/**
 * Row `index` of `bisect` (the core's `bisect` dict, its pairs in the order shown); `table`:
 * {first, culprit, described, selected, unordered}, what every row of the table shares.
 */
export function bisectRow(bisect, index, table) {
  const pair = bisect.pairs[index];
  const where = standing(index, table.first, table.unordered);
  const open = el("button", { type: "button", class: "link", "aria-label": `${index + 1}: open the report of ${pair.a_name}` },
    String(index + 1));
  const finding = pair.finding;
  return el("tr", {
    class: `bisect-row ${where}${index === table.selected ? " selected" : ""}`,
    "data-testid": "bisect-row",
    "data-index": index,
    "data-verdict": pair.verdict,
    "data-standing": where,
    "data-name": pair.a_name,
    "aria-selected": index === table.selected ? "true" : "false",
  },
  grip(pair, index, bisect.pairs.length),
  el("td", {}, open),
  ...names(pair, where, table.described),
  ...figures(pair),
  el("td", { class: `verdict-cell ${pair.verdict}`, "data-testid": "bisect-verdict" },
    where === "pass" && pair.verdict !== "investigate" ? "✓ " : "", pair.verdict),
  bisect.isolated ? aloneCell(pair, index, table.culprit) : null,
  el("td", { class: `finding-cell ${finding ? finding.severity : ""}` },
    finding ? el("div", { class: "clip", title: finding.message }, finding.message) : ""));
}

/** Per column, the text a pair puts in it: its width there, near enough (names are monospace). */
function columnTexts(pair) {
  const finding = pair.finding ? pair.finding.message : "";
  return [pair.a_name, `${pair.b_name}${REASON[pair.paired_by] ?? pair.paired_by}${pair.likely_mispaired ? "likely mispaired" : ""}`,
    pair.op_type ?? "", pair.module ?? "", `${formatIndex(pair.shape_a)}${formatIndex(pair.shape_b)}`,
    `${pair.dtype_a}${pair.dtype_b}`, grouped(pair.max_ulp), sig(pair.max_abs_diff), sig(pair.max_rel_diff),
    pair.sqnr_db == null ? "" : sig(pair.sqnr_db), pct(pair.fraction_fail), pair.verdict, finding.slice(0, 80)];
}

const longestPart = (text) => Math.max(...text.split(/(?<=[./_:])/).map((part) => part.length));

/**
 * The rows holding the widest text of some column: the longest whole text (a column's widest
 * line) and the longest part between separators (how narrow a name column can wrap). Built
 * with the first rows, they give every column its final width at once, so the rows built
 * later never widen one (which moved the rows in view: a CLS of 0.12 at 1280 px).
 */
export function widestRows(pairs) {
  const best = new Map(); // "column:measure" -> [length, index]
  pairs.forEach((pair, index) => {
    columnTexts(pair).map(String).forEach((text, column) => {
      for (const [measure, length] of [["whole", text.length], ["part", longestPart(text)]]) {
        const key = `${column}:${measure}`;
        if (!best.has(key) || length > best.get(key)[0]) best.set(key, [length, index]);
      }
    });
  });
  return [...new Set([...best.values()].map(([, index]) => index))];
}

/** The place of a row not built yet: one empty cell across the table, a row's height high
 * (app/styles.css), so the rows built later take the place it held. */
export function pendingRow(index, columns) {
  return el("tr", { class: "bisect-pending", "data-testid": "bisect-row-pending", "data-index": index, "aria-hidden": "true" },
    el("td", { colspan: columns }));
}

/** The built row an event happened in (not a pending one), or null. */
function rowOf(event) {
  const target = event.target.nodeType === Node.ELEMENT_NODE ? event.target : event.target.parentElement;
  return target ? target.closest("tr.bisect-row") : null;
}

/**
 * The table body's listeners, for every row it holds now or later: a click opens a row's pair
 * (onSelect(index)) but on its grip, whose ▲ ▼ move it (onMove(from, to, control)); Alt+ArrowUp/
 * Down on any control of a row moves it; a row dragged by its handle and dropped on another
 * takes that row's place (HTML5 drag and drop; the index being dragged lives here, since a
 * drop target cannot read the drag's data before the drop).
 */
export function wireRows(body, count, { onSelect, onMove }) {
  const indexOf = (row) => Number(row.dataset.index);
  body.addEventListener("click", (event) => {
    const row = rowOf(event);
    if (!row) return;
    const move = event.target.closest("button[data-move]");
    if (move) onMove(indexOf(row), indexOf(row) + (move.dataset.move === "up" ? -1 : 1), move.dataset.move);
    else if (!event.target.closest("td.grip")) onSelect(indexOf(row)); // moving is not opening
  });
  body.addEventListener("keydown", (event) => {
    const row = rowOf(event);
    const step = { ArrowUp: -1, ArrowDown: 1 }[event.key];
    if (!row || !event.altKey || step === undefined) return;
    event.preventDefault();
    const to = indexOf(row) + step;
    if (to >= 0 && to < count) onMove(indexOf(row), to, event.target.dataset.move ?? "open");
  });
  let from = null;
  const clear = () => body.querySelectorAll(".drop-before, .drop-after").forEach((row) =>
    row.classList.remove("drop-before", "drop-after"));
  body.addEventListener("dragstart", (event) => {
    const row = rowOf(event);
    if (!row || !event.target.closest(".drag-handle")) return;
    from = indexOf(row);
    event.dataTransfer.effectAllowed = "move";
    // A type of its own, so a row dropped on an input box is not taken for pasted text.
    event.dataTransfer.setData("application/x-perpendis-row", row.dataset.name);
    event.dataTransfer.setDragImage(row, 0, 0);
    row.classList.add("dragged");
  });
  body.addEventListener("dragend", () => {
    from = null;
    clear();
    body.querySelectorAll(".dragged").forEach((row) => row.classList.remove("dragged"));
  });
  body.addEventListener("dragover", (event) => {
    const row = rowOf(event);
    if (from === null || !row) return; // files dragged over the page are not rows
    event.preventDefault();
    event.dataTransfer.dropEffect = "move";
    clear();
    if (indexOf(row) !== from) row.classList.add(indexOf(row) < from ? "drop-before" : "drop-after");
  });
  body.addEventListener("drop", (event) => {
    const row = rowOf(event);
    if (from === null || !row) return;
    event.preventDefault();
    event.stopPropagation();
    const moved = from;
    from = null;
    clear();
    if (moved !== indexOf(row)) onMove(moved, indexOf(row), null);
  });
}
