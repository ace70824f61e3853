// Small DOM helpers. Text always goes in through textContent so that anything
// derived from the input (names, dtypes, messages quoting it) can never become markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element with attributes and children (strings become text nodes). */
export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, same calling convention as el(). */
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  return build(node, {}, children);
}

/** Save `blob` as a file named `name`: the browser's download of an object URL, let go at once. */
export function download(name, blob) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 0);
}

/** A multi-index written the way NumPy prints a tuple: (1, 0, 4), (4,), (). */
export function formatIndex(index) {
  if (index.length === 1) return `(${index[0]},)`;
  return `(${index.join(", ")})`;
}

/**
 * A long name (a layer's module path, an exporter's tensor name) that may break after its
 * separators (. / _ :) and nowhere else, so a narrow table column wraps it into whole parts
 * instead of cutting a word. Its textContent is still the name.
 */
export function breakable(name, attrs = {}) {
  const parts = String(name).split(/(?<=[./_:])/);
  return el("span", attrs, parts.flatMap((part, i) => (i ? [document.createElement("wbr"), part] : [part])));
}

// A report number as Python wrote it; numbers.js formats every number the page shows.
export { full as num } from "./numbers.js";

/**
 * A wide block (a table) in a container that scrolls sideways and shows that it does: it is
 * focusable and named, so the keyboard can scroll it, and while its content is wider than it
 * (`data-overflowing`) its cut edge is shaded and a hint under it says so.
 */
export function scrollable(content, label) {
  const box = el("div", { class: "scroll-x", tabindex: 0, role: "region", "aria-label": label }, content);
  const hint = el("p", { class: "scroll-hint", hidden: true }, "Scroll sideways for more columns →");
  const check = () => {
    const over = box.scrollWidth > box.clientWidth + 1;
    box.dataset.overflowing = String(over);
    hint.hidden = !over;
  };
  new ResizeObserver(check).observe(box);
  return [box, hint];
}

/** A definition list from [label, value, testid?] rows. */
export function facts(rows) {
  return el("dl", { class: "facts" },
    rows.flatMap(([label, value, testid, cls]) => [
      el("dt", {}, label),
      el("dd", { "data-testid": testid, class: cls }, value),
    ]));
}

/** Let files (or text) be dropped on a box: it is marked while something is dragged over
 * it, and onDrop gets the drop's DataTransfer. */
export function dropTarget(box, onDrop) {
  box.addEventListener("dragover", (event) => {
    event.preventDefault();
    box.classList.add("dragging");
  });
  box.addEventListener("dragleave", (event) => {
    if (!box.contains(event.relatedTarget)) box.classList.remove("dragging");
  });
  box.addEventListener("drop", (event) => {
    event.preventDefault();
    box.classList.remove("dragging");
    onDrop(event.dataTransfer);
  });
}
