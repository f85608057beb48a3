// The seen-set, DRUM-style (Lee, Leonard, Wang, Loguinov: "IRLbot", WWW 2008):
// URLs are not checked one random read at a time; they are buffered, sorted by
// key, deduplicated within the batch, checked with one `hasMany`, and the new
// ones written with one atomic `batch` — together with whatever the caller
// needs written atomically with them (the frontier entries), so "seen" and
// "queued" can never disagree after a crash.
//
// No false negatives: the store is the authority. Two in-memory structures
// sit in front of it and only ever save reads:
//   - a Bloom filter of every key in the store (src/seen/bloom.ts). "Definitely
//     absent" lets a new URL skip the read; "maybe" goes to the store. It is
//     rebuilt at start-up by one key scan of the seen sublevel (see
//     `loadFilter`); until that finishes every check goes to the store.
//   - a positive cache of keys known to be in the store, for hot repeats
//     (every page links its site's navigation). Exact, so it only ever answers
//     "seen" for keys that really are.
//
// Every *new* seen entry must be written by this class (or announced with
// `noteStored`): the filter learns keys from the rounds it runs and from the
// start-up scan, nothing else. Updating the value of an existing entry (the
// agent marks a URL fetched) needs nothing.
import type { BatchOp, RawDb, Sublevel } from '../store/db.js';
import { KeyBloom, KeySet } from './bloom.js';
import { mayTearLog } from '../store/group-commit.js';

/** The store's batch operation (src/store/db.ts), named here too for the seen-set's callers. */
export type { BatchOp } from '../store/db.js';

export interface DrumItem {
  /** 16-byte seen key (host hash ‖ url hash). */
  key: Buffer;
}

export interface DrumFilterOptions {
  /** Bits of filter per key (default 10: about 1 % of new keys still read the store). */
  bitsPerKey?: number;
  /** Keys the filter is sized for before it grows (default: estimated from the store, at least 1 Mi). */
  initialCapacity?: number;
}

export interface DrumOptions<T extends DrumItem> {
  batchSize: number;
  maxWaitMs: number;
  /** Value stored in the seen-set for a new item (called after `onNew` for its round). */
  valueOf(item: T): Buffer;
  /** Extra operations written in the same atomic batch as the new items' seen entries. */
  onNew(items: T[]): BatchOp[];
  /** Called after the batch holding these new items is written. */
  afterCommit(items: T[]): void;
  /**
   * Called at the end of a round with the items that were already seen (in
   * the store, or earlier in the same round): repeat discoveries, e.g. the
   * agent's in-link counts. Their seen entries are durable by then.
   */
  onOld?(items: T[]): void;
  /** Largest number of keys held in the positive cache (two generations of half each). Default 256 Ki. */
  cacheSize?: number;
  /** Bloom filter in front of the store; `false` turns it off. On by default. */
  filter?: DrumFilterOptions | false;
  /**
   * Makes every earlier write durable (a synced write, src/store/sync-barrier.ts): used by a
   * round some submitter asked to sync when it has nothing new to write itself.
   */
  syncBarrier?: () => Promise<void>;
}

interface Waiter { resolve(): void; reject(err: Error): void; sync: boolean }

/** Big-endian 32-bit word of a key. */
function word(key: Uint8Array, at: number): number {
  return ((key[at]! << 24) | (key[at + 1]! << 16) | (key[at + 2]! << 8) | key[at + 3]!) >>> 0;
}

export class Drum<T extends DrumItem> {
  private buffer: T[] = [];
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Callers of `exclusive` waiting for the round under way. */
  private exclusiveWaiting = 0;
  private readonly cache: KeySet;
  private filter: KeyBloom | undefined;
  /** True once the filter holds every key of the store (start-up scan done). */
  private filterReady = false;
  /** Keys written before the filter was allocated (added to it when it is). */
  private early: Buffer[] | undefined = [];
  private readonly filterLoad: Promise<void>;
  /** The error of the first failed round write: fail-stop, no round writes after it (see src/store/group-commit.ts). */
  private failed: Error | undefined;
  /** Root-level key prefix of the seen sublevel (undefined: go through the sublevel). */
  private readonly prefix: Buffer | undefined;
  /** Sort scratch: four key words per item. */
  private words = new Uint32Array(4 * 4096);
  /**
   * Counters: items checked, found new, answered by the cache, rounds run;
   * keys the filter proved new, keys read from the store and how many of
   * those were there.
   */
  readonly stats = { checked: 0, fresh: 0, cacheHits: 0, rounds: 0, filterNew: 0, storeReads: 0, storeHits: 0 };

  constructor(private readonly db: RawDb, private readonly seen: Sublevel, private readonly opts: DrumOptions<T>) {
    // Writes and reads go to the root database with the sublevel prefix put
    // on by us, many keys per allocation, instead of one Buffer.concat per
    // key inside abstract-level. Only when `seen` is a plain sublevel of `db`.
    const sub = seen as unknown as { prefix?: unknown; db?: unknown };
    if (typeof sub.prefix === 'string' && sub.prefix.length > 0 && sub.db === db) this.prefix = Buffer.from(sub.prefix, 'utf8');
    this.cache = new KeySet(Math.max(1024, Math.floor((opts.cacheSize ?? 262_144) / 2)));
    if (opts.filter === false) {
      this.early = undefined;
      this.filterLoad = Promise.resolve();
    } else {
      this.filterLoad = this.loadFilter(opts.filter ?? {}).catch(() => {
        // A filter that could not be built is no filter: every check reads the store.
        this.filter = undefined;
        this.filterReady = false;
        this.early = undefined;
      });
    }
  }

  get pending(): number { return this.buffer.length; }
  get busy(): boolean { return this.buffer.length > 0 || this.running !== undefined; }

  /** Filter state, for summaries and benchmarks. */
  get filterInfo(): { ready: boolean; keys: number; bytes: number; layers: number } {
    const f = this.filter;
    return { ready: this.filterReady, keys: f?.count ?? 0, bytes: f?.bytes ?? 0, layers: f?.layerCount ?? 0 };
  }

  /** Resolves when the start-up filter scan has finished (checks are correct before, only slower). */
  ready(): Promise<void> { return this.filterLoad; }

  /**
   * Queues items for the next round; resolves once that round is durable. With `sync`, durable
   * against a power loss too: the round's batch is written with `sync: true` (one fsync shared
   * by everything in the round), or, when nothing in it is new, the sync barrier is written.
   */
  submit(items: T[], sync = false): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    for (const it of items) this.buffer.push(it);
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject, sync }));
    if (this.buffer.length >= this.opts.batchSize) this.kick();
    else if (!this.timer) this.timer = setTimeout(() => this.kick(), this.opts.maxWaitMs);
    return done;
  }

  /** Runs rounds until the buffer is empty. */
  async flush(): Promise<void> {
    while (this.buffer.length > 0 || this.running) {
      this.kick(true);
      await this.running;
    }
  }

  /** True when the key is in the seen-set (store read unless the cache or the filter answers). */
  async has(key: Buffer): Promise<boolean> {
    // Filter first: a key it has never seen cannot be in the store, nor in the cache.
    if (this.filterReady && !this.filter!.mayContain(key)) return false;
    if (this.cache.has(key)) return true;
    this.stats.storeReads++;
    const found = (await this.seen.get(key)) !== undefined;
    if (found) { this.stats.storeHits++; this.cache.add(key); }
    return found;
  }

  /**
   * Lookup only (nothing inserted): for each key, whether the seen-set holds
   * it. Keys the cache or the filter cannot settle are read from the store in
   * one sorted `hasMany`.
   */
  async checkMany(keys: Buffer[]): Promise<boolean[]> {
    const out = new Array<boolean>(keys.length).fill(false);
    const ask: number[] = [];
    const filter = this.filterReady ? this.filter! : undefined;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      if (filter !== undefined && !filter.mayContain(k)) continue;
      if (this.cache.has(k)) out[i] = true;
      else ask.push(i);
    }
    if (ask.length === 0) return out;
    this.sortByKey(ask, keys);
    const found = await this.storeHasMany(ask, keys);
    this.stats.storeReads += ask.length;
    for (let j = 0; j < ask.length; j++) {
      if (found[j]) { out[ask[j]!] = true; this.stats.storeHits++; }
    }
    return out;
  }

  /** Tells the filter about seen entries written by someone else (e.g. a host handoff). */
  noteStored(keys: Buffer[]): void {
    for (const k of keys) this.note(k);
  }

  /**
   * Someone else deleted seen entries (a host handed over with its queue, so
   * that its URLs are taken again should they come back): the positive cache
   * may hold some of them and must never claim more than the store holds, so
   * it is dropped. Handoffs are rare; the cache refills from the next rounds.
   * The filter keeps them (a false "maybe" only costs a read).
   */
  forgetCached(): void {
    this.cache.clear();
  }

  private note(key: Buffer): void {
    if (this.filter) this.filter.add(key);
    else if (this.early) this.early.push(key);
  }

  /**
   * Builds the filter from the store: one scan of the seen sublevel's keys.
   * Correct with rounds running concurrently: the scan iterator reads a
   * snapshot taken when it is created, and every key a round writes (before
   * or after that moment) is also added by the round itself (`note`), so when
   * the scan ends every key in the store has been added. Adding a key twice
   * is harmless. Nothing is persisted, so a crash can never leave a stale
   * filter behind.
   */
  private async loadFilter(fo: DrumFilterOptions): Promise<void> {
    let capacity = fo.initialCapacity ?? 0;
    if (capacity <= 0) {
      capacity = 1 << 20;
      const est = await this.estimateKeys().catch(() => 0);
      if (est > capacity) capacity = est;
    }
    const filter = new KeyBloom({ bitsPerKey: fo.bitsPerKey, initialCapacity: capacity });
    this.filter = filter;
    for (const k of this.early ?? []) filter.add(k);
    this.early = undefined;
    const it = this.seen.keys();
    try {
      for (;;) {
        const ks = await it.nextv(8192);
        if (ks.length === 0) break;
        for (let i = 0; i < ks.length; i++) filter.add(ks[i]!);
      }
    } finally {
      await it.close();
    }
    this.filterReady = true;
  }

  /**
   * Rough count of seen entries from LevelDB's size estimate of the sublevel's
   * range. An entry takes ≈ 22 bytes in an uncompressed table (16-byte key
   * after the shared prefix, sequence number, 1-byte value, lengths); dividing
   * by 16 leans towards more capacity, i.e. headroom for the keys to come.
   */
  private async estimateKeys(): Promise<number> {
    const prefix = (this.seen as unknown as { prefix?: string }).prefix;
    if (typeof prefix !== 'string' || prefix.length === 0) return 0;
    const lo = Buffer.from(prefix);
    const hi = Buffer.from(lo);
    hi[hi.length - 1]!++;
    const bytes = await (this.db as unknown as { approximateSize(a: Buffer, b: Buffer): Promise<number> }).approximateSize(lo, hi);
    return Math.ceil(bytes / 16);
  }

  /**
   * Runs `fn` between two rounds, so a write it makes to the seen-set cannot
   * be overwritten by a round that read the store before it (e.g. seen entries
   * handed over by another agent).
   */
  async exclusive<R>(fn: () => Promise<R>): Promise<R> {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    // While this waits no new round starts (`kick`), so it waits for at most the round under way: under a steady
    // flow of rounds it would otherwise wait for a gap between two, for seconds (docs/mesh.md "Crashes").
    this.exclusiveWaiting++;
    try {
      while (this.running) await this.running;
    } finally {
      this.exclusiveWaiting--;
    }
    const result = fn();
    this.running = result.then(() => undefined, () => undefined).finally(() => {
      this.running = undefined;
      // A round next (even with others waiting), so rounds and exclusive runs alternate.
      if (this.buffer.length > 0) this.kick(true);
    });
    return result;
  }

  private kick(force = false): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    if (this.running || this.buffer.length === 0 || (this.exclusiveWaiting > 0 && !force)) return;
    const items = this.buffer;
    const waiters = this.waiters;
    this.buffer = [];
    this.waiters = [];
    let sync = false;
    for (const w of waiters) if (w.sync) { sync = true; break; }
    this.running = this.round(items, sync).then(
      () => { for (const w of waiters) w.resolve(); },
      (err: Error) => { for (const w of waiters) w.reject(err); },
    ).finally(() => {
      this.running = undefined;
      if (this.buffer.length >= this.opts.batchSize) this.kick();
      else if (this.buffer.length > 0 && !this.timer) this.timer = setTimeout(() => this.kick(), this.opts.maxWaitMs);
    });
  }

  /**
   * Sorts item indices by key (bytewise, = LevelDB order), ties by index, and
   * leaves the sorted keys' four big-endian words in `this.words`.
   */
  private sortByKey(order: number[], keys: ArrayLike<Buffer>): void {
    const n = order.length;
    if (this.words.length < 8 * n) this.words = new Uint32Array(8 * n);
    const w = this.words;
    // Words of position j live at 4n + 4j while sorting; the sorted copy goes to 0..4n.
    const base = 4 * n;
    for (let j = 0; j < n; j++) {
      const k = keys[order[j]!]!;
      const o = base + 4 * j;
      w[o] = word(k, 0); w[o + 1] = word(k, 4); w[o + 2] = word(k, 8); w[o + 3] = word(k, 12);
    }
    const pos = new Array<number>(n);
    for (let j = 0; j < n; j++) pos[j] = j;
    if (n > 1) {
      pos.sort((x, y) => {
        const a = base + 4 * x, b = base + 4 * y;
        return (w[a]! - w[b]!) || (w[a + 1]! - w[b + 1]!) || (w[a + 2]! - w[b + 2]!) || (w[a + 3]! - w[b + 3]!) || (order[x]! - order[y]!);
      });
    }
    const copy = order.slice();
    for (let j = 0; j < n; j++) {
      const p = pos[j]!;
      order[j] = copy[p]!;
      const from = base + 4 * p, to = 4 * j;
      w[to] = w[from]!; w[to + 1] = w[from + 1]!; w[to + 2] = w[from + 2]!; w[to + 3] = w[from + 3]!;
    }
  }

  /** Root-level keys (prefix ‖ key) for `keys[idx[j]]`, sharing one allocation. */
  private prefixed(idx: number[] | undefined, keys: ArrayLike<Buffer>, count: number): Buffer[] {
    const p = this.prefix!;
    const len = p.length + 16;
    const big = Buffer.allocUnsafe(count * len);
    const out = new Array<Buffer>(count);
    for (let j = 0; j < count; j++) {
      const k = keys[idx === undefined ? j : idx[j]!]!;
      const o = j * len;
      if (k.length !== 16) { out[j] = Buffer.concat([p, k]); continue; }
      big.set(p, o);
      big.set(k, o + p.length);
      out[j] = big.subarray(o, o + len);
    }
    return out;
  }

  private storeHasMany(idx: number[], keys: ArrayLike<Buffer>): Promise<boolean[]> {
    if (this.prefix === undefined) return this.seen.hasMany(idx.map((i) => keys[i]!));
    return (this.db as unknown as { hasMany(k: Buffer[]): Promise<boolean[]> }).hasMany(this.prefixed(idx, keys, idx.length));
  }

  private async round(items: T[], sync: boolean): Promise<void> {
    if (this.failed) throw this.failed;
    this.stats.rounds++;
    this.stats.checked += items.length;
    const n = items.length;
    const keys = new Array<Buffer>(n);
    for (let i = 0; i < n; i++) keys[i] = items[i]!.key;
    // Sort + dedupe within the batch; the sorted order also makes LevelDB's reads sequential.
    const order = new Array<number>(n);
    for (let i = 0; i < n; i++) order[i] = i;
    this.sortByKey(order, keys);
    const fresh = new Uint8Array(n);
    const ask: number[] = [];
    const filter = this.filterReady ? this.filter! : undefined;
    const w = this.words; // sortByKey left the sorted keys' words here
    for (let j = 0; j < n; j++) {
      const i = order[j]!;
      const o = 4 * j;
      // A later duplicate of the key just above it in sorted order.
      if (j > 0 && w[o] === w[o - 4] && w[o + 1] === w[o - 3] && w[o + 2] === w[o - 2] && w[o + 3] === w[o - 1]) continue;
      const k = keys[i]!;
      if (filter !== undefined && !filter.mayContain(k)) { fresh[i] = 1; this.stats.filterNew++; continue; }
      if (this.cache.has(k)) { this.stats.cacheHits++; continue; }
      ask.push(i);
    }
    if (ask.length > 0) {
      const found = await this.storeHasMany(ask, keys);
      this.stats.storeReads += ask.length;
      for (let j = 0; j < ask.length; j++) {
        const i = ask[j]!;
        if (found[j]) { this.stats.storeHits++; this.cache.add(keys[i]!); }
        else fresh[i] = 1;
      }
    }
    // New items keep their submission order, so each host's queue stays in discovery (FIFO) order.
    const news: T[] = [];
    const olds: T[] | undefined = this.opts.onOld ? [] : undefined;
    for (let i = 0; i < n; i++) {
      if (fresh[i] === 1) news.push(items[i]!);
      else olds?.push(items[i]!);
    }
    if (news.length === 0) {
      // Already seen items were stored by earlier rounds, perhaps without a sync.
      if (sync) await this.opts.syncBarrier?.();
      if (olds?.length) this.opts.onOld!(olds);
      return;
    }
    // onNew first: it decides what each new item's seen value is (the agent's
    // valueOf asks whether onNew admitted the item).
    const extra = this.opts.onNew(news);
    const ops: Array<BatchOp | { type: 'put'; key: Buffer; value: Buffer }> = new Array(news.length);
    if (this.prefix !== undefined) {
      const rootKeys = this.prefixed(undefined, news.map((it) => it.key), news.length);
      for (let i = 0; i < news.length; i++) ops[i] = { type: 'put', key: rootKeys[i]!, value: this.opts.valueOf(news[i]!) };
    } else {
      for (let i = 0; i < news.length; i++) {
        const it = news[i]!;
        ops[i] = { type: 'put', sublevel: this.seen, key: it.key, value: this.opts.valueOf(it) };
      }
    }
    for (const op of extra) ops.push(op);
    // The filter learns the keys before the write: it may then say "maybe" for
    // a key not yet (or, if the write fails, never) stored, which only costs a read.
    for (let i = 0; i < news.length; i++) this.note(news[i]!.key);
    try {
      await this.db.batch(ops, { sync });
    } catch (err) {
      if (mayTearLog(err)) this.failed = err as Error;
      throw err;
    }
    // Cached only once durable: the cache must never claim more than the store holds.
    for (let i = 0; i < news.length; i++) this.cache.add(news[i]!.key);
    this.stats.fresh += news.length;
    this.opts.afterCommit(news);
    if (olds?.length) this.opts.onOld!(olds);
  }
}
