// The verdict in plain words, with the strongest evidence for it right below.
import { el, fill, formatIndex } from "./dom.js";
import { count, full } from "./numbers.js";

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

/** Integers and booleans have no ULP, mantissa or rounding: they are told in their own words. */
export function isExact(dtype) {
  return /^(u?int\d*|bool)$/.test(String(dtype));
}

/** Printed text that did not pin every value's bits (a 4-decimal torch print): the digits
 * can agree where the tensors do not. */
function printedOnly(report) {
  return !report.a.lossless || !report.b.lossless;
}

/** The line under the headline: how many elements differ, and by how much, in the dtype's terms. */
function countLine(report) {
  if (!report.n_elements) return "No element was compared.";
  if (report.verdict === "identical") {
    return printedOnly(report)
      ? `All ${count(report.n_elements)} elements print the same; the text does not give their exact bits.`
      : `All ${count(report.n_elements)} elements compared bit for bit.`;
  }
  const differ = `${count(report.n_bitwise_diff)} of ${count(report.n_elements)} elements differ`;
  if (isExact(report.compared_as)) return `${differ}; largest |A − B| ${full(report.max_abs_diff)}.`;
  return `${differ} in their bits; largest distance ${count(report.max_ulp)} ULP.`;
}

/** Fill the verdict box: the word, what it means, layout problems first, then the top finding. */
export function renderVerdict(box, word, evidence, report) {
  const [label, meaning] = report.verdict === "identical" && printedOnly(report)
    ? ["identical as printed", "every element prints the same digits; only those digits are known to agree."]
    : WORDS[report.verdict];
  box.dataset.verdict = report.verdict;
  fill(word, el("strong", {}, label), ` — ${meaning}`);
  const lines = layoutProblems(report);
  lines.push(report.headline);
  lines.push(countLine(report));
  fill(evidence, lines.map((line) => el("span", { class: "line" }, line)));
}
