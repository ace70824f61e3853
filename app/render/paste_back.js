// The "paste back" block: lines to put into a test, computed by the core
// (perpendis.paste_back, the report's `paste_back`); this only shows them, each with a note
// of whether it passes on these arrays, and copies them.
import { el, fill } from "./dom.js";

const WHAT = {
  assert_same: "perpendis, at the smallest passing tolerance",
  numpy: "NumPy, same tolerance",
  torch: "PyTorch, same tolerance",
  reproduce: "reproduces the failure",
};

export function renderPasteBack(card, node, report, onCopy) {
  const lines = report.paste_back ?? [];
  card.hidden = lines.length === 0;
  if (!lines.length) return;
  const code = lines.map((line) => line.code).join("\n");
  const copy = el("button", { type: "button", "data-testid": "copy-paste-back" }, "Copy the lines");
  copy.addEventListener("click", () => onCopy(code));
  fill(node,
    el("pre", { class: "paste-back", "data-testid": "paste-back-code", tabindex: 0, "aria-label": "Lines to paste into a test" },
      el("code", {}, code)),
    el("ul", { class: "paste-back-notes" }, lines.map((line) => el("li", { "data-what": line.what },
      `${WHAT[line.what] ?? line.what}: ${line.code.startsWith("#") ? "none" : line.passes ? "passes" : "fails"} on these arrays`))),
    copy);
}
