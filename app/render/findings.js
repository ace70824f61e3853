// The findings list: each finding with its severity, where it was seen (the structured
// `where` of docs/contracts.md, shown by its phrase) and its likely causes, most likely first.
import { el, fill } from "./dom.js";
import { bySeverity } from "./verdict.js";

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

export function renderFindings(list, findings) {
  if (findings.length === 0) {
    fill(list, el("li", { class: "finding info" }, "No findings."));
    return;
  }
  fill(list, bySeverity(findings).map((f) => el("li", { class: `finding ${f.severity}`, "data-kind": f.kind },
    el("span", { class: "badge" }, f.severity),
    el("span", { class: "message" }, f.message),
    whereLine(f.where),
    causesLine(f.causes))));
}
