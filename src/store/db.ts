// One LevelDB per agent (DESIGN.md "Storage"), one sublevel per concern.
// Keys and values are raw bytes: the layouts live in the modules that own them
// (seen: src/seen/, frontier: src/frontier/), this file only opens the store.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';

export type Bytes = Buffer;
export type RawDb = ClassicLevel<Bytes, Bytes>;

export interface RangeOptions {
  gt?: Bytes; gte?: Bytes; lt?: Bytes; lte?: Bytes;
  limit?: number; reverse?: boolean;
}

/** The part of abstract-level's sublevel API this project uses, typed for byte keys and values. */
export interface Sublevel {
  get(key: Bytes): Promise<Bytes | undefined>;
  getMany(keys: Bytes[]): Promise<(Bytes | undefined)[]>;
  put(key: Bytes, value: Bytes): Promise<void>;
  del(key: Bytes): Promise<void>;
  batch(ops: Array<{ type: 'put'; key: Bytes; value: Bytes } | { type: 'del'; key: Bytes }>): Promise<void>;
  keys(opts?: RangeOptions): AsyncIterable<Bytes> & { all(): Promise<Bytes[]>; close(): Promise<void> };
  iterator(opts?: RangeOptions): AsyncIterable<[Bytes, Bytes]> & {
    all(): Promise<[Bytes, Bytes][]>;
    next(): Promise<[Bytes, Bytes] | undefined>;
    nextv(size: number): Promise<[Bytes, Bytes][]>;
    seek(target: Bytes): void;
    close(): Promise<void>;
  };
  clear(opts?: RangeOptions): Promise<void>;
}

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
  close(): Promise<void>;
}

const enc = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

export async function openStore(dataDir: string): Promise<Store> {
  mkdirSync(dataDir, { recursive: true });
  const db = new ClassicLevel<Bytes, Bytes>(join(dataDir, 'db'), enc);
  try {
    await db.open();
  } catch (err) {
    const cause = (err as { cause?: Error }).cause;
    throw new Error(`cannot open the store in ${dataDir}: ${cause?.message ?? (err as Error).message}`);
  }
  const sub = (name: string) => db.sublevel<Bytes, Bytes>(name, enc) as unknown as Sublevel;
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
    close: () => db.close(),
  };
}
