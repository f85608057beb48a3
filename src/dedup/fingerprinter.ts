// SimHash fingerprints off the event loop.
//
// The agent's main thread parses each page (links, directives) and, for the
// near-duplicate check, used to take the page's SimHash there too: ≈ 90 µs of
// scan and vote per 15–30 KB page, a tenth of the main thread's work in the
// crawl bench, while the WARC worker's thread sat 40 % idle. The parser now
// hands out the text as pieces of the decoded page (html.ts `fingerprintLater`),
// and a worker thread computes simhashPieces: the helper thread the agent shares
// with the WARC encoder (src/util/helper-thread.ts), or one of its own. The pieces
// are transferred, the page string copied; jobs posted in the same tick go as one
// message, together with the encoder's jobs of that tick.
//
// A page whose text needs simhash64's reference path (characters whose lower
// case changes length, surrogate entities), or any worker failure, resolves
// to null: the caller then fingerprints inline as before, so results never
// depend on where they were computed.
import type { FingerprintJob } from './simhash.js';
import { WORKER_YOUNG_GENERATION_MB } from '../config.js';
import { HelperThread, type ThreadChannel } from '../util/helper-thread.js';
import type { FingerprintReply, FingerprintRequest } from './fingerprint-worker.js';

interface Pending { resolve(fp: bigint | null): void; deadline: number }

/** A job the thread has not answered by then is computed inline instead (a lost message must not stall a page). */
const ANSWER_WITHIN_MS = 10_000;

export class Fingerprinter {
  private readonly channel: ThreadChannel;
  /** The thread when this fingerprinter made it (closed with it); a shared one is its owner's to close. */
  private readonly ownThread: HelperThread | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private broken = false;
  private closed = false;
  private watchdog: NodeJS.Timeout | undefined;
  /** Jobs answered by the worker / handed back for the inline path. */
  readonly stats = { offloaded: 0, inline: 0 };

  /**
   * `inlineFirst`: pages fingerprinted by the parser itself before jobs go to the thread (a small crawl never starts it).
   * `thread`: the helper thread to use (shared with other components); without it, one of its own.
   */
  constructor(private inlineLeft = 0, thread?: HelperThread) {
    if (!thread) thread = this.ownThread = new HelperThread({ resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
    this.channel = thread.channel('fingerprint', new URL('./fingerprint-worker.js', import.meta.url), {
      onReplies: (replies) => this.answered(replies as FingerprintReply[]),
      // A dead thread is not restarted: every later page is fingerprinted inline.
      onFail: () => { this.broken = true; this.failAll(); },
      onUnsent: (items) => { for (const j of items as FingerprintRequest[]) this.settle(j.id, null); },
    });
  }

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
    const id = this.nextId++;
    // Only buffers the job owns outright (html.ts slices them) can be moved; anything else is cloned.
    const p = job.pieces;
    const moved = p.byteOffset === 0 && p.byteLength === p.buffer.byteLength ? [p.buffer as ArrayBuffer] : undefined;
    if (!this.channel.post({ id, text: job.text, pieces: p, count: job.count } satisfies FingerprintRequest, moved)) {
      this.stats.inline++;
      return Promise.resolve(null);
    }
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, deadline: Date.now() + ANSWER_WITHIN_MS });
      this.watchdog ??= setInterval(() => this.expire(), 1000).unref();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.failAll();
    await this.ownThread?.close();
  }

  private answered(replies: FingerprintReply[]): void {
    for (const r of replies) {
      const p = this.pending.get(r.id);
      if (!p) continue;
      this.pending.delete(r.id);
      if (r.hex === null) { this.stats.inline++; p.resolve(null); }
      else { this.stats.offloaded++; p.resolve(BigInt('0x' + r.hex)); }
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
    if (this.watchdog) { clearInterval(this.watchdog); this.watchdog = undefined; }
  }
}
