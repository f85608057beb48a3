// One LevelDB per agent (docs/storage.md), one sublevel per concern.
// Keys and values are raw bytes: the layouts live in the modules that own them
// (seen: src/seen/, frontier: src/frontier/), this file only opens the store.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
// classic-level's own type dependency: it names no sublevel type of its own.
import type { AbstractSublevel } from 'abstract-level';

export type Bytes = Buffer;
export type RawDb = ClassicLevel<Bytes, Bytes>;

/** A sublevel of the store as abstract-level types it: byte keys and values. */
export type Sublevel = AbstractSublevel<RawDb, string | Buffer | Uint8Array, Bytes, Bytes>;

/**
 * One operation of an atomic write across sublevels: `store.db.batch(ops)`
 * prefixes each key with its sublevel's and writes them all as one LevelDB
 * write batch (abstract-level's batch `sublevel` option).
 */
export type BatchOp =
  | { type: 'put'; sublevel: Sublevel; key: Bytes; value: Bytes }
  | { type: 'del'; sublevel: Sublevel; key: Bytes };

export interface Store {
  db: RawDb;
  seen: Sublevel;
  frontier: Sublevel;
  hosts: Sublevel;
  robots: Sublevel;
  /** Per-URL fetch records (seen key → JSON): status, digest, simhash, WARC location. */
  fetches: Sublevel;
  meta: Sublevel;
  /** The mesh's per-peer outgoing queues (src/mesh/outbox.ts). */
  outbox: Sublevel;
  /** The mesh's per-sender high-water marks (src/mesh/exchange.ts). */
  inbox: Sublevel;
  /** The mesh's per-peer queues of replica seen entries (src/mesh/outbox.ts; sent apart from URLs, docs/mesh.md "Crashes"). */
  replicas: Sublevel;
  /**
   * Queued URLs of other agents' hosts held as their replica (seen key → depth, kind, URL), never crawled
   * while the owner lives (src/crawl/frontier-replica.ts; docs/mesh.md "Replicated frontier").
   */
  standby: Sublevel;
  /** Host name → its politeness state and operator overrides, while they say something (src/crawl/host-state.ts). */
  hostState: Sublevel;
  /** SimHash permuted tables (src/dedup/index.ts). */
  simhash: Sublevel;
  /** Payload digest → first capture (src/dedup/digests.ts). */
  digests: Sublevel;
  /** Recrawl state per fetched URL, seen key → RecrawlState (src/recrawl/schedule.ts). */
  recrawl: Sublevel;
  /** Recrawl due index: due ms ‖ seen key → depth ‖ URL (src/recrawl/recrawler.ts). */
  recrawlDue: Sublevel;
  /** Sitemap hints not yet used, seen key → lastmod/changefreq/priority (src/recrawl/recrawler.ts). */
  recrawlHints: Sublevel;
  /** Pages waiting for the browser, FIFO by sequence number (src/render/queue.ts). */
  render: Sublevel;
  close(): Promise<void>;
}

const enc = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

function byteSublevel(db: RawDb, name: string): Sublevel {
  return db.sublevel<Bytes, Bytes>(name, enc);
}

/** LevelDB tuning (classic-level open options); see docs/performance.md "Seen-set" for the measurements behind the defaults. */
export interface StoreOptions {
  /** LRU block cache, bytes. */
  cacheSize?: number;
  /** Memtable size before it is written out as a level-0 table, bytes. */
  writeBufferSize?: number;
  /** Uncompressed size of a table block, bytes. */
  blockSize?: number;
  /** Table files kept open (each keeps its index and Bloom filter block in memory). */
  maxOpenFiles?: number;
  /** Largest table file, bytes. */
  maxFileSize?: number;
  /** Snappy block compression. */
  compression?: boolean;
}

export const DEFAULT_STORE_OPTIONS: Readonly<Required<StoreOptions>> = Object.freeze({
  cacheSize: 8 << 20,
  writeBufferSize: 4 << 20,
  blockSize: 4096,
  maxOpenFiles: 1000,
  maxFileSize: 2 << 20,
  // Snappy on: the frontier's entries (URLs, sorted by host) shrink to about a
  // third, and LevelDB keeps every table it has open memory-mapped, so the
  // store's size is also its page-cache footprint in RSS. It costs the
  // seen-set ≈ 2 µs per store read (docs/performance.md "Seen-set", "Frontier").
  compression: true,
});

export async function openStore(dataDir: string, options: StoreOptions = {}): Promise<Store> {
  mkdirSync(dataDir, { recursive: true });
  const db = new ClassicLevel<Bytes, Bytes>(join(dataDir, 'db'), { ...DEFAULT_STORE_OPTIONS, ...options, ...enc });
  try {
    await db.open();
  } catch (err) {
    const cause = (err as { cause?: Error }).cause;
    throw new Error(`cannot open the store in ${dataDir}: ${cause?.message ?? (err as Error).message}`);
  }
  const sub = (name: string) => byteSublevel(db, name);
  return {
    db,
    seen: sub('seen'),
    frontier: sub('frontier'),
    hosts: sub('hosts'),
    robots: sub('robots'),
    fetches: sub('fetches'),
    meta: sub('meta'),
    outbox: sub('outbox'),
    inbox: sub('inbox'),
    replicas: sub('replicas'),
    standby: sub('standby'),
    hostState: sub('host-state'),
    simhash: sub('simhash'),
    digests: sub('digests'),
    recrawl: sub('recrawl'),
    recrawlDue: sub('recrawl-due'),
    recrawlHints: sub('recrawl-hints'),
    render: sub('render'),
    close: () => db.close(),
  };
}
