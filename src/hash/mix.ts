// Integer mixing shared by SimHash (src/dedup/simhash.ts), hash tables and the synthetic web's PRNG.

/** MurmurHash3's 32-bit finaliser (Appleby, smhasher): a cheap permutation of uint32 in which every output bit depends on every input bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** mulberry32 (Tommy Ettinger): a small seeded PRNG in [0, 1), for reproducible tests, benchmarks and jitter. */
export function mulberry32(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
