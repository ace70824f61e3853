// Inputs handed over by `python -m perpendis A B --open`. That command serves this page on
// 127.0.0.1 with a fresh token in its address (`?open=TOKEN`) and holds the files named on
// its command line at `open/TOKEN/`: the manifest names them, and each side's bytes are
// fetched from the same origin (the CSP allows no other), so they travel from that process
// to this tab over the loopback interface and nowhere else.

const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

async function fetchOk(url) {
  let response;
  try {
    response = await fetch(url, { cache: "no-store" });
  } catch {
    response = null;
  }
  if (!response || !response.ok) {
    throw new Error('The files handed over by "python -m perpendis A B --open" are no longer served ' +
      "(the command was stopped, or this address is from an earlier run): run the command again.");
  }
  return response;
}

/**
 * The handed-over inputs as `{files: {a, b, ref?}: File, options}`, or null when the page's
 * address carries no `open` token. Throws an Error with a message for the page to show.
 */
export async function openedInputs(href) {
  const url = new URL(href);
  const token = url.searchParams.get("open");
  if (token === null) return null;
  if (!TOKEN.test(token)) {
    throw new Error(`This address's ?open= token is malformed: open the address "python -m perpendis A B --open" printed.`);
  }
  const base = new URL(`open/${token}/`, new URL(".", url));
  const { inputs, options } = await (await fetchOk(new URL("manifest.json", base))).json();
  const files = {};
  for (const [side, name] of Object.entries(inputs)) {
    const blob = await (await fetchOk(new URL(side, base))).blob();
    files[side] = new File([blob], name);
  }
  return { files, options: options ?? {} };
}
