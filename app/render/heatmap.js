// The error over one 2-D slice of an array of two or more dimensions: the user picks
// the row and column axes and the index along every other axis; the core (op `slice`)
// returns the cells, max-pooled when the slice is larger than the page can draw, and for
// each cell the element it shows, so clicking a cell selects that element. Every slice is
// coloured on the scale of the whole pair (`slice.scale`), linear from 0 or logarithmic from
// the smallest positive value, and a legend shows that scale's bounds.
import { el, fill } from "./dom.js";
import { cellAt, LOWEST, paintCells, summarise } from "./heatmap_canvas.js";
import { count, full, number } from "./numbers.js";

const MAX_W = 640;
const MAX_H = 360;
const METRICS = [["abs", "|A − B|"], ["ulp", "ULP"], ["rel", "relative"], ["fail", "fails tolerance"]];

/** Controls for the slice: row axis, column axis, metric, and an index for each other axis.
 * `exact` (integers, booleans): no ULP metric, their distance is |A − B| itself. */
export function renderSliceControls(node, shape, view, onChange, exact = false) {
  const axisSelect = (key, label) => {
    const select = el("select", { "data-testid": `slice-${key}`, "aria-label": label },
      shape.map((size, axis) => el("option", { value: axis, selected: view.axes[key === "rows" ? 0 : 1] === axis },
        `axis ${axis} (${size})`)));
    select.addEventListener("change", () => {
      const axes = [...view.axes];
      axes[key === "rows" ? 0 : 1] = Number(select.value);
      if (axes[0] !== axes[1]) onChange({ ...view, axes });
      else renderSliceControls(node, shape, view, onChange);
    });
    return el("label", {}, `${label} `, select);
  };
  const metric = el("select", { "data-testid": "slice-metric", "aria-label": "Colour by" },
    METRICS.filter(([value]) => !(exact && value === "ulp")).map(([value, label]) => el("option", { value, selected: view.metric === value }, label)));
  metric.addEventListener("change", () => onChange({ ...view, metric: metric.value }));
  const log = el("input", { type: "checkbox", "data-testid": "heatmap-log", checked: Boolean(view.log) });
  log.addEventListener("change", () => onChange({ ...view, log: log.checked }));
  const others = shape.map((size, axis) => {
    if (view.axes.includes(axis)) return null;
    const input = el("input", { type: "number", min: 0, max: size - 1, value: view.index[axis],
      "data-testid": `slice-index-${axis}`, "aria-label": `Index along axis ${axis}` });
    input.addEventListener("change", () => {
      const index = [...view.index];
      index[axis] = Math.min(size - 1, Math.max(0, Math.trunc(Number(input.value)) || 0));
      onChange({ ...view, index });
    });
    return el("label", {}, `axis ${axis} index `, input);
  });
  fill(node, axisSelect("rows", "Rows"), axisSelect("cols", "Columns"), el("label", {}, "Colour by ", metric),
    el("label", {}, log, " log scale"), others);
}

const METRIC_WORDS = Object.fromEntries(METRICS);
/** The scale a slice is drawn on: [bottom, top] of the whole pair, log or linear. */
function scaleOf(slice, log) {
  const top = typeof slice.scale?.max === "number" ? slice.scale.max : 0;
  const min = typeof slice.scale?.min === "number" ? slice.scale.min : 0;
  return { log: log && min > 0 && top > min, bottom: log && min > 0 ? min : 0, top };
}

/** The colour bar under the map: the shared scale's bounds, no difference and NaN/inf beside it.
 * Plain HTML beside the canvas. */
function legend(scale, metric) {
  const steps = 24;
  const bar = el("span", { class: "heatmap-bar", "aria-hidden": "true" },
    Array.from({ length: steps }, (_, i) => {
      const step = el("span", { class: "swatch" });
      step.style.opacity = String(LOWEST + ((1 - LOWEST) * i) / (steps - 1));
      return step;
    }));
  const swatch = (cls) => el("span", { class: `swatch ${cls}`, "aria-hidden": "true" });
  return el("div", { class: "heatmap-legend", "data-testid": "heatmap-legend", "data-log": String(scale.log) },
    el("span", { "data-testid": "legend-min" }, number(scale.bottom)), " ", bar, " ",
    el("span", { "data-testid": "legend-max" }, number(scale.top)),
    el("span", { class: "hint" }, ` ${METRIC_WORDS[metric] ?? metric}, ${scale.log ? "log" : "linear"} scale shared by every slice`),
    el("span", { class: "legend-key" }, swatch("zero"), " no difference ", swatch("nonfinite"), " NaN/inf"));
}

/** Words for the slice drawn: its axes and the index along every other axis. */
function sliceWords(slice) {
  const view = slice.view;
  if (!view) return "";
  const fixed = view.index.map((i, axis) => (view.axes.includes(axis) ? null : `axis ${axis} index ${i}`)).filter(Boolean);
  return `rows along axis ${view.axes[0]}, columns along axis ${view.axes[1]}${fixed.length ? `, at ${fixed.join(", ")}` : ""}`;
}

/** The map's text alternative: what a glance at the colours tells. */
function summaryText(slice) {
  const { differ, nonfinite, at } = summarise(slice.values, slice.cols);
  const cells = slice.values.length;
  const parts = [`${count(differ)} of ${count(cells)} cells differ`];
  if (nonfinite) parts.push(`${count(nonfinite)} NaN/inf`);
  if (at) parts.push(`the largest${nonfinite ? " finite" : ""} at row ${at[0]}, col ${at[1]}`);
  return parts.join("; ");
}

/**
 * Draw the slice; `mark` is [row, col] of the selected element in the slice, or null.
 * onSelect(flat) selects the element a clicked cell shows (the worst of its block when pooled).
 */
export function renderHeatmap(node, slice, metric, mark, onSelect, { log = false } = {}) {
  const size = Math.max(2, Math.min(24, Math.floor(MAX_W / slice.cols), Math.floor(MAX_H / slice.rows)));
  const [w, h] = [slice.cols * size, slice.rows * size];
  const scale = scaleOf(slice, log);
  const pooled = slice.row_step > 1 || slice.col_step > 1;
  const summary = summaryText(slice);
  const words = sliceWords(slice);
  const chart = el("canvas", { class: "heatmap", role: "img", tabindex: 0, "data-testid": "heatmap-canvas",
    "data-rows": slice.rows, "data-cols": slice.cols, "data-size": size,
    "aria-label": `Heat map of ${METRIC_WORDS[metric] ?? metric}, ${slice.rows} by ${slice.cols} cells` +
      `${words ? ` (${words})` : ""}: ${summary}; maximum in this slice ${full(slice.max)}; ` +
      "arrow keys select the element of the next cell" });
  chart.style.width = `${w}px`;
  chart.style.height = `${h}px`;
  const plot = el("div", { class: "heatmap-plot" }, chart);
  plot.style.width = `${w}px`;
  plot.style.height = `${h}px`;
  const hovered = el("span", { class: "hint", "data-testid": "heatmap-hover", "aria-hidden": "true" });
  const describe = ([r, c]) => {
    hovered.textContent = ` — ${pooled ? `rows ${r * slice.row_step}…, cols ${c * slice.col_step}…` : `row ${r}, col ${c}`}: ` +
      `${full(slice.values[r * slice.cols + c])}`;
  };
  chart.addEventListener("click", (event) => {
    const cell = cellAt(chart, event, slice);
    if (cell) onSelect(slice.flat[cell[0] * slice.cols + cell[1]]);
  });
  chart.addEventListener("pointermove", (event) => {
    const cell = cellAt(chart, event, slice);
    if (cell) describe(cell);
  });
  // From the keyboard, arrows step the selection cell by cell, starting from the marked one.
  chart.addEventListener("keydown", (event) => {
    const [dr, dc] = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[event.key] ?? [];
    if (dr === undefined) return;
    event.preventDefault();
    const now = plot.querySelector(".mark");
    const [r, c] = now ? [Number(now.dataset.row) + dr, Number(now.dataset.col) + dc] : [0, 0];
    if (r >= 0 && r < slice.rows && c >= 0 && c < slice.cols) {
      describe([r, c]);
      onSelect(slice.flat[r * slice.cols + c]);
    }
  });
  const pooling = pooled ? `each cell is the maximum over ${slice.row_step} × ${slice.col_step} elements; ` : "";
  const hadFocus = node.contains(document.activeElement);
  // The caption names no colour: the strongest colour is dark on a light page and bright on a dark one.
  fill(node, el("div", { class: "heatmap-wrap", tabindex: 0, role: "region", "aria-label": "Heat map" }, plot), legend(scale, metric),
    el("p", { class: "caption", "data-testid": "heatmap-caption" },
      `${pooling}`, el("span", { "data-testid": "heatmap-summary" }, summary), "; the largest in this slice is ",
      number(slice.max), "; click a cell to show its element", hovered));
  paintCells(chart, slice, size, scale);
  painted = { chart, slice, size, scale };
  moveMark(plot, mark);
  if (hadFocus) chart.focus(); // redrawn with the new mark: keep the keyboard where it was
}

let painted = null; // the map on screen, repainted when the page's colour scheme changes

matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
  if (painted?.chart.isConnected) paintCells(painted.chart, painted.slice, painted.size, painted.scale);
});

/** Move the mark of the selected element to `mark` ([row, col] or null) on the map drawn in
 * `node`: selecting another element of the same slice repaints nothing. */
export function moveMark(node, mark) {
  const plot = node.classList.contains("heatmap-plot") ? node : node.querySelector(".heatmap-plot");
  if (!plot) return;
  plot.querySelector(".mark")?.remove();
  if (!mark) return;
  const size = Number(plot.querySelector("canvas").dataset.size);
  const box = el("div", { class: "mark", "data-testid": "heatmap-mark", "data-row": mark[0], "data-col": mark[1] });
  Object.assign(box.style, { left: `${mark[1] * size}px`, top: `${mark[0] * size}px`, width: `${size}px`, height: `${size}px` });
  plot.append(box);
}
