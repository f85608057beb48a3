// Bounded set of recent 64-bit hashes with approximate LRU eviction, for the
// sender-side "recently forwarded" cache. Two generations, each an
// open-addressing table of (lo, hi) 32-bit pairs in one Uint32Array (no
// per-entry allocation, no bigint hashing): the current generation takes
// inserts until it holds capacity/2 keys, then becomes the old one and the
// previous old one is dropped. A hit in the old generation copies the key into
// the current one, so a key used at least once per capacity/2 insertions
// stays. Pair (0, 0) marks an empty slot; a real (0, 0) hash is stored as
// (1, 0) (one more possible collision in 2^64, harmless here).

export class RecentHashes {
  private cur: Uint32Array;
  private old: Uint32Array;
  private curCount = 0;
  private oldCount = 0;
  private readonly half: number;
  private readonly mask: number;

  constructor(readonly capacity: number) {
    if (!(capacity >= 2)) throw new RangeError('capacity must be ≥ 2');
    this.half = Math.floor(capacity / 2);
    // Load factor ≤ 1/2 per generation: slots = next power of two ≥ capacity.
    let slots = 4;
    while (slots < capacity) slots *= 2;
    this.mask = slots - 1;
    this.cur = new Uint32Array(slots * 2);
    this.old = new Uint32Array(slots * 2);
  }

  get size(): number {
    return this.curCount + this.oldCount;
  }

  /** Whether (lo, hi) was added recently; a hit refreshes it. */
  has(lo: number, hi: number): boolean {
    if (lo === 0 && hi === 0) lo = 1;
    if (find(this.cur, this.mask, lo, hi) >= 0) return true;
    const i = find(this.old, this.mask, lo, hi);
    if (i < 0) return false;
    this.put(lo, hi);
    return true;
  }

  /** Adds (lo, hi); returns false if it was already present. */
  add(lo: number, hi: number): boolean {
    if (lo === 0 && hi === 0) lo = 1;
    if (find(this.cur, this.mask, lo, hi) >= 0) return false;
    this.put(lo, hi);
    return true;
  }

  /** Forgets (lo, hi) (used when a write fails, so a retry is not skipped). */
  delete(lo: number, hi: number): void {
    if (lo === 0 && hi === 0) lo = 1;
    this.curCount -= remove(this.cur, this.mask, lo, hi);
    this.oldCount -= remove(this.old, this.mask, lo, hi);
  }

  private put(lo: number, hi: number): void {
    if (this.curCount >= this.half) {
      const t = this.old;
      this.old = this.cur;
      this.oldCount = this.curCount;
      t.fill(0);
      this.cur = t;
      this.curCount = 0;
    }
    let i = (lo ^ Math.imul(hi, 0x9e3779b1)) & this.mask;
    const t = this.cur;
    while (t[2 * i] !== 0 || t[2 * i + 1] !== 0) i = (i + 1) & this.mask;
    t[2 * i] = lo;
    t[2 * i + 1] = hi;
    this.curCount++;
  }
}

function find(t: Uint32Array, mask: number, lo: number, hi: number): number {
  lo >>>= 0;
  hi >>>= 0;
  let i = (lo ^ Math.imul(hi, 0x9e3779b1)) & mask;
  for (;;) {
    const a = t[2 * i]!;
    const b = t[2 * i + 1]!;
    if (a === lo && b === hi) return i;
    if (a === 0 && b === 0) return -1;
    i = (i + 1) & mask;
  }
}

// Deletes with backward-shift so linear probing stays correct; returns 1 if removed.
function remove(t: Uint32Array, mask: number, lo: number, hi: number): number {
  let i = find(t, mask, lo, hi);
  if (i < 0) return 0;
  let j = i;
  for (;;) {
    j = (j + 1) & mask;
    const a = t[2 * j]!;
    const b = t[2 * j + 1]!;
    if (a === 0 && b === 0) break;
    const home = (a ^ Math.imul(b, 0x9e3779b1)) & mask;
    // Move j back to i if its home is not cyclically in (i, j].
    if (i <= j ? home <= i || home > j : home <= i && home > j) {
      t[2 * i] = a;
      t[2 * i + 1] = b;
      i = j;
    }
  }
  t[2 * i] = 0;
  t[2 * i + 1] = 0;
  return 1;
}
