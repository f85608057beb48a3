// The recrawl edge (docs/recrawl.md): keeps each fetched URL's RecrawlState in LevelDB,
// finds due URLs with one range scan of a due-time index, and moves them back
// into the frontier in bounded batches, bypassing the seen-set. The decisions
// themselves are the pure functions of schedule.ts.
//
// Storage (docs/storage.md "Recrawl"):
//   recrawl        seen key (host hash ‖ url hash) → RecrawlState
//   recrawl-due    due ms (u64 BE) ‖ seen key → depth (u8) ‖ URL
//   recrawl-hints  seen key → sitemap lastmod/changefreq/priority, until the first fetch
// A URL has exactly one due entry, at its state's nextDueAt; both are always
// written in one batch. A URL moved into the frontier keeps a *lease* entry
// at now + maxInterval, so a revisit lost on the way (robots now disallows it,
// a crash, a handoff) comes back by itself instead of being forgotten.
import type { BatchOp, Store } from '../store/db.js';
import type { NewUrl, QueuedUrl } from '../frontier/frontier.js';
import type { SitemapUrl } from '../sitemap/parse.js';
import { dueKey } from '../store/keys.js';
import { hostOf } from '../url/normalize.js';
import { xxh64Bytes } from '../hash/xxhash.js';
import { unbase32, base32 } from '../warc/digest.js';
import {
  recordFetch, applySitemapHint, conditionalHeaders, nextFetchAt, revisitPriority, nextKind, newShare, encodeRecrawlState, decodeRecrawlState,
  encodeHints, decodeHints, type RecrawlConfig, type RecrawlState, type StoredHints, type ShareState,
} from './schedule.js';
import { scheduleConfig, scanInterval, type RecrawlSettings } from './settings.js';

/** A revisit on its way into the frontier; `priority` is honoured by the priority frontier (classes 0–7). */
export type RevisitUrl = NewUrl & { priority?: number };

/** What the agent provides. */
export interface RecrawlHost {
  /** Queue these URLs without the seen-set: frontier ops plus `ops` in one batch, then the frontier's memory. */
  enqueue(items: RevisitUrl[], ops: BatchOp[]): Promise<void>;
  /** URLs queued in the frontier, all kinds. */
  queued(): number;
  /** False for a host another agent owns now (mesh). */
  owns(host: string): boolean;
  onError(err: Error): void;
  /** The clock, epoch ms (default Date.now): tests pass their own to step over intervals without waiting. */
  now?: () => number;
}

/** How a fetch of a page ended, for its recrawl state. status 0: no response. */
export interface RecrawlOutcome {
  at: number;
  status: number;
  /** Payload digest of a 2xx body (see payloadDigestBytes). */
  digest?: Uint8Array;
  etag?: string;
  lastModified?: string;
}

interface Ctx { prev?: RecrawlState; hints?: StoredHints }

const ZERO_SEEN = Buffer.alloc(16);
const MAX_CREDITS = 1 << 16;

export interface RecrawlStats {
  /** Due URLs moved into the frontier. */
  requeued: number;
  /** Fetches of URLs that had a state (conditional requests). */
  revisits: number;
  notModified: number;
  changed: number;
  unchanged: number;
  /** States dropped: 404/410 on a revisit, or a host another agent owns now. */
  dropped: number;
  hintsStored: number;
  hintsDropped: number;
  hintsUsed: number;
  /** States made due at once by a sitemap <lastmod> after their last capture. */
  madeDueBySitemap: number;
}

export class Recrawler {
  readonly cfg: RecrawlConfig;
  readonly stats: RecrawlStats = { requeued: 0, revisits: 0, notModified: 0, changed: 0, unchanged: 0, dropped: 0, hintsStored: 0, hintsDropped: 0, hintsUsed: 0, madeDueBySitemap: 0 };
  private readonly ctx = new Map<QueuedUrl, Ctx>();
  /** Revisits in the frontier not yet completed (seen key, latin1). */
  private readonly outstanding = new Set<string>();
  private readonly share: ShareState = newShare();
  private owedDiscovery = false;
  private discoveryCredits = 0;
  private pendingHints: { type: 'put'; key: Buffer; value: Buffer }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private again = false;
  /** Earliest due time known, epoch ms (Infinity: nothing scheduled). */
  private nextDue = Infinity;
  private stopped = false;

  constructor(private readonly store: Store, private readonly settings: RecrawlSettings, private readonly host: RecrawlHost) {
    this.cfg = scheduleConfig(settings);
  }

  private now(): number {
    return this.host.now ? this.host.now() : Date.now();
  }

  start(): void {
    const every = scanInterval(this.settings, this.cfg);
    this.timer = setInterval(() => this.kick(), every);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    while (this.scanning) await this.scanning;
    await this.flushHints().catch(() => {});
  }

  /** Nothing waits in the frontier as a revisit and nothing is due within the horizon. */
  idle(now: number): boolean {
    return this.outstanding.size === 0 && !this.scanning && this.nextDue > now + this.settings.horizonMs * (this.cfg.timeScale ?? 1);
  }

  summary(): Record<string, unknown> {
    return { ...this.stats, waiting: this.outstanding.size, nextDueInMs: Number.isFinite(this.nextDue) ? Math.max(0, this.nextDue - this.now()) : null };
  }

  // ---- around one fetch ----------------------------------------------------------

  /** Before fetching a page: loads its state (or its sitemap hints); returns the conditional request headers. */
  async prepare(q: QueuedUrl, key: Buffer): Promise<[string, string][]> {
    const raw = await this.store.recrawl.get(key);
    const prev = raw ? decodeRecrawlState(raw) ?? undefined : undefined;
    if (prev) {
      this.ctx.set(q, { prev });
      return conditionalHeaders(prev);
    }
    const hints = decodeHints(await this.store.recrawlHints.get(key));
    this.ctx.set(q, hints ? { hints } : {});
    return [];
  }

  /** For a 304: what the WARC revisit record refers to (undefined when no earlier capture is known). */
  earlierCapture(q: QueuedUrl): { capturedAt: Date; payloadDigest?: string } | undefined {
    const prev = this.ctx.get(q)?.prev;
    if (!prev) return undefined;
    const d = prev.digest;
    return {
      capturedAt: new Date(prev.capturedAt || prev.fetchedAt),
      // 20 and 32 bytes: a sha1 or sha256 payload digest (payloadDigestBytes); 8: an xxh64, not one.
      ...(d && (d.length === 32 || d.length === 20) ? { payloadDigest: (d.length === 32 ? 'sha256:' : 'sha1:') + base32(d) } : {}),
    };
  }

  /**
   * Operations recording how a page's turn ended, for the batch that
   * completes it (called for every page, fetched or not).
   */
  outcomeOps(q: QueuedUrl, key: Buffer, o: RecrawlOutcome): BatchOp[] {
    const wasRevisit = this.outstanding.delete(key.toString('latin1'));
    if (!wasRevisit && this.discoveryCredits < MAX_CREDITS) this.discoveryCredits++;
    const ctx = this.ctx.get(q);
    if (!ctx) return []; // no request was made: a revisit's lease brings it back later
    this.ctx.delete(q);
    const ops: BatchOp[] = [];
    const prev = ctx.prev;
    if (ctx.hints) this.stats.hintsUsed++;
    // Hints are for the first interval only; ones that arrived after the first fetch go too.
    if (ctx.hints || this.stats.hintsStored > 0) ops.push({ type: 'del', sublevel: this.store.recrawlHints, key });
    if (prev) this.stats.revisits++;
    let next: RecrawlState;
    if (o.status >= 200 && o.status < 300) {
      next = recordFetch(prev, {
        fetchedAt: o.at, ...(o.digest ? { digest: o.digest } : {}), ...(o.etag !== undefined ? { etag: o.etag } : {}),
        ...(o.lastModified !== undefined ? { lastModified: o.lastModified } : {}), ...(ctx.hints ? { hints: ctx.hints } : {}),
      }, this.cfg);
      if (prev) { if (next.changes > prev.changes) this.stats.changed++; else this.stats.unchanged++; }
    } else if (o.status === 304 && prev) {
      // RFC 9110 §15.4.5: unchanged.
      next = recordFetch(prev, { fetchedAt: o.at, notModified: true, ...(o.etag !== undefined ? { etag: o.etag } : {}), ...(o.lastModified !== undefined ? { lastModified: o.lastModified } : {}) }, this.cfg);
      this.stats.notModified++;
      this.stats.unchanged++;
    } else if (prev && (o.status === 404 || o.status === 410)) {
      // Gone (RFC 9110 §15.5.5, §15.5.11): stop revisiting.
      ops.push({ type: 'del', sublevel: this.store.recrawl, key }, { type: 'del', sublevel: this.store.recrawlDue, key: dueKey(prev.nextDueAt, key) });
      this.stats.dropped++;
      return ops;
    } else if (prev) {
      // Any other answer or none: try again after one interval, the interval unchanged.
      next = { ...prev, fetchedAt: o.at, nextDueAt: nextFetchAt(prev, o.at) };
    } else {
      return ops; // first fetch without a 2xx: nothing to revisit
    }
    if (prev) ops.push({ type: 'del', sublevel: this.store.recrawlDue, key: dueKey(prev.nextDueAt, key) });
    ops.push(
      { type: 'put', sublevel: this.store.recrawl, key, value: encodeRecrawlState(next) },
      { type: 'put', sublevel: this.store.recrawlDue, key: dueKey(next.nextDueAt, key), value: dueValue(q.depth, q.url) },
    );
    if (next.nextDueAt < this.nextDue) this.nextDue = next.nextDueAt;
    return ops;
  }

  /** Forgets the context of a page whose turn was given up (e.g. shutdown aborted its fetch). */
  forget(q: QueuedUrl): void { this.ctx.delete(q); }

  // ---- sitemap hints ---------------------------------------------------------------

  /** Keeps a sitemap <url>'s lastmod/changefreq/priority for its first RecrawlState (bounded per run). */
  noteHint(key: Buffer, u: SitemapUrl): void {
    if (u.lastmod === undefined && u.changefreq === undefined && u.priority === undefined) return;
    if (this.stats.hintsStored >= this.settings.maxHints) { this.stats.hintsDropped++; return; }
    const value = encodeHints(u);
    if (!value) return;
    this.stats.hintsStored++;
    this.pendingHints.push({ type: 'put', key, value });
  }

  /**
   * Writes the noted hints. A URL that already has a state keeps no hint; a
   * <lastmod> after its last capture makes it due now instead (applySitemapHint).
   */
  async flushHints(): Promise<void> {
    if (this.pendingHints.length === 0) return;
    const pending = this.pendingHints;
    this.pendingHints = [];
    const raws = await this.store.recrawl.getMany(pending.map((p) => p.key));
    const now = this.now();
    const ops: BatchOp[] = [];
    for (let i = 0; i < pending.length; i++) {
      const { key, value } = pending[i]!;
      const raw = raws[i];
      if (!raw) { ops.push({ type: 'put', sublevel: this.store.recrawlHints, key, value }); continue; }
      const st = decodeRecrawlState(raw);
      const hints = decodeHints(value);
      if (!st || !hints || this.outstanding.has(key.toString('latin1'))) continue;
      const next = applySitemapHint(st, hints, now);
      if (next === st) continue;
      const due = await this.store.recrawlDue.get(dueKey(st.nextDueAt, key));
      if (!due) continue; // in flight (its outcome rewrites both) or damaged
      ops.push(
        { type: 'del', sublevel: this.store.recrawlDue, key: dueKey(st.nextDueAt, key) },
        { type: 'put', sublevel: this.store.recrawlDue, key: dueKey(next.nextDueAt, key), value: due },
        { type: 'put', sublevel: this.store.recrawl, key, value: encodeRecrawlState(next) },
      );
      this.stats.madeDueBySitemap++;
      if (next.nextDueAt < this.nextDue) this.nextDue = next.nextDueAt;
    }
    if (ops.length) await this.store.db.batch(ops);
  }

  // ---- the scheduler loop ----------------------------------------------------------

  private kick(): void {
    if (this.stopped) return;
    if (this.scanning) { this.again = true; return; }
    this.scanning = this.scan().catch((err: Error) => this.host.onError(err)).finally(() => {
      this.scanning = undefined;
      if (this.again && !this.stopped) { this.again = false; this.kick(); }
    });
  }

  /** Revisit/discovery budget (schedule.ts nextKind): may one more revisit go in now? */
  private admitOne(discoveryWaiting: boolean): boolean {
    if (!discoveryWaiting) { this.owedDiscovery = false; return true; }
    for (;;) {
      if (this.owedDiscovery) {
        if (this.discoveryCredits <= 0) return false; // the discovery slot it is owed has not been used yet
        this.discoveryCredits--;
        this.owedDiscovery = false;
      }
      if (nextKind(this.share, this.cfg.revisitShare, true, true) === 'revisit') return true;
      this.owedDiscovery = true;
    }
  }

  private async scan(): Promise<void> {
    const now = this.now();
    const room = this.settings.batchSize - this.outstanding.size;
    if (room <= 0) return;
    const due = await this.store.recrawlDue.iterator({ lt: dueKey(now + 1, ZERO_SEEN), limit: room }).all();
    if (due.length === 0 || this.stopped) {
      const first = await this.store.recrawlDue.keys({ limit: 1 }).all();
      this.nextDue = first.length ? Number(first[0]!.readBigUInt64BE(0)) : Infinity;
      return;
    }
    const discoveryWaiting = this.host.queued() > this.outstanding.size;
    const take: [Buffer, Buffer][] = [];
    for (const e of due) {
      if (!this.admitOne(discoveryWaiting)) break;
      take.push(e);
    }
    if (take.length === 0) return;
    const seenKeys = take.map(([k]) => Buffer.from(k.subarray(8, 24)));
    const states = await this.store.recrawl.getMany(seenKeys);
    const ops: BatchOp[] = [];
    const items: RevisitUrl[] = [];
    const added: string[] = [];
    const lease = now + this.cfg.maxIntervalMs;
    for (let i = 0; i < take.length; i++) {
      const [dk, v] = take[i]!;
      const key = seenKeys[i]!;
      ops.push({ type: 'del', sublevel: this.store.recrawlDue, key: dk });
      const url = v.length > 1 ? v.toString('utf8', 1) : '';
      const host = url ? hostOf(url) : null;
      const raw = states[i];
      const st = raw ? decodeRecrawlState(raw) : null;
      if (!host || !st) continue; // damaged: dropped with its due entry
      if (!this.host.owns(host)) {
        // The host moved to another agent: its recrawl state stays behind (docs/recrawl.md).
        ops.push({ type: 'del', sublevel: this.store.recrawl, key });
        this.stats.dropped++;
        continue;
      }
      const sk = key.toString('latin1');
      if (this.outstanding.has(sk)) continue;
      const dueAt = Number(dk.readBigUInt64BE(0));
      ops.push(
        { type: 'put', sublevel: this.store.recrawl, key, value: encodeRecrawlState({ ...st, nextDueAt: lease }) },
        { type: 'put', sublevel: this.store.recrawlDue, key: dueKey(lease, key), value: v },
      );
      this.outstanding.add(sk);
      added.push(sk);
      items.push({
        host, hostKey: Buffer.from(key.subarray(0, 8)), url, depth: v[0]!, hops: 0, kind: 'page',
        priority: revisitPriority(dueAt, now, st.intervalMs),
      });
    }
    try {
      await this.host.enqueue(items, ops);
    } catch (err) {
      for (const sk of added) this.outstanding.delete(sk);
      throw err;
    }
    this.stats.requeued += items.length;
    if (due.length === room) this.again = true; // more may be due
  }
}

function dueValue(depth: number, url: string): Buffer {
  const b = Buffer.allocUnsafe(1 + Buffer.byteLength(url));
  b[0] = depth > 255 ? 255 : depth < 0 ? 0 : depth;
  b.write(url, 1, 'utf8');
  return b;
}

/**
 * Bytes compared to tell whether a page changed: the raw SHA-1 or SHA-256 of its
 * WARC payload digest when one was written (so a 304's revisit record can repeat
 * it), else an 8-byte xxh64 of the body.
 */
export function payloadDigestBytes(label: string | undefined, body: Uint8Array): Uint8Array {
  if (label && label.startsWith('sha256:')) {
    const raw = unbase32(label.slice(7));
    if (raw && raw.length === 32) return raw;
  }
  if (label && label.startsWith('sha1:')) {
    const raw = unbase32(label.slice(5));
    if (raw && raw.length === 20) return raw;
  }
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(xxh64Bytes(body));
  return b;
}
