// Per-peer durable outboxes (docs/mesh.md "URL exchange": the sender keeps
// per-peer outboxes on disk until acked; a crash on either side loses
// nothing). One LevelDB key range per peer, keys peer ‖ seq, so a peer's
// queue is read in order by a range scan and a slow or unreachable peer makes
// the queue grow on disk, not in memory. Entries are segments of up to
// segmentMaxUrls items with consecutive seqs (one put, one read, one delete
// per segment rather than per URL), and a segment's bytes go to the wire as
// they are (src/mesh/wire.ts "runs"). Memory per peer is a few counters;
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
import { RecentHashes } from './recent.js';
import {
  MAX_BATCH_BYTES, MAX_BATCH_URLS, decodeBatch, decodeSegment, encodeRunsFrame, encodeSegment, isPeerIdString, isWireItem,
  outboxKey, parseOutboxKey, readU53At, segmentCount, u53Bytes, wireItemSize, SEGMENT_VERSION, type EncodedRun, type UrlItem,
} from './wire.js';
import { silentLogger, type MeshLogger } from './node.js';
import { DEFAULT_MESH_EXCHANGE } from '../config.js';

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
  /** Entries of the sender-side "recently forwarded" cache (8 bytes each, ×2). Default 262 144. 0 disables it. */
  recentSize?: number;
  /** Items per segment (one LevelDB entry). Default 500; at most MAX_BATCH_URLS. */
  segmentMaxUrls?: number;
  /** Encoded bytes per segment. Default 64 KiB. */
  segmentMaxBytes?: number;
  /** Items buffered before a group commit is written without waiting for the next tick. Default 4096. */
  commitMaxItems?: number;
  /**
   * Items of the last acknowledged batches kept in memory per peer (0: none, the default), for
   * `takeAcked` when the peer is declared dead: what it acknowledged just before dying may not have
   * reached its hosts' successors yet (docs/mesh.md "Replicated frontier").
   */
  retainAcked?: number;
  /**
   * How long an acknowledged batch stays worth sending again, ms (default: no limit). Older ones
   * reached the peer's successors long ago (or their pages were fetched): sending them again after
   * the peer's death would make a new owner without those replicas fetch them a second time.
   */
  retainAckedMs?: number;
  /** The clock (tests inject one). */
  now?: () => number;
  logger?: MeshLogger;
}

/** A batch read for sending: whole segments, as wire runs. Keep it until ack() or release(). */
export interface OutboxBatch {
  peer: string;
  runs: EncodedRun[];
  /** The segments' keys (deleted on ack). */
  keys: Buffer[];
  /** Items in the batch. */
  count: number;
  /** Seq of the last item (the exchange's batchId and read cursor). */
  lastSeq: number;
  /** Sum of the runs' wire bytes. */
  bytes: number;
  /** True when the read reached the end of the peer's queue (a partial batch). */
  exhausted: boolean;
}

/** Decodes a batch's items and seqs (tests, debugging; the exchange sends the runs as they are). */
/** Items `queueOps` queued for one peer: what `writtenFor` marks sendable once their batch is durable. */
export interface QueuedFor { peer: string; n: number; seq: number }

/**
 * `queueOps` for each peer of `byPeer`: the writes appended to `into`, each given `sublevel` (the outbox's place
 * in the caller's store), so that they land in the caller's batch; the marks for `writtenFor` once it is durable.
 * Throws as `queueOps` does (a closed outbox), leaving `into` with the writes of the peers before.
 */
export function queueOpsFor<L>(
  outbox: Pick<Outbox, 'queueOps'>, byPeer: Iterable<readonly [string, readonly UrlItem[]]>, into: Array<BatchOp & { sublevel: L }>, sublevel: L,
): QueuedFor[] {
  const marks: QueuedFor[] = [];
  for (const [peer, items] of byPeer) {
    const q = outbox.queueOps(peer, items);
    for (const op of q.ops) into.push({ ...op, sublevel });
    marks.push({ peer, n: q.n, seq: q.seq });
  }
  return marks;
}

/** The batch holding `queueOpsFor`'s writes is durable: each peer's items are sendable. Returns how many. */
export function writtenFor(outbox: Pick<Outbox, 'written'>, marks: readonly QueuedFor[]): number {
  let n = 0;
  for (const m of marks) { outbox.written(m.peer, m.n, m.seq); n += m.n; }
  return n;
}

export function batchItems(b: OutboxBatch): { items: UrlItem[]; seqs: number[] } {
  const frame = encodeRunsFrame({ batchId: b.lastSeq, from: '1'.repeat(32), epoch: 0, flags: 0 }, b.runs);
  let i = 0;
  while (frame[i]! & 0x80) i++;
  const d = decodeBatch(frame.subarray(i + 1));
  if (!d.ok) throw new Error(`unreadable batch: ${d.reason}`);
  return { items: d.value.items, seqs: d.value.seqs };
}

export interface ReadOptions {
  maxUrls?: number;
  maxBytes?: number;
  /** Hold back a partial batch until its oldest item waited this long (batching by time). */
  lingerMs?: number;
}

/**
 * URLs and bytes per batch frame: the given limits or the defaults
 * (src/config.ts), never over what every receiver accepts (MAX_BATCH_URLS,
 * MAX_BATCH_BYTES in src/mesh/wire.ts).
 */
export function batchLimits(o: { maxUrls?: number; maxBytes?: number } = {}): { maxUrls: number; maxBytes: number } {
  return {
    maxUrls: Math.min(o.maxUrls ?? DEFAULT_MESH_EXCHANGE.batchMaxUrls, MAX_BATCH_URLS),
    maxBytes: Math.min(o.maxBytes ?? DEFAULT_MESH_EXCHANGE.batchMaxBytes, MAX_BATCH_BYTES),
  };
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
  /** Bytes of its segments on disk (LevelDB values; an estimate after a damaged entry). */
  bytes: number;
  /** When the peer last made progress: an ack, or its queue became non-empty (Date.now()). */
  progressAt: number;
  /** When the oldest not-yet-sent item was written (batching by time); undefined when all were read. */
  unsentSince: number | undefined;
  /** Durable-write generation, bumped on each write touching this peer. */
  gen: number;
  /** Batches out for sending. */
  inflight: number;
  /** First seqs of the segments in those batches: a read that starts below its cursor skips them. */
  sending: Set<number>;
  /**
   * The lowest seq written since the last read began. Seqs are taken when a write is prepared, and writes
   * prepared by callers (`queueOps`) land in any order: one may land below a cursor that a later-numbered
   * write already moved past, and the next read starts there (see `read`).
   */
  landedFrom: number | undefined;
  paused: number;
  idle: Array<() => void>;
}

interface Pending {
  peer: string;
  items: UrlItem[];
  done: { resolve: () => void; reject: (e: unknown) => void };
}

// xxhash64 of a string as two 32-bit halves in H (no bigint kept around).
const H64 = new BigUint64Array(1);
const H = new Uint32Array(H64.buffer);
function hash64(s: string): void {
  H64[0] = xxh64(s);
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
  private readonly recent: RecentHashes | null;
  private readonly recentSeeds = new Map<string, [number, number]>();
  /** Mixed into the per-peer seeds: bumping it forgets every "recently forwarded" entry at once. */
  private recentSalt = 0;
  private readonly segMaxUrls: number;
  private readonly segMaxBytes: number;
  private readonly peersState = new Map<string, PeerState>();
  private readonly commitMaxItems: number;
  private nextSeq = 1;
  private pending: Pending[] = [];
  private pendingItems = 0;
  private flushScheduled = false;
  /** Serialises every write so seqs hit the disk in increasing order. */
  private writeChain: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly retainAcked: number;
  private readonly retainAckedMs: number;
  private readonly now: () => number;
  /** Per peer: bodies of its last acknowledged runs (oldest first), their item counts and when each was acknowledged. */
  private readonly acked = new Map<string, { runs: Uint8Array[]; counts: number[]; at: number[]; n: number }>();

  private constructor(opts: OutboxOptions, readonly epoch: number) {
    super();
    this.db = opts.db;
    this.log = opts.logger ?? silentLogger;
    const rs = opts.recentSize ?? DEFAULT_MESH_EXCHANGE.recentSize;
    this.recent = rs > 0 ? new RecentHashes(rs) : null;
    this.segMaxUrls = Math.min(Math.max(1, opts.segmentMaxUrls ?? DEFAULT_MESH_EXCHANGE.segmentMaxUrls), MAX_BATCH_URLS);
    this.segMaxBytes = Math.min(Math.max(1024, opts.segmentMaxBytes ?? DEFAULT_MESH_EXCHANGE.segmentMaxBytes), MAX_BATCH_BYTES / 2);
    this.commitMaxItems = opts.commitMaxItems ?? DEFAULT_MESH_EXCHANGE.commitMaxItems;
    this.retainAcked = Math.max(0, opts.retainAcked ?? 0);
    this.retainAckedMs = opts.retainAckedMs ?? Infinity;
    this.now = opts.now ?? Date.now;
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
        // A damaged segment counts for nothing (read() deletes it when it meets it).
        const n = segmentCount(e[1]);
        const st = ob.state(k.peer);
        if (n > 0) { st.count += n; st.bytes += e[1].length; }
        st.unsentSince = 0;
        if (k.seq + Math.max(1, n) > next) next = k.seq + Math.max(1, n);
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
   * are skipped (unless `bypassRecent`: handoffs must arrive whatever was sent
   * before). Calls within the same tick share one LevelDB batch.
   */
  enqueue(peer: string, items: readonly UrlItem[], o: { bypassRecent?: boolean } = {}): Promise<number> {
    if (this.closed) return Promise.reject(new Error('outbox closed'));
    if (!isPeerIdString(peer)) return Promise.reject(new RangeError(`not a peer id: ${peer}`));
    const keep: UrlItem[] = [];
    const seed = this.recent && !o.bypassRecent ? this.recentSeed(peer) : null;
    for (const it of items) {
      if (!isWireItem(it)) { this.stats.invalid++; continue; }
      if (seed) {
        hash64(it.url);
        const lo = (H[0]! ^ seed[0]) >>> 0;
        const hi = (H[1]! ^ seed[1]) >>> 0;
        if (this.recent!.has(lo, hi)) { this.stats.deduped++; continue; }
        this.recent!.add(lo, hi);
      }
      keep.push(it.grant === undefined ? { url: it.url, depth: it.depth, hops: it.hops } : { url: it.url, depth: it.depth, hops: it.hops, grant: it.grant });
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

  /**
   * The writes that queue `items` for `peer`, for the caller to put in a batch
   * of its own (e.g. atomically with the completion they replicate); call
   * `written(peer, n, seq)` once that batch is durable. Invalid items are left out
   * and counted; no "recently forwarded" check. n = the items queued, seq = the
   * first seq they took. Only for a lane whose receiver takes items out of order
   * (the replica lane, docs/mesh.md "Crashes"): such batches land in any order,
   * so a segment may be sent after one with a higher seq.
   */
  queueOps(peer: string, items: readonly UrlItem[]): { ops: BatchOp[]; n: number; seq: number } {
    if (this.closed) throw new Error('outbox closed');
    if (!isPeerIdString(peer)) throw new RangeError(`not a peer id: ${peer}`);
    const keep: UrlItem[] = [];
    for (const it of items) {
      if (isWireItem(it)) keep.push(it.grant === undefined ? { url: it.url, depth: it.depth, hops: it.hops } : { ...it });
      else this.stats.invalid++;
    }
    const ops: BatchOp[] = [];
    const seq = this.nextSeq;
    // Seqs are taken now; open() finds the highest on disk, so the counter need not be written with them.
    if (keep.length) this.segmentOps(peer, keep, ops);
    return { ops, n: keep.length, seq };
  }

  /**
   * The batch holding `queueOps(peer, …)`'s writes (n items from seq `seq`) is durable: they are sendable.
   * Without `seq`, the next read looks at the whole queue (skipping what is in flight).
   */
  written(peer: string, n: number, seq?: number): void {
    if (n <= 0) return;
    const st = this.state(peer);
    landed(st, seq ?? 0);
    st.count += n;
    st.gen++;
    if (st.unsentSince === undefined) st.unsentSince = Date.now();
    this.stats.enqueued += n;
    this.emit('ready', peer);
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
      const byPeer = new Map<string, UrlItem[]>();
      for (const p of group) {
        const l = byPeer.get(p.peer);
        if (l) for (const it of p.items) l.push(it);
        else byPeer.set(p.peer, p.items.slice());
      }
      const touched = new Map<string, { n: number; bytes: number; seq: number }>();
      for (const [peer, its] of byPeer) {
        const seq = this.nextSeq;
        const bytes = this.segmentOps(peer, its, ops);
        touched.set(peer, { n: its.length, bytes, seq });
      }
      ops.push({ type: 'put', key: META_SEQ, value: u53Bytes(this.nextSeq) });
      try {
        await this.db.batch(ops);
      } catch (err) {
        // Not durable: forget the cache marks so a retry is not skipped.
        if (this.recent) {
          for (const p of group) {
            const seed = this.recentSeed(p.peer);
            for (const it of p.items) { hash64(it.url); this.recent.delete((H[0]! ^ seed[0]) >>> 0, (H[1]! ^ seed[1]) >>> 0); }
          }
        }
        for (const p of group) p.done.reject(err);
        return;
      }
      const now = Date.now();
      for (const [peer, { n, bytes, seq }] of touched) {
        const st = this.state(peer);
        landed(st, seq);
        if (st.count === 0) st.progressAt = now; // the stall clock starts when there is something to send
        st.count += n;
        st.bytes += bytes;
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

  /** Bytes queued for `peer` on disk (segment values). */
  queuedBytes(peer: string): number {
    return this.peersState.get(peer)?.bytes ?? 0;
  }

  /**
   * How long `peer` has had items queued without acknowledging any (ms; 0 when
   * nothing is queued): a member that never acks is not useful (docs/mesh.md "Admission").
   */
  stalledFor(peer: string, now = Date.now()): number {
    const st = this.peersState.get(peer);
    return st && st.count > 0 ? Math.max(0, now - st.progressAt) : 0;
  }

  /** Drops the bookkeeping of a peer with nothing queued, in flight or paused (a departed peer); false if it has some. */
  forgetPeer(peer: string): boolean {
    const st = this.peersState.get(peer);
    if (st && (st.count > 0 || st.inflight > 0 || st.paused > 0)) return false;
    this.peersState.delete(peer);
    this.recentSeeds.delete(peer);
    return true;
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
   * Reads the next batch of `peer` after sequence number `afterSeq`: whole
   * segments, as many as fit in maxUrls and maxBytes (at least one). Returns
   * { batch: null, waitMs } when the queue holds only a partial batch younger
   * than lingerMs, and { batch: null, waitMs: 0 } when there is nothing after
   * afterSeq (or the peer is paused). A returned batch counts as in flight
   * until ack() or release(). Segments that became durable at or below afterSeq
   * since the last read (a caller's batch from `queueOps` that landed after one
   * with higher seqs, a released batch) are read first, skipping those in
   * flight: the returned batch's lastSeq may then be below afterSeq, and the
   * caller's cursor stays where it was (the highest lastSeq it was given).
   */
  async read(peer: string, afterSeq: number, o: ReadOptions = {}): Promise<{ batch: OutboxBatch | null; waitMs: number }> {
    const st = this.peersState.get(peer);
    if (!st || st.count === 0 || st.paused > 0) return { batch: null, waitMs: 0 };
    const limits = batchLimits(o);
    const maxUrls = limits.maxUrls;
    // Frame header: 4 + 128 (from) + 16 + 3 bytes at most.
    const maxBytes = limits.maxBytes - 160;
    // Everything written for the peer was read into batches still in flight (a read that reached the end clears
    // unsentSince, a write or a release sets it): nothing to send until an ack or a new write. A sender asks again
    // after each ack while its window holds other batches.
    if (st.unsentSince === undefined && st.inflight > 0) return { batch: null, waitMs: 0 };
    // Lingering: while everything queued for the peer (sent or not) fits in one batch, what is unsent is a partial
    // batch, and while its oldest item is younger than lingerMs the answer is "wait" without reading the segments.
    // The sender is woken by every enqueue meanwhile; a LevelDB iterator over the queue per wake-up was most of an
    // outbox's CPU in a crawl (docs/performance.md "Mesh CPU"). Per segment the frame adds at most 8 bytes.
    if (o.lingerMs && st.unsentSince) {
      const age = Date.now() - st.unsentSince;
      if (age < o.lingerMs && st.count < maxUrls && st.bytes + 8 * st.count < maxBytes) return { batch: null, waitMs: o.lingerMs - age };
    }
    const gen = st.gen;
    // A segment that landed below the cursor since the last read began: start right before it. Before, it waited
    // for the sender's next session (cursor 0), which a busy lane never closes: a page's replica seen entry sat
    // in the victim's outbox for many seconds while later ones went out (test/mesh-crash.test.ts, docs/mesh.md "Crashes").
    const from = Math.max(0, Math.min(afterSeq, (st.landedFrom ?? Infinity) - 1));
    st.landedFrom = undefined;
    const runs: EncodedRun[] = [];
    const keys: Buffer[] = [];
    let count = 0;
    let bytes = 0;
    let lastSeq = from;
    let exhausted = false;
    let skipped = false;
    const it = this.db.iterator({ gt: outboxKey(peer, from), lt: outboxKey(peer, Number.MAX_SAFE_INTEGER) });
    try {
      for (;;) {
        const e = await it.next();
        if (!e) { exhausted = true; break; }
        const k = parseOutboxKey(e[0]);
        if (k && k.seq <= afterSeq && st.sending.has(k.seq)) { skipped = true; continue; } // in flight (read from below the cursor)
        const n = segmentCount(e[1]);
        if (!k || n < 0) {
          // Unreadable entry: nothing can be sent from it; delete it with this batch.
          keys.push(e[0]);
          continue;
        }
        const size = 8 + e[1].length - 1;
        if (runs.length && (count + n > maxUrls || bytes + size > maxBytes)) break;
        runs.push({ seq: k.seq, count: n, body: e[1].subarray(1) });
        keys.push(e[0]);
        count += n;
        bytes += size;
        lastSeq = k.seq + n - 1;
        if (count >= maxUrls) break;
      }
    } finally {
      await it.close();
    }
    if (!runs.length) {
      if (keys.length) await this.serial(() => this.db.batch(keys.map((key) => ({ type: 'del' as const, key }))));
      // Nothing at all on disk for this peer: the count must say so (self-healing after a forced reassign).
      if (from <= 0 && !skipped && st.gen === gen) st.count = 0;
      return { batch: null, waitMs: 0 };
    }
    if (exhausted && o.lingerMs && st.unsentSince !== undefined) {
      const age = Date.now() - st.unsentSince;
      if (age < o.lingerMs) {
        if (from < afterSeq) landed(st, from + 1); // read again after the wait
        return { batch: null, waitMs: o.lingerMs - age };
      }
    }
    // Everything durable for this peer is now being sent, unless a write landed meanwhile.
    if (exhausted && st.gen === gen) st.unsentSince = undefined;
    // Read from below the cursor and cut short there (limits): the next read goes on from here.
    if (!exhausted && lastSeq < afterSeq) landed(st, lastSeq + 1);
    st.inflight++;
    for (const r of runs) st.sending.add(r.seq);
    return { batch: { peer, runs, keys, count, lastSeq, bytes, exhausted }, waitMs: 0 };
  }

  /** The batch was acknowledged: deletes its segments. */
  async ack(b: OutboxBatch): Promise<void> {
    const st = this.state(b.peer);
    await this.serial(async () => {
      await this.db.batch(b.keys.map((key) => ({ type: 'del' as const, key })));
      // A reassign may have taken these entries already (it waits for in-flight batches, up to a limit).
      if (st.inflight > 0) {
        st.count = Math.max(0, st.count - b.count);
        st.bytes = st.count === 0 ? 0 : Math.max(0, st.bytes - b.runs.reduce((n, r) => n + r.body.length + 1, 0));
        this.stats.acked += b.count;
      }
      st.progressAt = Date.now();
    });
    if (this.retainAcked > 0) this.keepAcked(b);
    this.doneInflight(st, b);
  }

  private keepAcked(b: OutboxBatch): void {
    let k = this.acked.get(b.peer);
    if (!k) this.acked.set(b.peer, (k = { runs: [], counts: [], at: [], n: 0 }));
    const now = this.now();
    for (const r of b.runs) { k.runs.push(Buffer.from(r.body)); k.counts.push(r.count); k.at.push(now); k.n += r.count; }
    while (k.runs.length > 1 && (k.n - k.counts[0]! >= this.retainAcked || now - k.at[0]! > this.retainAckedMs)) this.dropOldestAcked(k);
  }

  private dropOldestAcked(k: { runs: Uint8Array[]; counts: number[]; at: number[]; n: number }): void {
    k.n -= k.counts.shift()!;
    k.runs.shift();
    k.at.shift();
  }

  /** The items of `peer`'s last acknowledged batches (see `retainAcked`, `retainAckedMs`), forgotten here. */
  takeAcked(peer: string): UrlItem[] {
    const k = this.acked.get(peer);
    this.acked.delete(peer);
    const out: UrlItem[] = [];
    if (!k) return out;
    const since = this.now() - this.retainAckedMs;
    for (let i = 0; i < k.runs.length; i++) {
      if (k.at[i]! < since) continue;
      const items = decodeSegment(Buffer.concat([Buffer.of(SEGMENT_VERSION), k.runs[i]!]));
      if (items) for (const it of items) out.push(it);
    }
    return out;
  }

  /** The batch was not acknowledged (stream failed): its entries stay queued and will be read again. */
  release(b: OutboxBatch): void {
    const st = this.state(b.peer);
    if (st.unsentSince === undefined) st.unsentSince = 0;
    // Read again by the sender's next session, which starts at the queue's head; a session that goes on reads it too.
    landed(st, b.runs[0]?.seq ?? 0);
    this.doneInflight(st, b);
  }

  // ------------------------------------------------------------ re-routing (ownership changes)

  /**
   * Yields the queued items of `peer` in order, a few segments (about `chunk`
   * items) at a time, and deletes each chunk when the consumer asks for the
   * next one (or ends the loop normally): make a chunk durable elsewhere
   * before continuing. Breaking out of the loop (or throwing) keeps the
   * current chunk queued. Sending to `peer` is paused meanwhile; batches
   * already in flight are waited for up to `waitInflightMs` (default: the exchange's ack timeout),
   * after which they may be delivered twice, never lost.
   */
  async *drainPeer(peer: string, o: { chunk?: number; waitInflightMs?: number } = {}): AsyncGenerator<UrlItem[], void, void> {
    const st = this.state(peer);
    st.paused++;
    try {
      await this.waitInflight(st, o.waitInflightMs ?? DEFAULT_MESH_EXCHANGE.ackTimeoutMs);
      const chunk = Math.max(1, o.chunk ?? 500);
      let after = 0;
      for (;;) {
        const { rows, items, last } = await this.readSegments(peer, after, chunk);
        if (!rows.length) break;
        after = last;
        if (items.length) yield items;
        await this.serial(async () => {
          await this.db.batch(rows.map(([k]) => ({ type: 'del' as const, key: k })));
          st.count = Math.max(0, st.count - items.length);
          st.bytes = st.count === 0 ? 0 : Math.max(0, st.bytes - rows.reduce((n, [, v]) => n + v.length, 0));
          this.stats.rerouted += items.length;
        });
      }
    } finally {
      st.paused--;
      // Items queued for the peer meanwhile (or left by a broken loop) are sendable again.
      if (st.count > 0 && st.paused === 0) this.emit('ready', peer);
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
      await this.waitInflight(st, o.waitInflightMs ?? DEFAULT_MESH_EXCHANGE.ackTimeoutMs);
      const chunk = Math.max(1, o.chunk ?? 1000);
      let after = 0;
      for (;;) {
        const { rows, segments, last } = await this.readSegments(peer, after, chunk);
        if (!rows.length) break;
        after = last;
        const mine: UrlItem[] = [];
        const moves = new Map<string, UrlItem[]>();
        // Segments whose items all stay are left alone; the others are deleted
        // and their staying items rewritten under the same key (same seqs
        // range: their seqs were never acknowledged, see docs/mesh.md).
        const rewrite: Array<{ key: Buffer; stay: UrlItem[]; size: number }> = [];
        let removedItems = 0;
        for (const seg of segments) {
          if (!seg.items) { rewrite.push({ key: seg.key, stay: [], size: seg.size }); continue; }
          const stay: UrlItem[] = [];
          for (const it of seg.items) {
            const to = route(it);
            if (to === peer) { stay.push(it); continue; }
            if (to === null) { mine.push(it); continue; }
            if (!isPeerIdString(to)) throw new RangeError(`route returned a bad peer id: ${to}`);
            const l = moves.get(to);
            if (l) l.push(it); else moves.set(to, [it]);
          }
          res.kept += stay.length;
          if (stay.length !== seg.items.length) {
            rewrite.push({ key: seg.key, stay, size: seg.size });
            removedItems += seg.items.length - stay.length;
          }
        }
        if (mine.length) {
          if (!local) throw new Error('reassign: route returned null but no local handler was given');
          await local(mine);
          res.local += mine.length;
        }
        const targets: string[] = [];
        await this.serial(async () => {
          const ops: BatchOp[] = [];
          let bytesDelta = 0;
          for (const r of rewrite) {
            bytesDelta -= r.size;
            if (r.stay.length) {
              const v = encodeSegment(r.stay);
              bytesDelta += v.length;
              ops.push({ type: 'put', key: r.key, value: v });
            } else ops.push({ type: 'del', key: r.key });
          }
          const moveBytes = new Map<string, number>();
          const moveSeqs = new Map<string, number>();
          for (const [to, its] of moves) { moveSeqs.set(to, this.nextSeq); moveBytes.set(to, this.segmentOps(to, its, ops)); }
          if (!ops.length) return;
          ops.push({ type: 'put', key: META_SEQ, value: u53Bytes(this.nextSeq) });
          await this.db.batch(ops);
          st.count = Math.max(0, st.count - removedItems);
          st.bytes = st.count === 0 ? 0 : Math.max(0, st.bytes + bytesDelta);
          this.stats.rerouted += removedItems;
          const now = Date.now();
          for (const [to, its] of moves) {
            const ts = this.state(to);
            landed(ts, moveSeqs.get(to)!);
            if (ts.count === 0) ts.progressAt = now;
            ts.bytes += moveBytes.get(to) ?? 0;
            ts.count += its.length;
            ts.gen++;
            if (ts.unsentSince === undefined) ts.unsentSince = now;
            targets.push(to);
            res.moved += its.length;
          }
        });
        for (const t of targets) this.emit('ready', t);
      }
    } finally {
      st.paused--;
    }
    if (st.count > 0 && st.paused === 0) this.emit('ready', peer);
    return res;
  }

  /**
   * Resolves true once the given peers' queues (default: all) are empty, i.e.
   * every URL queued for them was acknowledged or re-routed; false after
   * timeoutMs. For a graceful leave: hand off, then wait for this.
   */
  async waitEmpty(o: { peers?: string[]; timeoutMs?: number } = {}): Promise<boolean> {
    const end = Date.now() + (o.timeoutMs ?? 60_000);
    const empty = () => (o.peers ?? [...this.peersState.keys()]).every((p) => this.queued(p) === 0) && this.pending.length === 0;
    while (!empty()) {
      if (Date.now() >= end) return false;
      await new Promise<void>((r) => {
        const t = setTimeout(done, 50);
        function done() { clearTimeout(t); r(); }
      });
    }
    return true;
  }

  /** Flushes pending writes and refuses new ones. Does not close the database (its owner does). */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    await this.writeChain;
  }

  // ------------------------------------------------------------ internals

  /** Appends puts for `items` as new segments of `peer` (consuming seqs); returns the bytes of the values. */
  private segmentOps(peer: string, items: UrlItem[], ops: BatchOp[]): number {
    let i = 0;
    let total = 0;
    while (i < items.length) {
      let j = i;
      let bytes = 0;
      while (j < items.length && j - i < this.segMaxUrls) {
        const sz = wireItemSize(items[j]!);
        if (j > i && bytes + sz > this.segMaxBytes) break;
        bytes += sz;
        j++;
      }
      const seg = i === 0 && j === items.length ? items : items.slice(i, j);
      const value = encodeSegment(seg);
      total += value.length;
      ops.push({ type: 'put', key: outboxKey(peer, this.nextSeq), value });
      this.nextSeq += seg.length;
      i = j;
    }
    return total;
  }

  /** Reads segments of `peer` after seq `after` until about `chunk` items. */
  private async readSegments(peer: string, after: number, chunk: number): Promise<{
    rows: [Buffer, Buffer][]; items: UrlItem[]; segments: Array<{ key: Buffer; items: UrlItem[] | null; size: number }>; last: number;
  }> {
    const rows: [Buffer, Buffer][] = [];
    const items: UrlItem[] = [];
    const segments: Array<{ key: Buffer; items: UrlItem[] | null; size: number }> = [];
    let last = after;
    const it = this.db.iterator({ gt: outboxKey(peer, after), lt: outboxKey(peer, Number.MAX_SAFE_INTEGER) });
    try {
      while (items.length < chunk) {
        const e = await it.next();
        if (!e) break;
        rows.push(e);
        const k = parseOutboxKey(e[0]);
        const seg = decodeSegment(e[1]);
        segments.push({ key: e[0], items: seg, size: e[1].length });
        if (seg) for (const x of seg) items.push(x);
        last = k ? k.seq + Math.max(1, seg?.length ?? 1) - 1 : Number.MAX_SAFE_INTEGER;
      }
    } finally {
      await it.close();
    }
    return { rows, items, segments, last };
  }

  private state(peer: string): PeerState {
    let st = this.peersState.get(peer);
    if (!st) {
      st = { count: 0, bytes: 0, progressAt: Date.now(), unsentSince: undefined, gen: 0, inflight: 0, sending: new Set(), landedFrom: undefined, paused: 0, idle: [] };
      this.peersState.set(peer, st);
    }
    return st;
  }

  /**
   * Forgets what was recently forwarded to whom. Needed when hosts go back to
   * an earlier owner (a member left or died): a URL sent to that owner before,
   * and handed on by it since, must be sent to it again.
   */
  forgetRecent(): void {
    this.recentSalt++;
    this.recentSeeds.clear();
  }

  private recentSeed(peer: string): [number, number] {
    let s = this.recentSeeds.get(peer);
    if (s === undefined) {
      hash64(this.recentSalt ? `${peer}#${this.recentSalt}` : peer);
      s = [H[0]!, H[1]!];
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

  private doneInflight(st: PeerState, b: OutboxBatch): void {
    for (const r of b.runs) st.sending.delete(r.seq);
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
    st.sending.clear();
  }
}

/** A write for the peer landed from seq `seq` on: the next read starts no later than there (see `read`). */
function landed(st: PeerState, seq: number): void {
  if (st.landedFrom === undefined || seq < st.landedFrom) st.landedFrom = seq;
}
