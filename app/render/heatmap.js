// The error over one 2-D slice of an array of two or more dimensions: the user picks
// the row and column axes and the index along every other axis; the core (op `slice`)
// returns the cells, max-pooled when the slice is larger than the page can draw, and for
// each cell the element it shows, so clicking a cell selects that element.
import { el, fill, num, svg } from "./dom.js";
import { sig } from "./summary.js";

const MAX_W = 640;
const MAX_H = 360;
const METRICS = [["abs", "|A − B|"], ["ulp", "ULP"], ["rel", "relative"], ["fail", "fails tolerance"]];

/** Controls for the slice: row axis, column axis, metric, and an index for each other axis. */
export function renderSliceControls(node, shape, view, onChange) {
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
    METRICS.map(([value, label]) => el("option", { value, selected: view.metric === value }, label)));
  metric.addEventListener("change", () => onChange({ ...view, metric: metric.value }));
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
  fill(node, axisSelect("rows", "Rows"), axisSelect("cols", "Columns"), el("label", {}, "Colour by ", metric), others);
}

function shade(value, max) {
  if (typeof value !== "number") return "cell nonfinite";
  if (value === 0 || !(max > 0)) return "cell zero";
  return "cell";
}

/**
 * Draw the slice; `mark` is [row, col] of the selected element in the slice, or null.
 * onSelect(flat) selects the element a clicked cell shows (the worst of its block when pooled).
 */
export function renderHeatmap(node, slice, metric, mark, onSelect) {
  const size = Math.max(2, Math.min(24, Math.floor(MAX_W / slice.cols), Math.floor(MAX_H / slice.rows)));
  const w = slice.cols * size;
  const h = slice.rows * size;
  const max = typeof slice.max === "number" ? slice.max : 0;
  const pooled = slice.row_step > 1 || slice.col_step > 1;
  const chart = svg("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img", class: "heatmap",
    "data-rows": slice.rows, "data-cols": slice.cols, tabindex: 0,
    "aria-label": `Heatmap of ${metric}, ${slice.rows} by ${slice.cols} cells, maximum ${num(slice.max)}; ` +
      "arrow keys select the element of the next cell" });
  slice.values.forEach((value, i) => {
    const r = Math.floor(i / slice.cols);
    const c = i % slice.cols;
    const rect = svg("rect", { x: c * size, y: r * size, width: size, height: size, class: shade(value, max),
      "data-row": r, "data-col": c, "data-value": value, "data-flat": slice.flat[i] },
    svg("title", {}, `${pooled ? `rows ${r * slice.row_step}…, cols ${c * slice.col_step}…` : `row ${r}, col ${c}`}: ` +
      `${num(value)} — click to show ${pooled ? "its worst element" : "this element"}`));
    rect.addEventListener("click", () => onSelect(slice.flat[i]));
    if (typeof value === "number" && max > 0 && value > 0) {
      rect.style.fillOpacity = String(0.15 + 0.85 * Math.sqrt(value / max));
    }
    chart.append(rect);
  });
  if (mark) {
    chart.append(svg("rect", { x: mark[1] * size, y: mark[0] * size, width: size, height: size, class: "mark",
      "data-testid": "heatmap-mark", "data-row": mark[0], "data-col": mark[1] }));
  }
  const scale = pooled
    ? `each cell is the maximum over ${slice.row_step} × ${slice.col_step} elements; `
    : "";
  // From the keyboard, arrows step the selection cell by cell, starting from the marked one.
  chart.addEventListener("keydown", (event) => {
    const [dr, dc] = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[event.key] ?? [];
    if (dr === undefined) return;
    event.preventDefault();
    const [r, c] = mark ? [mark[0] + dr, mark[1] + dc] : [0, 0];
    if (r >= 0 && r < slice.rows && c >= 0 && c < slice.cols) onSelect(slice.flat[r * slice.cols + c]);
  });
  const hadFocus = node.contains(document.activeElement);
  fill(node, el("div", { class: "heatmap-wrap" }, chart),
    el("p", { class: "caption", title: `darkest = ${num(slice.max)}` },
      `${scale}darkest = ${sig(slice.max)}; click a cell to show its element`));
  if (hadFocus) chart.focus(); // redrawn with the new mark: keep the keyboard where it was
}
