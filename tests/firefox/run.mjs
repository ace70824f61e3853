// Runs one browser test of the page in Debian's Firefox ESR, driven over WebDriver BiDi by
// puppeteer-core (Playwright drives Firefox only through its own patched build, which this
// machine cannot download: a stock Firefox exits at once on `-juggler-pipe`).
//
//   node tests/firefox/run.mjs <test> <site url> <spec.json>
//
// The spec holds the inputs and what CPython's perpendis answers for them (written by
// tests/browser/test_firefox.py), so the page in Firefox is checked against the native core.
// A test that needs the server gone prints "stop-server" and waits for a line on stdin.
// Exit status 0 when the test passed; otherwise the reason is on stderr. Any uncaught error
// or console error in the page fails the test.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import puppeteer from "puppeteer-core";

const FIREFOX = process.env.FIREFOX ?? "/usr/bin/firefox-esr";
const READY_MS = 180_000; // cold Pyodide start in Firefox on a busy 2-core machine
const ANSWER_MS = 120_000;

const [, , name, url, specPath] = process.argv;
const spec = JSON.parse(readFileSync(specPath, "utf8"));

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** What the page shows now, for a failure message: a timeout says where the page stood. */
function pageState(page) {
  return page.evaluate(() => {
    const shown = (id) => {
      const node = document.getElementById(id);
      return node ? !node.hidden : null;
    };
    return JSON.stringify({
      status: document.getElementById("status")?.textContent,
      busy: document.body.classList.contains("busy"),
      job: document.getElementById("job")?.textContent,
      error: shown("error") ? document.getElementById("error").textContent : null,
      report: shown("report"),
      lengths: ["a", "b"].map((side) => document.getElementById(`paste-${side}`)?.value.length),
    });
  }).catch((err) => `(the page could not be read: ${err.message})`);
}

/** Poll `probe` (run in the page) until it returns something truthy; CSP forbids string eval. */
async function until(page, probe, arg, timeout, what) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await page.evaluate(probe, arg);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the page: ${await pageState(page)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Clicks `selector` as the user does, and fails at once, saying so, when the page did not
 * receive the click (the driver clicks at a point: something over the button would take it),
 * rather than later, as a wait for an answer that was never asked for. */
async function press(page, selector) {
  await page.evaluate((sel) => {
    window.pressed = false;
    document.querySelector(sel).addEventListener("click", () => { window.pressed = true; }, { once: true, capture: true });
  }, selector);
  await page.click(selector);
  await until(page, () => window.pressed, null, 2_000, `the click on ${selector}`);
}

async function waitReady(page) {
  const status = await until(page, () => {
    const text = document.getElementById("status")?.textContent ?? "";
    return /\bready\b/.test(text) || /fail/i.test(text) ? text : null;
  }, null, READY_MS, "the Python core");
  check(/\bready\b/.test(status), `the core did not start: ${status}`);
}

/** Wait for the page to finish the job in hand, and return what it shows. */
async function outcome(page) {
  return until(page, () => {
    if (document.body.classList.contains("busy")) return null;
    const error = document.getElementById("error");
    if (!error.hidden) return { error: error.textContent };
    if (document.getElementById("report").hidden) return null;
    return {
      verdict: document.getElementById("verdict-box").dataset.verdict,
      index: document.querySelector("[data-testid=element-index]").textContent,
    };
  }, null, ANSWER_MS, "a verdict or an error");
}

async function fill(page, side, text) {
  await page.evaluate((s, t) => {
    const box = document.getElementById(`paste-${s}`);
    box.value = t;
    box.dispatchEvent(new Event("input", { bubbles: true }));
  }, side, text);
}

/** A paste as the user makes it: a paste event carrying the text (the box takes it, or the
 * page keeps a long one beside it). */
async function paste(page, side, text) {
  return page.evaluate((s, t) => {
    const data = new DataTransfer();
    data.setData("text/plain", t);
    const box = document.getElementById(`paste-${s}`);
    const event = new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
    box.dispatchEvent(event);
    if (!event.defaultPrevented) box.value = t; // what the browser itself does with a paste
    return event.defaultPrevented;
  }, side, text);
}

/** A text dropped on a side's box, as when dragged from another window. */
async function drop(page, side, text) {
  await page.evaluate((s, t) => {
    const data = new DataTransfer();
    data.setData("text/plain", t);
    const box = document.getElementById(`side-${s}`);
    box.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
  }, side, text);
}

async function compare(page) {
  await press(page, "[data-testid=compare]");
  return outcome(page);
}

function expectOutcome(got, want, what) {
  check(got.verdict === want.verdict, `${what}: verdict ${got.verdict ?? got.error}, CPython says ${want.verdict}`);
  if (want.index !== undefined) check(got.index === want.index, `${what}: element ${got.index}, CPython says ${want.index}`);
}

async function upload(page, side, paths) {
  const input = await page.$(`[data-testid=file-${side}]`);
  await input.uploadFile(...paths);
  await until(page, (s) => !document.getElementById(`chip-${s}`).hidden, side, 30_000, `the file chip of ${side}`);
}

/** Wait until no request to the core is outstanding and no debounce is pending. */
async function settle(page) {
  await new Promise((resolve) => setTimeout(resolve, 300)); // the atol/rtol fields wait 250 ms
  await until(page, () => !document.body.classList.contains("busy"), null, ANSWER_MS, "the page to settle");
}

/** axe-core's violations in the page as it is now (axe is put in once, by the driver, past the CSP). */
async function axeViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) {
    await page.evaluate(`${readFileSync(spec.axe, "utf8")}\n;void 0`);
  }
  return page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => `${v.id} ×${v.nodes.length}: ${v.help} — `
      + v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
  });
}

/** Whether `selector` matches a shown, enabled control. */
async function offered(page, selector) {
  return page.evaluate((sel) => {
    const node = document.querySelector(sel);
    return Boolean(node && node.getClientRects().length && !node.disabled && !node.closest("[hidden]"));
  }, selector);
}

/** A seeded generator (mulberry32): the same seed gives the same sequence of actions. */
function seeded(seed) {
  let t = seed >>> 0;
  const next = () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
  return { random: next, below: (n) => Math.floor(next() * n), pick: (list) => list[Math.floor(next() * list.length)] };
}

async function clickNth(page, selector, rng) {
  await page.evaluate((sel, pick) => {
    const nodes = document.querySelectorAll(sel);
    nodes[Math.floor(pick * nodes.length)].dispatchEvent(new MouseEvent("click", { bubbles: true }));
  }, selector, rng.random());
}

/** A click on a random cell of the heat map's canvas, where a pointer would put it. */
async function clickCell(page, rng) {
  await page.evaluate(([row, col]) => {
    const canvas = document.querySelector("#heatmap canvas");
    const box = canvas.getBoundingClientRect();
    const [rows, cols] = [Number(canvas.dataset.rows), Number(canvas.dataset.cols)];
    const at = { clientX: box.left + ((Math.floor(col * cols) + 0.5) * box.width) / cols,
      clientY: box.top + ((Math.floor(row * rows) + 0.5) * box.height) / rows, bubbles: true };
    canvas.dispatchEvent(new MouseEvent("click", at));
  }, [rng.random(), rng.random()]);
}

/** Why a report that claims to be current (not marked stale) shows other figures than CPython
 * gives for the text in the boxes (spec.screen, by test_firefox.screen_answers); null when it
 * agrees, or when no report claims to be current for text alone. */
async function offScreen(page) {
  const shown = await page.evaluate(() => {
    const $ = (id) => document.getElementById(id);
    const text = (id) => document.querySelector(`[data-testid="${id}"]`)?.getAttribute("data-full")
      ?? document.querySelector(`[data-testid="${id}"]`)?.textContent;
    if ($("report").hidden || $("report").dataset.stale === "true") return null;
    if (!$("chip-a").hidden || !$("chip-b").hidden || !$("pair-title").hidden || !$("bisect").hidden) return null;
    if ($("paste-ref").value.trim()) return null;
    return { key: `${$("paste-a").value}\0${$("paste-b").value}`,
      got: [text("shape-a"), text("shape-b"),
        String(document.querySelector('[data-testid="n-diff"] .figure')?.dataset.full ?? text("n-diff")).replaceAll(",", "")] };
  });
  if (!shown) return null;
  if (!(shown.key in spec.screen)) return `the boxes hold text the test never put there: ${JSON.stringify(shown.key.slice(0, 80))}`;
  const want = spec.screen[shown.key];
  if (want === null) return "a current-looking report for boxes CPython refuses";
  return JSON.stringify(want) === JSON.stringify(shown.got) ? null
    : `the report shows ${JSON.stringify(shown.got)}, the boxes hold ${JSON.stringify(want)}`;
}

// The action fuzz of tests/browser/test_page_actions_fuzz.py, shorter: [name, needs, act].
const ACTIONS = [
  ["load case", null, async (page, rng) => {
    const name = rng.pick(Object.keys(spec.cases));
    for (const side of ["a", "b"]) {
      if (await offered(page, `#chip-${side} .chip-remove`)) await page.click(`#chip-${side} .chip-remove`);
      await fill(page, side, spec.cases[name][side]);
    }
    if (rng.random() < 0.5) {
      await press(page, "[data-testid=compare]");
      return `compare ${name}`;
    }
    return `load ${name}`;
  }],
  ["load captures", null, async (page) => {
    for (const side of ["a", "b"]) await upload(page, side, [spec.captures[side]]);
    return "load captures";
  }],
  ["compare", "[data-testid=compare]", null],
  ["compare", "[data-testid=compare]", null],
  ["preset", null, async (page, rng) => {
    const values = await page.$$eval("#preset option", (options) => options.map((o) => o.value));
    const value = rng.pick(values);
    await page.select("[data-testid=preset]", value);
    return `preset ${JSON.stringify(value)}`;
  }],
  ["tolerance field", null, async (page, rng) => {
    const value = rng.pick(["1e-5", "0", "0.5", "", "abc", "-1", "1e309"]);
    const id = rng.pick(["atol", "rtol"]);
    await page.evaluate((i, v) => {
      const field = document.getElementById(i);
      field.value = v;
      field.dispatchEvent(new Event("input", { bubbles: true }));
    }, id, value);
    return `${id} ${JSON.stringify(value)}`;
  }],
  ["swap", "[data-testid=swap]", null],
  ["clear", "[data-testid=clear]", null],
  ["prev-diff", "[data-testid=prev-diff]", null],
  ["next-diff", "[data-testid=next-diff]", null],
  ["first-diff", "[data-testid=first-diff]", null],
  ["first-fail", "[data-testid=first-fail]", null],
  ["slice control", "#slice-controls select", async (page, rng) => {
    return page.evaluate((pickControl, pickValue) => {
      const controls = document.querySelectorAll("#slice-controls select, #slice-controls input");
      const control = controls[Math.floor(pickControl * controls.length)];
      if (control.tagName === "SELECT") control.value = control.options[Math.floor(pickValue * control.options.length)].value;
      else if (control.type === "checkbox") control.checked = !control.checked;
      else control.value = String(Math.floor(pickValue * 7) - 1);
      control.dispatchEvent(new Event("change", { bubbles: true }));
      return `slice control ${control.dataset.testid}`;
    }, rng.random(), rng.random());
  }],
  ["heat map cell", "#heatmap canvas", async (page, rng) => {
    await clickCell(page, rng);
    return "heat map cell";
  }],
  ["share", "[data-testid=share]", null],
  ["bisect row", "[data-testid=bisect-row] button", async (page, rng) => {
    await clickNth(page, "[data-testid=bisect-row] button", rng);
    return "bisect row";
  }],
  ["example-bug", "[data-testid=example-bug]", null],
];

const TESTS = {
  async paste(page) {
    for (const [side, text] of Object.entries(spec.short)) await paste(page, side, text);
    expectOutcome(await compare(page), spec.short_expect, "pasted text");
    // A text too long for the box is kept beside it and compared all the same. It is dropped,
    // not pasted: Firefox gives a page-made paste event an empty clipboard, whatever it holds.
    await press(page, "[data-testid=clear]");
    for (const [side, text] of Object.entries(spec.long)) await drop(page, side, text);
    for (const side of Object.keys(spec.long)) {
      const value = await page.$eval(`#paste-${side}`, (n) => n.value);
      check(value === "", `a long text went into the box of ${side}`);
    }
    const chip = await page.$eval("#chip-a .file-name", (n) => n.textContent);
    check(chip.includes("pasted text"), `chip says ${chip}`);
    expectOutcome(await compare(page), spec.long_expect, "long paste");
    // An input error is named beside its box.
    await press(page, "[data-testid=clear]");
    await fill(page, "a", spec.bad.a);
    await fill(page, "b", spec.bad.b);
    const bad = await compare(page);
    check(bad.error && bad.error.includes(spec.bad.says), `error ${JSON.stringify(bad)}; expected one naming ${spec.bad.says}`);
  },

  async file(page) {
    for (const [side, path] of Object.entries(spec.files)) await upload(page, side, [path]);
    expectOutcome(await compare(page), spec.expect, "files");
  },

  async bisect(page) {
    await upload(page, "a", [spec.files.a]);
    await upload(page, "b", [spec.files.b]);
    await press(page, "[data-testid=compare]");
    await until(page, () => document.querySelector("[data-testid=bisect-summary]") !== null, null, ANSWER_MS,
      "the layer table");
    const first = await page.$eval("[data-testid=first-failing]", (n) => n.closest("[data-testid=bisect-row]")
      .querySelector("[data-testid=bisect-a-name]").firstChild.textContent);
    check(first === spec.bug_layer, `first failing layer ${first}, the bug is in ${spec.bug_layer}`);
    if (spec.names) {
      // A table built in slices (app/render/bisect_table.js): every row arrives, in place.
      await until(page, () => document.getElementById("bisect-table").dataset.rows === "complete", null, ANSWER_MS,
        "every row of the table");
      const names = await page.$$eval("[data-testid=bisect-row]", (rows) =>
        rows.map((r) => r.querySelector("[data-testid=bisect-a-name]").firstChild.textContent));
      check(JSON.stringify(names) === JSON.stringify(spec.names), `rows ${names.length}: ${names.slice(0, 3)}…`);
      const pending = await page.$$eval("[data-testid=bisect-row-pending]", (rows) => rows.length);
      check(pending === 0, `${pending} rows still pending`);
    }
    // Its row opens that layer's report.
    await page.$eval("[data-testid=first-failing]", (n) => n.closest("[data-testid=bisect-row]").querySelector("button.link").click());
    const opened = await outcome(page);
    check(opened.verdict === spec.bug_verdict, `the bugged layer opens as ${JSON.stringify(opened)}, CPython says ${spec.bug_verdict}`);
  },

  async share(page, browser) {
    await fill(page, "a", spec.a);
    await fill(page, "b", spec.b);
    expectOutcome(await compare(page), spec.expect, "before sharing");
    // A is edited after Compare: the report is marked out of date, and the link still carries
    // the report's own inputs, and says so.
    await fill(page, "a", spec.b);
    const stale = await page.evaluate(() => ({ flag: document.getElementById("report").dataset.stale,
      note: document.getElementById("stale-note").hidden ? null : document.getElementById("stale-note").textContent }));
    check(stale.flag === "true" && stale.note?.includes("the inputs changed"), `not marked stale: ${JSON.stringify(stale)}`);
    await press(page, "[data-testid=share]");
    const link = await until(page, () => {
      const field = document.getElementById("share-link");
      return field.hidden ? null : field.value;
    }, null, 30_000, "the share link");
    check(link.includes("#"), `share link ${link}`);
    const said = await page.$eval("[data-testid=export-status]", (n) => n.textContent);
    check(said.includes(`${link.length.toLocaleString("en-US")} characters`) && said.includes("not what was edited since"),
      `the share status says ${said}`);
    // A fresh context (no storage shared) opens the link and shows the same result.
    const other = await browser.createBrowserContext();
    const fresh = await other.newPage();
    watch(fresh);
    await fresh.goto(link);
    await waitReady(fresh);
    expectOutcome(await outcome(fresh), spec.expect, "the shared link");
    const text = await fresh.$eval("#paste-a", (n) => n.value);
    check(text === spec.a, "the link did not carry A's text");
  },

  /** Every way of changing what is judged (tests/browser/stale_journey.js); what the page
   * showed at each step is printed as one "journey:" line, for test_firefox.py to check. */
  async stale(page) {
    const source = readFileSync(spec.journey, "utf8");
    const seen = await page.evaluate(`(${source})(${JSON.stringify(spec)})`);
    process.stdout.write(`journey: ${JSON.stringify(seen)}\n`);
  },

  async axe(page) {
    const found = { empty: await axeViolations(page) };
    const texts = async (name) => {
      await press(page, "[data-testid=clear]");
      await fill(page, "a", spec.cases[name].a);
      await fill(page, "b", spec.cases[name].b);
      await compare(page);
      await settle(page);
    };
    await texts("words");
    check(await offered(page, "[data-testid=error]"), "the words case shows no error");
    found["input error"] = await axeViolations(page);
    await texts("bug");
    found.report = await axeViolations(page);
    await texts("shapes");
    found.shapes = await axeViolations(page);
    await press(page, "[data-testid=clear]");
    for (const side of ["a", "b"]) await upload(page, side, [spec.captures[side]]);
    await press(page, "[data-testid=compare]");
    await until(page, () => document.querySelector("[data-testid=bisect-summary]") !== null, null, ANSWER_MS,
      "the layer table");
    await settle(page);
    found.bisect = await axeViolations(page);
    const bad = Object.fromEntries(Object.entries(found).filter(([, v]) => v.length));
    check(!Object.keys(bad).length, `axe violations: ${JSON.stringify(bad, null, 1)}`);
    process.stdout.write(`axe: 0 violations in ${Object.keys(found).join(", ")}\n`);
  },

  async fuzz(page) {
    const rng = seeded(spec.seed);
    const done = [];
    for (let step = 0; step < spec.steps; step += 1) {
      const choices = [];
      for (const action of ACTIONS) if (!action[1] || (await offered(page, action[1]))) choices.push(action);
      const [name, needs, act] = rng.pick(choices);
      done.push(act ? await act(page, rng) : name);
      if (!act) await page.click(needs);
      await settle(page).catch((error) => {
        throw new Error(`seed ${spec.seed}, after ${done.join(" → ")}: ${error.message}`);
      });
      check(!problems.length, `seed ${spec.seed}, after ${done.join(" → ")}: ${problems.join("; ")}`);
      const mismatch = await offScreen(page);
      check(!mismatch, `seed ${spec.seed}, after ${done.join(" → ")}: ${mismatch}`);
    }
    // The page still answers: a fresh comparison of the bug gives its verdict.
    await press(page, "[data-testid=clear]");
    await fill(page, "a", spec.cases.bug.a);
    await fill(page, "b", spec.cases.bug.b);
    const last = await compare(page);
    check(last.verdict === "investigate", `after ${done.join(" → ")}: the bug case gives ${JSON.stringify(last)}`);
    process.stdout.write(`fuzz: ${done.join(" → ")}\n`);
  },

  /** The heat map's canvas: the cells that differ painted in the heat colour, the bug at full
   * strength, a click on a cell opening its element (spec from test_firefox.heatmap_spec). */
  async heatmap(page) {
    await fill(page, "a", spec.a);
    await fill(page, "b", spec.b);
    const got = await compare(page);
    check(got.verdict === "investigate", `verdict ${JSON.stringify(got)}`);
    await until(page, () => document.querySelector("#heatmap canvas") !== null, null, ANSWER_MS, "the heat map");
    const cells = await page.evaluate(`(${spec.cells_js})(document.querySelector("#heatmap canvas"))`);
    const hot = cells.filter((c) => c[2] === "heat").map((c) => `${c[0]},${c[1]}`).sort();
    check(JSON.stringify(hot) === JSON.stringify(spec.hot), `heat cells ${hot}, expected ${spec.hot}`);
    const strong = cells.filter((c) => c[2] === "heat" && c[3] > 0.9).map((c) => `${c[0]},${c[1]}`);
    check(strong.length && strong.every((at) => spec.bug.includes(at)), `full-strength cells ${strong}`);
    await page.evaluate(`(${spec.click_js})(document.querySelector("#heatmap canvas"), 1, 2)`);
    await until(page, () => document.getElementById("element-index").textContent === "(1, 2)", null, ANSWER_MS,
      "the clicked element");
    await page.$eval("#slice-card", (n) => n.scrollIntoView());
    const card = await page.$("#slice-card");
    await card.screenshot({ path: spec.path });
  },

  /** Not a test: a screenshot of one element after comparing spec.a and spec.b (scripts/screenshots_issue19.py). */
  async screenshot(page) {
    await fill(page, "a", spec.a);
    await fill(page, "b", spec.b);
    await compare(page);
    await settle(page);
    await until(page, (sel) => document.querySelector(sel)?.getClientRects().length > 0, spec.selector, ANSWER_MS,
      spec.selector);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the heat map's slice arrives after the report
    const target = await page.$(spec.selector);
    await target.screenshot({ path: spec.path });
  },

  async offline(page) {
    await until(page, () => navigator.serviceWorker.controller !== null, null, 60_000, "the service worker");
    process.stdout.write("stop-server\n");
    await new Promise((resolve) => createInterface({ input: process.stdin }).once("line", resolve));
    await page.reload();
    await waitReady(page);
    await fill(page, "a", spec.a);
    await fill(page, "b", spec.b);
    expectOutcome(await compare(page), spec.expect, "offline");
  },
};

const problems = [];
const consoleLog = []; // every console message of the page and its workers, printed on failure
const started = Date.now();
function watch(page) {
  page.on("pageerror", (error) => problems.push(`uncaught: ${error.message ?? error}`));
  page.on("console", (message) => {
    consoleLog.push(`${((Date.now() - started) / 1000).toFixed(1)} s ${message.type()}: ${message.text()}`);
    if (message.type() === "error") problems.push(`console error: ${message.text()}`);
  });
}

const browser = await puppeteer.launch({ browser: "firefox", executablePath: FIREFOX, headless: true,
  extraPrefsFirefox: { "dom.serviceWorkers.testing.enabled": true,
    // BiDi has no colour-scheme emulation: a dark page is asked for by preference (0 = dark).
    ...(spec.dark ? { "layout.css.prefers-color-scheme.content-override": 0 } : {}) } });
let failed = null;
try {
  const page = await browser.newPage();
  watch(page);
  await page.goto(url);
  await waitReady(page);
  await TESTS[name](page, browser);
} catch (error) {
  failed = error;
} finally {
  await browser.close();
}
if (failed || problems.length) {
  const log = consoleLog.length ? `\nthe console, last lines:\n${consoleLog.slice(-30).join("\n")}` : "";
  process.stderr.write(`${failed ? failed.stack : ""}\n${problems.join("\n")}${log}\n`);
  process.exit(1);
}
process.stdout.write(`${name} passed\n`, () => process.exit(0)); // stdin, read when offline, would keep node alive
