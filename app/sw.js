// Service worker: after one visit the page starts with no network at all, and a warm start
// asks the network only for what may have changed. build.py publishes it as dist/sw.js (the
// site root, so its scope covers the page) with this build's files written over BUILD.
//
// Strategy: every file of the build is asked from the network first, so a new build shows at
// once, and taken from this worker's cache when the network fails or hangs. Pyodide's own
// files (marked immutable: byte for byte as released) never reach the network that way: the
// server lets the browser's HTTP cache keep them for a year, and answering from there rather
// than from this cache keeps V8's compiled-code cache for the 1.2 MB runtime script and the
// WebAssembly (measured: warm start 1.87 s cache first, 1.44 s this way; 1.34 s with no
// service worker). Each build has its own cache, filled at install with integrity-checked
// bytes, so the cache always holds one consistent build; activating a build deletes the
// caches of older ones.

const BUILD = { version: "unbuilt", files: [] }; // build.py: files

// fetchArchive: the zip archives, from their gzip'd copies when the host compresses nothing.
importScripts("app/archives.js");

const CACHE_PREFIX = "perpendis-";
const CACHE = CACHE_PREFIX + BUILD.version;
// Past this wait for response headers the network counts as down (a captive portal or a
// dead link can hang far longer than a refused connection).
const NETWORK_TIMEOUT_MS = 4000;
const SCOPE = new URL("./", self.location.href);
const PAGE = new URL("index.html", SCOPE).href;
const FILES = new Map(BUILD.files.map((file) => [new URL(file.path, SCOPE).href, file]));

self.addEventListener("install", (event) => {
  event.waitUntil(precache().then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name.startsWith(CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
      }
      // Controls the page that registered it, so the first visit is already enough.
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const { request } = event;
  if (request.method !== "GET") return;
  const key = cacheKey(request);
  if (!FILES.has(key)) return; // not part of the build: the browser handles it as if there were no service worker
  event.respondWith(networkFirst(key, request));
});

/** The build's URL a request stands for: any navigation to the root or index.html is the page. */
function cacheKey(request) {
  const url = new URL(request.url);
  url.hash = "";
  if (request.mode === "navigate") {
    url.search = "";
    if (url.href === SCOPE.href) return PAGE;
  }
  return url.href;
}

async function precache() {
  const cache = await caches.open(CACHE);
  await Promise.all(
    BUILD.files.map(async (file) => {
      const url = new URL(file.path, SCOPE).href;
      // The integrity check rejects bytes of another build (deployed since this sw.js was
      // fetched): installing then fails, and the next visit installs the right build.
      // Immutable files may come from the HTTP cache (the page has just loaded them).
      const init = { integrity: file.integrity, cache: file.immutable ? "default" : "no-cache" };
      const response = await (isArchive(url) ? fetchArchive(url, init) : fetch(url, init));
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      await cache.put(url, response);
    }),
  );
}

async function cached(key) {
  return (await caches.open(CACHE)).match(key);
}

async function networkFirst(key, request) {
  const network = isArchive(key) ? fetchArchive(key, { integrity: request.integrity }) : fetch(request);
  network.catch(() => {}); // answered from the cache, a late failure is nobody's concern
  let response = null;
  try {
    response = await Promise.race([
      network,
      new Promise((_, reject) => setTimeout(() => reject(new Error("network timeout")), NETWORK_TIMEOUT_MS)),
    ]);
    if (response.ok) return response;
  } catch {
    // offline, refused or timed out: the cached copy below answers
  }
  const copy = await cached(key);
  if (copy) return copy;
  if (response) return response; // the server's own error
  // Nothing cached yet (this worker is still installing): a slow answer is still an answer.
  return network.catch(() => Response.error());
}
