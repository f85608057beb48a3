// The frontier: Mercator's back queues (Heydon & Najork 1999), kept on disk.
//
// Every queued URL lives in LevelDB under host-hash ‖ seq, so one host's queue
// is one key range in FIFO order. In memory there are only
//   - a small record per host that has queued work (name, flags),
//   - a short head of URLs for each *active* host (about 3 × concurrency of them),
//   - a heap of active, idle hosts ordered by the time they may next be fetched.
// Memory therefore grows with the number of hosts, not with the number of URLs.
//
// A URL leaves the disk only when the caller acknowledges it (`doneOps`), in the
// same batch that records the fetch: a crash re-queues exactly the URLs that
// were in flight.
import type { Sublevel } from '../store/db.js';
import type { BatchOp } from '../seen/drum.js';
import { MinHeap, type HeapSlot } from '../util/heap.js';
import { HOST_KEY_BYTES, prefixEnd } from '../store/keys.js';

/** What a queued URL is: a page, or a sitemap to parse for URLs (Sitemaps 0.90). */
export type UrlKind = 'page' | 'sitemap';

export interface QueuedUrl {
  url: string;
  kind: UrlKind;
  depth: number;
  /** How many times the mesh forwarded it (kept for re-forwarding). */
  hops: number;
  /** Frontier key (host hash ‖ seq). */
  key: Buffer;
  /** Retries already made after transient failures (memory only: a restart starts over). */
  attempt?: number;
  /** A retry waits until this epoch ms; the host's other URLs go first meanwhile. */
  notBefore?: number;
}

export interface NewUrl {
  host: string;
  hostKey: Buffer;
  kind?: UrlKind;
  url: string;
  depth: number;
  hops: number;
  /** Filled in by `enqueueOps`. */
  frontierKey?: Buffer;
}

export interface HostState<D> extends HeapSlot {
  name: string;
  key: Buffer;
  head: QueuedUrl[];
  /** Last frontier key copied into `head`; the next load starts after it. */
  lastLoaded: Buffer | undefined;
  /** Disk may hold entries after `lastLoaded`. */
  diskMore: boolean;
  loading: boolean;
  /** URLs were committed while a load ran: the load's view may have missed them. */
  committedDuringLoad: boolean;
  active: boolean;
  pending: boolean;
  inFlight: boolean;
  /** Epoch ms before which this host must not be contacted. */
  nextAllowed: number;
  /** Paused hosts stay queued but are never dispatched. */
  paused: boolean;
  /** Per-host data owned by the caller (robots, politeness state). */
  data: D;
}

export interface FrontierOptions<D> {
  maxActiveHosts: number;
  headSize: number;
  createData(host: string): D;
  /** Earliest first contact for a host this frontier has not seen before (mesh: the previous owner may just have fetched it). */
  initialNextAllowed?(host: string): number;
}

const SEQ_KEY = Buffer.from('seq');

// Entry format: byte 0 = version/kind (1 page, 2 sitemap), depth, hops, URL.
export function encodeEntry(url: string, depth: number, hops: number, kind: UrlKind = 'page'): Buffer {
  const body = Buffer.from(url, 'utf8');
  const out = Buffer.allocUnsafe(3 + body.length);
  out[0] = kind === 'sitemap' ? 2 : 1;
  out[1] = Math.min(depth, 255);
  out[2] = Math.min(hops, 255);
  body.copy(out, 3);
  return out;
}

export function decodeEntry(value: Buffer): { url: string; depth: number; hops: number; kind: UrlKind } | undefined {
  if (value.length < 4 || (value[0] !== 1 && value[0] !== 2)) return undefined;
  return { depth: value[1]!, hops: value[2]!, url: value.toString('utf8', 3), kind: value[0] === 2 ? 'sitemap' : 'page' };
}

export class Frontier<D> {
  private readonly hosts = new Map<string, HostState<D>>();
  private readonly byKey = new Map<string, HostState<D>>();
  private readonly ready = new MinHeap<HostState<D>>((h) => h.nextAllowed);
  private pendingQueue: HostState<D>[] = [];
  private pendingHead = 0;
  private activeCount = 0;
  private loadsInFlight = 0;
  private seq = 0n;
  /** URLs on disk not yet acknowledged (exact: counted on recovery, then maintained). */
  queued = 0;
  /** Entries that could not be decoded (dropped and counted). */
  corruptEntries = 0;
  /** A host entered the ready heap (it is about to be dispatched): the scheduler is told through this callback. */
  onReady: (h: HostState<D>) => void = () => {};
  onLoadError: (host: string, err: Error) => void = () => {};

  constructor(
    private readonly frontier: Sublevel,
    private readonly hostNames: Sublevel,
    private readonly meta: Sublevel,
    private readonly opts: FrontierOptions<D>,
  ) {}

  get activeHosts(): number { return this.activeCount; }
  get knownHosts(): number { return this.hosts.size; }
  get pendingHosts(): number { return this.pendingQueue.length - this.pendingHead; }

  /** True when nothing is queued, loading or in flight. */
  get idle(): boolean {
    return this.queued === 0 && this.loadsInFlight === 0;
  }

  host(name: string): HostState<D> | undefined { return this.hosts.get(name); }

  /** Every host with a record in memory (for reports; not for hot paths). */
  allHosts(): IterableIterator<HostState<D>> { return this.hosts.values(); }

  /** Rebuilds the in-memory view from disk after a (re)start. */
  async recover(): Promise<void> {
    const seqBytes = await this.meta.get(SEQ_KEY);
    if (seqBytes && seqBytes.length === 8) this.seq = seqBytes.readBigUInt64BE(0);
    // One pass over the frontier keys: counts entries and finds every host with work.
    const hostKeys: Buffer[] = [];
    let last: Buffer | undefined;
    let maxSeq = this.seq;
    for await (const key of this.frontier.keys()) {
      this.queued++;
      const hk = key.subarray(0, HOST_KEY_BYTES);
      if (!last || !last.equals(hk)) { last = Buffer.from(hk); hostKeys.push(last); }
      const s = key.readBigUInt64BE(HOST_KEY_BYTES);
      if (s >= maxSeq) maxSeq = s + 1n;
    }
    this.seq = maxSeq;
    const names = hostKeys.length ? await this.hostNames.getMany(hostKeys) : [];
    for (let i = 0; i < hostKeys.length; i++) {
      const name = names[i]?.toString('utf8');
      if (!name) continue; // a host record is written in the same batch as its first URL; absent means corrupt
      const h = this.ensureHost(name, hostKeys[i]!);
      h.diskMore = true;
      this.makePending(h);
    }
    this.fillActive();
  }

  /** Operations that queue these (new) URLs; apply them atomically, then call `committed`. */
  enqueueOps(items: NewUrl[]): BatchOp[] {
    const ops: BatchOp[] = [];
    for (const it of items) {
      const key = Buffer.allocUnsafe(HOST_KEY_BYTES + 8);
      it.hostKey.copy(key, 0, 0, HOST_KEY_BYTES);
      key.writeBigUInt64BE(this.seq++, HOST_KEY_BYTES);
      it.frontierKey = key;
      ops.push({ type: 'put', sublevel: this.frontier, key, value: encodeEntry(it.url, it.depth, it.hops, it.kind) });
      if (!this.hosts.has(it.host)) ops.push({ type: 'put', sublevel: this.hostNames, key: it.hostKey, value: Buffer.from(it.host) });
    }
    const seq = Buffer.allocUnsafe(8);
    seq.writeBigUInt64BE(this.seq);
    ops.push({ type: 'put', sublevel: this.meta, key: SEQ_KEY, value: seq });
    return ops;
  }

  /** Updates memory after the batch from `enqueueOps` is durable. */
  committed(items: NewUrl[]): void {
    for (const it of items) {
      this.queued++;
      const h = this.ensureHost(it.host, it.hostKey);
      const q: QueuedUrl = { url: it.url, kind: it.kind ?? 'page', depth: it.depth, hops: it.hops, key: it.frontierKey! };
      if (h.active && !h.loading && !h.diskMore && h.head.length < this.opts.headSize) {
        // The whole queue is in memory: append directly, no disk read needed.
        h.head.push(q);
        h.lastLoaded = q.key;
        this.schedule(h);
      } else {
        h.diskMore = true;
        if (h.loading) h.committedDuringLoad = true;
        if (h.active) this.maybeLoad(h);
        else this.makePending(h);
      }
    }
    this.fillActive();
  }

  /** The active host with work whose politeness time is earliest, if it is due by `now`. */
  nextReady(now: number): HostState<D> | undefined {
    const top = this.ready.peek();
    if (!top || top.nextAllowed > now) return undefined;
    this.ready.pop();
    return top;
  }

  /** When the earliest ready host becomes due (undefined if none waits). */
  nextWake(): number | undefined { return this.ready.peek()?.nextAllowed; }

  /** Takes the next URL of a host handed out by `nextReady`; the host is in flight until `release`. */
  take(h: HostState<D>): QueuedUrl | undefined {
    const q = h.head.shift();
    h.inFlight = true;
    if (h.head.length < this.opts.headSize / 2) this.maybeLoad(h);
    return q;
  }

  /** Puts a URL back at the front of its host's head (e.g. a retry). */
  unshift(h: HostState<D>, q: QueuedUrl): void { h.head.unshift(q); }

  /** Ends a host's turn; it may be contacted again from `nextAllowed` on. */
  release(h: HostState<D>, nextAllowed: number): void {
    h.inFlight = false;
    h.nextAllowed = nextAllowed;
    if (h.head.length > 0) this.schedule(h);
    else if (!h.diskMore && !h.loading) this.deactivate(h);
  }

  setPaused(h: HostState<D>, paused: boolean): void {
    h.paused = paused;
    if (paused) this.ready.remove(h);
    else this.schedule(h);
  }

  /**
   * Forgets a host whose queue was handed to another agent (its `removed`
   * entries already deleted from disk by the caller). The host must be paused
   * and not in flight.
   */
  dropHost(h: HostState<D>, removed: number): void {
    this.ready.remove(h);
    if (h.active) { h.active = false; this.activeCount--; }
    h.pending = false; // a stale entry in the pending queue is skipped: fillActive checks the map
    h.head.length = 0;
    h.diskMore = false;
    this.queued -= removed;
    this.hosts.delete(h.name);
    this.byKey.delete(h.key.toString('latin1'));
    this.fillActive();
  }

  /** Operation that removes an acknowledged URL from the disk queue. */
  doneOp(q: QueuedUrl): BatchOp {
    return { type: 'del', sublevel: this.frontier, key: q.key };
  }

  /** Memory bookkeeping after `doneOp` was written. */
  acknowledged(count = 1): void { this.queued -= count; }

  private ensureHost(name: string, key: Buffer): HostState<D> {
    let h = this.hosts.get(name);
    if (!h) {
      h = {
        name, key: Buffer.from(key), head: [], lastLoaded: undefined, diskMore: false, loading: false, committedDuringLoad: false,
        active: false, pending: false, inFlight: false, nextAllowed: this.opts.initialNextAllowed?.(name) ?? 0, paused: false, heapIndex: -1,
        data: this.opts.createData(name),
      };
      this.hosts.set(name, h);
      this.byKey.set(h.key.toString('latin1'), h);
    }
    return h;
  }

  private makePending(h: HostState<D>): void {
    if (h.active || h.pending) return;
    h.pending = true;
    this.pendingQueue.push(h);
  }

  private fillActive(): void {
    while (this.activeCount < this.opts.maxActiveHosts && this.pendingHead < this.pendingQueue.length) {
      const h = this.pendingQueue[this.pendingHead++]!;
      if (!h.pending || this.hosts.get(h.name) !== h) continue; // dropped meanwhile
      h.pending = false;
      if (h.active) continue;
      h.active = true;
      this.activeCount++;
      this.maybeLoad(h);
    }
    if (this.pendingHead > 1024 && this.pendingHead * 2 > this.pendingQueue.length) {
      this.pendingQueue = this.pendingQueue.slice(this.pendingHead);
      this.pendingHead = 0;
    }
  }

  private deactivate(h: HostState<D>): void {
    if (!h.active) return;
    h.active = false;
    this.activeCount--;
    this.ready.remove(h);
    if (h.diskMore) this.makePending(h);
    this.fillActive();
  }

  private schedule(h: HostState<D>): void {
    if (h.active && !h.inFlight && !h.paused && h.head.length > 0 && !this.ready.has(h)) {
      this.ready.push(h);
      this.onReady(h);
    }
  }

  private maybeLoad(h: HostState<D>): void {
    if (h.loading || !h.diskMore || h.head.length >= this.opts.headSize) return;
    h.loading = true;
    h.committedDuringLoad = false;
    this.loadsInFlight++;
    this.load(h).catch((err: Error) => this.onLoadError(h.name, err)).finally(() => {
      this.loadsInFlight--;
      h.loading = false;
      if (h.head.length > 0) this.schedule(h);
      else if (!h.inFlight && !h.diskMore) this.deactivate(h);
      else if (h.diskMore) this.maybeLoad(h);
    });
  }

  private async load(h: HostState<D>): Promise<void> {
    const want = this.opts.headSize - h.head.length;
    const range = h.lastLoaded
      ? { gt: h.lastLoaded, lt: prefixEnd(h.key), limit: want }
      : { gte: h.key, lt: prefixEnd(h.key), limit: want };
    const entries = await this.frontier.iterator(range).all();
    const corrupt: Buffer[] = [];
    for (const [key, value] of entries) {
      h.lastLoaded = key;
      const e = decodeEntry(value);
      if (!e) { corrupt.push(key); continue; }
      h.head.push({ url: e.url, kind: e.kind, depth: e.depth, hops: e.hops, key });
    }
    if (entries.length < want && !h.committedDuringLoad) h.diskMore = false;
    if (corrupt.length) {
      // An unreadable entry cannot be fetched; drop it from disk so it is not re-read forever.
      this.corruptEntries += corrupt.length;
      this.queued -= corrupt.length;
      await this.frontier.batch(corrupt.map((key) => ({ type: 'del' as const, key })));
    }
  }
}
