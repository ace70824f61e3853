// Per-axis localisation: how the failing elements spread along each axis. A bug that
// hits one channel or one row shows as a single tall bar; rounding spreads evenly.
import { el, fill, svg } from "./dom.js";
import { count as grouped, pct } from "./numbers.js";

const W = 300;
const H = 60;

function bars(counts) {
  const top = Math.max(1, ...counts);
  const slot = W / counts.length;
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "axis-bars", role: "img", preserveAspectRatio: "none",
    "aria-label": `failures per index: ${counts.join(", ")}` },
  counts.map((count, i) => svg("rect", { x: i * slot, y: H - (count / top) * H, width: Math.max(slot - 1, 0.5),
    height: (count / top) * H, class: "bar", "data-count": count },
  svg("title", {}, `index ${i}: ${count}`))));
}

export function renderAxes(node, axes) {
  fill(node, axes.map((a) => el("div", { class: "axis-row", "data-axis": a.axis },
    el("div", { class: "axis-name" }, `axis ${a.axis} (size ${grouped(a.size)})`),
    bars(a.fail_counts),
    el("div", { class: "axis-top" }, a.top.length
      ? `most failures at ${a.top.map(([i, share]) => `${i} (${pct(share)})`).join(", ")}`
      : "no failures"))));
}
