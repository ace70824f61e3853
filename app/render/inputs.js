// What the core decided about the inputs that the user may want to know or change: that one
// box held both tensors, and how a .npy of anonymous void elements was read, with a selector
// to read it again as another format the same width.
import { el, fill, formatIndex } from "./dom.js";

const NAMES = { a: "A", b: "B", ref: "The reference" };

function oneBox(result) {
  const { a, b } = result.report;
  return el("p", { "data-testid": "one-box" },
    `Box ${result.one_box.toUpperCase()} held two tensors and the other box was empty, so they are compared `
    + `with each other: the first, of shape ${formatIndex(a.shape)}, as A; the second, of shape `
    + `${formatIndex(b.shape)}, as B.`);
}

function voidChoice(side, info, choices, onChoose) {
  const id = `void-format-${side}`;
  const select = el("select", { id, "data-testid": id },
    choices.map((format) => el("option", { value: format, selected: format === info.dtype }, format)));
  select.addEventListener("change", () => onChoose(side, select.value));
  return el("p", { class: "void-choice", "data-testid": `void-note-${side}` },
    `${NAMES[side]}: the file names no element format, only a width (np.save writes ml_dtypes arrays so); `
    + `it was read as ${info.dtype}. `,
    el("label", { for: id }, "Read it as "), select);
}

/** Fill the notes above the report; `onChoose(side, format)` re-reads a side as another format. */
export function renderInputNotes(node, result, onChoose) {
  const report = result.report;
  const lines = [];
  if (report && result.one_box) lines.push(oneBox(result));
  for (const [side, choices] of Object.entries(result.void_choices ?? {})) {
    const info = report?.[side];
    if (info && choices.length > 1) lines.push(voidChoice(side, info, choices, onChoose));
  }
  node.hidden = !lines.length;
  fill(node, lines);
}
