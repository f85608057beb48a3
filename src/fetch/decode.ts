// Content-Encoding decoding under a size cap (RFC 9110 §8.4). The cap is
// applied to the decoded size, so a small gzip bomb cannot expand past it.
import zlib from 'node:zlib';

export interface Decoded {
  body: Buffer;
  /** The decoded body hit the cap and was cut. */
  truncated: boolean;
  /** The encoding was unknown or the data corrupt: body is the raw bytes. */
  error?: string;
}

export function decodeBody(raw: Buffer, contentEncoding: string | undefined, cap: number): Decoded {
  const enc = (contentEncoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return { body: raw, truncated: false };
  if (enc !== 'gzip' && enc !== 'x-gzip' && enc !== 'deflate' && enc !== 'br') {
    return { body: raw, truncated: false, error: `unsupported content-encoding ${enc}` };
  }
  try {
    return { body: decodeAll(raw, enc, cap), truncated: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return { body: decodePrefix(raw, enc, cap), truncated: true };
    return { body: raw, truncated: false, error: `corrupt ${enc} body: ${(err as Error).message}` };
  }
}

/**
 * The decoded prefix of a body whose full expansion exceeds the cap (a bomb):
 * binary search for the longest input prefix whose expansion fits, using only
 * the bounded synchronous API. Rare path; at most ~log2(raw.length) decodes.
 */
function decodePrefix(raw: Buffer, enc: string, cap: number): Buffer {
  const tryDecode = (n: number): Buffer | undefined => {
    try { return decodeAll(raw.subarray(0, n), enc, cap); } catch { return undefined; }
  };
  let lo = 0;
  let hi = raw.length;
  let best: Buffer = Buffer.alloc(0);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    const out = tryDecode(mid);
    if (out) { best = out; lo = mid; } else hi = mid - 1;
  }
  return best;
}

// Sync flush tolerates a body we cut ourselves (truncated input yields what decodes).
// RFC 9110 says deflate is zlib-wrapped; some servers send raw deflate. 0x78 is the zlib header's CMF byte.
function decodeAll(raw: Buffer, enc: string, cap: number): Buffer {
  const opts = { maxOutputLength: cap, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  if (enc === 'br') return zlib.brotliDecompressSync(raw, { maxOutputLength: cap, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
  if (enc === 'deflate') return raw[0] === 0x78 ? zlib.inflateSync(raw, opts) : zlib.inflateRawSync(raw, opts);
  return zlib.gunzipSync(raw, opts);
}
