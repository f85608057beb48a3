// Bounded gzip decompression for sitemap files (sitemaps.org: a sitemap "may
// be compressed using gzip"; the 50 MiB limit applies to the uncompressed
// size). Never more than `maxOutput` bytes are produced, whatever the input
// claims: a gzip bomb costs a bounded amount of CPU and memory.

import { gunzipSync, constants } from 'node:zlib';

export interface GunzipOutcome {
  /** Decompressed bytes (at most `maxOutput`); null if the input is not valid gzip. */
  bytes: Uint8Array | null;
  /** True if the full output would exceed `maxOutput` and `bytes` is a prefix of it. */
  truncated: boolean;
  /** True if the gzip stream ends early (a cut download): `bytes` is what it holds. */
  incomplete: boolean;
}

export function isGzip(b: Uint8Array): boolean {
  return b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
}

function tooLarge(e: unknown): boolean {
  return (e as { code?: string } | null)?.code === 'ERR_BUFFER_TOO_LARGE';
}

/**
 * Decompresses `input` into at most `maxOutput` bytes. A stream that ends
 * early (a download cut short) is decompressed again with `Z_SYNC_FLUSH` as
 * the finishing flush, which yields what it holds instead of an error.
 *
 * zlib's `maxOutputLength` aborts without returning the partial output, so
 * when the cap is hit the prefix is recovered by decompressing a prefix of the
 * input sized from the compression ratio of a small probe: at most four more
 * bounded runs, then it gives up with an empty, truncated result.
 */
export function gunzipBounded(input: Uint8Array, maxOutput: number): GunzipOutcome {
  const cap = Math.max(0, Math.floor(maxOutput));
  const whole = { maxOutputLength: Math.max(1, cap) };
  const opts = { maxOutputLength: Math.max(1, cap), finishFlush: constants.Z_SYNC_FLUSH };
  let incomplete = false;
  try {
    const out = gunzipSync(input, whole);
    if (out.length <= cap) return { bytes: out, truncated: false, incomplete };
    return { bytes: out.subarray(0, cap), truncated: true, incomplete };
  } catch (e) {
    if (!tooLarge(e)) {
      // A stream that ends early ("unexpected end of file") is worth reading up
      // to where it stops; anything else is corrupt.
      if ((e as { code?: string } | null)?.code !== 'Z_BUF_ERROR') return { bytes: null, truncated: false, incomplete };
      incomplete = true;
      try {
        const out = gunzipSync(input, opts);
        return { bytes: out.subarray(0, cap), truncated: out.length > cap, incomplete };
      } catch (e2) {
        if (!tooLarge(e2)) return { bytes: null, truncated: false, incomplete };
      }
    }
  }
  // The output is larger than the cap. Estimate the ratio on a small probe.
  let probeLen = Math.min(input.length, 4096);
  let ratio = 0;
  for (let i = 0; i < 4 && probeLen > 16; i++) {
    try {
      const p = gunzipSync(input.subarray(0, probeLen), opts);
      ratio = p.length / probeLen;
      break;
    } catch (e) {
      if (!tooLarge(e)) return { bytes: new Uint8Array(0), truncated: true, incomplete };
      probeLen >>= 2;
    }
  }
  let len = ratio > 0 ? Math.floor((cap / ratio) * 0.9) : input.length >> 1;
  for (let attempt = 0; attempt < 3 && len > 16; attempt++) {
    try {
      const out = gunzipSync(input.subarray(0, Math.min(len, input.length)), opts);
      return { bytes: out.subarray(0, cap), truncated: true, incomplete };
    } catch (e) {
      if (!tooLarge(e)) break;
      len >>= 1;
    }
  }
  return { bytes: new Uint8Array(0), truncated: true, incomplete };
}
