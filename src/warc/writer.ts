// WARC/1.1 writer: one gzip member per record, a warcinfo record opening each file,
// rotation at a size limit, crash-safe naming. Format choices: docs/warc.md.
//
// Pipeline per call: the record(s) are built and gzipped by an encoder (a worker
// thread by default, so the ~0.3 ms of deflate per 15 KB page runs on the other
// core), several calls in parallel; the appends to the file are serialised in call
// order, so offsets are exact and a request/response pair is never split.
import { mkdir, open, readdir, rename, stat, truncate, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeJob, encodeWarcinfo, DEFAULT_DIGEST } from './records.js';
import type { DigestAlgo } from './digest.js';
import type { ConversionInput, EncodeJob, Encoded, ExchangeInput, HeaderList, RevisitInput } from './records.js';
import { gzipMembers } from './gzmembers.js';
import { cdxjLineTail, cdxjPathFor } from './cdxj.js';
import { DEFAULT_WARC, WARC_GZIP_LEVEL, WORKER_YOUNG_GENERATION_MB } from '../config.js';
import { HelperThread, type ThreadChannel } from '../util/helper-thread.js';
import type { EncoderResult } from './worker.js';

export type { ConversionInput, ExchangeInput, RevisitInput, HeaderList, RevisitProfile, TruncatedReason } from './records.js';

export interface WarcWriterOptions {
  /** Directory for the files (created if missing). */
  dir: string;
  /** File name prefix, default 'ubicrawl'. */
  prefix?: string;
  /** Short id of this agent, the last part of every file name. */
  agentShortId: string;
  /** Rotate before a write would take the file past this size (default 1 GiB). */
  maxFileBytes?: number;
  /** Extra or overriding warcinfo fields (software, operator, robots, http-header-user-agent, …). */
  warcinfo?: Record<string, string>;
  /** Algorithm of every WARC-Block-Digest / WARC-Payload-Digest computed here (default sha1, docs/warc.md "Digests"). */
  digest?: DigestAlgo;
  /**
   * zlib level, 0–9 (default src/config.ts WARC_GZIP_LEVEL; see docs/warc.md
   * "Compression" for the measurements).
   */
  gzipLevel?: number;
  /** Build and compress records in a worker thread (default true). */
  worker?: boolean;
  /** With the worker: the helper thread to encode on, shared with other components (default: one of its own). */
  thread?: HelperThread;
  /** With the worker: the first this many calls are encoded in-line, and the thread starts after them (default 0). */
  inlineFirst?: number;
  /** Calls accepted at once before further calls wait (backpressure, default 64). */
  maxPending?: number;
  /** fsync a file before it is renamed to its final name (default true). */
  fsync?: boolean;
  /**
   * With fsync on, also fsync the file being written this often, ms (default 2000; 0: only at
   * rotation and close). Bounds what a power loss can take from a WARC file (docs/storage.md).
   */
  fsyncIntervalMs?: number;
  /**
   * On open, also report to onFileClosed every complete file of this agent that has no
   * `<file>.cdxj` next to it (its index write failed, e.g. on a full disk). Default false.
   */
  indexMissing?: boolean;
  /**
   * Called with the final path of every file once it is complete (rotation, close, recovery);
   * with collectCdxj, also with the file's CDXJ lines (unsorted) when the writer has them all.
   */
  onFileClosed?: (path: string, cdxjLines?: string[]) => void;
  /**
   * Collect each file's CDXJ lines as its records are written (default false), so
   * closing a file needs no second read of it (indexWarcFile(path, lines)). Up to
   * MAX_CDXJ_CHARS per file; past that, or for a recovered file, no lines are given.
   */
  collectCdxj?: boolean;
}

export interface WriteResult {
  /** Final file name (no directory), as a CDXJ `filename` field wants it. */
  filename: string;
  /** Offset and length of the primary record's gzip member (response / revisit / metadata). */
  offset: number;
  length: number;
  /** `<urn:uuid:…>` of that record. */
  recordId: string;
  payloadDigest: string;
}

export interface WriterStats {
  filesClosed: number;
  records: number;
  bytes: number;
  pending: number;
  /** Periodic fsyncs of the file being written (fsyncIntervalMs) that completed. */
  syncs: number;
  /** The encoder thread has been started (false: every record so far was encoded on the calling thread). */
  encoderThread: boolean;
}

const DEFAULT_LEVEL = WARC_GZIP_LEVEL;
const OPEN_SUFFIX = '.open';

const DEFAULT_INFO: Record<string, string> = {
  software: 'ubicrawl',
  format: 'WARC File Format 1.1',
  conformsTo: 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/',
};

function safePart(s: string): string {
  return String(s).replace(/[^A-Za-z0-9._]/g, '_') || '_';
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** UTC YYYYMMDDHHMMSSmmm. */
export function fileTimestamp(d: Date): string {
  return d.toISOString().replace(/[^0-9]/g, '').slice(0, 17);
}

function fileNameRe(prefix: string, agent: string): RegExp {
  return new RegExp(`^${escapeRe(prefix)}-(\\d{17})-(\\d{5,})-${escapeRe(agent)}\\.warc\\.gz(\\.open)?$`);
}

// ---------------------------------------------------------------------------
// Encoders

interface Encoder {
  encode(job: EncodeJob): Promise<Encoded>;
  close(): Promise<void>;
  /** A thread was started for it. */
  readonly threaded: boolean;
}

const inlineEncoder: Encoder = {
  encode: (job) => encodeJob(job),
  close: async () => {},
  threaded: false,
};

interface WorkerJob {
  id: number;
  job: EncodeJob;
}

interface Pending {
  job: EncodeJob;
  resolve: (e: Encoded) => void;
  reject: (e: Error) => void;
}

/**
 * Records encoded on a worker thread: the helper thread the agent shares with its fingerprints
 * (src/util/helper-thread.ts), or one of its own. bench/warc.ts, 15 KB pages, level 4: ~25 µs of
 * main-thread CPU per exchange instead of ~310 µs in-line, for ~100 µs more CPU in total (messages,
 * a second heap). zlib's own async API was worse on both counts: +100 µs CPU a call (a fresh deflate
 * state and stream each time) and still ~60 µs on the main thread. Jobs posted in one event-loop turn
 * go as one message (and one wake-up), the thread answers the same way. If the thread dies, its
 * pending jobs and all later ones are encoded in-line.
 */
class WorkerEncoder implements Encoder {
  private readonly channel: ThreadChannel;
  /** The thread when this encoder made it (closed with it); a shared one is its owner's to close. */
  private readonly ownThread: HelperThread | undefined;
  /** The thread is gone (failed or closed): every record is encoded here. */
  private gone = false;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closing = false;
  private outTransfer: ArrayBuffer[] = [];

  /** `inlineFirst`: calls encoded here before the thread is used (a small crawl never starts it). */
  constructor(private inlineLeft: number, thread: HelperThread | undefined) {
    if (!thread) thread = this.ownThread = new HelperThread({ resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
    this.channel = thread.channel('warc', new URL('./worker.js', import.meta.url), {
      onReplies: (results) => {
        for (const m of results as EncoderResult[]) {
          const p = this.pending.get(m.id);
          if (!p) continue;
          this.pending.delete(m.id);
          if (m.ok) p.resolve(m.ok);
          else p.reject(new Error(m.err ?? 'encoder failed'));
        }
        if (this.pending.size === 0) this.channel.unref();
      },
      onFail: () => this.fail(),
      // Something in a job cannot be cloned: encode it here instead.
      onUnsent: (items) => {
        for (const { id, job } of items as WorkerJob[]) {
          const p = this.pending.get(id);
          if (!p) continue;
          this.pending.delete(id);
          encodeJob(job).then(p.resolve, p.reject);
        }
        if (this.pending.size === 0) this.channel.unref();
      },
    });
  }

  /** A thread was started for it (or for a component sharing it). */
  get threaded(): boolean { return this.channel.started; }

  private fail(): void {
    this.gone = true;
    if (this.closing) return;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      encodeJob(p.job).then(p.resolve, p.reject);
    }
  }

  encode(job: EncodeJob): Promise<Encoded> {
    if (this.inlineLeft > 0) {
      this.inlineLeft--;
      return encodeJob(job);
    }
    if (this.gone || this.closing) return encodeJob(job);
    const id = this.nextId++;
    // Hand the worker a private, exact-size copy of the body and transfer it: a
    // structured clone would copy the body's whole backing ArrayBuffer, which for
    // a Buffer view can be far larger than the body (a pool or a read buffer).
    const posted = job.kind === 'exchange' ? this.movable(job) : job;
    const transfer = this.outTransfer;
    this.outTransfer = [];
    let resolveP!: (e: Encoded) => void, rejectP!: (e: Error) => void;
    const promise = new Promise<Encoded>((resolve, reject) => { resolveP = resolve; rejectP = reject; });
    this.pending.set(id, { job, resolve: resolveP, reject: rejectP });
    if (!this.channel.post({ id, job: posted } satisfies WorkerJob, transfer)) {
      this.pending.delete(id);
      return encodeJob(job); // no thread: every record is encoded here
    }
    if (this.pending.size === 1) this.channel.ref();
    return promise;
  }

  /**
   * The job as posted: the body and the wire heads copied into exact-size buffers that are
   * transferred (the heads are small Buffers from Node's 8 KiB pool, which a structured
   * clone would copy whole, twice a page); header lists the encoder does not read with
   * wire heads (records.ts encodeExchange) left out of the clone.
   */
  private movable(job: EncodeJob & { kind: 'exchange' }): EncodeJob {
    const own = (b: Uint8Array): Uint8Array => { const c = new Uint8Array(b); this.outTransfer.push(c.buffer); return c; };
    const ex = job.input;
    const input = { ...ex };
    if (ex.body) input.body = own(ex.body);
    const wire = ex.wire;
    if (wire) {
      input.wire = { ...wire, responseHead: own(wire.responseHead) };
      input.responseHeaders = [];
      if (wire.requestHead && wire.requestHead.length > 0) {
        input.wire.requestHead = own(wire.requestHead);
        input.requestHeaders = [];
      }
    }
    return { ...job, input };
  }

  async close(): Promise<void> {
    this.closing = true;
    this.channel.unref();
    await this.ownThread?.close();
  }
}

// ---------------------------------------------------------------------------

interface Slot {
  enc: Encoded | null;
  failed: boolean;
  err: unknown;
  settled: boolean;
  resolve: (r: WriteResult) => void;
  reject: (e: unknown) => void;
}

const MAX_BATCH = 256;

async function writevFully(fh: FileHandle, bufs: Uint8Array[], position: number): Promise<void> {
  let rest = bufs;
  while (rest.length) {
    let want = 0;
    for (const b of rest) want += b.length;
    const { bytesWritten } = await fh.writev(rest, position);
    if (bytesWritten <= 0) throw new Error('short write');
    position += bytesWritten;
    if (bytesWritten === want) return;
    // Partial write: drop what went out, keep the rest.
    let skip = bytesWritten;
    const next: Uint8Array[] = [];
    for (const b of rest) {
      if (skip >= b.length) skip -= b.length;
      else {
        next.push(skip ? b.subarray(skip) : b);
        skip = 0;
      }
    }
    rest = next;
  }
}

async function writeFully(fh: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, position + done);
    if (bytesWritten <= 0) throw new Error('short write');
    done += bytesWritten;
  }
}

/**
 * Memory bound on one file's collected CDXJ lines (≈ 250 characters a capture, so
 * ≈ 65 k captures); a bigger file is indexed from disk when it closes, as before.
 */
export const MAX_CDXJ_CHARS = 16 * 1024 * 1024;

function callHook(hook: ((path: string, lines?: string[]) => void) | undefined, path: string, lines?: string[]): void {
  if (!hook) return;
  try {
    const r = (lines ? hook(path, lines) : hook(path)) as unknown;
    if (r && typeof (r as Promise<void>).catch === 'function') (r as Promise<void>).catch(() => {});
  } catch {
    // a failing hook must not break writing
  }
}

/**
 * Makes a `.open` file left by a killed writer whole: cuts it after its last whole
 * gzip member and renames it to its final name. A file with nothing but its warcinfo
 * record is deleted. Returns the final path, or null if the file was deleted.
 */
export async function recoverWarcFile(path: string): Promise<string | null> {
  let members = 0;
  let end = 0;
  let size = 0;
  for await (const _m of gzipMembers(path, (t) => ((end = t.end), (size = t.size)))) members++;
  if (members <= 1) {
    await unlink(path);
    return null;
  }
  if (end < size) await truncate(path, end);
  const final = path.endsWith(OPEN_SUFFIX) ? path.slice(0, -OPEN_SUFFIX.length) : path;
  if (final !== path) {
    const exists = await stat(final).then(
      () => true,
      () => false,
    );
    if (exists) return path;
    await rename(path, final);
  }
  return final;
}

export class WarcWriter {
  /** Called with the final path of each completed file (the agent builds its CDXJ here: docs/warc.md). */
  onFileClosed?: (path: string, cdxjLines?: string[]) => void;

  private readonly dir: string;
  private readonly prefix: string;
  private readonly agent: string;
  private readonly maxFileBytes: number;
  private readonly info: Record<string, string>;
  private readonly level: number;
  private readonly digest: DigestAlgo;
  private readonly maxPending: number;
  private readonly fsync: boolean;
  private readonly encoder: Encoder;
  /** Periodic fsync of the current file (fsyncIntervalMs), unref'd. */
  private syncTimer: NodeJS.Timeout | undefined;
  /** The periodic fsync running now, if any (a file is closed only after it). */
  private syncing: Promise<void> | undefined;
  /** Bytes of the current file covered by the last periodic fsync. */
  private syncedSize = 0;

  private serial: number;
  private fh: FileHandle | null = null;
  private curName = '';
  private curSize = 0;
  private curPayloadRecords = 0;
  private readonly collectCdxj: boolean;
  /** The current file's CDXJ lines (collectCdxj), null once incomplete or over MAX_CDXJ_CHARS. */
  private curCdxj: string[] | null = null;
  private curCdxjChars = 0;
  private readonly queue: Slot[] = [];
  private flushing = false;
  private inflight = 0;
  private readonly slotWaiters: Array<() => void> = [];
  private readonly all = new Set<Promise<unknown>>();
  private closed = false;
  /** Last error met while completing a file in the background (it keeps its .open name). */
  lastError: Error | null = null;
  private readonly st: Omit<WriterStats, 'pending' | 'encoderThread'> = { filesClosed: 0, records: 0, bytes: 0, syncs: 0 };

  private constructor(opts: WarcWriterOptions, serial: number) {
    this.dir = opts.dir;
    this.prefix = safePart(opts.prefix ?? DEFAULT_WARC.prefix);
    this.agent = safePart(opts.agentShortId);
    this.maxFileBytes = opts.maxFileBytes && opts.maxFileBytes > 0 ? opts.maxFileBytes : DEFAULT_WARC.maxFileBytes;
    this.info = { ...DEFAULT_INFO, ...(opts.warcinfo ?? {}) };
    const lvl = opts.gzipLevel ?? DEFAULT_LEVEL;
    this.level = Number.isInteger(lvl) && lvl >= 0 && lvl <= 9 ? lvl : DEFAULT_LEVEL;
    this.digest = opts.digest === 'sha1' || opts.digest === 'sha256' ? opts.digest : DEFAULT_DIGEST;
    this.maxPending = Math.max(1, opts.maxPending ?? 64);
    this.fsync = opts.fsync ?? true;
    this.onFileClosed = opts.onFileClosed;
    this.collectCdxj = opts.collectCdxj === true;
    this.serial = serial;
    this.encoder = opts.worker === false ? inlineEncoder : new WorkerEncoder(opts.inlineFirst ?? 0, opts.thread);
    const every = opts.fsyncIntervalMs ?? DEFAULT_WARC.fsyncIntervalMs;
    if (this.fsync && every > 0) {
      this.syncTimer = setInterval(() => this.syncNow(), every);
      this.syncTimer.unref();
    }
  }

  /**
   * The periodic fsync: in the background (fdatasync on the thread pool while appends go on),
   * only when the file grew since the last one, never two at once.
   */
  private syncNow(): void {
    const fh = this.fh;
    if (!fh || this.syncing || this.curSize === this.syncedSize) return;
    const size = this.curSize;
    this.syncing = fh.datasync().then(
      () => { this.st.syncs++; if (this.fh === fh) this.syncedSize = size; },
      (e: unknown) => { this.lastError = e instanceof Error ? e : new Error(String(e)); },
    ).finally(() => { this.syncing = undefined; });
  }

  /**
   * Opens a writer on `dir`. Any `.open` file this agent left behind (a crash) is
   * first repaired with recoverWarcFile() and reported to onFileClosed; serial
   * numbers continue after the highest one found. No file is created until the
   * first record is written.
   */
  static async open(opts: WarcWriterOptions): Promise<WarcWriter> {
    await mkdir(opts.dir, { recursive: true });
    const prefix = safePart(opts.prefix ?? DEFAULT_WARC.prefix);
    const agent = safePart(opts.agentShortId);
    const re = fileNameRe(prefix, agent);
    let maxSerial = -1;
    const stale: string[] = [];
    for (const name of await readdir(opts.dir)) {
      const m = re.exec(name);
      if (!m) continue;
      maxSerial = Math.max(maxSerial, Number(m[2]));
      if (m[3]) stale.push(name);
    }
    for (const name of stale.sort()) {
      const final = await recoverWarcFile(join(opts.dir, name));
      if (final && !final.endsWith(OPEN_SUFFIX)) callHook(opts.onFileClosed, final);
    }
    if (opts.indexMissing) {
      const names = new Set(await readdir(opts.dir));
      for (const name of [...names].sort()) {
        const m = re.exec(name);
        if (m && !m[3] && !names.has(cdxjPathFor(name))) callHook(opts.onFileClosed, join(opts.dir, name));
      }
    }
    return new WarcWriter(opts, maxSerial + 1);
  }

  /** A `response` and a `request` record for one fetch; the result locates the response. */
  writeExchange(ex: ExchangeInput): Promise<WriteResult> {
    return this.submit({ kind: 'exchange', input: ex, level: this.level, digest: this.digest });
  }

  /** A `revisit` record (identical-payload-digest or server-not-modified profile). */
  writeRevisit(rv: RevisitInput): Promise<WriteResult> {
    return this.submit({ kind: 'revisit', input: rv, level: this.level, digest: this.digest });
  }

  /** A `metadata` record of warc-fields about `url`, e.g. a near-duplicate note. */
  writeMetadata(url: string, date: Date, fields: Record<string, string> | HeaderList, concurrentTo?: string, protocols?: string[]): Promise<WriteResult> {
    return this.submit({ kind: 'metadata', input: { url, date, fields, concurrentTo, ...(protocols?.length ? { protocols } : {}) }, level: this.level, digest: this.digest });
  }

  /** A `conversion` record (the rendered DOM of a page) referring to the record it was made from. */
  writeConversion(cv: ConversionInput): Promise<WriteResult> {
    return this.submit({ kind: 'conversion', input: cv, level: this.level, digest: this.digest });
  }

  get stats(): WriterStats {
    return { ...this.st, pending: this.inflight, encoderThread: this.encoder.threaded };
  }

  /** Path of the file being written (with its `.open` suffix), or null. */
  get currentPath(): string | null {
    return this.fh ? join(this.dir, this.curName + OPEN_SUFFIX) : null;
  }

  /** Waits for every accepted write, completes the current file and stops the encoder. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.syncTimer) clearInterval(this.syncTimer);
    while (this.all.size) await Promise.allSettled([...this.all]);
    try {
      await this.closeFile();
    } finally {
      await this.encoder.close();
    }
  }

  private async acquire(): Promise<void> {
    if (this.inflight < this.maxPending) {
      this.inflight++;
      return;
    }
    await new Promise<void>((r) => this.slotWaiters.push(r));
  }

  private release(): void {
    const next = this.slotWaiters.shift();
    if (next) next(); // the slot passes straight to the next waiter
    else this.inflight--;
  }

  private submit(job: EncodeJob): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new Error('WarcWriter is closed'));
    const p = this.run(job);
    this.all.add(p);
    const drop = () => this.all.delete(p);
    p.then(drop, drop);
    return p;
  }

  private async run(job: EncodeJob): Promise<WriteResult> {
    await this.acquire();
    try {
      return await new Promise<WriteResult>((resolve, reject) => {
        // The slot takes its place in the append order now: files hold records in call order.
        const slot: Slot = { enc: null, failed: false, err: null, settled: false, resolve, reject };
        this.queue.push(slot);
        this.encoder.encode(job).then(
          (enc) => {
            slot.enc = enc;
            slot.settled = true;
            this.kick();
          },
          (err: unknown) => {
            slot.failed = true;
            slot.err = err;
            slot.settled = true;
            this.kick();
          },
        );
      });
    } finally {
      this.release();
    }
  }

  private kick(): void {
    if (this.flushing) return;
    this.flushing = true;
    void this.flush();
  }

  /**
   * Group commit: takes the encoded prefix of the queue and appends it with one
   * writev (fewer syscalls and thread-pool round trips than one write per call).
   * `flushing` is cleared in the same microtask as the final emptiness check, so a
   * slot that settles afterwards always finds kick() ready to start a new flush.
   */
  private async flush(): Promise<void> {
    try {
      while (this.queue.length && this.queue[0].settled) {
        let n = 1;
        while (n < this.queue.length && n < MAX_BATCH && this.queue[n].settled) n++;
        const batch = this.queue.splice(0, n);
        try {
          await this.writeBatch(batch);
        } catch (e) {
          for (const slot of batch) slot.reject(e); // no-op for slots already resolved
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async writeBatch(batch: Slot[]): Promise<void> {
    let i = 0;
    while (i < batch.length) {
      const first = batch[i];
      if (first.failed || !first.enc) {
        first.reject(first.err);
        i++;
        continue;
      }
      try {
        // Rotate between calls only: a request/response pair always shares a file.
        if (this.fh && this.curPayloadRecords > 0 && this.curSize + first.enc.bytes.length > this.maxFileBytes) {
          // The full file is fsynced and renamed in the background: writing goes
          // on into the next file meanwhile (an fsync of 1 GiB can take seconds).
          this.track(this.closeFile());
        }
        if (!this.fh) await this.openFile();
      } catch (e) {
        first.reject(e);
        i++;
        continue;
      }
      const group: Slot[] = [];
      let size = this.curSize;
      let count = this.curPayloadRecords;
      while (i < batch.length) {
        const enc = batch[i].enc;
        if (batch[i].failed || !enc) break;
        if (count > 0 && size + enc.bytes.length > this.maxFileBytes) break;
        group.push(batch[i]);
        size += enc.bytes.length;
        count++;
        i++;
      }
      const fh = this.fh!;
      const start = this.curSize;
      try {
        await writevFully(fh, group.map((g) => g.enc!.bytes), start);
      } catch (e) {
        // Leave no partial member behind: cut back to the last whole one.
        this.curCdxj = null; // and let the index be read from what the file holds
        await fh.truncate(start).catch(() => {});
        for (const g of group) g.reject(e);
        continue;
      }
      let at = start;
      for (const g of group) {
        const enc = g.enc!;
        let p = at;
        for (let k = 0; k < enc.primary; k++) p += enc.sizes[k];
        g.resolve({
          filename: this.curName,
          offset: p,
          length: enc.sizes[enc.primary],
          recordId: enc.recordId,
          payloadDigest: enc.payloadDigest,
        });
        if (this.curCdxj) this.noteCdxj(enc, at);
        at += enc.bytes.length;
        this.st.records += enc.sizes.length;
        this.st.bytes += enc.bytes.length;
      }
      this.curSize = at;
      this.curPayloadRecords = count;
    }
  }

  /** Completes the CDXJ lines of `enc`'s members, appended at `at` of the current file. */
  private noteCdxj(enc: Encoded, at: number): void {
    const heads = enc.cdxj;
    if (!heads || heads.length !== enc.sizes.length) {
      this.curCdxj = null;
      return;
    }
    for (let k = 0; k < heads.length; k++) {
      const h = heads[k];
      if (h) {
        const line = h + cdxjLineTail(at, this.curName);
        this.curCdxj!.push(line);
        this.curCdxjChars += line.length;
      }
      at += enc.sizes[k];
    }
    if (this.curCdxjChars > MAX_CDXJ_CHARS) this.curCdxj = null;
  }

  private async openFile(): Promise<void> {
    for (;;) {
      const now = new Date();
      const name = `${this.prefix}-${fileTimestamp(now)}-${String(this.serial).padStart(5, '0')}-${this.agent}.warc.gz`;
      this.serial++;
      let fh: FileHandle;
      try {
        fh = await open(join(this.dir, name + OPEN_SUFFIX), 'wx');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw e;
      }
      try {
        const info = await encodeWarcinfo(name, now, this.info, this.level, this.digest);
        await writeFully(fh, info.bytes, 0);
        this.st.records++;
        this.st.bytes += info.bytes.length;
        this.fh = fh;
        this.curName = name;
        this.curSize = info.bytes.length;
        this.curPayloadRecords = 0;
        this.curCdxj = this.collectCdxj ? [] : null;
        this.curCdxjChars = 0;
        this.syncedSize = 0;
        return;
      } catch (e) {
        await fh.close().catch(() => {});
        await unlink(join(this.dir, name + OPEN_SUFFIX)).catch(() => {});
        throw e;
      }
    }
  }

  /** Keeps a background file close in `all`, so close() waits for it. */
  private track(p: Promise<void>): void {
    const q = p.catch((e: unknown) => {
      // The file keeps its .open name; the next open() recovers it.
      this.lastError = e instanceof Error ? e : new Error(String(e));
    });
    this.all.add(q);
    q.then(() => this.all.delete(q));
  }

  /** Detaches the current file from the writer at once, then completes it. */
  private closeFile(): Promise<void> {
    const fh = this.fh;
    if (!fh) return Promise.resolve();
    this.fh = null;
    const lines = this.curCdxj ?? undefined;
    this.curCdxj = null;
    const size = this.curSize;
    const syncing = this.syncing;
    const open = join(this.dir, this.curName + OPEN_SUFFIX);
    const final = join(this.dir, this.curName);
    return (async () => {
      try {
        await syncing; // a periodic fsync of this handle finishes before it is closed
        // Nothing past the last whole record: a failed append whose cut-back failed too
        // (e.g. ENOSPC, then EIO) must not leave a partial member at the end.
        if ((await fh.stat()).size > size) await fh.truncate(size);
        if (this.fsync) await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(open, final);
      this.st.filesClosed++;
      callHook(this.onFileClosed, final, lines);
    })();
  }
}

