// Bounded set of recent 64-bit keys with approximate LRU eviction: two
// generations, the current one filled until it holds capacity/2 keys, then
// it becomes the old one and the oldest generation is dropped. A hit in the
// old generation moves the key to the current one, so a key used at least
// once per capacity/2 insertions stays. O(1), no per-entry linked list.

export class RecentSet {
  private cur = new Set<bigint>();
  private old = new Set<bigint>();
  private readonly half: number;

  constructor(readonly capacity: number) {
    if (!(capacity >= 2)) throw new RangeError('capacity must be ≥ 2');
    this.half = Math.floor(capacity / 2);
  }

  has(k: bigint): boolean {
    if (this.cur.has(k)) return true;
    if (this.old.has(k)) {
      this.old.delete(k);
      this.insert(k);
      return true;
    }
    return false;
  }

  add(k: bigint): void {
    if (this.cur.has(k)) return;
    this.old.delete(k);
    this.insert(k);
  }

  delete(k: bigint): void {
    this.cur.delete(k);
    this.old.delete(k);
  }

  get size(): number {
    return this.cur.size + this.old.size;
  }

  private insert(k: bigint): void {
    if (this.cur.size >= this.half) {
      this.old = this.cur;
      this.cur = new Set();
    }
    this.cur.add(k);
  }
}
