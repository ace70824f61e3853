// The error over one 2-D slice of an array of two or more dimensions: the user picks
// the row and column axes and the index along every other axis; the core (op `slice`)
// returns the cells, max-pooled when the slice is larger than the page can draw, and for
// each cell the element it shows, so clicking a cell selects that element. Every slice is
// coloured on the scale of the whole pair (`slice.scale`), linear from 0 or logarithmic from
// the smallest positive value, and a legend shows that scale's bounds.
import { el, fill, svg } from "./dom.js";
import { full, number } from "./numbers.js";

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
const LOWEST = 0.15; // the opacity of the smallest value drawn: paler cells would vanish

/** The scale a slice is drawn on: [bottom, top] of the whole pair, log or linear. */
function scaleOf(slice, log) {
  const top = typeof slice.scale?.max === "number" ? slice.scale.max : 0;
  const min = typeof slice.scale?.min === "number" ? slice.scale.min : 0;
  return { log: log && min > 0 && top > min, bottom: log && min > 0 ? min : 0, top };
}

/** Where `value` sits on the scale, 0 (bottom) to 1 (top). */
function position(value, scale) {
  if (!(scale.top > 0)) return 1;
  const t = scale.log
    ? (Math.log(value) - Math.log(scale.bottom)) / (Math.log(scale.top) - Math.log(scale.bottom))
    : value / scale.top;
  return Math.min(1, Math.max(0, t));
}

function shade(value, scale) {
  if (typeof value !== "number") return "cell nonfinite";
  if (value === 0 || !(scale.top > 0)) return "cell zero";
  return "cell";
}

/** The colour bar under the map: the shared scale's bounds, no difference and NaN/inf beside it.
 * Plain HTML, so that the map stays the only SVG (and its cells the only `.cell`s) in the card. */
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

/**
 * Draw the slice; `mark` is [row, col] of the selected element in the slice, or null.
 * onSelect(flat) selects the element a clicked cell shows (the worst of its block when pooled).
 */
export function renderHeatmap(node, slice, metric, mark, onSelect, { log = false } = {}) {
  const size = Math.max(2, Math.min(24, Math.floor(MAX_W / slice.cols), Math.floor(MAX_H / slice.rows)));
  const w = slice.cols * size;
  const h = slice.rows * size;
  const scale = scaleOf(slice, log);
  const pooled = slice.row_step > 1 || slice.col_step > 1;
  const chart = svg("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img", class: "heatmap",
    "data-rows": slice.rows, "data-cols": slice.cols, "data-size": size, tabindex: 0,
    "aria-label": `Heatmap of ${metric}, ${slice.rows} by ${slice.cols} cells, maximum in this slice ${full(slice.max)}; ` +
      "arrow keys select the element of the next cell" });
  // One node per cell, and one listener for them all: with a title and a listener each, a
  // 4,096-cell map was 8,231 nodes, and replacing it took over half a second of style work.
  const cells = slice.values.map((value, i) => {
    const r = Math.floor(i / slice.cols);
    const c = i % slice.cols;
    const rect = svg("rect", { x: c * size, y: r * size, width: size, height: size, class: shade(value, scale),
      "data-row": r, "data-col": c, "data-value": value, "data-flat": slice.flat[i], "data-i": i });
    if (typeof value === "number" && scale.top > 0 && value > 0) {
      rect.style.fillOpacity = String(LOWEST + (1 - LOWEST) * position(value, scale));
    }
    return rect;
  });
  chart.append(...cells);
  const hovered = el("span", { class: "hint", "data-testid": "heatmap-hover", "aria-hidden": "true" });
  const cellAt = (event) => event.target.closest?.("rect.cell");
  chart.addEventListener("click", (event) => {
    const cell = cellAt(event);
    if (cell) onSelect(slice.flat[Number(cell.dataset.i)]);
  });
  chart.addEventListener("pointerover", (event) => {
    const cell = cellAt(event);
    if (!cell) return;
    const [r, c, value] = [Number(cell.dataset.row), Number(cell.dataset.col), slice.values[Number(cell.dataset.i)]];
    hovered.textContent = ` — ${pooled ? `rows ${r * slice.row_step}…, cols ${c * slice.col_step}…` : `row ${r}, col ${c}`}: ` +
      `${full(value)}`;
  });
  moveMark(chart, mark);
  const pooling = pooled
    ? `each cell is the maximum over ${slice.row_step} × ${slice.col_step} elements; `
    : "";
  // From the keyboard, arrows step the selection cell by cell, starting from the marked one.
  chart.addEventListener("keydown", (event) => {
    const [dr, dc] = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[event.key] ?? [];
    if (dr === undefined) return;
    event.preventDefault();
    const now = chart.querySelector(".mark");
    const [r, c] = now ? [Number(now.dataset.row) + dr, Number(now.dataset.col) + dc] : [0, 0];
    if (r >= 0 && r < slice.rows && c >= 0 && c < slice.cols) onSelect(slice.flat[r * slice.cols + c]);
  });
  const hadFocus = node.contains(document.activeElement);
  // The caption names no colour: the strongest colour is dark on a light page and bright on a dark one.
  fill(node, el("div", { class: "heatmap-wrap", tabindex: 0, role: "region", "aria-label": "Heat map" }, chart), legend(scale, metric),
    el("p", { class: "caption", "data-testid": "heatmap-caption" },
      `${pooling}the largest in this slice is `, number(slice.max),
      "; click a cell to show its element", hovered));
  if (hadFocus) chart.focus(); // redrawn with the new mark: keep the keyboard where it was
}

/** Move the mark of the selected element to `mark` ([row, col] or null) on the map drawn in
 * `node` (or the map itself): selecting another element of the same slice redraws nothing else. */
export function moveMark(node, mark) {
  const chart = node.tagName === "svg" ? node : node.querySelector("svg.heatmap");
  if (!chart) return;
  chart.querySelector(".mark")?.remove();
  if (!mark) return;
  const size = Number(chart.dataset.size);
  chart.append(svg("rect", { x: mark[1] * size, y: mark[0] * size, width: size, height: size, class: "mark",
    "data-testid": "heatmap-mark", "data-row": mark[0], "data-col": mark[1] }));
}
