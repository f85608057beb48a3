// The frontier: Mercator's dual queue (Heydon & Najork, "Mercator: A scalable,
// extensible Web crawler", WWW 1999, §3.2 and Fig. 3), kept on disk.
//
// Front queues (priority) × back queues (one per host) become one LevelDB key:
//
//     host-hash (8 B) ‖ rank (1 B) ‖ seq (8 B, big-endian, agent-wide counter)
//
// where rank = 7 − priority class (src/frontier/priority.ts), so inside one
// host's key range the best class sorts first and each class is FIFO. Every
// queued URL lives only there. In memory there are
//   - a small record per host with queued work: flags, a bitmask of the classes
//     it may have on disk, and one read cursor (a seq) per class;
//   - for each *active* host (at most `maxActiveHosts`, about 3 × concurrency),
//     a head of at most `headSize` URLs, split by class;
//   - the hosts waiting for activation, one FIFO per best class (Mercator's
//     front queues decide which host gets a back queue next);
//   - the active hosts with work, in a min-heap on next-allowed time, and those
//     already due in one min-heap per class: the best due class goes first.
// Memory therefore grows with the number of hosts, never with the number of URLs.
//
// Priority is kept between hosts at three points: among due hosts (best class
// first), at activation (the best waiting class first), and by rotation — at
// the end of its turn, an active host whose best work is worse than a waiting
// host's gives its slot up (Mercator refills a back queue from the front queues
// in priority order; here the URLs simply stay on disk). A host never waits in
// two places, is handed out only once its next-allowed time has passed, and is
// in flight from `nextReady` to `release`, so politeness does not depend on
// priorities at all.
//
// Head loads are one LevelDB range scan each, at most `maxConcurrentLoads` at a
// time, through a small pool of iterators (see `acquireIterator` for why).
//
// Why one cursor per class is enough (and keeps "no duplicates" simple): seqs
// are handed out in increasing order and batches are committed in that order
// (the DRUM runs one round at a time), so a URL arriving in class c always sorts
// after everything already read from class c. A class's head is therefore a
// FIFO window [first in head … cursor) of its disk range; the URLs taken from
// it (in flight until acknowledged) all lie before that window, and are never
// read again however the window is moved forward or back.
//
// A URL leaves the disk only when the caller acknowledges it (`doneOp`), in the
// same batch that records the fetch: a crash re-queues exactly the URLs that
// were in flight (docs/storage.md).
import type { BatchOp, Sublevel } from '../store/db.js';
import { MinHeap, type HeapSlot } from '../util/heap.js';
import { HOST_KEY_BYTES } from '../store/keys.js';
import { MAX_PRIORITY, PRIORITY_CLASSES, clampClass, priorityClass } from './priority.js';

/** What a queued URL is: a page, or a sitemap to parse for URLs (Sitemaps 0.90). */
export type UrlKind = 'page' | 'sitemap';

/**
 * A URL handed out by the frontier. Its frontier key is rebuilt on demand from
 * the host's key, class and seq rather than kept: a loaded head would otherwise
 * pin one store-allocated buffer per URL.
 */
export class QueuedUrl {
  constructor(
    /** The host's 8-byte key (shared by all URLs of the host). */
    readonly hostKey: Buffer,
    public url: string,
    public kind: UrlKind,
    public depth: number,
    /** How many times the mesh forwarded it (kept for re-forwarding). */
    public hops: number,
    /** Priority class 0–7 (7 is served first). */
    public priority: number,
    /** Position in the agent-wide enqueue order (FIFO within a class). */
    public seq: number,
  ) {}

  /** Retries already made after transient failures (memory only: a restart, or an eviction from the head, starts over). */
  attempt?: number;
  /** A retry waits until this epoch ms; the host's other URLs go first meanwhile. */
  notBefore?: number;

  /** Frontier key (host hash ‖ rank ‖ seq). */
  get key(): Buffer { return frontierKey(this.hostKey, MAX_PRIORITY - this.priority, this.seq); }
}

/** A move to a better class prepared by `moveOps`: apply `ops`, then `moved`. */
export interface FrontierMove {
  ops: BatchOp[];
  /** The URL as queued again (its new key in `frontierKey`). */
  item: NewUrl;
  /** Its old frontier key, latin1. */
  oldKey: string;
}

export interface NewUrl {
  host: string;
  hostKey: Buffer;
  kind?: UrlKind;
  url: string;
  depth: number;
  hops: number;
  /**
   * Priority class 0–7 (7 first), e.g. from `priorityClass()` (the agent passes
   * depth and sitemap priority; recrawl may pass `dueAt`). Absent: the class for
   * `depth` alone. `enqueueOps` stores the class it used here.
   */
  priority?: number;
  /** Filled in by `enqueueOps`. */
  frontierKey?: Buffer;
}

/** One host's record. The agent reads `name`, `key` and `data`; the rest is the frontier's bookkeeping. */
export interface HostState<D> extends HeapSlot {
  readonly name: string;
  readonly key: Buffer;
  /** Loaded URLs by rank (0 = class 7); only while active. */
  heads: (QueuedUrl[] | undefined)[] | undefined;
  /** URLs held in `heads` (≤ headSize). */
  headCount: number;
  /**
   * This host's URLs on disk not yet acknowledged (exact once the recovery pass
   * is over; acknowledgements count only when `acknowledged` is given the host).
   */
  queued: number;
  /** Bit r: heads[r] is not empty. */
  headMask: number;
  /** Bit r: disk may hold URLs of rank r at or after cursor[r]. */
  diskMask: number;
  /** Bit r: URLs of rank r were committed while a load ran (its view may have missed them). */
  dirtyMask: number;
  /** Per rank, the first seq not yet read into memory (undefined = all 0). */
  cursor: number[] | undefined;
  /** URLs handed out (`take`, `remove`) and neither put back nor acknowledged yet; undefined when none. */
  taken: QueuedUrl[] | undefined;
  loading: boolean;
  /** Queued for a load slot. */
  loadWaiting: boolean;
  /** `commitEpoch` of the last batch that queued URLs for this host. */
  commitEpoch: number;
  active: boolean;
  pending: boolean;
  /** Rank of the pending queue this host waits in. */
  pendingRank: number;
  /** -1 not ready, 0–7 in the due heap of that rank, 8 in the waiting heap. */
  readyIn: number;
  inFlight: boolean;
  /** Epoch ms before which this host must not be contacted. */
  nextAllowed: number;
  /** Paused hosts stay queued but are never dispatched. */
  paused: boolean;
  /** Paused for long (an operator's pause, not a handoff's): the host gives its active slot up (`setPaused`). */
  yieldsSlot: boolean;
  /** Per-host data owned by the caller (robots, politeness state). */
  data: D;
}

export interface FrontierOptions<D> {
  maxActiveHosts: number;
  headSize: number;
  /**
   * Head loads (LevelDB range reads) running at once; default 8. The reads
   * share libuv's 4 threads anyway, and each busy iterator holds native read
   * buffers, so more only costs memory.
   */
  maxConcurrentLoads?: number;
  /**
   * An active host keeps its slot while its best class is at most this many
   * classes below the best waiting host's (default 0: it gives the slot up as
   * soon as a waiting host has strictly better work).
   */
  rotationSlack?: number;
  createData(host: string): D;
  /** Earliest first contact for a host this frontier has not seen before (mesh: the previous owner may just have fetched it). */
  initialNextAllowed?(host: string): number;
}

/** Counters for tests, benchmarks and the summary. */
export interface FrontierStats {
  loads: number;
  /** Active hosts sent back to disk to make room for hosts with better work. */
  rotations: number;
  /** Loaded URLs pushed back to disk to make room in a head for a better class. */
  evicted: number;
  /** Entries in the old 16-byte key layout rewritten by `recover`. */
  migrated: number;
  /** Queued URLs moved to a better class (`moveOps`, in-link promotions). */
  moved: number;
}

const SEQ_KEY = Buffer.from('seq');
/** Key layout marker in `meta`: 2 = host ‖ rank ‖ seq. Absent on stores from before priority classes. */
const LAYOUT_KEY = Buffer.from('frontier-layout');
const LAYOUT = 2;
const RANKS = PRIORITY_CLASSES;
const KEY_BYTES = HOST_KEY_BYTES + 1 + 8;
const LEGACY_KEY_BYTES = HOST_KEY_BYTES + 8;
const NOT_READY = -1;
const WAITING = RANKS;
const TWO32 = 4294967296;

/** Index of the lowest set bit (the best rank in a mask); mask must be non-zero. */
const lowest = (m: number): number => 31 - Math.clz32(m & -m);
/** Index of the highest set bit (the worst rank in a mask); mask must be non-zero. */
const highest = (m: number): number => 31 - Math.clz32(m);

function readSeq(key: Buffer, off: number): number {
  return key.readUInt32BE(off) * TWO32 + key.readUInt32BE(off + 4);
}

function writeSeq(buf: Buffer, off: number, seq: number): void {
  buf.writeUInt32BE(Math.floor(seq / TWO32), off);
  buf.writeUInt32BE(seq >>> 0, off + 4);
}

/** Frontier key of (host, rank, seq). */
export function frontierKey(hostKey: Buffer, rank: number, seq: number): Buffer {
  const key = Buffer.allocUnsafe(KEY_BYTES);
  hostKey.copy(key, 0, 0, HOST_KEY_BYTES);
  key[HOST_KEY_BYTES] = rank;
  writeSeq(key, HOST_KEY_BYTES + 1, seq);
  return key;
}

// Entry value: byte 0 = form and kind, byte 1 = depth, byte 2 = hops, then the URL.
// The class is not in the value: it is the key's rank byte. Forms 3–6 leave
// out "http://" or "https://" and the host name: every entry of a host sits
// under that host's key, whose record holds the name, so repeating it in each
// value only cost disk, page cache (LevelDB maps its tables: docs/performance.md
// "Frontier") and compaction work — about a third of an entry's bytes.
// Forms 1–2 (the full URL) are what stores written before forms 3–6 hold, and
// what a URL whose authority is not just the host name (user info, a host
// spelled differently) still gets.
const ENTRY_PAGE = 1;
const ENTRY_SITEMAP = 2;
const ENTRY_PAGE_HTTP = 3;
const ENTRY_SITEMAP_HTTP = 4;
const ENTRY_PAGE_HTTPS = 5;
const ENTRY_SITEMAP_HTTPS = 6;
const ENTRY_FORMS = 6;

/** Length of "http://host" or "https://host" at the start of `url` when what follows is a port, a path or nothing; 0 otherwise. */
function originLength(url: string, host: string): number {
  const scheme = url.startsWith('http://') ? 7 : url.startsWith('https://') ? 8 : 0;
  if (scheme === 0 || host.length === 0 || !url.startsWith(host, scheme)) return 0;
  const end = scheme + host.length;
  const next = url.charCodeAt(end);
  return Number.isNaN(next) || next === 0x2f /* / */ || next === 0x3a /* : */ ? end : 0;
}

/** A frontier entry's value; with `host` (the host the entry is queued under), in the short form when the URL allows it. */
export function encodeEntry(url: string, depth: number, hops: number, kind: UrlKind = 'page', host?: string): Buffer {
  const cut = host === undefined ? 0 : originLength(url, host);
  const rest = cut ? url.substring(cut) : url;
  const len = Buffer.byteLength(rest, 'utf8');
  const out = Buffer.allocUnsafe(3 + len);
  const form = cut === 0 ? ENTRY_PAGE : cut === 7 + host!.length ? ENTRY_PAGE_HTTP : ENTRY_PAGE_HTTPS;
  out[0] = kind === 'sitemap' ? form + 1 : form;
  out[1] = Math.min(depth, 255);
  out[2] = Math.min(hops, 255);
  out.write(rest, 3, len, 'utf8');
  return out;
}

/** Whether byte 0 of a value names a known form (forms 1–2 need at least one URL byte; a short form may be empty: "http://host"). */
function validForm(value: Buffer): boolean {
  const v0 = value[0]!;
  return value.length >= 3 && v0 >= ENTRY_PAGE && v0 <= ENTRY_FORMS && (v0 > ENTRY_SITEMAP || value.length >= 4);
}

/** The URL of an entry queued under `host` (undefined for a short form without a host). */
function entryUrl(value: Buffer, host: string | undefined): string | undefined {
  const v0 = value[0]!;
  if (v0 <= ENTRY_SITEMAP) return value.toString('utf8', 3);
  if (host === undefined) return undefined;
  return (v0 <= ENTRY_SITEMAP_HTTP ? 'http://' : 'https://') + host + value.toString('utf8', 3);
}

/** Forms come in page/sitemap pairs: even bytes are sitemaps. */
function entryKind(value: Buffer): UrlKind {
  return value[0]! % 2 === 0 ? 'sitemap' : 'page';
}

/** Decodes an entry; `host` is the host it is queued under (needed for the short forms). */
export function decodeEntry(value: Buffer, host?: string): { url: string; depth: number; hops: number; kind: UrlKind } | undefined {
  if (!validForm(value)) return undefined;
  const url = entryUrl(value, host);
  if (url === undefined) return undefined;
  return { depth: value[1]!, hops: value[2]!, url, kind: entryKind(value) };
}

/** Errors from reads that raced a closing store: not failures of the frontier. */
function storeClosed(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return code === 'LEVEL_DATABASE_NOT_OPEN' || code === 'LEVEL_ITERATOR_NOT_OPEN';
}

/** What the pool uses of a frontier iterator (abstract-level's, byte keys and values). */
interface SublevelIterator {
  seek(target: Buffer): void;
  nextv(size: number): Promise<[Buffer, Buffer][]>;
  close(): Promise<void>;
}

interface PooledIterator {
  it: SublevelIterator;
  /** `commitEpoch` when it was created: its snapshot holds every batch committed up to then. */
  epoch: number;
  uses: number;
  createdAt: number;
  busy: boolean;
  broken: boolean;
}

/** A pooled iterator is replaced after this many loads or this age (it pins a LevelDB version). */
const ITERATOR_USES = 1024;
const ITERATOR_AGE_MS = 1000;

interface KeyIterator {
  nextv(size: number): Promise<Buffer[]>;
  close(): Promise<void>;
}

export class Frontier<D> {
  private readonly hosts = new Map<string, HostState<D>>();
  /** Active, servable hosts not yet due, by next-allowed time. */
  private readonly waiting = new MinHeap<HostState<D>>((h) => h.nextAllowed);
  /** Active, servable hosts already due, one heap per best rank. */
  private readonly due: MinHeap<HostState<D>>[] = [];
  /** Hosts with work on disk waiting for activation, one FIFO per best rank (entries may be stale). */
  private readonly pendingQ: HostState<D>[][] = [];
  private readonly pendingAt: number[] = [];
  private pendingCount = 0;
  private activeCount = 0;
  private loadsInFlight = 0;
  private readonly maxLoads: number;
  private readonly slack: number;
  /** Active hosts waiting for a load slot (FIFO; entries of hosts that left are skipped). */
  private loadWait: HostState<D>[] = [];
  private loadWaitAt = 0;
  private pool: PooledIterator[] = [];
  /** Counts `committed` calls; a host remembers the last one that touched it. */
  private commitEpoch = 0;
  private seq = 0;
  private readonly headSize: number;
  /** URLs on disk not yet acknowledged (exact once the recovery pass is over, then maintained). */
  queued = 0;
  /** Entries that could not be decoded (dropped and counted). */
  corruptEntries = 0;
  /** True while the startup pass of `recover` still runs (hosts it has not reached yet are not known). */
  recovering = false;
  private recovered: Promise<void> = Promise.resolve();
  /** Keys (latin1) of hosts `dropHost` removed while the recovery pass ran. */
  private droppedDuringRecovery: Set<string> | undefined;
  readonly stats: FrontierStats = { loads: 0, rotations: 0, evicted: 0, migrated: 0, moved: 0 };
  /**
   * Old keys (latin1) of URLs being moved to a better class (`moveOps`), with
   * the load count at the time the move was written (-1 while it is not): a
   * head load reads a snapshot that may still hold the old entry, so it skips
   * these. An old key is forgotten once every load still running started
   * after its move was written (its snapshot no longer has the entry).
   */
  private readonly moving = new Map<string, number>();
  /** Loads started so far, and the start numbers of those still running. */
  private loadStarts = 0;
  private readonly runningLoads = new Set<number>();
  /** Keys (latin1) acknowledged since `watchAcks` (the caller's reads may predate them). */
  private ackWatch: Set<string> | undefined;
  /** A host entered the ready structures (it is about to be dispatched): the scheduler is told through this callback. */
  onReady: (h: HostState<D>) => void = () => {};
  onLoadError: (host: string, err: Error) => void = () => {};

  constructor(
    private readonly frontier: Sublevel,
    private readonly hostNames: Sublevel,
    private readonly meta: Sublevel,
    private readonly opts: FrontierOptions<D>,
  ) {
    this.headSize = Math.max(1, Math.floor(opts.headSize));
    this.maxLoads = Math.max(1, Math.floor(opts.maxConcurrentLoads ?? 8));
    this.slack = Math.max(0, Math.floor(opts.rotationSlack ?? 0));
    for (let r = 0; r < RANKS; r++) {
      this.due.push(new MinHeap<HostState<D>>((h) => h.nextAllowed));
      this.pendingQ.push([]);
      this.pendingAt.push(0);
    }
  }

  get activeHosts(): number { return this.activeCount; }
  get knownHosts(): number { return this.hosts.size; }
  get pendingHosts(): number { return this.pendingCount; }

  /** Active hosts in the ready structures (due, or waiting on their clock); the other active ones are in flight, loading or paused. */
  get readyHosts(): number {
    let n = this.waiting.size;
    for (const d of this.due) n += d.size;
    return n;
  }

  /** Head loads (LevelDB range reads) running now. */
  get loadsRunning(): number { return this.loadsInFlight; }

  /** True when nothing is queued, loading or in flight. */
  get idle(): boolean {
    return this.queued === 0 && this.loadsInFlight === 0 && !this.recovering;
  }

  host(name: string): HostState<D> | undefined { return this.hosts.get(name); }

  /** Every host record (tests and diagnostics). */
  allHosts(): IterableIterator<HostState<D>> { return this.hosts.values(); }

  // ---- recovery ------------------------------------------------------------

  /**
   * Rebuilds the in-memory view from disk after a (re)start: one pass over the
   * frontier's keys counts the queued URLs and finds, per host, the classes that
   * hold work. The pass reads a snapshot, so it can run while the frontier is
   * in use: `recover` resolves after the first chunk of keys (the first hosts
   * are already pending and served), and the rest of the pass continues in the
   * background (`recovering`, `whenRecovered()`). Counting stays exact: the
   * snapshot counts what was queued before it, `committed`/`acknowledged` count
   * everything after. A store from before priority classes (keys host ‖ seq) is
   * instead scanned to the end before `recover` resolves, rewriting those keys.
   */
  async recover(): Promise<void> {
    const seqBytes = await this.meta.get(SEQ_KEY);
    if (seqBytes && seqBytes.length === 8) this.seq = readSeq(seqBytes, 0);
    const layout = await this.meta.get(LAYOUT_KEY);
    if (!layout || layout[0] !== LAYOUT) {
      await this.scan(true, undefined);
      await this.meta.put(LAYOUT_KEY, Buffer.from([LAYOUT]));
      this.fillActive();
      return;
    }
    this.recovering = true;
    let firstChunk!: () => void;
    const started = new Promise<void>((resolve) => { firstChunk = resolve; });
    this.recovered = this.scan(false, firstChunk).then(
      () => { this.recovering = false; this.droppedDuringRecovery = undefined; },
      (err: Error) => {
        this.recovering = false;
        this.droppedDuringRecovery = undefined;
        if (!storeClosed(err)) this.onLoadError('(recovery)', err);
      },
    ).finally(firstChunk);
    await started;
  }

  /** Resolves when the startup pass of `recover` has seen every key. */
  whenRecovered(): Promise<void> { return this.recovered; }

  private async scan(migrate: boolean, onFirstChunk: (() => void) | undefined): Promise<void> {
    const it = this.frontier.keys() as unknown as KeyIterator;
    let maxSeq = 0;
    try {
      for (;;) {
        const keys = await it.nextv(8192);
        if (keys.length === 0) break;
        // Group the chunk by host (keys are sorted, so a host's keys are adjacent;
        // a host cut by the chunk boundary is simply seen twice).
        const hostKeys: Buffer[] = [];
        const masks: number[] = [];
        const counts: number[] = [];
        const firstKey: number[] = [];
        let legacy: Buffer[] | undefined;
        let corrupt: Buffer[] | undefined;
        let hi = -1, lo = -1;
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i]!;
          const legacyKey = key.length === LEGACY_KEY_BYTES && migrate;
          if ((key.length !== KEY_BYTES && !legacyKey) || (!legacyKey && key[HOST_KEY_BYTES]! >= RANKS)) { (corrupt ??= []).push(key); continue; }
          const h0 = key.readUInt32BE(0), h1 = key.readUInt32BE(4);
          if (h0 !== hi || h1 !== lo) {
            hi = h0; lo = h1;
            hostKeys.push(Buffer.from(key.subarray(0, HOST_KEY_BYTES)));
            masks.push(0);
            counts.push(0);
            firstKey.push(i);
          }
          const s = readSeq(key, key.length - 8);
          if (s >= maxSeq) maxSeq = s + 1;
          if (legacyKey) { (legacy ??= []).push(key); continue; }
          masks[masks.length - 1]! |= 1 << key[HOST_KEY_BYTES]!;
          counts[counts.length - 1]!++;
        }
        if (legacy) await this.migrate(legacy, hostKeys, masks, counts);
        if (corrupt) await this.dropCorrupt(corrupt);
        const names = hostKeys.length ? await this.hostNames.getMany(hostKeys) : [];
        for (let j = 0; j < hostKeys.length; j++) {
          if (counts[j] === 0) continue;
          const name = names[j]?.toString('utf8');
          if (!name) {
            // A host record is written in the same batch as its first URL; absent means corruption.
            // Its URLs cannot be attributed to a host: the ones this pass saw are dropped (and counted).
            const end = j + 1 < firstKey.length ? firstKey[j + 1]! : keys.length;
            await this.dropCorrupt(keys.slice(firstKey[j]!, end).filter((k) => k.length === KEY_BYTES));
            continue;
          }
          this.queued += counts[j]!;
          if (this.droppedDuringRecovery?.has(hostKeys[j]!.toString('latin1'))) {
            // Handed over (and deleted) after this pass's snapshot: `dropHost`
            // subtracted these entries already; they are not queued here any more.
            continue;
          }
          const h = this.ensureHost(name, hostKeys[j]!);
          h.queued += counts[j]!;
          h.diskMask |= masks[j]!;
          if (h.active) this.maybeLoad(h); else this.makePending(h);
        }
        this.fillActive();
        if (onFirstChunk) { onFirstChunk(); onFirstChunk = undefined; }
      }
    } finally {
      await it.close();
    }
    // The counter is written in every enqueue batch, so this only matters for a damaged store.
    if (maxSeq > this.seq) this.seq = maxSeq;
  }

  /** Rewrites entries of the pre-priority layout (host ‖ seq) as host ‖ rank ‖ seq. */
  private async migrate(keys: Buffer[], hostKeys: Buffer[], masks: number[], counts: number[]): Promise<void> {
    const values = await this.frontier.getMany(keys);
    const ops: Array<{ type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer }> = [];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!, value = values[i];
      ops.push({ type: 'del', key });
      const e = value && decodeEntry(value);
      if (!e) { this.corruptEntries++; continue; }
      const rank = MAX_PRIORITY - priorityClass({ depth: e.depth });
      ops.push({ type: 'put', key: frontierKey(key, rank, readSeq(key, HOST_KEY_BYTES)), value: value! });
      for (let j = hostKeys.length - 1; j >= 0; j--) {
        if (hostKeys[j]!.compare(key, 0, HOST_KEY_BYTES) === 0) { masks[j]! |= 1 << rank; counts[j]!++; break; }
      }
      this.stats.migrated++;
    }
    await this.frontier.batch(ops);
  }

  private async dropCorrupt(keys: Buffer[]): Promise<void> {
    if (keys.length === 0) return;
    this.corruptEntries += keys.length;
    await this.frontier.batch(keys.map((key) => ({ type: 'del' as const, key })));
  }

  // ---- enqueue ---------------------------------------------------------------

  /**
   * Operations that queue these (new) URLs; apply them atomically, then call
   * `committed` with the same items. Batches must be committed in the order
   * their operations were built (the DRUM runs one round at a time).
   */
  enqueueOps(items: NewUrl[]): BatchOp[] {
    const ops: BatchOp[] = [];
    for (const it of items) {
      const p = clampClass(it.priority, it.depth);
      it.priority = p;
      const key = frontierKey(it.hostKey, MAX_PRIORITY - p, this.seq++);
      it.frontierKey = key;
      ops.push({ type: 'put', sublevel: this.frontier, key, value: encodeEntry(it.url, it.depth, it.hops, it.kind, it.host) });
      if (!this.hosts.has(it.host)) ops.push({ type: 'put', sublevel: this.hostNames, key: it.hostKey, value: Buffer.from(it.host) });
    }
    const seq = Buffer.allocUnsafe(8);
    writeSeq(seq, 0, this.seq);
    ops.push({ type: 'put', sublevel: this.meta, key: SEQ_KEY, value: seq });
    return ops;
  }

  /** Updates memory after the batch from `enqueueOps` is durable. */
  committed(items: NewUrl[]): void {
    const epoch = ++this.commitEpoch;
    for (const it of items) {
      this.queued++;
      const h = this.ensureHost(it.host, it.hostKey);
      h.queued++;
      h.commitEpoch = epoch;
      const key = it.frontierKey!;
      const rank = key[HOST_KEY_BYTES]!;
      const bit = 1 << rank;
      if (!h.active) {
        h.diskMask |= bit;
        this.makePending(h);
        continue;
      }
      if (h.loading) {
        // The load's snapshot may or may not include it: leave it to the disk side.
        h.diskMask |= bit;
        h.dirtyMask |= bit;
      } else if (h.diskMask & bit) {
        // Older URLs of this class are still on disk; it queues behind them.
        this.maybeLoad(h);
      } else {
        const seq = readSeq(key, HOST_KEY_BYTES + 1);
        const cursor = h.cursor ??= new Array<number>(RANKS).fill(0);
        // Below the cursor means an earlier load's snapshot already saw it: it is held or taken.
        if (seq >= cursor[rank]!) {
          // The whole class is in memory: append, making room from a worse class if needed.
          if (h.headCount >= this.headSize && highest(h.headMask) > rank) this.evictTail(h, highest(h.headMask), 1);
          if (h.headCount < this.headSize) {
            const arr = h.heads![rank] ??= [];
            arr.push(new QueuedUrl(h.key, it.url, it.kind ?? 'page', it.depth, it.hops, MAX_PRIORITY - rank, seq));
            h.headMask |= bit;
            h.headCount++;
            cursor[rank] = seq + 1;
          } else {
            h.diskMask |= bit;
          }
        }
      }
      this.schedule(h);
    }
    this.fillActive();
  }

  // ---- dispatch --------------------------------------------------------------

  /**
   * The due host (next-allowed time ≤ now) whose best queued class is highest;
   * among equals, the one due longest. Undefined if no host is due.
   */
  nextReady(now: number): HostState<D> | undefined {
    for (let top = this.waiting.peek(); top && top.nextAllowed <= now; top = this.waiting.peek()) {
      this.waiting.pop();
      const r = lowest(top.headMask | top.diskMask);
      this.due[r]!.push(top);
      top.readyIn = r;
    }
    for (let r = 0; r < RANKS; r++) {
      const heap = this.due[r]!;
      const top = heap.peek();
      // The check matters only if `now` went backwards since the host was moved here.
      if (top && top.nextAllowed <= now) {
        heap.pop();
        top.readyIn = NOT_READY;
        top.inFlight = true; // handed out: in flight until `release`, whatever happens before `take`
        return top;
      }
    }
    return undefined;
  }

  /** When the earliest ready host becomes due (undefined if none waits). */
  nextWake(): number | undefined {
    let t = this.waiting.peek()?.nextAllowed;
    for (let r = 0; r < RANKS; r++) {
      const top = this.due[r]!.peek();
      if (top && (t === undefined || top.nextAllowed < t)) t = top.nextAllowed;
    }
    return t;
  }

  /**
   * Takes the next URL of a host handed out by `nextReady`: the oldest URL of
   * its best class. The host is in flight until `release`. Undefined when the
   * host has nothing in memory for its best class (a load is under way).
   */
  take(h: HostState<D>): QueuedUrl | undefined {
    h.inFlight = true;
    this.unready(h);
    const m = h.headMask | h.diskMask;
    if (!h.heads || m === 0) return undefined;
    const r = lowest(m);
    if ((h.headMask & (1 << r)) === 0) { this.maybeLoad(h); return undefined; }
    const q = this.removeAt(h, r, 0);
    (h.taken ??= []).push(q);
    return q;
  }

  /** The URL is no longer handed out (put back or acknowledged). */
  private untake(h: HostState<D>, q: QueuedUrl): void {
    const t = h.taken;
    if (!t) return;
    const i = t.indexOf(q);
    if (i < 0) return;
    if (t.length === 1) h.taken = undefined;
    else t.splice(i, 1);
  }

  /**
   * Puts a URL taken from this host back (e.g. it waits for robots.txt). Only
   * for the URL most recently taken from the host, before it is acknowledged.
   */
  unshift(h: HostState<D>, q: QueuedUrl): void {
    this.untake(h, q);
    const r = MAX_PRIORITY - q.priority;
    if (!h.active || !h.heads) {
      // No head to hold it: move the class's read cursor back so it is read again.
      const cursor = h.cursor ??= new Array<number>(RANKS).fill(0);
      if (q.seq < cursor[r]!) cursor[r] = q.seq;
      h.diskMask |= 1 << r;
      this.makePending(h);
      this.fillActive();
      return;
    }
    this.insertSorted(h, r, q);
    if (!h.loading) this.trim(h);
    this.schedule(h);
  }

  /** The URLs a host holds in memory, best class first, oldest first within a class (a read-only view). */
  *inMemory(h: HostState<D>): IterableIterator<QueuedUrl> {
    if (!h.heads) return;
    let m = h.headMask;
    while (m !== 0) {
      const r = lowest(m);
      m &= ~(1 << r);
      yield* h.heads[r]!;
    }
  }

  /**
   * Takes one URL found through `inMemory` out of the host's head, while the
   * host is in flight (e.g. a due URL chosen over a retry that must wait).
   */
  remove(h: HostState<D>, q: QueuedUrl): boolean {
    const r = MAX_PRIORITY - q.priority;
    const i = h.heads?.[r]?.indexOf(q) ?? -1;
    if (i < 0) return false;
    this.removeAt(h, r, i);
    (h.taken ??= []).push(q);
    return true;
  }

  /** Takes the i-th URL of a host's rank-r head out (keeping the masks and counts), and tops the head up. */
  private removeAt(h: HostState<D>, r: number, i: number): QueuedUrl {
    const arr = h.heads![r]!;
    const q = i === 0 ? arr.shift()! : arr.splice(i, 1)[0]!;
    if (arr.length === 0) h.headMask &= ~(1 << r);
    h.headCount--;
    this.maybeLoad(h);
    return q;
  }

  /** Ends a host's turn; it may be contacted again from `nextAllowed` on. */
  release(h: HostState<D>, nextAllowed: number): void {
    h.inFlight = false;
    h.nextAllowed = nextAllowed;
    if (!h.active) return;
    const m = h.headMask | h.diskMask;
    if (m === 0 || h.yieldsSlot) {
      // A host paused for long gives its slot up: its URLs wait on disk, not in a slot another host could use.
      if (!h.loading) this.deactivate(h);
      return;
    }
    // Mercator's back-queue refill, by priority: a host whose best work is worse
    // than a waiting host's gives its slot up (its URLs stay on disk).
    if (!h.loading && this.activeCount >= this.opts.maxActiveHosts && this.bestPendingRank() + this.slack < lowest(m)) {
      this.stats.rotations++;
      this.deactivate(h);
      return;
    }
    this.maybeLoad(h);
    this.schedule(h);
  }

  /**
   * Holds a host that is not in flight as if handed out, for a request made
   * on another host's turn (a robots.txt redirect across hosts); `release`
   * ends it. False if it is in flight already.
   */
  hold(h: HostState<D>): boolean {
    if (h.inFlight) return false;
    h.inFlight = true;
    this.unready(h);
    return true;
  }

  /**
   * A paused host is never dispatched. With `yieldSlot` (an operator's pause, which may last the whole
   * run) it also gives its active slot up — at once, or at the end of its turn or load — so pausing
   * more hosts than there are slots holds no other host back; resumed, it waits for a slot again like
   * any host with work on disk. A handoff's short pause keeps the slot.
   */
  setPaused(h: HostState<D>, paused: boolean, yieldSlot = false): void {
    h.paused = paused;
    h.yieldsSlot = paused && yieldSlot;
    if (h.yieldsSlot) {
      if (h.pending) { h.pending = false; this.pendingCount--; } // its queue entry is now stale and skipped
      if (h.active && !h.inFlight && !h.loading) { this.deactivate(h); return; }
    } else if (!paused && !h.active && this.hosts.get(h.name) === h) {
      this.makePending(h);
      this.fillActive();
    }
    this.schedule(h);
  }

  /** Operation that removes an acknowledged URL from the disk queue. */
  doneOp(q: QueuedUrl): BatchOp {
    return { type: 'del', sublevel: this.frontier, key: q.key };
  }

  /** Memory bookkeeping after `doneOp` was written (with the host, its own count too; with the URL, it is no longer handed out). */
  acknowledged(count = 1, h?: HostState<D>, q?: QueuedUrl): void {
    this.queued -= count;
    if (h) {
      h.queued -= count;
      if (q) this.untake(h, q);
    }
    if (q && this.ackWatch) this.ackWatch.add(q.key.toString('latin1'));
  }

  /**
   * From now until `unwatchAcks`, `moveOps` refuses URLs acknowledged
   * meanwhile: a caller that read a URL's entry before its completion landed
   * must not queue it again (its cursor position alone cannot tell, after a
   * take out of order and a rotation).
   */
  watchAcks(): void { this.ackWatch = new Set(); }
  unwatchAcks(): void { this.ackWatch = undefined; }

  /**
   * Moving a queued URL to a better class (the agent's in-link promotions):
   * the ops that delete its entry `key` and queue it again with `priority`,
   * under a new seq (the end of that class's FIFO: a class is read in seq
   * order, and its cursor may be past the old seq). Undefined when it cannot
   * be moved safely now: the recovery pass still runs, the host is unknown or
   * paused (a handoff), the class is not better, the URL is handed out (taken
   * and not yet put back or acknowledged — callers acknowledge with the URL)
   * or waits for a retry, or it is neither in the host's head nor unread on
   * disk. Run it between seen-set rounds; apply the ops atomically with the
   * URL's new seen value, then call `moved`.
   */
  moveOps(key: Buffer, host: string, entry: { url: string; depth: number; hops: number; kind: UrlKind }, priority: number): FrontierMove | undefined {
    if (this.recovering || key.length !== KEY_BYTES) return undefined;
    // Being moved already (the same URL twice in one batch of promotions), or completed since the caller's reads.
    const oldKey = key.toString('latin1');
    if (this.moving.has(oldKey) || this.ackWatch?.has(oldKey)) return undefined;
    const h = this.hosts.get(host);
    if (!h || h.paused || !key.subarray(0, HOST_KEY_BYTES).equals(h.key)) return undefined;
    const r = key[HOST_KEY_BYTES]!;
    const p = clampClass(priority, entry.depth);
    if (r >= RANKS || MAX_PRIORITY - p >= r) return undefined;
    const seq = readSeq(key, HOST_KEY_BYTES + 1);
    // Handed out: its cursor position says nothing (a take out of order, then a rotation, moves the cursor below it).
    if (h.taken?.some((q) => q.seq === seq && q.priority === MAX_PRIORITY - r)) return undefined;
    if (seq < (h.cursor?.[r] ?? 0)) {
      // Read already: held in the head, or taken.
      const arr = h.active ? h.heads?.[r] : undefined;
      const i = arr ? arr.findIndex((q) => q.seq === seq) : -1;
      // A retry keeps its wait and attempt count only in memory: it stays where it is.
      if (i < 0 || arr![i]!.attempt !== undefined || arr![i]!.notBefore !== undefined) return undefined;
      this.removeAt(h, r, i);
      // Its best class may now have nothing in memory (or nothing at all until `moved`): not dispatchable meanwhile.
      this.schedule(h);
    }
    // Held or on disk: either way a load may meet the old entry until the move is written (a
    // rotation moves the class's cursor back below a URL that was held).
    this.moving.set(oldKey, -1);
    const newKey = frontierKey(h.key, MAX_PRIORITY - p, this.seq++);
    const seqValue = Buffer.allocUnsafe(8);
    writeSeq(seqValue, 0, this.seq);
    return {
      oldKey,
      ops: [
        { type: 'del', sublevel: this.frontier, key },
        { type: 'put', sublevel: this.frontier, key: newKey, value: encodeEntry(entry.url, entry.depth, entry.hops, entry.kind, host) },
        { type: 'put', sublevel: this.meta, key: SEQ_KEY, value: seqValue },
      ],
      item: { host, hostKey: h.key, kind: entry.kind, url: entry.url, depth: entry.depth, hops: entry.hops, priority: p, frontierKey: newKey },
    };
  }

  /** Memory after the batch of `moveOps` is durable (or failed: `written` false, the old entries stay). */
  moved(moves: FrontierMove[], written = true): void {
    const items: NewUrl[] = [];
    for (const m of moves) {
      if (written) this.moving.set(m.oldKey, this.loadStarts);
      else this.moving.delete(m.oldKey);
      items.push(m.item);
    }
    if (written) {
      // `committed` counts each item as newly queued; it was queued already.
      for (const it of items) {
        this.queued--;
        const h = this.hosts.get(it.host);
        if (h) h.queued--;
      }
      this.stats.moved += items.length;
      this.committed(items);
    }
    this.forgetMoves();
  }

  private forgetMoves(): void {
    if (this.moving.size === 0) return;
    let oldest = Infinity;
    for (const n of this.runningLoads) if (n < oldest) oldest = n;
    for (const [k, writtenAt] of this.moving) if (writtenAt >= 0 && writtenAt <= oldest) this.moving.delete(k);
  }

  /**
   * Forgets a host whose queue was handed to another agent: the caller deleted
   * its `removed` entries from disk (all of them, read after every commit that
   * touched the host). The host must be paused and not in flight; a head load
   * still running for it finds the host gone and discards what it read. A URL
   * of it committed later makes a fresh record.
   */
  dropHost(h: HostState<D>, removed: number): void {
    if (this.hosts.get(h.name) !== h) return;
    this.unready(h);
    if (h.active) { h.active = false; this.activeCount--; }
    if (h.pending) { h.pending = false; this.pendingCount--; } // its queue entry is now stale and skipped
    h.loadWaiting = false; // a load-wait entry is skipped: maybeLoad needs an active host
    h.heads = undefined;
    h.headCount = 0;
    h.headMask = 0;
    h.diskMask = 0;
    h.dirtyMask = 0;
    h.cursor = undefined;
    h.queued = 0;
    this.queued -= removed;
    this.hosts.delete(h.name);
    // The recovery pass may not have reached this host yet: it must not bring it back.
    if (this.recovering) (this.droppedDuringRecovery ??= new Set()).add(h.key.toString('latin1'));
    this.fillActive();
  }

  // ---- host records --------------------------------------------------------

  private ensureHost(name: string, key: Buffer): HostState<D> {
    let h = this.hosts.get(name);
    if (!h) {
      h = {
        name, key: Buffer.from(key.subarray(0, HOST_KEY_BYTES)), heads: undefined, headCount: 0, queued: 0, headMask: 0, diskMask: 0, dirtyMask: 0,
        cursor: undefined, taken: undefined, loading: false, loadWaiting: false, commitEpoch: 0, active: false, pending: false, pendingRank: 0, readyIn: NOT_READY, inFlight: false,
        nextAllowed: this.opts.initialNextAllowed?.(name) ?? 0, paused: false, yieldsSlot: false, heapIndex: -1, data: this.opts.createData(name),
      };
      this.hosts.set(name, h);
    }
    return h;
  }

  /** Queues an inactive host with work on disk for activation, in the FIFO of its best class. */
  private makePending(h: HostState<D>): void {
    if (h.active || h.yieldsSlot || h.diskMask === 0) return;
    const r = lowest(h.diskMask);
    if (h.pending && h.pendingRank <= r) return;
    if (!h.pending) this.pendingCount++;
    h.pending = true;
    h.pendingRank = r; // an entry in a worse queue, if any, is now stale and skipped
    const q = this.pendingQ[r]!;
    q.push(h);
    // Stale entries are skipped when reached; a queue that is rarely reached is compacted instead.
    if (q.length - this.pendingAt[r]! > 2 * this.pendingCount + 1024) this.compactPending(r);
  }

  private compactPending(r: number): void {
    const q = this.pendingQ[r]!;
    const kept = new Set<HostState<D>>();
    for (let i = this.pendingAt[r]!; i < q.length; i++) if (this.isPendingAt(q[i]!, r)) kept.add(q[i]!);
    this.pendingQ[r] = [...kept];
    this.pendingAt[r] = 0;
  }

  /** Best rank with a (non-stale) pending host, or RANKS if none. */
  private bestPendingRank(): number {
    if (this.pendingCount === 0) return RANKS;
    for (let r = 0; r < RANKS; r++) {
      const q = this.pendingQ[r]!;
      let i = this.pendingAt[r]!;
      while (i < q.length && !this.isPendingAt(q[i]!, r)) i++;
      this.pendingAt[r] = i;
      if (i < q.length) return r;
      q.length = 0;
      this.pendingAt[r] = 0;
    }
    return RANKS;
  }

  private isPendingAt(h: HostState<D>, r: number): boolean {
    // A dropped host's entry is stale (dropHost clears `pending`; the map check guards a reused name).
    return h.pending && h.pendingRank === r && !h.active && this.hosts.get(h.name) === h;
  }

  private popPending(): HostState<D> | undefined {
    if (this.pendingCount === 0) return undefined;
    for (let r = 0; r < RANKS; r++) {
      const q = this.pendingQ[r]!;
      let i = this.pendingAt[r]!;
      while (i < q.length) {
        const h = q[i++]!;
        if (!this.isPendingAt(h, r)) continue;
        h.pending = false;
        this.pendingCount--;
        if (i === q.length) { q.length = 0; i = 0; }
        else if (i > 1024 && i * 2 > q.length) { q.splice(0, i); i = 0; }
        this.pendingAt[r] = i;
        return h;
      }
      q.length = 0;
      this.pendingAt[r] = 0;
    }
    return undefined;
  }

  private fillActive(): void {
    while (this.activeCount < this.opts.maxActiveHosts) {
      const h = this.popPending();
      if (!h) break;
      h.active = true;
      h.heads = new Array<QueuedUrl[] | undefined>(RANKS);
      h.headCount = 0;
      h.headMask = 0;
      this.activeCount++;
      this.maybeLoad(h);
    }
  }

  /**
   * Gives up a host's active slot. Loaded URLs go back to the disk side by
   * moving each class's cursor back to its first one; the URLs taken earlier
   * lie before it and so are never read twice.
   */
  private deactivate(h: HostState<D>): void {
    if (!h.active || h.loading) return;
    if (h.headMask !== 0) {
      const cursor = h.cursor ??= new Array<number>(RANKS).fill(0);
      for (let m = h.headMask; m !== 0; m &= m - 1) {
        const r = lowest(m);
        cursor[r] = h.heads![r]![0]!.seq;
      }
      h.diskMask |= h.headMask;
    }
    h.heads = undefined;
    h.headCount = 0;
    h.headMask = 0;
    h.active = false;
    this.activeCount--;
    this.unready(h);
    this.makePending(h);
    this.fillActive();
  }

  // ---- heads -----------------------------------------------------------------

  private insertSorted(h: HostState<D>, r: number, q: QueuedUrl): void {
    const arr = h.heads![r] ??= [];
    let i = 0;
    while (i < arr.length && arr[i]!.seq < q.seq) i++;
    if (i < arr.length && arr[i]!.seq === q.seq) return; // already held
    if (i === 0) arr.unshift(q); else arr.splice(i, 0, q);
    h.headMask |= 1 << r;
    h.headCount++;
  }

  /** Pushes the newest `n` loaded URLs of rank r back to the disk side. */
  private evictTail(h: HostState<D>, r: number, n: number): void {
    const arr = h.heads![r]!;
    n = Math.min(n, arr.length);
    if (n === 0) return;
    const first = arr[arr.length - n]!;
    arr.length -= n;
    (h.cursor ??= new Array<number>(RANKS).fill(0))[r] = first.seq;
    h.diskMask |= 1 << r;
    if (arr.length === 0) h.headMask &= ~(1 << r);
    h.headCount -= n;
    this.stats.evicted += n;
  }

  /** Brings a head back to headSize by evicting from its worst classes (never while loading). */
  private trim(h: HostState<D>): void {
    while (h.headCount > this.headSize && h.headMask !== 0) this.evictTail(h, highest(h.headMask), h.headCount - this.headSize);
  }

  // ---- readiness ------------------------------------------------------------

  /** Puts an active host in the ready structures iff its best class has a URL in memory. */
  private schedule(h: HostState<D>): void {
    const m = h.headMask | h.diskMask;
    const r = m === 0 ? -1 : lowest(m);
    if (r < 0 || (h.headMask & (1 << r)) === 0 || !h.active || h.inFlight || h.paused) {
      this.unready(h);
      return;
    }
    if (h.readyIn === WAITING) return;
    if (h.readyIn === NOT_READY) {
      this.waiting.push(h);
      h.readyIn = WAITING;
      this.onReady(h);
    } else if (h.readyIn !== r) {
      this.due[h.readyIn]!.remove(h);
      this.due[r]!.push(h);
      h.readyIn = r;
    }
  }

  private unready(h: HostState<D>): void {
    if (h.readyIn === NOT_READY) return;
    if (h.readyIn === WAITING) this.waiting.remove(h);
    else this.due[h.readyIn]!.remove(h);
    h.readyIn = NOT_READY;
  }

  // ---- loads -------------------------------------------------------------------

  private maybeLoad(h: HostState<D>): void {
    if (!h.active || h.loading || h.diskMask === 0) return;
    const dr = lowest(h.diskMask);
    const urgent = h.headMask === 0 || dr < lowest(h.headMask);
    // Refill at half empty; a better class on disk is read at once, making room from worse classes.
    if (!urgent && h.headCount * 2 >= this.headSize) return;
    if (this.activeCount >= this.opts.maxActiveHosts && dr > this.bestPendingRank() + this.slack) {
      // A waiting host has better work than what this load would bring in: no
      // read. With something servable left the host goes on until `release`
      // hands its slot over; with nothing, it hands it over now (or at release).
      if (urgent && !h.inFlight) { this.stats.rotations++; this.deactivate(h); }
      return;
    }
    if (urgent && h.headCount * 2 > this.headSize) {
      const target = this.headSize >> 1;
      while (h.headCount > target && h.headMask !== 0 && highest(h.headMask) > dr) {
        this.evictTail(h, highest(h.headMask), h.headCount - target);
      }
    }
    if (h.headCount >= this.headSize) return;
    if (this.loadsInFlight >= this.maxLoads) {
      if (!h.loadWaiting) { h.loadWaiting = true; this.loadWait.push(h); }
      return;
    }
    h.loading = true;
    h.dirtyMask = 0;
    this.loadsInFlight++;
    this.stats.loads++;
    const loadNo = this.loadStarts++;
    this.runningLoads.add(loadNo);
    let failed = false;
    this.load(h).catch((err: Error) => { failed = true; if (!storeClosed(err)) this.onLoadError(h.name, err); }).finally(() => {
      this.loadsInFlight--;
      this.runningLoads.delete(loadNo);
      this.forgetMoves();
      h.loading = false;
      if ((h.headMask === 0 && h.diskMask === 0) || h.yieldsSlot) {
        if (!h.inFlight) this.deactivate(h);
      } else {
        this.trim(h);
        if (!failed) this.maybeLoad(h);
        this.schedule(h);
      }
      this.startWaitingLoads();
      if (this.loadsInFlight === 0) this.closeStaleIterators();
    });
  }

  private startWaitingLoads(): void {
    while (this.loadsInFlight < this.maxLoads && this.loadWaitAt < this.loadWait.length) {
      const h = this.loadWait[this.loadWaitAt++]!;
      h.loadWaiting = false;
      this.maybeLoad(h);
    }
    if (this.loadWaitAt === this.loadWait.length) { this.loadWait.length = 0; this.loadWaitAt = 0; }
    else if (this.loadWaitAt > 1024) { this.loadWait.splice(0, this.loadWaitAt); this.loadWaitAt = 0; }
  }

  /**
   * Fills the head with one forward scan of the host's key range, from the best
   * class on disk at its cursor: classes are contiguous and FIFO inside, so the
   * scan meets the best unread URLs first. Entries below their class's cursor
   * (held in the head, or taken and not yet acknowledged) are skipped.
   */
  private async load(h: HostState<D>): Promise<void> {
    const cursor = h.cursor ??= new Array<number>(RANKS).fill(0);
    const r0 = lowest(h.diskMask);
    const slot = this.acquireIterator(h);
    const it = slot.it;
    const hk0 = h.key.readUInt32BE(0), hk1 = h.key.readUInt32BE(4);
    /** Bits of the classes the scan went past the end of: nothing unread is left in them. */
    let passed = 0;
    let cur = r0;
    let ended = false;
    let corrupt: Buffer[] | undefined;
    // Past a class worse than the best waiting host's, the host will give up its
    // slot before serving what it reads (see `release`): stop there.
    const stop = this.activeCount >= this.opts.maxActiveHosts ? this.bestPendingRank() + this.slack : RANKS;
    let first = true;
    let dropped = false;
    try {
      it.seek(frontierKey(h.key, r0, cursor[r0]!));
      fill: for (;;) {
        const room = this.headSize - h.headCount;
        if (room <= 0) break;
        // A small first read: most loads after a rotation need only one class.
        const ask = first && stop < RANKS ? Math.min(room + 1, 16) : room + 4;
        first = false;
        const entries = await it.nextv(ask);
        // Dropped (handed over) while the read ran: nothing of it may come back.
        if (!h.heads) { dropped = true; break; }
        for (const [key, value] of entries) {
          // The pooled iterator spans the whole frontier: the host's range ends at the first other prefix.
          if (key.length < HOST_KEY_BYTES || key.readUInt32BE(0) !== hk0 || key.readUInt32BE(4) !== hk1) { ended = true; break fill; }
          const r = key[HOST_KEY_BYTES]!;
          if (key.length !== KEY_BYTES || r >= RANKS) continue; // malformed keys are dropped by the recovery pass
          if (r !== cur) {
            passed |= ((1 << r) - 1) & ~((1 << cur) - 1);
            cur = r;
            if (r > stop && h.headCount > 0) break fill;
          }
          const seq = readSeq(key, HOST_KEY_BYTES + 1);
          if (seq < cursor[r]!) continue;
          if (h.headCount >= this.headSize) break fill; // left unread: the class keeps its disk bit
          cursor[r] = seq + 1;
          if (this.moving.size > 0 && this.moving.has(key.toString('latin1'))) continue; // queued again in a better class
          if (!validForm(value)) { (corrupt ??= []).push(key); continue; }
          const arr = h.heads![r] ??= [];
          arr.push(new QueuedUrl(h.key, entryUrl(value, h.name)!, entryKind(value), value[1]!, value[2]!, MAX_PRIORITY - r, seq));
          h.headMask |= 1 << r;
          h.headCount++;
        }
        if (entries.length < ask) { ended = true; break; }
      }
    } catch (err) {
      slot.broken = true;
      throw err;
    } finally {
      this.releaseIterator(slot);
    }
    if (dropped) return;
    if (ended) passed |= ((1 << RANKS) - 1) & ~((1 << cur) - 1);
    // A class that got commits during the load keeps its bit: the snapshot may have missed them.
    h.diskMask &= ~(passed & ~h.dirtyMask);
    if (corrupt) {
      // An unreadable entry cannot be fetched; drop it from disk so it is not re-read forever.
      this.corruptEntries += corrupt.length;
      this.queued -= corrupt.length;
      h.queued -= corrupt.length;
      await this.frontier.batch(corrupt.map((key) => ({ type: 'del' as const, key })));
    }
  }

  // ---- pooled iterators ------------------------------------------------------

  /**
   * An iterator for a load of `h`. classic-level frees an iterator's native
   * read buffer only when the JS object is garbage-collected, not on close, and
   * V8 does not see that memory: one fresh iterator per load let the process
   * grow by hundreds of MB between major GCs. So a few iterators are kept and
   * moved with `seek` (cheaper as well). An iterator reads the snapshot taken
   * when it was created, so it serves a host only if it is younger than the
   * host's last commit; entries acknowledged since lie below the cursors and
   * are skipped like any taken URL.
   */
  private acquireIterator(h: HostState<D>): PooledIterator {
    const now = Date.now();
    let spare: PooledIterator | undefined;
    for (const p of this.pool) {
      if (p.busy) continue;
      if (p.epoch >= h.commitEpoch && p.uses < ITERATOR_USES && now - p.createdAt < ITERATOR_AGE_MS) {
        p.busy = true;
        p.uses++;
        return p;
      }
      spare ??= p;
    }
    const fresh: PooledIterator = { it: this.frontier.iterator(), epoch: this.commitEpoch, uses: 1, createdAt: now, busy: true, broken: false };
    if (spare) {
      this.pool[this.pool.indexOf(spare)] = fresh;
      spare.it.close().catch(() => {});
    } else {
      this.pool.push(fresh);
    }
    return fresh;
  }

  private releaseIterator(p: PooledIterator): void {
    p.busy = false;
    if (p.broken) {
      this.pool.splice(this.pool.indexOf(p), 1);
      p.it.close().catch(() => {});
    }
  }

  /** With no load running, iterators past their age are closed so they stop pinning old LevelDB files. */
  private closeStaleIterators(): void {
    const now = Date.now();
    for (let i = this.pool.length - 1; i >= 0; i--) {
      const p = this.pool[i]!;
      if (p.busy || now - p.createdAt < ITERATOR_AGE_MS) continue;
      this.pool.splice(i, 1);
      p.it.close().catch(() => {});
    }
  }
}
