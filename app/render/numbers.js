// Every number the cards show goes through here, so the page reads one way everywhere:
// non-integer values with 4 significant digits, the full value (as the report has it) on
// hover and in the clipboard, shares as percentages, an infinite relative difference in words.
// Counts and ULP distances are integers and are shown whole, with their digits grouped. Text made by Python (the
// headline, findings, preset labels) is shown as Python wrote it.
import { el } from "./dom.js";

/** A report number as Python wrote it: JSON numbers as they are, "inf"/"nan" strings kept. */
export function full(value) {
  if (value === null || value === undefined) return "—";
  return String(value);
}

/** Digits after the point, trailing zeros dropped: "0.5000" → "0.5", "2.000" → "2". */
function trim(fixed) {
  return fixed.includes(".") ? fixed.replace(/0+$/, "").replace(/\.$/, "") : fixed;
}

/** A count with its digits grouped: "536,870,912". */
export function count(n) {
  return typeof n === "number" && Number.isInteger(n) ? n.toLocaleString("en-US") : full(n);
}

/**
 * A report float as a person reads it: `digits` significant digits, in exponent form when
 * tiny or huge (the rule of printf's %g, so 1.5e-7 and 98.23), "inf"/"nan" strings and
 * null kept as the report has them. Integers are shown whole, digits grouped: they are exact.
 */
export function sig(value, digits = 4) {
  if (typeof value !== "number" || !Number.isFinite(value)) return full(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e15) return count(value);
  const [mantissa, exponent] = value.toExponential(digits - 1).split("e");
  const exp = Number(exponent);
  if (exp < -4 || exp >= digits) return `${trim(mantissa)}e${exp}`;
  return trim(value.toFixed(digits - 1 - exp));
}

/** A share of all (0.03125) as a percentage ("3.125%"), 4 significant digits. */
export function pct(fraction, digits = 4) {
  if (typeof fraction !== "number" || !Number.isFinite(fraction)) return full(fraction);
  if (fraction > 0 && fraction < 1e-6) return "<0.0001%";
  return `${sig(Number((fraction * 100).toPrecision(12)), digits)}%`;
}

/** A relative difference; an infinite one in words (B is zero where A is not). */
export function relative(value) {
  if (value === "inf" || value === Infinity) return "infinite: B is 0 and A is not";
  return sig(value);
}

/**
 * A number for a card: the short text, the full value in `title` and `data-full` (which the
 * page's copy handler puts in the clipboard instead of the short text).
 */
export function number(value, text = sig(value)) {
  return el("span", { class: "figure", title: full(value), "data-full": full(value) }, text);
}

/** A share as a number element: the percentage shown, the fraction kept in full. */
export function percentage(fraction) {
  return number(fraction, pct(fraction));
}

/** A relative difference as a number element (infinite in words). */
export function relativeNumber(value) {
  return number(value, relative(value));
}

function holder(node) {
  const element = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
  return element?.closest("[data-full]") ?? null;
}

/**
 * The text a selection copies, with every number in it at its full value. A selection inside
 * one number copies that number; a wider one is laid out off-screen with the numbers swapped
 * in, so its line breaks are the ones the browser would have copied. Null: nothing to change.
 */
export function fullText(selection) {
  if (!selection || selection.isCollapsed || !selection.rangeCount) return null;
  const range = selection.getRangeAt(0);
  const inside = holder(range.commonAncestorContainer);
  if (inside) return inside.dataset.full;
  const copy = el("div", { class: "copy-scratch", "aria-hidden": "true" }, range.cloneContents());
  const numbers = copy.querySelectorAll("[data-full]");
  if (!numbers.length) return null;
  for (const node of numbers) node.textContent = node.dataset.full;
  document.body.append(copy);
  const text = copy.innerText;
  copy.remove();
  return text;
}

/** Copying from the page copies numbers at their full value, not as shown. */
export function copyFullValues(event) {
  const text = fullText(document.getSelection());
  if (text === null || !event.clipboardData) return;
  event.clipboardData.setData("text/plain", text);
  event.preventDefault();
}
