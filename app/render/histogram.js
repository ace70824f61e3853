// ULP histogram as an SVG bar chart. Bar heights are on a log scale, because the
// zero-ULP bin usually dwarfs the rest and a single 1000-ULP element must stay visible.
import { el, fill, svg } from "./dom.js";
import { count as grouped } from "./numbers.js";

const W = 520;
const H = 200;
const PAD = { left: 36, right: 8, top: 14, bottom: 52 };
// Room a label needs, in chart units at the 10px font: slanted ticks stand one line apart
// along the axis (line height / sin 40°), and a count needs about 6 units a digit.
const TICK_SPACING = 20;
const DIGIT_WIDTH = 6.2;
const SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹";

/** A bin's short tick: "0", "1", "2", "3–4", "5–8", …, "≤1024", then "≤2¹¹", "≤2³¹" (the title keeps "2049-4096"). */
export function shortEdge(label) {
  const [, upper] = label.split("-");
  if (upper === undefined) return label;
  const top = Number(upper);
  if (top <= 8) return label.replace("-", "–");
  if (top <= 1024) return `≤${top}`;
  return `≤2${[...String(Math.round(Math.log2(top)))].map((d) => SUPERSCRIPT[Number(d)]).join("")}`;
}

/**
 * `exact`: integer or boolean values, whose distance is |A − B| itself: the chart, its title
 * and its axis speak of |A − B|, not of ULP.
 */
export function renderHistogram(node, histogram, exact = false) {
  const labels = [...histogram.edges];
  const counts = [...histogram.counts];
  if (histogram.nonfinite) {
    labels.push("NaN/inf");
    counts.push(histogram.nonfinite);
  }
  const top = Math.log10(1 + Math.max(1, ...counts));
  const slot = (W - PAD.left - PAD.right) / counts.length;
  const plotH = H - PAD.top - PAD.bottom;
  // Too many bins for every tick: every `every`-th is labelled (and the last, NaN/inf, always).
  const every = Math.ceil(TICK_SPACING / slot);
  let previous = null;
  let countsEnd = -Infinity; // right edge of the last count drawn: one that would touch it is left to the bar's title
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "histogram",
    "aria-label": `${exact ? "|A − B|" : "ULP"} histogram: ${labels.map((l, i) => `${l}: ${counts[i]}`).join(", ")}` });
  chart.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: H - PAD.bottom, y2: H - PAD.bottom, class: "axis" }));
  counts.forEach((count, i) => {
    const h = (Math.log10(1 + count) / top) * plotH;
    const x = PAD.left + i * slot;
    const bar = svg("rect", { x: x + slot * 0.1, y: H - PAD.bottom - h, width: slot * 0.8, height: h,
      class: labels[i] === "NaN/inf" ? "bar nonfinite" : "bar", "data-edge": labels[i], "data-count": count },
    svg("title", {}, exact ? `|A − B| ${labels[i]}: ${count} elements` : `${labels[i]} ULP: ${count} elements`));
    chart.append(bar);
    const half = (String(count).length * DIGIT_WIDTH) / 2;
    if (count && x + slot / 2 - half > countsEnd + 2) {
      chart.append(svg("text", { x: x + slot / 2, y: H - PAD.bottom - h - 3, class: "count" }, grouped(count)));
      countsEnd = x + slot / 2 + half;
    }
    const last = i === counts.length - 1;
    if (i % every === 0 || last) {
      if (last && previous && i - previous.index < every) previous.node.remove(); // it would crowd the last one
      const tx = x + slot / 2;
      const ty = H - PAD.bottom + 10;
      const tick = svg("text", { x: tx, y: ty, class: "tick slanted", "data-edge": labels[i],
        transform: `rotate(-40 ${tx} ${ty})` }, labels[i] === "NaN/inf" ? labels[i] : shortEdge(labels[i]));
      chart.append(tick);
      previous = { index: i, node: tick };
    }
  });
  chart.append(svg("text", { x: W / 2, y: H - 4, class: "label" }, `${exact ? "|A − B|" : "ULP distance"} (bar height: log count)`));
  fill(node, chart);
}

export function renderEmptyChart(node, message) {
  fill(node, el("p", { class: "empty" }, message));
}
