// Share links: the inputs (A, B and the optional reference) travel in the URL fragment,
// deflated and base64url-encoded. A fragment never reaches a server, so sharing sends
// nothing anywhere; the cost is that links grow with the input, hence the limit.

const PREFIX = "#v1=";
/** Largest compressed payload put in a link; longer URLs break in chat tools and browsers. */
export const MAX_COMPRESSED = 100 * 1024;

async function pipe(bytes, stream) {
  const out = new Response(new Blob([bytes]).stream().pipeThrough(stream));
  return new Uint8Array(await out.arrayBuffer());
}

function toBase64Url(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64Url(text) {
  const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * Deflate {a, b, ref?, options} (each input {text} or {name, bytes}). Layout before
 * compression: 4-byte little-endian header length, the JSON header, then the file bytes of
 * A, B and the reference in that order, so binary files are not inflated by base64 twice.
 */
async function pack(inputs) {
  const blobs = [];
  const header = { options: inputs.options };
  for (const key of ["a", "b", "ref"].filter((k) => inputs[k])) {
    const input = inputs[key];
    if (input.bytes) {
      blobs.push(input.bytes);
      header[key] = { name: input.name, size: input.bytes.length };
    } else {
      header[key] = { text: input.text };
    }
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const length = new Uint8Array(4);
  new DataView(length.buffer).setUint32(0, json.length, true);
  return pipe(new Blob([length, json, ...blobs]), new CompressionStream("deflate-raw"));
}

const kB = (bytes) => Math.ceil(bytes / 1024);

/**
 * Pack the inputs into a link fragment. The reference is optional evidence, so when it is
 * what pushes the link over the limit it is left out and `note` says so; A and B are the
 * comparison itself, so when they do not fit there is no link and `reason` says why.
 */
export async function encodeShare({ a, b, ref = null, options }) {
  const withRef = ref ? await pack({ a, b, ref, options }) : null;
  if (withRef && withRef.length <= MAX_COMPRESSED) {
    return { ok: true, size: withRef.length, fragment: PREFIX + toBase64Url(withRef), note: null };
  }
  const packed = await pack({ a, b, options });
  if (packed.length > MAX_COMPRESSED) {
    // Past what a link can carry, the same bytes travel as a file the page opens.
    return { ok: false, size: packed.length, bundle: withRef ?? packed,
      reason: `The inputs compress to ${kB(packed.length)} kB, more than the ${kB(MAX_COMPRESSED)} kB `
        + "a share link can carry." };
  }
  const note = withRef
    ? `The reference was left out: with it the inputs compress to ${kB(withRef.length)} kB, more than the `
      + `${kB(MAX_COMPRESSED)} kB a share link can carry, so the link opens A and B without it.`
    : null;
  return { ok: true, size: packed.length, fragment: PREFIX + toBase64Url(packed), note };
}

/** The inputs in a link fragment, or null when the fragment is not a share link. */
export async function decodeShare(hash) {
  if (!hash.startsWith(PREFIX)) return null;
  let deflated;
  try {
    deflated = fromBase64Url(hash.slice(PREFIX.length));
  } catch {
    throw new Error("This share link is damaged and cannot be read; it may have been cut off when it was copied.");
  }
  return decodeBundle(deflated, "This share link is damaged and cannot be read; it may have been cut off when it was copied.");
}

/** A `.perpendis` file: the bytes a share link would carry, unencoded, for inputs too big for a link. */
export const BUNDLE_EXTENSION = ".perpendis";

/** The inputs in a bundle's bytes (a link's payload, before base64url); `damaged` is the
 * message of the error when they cannot be read. */
export async function decodeBundle(deflated, damaged = "This .perpendis file is damaged and cannot be read.") {
  try {
    const packed = await pipe(deflated, new DecompressionStream("deflate-raw"));
    const length = new DataView(packed.buffer, packed.byteOffset).getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(packed.subarray(4, 4 + length)));
    let offset = 4 + length;
    const restore = (input) => {
      if (input.text !== undefined) return { text: input.text };
      const bytes = packed.slice(offset, offset + input.size);
      offset += input.size;
      return { name: input.name, bytes };
    };
    const a = restore(header.a);
    const b = restore(header.b);
    const ref = header.ref ? restore(header.ref) : null;
    return { a, b, ref, options: header.options || {} };
  } catch {
    throw new Error(damaged);
  }
}
