// The optional reference run: how far each side is from it, and whether B is as close to it
// as rounding allows. The core measures and decides; this only shows its numbers.
import { el, facts, fill, formatIndex } from "./dom.js";
import { number } from "./numbers.js";

export function renderReference(card, node, report) {
  const info = report.ref;
  card.hidden = !info;
  if (!info) return;
  const ref = report.reference;
  const about = `${formatIndex(info.shape)} ${info.dtype} · ${info.source}${info.name ? ` · ${info.name}` : ""}`;
  if (!ref) {
    fill(node, facts([["reference", about, "ref-info"]]),
      el("p", {}, "A and B could not be aligned element by element, so nothing was measured against the reference."));
    return;
  }
  const verdict = ref.equivalent
    ? "B is rounding-equivalent: its error against the reference is as small as rounding explains."
    : "B is not rounding-equivalent: it is much further from the reference than A.";
  fill(node,
    el("p", { class: ref.equivalent ? "good" : "bad", "data-testid": "ref-verdict" }, verdict),
    facts([
      ["reference", about, "ref-info"],
      ["A error (RMSE against it)", number(ref.a_rmse), "ref-a-rmse"],
      ["B error (RMSE against it)", number(ref.b_rmse), "ref-b-rmse"],
      ["A max ULP from it, rounded to A's dtype", number(ref.a_max_ulp), "ref-a-max-ulp"],
      ["B max ULP from it, rounded to B's dtype", number(ref.b_max_ulp), "ref-b-max-ulp"],
      ["B error / A error", number(ref.ratio), "ref-ratio"],
      ["B rounding-equivalent", ref.equivalent ? "yes" : "no", "ref-equivalent"],
    ]));
}
