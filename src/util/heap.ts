// A binary min-heap over objects, ordered by a numeric key read through `keyOf`.
// Each item remembers its slot so it can be removed or re-keyed in O(log n).

export interface HeapSlot { heapIndex: number }

export class MinHeap<T extends HeapSlot> {
  private items: T[] = [];
  constructor(private readonly keyOf: (item: T) => number) {}

  get size(): number { return this.items.length; }
  peek(): T | undefined { return this.items[0]; }
  has(item: T): boolean { return item.heapIndex >= 0 && this.items[item.heapIndex] === item; }

  push(item: T): void {
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top === undefined) return undefined;
    this.removeAt(0);
    return top;
  }

  remove(item: T): void {
    if (this.has(item)) this.removeAt(item.heapIndex);
  }

  /** Re-establishes order after the item's key changed. */
  update(item: T): void {
    if (!this.has(item)) return;
    this.up(item.heapIndex);
    this.down(item.heapIndex);
  }

  private removeAt(i: number): void {
    const items = this.items;
    const removed = items[i]!;
    const last = items.pop()!;
    removed.heapIndex = -1;
    if (i < items.length) {
      items[i] = last;
      last.heapIndex = i;
      this.up(i);
      this.down(i);
    }
  }

  private up(i: number): void {
    const items = this.items;
    const item = items[i]!;
    const key = this.keyOf(item);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (this.keyOf(parent) <= key) break;
      items[i] = parent; parent.heapIndex = i; i = p;
    }
    items[i] = item; item.heapIndex = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i]!;
    const key = this.keyOf(item);
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.keyOf(items[r]!) < this.keyOf(items[l]!) ? r : l;
      const child = items[c]!;
      if (this.keyOf(child) >= key) break;
      items[i] = child; child.heapIndex = i; i = c;
    }
    items[i] = item; item.heapIndex = i;
  }
}
