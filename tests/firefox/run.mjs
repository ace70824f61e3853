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

/** Poll `probe` (run in the page) until it returns something truthy; CSP forbids string eval. */
async function until(page, probe, arg, timeout, what) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await page.evaluate(probe, arg);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
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
  await page.click("[data-testid=compare]");
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

const TESTS = {
  async paste(page) {
    for (const [side, text] of Object.entries(spec.short)) await paste(page, side, text);
    expectOutcome(await compare(page), spec.short_expect, "pasted text");
    // A text too long for the box is kept beside it and compared all the same. It is dropped,
    // not pasted: Firefox gives a page-made paste event an empty clipboard, whatever it holds.
    await page.click("[data-testid=clear]");
    for (const [side, text] of Object.entries(spec.long)) await drop(page, side, text);
    for (const side of Object.keys(spec.long)) {
      const value = await page.$eval(`#paste-${side}`, (n) => n.value);
      check(value === "", `a long text went into the box of ${side}`);
    }
    const chip = await page.$eval("#chip-a .file-name", (n) => n.textContent);
    check(chip.includes("pasted text"), `chip says ${chip}`);
    expectOutcome(await compare(page), spec.long_expect, "long paste");
    // An input error is named beside its box.
    await page.click("[data-testid=clear]");
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
    await page.click("[data-testid=compare]");
    await until(page, () => document.querySelector("[data-testid=bisect-summary]") !== null, null, ANSWER_MS,
      "the layer table");
    const first = await page.$eval("[data-testid=first-failing]", (n) => n.closest("[data-testid=bisect-row]")
      .querySelector("[data-testid=bisect-a-name]").firstChild.textContent);
    check(first === spec.bug_layer, `first failing layer ${first}, the bug is in ${spec.bug_layer}`);
    // Its row opens that layer's report.
    await page.$eval("[data-testid=first-failing]", (n) => n.closest("[data-testid=bisect-row]").querySelector("button.link").click());
    const opened = await outcome(page);
    check(opened.verdict === spec.bug_verdict, `the bugged layer opens as ${JSON.stringify(opened)}, CPython says ${spec.bug_verdict}`);
  },

  async share(page, browser) {
    await fill(page, "a", spec.a);
    await fill(page, "b", spec.b);
    expectOutcome(await compare(page), spec.expect, "before sharing");
    await page.click("[data-testid=share]");
    const link = await until(page, () => {
      const field = document.getElementById("share-link");
      return field.hidden ? null : field.value;
    }, null, 30_000, "the share link");
    check(link.includes("#"), `share link ${link}`);
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
function watch(page) {
  page.on("pageerror", (error) => problems.push(`uncaught: ${error.message ?? error}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console error: ${message.text()}`);
  });
}

const browser = await puppeteer.launch({ browser: "firefox", executablePath: FIREFOX, headless: true,
  extraPrefsFirefox: { "dom.serviceWorkers.testing.enabled": true } });
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
  process.stderr.write(`${failed ? failed.stack : ""}\n${problems.join("\n")}\n`);
  process.exit(1);
}
process.stdout.write(`${name} passed\n`, () => process.exit(0)); // stdin, read when offline, would keep node alive
