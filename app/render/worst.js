// The worst elements by ULP, absolute and relative difference; each one opens its bits.
import { el, fill, formatIndex, scrollable } from "./dom.js";
import { number, relativeNumber } from "./numbers.js";
import { isExact } from "./verdict.js";

const ROWS = [["first_diff", "first difference"], ["ulp", "largest ULP"], ["abs", "largest |A − B|"],
  ["rel", "largest relative"]];

export function renderWorst(node, report, onPick) {
  const pick = { first_diff: report.first_diff, ...report.worst };
  // Integers and booleans: the distance is |A − B| itself, no ULP row or column.
  const exact = isExact(report.compared_as);
  const body = el("tbody", {});
  for (const [key, label] of ROWS) {
    if (exact && key === "ulp") continue;
    const e = pick[key];
    if (!e) continue;
    const button = el("button", { type: "button", class: "link", "data-flat": e.flat, "data-testid": `worst-${key}` },
      formatIndex(e.index));
    button.addEventListener("click", () => onPick(e.flat));
    // The row's label and its index share the first cell, and A and B one cell, B under A:
    // the table fits half of a 1280-px window with 17-digit float64 values kept whole, and
    // the digits where A and B part are in the same column.
    body.append(el("tr", {}, el("th", { scope: "row" }, el("span", { class: "which" }, label), button),
      el("td", { class: "mono stack" }, el("span", { "data-testid": "worst-a-value" }, e.a),
        el("span", { "data-testid": "worst-b-value" }, e.b)),
      exact ? null : el("td", { "data-testid": "worst-ulp-value" }, number(e.ulp)),
      el("td", { "data-testid": "worst-abs-value" }, number(e.abs_diff)),
      el("td", { "data-testid": "worst-rel-value" }, relativeNumber(e.rel_diff))));
  }
  if (!body.children.length) {
    fill(node, el("p", {}, "No element differs."));
    return;
  }
  fill(node, scrollable(el("table", { class: "worst", "data-testid": "worst-table" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, el("span", { class: "visually-hidden" }, "which, "), "index"),
      el("th", { scope: "col", class: "stack" }, el("span", {}, "A"), el("span", {}, "B")),
      [...(exact ? [] : ["ULP"]), "|A − B|", "relative"].map((h) => el("th", { scope: "col" }, h)))), body),
  "Worst elements table"));
}
