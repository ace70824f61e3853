// The findings list: each finding with its severity, where it was seen (the structured
// `where` of docs/contracts.md, shown by its phrase), its likely causes, most likely first,
// and, where the core sent `evidence`, a small picture of it (docs/relations.md).
import { el, fill, svg } from "./dom.js";
import { bySeverity } from "./verdict.js";

const W = 180;
const H = 56;
const PAD = 4;

function whereLine(where) {
  if (!where) return null;
  const text = where.text ?? (where.axis !== undefined ? `axis ${where.axis}` : null);
  return text ? el("span", { class: "where" }, text) : null;
}

function causesLine(causes) {
  if (!causes || causes.length === 0) return null;
  return el("span", { class: "causes" }, "Likely causes: ",
    el("ol", { class: "cause-list" }, causes.map((c) => el("li", {}, c))));
}

/** Map values onto [lo, hi] pixels, a flat series onto the middle. */
function scaler(values, lo, hi) {
  const finite = values.filter(Number.isFinite);
  const min = Math.min(...finite);
  const max = Math.max(...finite);
  const span = max - min;
  return (v) => (span > 0 ? hi - ((v - min) / span) * (hi - lo) : (lo + hi) / 2);
}

function frame(label, ...children) {
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": label,
    class: "evidence" }, svg("title", {}, label), ...children);
}

function polyline(xs, ys, attrs) {
  const points = xs.map((x, i) => `${x.toFixed(1)},${ys[i].toFixed(1)}`).join(" ");
  return svg("polyline", { points, fill: "none", stroke: "currentColor", "stroke-width": 1.2, ...attrs });
}

function xs(n) {
  return Array.from({ length: n }, (_, i) => PAD + (n > 1 ? (i / (n - 1)) * (W - 2 * PAD) : (W - 2 * PAD) / 2));
}

// Per-slice scale (solid) and offset (dashed) along the finding's axis.
function perSlice(ev) {
  const x = xs(ev.scale.length);
  const sy = scaler([...ev.scale, 1], PAD, H - PAD);
  const oy = scaler([...ev.offset, 0], PAD, H - PAD);
  return frame(`Per-slice scale (solid) and offset (dashed) of A against B along axis ${ev.axis}`,
    svg("line", { x1: PAD, x2: W - PAD, y1: sy(1), y2: sy(1), stroke: "currentColor", opacity: 0.3 }),
    polyline(x, ev.scale.map(sy), {}),
    polyline(x, ev.offset.map(oy), { "stroke-dasharray": "3 2", opacity: 0.7 }));
}

// Which slice of B each slice of A matches: the diagonal is "in place".
function match(ev) {
  const n = ev.match.length;
  const px = xs(n);
  const py = scaler([0, Math.max(n - 1, 1)], PAD, H - PAD);
  return frame(`Slice of B matched by each slice of A along axis ${ev.axis} (the faint diagonal is in place)`,
    svg("line", { x1: px[0], x2: px[n - 1], y1: py(0), y2: py(n - 1), stroke: "currentColor", opacity: 0.25 }),
    ...ev.match.map((j, i) => svg("circle", { cx: px[i].toFixed(1), cy: py(j).toFixed(1), r: 1.6,
      fill: "currentColor" })));
}

// A histogram of one side's values, with the bound marked for a clip.
function histogram(ev) {
  const n = ev.counts.length;
  const slot = (W - 2 * PAD) / n;
  const top = Math.max(...ev.counts, 1);
  const lo = ev.edges[0];
  const hi = ev.edges[ev.edges.length - 1];
  const bars = ev.counts.map((c, i) => svg("rect", { x: (PAD + i * slot + slot * 0.1).toFixed(1),
    y: (H - PAD - (c / top) * (H - 2 * PAD)).toFixed(1), width: (slot * 0.8).toFixed(1),
    height: ((c / top) * (H - 2 * PAD)).toFixed(1), fill: "currentColor", opacity: 0.6 }));
  const mark = ev.mark !== undefined && hi > lo
    ? svg("line", { x1: PAD + ((ev.mark - lo) / (hi - lo)) * (W - 2 * PAD), x2: PAD + ((ev.mark - lo) / (hi - lo)) * (W - 2 * PAD),
      y1: PAD, y2: H - PAD, stroke: "currentColor", "stroke-dasharray": "2 2" })
    : null;
  return frame(`Histogram of ${ev.of ?? `${ev.side}'s values`}${ev.mark !== undefined ? `, the bound ${ev.mark} dashed` : ""}`,
    ...bars, mark);
}

// The mean relative difference across bins of B's value.
function curve(ev) {
  const x = xs(ev.y.length);
  const y = scaler([...ev.y, 0], PAD, H - PAD);
  return frame("Mean relative difference A − B across bins of B's value (the faint line is zero)",
    svg("line", { x1: PAD, x2: W - PAD, y1: y(0), y2: y(0), stroke: "currentColor", opacity: 0.3 }),
    polyline(x, ev.y.map(y), {}));
}

const PICTURES = { per_slice: perSlice, match, histogram, curve };

/** The finding's evidence as a small picture, or null where it has none (or a bad one). */
export function evidencePicture(evidence) {
  const draw = evidence && PICTURES[evidence.picture];
  if (!draw) return null;
  try {
    return el("span", { class: "evidence-picture", "data-picture": evidence.picture }, draw(evidence));
  } catch {
    return null; // a picture is a help, never a reason for the list to fail
  }
}

export function renderFindings(list, findings) {
  if (findings.length === 0) {
    fill(list, el("li", { class: "finding info" }, "No findings."));
    return;
  }
  fill(list, bySeverity(findings).map((f) => el("li", { class: `finding ${f.severity}`, "data-kind": f.kind },
    el("span", { class: "badge" }, f.severity),
    el("span", { class: "message" }, f.message),
    whereLine(f.where),
    causesLine(f.causes),
    evidencePicture(f.evidence))));
}
