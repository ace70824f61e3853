// |A − B| against |B| on log-log axes. Rounding error scales with magnitude and lies
// along a diagonal band; a bug shows as points far above it or as a flat cloud.
import { fill, svg } from "./dom.js";
import { renderEmptyChart } from "./histogram.js";

const W = 520;
const H = 240;
const PAD = { left: 48, right: 10, top: 10, bottom: 38 };
// Room a decade label ("1e-38") needs, in chart units at the 10px font, along each axis.
const X_LABEL = 34;
const Y_LABEL = 13;

function decadeRange(values) {
  const logs = values.filter((v) => v > 0).map(Math.log10);
  if (!logs.length) return [-1, 1];
  const lo = Math.floor(Math.min(...logs));
  const hi = Math.ceil(Math.max(...logs));
  return hi > lo ? [lo, hi] : [lo - 1, hi + 1];
}

/** points: [[abs_ref, abs_diff], ...] from the `scatter` op. Zeros sit on the axis floor. */
export function renderScatter(node, points) {
  if (!points.length) {
    renderEmptyChart(node, "No differing elements to plot.");
    return;
  }
  const [x0, x1] = decadeRange(points.map((p) => p[0]));
  const [y0, y1] = decadeRange(points.map((p) => p[1]));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const sx = (v) => PAD.left + ((v > 0 ? Math.log10(v) : x0) - x0) / (x1 - x0) * plotW;
  const sy = (v) => PAD.top + plotH - ((v > 0 ? Math.log10(v) : y0) - y0) / (y1 - y0) * plotH;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "scatter",
    "aria-label": `${points.length} differing elements: absolute difference against reference magnitude, log-log` });
  // A grid line every decade; a label every `step` decades, so that labels never touch.
  const xStep = Math.ceil(X_LABEL / (plotW / (x1 - x0)));
  const yStep = Math.ceil(Y_LABEL / (plotH / (y1 - y0)));
  for (let d = x0; d <= x1; d += 1) {
    chart.append(svg("line", { x1: sx(10 ** d), x2: sx(10 ** d), y1: PAD.top, y2: PAD.top + plotH, class: "grid" }));
    if ((d - x0) % xStep === 0) chart.append(svg("text", { x: sx(10 ** d), y: H - PAD.bottom + 17, class: "tick" }, `1e${d}`));
  }
  for (let d = y0; d <= y1; d += 1) {
    chart.append(svg("line", { x1: PAD.left, x2: PAD.left + plotW, y1: sy(10 ** d), y2: sy(10 ** d), class: "grid" }));
    if ((d - y0) % yStep === 0) chart.append(svg("text", { x: PAD.left - 4, y: sy(10 ** d) + 3, class: "tick y" }, `1e${d}`));
  }
  const dots = svg("g", { class: "dots" });
  for (const [ref, diff] of points) {
    dots.append(svg("circle", { cx: sx(ref).toFixed(1), cy: sy(diff).toFixed(1), r: 2.2, class: "dot" }));
  }
  chart.append(dots,
    svg("text", { x: PAD.left + plotW / 2, y: H - 4, class: "label" }, "|B| (reference magnitude)"),
    svg("text", { x: 12, y: PAD.top + plotH / 2, class: "label", transform: `rotate(-90 12 ${PAD.top + plotH / 2})` },
      "|A − B|"));
  fill(node, chart);
}
