// The durable render queue: pages waiting for the browser, first in first out,
// in the agent's store (the `render` sublevel of src/store/db.ts) so that a
// restart loses none (docs/render.md "Queue"). Rendering costs one to two
// orders of magnitude more than a fetch, so the queue is bounded: past
// `maxQueued` a page is not queued (counted), and is crawled from its static
// parse alone.
//
// Delivery is at least once: take() leases the oldest entry, ack() deletes it
// once the render's records are written. An entry taken but not acknowledged
// when the agent stops is taken again after the restart.
//
// Key: sequence number, 8 bytes big-endian (LevelDB's byte order is FIFO order).
// Value: u32 BE length of the JSON meta, the meta, then the optional body bytes.

type Bytes = Buffer;
type BatchOp = { type: 'put'; key: Bytes; value: Bytes } | { type: 'del'; key: Bytes };

/** The part of an abstract-level (sub)level the queue needs, with Buffer keys and values (src/store's Sublevel fits). */
export interface RenderQueueDb {
  batch(ops: BatchOp[]): Promise<void>;
  iterator(opts?: { gt?: Bytes; gte?: Bytes; lt?: Bytes; lte?: Bytes; limit?: number; reverse?: boolean }): {
    all(): Promise<[Bytes, Bytes][]>;
    close(): Promise<void>;
  };
}

export interface RenderQueueItem {
  /** The page to render (the fetched document URL). */
  url: string;
  /** What the pipeline needs to render and file it: depth, WARC record id and location of the page, status, headers … (JSON). */
  meta: Record<string, unknown>;
  /**
   * The page body, when the pipeline keeps it here rather than reading it back
   * from its WARC record (docs/render.md "Queue": the WARC location in `meta` keeps the queue small).
   */
  body?: Uint8Array;
  enqueuedAt: number;
}

export interface QueuedRender {
  seq: number;
  item: RenderQueueItem;
}

export interface RenderQueueOptions {
  db: RenderQueueDb;
  /** Entries kept at most (taken but unacknowledged ones included). */
  maxQueued: number;
}

const SCAN_PAGE = 1024;

function seqKey(seq: number): Bytes {
  const k = Buffer.alloc(8);
  k.writeBigUInt64BE(BigInt(seq));
  return k;
}

function keySeq(k: Bytes): number | undefined {
  return k.length === 8 ? Number(k.readBigUInt64BE(0)) : undefined;
}

function encode(item: RenderQueueItem): Bytes {
  const meta = Buffer.from(JSON.stringify({ url: item.url, meta: item.meta, enqueuedAt: item.enqueuedAt }), 'utf8');
  const head = Buffer.alloc(4);
  head.writeUInt32BE(meta.length);
  return item.body === undefined ? Buffer.concat([head, meta]) : Buffer.concat([head, meta, item.body]);
}

function decode(v: Bytes): RenderQueueItem | undefined {
  if (v.length < 4) return undefined;
  const n = v.readUInt32BE(0);
  if (4 + n > v.length) return undefined;
  try {
    const j = JSON.parse(v.subarray(4, 4 + n).toString('utf8')) as { url?: unknown; meta?: unknown; enqueuedAt?: unknown };
    if (typeof j.url !== 'string' || typeof j.meta !== 'object' || j.meta === null || typeof j.enqueuedAt !== 'number') return undefined;
    const item: RenderQueueItem = { url: j.url, meta: j.meta as Record<string, unknown>, enqueuedAt: j.enqueuedAt };
    if (v.length > 4 + n) item.body = v.subarray(4 + n);
    return item;
  } catch {
    return undefined;
  }
}

export class RenderQueue {
  /** Entries in the store (leased ones included). */
  private count = 0;
  private nextSeq = 1;
  /** Lowest sequence number take() has not handed out yet in this run. */
  private nextTake = 1;
  private readonly leased = new Set<number>();
  /** Pages not queued because the queue was full. */
  dropped = 0;
  /** Entries that did not decode (deleted when met). */
  damaged = 0;

  private constructor(private readonly opts: RenderQueueOptions) {}

  /** Opens the queue over what the store holds (every entry is pending again after a restart). */
  static async open(opts: RenderQueueOptions): Promise<RenderQueue> {
    const q = new RenderQueue(opts);
    let after: Bytes | undefined;
    let first: number | undefined;
    // Bounded by the store's content: each page moves `after` forward.
    for (;;) {
      const it = opts.db.iterator(after === undefined ? { limit: SCAN_PAGE } : { gt: after, limit: SCAN_PAGE });
      const page = await it.all();
      if (page.length === 0) break;
      for (const [k] of page) {
        const seq = keySeq(k);
        if (seq === undefined) continue;
        q.count++;
        first ??= seq;
        if (seq >= q.nextSeq) q.nextSeq = seq + 1;
      }
      after = page[page.length - 1]![0];
      if (page.length < SCAN_PAGE) break;
    }
    q.nextTake = first ?? q.nextSeq;
    return q;
  }

  get size(): number {
    return this.count;
  }

  /** Entries not taken yet. */
  get pending(): number {
    return this.count - this.leased.size;
  }

  /** Appends a page; false (and counted in `dropped`) when the queue is full. */
  async push(item: RenderQueueItem): Promise<boolean> {
    if (this.count >= this.opts.maxQueued) {
      this.dropped++;
      return false;
    }
    const seq = this.nextSeq++;
    this.count++;
    try {
      await this.opts.db.batch([{ type: 'put', key: seqKey(seq), value: encode(item) }]);
    } catch (err) {
      this.count--;
      throw err;
    }
    return true;
  }

  /** Leases the oldest entry not taken yet; undefined when there is none. */
  async take(): Promise<QueuedRender | undefined> {
    // Leased entries are skipped (a retry() moves the cursor back over them): bounded by their number.
    for (let attempt = 0; attempt < 16 + this.leased.size; attempt++) {
      const page = await this.opts.db.iterator({ gte: seqKey(this.nextTake), limit: 1 }).all();
      if (page.length === 0) return undefined;
      const [k, v] = page[0]!;
      const seq = keySeq(k);
      if (seq === undefined) return undefined;
      this.nextTake = seq + 1;
      if (this.leased.has(seq)) continue;
      const item = decode(v);
      if (item === undefined) {
        this.damaged++;
        await this.opts.db.batch([{ type: 'del', key: k }]);
        this.count--;
        continue;
      }
      this.leased.add(seq);
      return { seq, item };
    }
    return undefined;
  }

  /** The render of `seq` did not happen (the browser died): the entry is taken again, before younger ones. */
  retry(seq: number): void {
    if (!this.leased.delete(seq)) return;
    if (seq < this.nextTake) this.nextTake = seq;
  }

  /** The render of `seq` is filed: the entry goes. */
  async ack(seq: number): Promise<void> {
    if (!this.leased.delete(seq)) return;
    await this.opts.db.batch([{ type: 'del', key: seqKey(seq) }]);
    this.count--;
  }
}
