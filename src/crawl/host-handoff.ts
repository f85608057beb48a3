// Everything about a host moves with it (docs/mesh.md "Everything about a host
// moves with it"): when a handoff moves a host, its state (politeness and
// operator overrides: src/crawl/host-state.ts) and its recrawl schedule
// entries (src/recrawl/recrawler.ts storage) go to the new owner ahead of its
// URLs, on the same ordered stream, and are stored there before the batch is
// acknowledged. The items are src/mesh/wire.ts `host-state` and `recrawl`.
import type { BatchOp, Store } from '../store/db.js';
import { dueKey, prefixEnd, seenKey, hostKey } from '../store/keys.js';
import { decodeRecrawlState } from '../recrawl/schedule.js';
import { encodeItem, type UrlItem } from '../mesh/index.js';
import { decodeFetchRecord } from './records.js';
import { decodeHostState, encodeHostState, type HostStates } from './host-state.js';
import type { HostData } from './candidate.js';
import type { Logger } from '../util/log.js';

/** An item of a host's state as peer intake admitted it (its sender owned the host). */
export type HandedHostItem =
  | { kind: 'host-state'; host: string; state: string }
  | { kind: 'recrawl'; host: string; url: string; depth: number; state: Uint8Array };

export interface HostHandoffComponents {
  store: Pick<Store, 'db' | 'recrawl' | 'recrawlDue' | 'fetches'>;
  states: HostStates;
  /** The host's data, when the frontier knows it here. */
  hostData(host: string): HostData | undefined;
  /** Recrawling is on: schedule entries are sent and kept (off: neither). */
  recrawl: boolean;
  log: Logger;
}

export class HostHandoff {
  readonly stats = { statesSent: 0, statesTaken: 0, recrawlSent: 0, recrawlTaken: 0, bad: 0 };

  constructor(private readonly c: HostHandoffComponents) {}

  /** The items that go to a host's new owner before its URLs. */
  async itemsFor(host: string, hk: Buffer, d: HostData, operatorPaused: boolean): Promise<UrlItem[]> {
    const out: UrlItem[] = [];
    const s = this.c.states.forHandoff(host, d, operatorPaused);
    if (s) { out.push(encodeItem({ kind: 'host-state', host, state: encodeHostState(s) })); this.stats.statesSent++; }
    if (!this.c.recrawl) return out;
    const { store } = this.c;
    const rows = await store.recrawl.iterator({ gte: hk, lt: prefixEnd(hk) }).all();
    if (rows.length === 0) return out;
    const records = await store.fetches.getMany(rows.map(([k]) => k));
    for (let i = 0; i < rows.length; i++) {
      const [key, value] = rows[i]!;
      const rec = records[i] ? decodeFetchRecord(records[i]!) : null;
      const st = decodeRecrawlState(value);
      if (!rec || !st) continue;
      const due = await store.recrawlDue.get(dueKey(st.nextDueAt, key)).catch(() => undefined);
      out.push(encodeItem({ kind: 'recrawl', url: rec.url, depth: due ? due[0]! : 0, state: value }));
      this.stats.recrawlSent++;
    }
    return out;
  }

  /** A previous owner's items: host states applied or kept, recrawl entries stored unless we have our own. */
  async take(items: readonly HandedHostItem[]): Promise<void> {
    const recrawls: Array<{ key: Buffer; url: string; depth: number; state: Uint8Array; nextDueAt: number }> = [];
    for (const it of items) {
      if (it.kind === 'host-state') {
        const s = decodeHostState(it.state);
        if (!s) { this.stats.bad++; continue; }
        this.c.states.received(it.host, s, this.c.hostData(it.host));
        this.stats.statesTaken++;
        continue;
      }
      const st = this.c.recrawl ? decodeRecrawlState(it.state) : null;
      if (!st) { if (this.c.recrawl) this.stats.bad++; continue; }
      recrawls.push({ key: seenKey(hostKey(it.host), it.url), url: it.url, depth: it.depth, state: it.state, nextDueAt: st.nextDueAt });
    }
    if (recrawls.length === 0) return;
    const { store } = this.c;
    const have = await store.recrawl.getMany(recrawls.map((r) => r.key));
    const ops: BatchOp[] = [];
    for (let i = 0; i < recrawls.length; i++) {
      if (have[i]) continue; // our own schedule of the URL wins
      const r = recrawls[i]!;
      const due = Buffer.allocUnsafe(1 + Buffer.byteLength(r.url));
      due[0] = Math.min(255, r.depth);
      due.write(r.url, 1, 'utf8');
      ops.push({ type: 'put', sublevel: store.recrawl, key: r.key, value: Buffer.from(r.state) }, { type: 'put', sublevel: store.recrawlDue, key: dueKey(r.nextDueAt, r.key), value: due });
      this.stats.recrawlTaken++;
    }
    // Acknowledged to the peer next: synced like the seen entries of a handoff.
    if (ops.length) await store.db.batch(ops, { sync: true });
  }
}
