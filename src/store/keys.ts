// Key layouts shared by the seen-set and the frontier (docs/storage.md):
// a host's entries share an 8-byte host-hash prefix, so all of them form one
// key range that can be scanned, counted or handed off to another agent.
import { xxh64 } from '../hash/xxhash.js';

export const HOST_KEY_BYTES = 8;

/** 8-byte big-endian xxhash64 of the lower-cased host name (port excluded). */
export function hostKey(host: string): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(xxh64(host));
  return b;
}

/** 16-byte seen-set key: host hash ‖ url hash. */
export function seenKey(hostKeyBytes: Buffer, url: string): Buffer {
  const b = Buffer.allocUnsafe(16);
  hostKeyBytes.copy(b, 0, 0, 8);
  b.writeBigUInt64BE(xxh64(url), 8);
  return b;
}

/** The smallest key greater than every key starting with `prefix` (exclusive upper bound of its range). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) { end[i]!++; return end.subarray(0, i + 1); }
  }
  // All 0xff: no finite bound; callers use an open range instead.
  return Buffer.alloc(prefix.length + 1, 0xff);
}

/**
 * 24-byte recrawl due-index key: due time (u64 BE epoch ms) ‖ seen key (host
 * hash ‖ url hash). Sorted by time first, so everything due by `t` is the one
 * range below dueKey(t + 1, …) (src/recrawl/recrawler.ts).
 */
export function dueKey(dueAt: number, seenKeyBytes: Buffer): Buffer {
  const b = Buffer.allocUnsafe(24);
  b.writeBigUInt64BE(BigInt(Math.max(0, Math.ceil(dueAt))), 0);
  seenKeyBytes.copy(b, 8, 0, 16);
  return b;
}
