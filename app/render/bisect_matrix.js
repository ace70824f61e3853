// Runs × layers: every run checked against one reference run, layer by layer. Each cell is
// that layer's verdict and max ULP; the run whose first failure comes earliest is named,
// since the run that departs first is the one whose change introduced the fault.
import { el, fill } from "./dom.js";
import { count } from "./numbers.js";

/**
 * runs: the core's `runs` dict ({reference, layers, runs: {label: [cell|null]}, first_failing,
 * departs_first}); names: label → what the user gave for it (file names); onOpen(label) shows
 * the layer table of that run against the reference; open is the label shown now.
 */
export function renderRunsMatrix(node, runs, { names, open = null, onOpen }) {
  const labels = Object.keys(runs.runs);
  const header = el("tr", {}, el("th", { scope: "col" }, "layer"),
    el("th", { scope: "col", class: "reference" }, `${runs.reference} (reference)`),
    labels.map((label) => {
      const button = el("button", { type: "button", class: "link", "data-testid": "runs-open", "data-run": label,
        "aria-pressed": label === open ? "true" : "false", title: names[label] ?? "" }, label);
      button.addEventListener("click", () => onOpen(label));
      const first = runs.first_failing[label];
      return el("th", { scope: "col", class: label === runs.departs_first ? "departs" : null },
        button, el("span", { class: "run-first" }, first === null ? "no failure" : `fails from ${first}`));
    }));
  const body = runs.layers.map((layer, row) => el("tr", {},
    el("th", { scope: "row", class: "mono" }, layer),
    el("td", { class: "reference" }, "—"),
    labels.map((label) => {
      const cell = runs.runs[label][row];
      const first = runs.first_failing[label] === layer;
      if (!cell) {
        return el("td", { class: "cell unpaired", "data-testid": "runs-cell", "data-run": label, "data-layer": layer,
          "data-verdict": "" }, "not in run");
      }
      return el("td", { class: `cell ${cell.verdict}${first ? " first" : ""}`, "data-testid": "runs-cell",
        "data-run": label, "data-layer": layer, "data-verdict": cell.verdict, title: cell.name },
      el("span", { class: "cell-verdict" }, cell.verdict), " ",
      el("span", { class: "cell-ulp", "data-testid": "runs-cell-ulp" }, count(cell.max_ulp)));
    })));
  const departs = runs.departs_first;
  fill(node,
    el("p", { class: `bisect-summary ${departs ? "fail" : "pass"}`, "data-testid": "runs-departs" },
      departs
        ? `Run ${departs}${names[departs] ? ` (${names[departs]})` : ""} departs first, at ${runs.first_failing[departs]}.`
        : `Every run agrees with the reference ${runs.reference} up to rounding, layer by layer.`),
    el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Runs by layer table" },
      el("table", { class: "runs-matrix" }, el("thead", {}, header), el("tbody", {}, body))),
    el("p", { class: "caption" }, "Each cell: verdict and max ULP of that layer against the reference. " +
      "Pick a run to see its layers in the table below."));
}
