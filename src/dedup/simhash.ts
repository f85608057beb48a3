// 64-bit SimHash over word shingles (Charikar 2002, "Similarity estimation
// techniques from rounding algorithms"; applied to web pages by Manku, Jain and
// Das Sarma 2007, "Detecting near-duplicates for web crawling"), and the
// permuted-table layout from the same paper for Hamming-distance queries.
//
// Fingerprint definition (stable: every agent, and any other implementation,
// must compute the same value for the same text):
//   1. tokens  = maximal runs of Unicode letters, marks and digits
//                (\p{L}\p{M}\p{N}) of text.toLowerCase(); everything else
//                separates tokens. No Unicode normalisation beyond that.
//   2. features = every run of `shingle` consecutive tokens, as the UTF-8 bytes
//                of the tokens joined by one space (U+0020); a text with fewer
//                tokens than `shingle` has one feature, all its tokens. Every
//                occurrence counts (term-frequency weights).
//   3. each feature is hashed with XXH64, seed 0 (src/hash/xxhash.ts).
//   4. bit b of the fingerprint is 1 iff more than half of the features have
//      bit b set (ties give 0). No token → 0n.
//
// Hot path: the text is lower-cased and UTF-8 encoded once into a reused
// buffer, compacted in place into the canonical "tok tok tok" form, and each
// shingle is hashed straight from that buffer. Bit votes are accumulated in
// plain 32-bit numbers, eight bit positions per add (byte lanes), never as a
// BigInt per bit.

import { xxh64Bytes } from '../hash/xxhash.js';

/** Words per shingle by default. 3 keeps word order (a bag of words would
 * match reordered pages) while one edited word touches only 3 features. */
export const DEFAULT_SHINGLE = 3;

export interface SimhashOptions {
  /** Consecutive words per feature (≥ 1). Default {@link DEFAULT_SHINGLE}. */
  shingle?: number;
}

// ---------------------------------------------------------------------------
// Tokeniser tables.

/** ASCII: 1 = letter or digit (after lower-casing, so only a-z and 0-9 matter,
 * but A-Z is kept for texts that were not lower-cased by the caller). */
const ASCII_WORD = new Uint8Array(128);
for (let c = 48; c <= 57; c++) ASCII_WORD[c] = 1;
for (let c = 65; c <= 90; c++) ASCII_WORD[c] = 1;
for (let c = 97; c <= 122; c++) ASCII_WORD[c] = 1;

const WORD_CHAR = /[\p{L}\p{M}\p{N}]/u;
/** Bitmap of BMP code points in \p{L}\p{M}\p{N}, built on the first non-ASCII
 * character seen (~10 ms once), so the scan never runs a regex per character. */
let bmpWord: Uint8Array | null = null;
function buildBmpWord(): Uint8Array {
  const bm = new Uint8Array(8192);
  for (let c = 0x80; c < 0x10000; c++) {
    if (c >= 0xd800 && c < 0xe000) continue;
    if (WORD_CHAR.test(String.fromCharCode(c))) bm[c >> 3] |= 1 << (c & 7);
  }
  return bm;
}
function isWordCodePoint(cp: number): boolean {
  if (cp < 0x10000) {
    const bm = bmpWord ?? (bmpWord = buildBmpWord());
    return (bm[cp >> 3] & (1 << (cp & 7))) !== 0;
  }
  return WORD_CHAR.test(String.fromCodePoint(cp)); // astral planes: rare
}

// ---------------------------------------------------------------------------
// Reused scratch memory (single-threaded: one call at a time).

const encoder = new TextEncoder();
const KEEP_BYTES = 1 << 22; // larger one-off buffers are not kept alive
let bytes = new Uint8Array(1 << 16);
let starts = new Int32Array(1 << 14);
const u64 = new BigUint64Array(2);
const u32 = new Uint32Array(u64.buffer);
// Index of the low/high 32-bit word of u64[0] inside u32 (platform endianness).
const LO = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 0 : 1;
const HI = 1 - LO;
/** Byte-lane vote accumulators: lane l of acc[j] counts bit 8l + j of the low
 * word (acc[0..7]) or of the high word (acc[8..15]). Lanes hold ≤ 255. */
const acc = new Int32Array(16);
/** Votes per fingerprint bit, 0..63 (bit 0 = least significant). */
const votes = new Float64Array(64);

function flushLanes(): void {
  for (let j = 0; j < 8; j++) {
    const a = acc[j], b = acc[8 + j];
    votes[j] += a & 0xff; votes[8 + j] += (a >>> 8) & 0xff;
    votes[16 + j] += (a >>> 16) & 0xff; votes[24 + j] += a >>> 24;
    votes[32 + j] += b & 0xff; votes[40 + j] += (b >>> 8) & 0xff;
    votes[48 + j] += (b >>> 16) & 0xff; votes[56 + j] += b >>> 24;
    acc[j] = 0; acc[8 + j] = 0;
  }
}

/**
 * Canonicalises `text` into `buf` as lower-case tokens joined by single spaces
 * and records each token's start offset in `starts` (plus a sentinel one past
 * the end, as if a space followed the last token). Returns the token count.
 */
function canonicalise(text: string): { buf: Uint8Array; n: number; st: Int32Array } {
  const lower = text.toLowerCase();
  const need = lower.length * 3 + 1;
  let buf = bytes;
  if (buf.length < need) {
    buf = new Uint8Array(need);
    if (need <= KEEP_BYTES) bytes = buf;
  }
  const len = encoder.encodeInto(lower, buf).written;
  // Token starts: at most one per two bytes (token + separator) plus sentinel.
  let st = starts;
  const maxTokens = (len >> 1) + 2;
  if (st.length < maxTokens) {
    st = new Int32Array(maxTokens);
    if (maxTokens <= KEEP_BYTES >> 1) starts = st;
  }
  let n = 0;
  let w = 0; // write position (≤ read position: compaction in place)
  let inWord = false;
  let r = 0;
  while (r < len) {
    const b = buf[r];
    let cpLen = 1;
    let word: boolean;
    if (b < 0x80) {
      word = ASCII_WORD[b] === 1;
    } else {
      // encodeInto output is well-formed UTF-8.
      let cp: number;
      if (b < 0xe0) { cp = ((b & 0x1f) << 6) | (buf[r + 1] & 0x3f); cpLen = 2; }
      else if (b < 0xf0) { cp = ((b & 0x0f) << 12) | ((buf[r + 1] & 0x3f) << 6) | (buf[r + 2] & 0x3f); cpLen = 3; }
      else { cp = ((b & 0x07) << 18) | ((buf[r + 1] & 0x3f) << 12) | ((buf[r + 2] & 0x3f) << 6) | (buf[r + 3] & 0x3f); cpLen = 4; }
      word = isWordCodePoint(cp);
    }
    if (word) {
      if (!inWord) {
        if (n > 0) buf[w++] = 0x20;
        st[n++] = w;
        inWord = true;
      }
      for (let i = 0; i < cpLen; i++) buf[w++] = buf[r + i];
    } else {
      inWord = false;
    }
    r += cpLen;
  }
  st[n] = w + 1; // sentinel: token n-1 ends at st[n] - 1
  return { buf, n, st };
}

/**
 * 64-bit SimHash of `text` (see the definition at the top of this file).
 * Returns 0n for a text without any letter or digit.
 */
export function simhash64(text: string, opts?: SimhashOptions): bigint {
  let k = opts?.shingle ?? DEFAULT_SHINGLE;
  if (!(k >= 1)) k = 1;
  k = Math.floor(k);
  if (typeof text !== 'string' || text.length === 0) return 0n;
  const { buf, n, st } = canonicalise(text);
  if (n === 0) return 0n;
  votes.fill(0);
  acc.fill(0);
  const features = n >= k ? n - k + 1 : 1;
  const span = n >= k ? k : n;
  let pending = 0;
  for (let i = 0; i < features; i++) {
    const from = st[i];
    const to = st[i + span] - 1;
    u64[0] = xxh64Bytes(buf.subarray(from, to));
    const lo = u32[LO], hi = u32[HI];
    acc[0] += lo & 0x01010101; acc[1] += (lo >>> 1) & 0x01010101;
    acc[2] += (lo >>> 2) & 0x01010101; acc[3] += (lo >>> 3) & 0x01010101;
    acc[4] += (lo >>> 4) & 0x01010101; acc[5] += (lo >>> 5) & 0x01010101;
    acc[6] += (lo >>> 6) & 0x01010101; acc[7] += (lo >>> 7) & 0x01010101;
    acc[8] += hi & 0x01010101; acc[9] += (hi >>> 1) & 0x01010101;
    acc[10] += (hi >>> 2) & 0x01010101; acc[11] += (hi >>> 3) & 0x01010101;
    acc[12] += (hi >>> 4) & 0x01010101; acc[13] += (hi >>> 5) & 0x01010101;
    acc[14] += (hi >>> 6) & 0x01010101; acc[15] += (hi >>> 7) & 0x01010101;
    if (++pending === 255) { flushLanes(); pending = 0; }
  }
  flushLanes();
  let lo = 0, hi = 0;
  for (let b = 0; b < 32; b++) {
    if (votes[b] * 2 > features) lo |= 1 << b;
    if (votes[32 + b] * 2 > features) hi |= 1 << b;
  }
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
}

/** Number of 1 bits of a 32-bit integer (SWAR popcount). */
export function popcount32(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/** Hamming distance between two 64-bit fingerprints (no BigInt arithmetic). */
export function hamming64(a: bigint, b: bigint): number {
  u64[0] = BigInt.asUintN(64, a);
  u64[1] = BigInt.asUintN(64, b);
  return popcount32(u32[0] ^ u32[2]) + popcount32(u32[1] ^ u32[3]);
}

/** A fingerprint as 16 lower-case hex digits. */
export function simhashHex(fp: bigint): string {
  return BigInt.asUintN(64, fp).toString(16).padStart(16, '0');
}

/** Parses 1–16 hex digits (optionally `0x`-prefixed) back to a fingerprint; null if malformed. */
export function parseSimhashHex(hex: string): bigint | null {
  const m = /^(?:0x)?([0-9a-fA-F]{1,16})$/.exec(hex);
  return m ? BigInt('0x' + m[1]) : null;
}

// ---------------------------------------------------------------------------
// Permuted-table index layout (Manku, Jain, Das Sarma 2007, §3).
//
// To find every stored fingerprint within Hamming distance k of a query, split
// the 64 bits into k + 1 blocks: k differing bits leave at least one block
// identical (pigeonhole). Table t stores each fingerprint with its bits
// permuted so that the blocks chosen for t come first; a query then reads, in
// each table, only the entries whose leading `prefixBits` equal the query's
// (one ordered range read), and checks the Hamming distance of those.

/** One table: the fingerprint's blocks in the order they are laid out in the
 * permuted key. A block is [first bit, width], bits counted from the most
 * significant (bit 0 = MSB). The blocks cover all 64 bits exactly once. */
export interface SimhashTable {
  readonly id: number;
  readonly blocks: ReadonlyArray<readonly [start: number, width: number]>;
}

export interface SimhashLayout {
  /** Largest Hamming distance for which a query is guaranteed to find every match. */
  readonly maxDistance: number;
  /** Leading bits of the permuted fingerprint that must match exactly. */
  readonly prefixBits: number;
  readonly tables: readonly SimhashTable[];
}

function blocksOf(width: number, from: number, count: number): Array<readonly [number, number]> {
  return Array.from({ length: count }, (_, i) => [from + i * width, width] as const);
}

/**
 * A layout from equal blocks: the 64 bits cut into `blocks` blocks (64 must be
 * a multiple of it), and one table per choice of `exact` blocks, which lead
 * the key (in order), followed by the other blocks in order. Complete up to
 * maxDistance = blocks − exact: that many differing bits leave at least
 * `exact` blocks identical. Examples: (4, 1) → 4 tables, 16-bit prefix, k = 3
 * (the default); (8, 2) → 28 tables, 16-bit prefix, k = 6; (8, 3) → 56
 * tables, 24-bit prefix, k = 5.
 */
export function simhashLayout(blocks: number, exact: number): SimhashLayout {
  if (!Number.isInteger(blocks) || blocks < 2 || 64 % blocks !== 0) throw new RangeError('blocks must divide 64');
  if (!Number.isInteger(exact) || exact < 1 || exact >= blocks) throw new RangeError('exact must be in 1..blocks-1');
  const width = 64 / blocks;
  const all = blocksOf(width, 0, blocks);
  const tables: SimhashTable[] = [];
  const pick = (from: number, chosen: number[]): void => {
    if (chosen.length === exact) {
      const lead = chosen.map((i) => all[i]);
      const rest = all.filter((_, i) => !chosen.includes(i));
      if (tables.length > 255) throw new RangeError('more than 256 tables');
      tables.push(Object.freeze({ id: tables.length, blocks: Object.freeze([...lead, ...rest]) }));
      return;
    }
    for (let i = from; i < blocks; i++) pick(i + 1, [...chosen, i]);
  };
  pick(0, []);
  return Object.freeze({ maxDistance: blocks - exact, prefixBits: exact * width, tables: Object.freeze(tables) });
}

/**
 * Default layout: k = 3, four 16-bit blocks, four tables; table t leads with
 * block t, then the other blocks in order. A query = 4 range reads of a 16-bit
 * prefix each (≈ N / 65 536 candidates per table for N fingerprints).
 */
export const SIMHASH_TABLES: SimhashLayout = simhashLayout(4, 1);

/**
 * Larger layout for big indexes (the paper's two-level scheme): first one of
 * four 16-bit blocks, then one of four 12-bit blocks of the remaining 48 bits:
 * 16 tables with a 28-bit exact prefix (≈ N / 2^28 candidates per table).
 * Prefixes are not byte-aligned: use {@link candidateRanges}.
 */
export const SIMHASH_TABLES_16: SimhashLayout = Object.freeze({
  maxDistance: 3,
  prefixBits: 28,
  tables: Object.freeze(
    (() => {
      const out: SimhashTable[] = [];
      const big = blocksOf(16, 0, 4);
      for (let a = 0; a < 4; a++) {
        // Remaining 48 bits (in order), cut into four 12-bit blocks.
        const rest: Array<readonly [number, number]> = [];
        for (let i = 0; i < 4; i++) if (i !== a) rest.push(big[i]);
        const bits: number[] = [];
        for (const [s, w] of rest) for (let i = 0; i < w; i++) bits.push(s + i);
        const twelve: Array<Array<readonly [number, number]>> = [];
        for (let q = 0; q < 4; q++) twelve.push(runs(bits.slice(q * 12, q * 12 + 12)));
        for (let b = 0; b < 4; b++) {
          const blocks = [big[a], ...twelve[b]];
          for (let q = 0; q < 4; q++) if (q !== b) blocks.push(...twelve[q]);
          out.push(Object.freeze({ id: out.length, blocks: Object.freeze(blocks) }));
        }
      }
      return out;
    })(),
  ),
});

/** Bit positions (ascending) → maximal contiguous [start, width] runs. */
function runs(bits: number[]): Array<readonly [number, number]> {
  const out: Array<readonly [number, number]> = [];
  let s = bits[0], w = 1;
  for (let i = 1; i < bits.length; i++) {
    if (bits[i] === s + w) w++;
    else { out.push([s, w]); s = bits[i]; w = 1; }
  }
  out.push([s, w]);
  return out;
}

const MASK64 = (1n << 64n) - 1n;

/** The fingerprint with its bits laid out in table `table`'s order. */
export function permute(fp: bigint, table: SimhashTable): bigint {
  fp &= MASK64;
  let out = 0n;
  let pos = 0;
  for (const [start, width] of table.blocks) {
    const v = (fp >> BigInt(64 - start - width)) & ((1n << BigInt(width)) - 1n);
    pos += width;
    out |= v << BigInt(64 - pos);
  }
  return out;
}

/** Inverse of {@link permute}. */
export function unpermute(perm: bigint, table: SimhashTable): bigint {
  perm &= MASK64;
  let out = 0n;
  let pos = 0;
  for (const [start, width] of table.blocks) {
    pos += width;
    const v = (perm >> BigInt(64 - pos)) & ((1n << BigInt(width)) - 1n);
    out |= v << BigInt(64 - start - width);
  }
  return out;
}

/** Bytes of a table key: 1 table-id byte + 8 bytes of permuted fingerprint (big-endian). */
export const TABLE_KEY_BYTES = 9;

/**
 * The index keys of a fingerprint, one per table: `[table id][permuted fp, 8
 * bytes BE]`. Keys of one table sort by permuted fingerprint, so the entries
 * sharing a query's leading block(s) are one contiguous range. A store that
 * needs unique keys appends the document id after these 9 bytes.
 */
export function tableKeys(fp: bigint, layout: SimhashLayout = SIMHASH_TABLES): Buffer[] {
  return layout.tables.map((t) => {
    const key = Buffer.allocUnsafe(TABLE_KEY_BYTES);
    key[0] = t.id;
    key.writeBigUInt64BE(permute(fp, t), 1);
    return key;
  });
}

/** Recovers the fingerprint from a table key (or a longer key starting with one); null if malformed. */
export function fingerprintFromKey(key: Uint8Array, layout: SimhashLayout = SIMHASH_TABLES): bigint | null {
  if (key.length < TABLE_KEY_BYTES) return null;
  const table = layout.tables[key[0]];
  if (table === undefined || table.id !== key[0]) return null;
  const perm = Buffer.from(key.buffer, key.byteOffset, key.byteLength).readBigUInt64BE(1);
  return unpermute(perm, table);
}

/**
 * Per table, the key prefix to range-read for a query: `[table id]` followed
 * by the leading ⌊prefixBits / 8⌋ bytes of the permuted query. For the default
 * layout (16 bits) that is exactly the set of candidates; for a layout whose
 * prefix is not byte-aligned it is a superset (prefer {@link candidateRanges}).
 */
export function candidatePrefixes(fp: bigint, layout: SimhashLayout = SIMHASH_TABLES): Buffer[] {
  const n = 1 + (layout.prefixBits >> 3);
  return tableKeys(fp, layout).map((k) => k.subarray(0, n));
}

/** An ordered range of table keys: every key k with gte ≤ k < lt (bytewise). */
export interface KeyRange {
  readonly table: number;
  readonly gte: Buffer;
  readonly lt: Buffer;
}

/**
 * Per table, the exact key range holding every fingerprint whose leading
 * `prefixBits` (after permutation) equal the query's. Maps 1:1 onto an ordered
 * range read (`db.iterator({ gte, lt })`); works for any prefix width.
 */
export function candidateRanges(fp: bigint, layout: SimhashLayout = SIMHASH_TABLES): KeyRange[] {
  const shift = BigInt(64 - layout.prefixBits);
  return layout.tables.map((t) => {
    const prefix = permute(fp, t) >> shift;
    const gte = Buffer.allocUnsafe(TABLE_KEY_BYTES);
    gte[0] = t.id;
    gte.writeBigUInt64BE(prefix << shift, 1);
    const next = prefix + 1n;
    let lt: Buffer;
    if (next >> BigInt(layout.prefixBits) !== 0n) {
      lt = Buffer.from([t.id + 1]); // prefix was all ones: the range runs to the end of the table
    } else {
      lt = Buffer.allocUnsafe(TABLE_KEY_BYTES);
      lt[0] = t.id;
      lt.writeBigUInt64BE(next << shift, 1);
    }
    return { table: t.id, gte, lt };
  });
}

// ---------------------------------------------------------------------------
// In-memory reference index.

interface Bucket<Id> {
  hi: number[];
  lo: number[];
  ids: Id[];
}

export interface SimhashMatch<Id> {
  id: Id;
  distance: number;
}

/**
 * In-memory permuted-table index: one hash map per table from the permuted
 * prefix to the fingerprints sharing it. The reference for the LevelDB-backed
 * index (same layout, same answers) and handy for small crawls and tests.
 */
export class SimhashIndex<Id = string> {
  readonly layout: SimhashLayout;
  private readonly tables: Array<Map<number, Bucket<Id>>>;
  private readonly shift: bigint;
  private count = 0;

  constructor(layout: SimhashLayout = SIMHASH_TABLES) {
    if (layout.prefixBits < 1 || layout.prefixBits > 52) throw new RangeError('prefixBits must be in 1..52');
    this.layout = layout;
    this.tables = layout.tables.map(() => new Map());
    this.shift = BigInt(64 - layout.prefixBits);
  }

  /** Number of (fingerprint, id) entries. */
  get size(): number {
    return this.count;
  }

  add(fp: bigint, id: Id): void {
    fp &= MASK64;
    u64[0] = fp;
    const hi = u32[HI], lo = u32[LO];
    const ts = this.layout.tables;
    for (let i = 0; i < ts.length; i++) {
      const p = Number(permute(fp, ts[i]) >> this.shift);
      let b = this.tables[i].get(p);
      if (b === undefined) this.tables[i].set(p, (b = { hi: [], lo: [], ids: [] }));
      b.hi.push(hi); b.lo.push(lo); b.ids.push(id);
    }
    this.count++;
  }

  /** Removes one (fingerprint, id) entry; false if absent. */
  delete(fp: bigint, id: Id): boolean {
    fp &= MASK64;
    u64[0] = fp;
    const hi = u32[HI], lo = u32[LO];
    const ts = this.layout.tables;
    let found = false;
    for (let i = 0; i < ts.length; i++) {
      const p = Number(permute(fp, ts[i]) >> this.shift);
      const b = this.tables[i].get(p);
      if (b === undefined) continue;
      for (let j = 0; j < b.ids.length; j++) {
        if (b.hi[j] === hi && b.lo[j] === lo && b.ids[j] === id) {
          b.hi.splice(j, 1); b.lo.splice(j, 1); b.ids.splice(j, 1);
          if (b.ids.length === 0) this.tables[i].delete(p);
          found = true;
          break;
        }
      }
    }
    if (found) this.count--;
    return found;
  }

  /**
   * Every id whose fingerprint is within `maxDistance` of `fp`, each once with
   * its smallest distance, closest first. Complete for maxDistance ≤
   * layout.maxDistance; beyond that it returns only what the tables reach.
   */
  query(fp: bigint, maxDistance = this.layout.maxDistance): SimhashMatch<Id>[] {
    fp &= MASK64;
    u64[0] = fp;
    const qhi = u32[HI], qlo = u32[LO];
    const best = new Map<Id, number>();
    const ts = this.layout.tables;
    for (let i = 0; i < ts.length; i++) {
      const b = this.tables[i].get(Number(permute(fp, ts[i]) >> this.shift));
      if (b === undefined) continue;
      for (let j = 0; j < b.ids.length; j++) {
        const d = popcount32(b.hi[j] ^ qhi) + popcount32(b.lo[j] ^ qlo);
        if (d <= maxDistance) {
          const prev = best.get(b.ids[j]);
          if (prev === undefined || d < prev) best.set(b.ids[j], d);
        }
      }
    }
    const out: SimhashMatch<Id>[] = [];
    for (const [id, distance] of best) out.push({ id, distance });
    out.sort((a, b) => a.distance - b.distance);
    return out;
  }
}
