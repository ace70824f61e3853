// Fetches the site's zip archives: Pyodide's standard library and the two wheels. build.py
// stores their members uncompressed, so that a host's Brotli or gzip compresses each archive
// whole, which finds what its members share, as deflate member by member cannot: the three
// are 4.29 MB deflated, 2.94 MB stored and Brotli'd, 3.87 MB stored and gzip'd. A host that
// compresses nothing would send them at full size, 12.5 MB: from it, the gzip'd copy
// build.py writes beside each (`name.gz`) is fetched and inflated here instead, so no host
// needs configuring for them.
// A classic script, shared by the core's worker and its fold helpers (app/boot.js, which
// build.py writes into the core's worker) and the service worker (app/sw.js).

// Taken before boot.js routes the global fetch here (Pyodide fetches through it).
const networkFetch = self.fetch.bind(self);

// Marks a response this script made. The core's worker, behind the service worker, is
// answered with one: it takes it as it is, rather than asking for the gzip'd copy again.
const ARCHIVE_HEADER = "perpendis-archive";
// Set once one archive came whole from the host: the next ones go to their copies at once.
let hostSendsWhole = false;
// What went wrong with an archive, for the error that says why Python could not start
// (bootPython, app/boot.js): Pyodide only logs a package it failed to load.
self.archiveFailures = [];

/** Whether `url` names one of the site's archives (stored zips with a gzip'd copy beside). */
self.isArchive = (url) => /\/pyodide\/[^/]+\.(whl|zip)$/.test(new URL(url, self.location.href).pathname);

/**
 * The archive at `url`, as a Response whose body is its bytes. `integrity` ("sha256-…", as
 * fetch takes it) is checked here: fetch, given one, would read the whole body before
 * showing the headers this needs first.
 */
self.fetchArchive = (url, init) =>
  fetchArchiveOnce(url, init).then(
    (response) => {
      if (!response.ok) archiveFailures.push(`${url}: HTTP ${response.status}`);
      return response;
    },
    (error) => {
      archiveFailures.push(error.message);
      throw error;
    },
  );

async function fetchArchiveOnce(url, { integrity = "", cache = "default" } = {}) {
  let response = hostSendsWhole ? null : await networkFetch(url, { cache });
  if (response && !response.ok) return response;
  let bytes;
  let how = response?.headers.get(ARCHIVE_HEADER) ?? null;
  if (response && (how !== null || response.headers.has("content-encoding"))) {
    // Compressed in transit (the body is already decoded), or made here (by the service worker).
    if (!integrity) return response;
    bytes = await response.arrayBuffer();
    how ??= "as sent";
  } else {
    // Sent as it is: the host compresses nothing. Its gzip'd copy instead.
    response?.body?.cancel().catch(() => {});
    hostSendsWhole = true;
    const copy = await networkFetch(url + ".gz", { cache });
    if (copy.ok) {
      // A host that labels a .gz file Content-Encoding: gzip has had the browser inflate it.
      const body = copy.headers.has("content-encoding") ? copy.body : copy.body.pipeThrough(new DecompressionStream("gzip"));
      bytes = await new Response(body).arrayBuffer();
      how = "inflated from its .gz copy";
    } else {
      copy.body?.cancel().catch(() => {});
      hostSendsWhole = false;
      response = await networkFetch(url, { cache });
      if (!response.ok) return response;
      bytes = await response.arrayBuffer();
      how = "whole, no .gz copy";
    }
  }
  if (integrity) await checkIntegrity(url, bytes, integrity);
  return new Response(bytes, { headers: { "content-type": "application/zip", [ARCHIVE_HEADER]: how } });
}

const DIGESTS = { sha256: "SHA-256", sha384: "SHA-384", sha512: "SHA-512" };

/** Rejects, as fetch does, when no hash of `integrity` matches `bytes` (Subresource Integrity). */
async function checkIntegrity(url, bytes, integrity) {
  for (const token of integrity.trim().split(/\s+/)) {
    const [algorithm, expected] = [token.slice(0, token.indexOf("-")), token.slice(token.indexOf("-") + 1)];
    if (!(algorithm in DIGESTS)) continue;
    const digest = new Uint8Array(await crypto.subtle.digest(DIGESTS[algorithm], bytes));
    if (btoa(String.fromCharCode(...digest)) === expected) return;
  }
  throw new TypeError(`${url}: its bytes do not match the integrity hash ${integrity} (another build, or damaged on the way)`);
}
