// One place for the 64-bit hash used everywhere (URL and host fingerprints,
// shingles, ring points). xxhash-wasm needs an async instantiation; top-level
// await here makes every importer get ready-to-use synchronous functions.
import xxhash from 'xxhash-wasm';

const api = await xxhash();
const encoder = new TextEncoder();

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

/** Writes the 8 big-endian bytes of xxHash64(text) into `out` at `offset`. */
export function xxh64Into(text: string, out: Uint8Array, offset: number): void {
  const h = api.h64Raw(encoder.encode(text), 0n);
  new DataView(out.buffer, out.byteOffset, out.byteLength).setBigUint64(offset, h);
}

/** Lower 32 bits of xxHash64 as a number: cheap for hot loops that need a non-bigint. */
export function xxh64Low32(bytes: Uint8Array, seed: bigint = 0n): number {
  return Number(api.h64Raw(bytes, seed) & 0xffffffffn);
}
