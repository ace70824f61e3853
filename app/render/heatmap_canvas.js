// The heat map's cells painted on one <canvas>: a 4,096-cell map drawn as SVG was one node
// per cell, and replacing it with the next report's cost up to 281 ms of style and layout
// on the main thread. Painting the same cells is a few milliseconds, whatever their count.
// Colours come from the page's own custom properties (--heat, --bg, --diff), read when the
// map is painted, so light and dark pages keep their palettes.

export const LOWEST = 0.15; // the opacity of the smallest value drawn: paler cells would vanish

/** Where `value` sits on the scale, 0 (bottom) to 1 (top). */
export function position(value, scale) {
  if (!(scale.top > 0)) return 1;
  const t = scale.log
    ? (Math.log(value) - Math.log(scale.bottom)) / (Math.log(scale.top) - Math.log(scale.bottom))
    : value / scale.top;
  return Math.min(1, Math.max(0, t));
}

/** How a cell is painted: its kind and, for a difference, its opacity on the scale. */
export function cellPaint(value, scale) {
  if (typeof value !== "number") return { kind: "nonfinite", alpha: 1 };
  if (value === 0 || !(scale.top > 0)) return { kind: "zero", alpha: 1 };
  return { kind: "heat", alpha: LOWEST + (1 - LOWEST) * position(value, scale) };
}

/** The page's colour for each kind of cell, as the style sheet sets it now. */
function palette(canvas) {
  const style = getComputedStyle(canvas);
  const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
  return { heat: read("--heat", "#c2410c"), zero: read("--bg", "#f6f7f9"), nonfinite: read("--diff", "#d7263d") };
}

/**
 * Paint `slice.values` (row-major, `slice.cols` wide) as `size`-pixel squares on `canvas`,
 * sharp on high-density screens. The canvas must be in the document (its colours are read
 * from the style sheet).
 */
export function paintCells(canvas, slice, size, scale) {
  const ratio = Math.max(1, Math.round(window.devicePixelRatio || 1));
  canvas.width = slice.cols * size * ratio;
  canvas.height = slice.rows * size * ratio;
  const context = canvas.getContext("2d");
  const colours = palette(canvas);
  const step = size * ratio;
  slice.values.forEach((value, i) => {
    const { kind, alpha } = cellPaint(value, scale);
    context.globalAlpha = alpha;
    context.fillStyle = colours[kind];
    context.fillRect((i % slice.cols) * step, Math.floor(i / slice.cols) * step, step, step);
  });
  context.globalAlpha = 1;
}

/** The [row, col] of the cell under a pointer event on the canvas, or null off the cells. */
export function cellAt(canvas, event, slice) {
  const box = canvas.getBoundingClientRect();
  if (!box.width || !box.height) return null;
  const c = Math.floor(((event.clientX - box.left) / box.width) * slice.cols);
  const r = Math.floor(((event.clientY - box.top) / box.height) * slice.rows);
  return r >= 0 && r < slice.rows && c >= 0 && c < slice.cols ? [r, c] : null;
}

/** Counts for the map's text alternative: cells that differ, cells NaN/inf on a side, and
 * the [row, col] of the largest finite value (the first of equals). */
export function summarise(values, cols) {
  let differ = 0;
  let nonfinite = 0;
  let top = -1;
  let at = null;
  values.forEach((value, i) => {
    if (typeof value !== "number") nonfinite += 1;
    else if (value !== 0) differ += 1;
    if (typeof value === "number" && value > top) {
      top = value;
      at = [Math.floor(i / cols), i % cols];
    }
  });
  return { differ, nonfinite, at: top > 0 ? at : null };
}
