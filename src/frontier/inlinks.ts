// In-link hints for the frontier's priority (priority.ts, `inlinkBonus`): how
// many pages were recently seen linking to a URL, counted for every link the
// seen-set reports, new or already known, in a fixed amount of memory.
//
// A count-min sketch (Cormode & Muthukrishnan 2005) with conservative update
// (Estan & Varghese 2002): two rows of saturating 8-bit counters indexed by two
// independent 32-bit words of the URL's hash; the estimate is the smaller of
// its two counters, and an add raises only the counters below estimate + 1. It
// never under-counts; collisions can only over-count. To keep that bounded on
// a long crawl, every counter is halved after 10 × width adds (TinyLFU's
// "reset", Einziger, Friedman & Manes 2017): the count becomes a recent
// in-link rate, which is what a crawl order wants anyway. Counts live in
// memory only: after a restart they start again from zero (it is a hint).
//
// Pure: no I/O; the agent feeds it seen keys and acts on the crossings.

/** Counters per row (2^21): 4 MiB for both rows. */
const DEFAULT_WIDTH_BITS = 21;
const MAX = 255;

export class InlinkCounter {
  private readonly rowA: Uint8Array;
  private readonly rowB: Uint8Array;
  private readonly mask: number;
  private readonly resetEvery: number;
  private adds = 0;
  /** Times every counter was halved. */
  resets = 0;

  constructor(widthBits = DEFAULT_WIDTH_BITS) {
    const bits = Math.max(4, Math.min(28, Math.floor(widthBits)));
    const width = 1 << bits;
    this.rowA = new Uint8Array(width);
    this.rowB = new Uint8Array(width);
    this.mask = width - 1;
    this.resetEvery = 10 * width;
  }

  get bytes(): number { return this.rowA.byteLength + this.rowB.byteLength; }

  /** The estimate before the last `add` (no object per call: adds run once per link). */
  lastBefore = 0;

  /**
   * One more page links to the URL whose 16-byte seen key (host hash ‖ URL
   * hash, src/store/keys.ts) is `key`; returns the estimated count after it.
   * It may exceed `lastBefore + 1` when a colliding URL raised both counters.
   */
  add(key: Uint8Array): number {
    // The URL hash's two 32-bit words index the rows (xxhash64: independent enough).
    const a = (((key[8]! << 24) | (key[9]! << 16) | (key[10]! << 8) | key[11]!) >>> 0) & this.mask;
    const b = (((key[12]! << 24) | (key[13]! << 16) | (key[14]! << 8) | key[15]!) >>> 0) & this.mask;
    const ca = this.rowA[a]!, cb = this.rowB[b]!;
    const before = ca < cb ? ca : cb;
    const after = before < MAX ? before + 1 : MAX;
    if (ca < after) this.rowA[a] = after;
    if (cb < after) this.rowB[b] = after;
    if (++this.adds >= this.resetEvery) this.halve();
    this.lastBefore = before;
    return after;
  }

  /** The current estimate for the URL with seen key `key`. */
  count(key: Uint8Array): number {
    const a = (((key[8]! << 24) | (key[9]! << 16) | (key[10]! << 8) | key[11]!) >>> 0) & this.mask;
    const b = (((key[12]! << 24) | (key[13]! << 16) | (key[14]! << 8) | key[15]!) >>> 0) & this.mask;
    const ca = this.rowA[a]!, cb = this.rowB[b]!;
    return ca < cb ? ca : cb;
  }

  private halve(): void {
    this.adds = 0;
    this.resets++;
    for (const row of [this.rowA, this.rowB]) for (let i = 0; i < row.length; i++) row[i] = row[i]! >>> 1;
  }
}
