// The findings list: each finding with its severity and where it was seen.
import { el, fill } from "./dom.js";
import { bySeverity } from "./verdict.js";

export function renderFindings(list, findings) {
  if (findings.length === 0) {
    fill(list, el("li", { class: "finding info" }, "No findings."));
    return;
  }
  fill(list, bySeverity(findings).map((f) => el("li", { class: `finding ${f.severity}`, "data-kind": f.kind },
    el("span", { class: "badge" }, f.severity),
    el("span", { class: "message" }, f.message),
    f.where ? el("span", { class: "where" }, f.where) : null)));
}
