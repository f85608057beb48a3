// Per-peer durable outboxes (DESIGN.md "URL exchange": the sender keeps
// per-peer outboxes on disk until acked; a crash on either side loses
// nothing). One LevelDB key range per peer, keys peer ‖ seq, so a peer's
// queue is read in order by a range scan and a slow or unreachable peer makes
// the queue grow on disk, not in memory. Memory per peer is a few counters;
// the only buffers are the group-commit batch (bounded by what callers have
// not yet awaited) and the sender's in-flight window.
//
// Sequence numbers come from one agent-wide counter, persisted with every
// write, so seqs are unique and increasing within an epoch (a random number
// created with the store). Receivers use (sender, epoch, seq) to drop
// re-sent items (src/mesh/exchange.ts).
import { EventEmitter } from 'node:events';
import { randomInt } from 'node:crypto';
import { xxh64 } from '../hash/xxhash.js';
import { RecentSet } from './recent.js';
import {
  MAX_BATCH_BYTES, MAX_BATCH_URLS, decodeOutboxValue, encodeOutboxValue, isPeerIdString, isWireItem,
  outboxKey, outboxPrefix, parseOutboxKey, readU53At, u53Bytes, type UrlItem,
} from './wire.js';
import { silentLogger, type MeshLogger } from './node.js';

type Bytes = Buffer;
export type BatchOp = { type: 'put'; key: Bytes; value: Bytes } | { type: 'del'; key: Bytes };

/** The part of an abstract-level (sub)level the outbox needs, with Buffer keys and values (src/store's Sublevel fits). */
export interface OutboxDb {
  get(key: Bytes): Promise<Bytes | undefined>;
  batch(ops: BatchOp[]): Promise<void>;
  iterator(opts?: { gt?: Bytes; gte?: Bytes; lt?: Bytes; lte?: Bytes; limit?: number }): {
    all(): Promise<[Bytes, Bytes][]>;
    next(): Promise<[Bytes, Bytes] | undefined>;
    seek(target: Bytes): void;
    close(): Promise<void>;
  };
}

export interface OutboxOptions {
  db: OutboxDb;
  /** Entries of the sender-side "recently forwarded" cache. Default 262 144. 0 disables it. */
  recentSize?: number;
  /** Items buffered before a group commit is written without waiting for the next tick. Default 4096. */
  commitMaxItems?: number;
  logger?: MeshLogger;
}

/** A batch read for sending. Keep it until ack() or release(). */
export interface OutboxBatch {
  peer: string;
  items: UrlItem[];
  seqs: number[];
  bytes: number;
  /** True when the read reached the end of the peer's queue (a partial batch). */
  exhausted: boolean;
}

export interface ReadOptions {
  maxUrls?: number;
  maxBytes?: number;
  /** Hold back a partial batch until its oldest item waited this long (batching by time). */
  lingerMs?: number;
}

export interface OutboxStats {
  /** Items written to the outbox. */
  enqueued: number;
  /** Items skipped because they were forwarded to the same peer recently. */
  deduped: number;
  /** Items refused by enqueue (URL syntax, depth or hops out of range). */
  invalid: number;
  /** Items removed after an ack. */
  acked: number;
  /** Items moved or handed out by reassign() / drainPeer(). */
  rerouted: number;
}

interface PeerState {
  /** Entries on disk (exact once open() has counted them). */
  count: number;
  /** When the oldest not-yet-sent item was written (batching by time); undefined when all were read. */
  unsentSince: number | undefined;
  /** Durable-write generation, bumped on each write touching this peer. */
  gen: number;
  /** Batches out for sending. */
  inflight: number;
  paused: number;
  idle: Array<() => void>;
}

interface Pending {
  peer: string;
  items: UrlItem[];
  done: { resolve: () => void; reject: (e: unknown) => void };
}

const META_SEQ = Buffer.from([0, 0x73]); // \0 's': next sequence number
const META_EPOCH = Buffer.from([0, 0x65]); // \0 'e': epoch

export interface OutboxEvents {
  /** New items for `peer` are durable (the exchange wakes that peer's sender). */
  ready: [peer: string];
}

export class Outbox extends EventEmitter<OutboxEvents> {
  readonly stats: OutboxStats = { enqueued: 0, deduped: 0, invalid: 0, acked: 0, rerouted: 0 };
  private readonly db: OutboxDb;
  private readonly log: MeshLogger;
  private readonly recent: RecentSet | null;
  private readonly recentSeeds = new Map<string, bigint>();
  private readonly peersState = new Map<string, PeerState>();
  private readonly commitMaxItems: number;
  private nextSeq = 1;
  private pending: Pending[] = [];
  private pendingItems = 0;
  private flushScheduled = false;
  /** Serialises every write so seqs hit the disk in increasing order. */
  private writeChain: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(opts: OutboxOptions, readonly epoch: number) {
    super();
    this.db = opts.db;
    this.log = opts.logger ?? silentLogger;
    const rs = opts.recentSize ?? 1 << 18;
    this.recent = rs > 0 ? new RecentSet(rs) : null;
    this.commitMaxItems = opts.commitMaxItems ?? 4096;
  }

  /** Opens the outbox: loads epoch and seq counter, counts the queued entries per peer (one key scan). */
  static async open(opts: OutboxOptions): Promise<Outbox> {
    const db = opts.db;
    let epochBytes = await db.get(META_EPOCH);
    let epoch = epochBytes ? readU53At(epochBytes, 0) : -1;
    if (epoch < 0) {
      // 48 random bits: a fresh store never reuses an old store's (sender, epoch, seq) space.
      epoch = randomInt(0, 2 ** 47) * 2 + randomInt(0, 2);
      epochBytes = u53Bytes(epoch);
      await db.batch([{ type: 'put', key: META_EPOCH, value: epochBytes }]);
    }
    const ob = new Outbox(opts, epoch);
    const seqBytes = await db.get(META_SEQ);
    let next = seqBytes ? readU53At(seqBytes, 0) : 1;
    if (next < 1) next = 1;
    const it = db.iterator({ gte: Buffer.from([1]) });
    try {
      for (;;) {
        const e = await it.next();
        if (!e) break;
        const k = parseOutboxKey(e[0]);
        if (!k) continue;
        const st = ob.state(k.peer);
        st.count++;
        st.unsentSince = 0;
        if (k.seq >= next) next = k.seq + 1;
      }
    } finally {
      await it.close();
    }
    ob.nextSeq = next;
    return ob;
  }

  // ------------------------------------------------------------ producer side

  /**
   * Queues `items` for `peer`. Resolves once they are durable (the caller may
   * then consider them handed over), to the number actually queued: invalid
   * items are refused and counted, items forwarded to the same peer recently
   * are skipped. Calls within the same tick share one LevelDB batch.
   */
  enqueue(peer: string, items: readonly UrlItem[]): Promise<number> {
    if (this.closed) return Promise.reject(new Error('outbox closed'));
    if (!isPeerIdString(peer)) return Promise.reject(new RangeError(`not a peer id: ${peer}`));
    const keep: UrlItem[] = [];
    const seed = this.recent ? this.recentSeed(peer) : 0n;
    for (const it of items) {
      if (!isWireItem(it)) { this.stats.invalid++; continue; }
      if (this.recent) {
        const h = xxh64(it.url, seed);
        if (this.recent.has(h)) { this.stats.deduped++; continue; }
        this.recent.add(h);
      }
      keep.push({ url: it.url, depth: it.depth, hops: it.hops });
    }
    if (!keep.length) return Promise.resolve(0);
    return new Promise<number>((resolve, reject) => {
      this.pending.push({ peer, items: keep, done: { resolve: () => resolve(keep.length), reject } });
      this.pendingItems += keep.length;
      if (this.pendingItems >= this.commitMaxItems) void this.flush();
      else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** Writes everything enqueued so far; resolves when durable. */
  flush(): Promise<void> {
    this.flushScheduled = false;
    if (!this.pending.length) return this.writeChain;
    const group = this.pending;
    this.pending = [];
    this.pendingItems = 0;
    return this.serial(async () => {
      const ops: BatchOp[] = [];
      const touched = new Map<string, number>();
      for (const p of group) {
        for (const it of p.items) ops.push({ type: 'put', key: outboxKey(p.peer, this.nextSeq++), value: encodeOutboxValue(it) });
        touched.set(p.peer, (touched.get(p.peer) ?? 0) + p.items.length);
      }
      ops.push({ type: 'put', key: META_SEQ, value: u53Bytes(this.nextSeq) });
      try {
        await this.db.batch(ops);
      } catch (err) {
        // Not durable: forget the cache marks so a retry is not skipped.
        if (this.recent) for (const p of group) { const s = this.recentSeed(p.peer); for (const it of p.items) this.recent.delete(xxh64(it.url, s)); }
        for (const p of group) p.done.reject(err);
        return;
      }
      const now = Date.now();
      for (const [peer, n] of touched) {
        const st = this.state(peer);
        st.count += n;
        st.gen++;
        if (st.unsentSince === undefined) st.unsentSince = now;
        this.stats.enqueued += n;
      }
      for (const p of group) p.done.resolve();
      for (const peer of touched.keys()) this.emit('ready', peer);
    });
  }

  // ------------------------------------------------------------ sender side (src/mesh/exchange.ts)

  /** Peers with queued entries. */
  peers(): string[] {
    const out: string[] = [];
    for (const [p, st] of this.peersState) if (st.count > 0) out.push(p);
    return out;
  }

  /** Entries queued for `peer` (on disk, including those in flight). */
  queued(peer: string): number {
    return this.peersState.get(peer)?.count ?? 0;
  }

  /** Entries queued over all peers. */
  totalQueued(): number {
    let n = 0;
    for (const st of this.peersState.values()) n += st.count;
    return n;
  }

  isPaused(peer: string): boolean {
    return (this.peersState.get(peer)?.paused ?? 0) > 0;
  }

  /** Durable-write generation of `peer` (changes whenever new items for it become durable). */
  generation(peer: string): number {
    return this.peersState.get(peer)?.gen ?? 0;
  }

  /**
   * Reads the next batch of `peer` after sequence number `afterSeq`, within
   * the count and byte limits. Returns { batch: null, waitMs } when the queue
   * holds only a partial batch younger than lingerMs, and { batch: null,
   * waitMs: 0 } when there is nothing after afterSeq (or the peer is paused).
   * A returned batch counts as in flight until ack() or release().
   */
  async read(peer: string, afterSeq: number, o: ReadOptions = {}): Promise<{ batch: OutboxBatch | null; waitMs: number }> {
    const st = this.peersState.get(peer);
    if (!st || st.count === 0 || st.paused > 0) return { batch: null, waitMs: 0 };
    const maxUrls = Math.min(o.maxUrls ?? 500, MAX_BATCH_URLS);
    // Frame overhead: header ≤ 4 + 128 + 24 + 3 bytes, items ≤ 5 + 3 + 1 + 2 bytes besides the URL.
    const maxBytes = Math.min(o.maxBytes ?? 256 * 1024, MAX_BATCH_BYTES) - 200;
    const gen = st.gen;
    const rows = await this.db.iterator({ gt: outboxKey(peer, Math.max(afterSeq, 0)), lt: outboxKey(peer, Number.MAX_SAFE_INTEGER), limit: maxUrls }).all();
    const items: UrlItem[] = [];
    const seqs: number[] = [];
    let bytes = 0;
    let cut = false;
    for (const [k, v] of rows) {
      const key = parseOutboxKey(k);
      const it = decodeOutboxValue(v);
      if (!key || !it) continue; // unreadable entry: skipped here, removed with the next ack's range
      const sz = it.url.length + 11;
      if (bytes + sz > maxBytes && items.length) { cut = true; break; }
      items.push(it);
      seqs.push(key.seq);
      bytes += sz;
    }
    const exhausted = !cut && rows.length < maxUrls;
    if (!items.length) return { batch: null, waitMs: 0 };
    if (exhausted && o.lingerMs && st.unsentSince !== undefined) {
      const age = Date.now() - st.unsentSince;
      if (age < o.lingerMs) return { batch: null, waitMs: o.lingerMs - age };
    }
    // Everything durable for this peer is now being sent, unless a write landed meanwhile.
    if (exhausted && st.gen === gen) st.unsentSince = undefined;
    st.inflight++;
    return { batch: { peer, items, seqs, bytes, exhausted }, waitMs: 0 };
  }

  /** The batch was acknowledged: deletes its entries. */
  async ack(b: OutboxBatch): Promise<void> {
    const st = this.state(b.peer);
    await this.serial(async () => {
      const ops: BatchOp[] = b.seqs.map((s) => ({ type: 'del', key: outboxKey(b.peer, s) }));
      await this.db.batch(ops);
      // A reassign may have taken these entries already (it waits for in-flight batches, up to a limit).
      if (st.inflight > 0) {
        st.count = Math.max(0, st.count - b.seqs.length);
        this.stats.acked += b.seqs.length;
      }
    });
    this.doneInflight(st);
  }

  /** The batch was not acknowledged (stream failed): its entries stay queued and will be read again. */
  release(b: OutboxBatch): void {
    const st = this.state(b.peer);
    if (st.unsentSince === undefined) st.unsentSince = 0;
    this.doneInflight(st);
  }

  // ------------------------------------------------------------ re-routing (ownership changes)

  /**
   * Yields the queued items of `peer` in order, in chunks of at most
   * `chunk`, and deletes each chunk when the consumer asks for the next one
   * (or ends the loop normally): make a chunk durable elsewhere before
   * continuing. Breaking out of the loop (or throwing) keeps the current chunk
   * queued. Sending to `peer` is paused meanwhile; batches already in flight
   * are waited for up to `waitInflightMs` (default 30 s), after which they may
   * be delivered twice, never lost.
   */
  async *drainPeer(peer: string, o: { chunk?: number; waitInflightMs?: number } = {}): AsyncGenerator<UrlItem[], void, void> {
    const st = this.state(peer);
    st.paused++;
    try {
      await this.waitInflight(st, o.waitInflightMs ?? 30_000);
      const chunk = Math.max(1, o.chunk ?? 500);
      let after = 0;
      for (;;) {
        const rows = await this.db.iterator({ gt: outboxKey(peer, after), lt: outboxKey(peer, Number.MAX_SAFE_INTEGER), limit: chunk }).all();
        if (!rows.length) break;
        const items: UrlItem[] = [];
        for (const [, v] of rows) { const it = decodeOutboxValue(v); if (it) items.push(it); }
        const lastKey = parseOutboxKey(rows[rows.length - 1]![0]);
        after = lastKey ? lastKey.seq : Number.MAX_SAFE_INTEGER;
        if (items.length) yield items;
        await this.serial(async () => {
          await this.db.batch(rows.map(([k]) => ({ type: 'del', key: k })));
          st.count = Math.max(0, st.count - rows.length);
          this.stats.rerouted += rows.length;
        });
      }
    } finally {
      st.paused--;
    }
  }

  /**
   * Re-routes the queue of `peer` after an ownership change: each item goes to
   * `route(item)`: another peer id (moved atomically, chunk by chunk: one
   * LevelDB batch deletes it here and queues it there), `peer` itself (left in
   * place) or null (handed to `local`, awaited before deletion: for items
   * this agent now owns). Returns the counts.
   */
  async reassign(
    peer: string,
    route: (item: UrlItem) => string | null,
    local?: (items: UrlItem[]) => Promise<void>,
    o: { chunk?: number; waitInflightMs?: number } = {},
  ): Promise<{ moved: number; local: number; kept: number }> {
    const st = this.state(peer);
    st.paused++;
    const res = { moved: 0, local: 0, kept: 0 };
    try {
      await this.waitInflight(st, o.waitInflightMs ?? 30_000);
      const chunk = Math.max(1, o.chunk ?? 1000);
      let after = 0;
      for (;;) {
        const rows = await this.db.iterator({ gt: outboxKey(peer, after), lt: outboxKey(peer, Number.MAX_SAFE_INTEGER), limit: chunk }).all();
        if (!rows.length) break;
        const lastKey = parseOutboxKey(rows[rows.length - 1]![0]);
        after = lastKey ? lastKey.seq : Number.MAX_SAFE_INTEGER;
        const mine: UrlItem[] = [];
        const moves: Array<{ key: Bytes; to: string; item: UrlItem }> = [];
        const dels: Bytes[] = [];
        for (const [k, v] of rows) {
          const it = decodeOutboxValue(v);
          if (!it) { dels.push(k); continue; }
          const to = route(it);
          if (to === peer) { res.kept++; continue; }
          if (to === null) { mine.push(it); dels.push(k); continue; }
          if (!isPeerIdString(to)) throw new RangeError(`route returned a bad peer id: ${to}`);
          moves.push({ key: k, to, item: it });
        }
        if (mine.length) {
          if (!local) throw new Error('reassign: route returned null but no local handler was given');
          await local(mine);
          res.local += mine.length;
        }
        const targets = new Set<string>();
        await this.serial(async () => {
          const ops: BatchOp[] = dels.map((k) => ({ type: 'del' as const, key: k }));
          const added = new Map<string, number>();
          for (const m of moves) {
            ops.push({ type: 'del', key: m.key });
            ops.push({ type: 'put', key: outboxKey(m.to, this.nextSeq++), value: encodeOutboxValue(m.item) });
            added.set(m.to, (added.get(m.to) ?? 0) + 1);
          }
          if (!ops.length) return;
          ops.push({ type: 'put', key: META_SEQ, value: u53Bytes(this.nextSeq) });
          await this.db.batch(ops);
          st.count = Math.max(0, st.count - dels.length - moves.length);
          this.stats.rerouted += dels.length + moves.length;
          const now = Date.now();
          for (const [to, n] of added) {
            const ts = this.state(to);
            ts.count += n;
            ts.gen++;
            if (ts.unsentSince === undefined) ts.unsentSince = now;
            targets.add(to);
          }
        });
        res.moved += moves.length;
        for (const t of targets) this.emit('ready', t);
      }
    } finally {
      st.paused--;
    }
    if (st.count > 0 && st.paused === 0) this.emit('ready', peer);
    return res;
  }

  /** Flushes pending writes and refuses new ones. Does not close the database (its owner does). */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    await this.writeChain;
  }

  // ------------------------------------------------------------ internals

  private state(peer: string): PeerState {
    let st = this.peersState.get(peer);
    if (!st) {
      st = { count: 0, unsentSince: undefined, gen: 0, inflight: 0, paused: 0, idle: [] };
      this.peersState.set(peer, st);
    }
    return st;
  }

  private recentSeed(peer: string): bigint {
    let s = this.recentSeeds.get(peer);
    if (s === undefined) {
      s = xxh64(peer);
      if (this.recentSeeds.size > 65536) this.recentSeeds.clear();
      this.recentSeeds.set(peer, s);
    }
    return s;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.writeChain.then(fn);
    this.writeChain = run.then(() => undefined, () => undefined);
    return run;
  }

  private doneInflight(st: PeerState): void {
    if (st.inflight > 0) st.inflight--;
    if (st.inflight === 0 && st.idle.length) {
      const w = st.idle;
      st.idle = [];
      for (const f of w) f();
    }
  }

  private async waitInflight(st: PeerState, ms: number): Promise<void> {
    if (st.inflight === 0) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => { this.log.warn({}, 'outbox: in-flight batches did not settle; re-routing anyway'); resolve(); }, ms);
      st.idle.push(() => { clearTimeout(t); resolve(); });
    });
    // Forced: late acks of those batches must not decrement counts twice.
    st.inflight = 0;
  }
}
