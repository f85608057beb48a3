// URL patterns for per-pattern budgets, and the bounded counter table that
// holds the budgets.
//
// Pattern of a URL = host + path and query with numbers abstracted: every
// maximal run of ASCII letters and digits that is all hex digits and holds at
// least one digit becomes '#' (ids, hashes, UUID parts, dates), and in any
// other run each run of digits becomes '#' ("page3" → "page#"). So
//   /cal/2024/05/17?page=3     → /cal/#/#/#?page=#
//   /item/5f3e9a0c             → /item/#
//   /2019/05/a-title           → /#/#/a-title   (titles keep pages apart)
// An endless calendar or pager is one pattern; the ordinary pages of a site are
// spread over many.
import { fmix32 } from '../hash/mix.js';

/** Characters of the abstracted path + query are written here (reused). */
let scratch = new Uint16Array(4096);
const HEX = new Uint8Array(128);
const ALNUM = new Uint8Array(128);
for (let c = 48; c <= 57; c++) { HEX[c] = 1; ALNUM[c] = 1; }
for (let c = 65; c <= 90; c++) ALNUM[c] = 1;
for (let c = 97; c <= 122; c++) ALNUM[c] = 1;
for (const c of 'abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;
const HASH = 0x23; // '#'

/** Index where the path of an absolute URL starts (after scheme://authority), or the length. */
export function pathStartOf(url: string): number {
  const ss = url.indexOf('://');
  let i = ss >= 0 ? ss + 3 : url.indexOf(':') + 1;
  const n = url.length;
  if (ss < 0) return i;
  while (i < n) {
    const c = url.charCodeAt(i);
    if (c === 0x2f || c === 0x3f || c === 0x23) break;
    i++;
  }
  return i;
}

/**
 * Writes the abstracted form of url[from, to) into the scratch buffer and
 * returns its length. Stops at a '#' fragment.
 */
function abstractInto(url: string, from: number, to: number): number {
  if (scratch.length < to - from) scratch = new Uint16Array(to - from);
  const out = scratch;
  let w = 0;
  let i = from;
  while (i < to) {
    const c = url.charCodeAt(i);
    if (c === 0x23) break; // fragment
    if (c < 128 && ALNUM[c] === 1) {
      // A run of letters/digits.
      let j = i;
      let allHex = true, digit = false;
      while (j < to) {
        const d = url.charCodeAt(j);
        if (d >= 128 || ALNUM[d] === 0) break;
        if (HEX[d] === 0) allHex = false;
        else if (d <= 57) digit = true;
        j++;
      }
      if (allHex && digit) {
        out[w++] = HASH;
      } else {
        let inDigits = false;
        for (let k = i; k < j; k++) {
          const d = url.charCodeAt(k);
          if (d <= 57) {
            if (!inDigits) out[w++] = HASH;
            inDigits = true;
          } else {
            out[w++] = d;
            inDigits = false;
          }
        }
      }
      i = j;
    } else {
      out[w++] = c;
      i++;
    }
  }
  return w;
}

/** The pattern of a URL as a string (host + abstracted path and query). For logs and tests. */
export function urlPattern(url: string, host: string): string {
  const n = abstractInto(url, pathStartOf(url), url.length);
  let s = host;
  for (let i = 0; i < n; i += 4096) s += String.fromCharCode(...scratch.subarray(i, Math.min(n, i + 4096)));
  return s;
}

// Two independent 32-bit string hashes, computed together in one pass, in
// local variables only (module-level number variables would box).
// h1: FNV-1a; h2: a rotate-xor-multiply hash; both finished with murmur3's
// fmix32 so that the low bits (the table index) depend on every input bit.


const SEED1 = 0x811c9dc5 | 0;
const SEED2 = 0x2545f491;

/** Hashes a host (as given) into `out` [h1, h2]. */
export function hostHashes(host: string, out: Uint32Array): void {
  let h1 = SEED1, h2 = SEED2;
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(((h2 << 5) | (h2 >>> 27)) ^ c, 0x9e3779b1);
  }
  out[0] = fmix32(h1);
  out[1] = fmix32(h2 ^ 0x5bd1e995);
}

/**
 * Hashes the pattern of `url` (host, a separator, abstracted path and query)
 * into `out` [h1, h2] without building the pattern string.
 */
export function patternHashes(url: string, host: string, out: Uint32Array, pathStart = pathStartOf(url)): void {
  let h1 = SEED1 ^ 0x9747b28c, h2 = SEED2 ^ 0x27d4eb2f;
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(((h2 << 5) | (h2 >>> 27)) ^ c, 0x9e3779b1);
  }
  h1 = Math.imul(h1 ^ 0x0a, 0x01000193);
  h2 = Math.imul(((h2 << 5) | (h2 >>> 27)) ^ 0x0a, 0x9e3779b1);
  const n = abstractInto(url, pathStart, url.length);
  const a = scratch;
  for (let i = 0; i < n; i++) {
    const c = a[i];
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(((h2 << 5) | (h2 >>> 27)) ^ c, 0x9e3779b1);
  }
  out[0] = fmix32(h1);
  out[1] = fmix32(h2 ^ 0x5bd1e995);
}

/**
 * Fixed-size approximate counters: a count-min sketch (Cormode & Muthukrishnan
 * 2005) with two rows and conservative update. Memory is 2 × slots × 4 bytes
 * whatever the number of keys. An estimate is never below the true count; it
 * is above it only when both of a key's slots are shared with heavier keys,
 * which for a budget means being turned away early — rare with enough slots
 * (e.g. 2^18 slots, 10,000 keys at their budget: ≈ 0.15 % of keys affected).
 */
export class CountMin {
  readonly slots: number;
  private readonly mask: number;
  private readonly row0: Uint32Array;
  private readonly row1: Uint32Array;

  constructor(slots: number) {
    // Round up to a power of two in 2^4..2^26.
    let s = 16;
    while (s < slots && s < 1 << 26) s <<= 1;
    this.slots = s;
    this.mask = s - 1;
    this.row0 = new Uint32Array(s);
    this.row1 = new Uint32Array(s);
  }

  estimate(h1: number, h2: number): number {
    const a = this.row0[h1 & this.mask], b = this.row1[h2 & this.mask];
    return a < b ? a : b;
  }

  /** Adds one occurrence (conservative update: only counters below the new estimate grow). */
  increment(h1: number, h2: number): void {
    const i = h1 & this.mask, j = h2 & this.mask;
    const a = this.row0[i], b = this.row1[j];
    const next = (a < b ? a : b) + 1;
    if (a < next) this.row0[i] = next;
    if (b < next) this.row1[j] = next;
  }

  clear(): void {
    this.row0.fill(0);
    this.row1.fill(0);
  }

  /** Raw counters (row 0 then row 1), for persisting. */
  snapshot(): Uint32Array {
    const out = new Uint32Array(2 * this.slots);
    out.set(this.row0, 0);
    out.set(this.row1, this.slots);
    return out;
  }

  /** Restores a snapshot of the same size; false (and no change) otherwise. */
  restore(data: Uint32Array): boolean {
    if (data.length !== 2 * this.slots) return false;
    this.row0.set(data.subarray(0, this.slots));
    this.row1.set(data.subarray(this.slots));
    return true;
  }
}
