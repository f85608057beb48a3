// Per-host bookkeeping of ownership that must outlive a restart (docs/mesh.md "Replicated frontier"): the
// hosts this agent knows only by seen entries (handed over, no frontier state: a later handoff and the
// successors' catch-up must include them), and the hosts whose replica seen entries it holds, with their
// sender (passed on to the host's new owner should that sender go). Both were kept in memory only: an
// agent restarted with its data dir still held the entries but no longer knew to pass them on, so the
// host's next owner fetched those pages again.
//
// A Map, so its users read it as one; every change is also written to `meta` under a key prefix,
// coalesced into one write per turn of the event loop. Not in the same write as the seen entries it
// describes: losing the last turn's changes to a crash costs what the in-memory maps cost on every
// restart before — a page fetched again, never one lost.
import type { Sublevel } from '../store/db.js';
import { prefixEnd } from '../store/keys.js';

export interface DurableHostMapOptions<V> {
  /** Where the entries live (the store's `meta`). */
  sublevel: Sublevel;
  /** Key prefix of this map's entries in it. */
  prefix: string;
  encode(host: string, value: V): Buffer;
  /** The value for a stored entry, or undefined to skip it (malformed). */
  decode(host: string, stored: Buffer): V | undefined;
  /** A failed write (the map stays right in memory). */
  onError?(err: Error): void;
}

export class DurableHostMap<V> extends Map<string, V> {
  private o: DurableHostMapOptions<V> | undefined;
  /** Changes since the last write: a value to put, or undefined to delete. */
  private pending = new Map<string, V | undefined>();
  private scheduled = false;
  private written: Promise<void> = Promise.resolve();

  constructor(o: DurableHostMapOptions<V>) {
    super();
    this.o = o;
  }

  override set(host: string, value: V): this {
    super.set(host, value);
    this.note(host, value);
    return this;
  }

  override delete(host: string): boolean {
    const had = super.delete(host);
    if (had) this.note(host, undefined);
    return had;
  }

  override clear(): void {
    for (const host of this.keys()) this.note(host, undefined);
    super.clear();
  }

  /** The entries kept by an earlier run (before any change of this one). Returns how many. */
  async restore(): Promise<number> {
    const o = this.o!;
    const gte = Buffer.from(o.prefix);
    let n = 0;
    for (const [k, v] of await o.sublevel.iterator({ gte, lt: prefixEnd(gte) }).all()) {
      const host = Buffer.from(k).subarray(gte.length).toString('utf8');
      const value = o.decode(host, Buffer.from(v));
      if (!host || value === undefined) continue;
      super.set(host, value);
      n++;
    }
    return n;
  }

  /** Writes what changed now; resolves once every change so far is in the store. */
  flush(): Promise<void> {
    const o = this.o;
    if (!o || this.pending.size === 0) return this.written;
    const batch = this.pending;
    this.pending = new Map();
    const ops = [...batch].map(([host, v]) => {
      const key = Buffer.from(o.prefix + host);
      return v === undefined ? { type: 'del' as const, key } : { type: 'put' as const, key, value: o.encode(host, v) };
    });
    this.written = this.written.then(() => o.sublevel.batch(ops)).catch((err: Error) => o.onError?.(err));
    return this.written;
  }

  private note(host: string, value: V | undefined): void {
    if (!this.o) return; // (Map's constructor, before ours ran)
    this.pending.set(host, value);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => { this.scheduled = false; void this.flush(); });
  }
}
