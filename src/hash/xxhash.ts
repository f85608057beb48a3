// One place for the 64-bit hash used everywhere (URL and host keys, ring
// points, the outbox's recent-URL cache). xxhash-wasm needs an async instantiation; top-level
// await here makes every importer get ready-to-use synchronous functions.
import xxhash from 'xxhash-wasm';

const api = await xxhash();

/** xxHash64 of a string's UTF-8 bytes, as an unsigned bigint. */
export function xxh64(text: string, seed: bigint = 0n): bigint {
  return api.h64(text, seed);
}

/** xxHash64 of raw bytes, as an unsigned bigint. */
export function xxh64Bytes(bytes: Uint8Array, seed: bigint = 0n): bigint {
  return api.h64Raw(bytes, seed);
}

/** xxHash64 as 16 lower-case hex digits (stable, sortable key material). */
export function xxh64Hex(text: string, seed: bigint = 0n): string {
  return api.h64ToString(text, seed);
}
