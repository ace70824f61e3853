// The checkpoint report: the summary, a table of tensors (worst first, as the core sorted
// them) filterable by verdict and name, the bad input and the tensors on one side only.
// Every figure is the core's; nothing is computed here but which rows to show.
import { el, fill, num } from "./dom.js";
import { number, pct } from "./numbers.js";

const VERDICT_WORDS = {
  error: "not compared",
  investigate: "investigate",
  rounding: "rounding",
  converted: "converted",
  identical: "identical",
};

function shapeText(shape) {
  return shape ? `(${shape.join(", ")})` : "";
}

function row(r) {
  const dtype = r.dtype_a === r.dtype_b ? r.dtype_a : `${r.dtype_a || "?"} → ${r.dtype_b || "?"}`;
  const shape = JSON.stringify(r.shape_a) === JSON.stringify(r.shape_b) ? shapeText(r.shape_a) : `${shapeText(r.shape_a)} ≠ ${shapeText(r.shape_b)}`;
  const figures = r.verdict === "investigate" || r.verdict === "rounding";
  return el("tr", { "data-verdict": r.verdict, "data-name": r.name },
    el("td", { class: `verdict-${r.verdict}` }, VERDICT_WORDS[r.verdict] || r.verdict),
    el("td", {}, el("code", {}, r.name)),
    el("td", {}, dtype || ""),
    el("td", {}, shape),
    el("td", {}, figures ? num(r.max_ulp) : ""),
    el("td", {}, figures ? number(r.max_abs_diff) : ""),
    el("td", {}, figures && r.fraction_fail !== null ? pct(r.fraction_fail) : ""),
    el("td", {}, r.description));
}

/** Renders `report` (CheckpointReport.to_dict()) into `node`. */
export function renderCheckpointReport(node, report) {
  const s = report.summary;
  const summary = el("p", { "data-testid": "checkpoint-summary" },
    `${s.tensors} tensors: ${s.identical} identical, ${s.rounding_equivalent} rounding-equivalent ` +
    `(${s.converted} exact conversions, ${s.rounding} within rounding), ${s.different} different, ${s.errors} not compared; ` +
    `${s.only_a} only in A, ${s.only_b} only in B; ${(s.bytes_compared / 1e9).toFixed(3)} GB compared`);
  const verdict = el("select", { "data-testid": "checkpoint-filter-verdict", "aria-label": "Show tensors with this verdict" },
    el("option", { value: "" }, "every verdict"),
    Object.entries(VERDICT_WORDS).map(([value, words]) => el("option", { value }, words)));
  const name = el("input", { type: "search", "data-testid": "checkpoint-filter-name", placeholder: "name contains…", "aria-label": "Show tensors whose name contains" });
  const body = el("tbody", {});
  const shown = el("span", { class: "hint", "data-testid": "checkpoint-shown" });
  const update = () => {
    const rows = report.tensors.filter((r) => (!verdict.value || r.verdict === verdict.value) && r.name.includes(name.value));
    fill(body, rows.map(row));
    shown.textContent = `${rows.length} of ${report.tensors.length} tensors shown`;
  };
  verdict.addEventListener("change", update);
  name.addEventListener("input", update);
  const table = el("table", { class: "bisect-table", "data-testid": "checkpoint-table" },
    el("thead", {}, el("tr", {}, ["verdict", "tensor", "dtype", "shape", "max ulp", "max abs", "fail", "why"].map((h) => el("th", {}, h)))),
    body);
  const problems = report.problems.map((p) =>
    el("li", {}, `${(p.side || "").toUpperCase()}: ${p.file}: ${p.message}`));
  const only = ["a", "b"].filter((side) => report[`only_${side}`].length).map((side) =>
    el("li", {}, `only in ${side.toUpperCase()} (${report[`only_${side}`].length}): ${report[`only_${side}`].join(", ")}`));
  // As the core's text ends: a report short of some tensors never reads as the whole comparison.
  const missed = [];
  if (s.errors) missed.push(`${s.errors} of ${s.tensors} tensors were not compared (${report.not_compared.map((n) => n.name).join(", ")})`);
  if (s.problems) missed.push(`the bad input above (${s.problems}) kept tensors from being read`);
  const incomplete = report.complete === false ? el("p", { "data-testid": "checkpoint-incomplete", class: "problems" },
    `INCOMPLETE: ${missed.join(" and ")}; this report covers only what was compared`) : null;
  fill(node,
    summary,
    incomplete,
    problems.length ? el("ul", { "data-testid": "checkpoint-problems", class: "problems" }, problems) : null,
    only.length ? el("ul", { "data-testid": "checkpoint-only" }, only) : null,
    report.notes.length ? el("ul", { class: "hint" }, report.notes.map((n) => el("li", {}, n))) : null,
    el("p", {}, verdict, " ", name, " ", shown),
    table);
  update();
}
