// Shapes and dtypes of both sides (problems there come before any number), then the
// headline counts, then the distribution statistics.
import { el, facts, fill, formatIndex } from "./dom.js";
import { number, relativeNumber } from "./numbers.js";
import { isExact } from "./verdict.js";

function sideLabel(info) {
  const bits = [info.source];
  if (info.name) bits.push(info.name);
  if (!info.lossless) bits.push(info.digits ? `printed with ${info.digits} digits` : "lossy text");
  return bits.join(" · ");
}

export function renderSummary(node, report) {
  const shapeCls = report.shape_match ? null : "mismatch";
  const dtypeCls = report.dtype_match ? null : "mismatch";
  const table = el("table", { class: "sides" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, el("span", { class: "visually-hidden" }, "what")),
      el("th", { scope: "col" }, "A"), el("th", { scope: "col" }, "B"))),
    el("tbody", {},
      el("tr", { class: shapeCls }, el("th", { scope: "row" }, "shape"),
        el("td", { "data-testid": "shape-a" }, formatIndex(report.a.shape)),
        el("td", { "data-testid": "shape-b" }, formatIndex(report.b.shape))),
      el("tr", { class: dtypeCls }, el("th", { scope: "row" }, "dtype"),
        el("td", { "data-testid": "dtype-a" }, report.a.dtype),
        el("td", { "data-testid": "dtype-b" }, report.b.dtype)),
      el("tr", {}, el("th", { scope: "row" }, "from"),
        el("td", { "data-testid": "source-a" }, sideLabel(report.a)),
        el("td", { "data-testid": "source-b" }, sideLabel(report.b)))));
  const notes = [...report.a.notes.map((n) => `A: ${n}`), ...report.b.notes.map((n) => `B: ${n}`), ...report.notes];
  fill(node,
    table,
    facts([
      ["compared as", report.compared_as + (report.compared_shape ? ` in shape ${formatIndex(report.compared_shape)}` : "")],
      ["elements", number(report.n_elements), "n-elements"],
      ["differing bits", number(report.n_bitwise_diff), "n-diff"],
      ["first difference", report.first_diff ? formatIndex(report.first_diff.index) : "none", "first-diff-index"],
      isExact(report.compared_as) ? null : ["max ULP", number(report.max_ulp), "max-ulp"],
      ["max |A − B|", number(report.max_abs_diff), "max-abs"],
      ["max relative", relativeNumber(report.max_rel_diff), "max-rel"],
      ["NaN on one side", number(report.n_nan_mismatch), "n-nan", report.n_nan_mismatch ? "bad" : null],
      ["inf mismatches", number(report.n_inf_mismatch), "n-inf", report.n_inf_mismatch ? "bad" : null],
      ["+0 vs −0", number(report.n_signed_zero_diff), "n-signed-zero"],
    ].filter(Boolean)),
    notes.length ? el("ul", { class: "notes" }, notes.map((n) => el("li", {}, n))) : null);
}

const STAT_LABELS = [
  ["mean_abs", "mean |A − B|"], ["p50_abs", "median |A − B|"], ["p99_abs", "99th pct |A − B|"],
  ["p999_abs", "99.9th pct |A − B|"], ["mean_rel", "mean relative"], ["p50_rel", "median relative"],
  ["p99_rel", "99th pct relative"], ["rmse", "RMSE"], ["cosine", "cosine similarity"], ["snr_db", "SNR (dB)"],
];

/** The distribution statistics, rounded for reading; each keeps its full value in a tooltip. */
export function renderStats(node, report) {
  const rows = STAT_LABELS.map(([key, label]) => {
    const value = report.stats[key];
    return [label, number(value), `stat-${key}`];
  });
  fill(node, facts(rows));
}
