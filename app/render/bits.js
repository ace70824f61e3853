// The selected element bit by bit: sign, exponent and mantissa as coloured cells, bits
// that differ between A and B marked, the values in decimal and hex, the exponent
// decoded and the neighbouring representable values.
import { el, facts, fill } from "./dom.js";
import { full, number, relativeNumber } from "./numbers.js";

const FIELD_NAMES = ["sign", "exponent", "mantissa"];

/**
 * Cells for one bit string ("s eeeeeeee mmm…" for floats, plain bits for integers).
 * The groups are separated by single text spaces so the element's text reads exactly
 * like the report's bit string.
 */
function bitCells(bits, other, side, exact) {
  const groups = bits.split(" ");
  const flatOther = other.replaceAll(" ", "");
  let pos = 0;
  const out = el("span", { class: "bits", "data-testid": `bits-${side}` });
  groups.forEach((group, g) => {
    if (g > 0) out.append(" ");
    const kind = groups.length === 3 && !exact ? FIELD_NAMES[g] : "integer";
    const span = el("span", { class: `field ${kind}`, title: kind });
    for (const bit of group) {
      const differs = flatOther.length === bits.length - groups.length + 1 && flatOther[pos] !== bit;
      span.append(el("span", { class: differs ? "bit diff" : "bit", "data-diff": differs ? "1" : null }, bit));
      pos += 1;
    }
    out.append(span);
  });
  return out;
}

function exponentText(f) {
  if (!f) return null;
  if (f.class === "nan" || f.class === "inf") return `all ones: ${f.class}`;
  if (f.class === "zero") return "zero";
  const kind = f.class === "subnormal" ? "subnormal, " : "";
  return `${kind}2^${f.exponent} (stored ${f.exponent_bits})`;
}

function sideRow(label, side, element, detail, exact = false) {
  const fields = detail ? detail[`${side}_fields`] : null;
  const prev = detail ? detail[`${side}_prev`] : undefined;
  const next = detail ? detail[`${side}_next`] : undefined;
  return el("div", { class: `element-side side-${side}` },
    el("div", { class: "side-label" }, label),
    bitCells(element[`${side}_bits`], element[side === "a" ? "b_bits" : "a_bits"], side, exact),
    facts([
      ["value", element[side], `value-${side}`, "mono"],
      ["hex", element[`${side}_hex`], `hex-${side}`, "mono"],
      fields ? ["exponent", exponentText(fields), `exponent-${side}`] : null,
      detail ? ["neighbours", `${full(prev)} ◂ ▸ ${full(next)}`, `neighbours-${side}`, "mono"] : null,
    ].filter(Boolean)));
}

/** Opposite sign bits on two values that differ: their ULP distance is counted through zero. */
function acrossZero(element) {
  const a = element.a_bits;
  const b = element.b_bits;
  return typeof a === "string" && typeof b === "string" && a[0] !== b[0] && typeof element.ulp === "number" && element.ulp > 0;
}

/**
 * Render an Element (from the report) or an `element` op result (with fields and neighbours).
 * `exact`: the values are integers or booleans, whose bits have no sign, exponent or mantissa
 * fields and whose distance is |A − B| itself, so no ULP is told.
 */
export function renderElement(node, element, detail, exact = false) {
  if (exact) {
    fill(node,
      sideRow("A", "a", element, null, true),
      sideRow("B", "b", element, null, true),
      facts([
        ["|A − B|", number(element.abs_diff), "abs-diff"],
        ["relative", relativeNumber(element.rel_diff), "rel-diff"],
      ]),
      el("p", { class: "legend" }, el("span", { class: "bit diff" }, "differing bit")));
    return;
  }
  fill(node,
    sideRow("A", "a", element, detail),
    sideRow("B", "b", element, detail),
    facts([
      ["ULP distance", number(element.ulp), "ulp"],
      ["|A − B|", number(element.abs_diff), "abs-diff"],
      ["relative", relativeNumber(element.rel_diff), "rel-diff"],
    ]),
    acrossZero(element)
      ? el("p", { class: "hint", "data-testid": "ulp-across-zero" },
        "A and B have opposite signs: the ULP distance counts every value between them across zero, " +
        "so it is large even when both are tiny.")
      : null,
    el("p", { class: "legend" },
      el("span", { class: "field sign" }, "sign"), " ",
      el("span", { class: "field exponent" }, "exponent"), " ",
      el("span", { class: "field mantissa" }, "mantissa"), " ",
      el("span", { class: "bit diff" }, "differing bit")));
}
