// The bisect table: one row per paired tensor in A's order. The first failing row is the
// place to look, so it is marked, and the rows before it are marked as passing: together
// they say "everything up to here agrees, the fault is in this layer".
import { el, fill, formatIndex, num } from "./dom.js";

const HOW = { exact: "same name", normalised: "paired by normalised name", mapping: "paired by your mapping" };

/** A report float for a narrow column: three significant digits; "inf"/"nan" strings kept. */
export function short(value) {
  if (typeof value !== "number") return num(value);
  if (value === 0 || Number.isInteger(value)) return String(value);
  return Number(value.toPrecision(3)).toString();
}

function percent(fraction) {
  if (fraction === null || fraction === undefined) return "—";
  if (fraction > 0 && fraction < 0.0001) return "<0.01%";
  return `${(fraction * 100).toFixed(2)}%`;
}

function agreement(same, a, b, testid) {
  return el("td", { class: same ? "agree" : "disagree", "data-testid": testid }, same ? "=" : `${a} ≠ ${b}`);
}

/** Where a row stands against the first failing one: before it, it, or after it. */
function standing(index, first) {
  if (first === null) return "pass";
  if (index < first) return "pass";
  return index === first ? "first-failing" : "after";
}

/**
 * bisect: the `bisect` dict of the core. onSelect(index) opens a pair's full report;
 * selected is the index of the open pair or null.
 */
export function renderBisectTable(node, bisect, { selected = null, onSelect }) {
  const first = bisect.first_failing ? bisect.first_failing.index : null;
  const head = el("thead", {}, el("tr", {},
    ["#", "A", "B", "shape", "dtype", "max ULP", "max |A − B|", "max relative", "failing", "verdict", "main finding"]
      .map((label) => el("th", { scope: "col" }, label))));
  const rows = bisect.pairs.map((pair, index) => {
    const where = standing(index, first);
    const open = el("button", { type: "button", class: "link", "aria-label": `Open the report of ${pair.a_name}` },
      String(index + 1));
    const finding = pair.finding;
    const row = el("tr", {
      class: `bisect-row ${where}${index === selected ? " selected" : ""}`,
      "data-testid": "bisect-row",
      "data-index": index,
      "data-verdict": pair.verdict,
      "data-standing": where,
      "aria-selected": index === selected ? "true" : "false",
    },
    el("td", {}, open),
    el("td", { class: "mono name", "data-testid": "bisect-a-name" }, pair.a_name,
      where === "first-failing" ? el("span", { class: "look", "data-testid": "first-failing" }, "look here") : null),
    el("td", { class: "mono name", "data-testid": "bisect-b-name", title: `${pair.b_name}: ${HOW[pair.paired_by] ?? pair.paired_by}` },
      el("span", { class: "clip" }, pair.b_name === pair.a_name ? "=" : pair.b_name),
      pair.paired_by === "mapping" ? el("span", { class: "how" }, "mapped") : null),
    agreement(pair.shape_match, formatIndex(pair.shape_a), formatIndex(pair.shape_b), "bisect-shape"),
    agreement(pair.dtype_match, pair.dtype_a, pair.dtype_b, "bisect-dtype"),
    el("td", { class: "num", "data-testid": "bisect-max-ulp" }, num(pair.max_ulp)),
    el("td", { class: "num" }, short(pair.max_abs_diff)),
    el("td", { class: "num" }, short(pair.max_rel_diff)),
    el("td", { class: "num", "data-testid": "bisect-fail" }, percent(pair.fraction_fail)),
    el("td", { class: `verdict-cell ${pair.verdict}`, "data-testid": "bisect-verdict" },
      where === "pass" && pair.verdict !== "investigate" ? "✓ " : "", pair.verdict),
    el("td", { class: `finding-cell ${finding ? finding.severity : ""}` },
      finding ? el("div", { class: "clip", title: finding.message }, finding.message) : ""));
    // The number is a button for the keyboard; its click bubbles here like any click on the row.
    row.addEventListener("click", () => onSelect(index));
    return row;
  });
  const summary = first === null
    ? `No layer fails: all ${bisect.pairs.length} paired tensors agree up to rounding.`
    : `First failing: ${bisect.first_failing.a_name}` +
      (bisect.first_failing.b_name !== bisect.first_failing.a_name ? ` (B: ${bisect.first_failing.b_name})` : "") +
      ` — row ${first + 1} of ${bisect.pairs.length}; the ${first} rows before it agree up to rounding.`;
  fill(node,
    el("p", { class: `bisect-summary ${first === null ? "pass" : "fail"}`, "data-testid": "bisect-summary" }, summary),
    el("div", { class: "table-wrap" }, el("table", { class: "bisect-table" }, head, el("tbody", {}, rows))));
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
        onlyA.length ? el("ul", { "data-testid": "only-a" }, onlyA.map(itemA)) : el("p", { class: "empty" }, "none")),
      el("section", {}, el("h3", {}, `Only in B (${onlyB.length})`),
        onlyB.length
          ? el("ul", { "data-testid": "only-b" }, onlyB.map((b) => el("li", { class: "mono", "data-testid": "only-b-item" }, b)))
          : el("p", { class: "empty" }, "none"))));
}
