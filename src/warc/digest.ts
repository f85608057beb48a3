// Labelled digests for WARC-Block-Digest / WARC-Payload-Digest (WARC/1.1 §5.8, §5.9:
// `labelled-digest = algorithm ":" digest-value`).
//
// We write `sha1:` or `sha256:` (`--warc-digest`, docs/warc.md "Digests") + RFC 4648
// base32 (upper case, '=' padded). That is exactly what Python warcio's Digester
// prints and compares against (its `check` command and DigestVerifyingReader accept
// base32/base16/base64), what warcio.js writes with `digest: { base32: true }`, and
// what Heritrix and Common Crawl write for sha1. Hashing uses node:crypto (OpenSSL,
// SHA-NI here): ~10 µs for 15 KB, against ~55 µs for the hash-wasm hasher warcio
// would otherwise instantiate.
import { createHash, hash } from 'node:crypto';

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 §6 base32, upper case, with '=' padding. */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (let i = 0; i < bytes.length; i++) {
    value = (value << 8) | bytes[i];
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

/** Inverse of base32(); case-insensitive, padding optional. null when not base32. */
export function unbase32(text: string): Uint8Array | null {
  const s = text.replace(/=+$/, '').toUpperCase();
  const out = new Uint8Array(Math.floor((s.length * 5) / 8));
  let bits = 0;
  let value = 0;
  let j = 0;
  for (let i = 0; i < s.length; i++) {
    const v = B32.indexOf(s[i]);
    if (v < 0) return null;
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out[j++] = (value >>> (bits - 8)) & 255;
      bits -= 8;
    }
  }
  return out;
}

/** The digest algorithms a crawl can write (`--warc-digest`). */
export const DIGEST_ALGOS = ['sha1', 'sha256'] as const;
export type DigestAlgo = (typeof DIGEST_ALGOS)[number];

/** `<algo>:<BASE32>` of the concatenation of `parts` (WARC/1.1 §5.8 labelled-digest). */
export function labelledDigest(algo: DigestAlgo, ...parts: Uint8Array[]): string {
  // One part (a payload, a request head): the one-shot form, without a Hash object (1–2 µs less a call).
  if (parts.length === 1) return algo + ':' + base32(hash(algo, parts[0]!, 'buffer'));
  const h = createHash(algo);
  for (const p of parts) h.update(p);
  return algo + ':' + base32(h.digest());
}

/** `sha256:<BASE32>` of the concatenation of `parts`. */
export function sha256Label(...parts: Uint8Array[]): string {
  return labelledDigest('sha256', ...parts);
}

/** Empty-payload digest, constant (request records have no body). */
export const EMPTY_SHA256 = sha256Label();
const EMPTY: Record<DigestAlgo, string> = { sha1: labelledDigest('sha1'), sha256: EMPTY_SHA256 };

/** The digest of no bytes, per algorithm (constant). */
export function emptyDigest(algo: DigestAlgo): string {
  return EMPTY[algo] ?? EMPTY_SHA256;
}

const ALGOS: Record<string, { node: string; len: number }> = {
  sha1: { node: 'sha1', len: 20 },
  'sha-1': { node: 'sha1', len: 20 },
  sha256: { node: 'sha256', len: 32 },
  'sha-256': { node: 'sha256', len: 32 },
  sha512: { node: 'sha512', len: 64 },
  'sha-512': { node: 'sha512', len: 64 },
  md5: { node: 'md5', len: 16 },
};

/**
 * Parses any labelled digest other tools write (base32, hex or base64 value) into
 * the node:crypto algorithm name and raw bytes; null when it cannot be understood.
 */
export function parseDigest(label: string): { algo: string; bytes: Uint8Array } | null {
  const colon = label.indexOf(':');
  if (colon <= 0) return null;
  const algo = ALGOS[label.slice(0, colon).trim().toLowerCase()];
  if (!algo) return null;
  const value = label.slice(colon + 1).trim();
  const tries: Array<() => Uint8Array | null> = [
    () => unbase32(value),
    () => (/^[0-9a-fA-F]+$/.test(value) ? Buffer.from(value, 'hex') : null),
    () => (/^[A-Za-z0-9+/_-]+=*$/.test(value) ? Buffer.from(value, 'base64') : null),
  ];
  for (const t of tries) {
    const b = t();
    if (b && b.length === algo.len) return { algo: algo.node, bytes: b };
  }
  return null;
}

/** True when `label` is the digest of the concatenated parts (any algorithm/encoding above). */
export function digestMatches(label: string, ...parts: Uint8Array[]): boolean {
  const d = parseDigest(label);
  if (!d) return false;
  const h = createHash(d.algo);
  for (const p of parts) h.update(p);
  return Buffer.compare(h.digest(), d.bytes) === 0;
}
