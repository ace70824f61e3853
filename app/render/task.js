// The prediction panel (report.task, docs/task.md): whether A predicts what B does, row by
// row along the classes axis — top-1 agreement, top-k overlap, KL — and the rows whose top
// class flipped, each a link to its element. When no check was asked but the core offers
// one (report.task_offer), a button asks for it.
import { el, facts, fill, formatIndex, scrollable } from "./dom.js";
import { number, percentage } from "./numbers.js";

const VERDICTS = {
  unchanged: ["good", "the prediction is unchanged"],
  changed_within_rounding: ["", "the prediction changes only at near-ties rounding can flip"],
  changed: ["bad", "the prediction changes beyond rounding"],
};
const SHOWN = 20; // flipped rows listed; the core lists up to 64 and counts them all

function flipRow(flip, onPick) {
  const button = el("button", { type: "button", class: "link", "data-flat": flip.flat, "data-testid": "task-flip" },
    formatIndex(flip.row));
  button.addEventListener("click", () => onPick(flip.flat));
  return el("tr", { class: flip.rounding ? "" : "bad" }, el("td", {}, button), el("td", {}, String(flip.a_top)),
    el("td", {}, String(flip.b_top)), el("td", {}, number(flip.margin)), el("td", {}, number(flip.bound)),
    el("td", {}, flip.rounding ? "rounding" : "beyond rounding"));
}

function flipsTable(t, onPick) {
  if (!t.flips.length) return null;
  const head = ["row", "A top", "B top", "B margin", "bound", "judged"].map((h) => el("th", { scope: "col" }, h));
  const table = el("table", { class: "worst", "data-testid": "task-flips" }, el("thead", {}, el("tr", {}, head)),
    el("tbody", {}, t.flips.slice(0, SHOWN).map((f) => flipRow(f, onPick))));
  const more = t.n_flips > SHOWN ? el("p", { class: "hint" }, `and ${t.n_flips - SHOWN} more flipped rows`) : null;
  return [scrollable(table, "Flipped rows table"), more];
}

export function renderTask(card, node, report, onPick, onAsk) {
  const t = report.task;
  const offer = report.task_offer;
  card.hidden = !t && !offer;
  if (!t) {
    if (!offer) {
      fill(node);
      return;
    }
    const ask = el("button", { type: "button", "data-testid": "task-offer" }, "Check whether the prediction changes");
    ask.addEventListener("click", onAsk);
    fill(node, el("p", { class: "hint" },
      `If the last axis (${offer.classes} entries) holds classes or a vocabulary over ${offer.rows} rows, `,
      "the core can tell whether the top class or the top-k change, and by how much in KL."), ask);
    return;
  }
  const [cls, words] = VERDICTS[t.verdict];
  const rows = [
    ["kind", `${t.kind} over axis ${t.axis} (${t.classes} classes)`, "task-kind"],
    ["rows judged", number(t.rows), "task-rows"],
    ["top-1 agreement", t.top1_agreement === null ? "n/a" : percentage(t.top1_agreement), "task-top1"],
    ...Object.entries(t.topk).map(([k, v]) => [`top-${k} overlap`, v === null ? "n/a" : percentage(v), `task-top${k}`]),
    ["KL(B‖A) mean, p99, max", [number(t.kl.mean), ", ", number(t.kl.p99), ", ", number(t.kl.max), " nats"], "task-kl"],
    ["flipped rows", [number(t.n_flips), ` (${t.n_flips_beyond_rounding} beyond rounding)`], "task-n-flips"],
    ["near-ties", number(t.n_near_ties), "task-near-ties"],
  ];
  fill(node, el("p", { class: `outcome ${cls}`, "data-testid": "task-verdict" }, words), facts(rows),
    ...(flipsTable(t, onPick) ?? []));
}
