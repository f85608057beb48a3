// One worker thread that several components share, each on its own named channel.
//
// The agent used to start one thread for the WARC encoder and one for the SimHash
// fingerprints. Each is a V8 isolate with its own heap and its own copy of Node's
// internals compiled again (≈ 0.15–0.35 CPU-s to start, 15–45 MB of heap), and each
// page cost the main thread two postMessage calls (one per thread, ≈ 7 % of its CPU
// together in the crawl bench's profile). Sharing one thread: items posted in the
// same event-loop turn, whatever their channel, go as one message with one transfer
// list, and the thread answers the same way (docs/performance.md "Worker threads").
//
// The thread runs helper-worker.js, which loads each channel's handler module (a URL
// given here) the first time that channel is used, so a thread used by one component
// never loads the other's code. A thread that dies or cannot start is not restarted:
// every channel is told once (`onFail`), and its owner does the work inline from then on.
import { Worker, type ResourceLimits } from 'node:worker_threads';

/** What a channel's owner receives. */
export interface ChannelListener {
  /** Replies the thread's handler sent for this channel, in one batch. */
  onReplies(replies: unknown[]): void;
  /** The thread is gone (died, failed to start or closed): nothing more will be answered. */
  onFail(): void;
  /** Items of this channel that could not be posted (e.g. not cloneable): the owner handles them itself. */
  onUnsent(items: unknown[]): void;
}

export interface ThreadChannel {
  /** Queues an item for the thread (sent at the end of this turn); false when the thread is gone or cannot start. */
  post(item: unknown, transfer?: readonly ArrayBuffer[]): boolean;
  /** Keeps the process alive while this channel waits for replies (counted per channel, not per call). */
  ref(): void;
  unref(): void;
  /** The thread has been started (by any channel). */
  readonly started: boolean;
}

/** Messages both ways: [channel, items] pairs. */
export type HelperBatch = Array<[string, unknown[]]>;

export interface HelperThreadOptions {
  /** V8 limits of the thread's heap (young generation: src/config.ts WORKER_YOUNG_GENERATION_MB). */
  resourceLimits?: ResourceLimits;
}

export class HelperThread {
  /** undefined: not started yet; null: gone. */
  private w: Worker | null | undefined;
  private readonly modules: Record<string, string> = {};
  private readonly listeners = new Map<string, ChannelListener>();
  private readonly reffed = new Set<string>();
  private out = new Map<string, unknown[]>();
  private transfer: ArrayBuffer[] = [];
  private scheduled = false;
  private closed = false;
  private failed = false;
  /** Channels whose handler module the thread has been sent. */
  private modulesSent = 0;

  constructor(private readonly opts: HelperThreadOptions = {}) {}

  get started(): boolean { return this.w !== undefined; }

  /**
   * Opens a channel: items posted on it are handed, in batches, to the `handle` function exported by `handler`
   * (a module URL) inside the thread, and its replies come back to `listener`.
   */
  channel(name: string, handler: URL, listener: ChannelListener): ThreadChannel {
    if (this.listeners.has(name)) throw new Error(`helper thread: channel ${name} is already open`);
    this.modules[name] = handler.href;
    this.listeners.set(name, listener);
    const self = this;
    return {
      post: (item, transfer) => this.post(name, item, transfer),
      ref: () => { this.reffed.add(name); this.w?.ref(); },
      unref: () => { this.reffed.delete(name); if (this.reffed.size === 0) this.w?.unref(); },
      get started() { return self.started; },
    };
  }

  /** Stops the thread; every channel is told (`onFail`) if it was still open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const w = this.w;
    this.w = null;
    this.out.clear();
    this.transfer = [];
    if (w) await w.terminate();
    this.failAll();
  }

  private post(name: string, item: unknown, transfer?: readonly ArrayBuffer[]): boolean {
    const w = this.w === undefined ? this.start() : this.w;
    if (!w) return false;
    let items = this.out.get(name);
    if (!items) this.out.set(name, items = []);
    items.push(item);
    if (transfer) for (const t of transfer) this.transfer.push(t);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
    return true;
  }

  private start(): Worker | null {
    if (this.closed) return this.w = null;
    try {
      const w = new Worker(new URL('./helper-worker.js', import.meta.url), {
        ...(this.opts.resourceLimits ? { resourceLimits: this.opts.resourceLimits } : {}),
      });
      // Idle, the thread must not keep the process alive; a channel waiting for replies refs it.
      if (this.reffed.size === 0) w.unref();
      w.on('message', (batch: HelperBatch) => {
        for (const [name, replies] of batch) this.listeners.get(name)?.onReplies(replies);
      });
      const fail = (): void => {
        if (this.w !== w) return;
        this.w = null;
        this.failAll();
      };
      w.on('error', fail);
      w.on('exit', fail);
      return this.w = w;
    } catch {
      this.w = null;
      this.failAll();
      return null;
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const out = this.out;
    const transfer = this.transfer;
    this.out = new Map();
    this.transfer = [];
    if (out.size === 0) return;
    const w = this.w;
    const batch: HelperBatch = [...out];
    if (w) {
      try {
        // The handler modules travel with the first message after a channel was opened.
        const fresh = this.listeners.size > this.modulesSent;
        w.postMessage(fresh ? { modules: this.modules, batch } : { batch }, transfer);
        this.modulesSent = this.listeners.size;
        return;
      } catch {
        // Something in the batch cannot be cloned: each owner handles its items itself.
      }
    }
    for (const [name, items] of batch) this.listeners.get(name)?.onUnsent(items);
  };

  private failAll(): void {
    if (this.failed) return;
    this.failed = true;
    for (const l of this.listeners.values()) {
      try { l.onFail(); } catch { /* one owner's failure must not keep the others from hearing */ }
    }
  }
}
