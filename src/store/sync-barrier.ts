// A synced LevelDB write that makes every write completed before it durable
// against a power loss: LevelDB appends all writes to one log, and a write with
// `sync: true` fsyncs that log before it returns. Used where something is
// acknowledged to another machine (a peer's URL batch, docs/storage.md
// "Durability window") and the writes that stored it were not synced themselves.
//
// Callers that arrive together share one synced write; a caller arriving while
// one is in flight waits for the next (its own writes may have landed after the
// one in flight was issued).
import type { Sublevel } from './db.js';

export class SyncBarrier {
  private inFlight: Promise<void> | undefined;
  private next: Promise<void> | undefined;
  private counter = 0;
  /** Synced writes made (for benchmarks and tests). */
  syncs = 0;

  /** `meta`: where the barrier's one key is written. */
  constructor(private readonly meta: Sublevel, private readonly key = Buffer.from('sync-barrier')) {}

  /** Resolves once every write that completed before this call is fsynced. */
  sync(): Promise<void> {
    if (!this.inFlight) return (this.inFlight = this.write());
    if (!this.next) {
      const after = this.inFlight.catch(() => {});
      this.next = after.then(() => { this.next = undefined; return (this.inFlight = this.write()); });
    }
    return this.next;
  }

  private write(): Promise<void> {
    const v = Buffer.allocUnsafe(8);
    v.writeDoubleBE(++this.counter);
    this.syncs++;
    const put = (this.meta as unknown as { put(k: Buffer, v: Buffer, o: { sync: boolean }): Promise<void> }).put(this.key, v, { sync: true });
    const done: Promise<void> = put.finally(() => { if (this.inFlight === done) this.inFlight = undefined; });
    return done;
  }
}
