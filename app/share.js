// Share links: both inputs travel in the URL fragment, deflated and base64url-encoded.
// A fragment never reaches a server, so sharing sends nothing anywhere; the cost is
// that links grow with the input, hence the limit.

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
 * Pack {a, b, options} (each input {text} or {name, bytes}) into a link fragment.
 * Layout before compression: 4-byte little-endian header length, the JSON header, then
 * the file bytes of A and B in that order, so binary files are not inflated by base64 twice.
 */
export async function encodeShare({ a, b, options }) {
  const blobs = [];
  const describe = (input) => {
    if (input.bytes) {
      blobs.push(input.bytes);
      return { name: input.name, size: input.bytes.length };
    }
    return { text: input.text };
  };
  const header = new TextEncoder().encode(JSON.stringify({ a: describe(a), b: describe(b), options }));
  const length = new Uint8Array(4);
  new DataView(length.buffer).setUint32(0, header.length, true);
  const packed = await pipe(new Blob([length, header, ...blobs]), new CompressionStream("deflate-raw"));
  if (packed.length > MAX_COMPRESSED) {
    return { ok: false, size: packed.length,
      reason: `The inputs compress to ${Math.ceil(packed.length / 1024)} kB, more than the ${MAX_COMPRESSED / 1024} kB `
        + "a share link can carry. Share the files themselves instead, or a smaller slice of the tensors." };
  }
  return { ok: true, size: packed.length, fragment: PREFIX + toBase64Url(packed) };
}

/** The inputs in a link fragment, or null when the fragment is not a share link. */
export async function decodeShare(hash) {
  if (!hash.startsWith(PREFIX)) return null;
  try {
    const packed = await pipe(fromBase64Url(hash.slice(PREFIX.length)), new DecompressionStream("deflate-raw"));
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
    return { a, b, options: header.options || {} };
  } catch {
    throw new Error("This share link is damaged and cannot be read; it may have been cut off when it was copied.");
  }
}
