// The verdict in plain words, with the strongest evidence for it right below.
import { el, fill, formatIndex } from "./dom.js";
import { full } from "./numbers.js";

const WORDS = {
  identical: ["identical", "every element has exactly the same bits."],
  rounding: ["rounding", "the differences look like floating-point rounding; nothing points to a bug."],
  investigate: ["investigate", "the differences do not look like rounding alone."],
};

const SEVERITY_RANK = { error: 0, warning: 1, info: 2 };

/** Findings with the most severe first, keeping the core's order within a severity. */
export function bySeverity(findings) {
  return [...findings].sort((x, y) => SEVERITY_RANK[x.severity] - SEVERITY_RANK[y.severity]);
}

function layoutProblems(report) {
  const problems = [];
  if (!report.shape_match) {
    problems.push(`Shapes differ: A is ${formatIndex(report.a.shape)}, B is ${formatIndex(report.b.shape)}.`);
  }
  if (!report.dtype_match) {
    problems.push(`Dtypes differ: A is ${report.a.dtype}, B is ${report.b.dtype}; compared as ${report.compared_as}.`);
  }
  return problems;
}

/** Fill the verdict box: the word, what it means, layout problems first, then the top finding. */
export function renderVerdict(box, word, evidence, report) {
  const [label, meaning] = WORDS[report.verdict];
  box.dataset.verdict = report.verdict;
  fill(word, el("strong", {}, label), ` — ${meaning}`);
  const lines = layoutProblems(report);
  lines.push(report.headline);
  if (report.verdict !== "identical") {
    lines.push(`${full(report.n_bitwise_diff)} of ${full(report.n_elements)} elements differ in their bits; `
      + `largest distance ${full(report.max_ulp)} ULP.`);
  } else {
    lines.push(`All ${full(report.n_elements)} elements compared bit for bit.`);
  }
  fill(evidence, lines.map((line) => el("span", { class: "line" }, line)));
}
