// SimHash fingerprints off the event loop.
//
// The agent's main thread parses each page (links, directives) and, for the
// near-duplicate check, used to take the page's SimHash there too: ≈ 90 µs of
// scan and vote per 15–30 KB page, a tenth of the main thread's work in the
// crawl bench, while the WARC worker's thread sat 40 % idle. The parser now
// hands out the text as pieces of the decoded page (html.ts `fingerprintLater`),
// and one worker thread computes simhashPieces. The pieces are transferred,
// the page string copied; jobs posted in the same tick go as one message.
//
// A page whose text needs simhash64's reference path (characters whose lower
// case changes length, surrogate entities), or any worker failure, resolves
// to null: the caller then fingerprints inline as before, so results never
// depend on where they were computed.
import { Worker } from 'node:worker_threads';
import type { FingerprintJob } from './simhash.js';
import { WORKER_YOUNG_GENERATION_MB } from '../config.js';
import type { FingerprintReply, FingerprintRequest } from './fingerprint-worker.js';

interface Pending { resolve(fp: bigint | null): void; deadline: number }

/** A job the thread has not answered by then is computed inline instead (a lost message must not stall a page). */
const ANSWER_WITHIN_MS = 10_000;

export class Fingerprinter {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private batch: FingerprintRequest[] = [];
  private nextId = 1;
  private broken = false;
  private closed = false;
  private watchdog: NodeJS.Timeout | undefined;
  /** Jobs answered by the worker / handed back for the inline path. */
  readonly stats = { offloaded: 0, inline: 0 };

  /** `inlineFirst`: pages fingerprinted by the parser itself before jobs go to the thread (a small crawl never starts it). */
  constructor(private inlineLeft = 0) {}

  /** False once the thread is gone (failed or closed): callers should fingerprint inline rather than make jobs. */
  get available(): boolean { return !this.broken && !this.closed; }

  /**
   * Whether the page about to be parsed should make a job for the thread (false: the parser fingerprints it
   * inline). Called once a page: the first `inlineFirst` pages are inline, and the thread starts after them.
   */
  wantsJob(): boolean {
    if (!this.available) return false;
    if (this.inlineLeft > 0) { this.inlineLeft--; return false; }
    return true;
  }

  /**
   * simhashPieces of the job on the worker thread; null when the caller must
   * compute it itself. The job's pieces are moved to the thread: it cannot be
   * used again.
   */
  fingerprint(job: FingerprintJob): Promise<bigint | null> {
    if (this.broken || this.closed) { this.stats.inline++; return Promise.resolve(null); }
    // A job whose buffers already moved (or that does not hold its pieces) would be lost in postMessage.
    if (job.pieces.length < 2 * job.count) { this.stats.inline++; return Promise.resolve(null); }
    const w = this.worker ?? this.start();
    if (!w) { this.stats.inline++; return Promise.resolve(null); }
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, deadline: Date.now() + ANSWER_WITHIN_MS });
      this.watchdog ??= setInterval(() => this.expire(), 1000).unref();
      if (this.batch.length === 0) setImmediate(() => this.flush());
      this.batch.push({ id, text: job.text, pieces: job.pieces, count: job.count });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.failAll();
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  private start(): Worker | undefined {
    try {
      const w = new Worker(new URL('./fingerprint-worker.js', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
      w.unref(); // an idle fingerprint thread must not keep the process alive
      w.on('message', (replies: FingerprintReply[]) => {
        for (const r of replies) {
          const p = this.pending.get(r.id);
          if (!p) continue;
          this.pending.delete(r.id);
          if (r.hex === null) { this.stats.inline++; p.resolve(null); }
          else { this.stats.offloaded++; p.resolve(BigInt('0x' + r.hex)); }
        }
      });
      // A dead worker is not restarted: every later page is fingerprinted inline.
      const fail = () => { this.broken = true; this.worker = undefined; this.failAll(); };
      w.on('error', fail);
      w.on('exit', fail);
      this.worker = w;
      return w;
    } catch {
      this.broken = true;
      return undefined;
    }
  }

  private flush(): void {
    const jobs = this.batch;
    this.batch = [];
    if (jobs.length === 0) return;
    const w = this.worker;
    if (!w) { for (const j of jobs) this.settle(j.id, null); return; }
    const moved: ArrayBuffer[] = [];
    for (const j of jobs) {
      // Only buffers the job owns outright (html.ts slices them) can be moved; anything else is cloned.
      if (j.pieces.byteOffset === 0 && j.pieces.byteLength === j.pieces.buffer.byteLength) moved.push(j.pieces.buffer as ArrayBuffer);
    }
    try {
      w.postMessage(jobs, moved);
    } catch {
      for (const j of jobs) this.settle(j.id, null);
    }
  }

  private expire(): void {
    const now = Date.now();
    for (const [id, p] of this.pending) if (p.deadline <= now) this.settle(id, null);
    if (this.pending.size === 0 && this.watchdog) { clearInterval(this.watchdog); this.watchdog = undefined; }
  }

  private settle(id: number, fp: bigint | null): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    this.stats.inline++;
    p.resolve(fp);
  }

  private failAll(): void {
    for (const id of [...this.pending.keys()]) this.settle(id, null);
    this.batch = [];
    if (this.watchdog) { clearInterval(this.watchdog); this.watchdog = undefined; }
  }
}
