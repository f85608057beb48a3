// Integer mixing shared by hash tables and the synthetic web's PRNG.

/** MurmurHash3's 32-bit finaliser (Appleby, smhasher): a cheap permutation of uint32 in which every output bit depends on every input bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
