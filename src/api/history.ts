// Bounded in-memory series the backend keeps for the API: throughput samples and
// recent errors. Fixed-size rings, so a crawl running for days holds a constant
// amount of memory and recording is O(1) with no allocation beyond the entry.
import type { RecentError, ThroughputPoint } from './backend.js';

/** A fixed-capacity ring; the oldest entry is overwritten when full. */
export class Ring<T> {
  private readonly items: (T | undefined)[];
  private next = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('Ring capacity must be a positive integer');
    this.items = new Array<T | undefined>(capacity);
  }

  get size(): number { return this.count; }

  push(item: T): void {
    this.items[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
    if (this.count < this.capacity) this.count++;
  }

  /** Entries oldest first. */
  toArray(): T[] {
    const out: T[] = [];
    const start = (this.next - this.count + this.capacity) % this.capacity;
    for (let i = 0; i < this.count; i++) out.push(this.items[(start + i) % this.capacity] as T);
    return out;
  }

  /** The `n` most recent entries, most recent first. */
  latest(n: number): T[] {
    const k = Math.min(Math.max(0, Math.floor(n)), this.count);
    const out: T[] = [];
    for (let i = 1; i <= k; i++) out.push(this.items[(this.next - i + this.capacity) % this.capacity] as T);
    return out;
  }

  /** The most recent entry. */
  last(): T | undefined {
    return this.count ? this.items[(this.next - 1 + this.capacity) % this.capacity] : undefined;
  }
}

/**
 * Cumulative fetched-page samples: call `sample(now, fetched)` about once a second
 * (a timer in the agent). Five minutes of history by default.
 */
export class ThroughputHistory {
  private readonly ring: Ring<ThroughputPoint>;

  constructor(capacity = 300) {
    this.ring = new Ring(capacity);
  }

  sample(t: number, fetched: number): void {
    this.ring.push({ t, fetched });
  }

  points(): ThroughputPoint[] {
    return this.ring.toArray();
  }

  /**
   * Pages per second over about the last `windowMs` (from the samples, plus the
   * live count `fetchedNow` at `now` if given, so the rate is current between samples).
   */
  rate(windowMs = 10_000, now?: number, fetchedNow?: number): number {
    const pts = this.ring.latest(this.ring.size);
    if (pts.length === 0) return 0;
    const endT = now ?? pts[0].t;
    const endN = fetchedNow ?? pts[0].fetched;
    let start = pts[0];
    for (const p of pts) {
      start = p;
      if (endT - p.t >= windowMs) break;
    }
    const dt = endT - start.t;
    return dt > 0 ? Math.max(0, endN - start.fetched) / (dt / 1000) : 0;
  }
}

/** The last errors, for `/status` and the dashboard. */
export class RecentErrors {
  private readonly ring: Ring<RecentError>;

  constructor(capacity = 100) {
    this.ring = new Ring(capacity);
  }

  record(kind: string, message: string, url: string | null = null, host: string | null = null, at = Date.now()): void {
    // Messages come from sockets and servers: keep them short so a flood of long ones cannot grow the ring's footprint.
    this.ring.push({ at, kind, url, host, message: message.length > 300 ? message.slice(0, 300) + '…' : message });
  }

  latest(n: number): RecentError[] {
    return this.ring.latest(n);
  }
}
