// 64-bit SimHash over word shingles (Charikar 2002, "Similarity estimation
// techniques from rounding algorithms"; applied to web pages by Manku, Jain and
// Das Sarma 2007, "Detecting near-duplicates for web crawling"), and the
// permuted-table layout from the same paper for Hamming-distance queries.
//
// Fingerprint definition (stable: every agent, and any other implementation,
// must compute the same value for the same text; version 2):
//   1. tokens = maximal runs of Unicode letters, marks and digits
//      (\p{L}\p{M}\p{N}) of text.toLowerCase(); everything else separates
//      tokens. No Unicode normalisation beyond that.
//   2. each token's UTF-16 code units u are hashed with 32-bit FNV-1a
//      (h = 0x811c9dc5, then h = (h XOR u) × 0x01000193 mod 2^32), and the
//      token gets two hashes a = fmix32(h), b = fmix32(h XOR 0x9e3779b9)
//      (fmix32: MurmurHash3's finaliser).
//   3. features = every run of `shingle` consecutive tokens (a text with fewer
//      tokens has one feature, all of them); every occurrence counts. The
//      hash of the feature t1..tm: x = y = 0, then for each token in order
//      x = rotl32(x, 11) XOR a(t), y = rotl32(y, 13) XOR b(t); its low 32
//      bits are fmix32(x XOR m), its high 32 bits fmix32(y XOR m).
//   4. bit i of the fingerprint is 1 iff more than half of the features have
//      bit i set (ties give 0). No token → 0n.
//
// Why not XXH64 of each shingle's text (version 1): a 15 KB page has ~2,500
// shingles, and a 64-bit hash per shingle in JavaScript — xxhash-wasm with a
// BigInt per call, or XXH64 in 32-bit arithmetic — cost ~120 ns each, 350–450
// µs a page: more than half the crawler's whole per-page budget. Hashing each
// token once, in the pass that finds it, and combining a shingle's token
// hashes with rotations and one fmix32 per half is one pass over the text: a
// few 32-bit multiplies per character and four per shingle. fmix32 (a
// bijection with full avalanche) keeps the 64 feature bits unbiased, which is
// what SimHash's per-bit vote needs; the rotations keep word order (a bag of
// words would match reordered pages). docs/performance.md has the figures.
//
// Hot path: one scan of the text's code units with lower-casing and the word
// test in one table lookup each (no lower-cased copy; the text may also be
// given as pieces of a larger string, simhashPieces), token hashes into
// reused typed arrays, bit votes accumulated in plain 32-bit numbers, eight
// bit positions per add (nibble then byte lanes), the low and high halves in
// separate passes — no BigInt per bit, no string or buffer per shingle.

import { fmix32 } from '../hash/mix.js';

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

/** The BMP as one string, code point c at index c (surrogates, which cannot stand alone, as spaces). */
function bmpString(): string {
  const units = new Uint16Array(0x10000);
  for (let c = 0; c < 0x10000; c++) units[c] = c >= 0xd800 && c < 0xe000 ? 0x20 : c;
  return Buffer.from(units.buffer).toString('utf16le');
}

/** Bitmap of BMP code points in \p{L}\p{M}\p{N} (0x80 up), built on first use, so the scan never runs a regex
 * per character. One regex pass over the whole BMP finds the runs of word characters: a test per code point
 * cost 70–120 ms on the first page of every process (docs/performance.md "Start-up"), this a few. */
let bmpWord: Uint8Array | null = null;
function buildBmpWord(): Uint8Array {
  const bm = new Uint8Array(8192);
  for (const m of bmpString().matchAll(/[\p{L}\p{M}\p{N}]+/gu)) {
    for (let c = Math.max(m.index!, 0x80), end = m.index! + m[0].length; c < end; c++) bm[c >> 3] |= 1 << (c & 7);
  }
  return bm;
}
function isWordCodePoint(cp: number): boolean {
  if (cp < 0x10000) {
    const bm = bmpWord ?? (bmpWord = buildBmpWord());
    return (bm[cp >> 3]! & (1 << (cp & 7))) !== 0;
  }
  return WORD_CHAR.test(String.fromCodePoint(cp)); // astral planes: rare
}

/**
 * Code units taken by the word character at s[i] (c = s.charCodeAt(i)): 1, 2
 * for a surrogate pair, 0 when it is not a letter, mark or digit.
 */
function wordUnits(s: string, i: number, c: number): number {
  if (c < 0x80) return ASCII_WORD[c]!;
  if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d < 0xe000) return isWordCodePoint(0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)) ? 2 : 0;
  }
  return isWordCodePoint(c) ? 1 : 0;
}

/** fmix32 (src/hash/mix.ts) as a signed 32-bit value (same bits): for the hot loops, which only mask, shift and store it. */
function fmix32i(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

// ---------------------------------------------------------------------------
// Reused scratch memory (single-threaded: one call at a time).

const KEEP_TOKENS = 1 << 20; // larger one-off arrays are not kept alive
let tokA = new Int32Array(1 << 13);
let tokB = new Int32Array(1 << 13);
const u64 = new BigUint64Array(2);
const u32 = new Uint32Array(u64.buffer);
// Index of the low/high 32-bit word of u64[0] inside u32 (platform endianness).
const LO = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 0 : 1;
const HI = 1 - LO;
/** Byte-lane vote accumulators, as handed to flushLanes8: lane l of acc[j] counts bit 8l + j of a 32-bit half. */
const acc = new Int32Array(8);
/** Votes per fingerprint bit, 0..63 (bit 0 = least significant). */
const votes = new Float64Array(64);

function flushLanes8(at: number): void {
  for (let j = 0; j < 8; j++) {
    const a = acc[j]!;
    votes[at + j] += a & 0xff; votes[at + 8 + j] += (a >>> 8) & 0xff;
    votes[at + 16 + j] += (a >>> 16) & 0xff; votes[at + 24 + j] += a >>> 24;
  }
}

/** Steps 1 and 2: the tokens of the lower-cased `s`, their two hashes into ta and tb; returns the count. */
function scan(s: string, ta: Int32Array, tb: Int32Array): number {
  const len = s.length;
  let n = 0;
  let i = 0;
  while (i < len) {
    let c = s.charCodeAt(i);
    let w = c < 0x80 ? ASCII_WORD[c]! : wordUnits(s, i, c);
    if (w === 0) { i++; continue; }
    let a = 0x811c9dc5 | 0;
    for (;;) {
      a = Math.imul(a ^ c, 0x01000193);
      if (w === 2) a = Math.imul(a ^ s.charCodeAt(i + 1), 0x01000193);
      i += w;
      if (i >= len) break;
      c = s.charCodeAt(i);
      w = c < 0x80 ? ASCII_WORD[c]! : wordUnits(s, i, c);
      if (w === 0) break;
    }
    ta[n] = fmix32(a);
    tb[n] = fmix32(a ^ 0x9e3779b9);
    n++;
  }
  return n;
}

// ---------------------------------------------------------------------------
// Fast scanner: lower-casing and the word test in one table lookup per code
// unit, with no lower-cased copy of the text, and usable on pieces of a
// string (the text nodes the HTML parser saw, src/parse/html.ts) as well as
// on one string. It must give exactly the tokens of step 1 on
// text.toLowerCase(): String.prototype.toLowerCase is a per-code-point map
// (Unicode default case conversion) except for Final_Sigma (Σ → ς at a word
// end, SpecialCasing.txt) and a few one-to-many mappings (U+0130 → i̇); a text
// with any of those takes the reference path above (toLowerCase, then scan).

/** Per UTF-16 code unit: 0 = not a word character, LW_SLOW = needs the
 * reference path, LW_SURR = a surrogate (pairs are looked at in context);
 * otherwise the lower-cased unit, which is a word character. */
const LW_SLOW = 1;
const LW_SURR = 2;
const LW = new Uint16Array(65536);
for (let c = 48; c <= 57; c++) LW[c] = c;
for (let c = 65; c <= 90; c++) LW[c] = c + 32;
for (let c = 97; c <= 122; c++) LW[c] = c;
// The rest of the table is built on the first non-ASCII unit a scan meets (a text of ASCII only, such as a test's
// pages, never needs it): until then every such unit reads as LW_SURR, which hands it to special(), which builds it.
LW.fill(LW_SURR, 0x80);
let lwFull = false;
/**
 * Fills the non-ASCII part of LW (once). Lower-cased a block of code points at a time: toLowerCase maps each
 * code point on its own except Final_Sigma (Σ, taken apart here anyway) and the one-to-many mappings, which make
 * a block's lower case longer; such a block is done one code point at a time. Per code point with a regex test,
 * this took 30–120 CPU-ms at every start (docs/performance.md "Start-up").
 */
function buildLw(): void {
  lwFull = true;
  const bmp = bmpString();
  const bm = bmpWord ?? (bmpWord = buildBmpWord());
  const BLOCK = 256;
  for (let b = 0; b < 0x10000; b += BLOCK) {
    if (b >= 0xd800 && b < 0xe000) continue; // surrogates (whole blocks) stay LW_SURR
    const lower = bmp.slice(b, b + BLOCK).toLowerCase();
    const aligned = lower.length === BLOCK;
    for (let c = Math.max(b, 0x80); c < b + BLOCK; c++) {
      let lc: number;
      if (aligned) lc = lower.charCodeAt(c - b);
      else {
        const l = String.fromCharCode(c).toLowerCase();
        lc = l.length === 1 ? l.charCodeAt(0) : -1; // U+0130 → 2 units
      }
      LW[c] = lc < 0 || c === 0x03a3 || (lc >= 0xd800 && lc < 0xe000) ? LW_SLOW // Σ: Final_Sigma
        : (lc < 0x80 ? ASCII_WORD[lc] === 1 : (bm[lc >> 3]! & (1 << (lc & 7))) !== 0) ? lc : 0;
    }
  }
}

/** Lower-cased astral code point when it is a word character, 0 when not, -1 for the reference path. */
const astralLower = new Map<number, number>();
function lowerAstral(cp: number): number {
  let v = astralLower.get(cp);
  if (v === undefined) {
    const l = String.fromCodePoint(cp).toLowerCase();
    const lc = l.codePointAt(0)!;
    v = l.length !== 2 || lc < 0x10000 ? -1 : isWordCodePoint(lc) ? lc : 0;
    if (astralLower.size < 4096) astralLower.set(cp, v);
  }
  return v;
}

/** Scanner state across pieces: tokens so far, the open token's FNV state. */
let sN = 0;
let sIn = false;
let sH = 0;
/** Token hash arrays of the scan in progress (capacity checked by the caller). */
let sTa = tokA, sTb = tokB;

function ensureTokens(maxTokens: number): void {
  let ta = tokA, tb = tokB;
  if (ta.length < maxTokens) {
    ta = new Int32Array(maxTokens);
    tb = new Int32Array(maxTokens);
    if (maxTokens <= KEEP_TOKENS) { tokA = ta; tokB = tb; }
  }
  sTa = ta; sTb = tb;
  sN = 0; sIn = false; sH = 0;
}

function endToken(): void {
  if (!sIn) return;
  sTa[sN] = fmix32(sH);
  sTb[sN] = fmix32(sH ^ 0x9e3779b9);
  sN++;
  sIn = false;
}

/**
 * Steps 1–2 over s[start, end), continuing the token left open by the
 * previous piece (no separator between pieces: the caller ends the token
 * where its text has a word break). False when the text needs the reference
 * path (see above); `edges`: a lone surrogate at either end of the piece
 * might pair with a neighbouring piece, so it also asks for the reference path.
 */
function scanPiece(s: string, start: number, end: number, edges: boolean): boolean {
  let i = start;
  for (;;) {
    i = scanRun(s, i, end);
    if (i < 0) return true;
    i = special(s, i, start, end, edges);
    if (i < 0) return false;
  }
}

/**
 * The common case of scanPiece: from s[i] up to the end (returns -1) or up
 * to a LW_SLOW or surrogate unit (returns its index). State in sN/sIn/sH.
 */
function scanRun(s: string, i: number, end: number): number {
  const lw = LW, ta = sTa, tb = sTb;
  let n = sN, a = sH, inTok = sIn, l = 0;
  for (;;) {
    if (inTok) {
      // The rest of the open token.
      for (; i < end; i++) {
        l = lw[s.charCodeAt(i)]!;
        if (l <= LW_SURR) break;
        a = Math.imul(a ^ l, 0x01000193);
      }
      if (i >= end) break;
      if (l !== 0) { sN = n; sIn = true; sH = a; return i; }
      ta[n] = fmix32i(a); tb[n] = fmix32i(a ^ 0x9e3779b9); n++;
      inTok = false;
      i++;
    }
    // Separators, up to the next token.
    for (; i < end; i++) {
      l = lw[s.charCodeAt(i)]!;
      if (l !== 0) break;
    }
    if (i >= end) break;
    if (l <= LW_SURR) { sN = n; sIn = false; sH = a; return i; }
    a = Math.imul(0x811c9dc5 ^ l, 0x01000193);
    inTok = true;
    i++;
  }
  sN = n; sIn = inTok; sH = a;
  return -1;
}

/**
 * One LW_SLOW or surrogate unit at s[i] (rare, so plain): the index to go on
 * from, or -1 for the reference path.
 */
function special(s: string, i: number, start: number, end: number, edges: boolean): number {
  if (!lwFull) { buildLw(); return i; } // the first non-ASCII unit: scan it again with the whole table
  const c = s.charCodeAt(i);
  if (LW[c] === LW_SLOW) return -1;
  // A surrogate: a pair is one code point (lower-cased as one), a lone one separates.
  const d = i + 1 < end ? s.charCodeAt(i + 1) : 0;
  if (c < 0xdc00 && d >= 0xdc00 && d < 0xe000) {
    const lc = lowerAstral(0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00));
    if (lc < 0) return -1;
    if (lc === 0) { endToken(); return i + 2; }
    if (!sIn) { sIn = true; sH = 0x811c9dc5 | 0; }
    sH = Math.imul(sH ^ (0xd800 + ((lc - 0x10000) >> 10)), 0x01000193);
    sH = Math.imul(sH ^ (0xdc00 + ((lc - 0x10000) & 0x3ff)), 0x01000193);
    return i + 2;
  }
  // A lone surrogate at the edge of a piece may pair with the neighbouring piece's.
  if (edges && ((c < 0xdc00 && i + 1 === end) || (c >= 0xdc00 && i === start))) return -1;
  endToken();
  return i + 1;
}

/** Steps 3–4 over the n token hashes in ta/tb. */
function vote(ta: Int32Array, tb: Int32Array, n: number, k: number): bigint {
  if (n === 0) return 0n;
  votes.fill(0);
  const features = n >= k ? n - k + 1 : 1;
  const span = n >= k ? k : n;
  // The low and the high 32 bits of the feature hashes depend on ta and on tb
  // only: two passes of eight accumulators each stay in registers.
  votePass(ta, features, span, 11, 0);
  votePass(tb, features, span, 13, 32);
  let lo = 0, hi = 0;
  for (let b = 0; b < 32; b++) {
    if (votes[b]! * 2 > features) lo |= 1 << b;
    if (votes[32 + b]! * 2 > features) hi |= 1 << b;
  }
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
}

/**
 * Adds to votes[at .. at + 31] the bits of fmix32(x XOR span) for every
 * feature, x = the feature's tokens' hashes t[j] folded with rotl32(x, rot).
 */
function votePass(t: Int32Array, features: number, span: number, rot: number, at: number): void {
  const back = 32 - rot;
  const rot2 = (2 * rot) & 31, back2 = 32 - rot2;
  // Two levels of lane counters (bit-parallel adds, no per-bit loop): nibble
  // lane l of nj counts bit 4l + j (≤ 15, so moved on every 15 features);
  // byte lane l of cj counts bit 8l + j (≤ 255, so flushed every 255).
  let c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0, c6 = 0, c7 = 0;
  for (let i = 0; i < features;) {
    const stop255 = Math.min(features, i + 255);
    while (i < stop255) {
      const stop = Math.min(stop255, i + 15);
      let n0 = 0, n1 = 0, n2 = 0, n3 = 0;
      for (; i < stop; i++) {
        let x: number;
        if (span === 3) {
          // rotl(rotl(t0, r) ^ t1, r) ^ t2 = rotl(t0, 2r) ^ rotl(t1, r) ^ t2
          const t0 = t[i]!, t1 = t[i + 1]!;
          x = ((t0 << rot2) | (t0 >>> back2)) ^ ((t1 << rot) | (t1 >>> back)) ^ t[i + 2]!;
        } else {
          x = 0;
          for (let j = i, end = i + span; j < end; j++) x = ((x << rot) | (x >>> back)) ^ t[j]!;
        }
        const h = fmix32i(x ^ span);
        // `| 0`: the lane sums reach 2^32 - 1, past int32; wrapping keeps every bit
        // and lets the JIT keep them in 32-bit registers instead of doubles.
        n0 = (n0 + (h & 0x11111111)) | 0; n1 = (n1 + ((h >>> 1) & 0x11111111)) | 0;
        n2 = (n2 + ((h >>> 2) & 0x11111111)) | 0; n3 = (n3 + ((h >>> 3) & 0x11111111)) | 0;
      }
      c0 = (c0 + (n0 & 0x0f0f0f0f)) | 0; c4 = (c4 + ((n0 >>> 4) & 0x0f0f0f0f)) | 0;
      c1 = (c1 + (n1 & 0x0f0f0f0f)) | 0; c5 = (c5 + ((n1 >>> 4) & 0x0f0f0f0f)) | 0;
      c2 = (c2 + (n2 & 0x0f0f0f0f)) | 0; c6 = (c6 + ((n2 >>> 4) & 0x0f0f0f0f)) | 0;
      c3 = (c3 + (n3 & 0x0f0f0f0f)) | 0; c7 = (c7 + ((n3 >>> 4) & 0x0f0f0f0f)) | 0;
    }
    acc[0] = c0; acc[1] = c1; acc[2] = c2; acc[3] = c3; acc[4] = c4; acc[5] = c5; acc[6] = c6; acc[7] = c7;
    flushLanes8(at);
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = 0;
  }
}

function shingleOf(opts: SimhashOptions | undefined): number {
  const k = opts?.shingle ?? DEFAULT_SHINGLE;
  return k >= 1 ? Math.floor(k) : 1;
}

/** The reference path: step 1 literally (toLowerCase of the whole text), then scan. */
function simhashReference(text: string, k: number): bigint {
  const s = text.toLowerCase();
  // A token and its separator take ≥ 2 code units, bar the last.
  ensureTokens((s.length >> 1) + 1);
  const n = scan(s, sTa, sTb);
  return vote(sTa, sTb, n, k);
}

/**
 * 64-bit SimHash of `text` (see the definition at the top of this file).
 * Returns 0n for a text without any letter or digit.
 */
export function simhash64(text: string, opts?: SimhashOptions): bigint {
  const k = shingleOf(opts);
  if (typeof text !== 'string' || text.length === 0) return 0n;
  ensureTokens((text.length >> 1) + 1);
  if (!scanPiece(text, 0, text.length, false)) return simhashReference(text, k);
  endToken();
  return vote(sTa, sTb, sN, k);
}

/** Record tags of a text-piece list (see {@link simhashPieces}). */
export const PIECE_ENTITY = -1;
export const PIECE_BREAK = -2;

/**
 * The visible text as pieces of the decoded page (simhashPieces's arguments), as src/parse/html.ts leaves it:
 * `pieces` index `text`, the page as the parser decoded it. The string is
 * copied to the fingerprint thread rather than the bytes decoded again there:
 * decoding a 20 KB page with a few non-ASCII letters costs ≈ 30 µs (V8 builds
 * a two-byte string one code point at a time), copying it ≈ 8 µs more on the
 * main thread and a memcpy on the other (docs/performance.md "Crawl").
 */
export interface FingerprintJob { text: string; pieces: Int32Array; count: number }

/**
 * simhash64 of a text given as pieces of `src`, without building it: `pieces`
 * holds `count` pairs — [start, end) of a run of src, [PIECE_ENTITY, code
 * point] for one decoded character, [PIECE_BREAK, 0] for a word break (a
 * space) — and the text is their concatenation. Equal to simhash64 of that
 * text (this is how the HTML parser fingerprints a page's visible text,
 * src/parse/html.ts). Null when the text has a character whose lower case
 * depends on context (Σ, …) or a surrogate split between pieces: build the
 * text and call simhash64 then.
 */
export function simhashPieces(src: string, pieces: Int32Array, count: number, opts?: SimhashOptions): bigint | null {
  const k = shingleOf(opts);
  let units = 0;
  for (let p = 0; p < count; p++) {
    const a = pieces[2 * p]!;
    units += a >= 0 ? pieces[2 * p + 1]! - a : 2;
  }
  ensureTokens((units >> 1) + count + 1);
  for (let p = 0; p < count; p++) {
    const a = pieces[2 * p]!, b = pieces[2 * p + 1]!;
    if (a === PIECE_BREAK) { endToken(); continue; }
    if (a === PIECE_ENTITY) {
      if (b >= 0xd800 && b < 0xe000) return null;
      const e = String.fromCodePoint(b);
      if (!scanPiece(e, 0, e.length, true)) return null;
      continue;
    }
    if (!scanPiece(src, a, b, true)) return null;
  }
  endToken();
  return vote(sTa, sTb, sN, k);
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
