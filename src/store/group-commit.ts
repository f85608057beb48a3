// Group commit for the store's hottest writer: each finished page is one
// atomic unit of ops (frontier entry removed, seen state, fetch record, digest,
// recrawl state). Writing each unit as its own LevelDB batch cost ≈ 70 µs of
// CPU per page, most of it per batch rather than per op (napi hand-over, a
// thread-pool hop, a log append): grouping ten units brings it to ≈ 16 µs
// (docs/performance.md "Crawl"). The classic remedy, as in database logs:
// units that arrive while a batch is being written go out together in the
// next one.
//
// Guarantees, relied on by docs/storage.md "Write ordering":
// - a unit's ops are never split: they land in one LevelDB batch, in order;
// - a unit's promise settles only after the batch holding it is written, so a
//   caller that waits for it still knows its ops are in the log;
// - units are written in the order they were handed over;
// - fail-stop: after a batch fails in LevelDB's write path (mayTearLog), no
//   later unit is written (each is rejected with that error). A failed log
//   append may leave a torn record, and LevelDB's recovery drops what follows it
//   in its log block, so a later batch could be lost although it was reported
//   written (docs/storage.md "Write failures"). A batch refused before it
//   reached LevelDB (a bad key) fails alone.
import type { BatchOp, RawDb } from './db.js';

interface Waiter { resolve(): void; reject(err: Error): void }

/**
 * Whether a failed write may have reached LevelDB's log: an I/O or corruption
 * error from LevelDB, or an error of unknown kind. Not so for abstract-level's
 * own checks, which refuse a write before it starts (LEVEL_INVALID_KEY,
 * LEVEL_DATABASE_NOT_OPEN, …).
 */
export function mayTearLog(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string' || !code.startsWith('LEVEL_')) return true;
  return code === 'LEVEL_IO_ERROR' || code === 'LEVEL_CORRUPTION';
}

export interface GroupCommitStats {
  /** LevelDB batches written. */
  batches: number;
  /** Units (callers' op lists) written. */
  units: number;
}

export class GroupCommit {
  private ops: BatchOp[] = [];
  private waiters: Waiter[] = [];
  private writing = false;
  private scheduled = false;
  /** The error of the first failed batch: nothing is written after it. */
  private failed: Error | undefined;
  readonly stats: GroupCommitStats = { batches: 0, units: 0 };

  constructor(private readonly db: RawDb) {}

  /** Writes `ops` atomically with whatever else is waiting; settles when they are in the log. */
  write(ops: BatchOp[]): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<void>((resolve, reject) => {
      for (const op of ops) this.ops.push(op);
      this.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  // The first unit after a quiet spell waits for the rest of this event-loop
  // turn (setImmediate), so units finished by the same I/O callbacks share a
  // batch; while a batch is in flight, arrivals simply accumulate.
  private schedule(): void {
    if (this.writing || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.writing || this.waiters.length === 0) return;
    const ops = this.ops;
    const waiters = this.waiters;
    this.ops = [];
    this.waiters = [];
    this.writing = true;
    this.stats.batches++;
    this.stats.units += waiters.length;
    void this.writeBatch(ops, waiters);
  }

  private async writeBatch(ops: BatchOp[], waiters: Waiter[]): Promise<void> {
    let error: Error | undefined = this.failed;
    if (!error) {
      try {
        await this.db.batch(ops);
      } catch (err) {
        error = err as Error;
        if (mayTearLog(err)) this.failed = error;
      }
    }
    this.writing = false;
    for (const w of waiters) {
      if (error) w.reject(error);
      else w.resolve();
    }
    // Units that arrived meanwhile have waited a whole write already.
    this.flush();
  }
}
