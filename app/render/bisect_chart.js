// Error against depth: each paired layer's max relative error (line) and fraction of
// elements failing the tolerance (bars), on one log axis. Rounding grows smoothly with
// depth; a bug is a step, and the first failing layer is marked where the step is.
import { fill, svg } from "./dom.js";
import { pct, sig } from "./numbers.js";

const W = 1000;
const H = 260;
const PAD = { left: 52, right: 12, top: 14, bottom: 40 };

/** A report number as a plottable one: "inf"/"nan" strings become Infinity/NaN. */
function value(v) {
  if (typeof v === "number") return v;
  if (v === "inf") return Infinity;
  if (v === "-inf") return -Infinity;
  return NaN;
}

/** bisect: the core's `bisect` dict; onSelect(index) opens a layer; selected is the open one. */
export function renderDepthChart(node, bisect, { selected = null, onSelect }) {
  const pairs = bisect.pairs;
  const rel = pairs.map((p) => value(p.max_rel_diff));
  const fail = pairs.map((p) => (p.fraction_fail === null ? NaN : p.fraction_fail));
  const rtols = new Set(pairs.map((p) => p.report.tolerance.rtol));
  const rtol = rtols.size === 1 ? [...rtols][0] : null;
  const finite = [...rel, ...fail, ...(rtol ? [rtol] : [])].filter((v) => Number.isFinite(v) && v > 0);
  let lo = finite.length ? Math.floor(Math.log10(Math.min(...finite))) : -8;
  let hi = finite.length ? Math.ceil(Math.log10(Math.max(...finite))) : 0;
  if (hi <= lo) [lo, hi] = [lo - 1, hi + 1];
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, pairs.length);
  const x = (i) => PAD.left + (i + 0.5) * slot;
  // Zero sits on the floor; non-finite values sit on the ceiling, where they cannot be missed.
  const y = (v) => {
    if (!(v > 0)) return PAD.top + plotH;
    if (!Number.isFinite(v)) return PAD.top;
    return PAD.top + plotH - (Math.log10(v) - lo) / (hi - lo) * plotH;
  };
  const first = bisect.first_failing ? bisect.first_failing.index : null;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "depth-chart",
    "aria-label": `Max relative error and fraction failing for ${pairs.length} layers in the table's order, log scale` +
      (first === null ? "; no layer fails" : `; first failing: layer ${first + 1}, ${pairs[first].a_name}`) });
  for (let d = lo; d <= hi; d += 1) {
    chart.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(10 ** d), y2: y(10 ** d), class: "grid" }),
      svg("text", { x: PAD.left - 4, y: y(10 ** d) + 3, class: "tick y" }, `1e${d}`));
  }
  if (first !== null) {
    chart.append(svg("rect", { x: x(first) - slot / 2, y: PAD.top, width: slot, height: plotH, class: "first-band",
      "data-testid": "depth-first-band", "data-index": first }),
      svg("text", { x: x(first), y: PAD.top - 3, class: "first-label" }, "first failing"));
  }
  fail.forEach((f, i) => {
    if (!(f > 0)) return;
    chart.append(svg("rect", { x: x(i) - slot * 0.3, y: y(f), width: slot * 0.6, height: PAD.top + plotH - y(f),
      class: "fail-bar", "data-testid": "depth-fail-bar", "data-index": i },
    svg("title", {}, `${pairs[i].a_name}: ${pct(f)} failing`)));
  });
  if (rtol) {
    chart.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(rtol), y2: y(rtol), class: "rtol-line" }),
      svg("text", { x: W - PAD.right - 2, y: y(rtol) - 3, class: "rtol-label" }, `rtol ${rtol}`));
  }
  const line = rel.map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  chart.append(svg("path", { d: line, class: "rel-line" }));
  rel.forEach((v, i) => {
    const dot = svg("circle", { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: i === selected ? 6 : 4,
      class: `rel-dot ${pairs[i].verdict}${i === selected ? " selected" : ""}${Number.isFinite(v) ? "" : " nonfinite"}`,
      "data-testid": "depth-point", "data-index": i, "data-name": pairs[i].a_name, tabindex: 0 },
    svg("title", {}, `${i + 1}. ${pairs[i].a_name}: max relative ${sig(pairs[i].max_rel_diff)}, ${pairs[i].verdict}`));
    dot.addEventListener("click", () => onSelect(i));
    dot.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        onSelect(i);
      }
    });
    chart.append(dot);
  });
  const every = Math.max(1, Math.ceil(pairs.length / 25));
  pairs.forEach((_, i) => {
    if (i % every === 0 || i === first) chart.append(svg("text", { x: x(i), y: H - PAD.bottom + 14, class: "tick" }, i + 1));
  });
  chart.append(
    svg("text", { x: PAD.left + plotW / 2, y: H - 6, class: "label" },
      "layer, in the table's order — line: max relative error; bars: fraction failing the tolerance (log scale)"));
  fill(node, chart);
}
