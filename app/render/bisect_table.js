// The bisect table: one row per paired tensor, in A's order until the user reorders the
// rows (by dragging, or with the keyboard). The first failing row is the place to look,
// so it is marked, and the rows before it are marked as passing: together they say
// "everything up to here agrees, the fault is in this layer".
import { breakable, el, fill, formatIndex } from "./dom.js";
import { count as grouped, number, pct } from "./numbers.js";

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
function stacked(tag, attrs, first, second) {
  return el(tag, { ...attrs, class: `${attrs.class ?? ""} stack`.trim() }, first, second);
}

const line = (text, attrs = {}) => el("span", attrs, text);

/** The header row: shape and dtype, |A − B| and relative, cosine and SQNR share a column each. */
function header(described, isolated) {
  const th = (...labels) => labels.length === 1 ? el("th", { scope: "col" }, labels[0])
    : stacked("th", { scope: "col" }, line(labels[0]), line(labels[1]));
  return el("thead", {}, el("tr", {}, th("order"), th("#"), th("A"), th("B"),
    ...(described ? [th("op"), th("torch module")] : []), th("shape", "dtype"), th("max ULP"),
    th("max |A − B|", "max relative"), th("cosine", "SQNR dB"), th("failing"), th("verdict"),
    ...(isolated ? [th("alone")] : []), th("main finding")));
}

/** Where a row stands against the first failing one: before it, it, or after it. */
function standing(index, first) {
  if (first === null) return "pass";
  if (index < first) return "pass";
  return index === first ? "first-failing" : "after";
}

/**
 * The row's grip: a handle to drag it by, and buttons to move it up or down one place
 * for the keyboard and screen readers (Alt+ArrowUp/Down on any control of the row does
 * the same). onMove(from, to, control) asks for the new order; the core judges it.
 */
function mover(pair, index, count, onMove) {
  const handle = el("span", { class: "drag-handle", draggable: "true", "data-testid": "bisect-drag", "aria-hidden": "true",
    title: "Drag to reorder" }, "⠿");
  const button = (direction, to, label) => {
    const b = el("button", { type: "button", class: "move", "data-move": direction, "data-testid": `bisect-move-${direction}`,
      "aria-label": `Move ${pair.a_name} ${direction} (now row ${index + 1} of ${count})`, disabled: to < 0 || to >= count,
      title: `Move ${direction} (Alt+Arrow${direction === "up" ? "Up" : "Down"})` }, label);
    b.addEventListener("click", () => onMove(index, to, direction));
    return b;
  };
  const cell = el("td", { class: "grip" }, handle, button("up", index - 1, "▲"), button("down", index + 1, "▼"));
  // Moving is not opening: keep these clicks from the row's click.
  cell.addEventListener("click", (event) => event.stopPropagation());
  return cell;
}

/**
 * Rows reorder by HTML5 drag and drop: a row dragged by its handle and dropped on another
 * takes that row's place. The index being dragged lives here, since a drop target cannot
 * read the drag's data before the drop.
 */
function dragAndDrop(rows, onMove) {
  let from = null;
  const clear = () => rows.forEach((row) => row.classList.remove("drop-before", "drop-after"));
  rows.forEach((row, index) => {
    row.querySelector(".drag-handle").addEventListener("dragstart", (event) => {
      from = index;
      event.dataTransfer.effectAllowed = "move";
      // A type of its own, so a row dropped on an input box is not taken for pasted text.
      event.dataTransfer.setData("application/x-perpendis-row", row.dataset.name);
      event.dataTransfer.setDragImage(row, 0, 0);
      row.classList.add("dragged");
    });
    row.addEventListener("dragend", () => {
      from = null;
      clear();
      row.classList.remove("dragged");
    });
    row.addEventListener("dragover", (event) => {
      if (from === null) return; // files dragged over the page are not rows
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
      clear();
      if (index !== from) row.classList.add(index < from ? "drop-before" : "drop-after");
    });
    row.addEventListener("drop", (event) => {
      if (from === null) return;
      event.preventDefault();
      event.stopPropagation();
      const moved = from;
      from = null;
      clear();
      if (moved !== index) onMove(moved, index, null);
    });
  });
}

/**
 * bisect: the `bisect` dict of the core, its pairs in the order shown. onSelect(index)
 * opens a pair's full report; selected is the index of the open pair or null;
 * onMove(from, to, control) moves a row (control: the one that moved it, to focus on its new
 * row, or null for a drag); focus: {index, control} to focus after a move.
 */
export function renderBisectTable(node, bisect, { selected = null, onSelect, onMove, focus = null }) {
  const first = bisect.first_failing ? bisect.first_failing.index : null;
  const culprit = bisect.culprit ? bisect.culprit.index : null;
  const count = bisect.pairs.length;
  const described = bisect.pairs.some((p) => p.op_type || p.module);
  const head = header(described, bisect.isolated);
  const rows = bisect.pairs.map((pair, index) => {
    const where = standing(index, first);
    const open = el("button", { type: "button", class: "link", "aria-label": `${index + 1}: open the report of ${pair.a_name}` },
      String(index + 1));
    const finding = pair.finding;
    const row = el("tr", {
      class: `bisect-row ${where}${index === selected ? " selected" : ""}`,
      "data-testid": "bisect-row",
      "data-index": index,
      "data-verdict": pair.verdict,
      "data-standing": where,
      "data-name": pair.a_name,
      "aria-selected": index === selected ? "true" : "false",
    },
    mover(pair, index, count, onMove),
    el("td", {}, open),
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
    stacked("td", {}, agreement(pair.shape_match, formatIndex(pair.shape_a), formatIndex(pair.shape_b), "bisect-shape"),
      agreement(pair.dtype_match, pair.dtype_a, pair.dtype_b, "bisect-dtype")),
    el("td", { class: "num", "data-testid": "bisect-max-ulp" }, grouped(pair.max_ulp)),
    stacked("td", { class: "num" }, line(number(pair.max_abs_diff), { "data-testid": "bisect-abs" }),
      line(number(pair.max_rel_diff), { "data-testid": "bisect-rel" })),
    stacked("td", { class: "num" },
      line(pair.cosine == null ? "" : pair.cosine.toFixed(6), { "data-testid": "bisect-cosine" }),
      line(pair.sqnr_db == null ? (pair.cosine == null ? "" : "∞") : number(pair.sqnr_db), { "data-testid": "bisect-sqnr" })),
    el("td", { class: "num", "data-testid": "bisect-fail" }, pct(pair.fraction_fail)),
    el("td", { class: `verdict-cell ${pair.verdict}`, "data-testid": "bisect-verdict" },
      where === "pass" && pair.verdict !== "investigate" ? "✓ " : "", pair.verdict),
    bisect.isolated ? aloneCell(pair, index, culprit) : null,
    el("td", { class: `finding-cell ${finding ? finding.severity : ""}` },
      finding ? el("div", { class: "clip", title: finding.message }, finding.message) : ""));
    // The number is a button for the keyboard; its click bubbles here like any click on the row.
    row.addEventListener("click", () => onSelect(index));
    row.addEventListener("keydown", (event) => {
      const to = { ArrowUp: index - 1, ArrowDown: index + 1 }[event.key];
      if (!event.altKey || to === undefined) return;
      event.preventDefault();
      if (to >= 0 && to < count) onMove(index, to, event.target.dataset.move ?? "open");
    });
    return row;
  });
  dragAndDrop(rows, onMove);
  const summary = !count ? "No tensor of A pairs with one of B: pair them below, or drop the .onnx model for its names."
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
      "the culprit; the failing layers after it inherit its error.";
  fill(node,
    el("p", { class: `bisect-summary ${first === null ? "pass" : "fail"}`, "data-testid": "bisect-summary" }, summary),
    blame ? el("p", { class: "bisect-summary", "data-testid": "bisect-culprit" }, blame) : null,
    nonfinite ? el("p", { class: "bisect-summary fail", "data-testid": "bisect-nonfinite" }, nonfinite) : null,
    chip,
    el("p", { class: "hint" }, "Drag a row by ⠿, or use ▲ ▼ (Alt+ArrowUp/Down), to put the layers in execution order."),
    // A region that may scroll (on a phone): focusable and named, so a keyboard can scroll it.
    el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Paired tensors table" },
      el("table", { class: "bisect-table" }, head, el("tbody", {}, rows))));
  if (focus && rows[focus.index]) {
    const control = rows[focus.index].querySelector(`[data-move=${focus.control}]`);
    (control && !control.disabled ? control : rows[focus.index].querySelector("button.link")).focus();
  }
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
