// The seen-set, DRUM-style (Lee, Leonard, Wang, Loguinov: "IRLbot", WWW 2008):
// URLs are not checked one random read at a time; they are buffered, sorted by
// key, deduplicated within the batch, checked with one `getMany`, and the new
// ones written with one atomic `batch` — together with whatever the caller
// needs written atomically with them (the frontier entries), so "seen" and
// "queued" can never disagree after a crash.
//
// No false negatives: the store is the authority. A small positive cache of
// keys known to be in the store skips reads for hot repeats (every page links
// its site's navigation); it only ever answers "seen" for keys that really are.
import type { RawDb, Sublevel } from '../store/db.js';

export interface DrumItem {
  /** 16-byte seen key (host hash ‖ url hash). */
  key: Buffer;
}

export type BatchOp =
  | { type: 'put'; sublevel: Sublevel; key: Buffer; value: Buffer }
  | { type: 'del'; sublevel: Sublevel; key: Buffer };

export interface DrumOptions<T extends DrumItem> {
  batchSize: number;
  maxWaitMs: number;
  /** Value stored in the seen-set for a new item. */
  valueOf(item: T): Buffer;
  /** Extra operations written in the same atomic batch as the new items' seen entries. */
  onNew(items: T[]): BatchOp[];
  /** Called after the batch holding these new items is written. */
  afterCommit(items: T[]): void;
  /** Largest number of keys held in the positive cache (two generations of half each). */
  cacheSize?: number;
}

interface Waiter { resolve(): void; reject(err: Error): void }

export class Drum<T extends DrumItem> {
  private buffer: T[] = [];
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private cacheNew = new Set<string>();
  private cacheOld = new Set<string>();
  private readonly cacheHalf: number;
  /** Counters: items checked, found new, answered by the cache, rounds run. */
  readonly stats = { checked: 0, fresh: 0, cacheHits: 0, rounds: 0 };

  constructor(private readonly db: RawDb, private readonly seen: Sublevel, private readonly opts: DrumOptions<T>) {
    this.cacheHalf = Math.max(1024, Math.floor((opts.cacheSize ?? 1_000_000) / 2));
  }

  get pending(): number { return this.buffer.length; }
  get busy(): boolean { return this.buffer.length > 0 || this.running !== undefined; }

  /** Queues items for the next round; resolves once that round is durable. */
  submit(items: T[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    for (const it of items) this.buffer.push(it);
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.buffer.length >= this.opts.batchSize) this.kick();
    else if (!this.timer) this.timer = setTimeout(() => this.kick(), this.opts.maxWaitMs);
    return done;
  }

  /** Runs rounds until the buffer is empty. */
  async flush(): Promise<void> {
    while (this.buffer.length > 0 || this.running) {
      this.kick();
      await this.running;
    }
  }

  /** True when the key is known to the seen-set (store read if not cached). */
  async has(key: Buffer): Promise<boolean> {
    if (this.cached(key.toString('latin1'))) return true;
    return (await this.seen.get(key)) !== undefined;
  }

  /**
   * Runs `fn` between two rounds, so a write it makes to the seen-set cannot
   * be overwritten by a round that read the store before it (e.g. seen entries
   * handed over by another agent).
   */
  async exclusive<R>(fn: () => Promise<R>): Promise<R> {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    while (this.running) await this.running;
    const result = fn();
    this.running = result.then(() => undefined, () => undefined).finally(() => {
      this.running = undefined;
      if (this.buffer.length > 0) this.kick();
    });
    return result;
  }

  private kick(): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    if (this.running || this.buffer.length === 0) return;
    const items = this.buffer;
    const waiters = this.waiters;
    this.buffer = [];
    this.waiters = [];
    this.running = this.round(items).then(
      () => { for (const w of waiters) w.resolve(); },
      (err: Error) => { for (const w of waiters) w.reject(err); },
    ).finally(() => {
      this.running = undefined;
      if (this.buffer.length >= this.opts.batchSize) this.kick();
      else if (this.buffer.length > 0 && !this.timer) this.timer = setTimeout(() => this.kick(), this.opts.maxWaitMs);
    });
  }

  private cached(k: string): boolean {
    return this.cacheNew.has(k) || this.cacheOld.has(k);
  }

  private remember(k: string): void {
    if (this.cacheNew.size >= this.cacheHalf) {
      this.cacheOld = this.cacheNew;
      this.cacheNew = new Set();
    }
    this.cacheNew.add(k);
  }

  private async round(items: T[]): Promise<void> {
    this.stats.rounds++;
    this.stats.checked += items.length;
    // Sort + dedupe within the batch; the sorted order also makes LevelDB's reads sequential.
    const byKey = new Map<string, T>();
    for (const it of items) {
      const k = it.key.toString('latin1');
      if (this.cached(k)) { this.stats.cacheHits++; continue; }
      if (!byKey.has(k)) byKey.set(k, it);
    }
    if (byKey.size === 0) return;
    const keys = [...byKey.keys()].sort();
    const found = await this.seen.getMany(keys.map((k) => byKey.get(k)!.key));
    const absent = new Set<string>();
    for (let i = 0; i < keys.length; i++) {
      if (found[i] === undefined) absent.add(keys[i]!);
      else this.remember(keys[i]!);
    }
    // New items keep their submission order, so each host's queue stays in discovery (FIFO) order.
    const fresh: T[] = [];
    for (const [k, it] of byKey) if (absent.has(k)) fresh.push(it);
    if (fresh.length === 0) return;
    const ops: BatchOp[] = fresh.map((it) => ({ type: 'put', sublevel: this.seen, key: it.key, value: this.opts.valueOf(it) }));
    for (const op of this.opts.onNew(fresh)) ops.push(op);
    await this.db.batch(ops as never);
    // Cached only once durable: the cache must never claim more than the store holds.
    for (const it of fresh) this.remember(it.key.toString('latin1'));
    this.stats.fresh += fresh.length;
    this.opts.afterCommit(fresh);
  }
}
