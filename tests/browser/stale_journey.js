// Every way of changing what the page judges, walked in the page itself, so that Chromium
// (tests/browser/test_page_stale.py), Firefox (tests/firefox/run.mjs) and WebKit
// (tests/browser/test_webkit.py) take the same steps; tests/browser/stale_journey.py makes
// the inputs and checks the returned observations against CPython's perpendis.
//
// One async function expression of `spec` ({a, b, a2, b2, ref, npy: base64, words}), as
// each driver evaluates it: the page's own controls, the events a user's action fires, and
// after each step what the page shows of the report: whether it is marked stale and why.
async (spec) => {
  const $ = (id) => document.getElementById(id);
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  // Idle: no job in hand, and the 250 ms wait of the tolerance fields past.
  const settle = async () => {
    await sleep(350);
    for (let waited = 0; document.body.classList.contains("busy"); waited += 50) {
      if (waited > 120_000) throw new Error("the page stayed busy");
      await sleep(50);
    }
  };
  // A re-judged report may arrive after the page is idle again: wait for it to show.
  const until = async (probe, what) => {
    for (let waited = 0; !probe(); waited += 50) {
      if (waited > 60_000) throw new Error(`timed out waiting for ${what}`);
      await sleep(50);
    }
  };
  const tolerance = () => document.querySelector("[data-testid=tolerance-result]")?.textContent ?? "";
  const seen = [];
  const look = (step) => {
    const note = $("stale-note");
    const status = $("export-status").textContent;
    seen.push({
      step,
      stale: $("report").dataset.stale === "true",
      dimmed: $("report").classList.contains("stale"),
      note: note.hidden ? null : note.textContent,
      live: note.getAttribute("aria-live"),
      report: !$("report").hidden,
      verdict: $("verdict-box").dataset.verdict ?? null,
      passes: document.querySelector("[data-testid=tolerance-result]")?.classList.contains("pass") ?? null,
      error: $("error").hidden ? null : $("error").textContent,
      share: status && !$("share-link").hidden ? { status, length: $("share-link").value.length } : null,
    });
  };
  // Typed: the box's value, then the input event typing fires.
  const type = (side, text) => {
    const box = $(`paste-${side}`);
    box.value = text;
    box.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertText" }));
  };
  // Pasted: the paste event carrying the text; unless the page takes it, the browser puts it
  // in the box and fires an input event of a paste.
  const paste = (side, text) => {
    const box = $(`paste-${side}`);
    const data = new DataTransfer();
    data.setData("text/plain", text);
    const event = new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
    box.dispatchEvent(event);
    if (event.defaultPrevented) return;
    box.value = text;
    box.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
  };
  // Typed into atol or rtol: the page applies it 250 ms later, which a busy machine's timers
  // can stretch; the steps after it wait a second more.
  const field = async (id, text) => {
    $(id).value = text;
    $(id).dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertText" }));
    await sleep(1000);
  };
  const choose = (id, value) => {
    $(id).value = value;
    $(id).dispatchEvent(new Event("change", { bubbles: true }));
  };
  const compare = async () => {
    $("compare").click();
    await settle();
  };

  type("a", spec.a);
  type("b", spec.b);
  await compare();
  look("compared");

  // A paste into B, then the same text pasted back.
  paste("b", spec.b2);
  look("paste");
  paste("b", spec.b);
  look("paste back");

  // A reference typed, then emptied.
  type("ref", spec.ref);
  look("reference");
  type("ref", "");
  look("reference removed");

  // A preset on the inputs judged: judged again at once, not marked.
  choose("preset", "fp16");
  await settle();
  await until(() => tolerance().includes("preset fp16"), "the report judged under fp16");
  look("preset");
  choose("preset", "");
  await settle();
  await until(() => !tolerance().includes("preset fp16"), "the report judged again without fp16");
  look("preset back");

  // A tolerance typed after A changed: not judged on the old A, marked for both reasons.
  type("a", spec.a2);
  await field("rtol", "0.5");
  await settle();
  look("rtol after an edit");
  // A back as judged: only the tolerance differs now (the fields held the judged atol and
  // rtol, so what is typed there is a tolerance of its own); Compare judges it.
  type("a", spec.a);
  look("tolerance only");
  await compare();
  look("compared again");

  // A file opened in A (it wins over A's text), then removed.
  const bytes = Uint8Array.from(atob(spec.npy), (c) => c.charCodeAt(0));
  const files = new DataTransfer();
  files.items.add(new File([bytes], "a.npy", { type: "application/octet-stream" }));
  $("file-a").files = files.files;
  $("file-a").dispatchEvent(new Event("change", { bubbles: true }));
  for (let waited = 0; $("chip-a").hidden; waited += 50) {
    if (waited > 30_000) throw new Error("the file's chip never showed");
    await sleep(50);
  }
  look("file");
  $("side-a").querySelector(".chip-remove").click();
  look("file removed");

  // A share link made while the report is out of date.
  type("a", spec.a2);
  $("share").click();
  for (let waited = 0; $("share-link").hidden || !/characters/.test($("export-status").textContent); waited += 50) {
    if (waited > 30_000) throw new Error(`no share link: ${$("export-status").textContent}`);
    await sleep(50);
  }
  look("share");
  type("a", spec.a);

  // An invalid atol: an error, and the report marked; then an input the core refuses.
  const atol = $("atol").value;
  await field("atol", "abc");
  await settle();
  look("invalid atol");
  await field("atol", atol);
  await settle();
  look("atol back");
  type("b", spec.words);
  await compare();
  look("refused input");
  return seen;
}
