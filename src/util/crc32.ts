// CRC-32 (ISO 3309, the polynomial of ZIP and gzip, RFC 1952 §8), incremental:
// crc32(b, crc32(a)) === crc32(a ‖ b). node:zlib's native crc32 where the runtime has
// it (Node ≥ 20.15), else a table-driven one.
import * as zlib from 'node:zlib';

let table: Uint32Array | null = null;

function makeTable(): Uint32Array {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
}

/** The table version, also the reference the native one is tested against. */
export function crc32Table(data: Uint8Array, prev = 0): number {
  const t = (table ??= makeTable());
  let c = (prev ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const native = (zlib as unknown as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

export function crc32(data: Uint8Array, prev = 0): number {
  return native ? native(data, prev) >>> 0 : crc32Table(data, prev);
}
