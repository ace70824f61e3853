// ULP histogram as an SVG bar chart. Bar heights are on a log scale, because the
// zero-ULP bin usually dwarfs the rest and a single 1000-ULP element must stay visible.
import { el, fill, num, svg } from "./dom.js";

const W = 520;
const H = 200;
const PAD = { left: 36, right: 8, top: 14, bottom: 52 };

export function renderHistogram(node, histogram) {
  const labels = [...histogram.edges];
  const counts = [...histogram.counts];
  if (histogram.nonfinite) {
    labels.push("NaN/inf");
    counts.push(histogram.nonfinite);
  }
  const top = Math.log10(1 + Math.max(1, ...counts));
  const slot = (W - PAD.left - PAD.right) / counts.length;
  const plotH = H - PAD.top - PAD.bottom;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "histogram",
    "aria-label": `ULP histogram: ${labels.map((l, i) => `${l}: ${counts[i]}`).join(", ")}` });
  chart.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: H - PAD.bottom, y2: H - PAD.bottom, class: "axis" }));
  counts.forEach((count, i) => {
    const h = (Math.log10(1 + count) / top) * plotH;
    const x = PAD.left + i * slot;
    const bar = svg("rect", { x: x + slot * 0.1, y: H - PAD.bottom - h, width: slot * 0.8, height: h,
      class: labels[i] === "NaN/inf" ? "bar nonfinite" : "bar", "data-edge": labels[i], "data-count": count },
    svg("title", {}, `${labels[i]} ULP: ${count} elements`));
    chart.append(bar);
    if (count) {
      chart.append(svg("text", { x: x + slot / 2, y: H - PAD.bottom - h - 3, class: "count" }, num(count)));
    }
    const tx = x + slot / 2;
    const ty = H - PAD.bottom + 10;
    chart.append(svg("text", { x: tx, y: ty, class: "tick slanted", transform: `rotate(-40 ${tx} ${ty})` }, labels[i]));
  });
  chart.append(svg("text", { x: W / 2, y: H - 4, class: "label" }, "ULP distance (bar height: log count)"));
  fill(node, chart);
}

export function renderEmptyChart(node, message) {
  fill(node, el("p", { class: "empty" }, message));
}
