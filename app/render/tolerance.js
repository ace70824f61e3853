// The allclose result under the chosen tolerance, and the smallest tolerance that passes.
import { el, facts, fill, formatIndex } from "./dom.js";
import { number, percentage } from "./numbers.js";

export function renderTolerance(node, report, onPick) {
  const t = report.tolerance;
  if (!t) {
    // No values were compared (shapes that cannot be aligned): there is nothing to judge.
    fill(node, el("p", { class: "outcome", "data-testid": "tolerance-result" },
      "not judged: no values were compared"));
    return;
  }
  // Shapes that differ are refused by assert_close at any tolerance: the values passing
  // (as broadcast) must not read as a pass.
  const passes = t.passed && report.shape_match;
  const outcome = el("p", { class: `outcome ${passes ? "pass" : "fail"}`, "data-testid": "tolerance-result" },
    report.shape_match ? (t.passed ? "passes" : "fails")
      : `shapes differ, refused at any tolerance; the broadcast values ${t.passed ? "pass" : "fail"}`,
    " |A − B| ≤ atol + rtol·|B| with atol=", number(t.atol), ", rtol=", number(t.rtol),
    t.preset ? ` (preset ${t.preset})` : "");
  const rows = [
    // Complex values are judged whole (modulus), as torch and numpy judge them: count those.
    [t.n_judged == null ? "failing elements" : "failing complex values",
      [number(t.n_fail), " (", percentage(t.fraction_fail), " of all)"], "n-fail"],
    ["smallest atol at this rtol", number(report.min_tolerance.atol_at_rtol), "min-atol"],
    ["smallest rtol at this atol", number(report.min_tolerance.rtol_at_atol), "min-rtol"],
  ];
  const first = t.first_fail
    ? el("p", {}, "first failure at ",
      el("button", { type: "button", class: "link", "data-flat": t.first_fail.flat, "data-testid": "first-fail" },
        formatIndex(t.first_fail.index)))
    : null;
  if (first) first.querySelector("button").addEventListener("click", () => onPick(t.first_fail.flat));
  const notes = [t.refused, t.passed_by && `passes by ${t.passed_by}`, t.warning].filter(Boolean);
  fill(node, outcome, facts(rows), first, ...notes.map((text) => el("p", { class: "warning" }, text)));
}
