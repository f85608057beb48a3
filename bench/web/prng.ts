// Small integer hashing and a seeded PRNG for the synthetic web. Everything in
// the generated web is a pure function of (seed, host, page, salt), so two
// processes with the same options build byte-identical sites without sharing
// state, and nothing has to be stored per page.

import { fmix32 } from '../../src/hash/mix.js';

export { fmix32 };

/** Hash of up to four integers (order-sensitive). */
export function hash4(a: number, b: number, c = 0, d = 0): number {
  let h = fmix32((a ^ 0x9e3779b9) >>> 0);
  h = fmix32((h ^ Math.imul(b | 0, 0xcc9e2d51)) >>> 0);
  h = fmix32((h ^ Math.imul(c | 0, 0x1b873593)) >>> 0);
  h = fmix32((h ^ Math.imul(d | 0, 0xe6546b64)) >>> 0);
  return h;
}

/** Uniform float in [0, 1) from a 32-bit hash. */
export function unit(h: number): number {
  return h / 4294967296;
}

/** FNV-1a over a string, for turning a string seed into a number. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h >>> 0);
}

/** Seed option (number or string) to a uint32. */
export function seedToInt(seed: number | string): number {
  if (typeof seed === 'number' && Number.isInteger(seed)) return ((seed >>> 0) ^ (Math.floor(seed / 4294967296) >>> 0)) >>> 0;
  return hashString(String(seed));
}

/** mulberry32: tiny, fast, good enough for test data (not for cryptography). */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  /** Next uint32. */
  u32(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  /** Float in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }
  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  /** Integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
}
