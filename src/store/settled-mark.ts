// Whether a store has ever held a seen entry in state `settled-elsewhere` (docs/storage.md).
//
// A mesh member reads the seen-set before each fetch, because a previous owner's handoff may
// have settled the URL after it was queued (docs/mesh.md "Seen entries on the wire"). Such an
// entry is only ever written by peer intake (src/crawl/intake.ts), and the batch that first
// writes one also writes this mark in the meta sublevel. A store without the mark holds no such
// entry, so the read (a LevelDB get per page: ≈ 3 % of the main thread, docs/performance.md
// "Real HTML") could only answer "not settled": an agent that has received no seen entries —
// alone, or before any ring change moved a host to it — skips it.
//
// A store without the mark but with seen entries may come from a version that did not write it:
// it is assumed to hold some. So only a store that starts empty (a new crawl) skips the read.
import type { BatchOp, Store } from './db.js';

export const SETTLED_ELSEWHERE_MARK_KEY = Buffer.from('settled-elsewhere-seen');

export class SettledElsewhereMark {
  /** Until the stored mark has been read, assume it is there (the read before a fetch is then made). */
  private maybe = true;
  private persisted = false;
  private touched = false;

  /** Settles once the stored state was read: wait for it before the first URL is admitted (a seen entry would hide a new store). */
  readonly ready: Promise<void>;

  constructor(private readonly store: Store) {
    this.ready = this.load();
  }

  private async load(): Promise<void> {
    try {
      const v = await this.store.meta.get(SETTLED_ELSEWHERE_MARK_KEY);
      if (v !== undefined && v !== null) { this.persisted = true; return; }
      const anySeen = (await this.store.seen.keys({ limit: 1 }).all()).length > 0;
      if (!this.touched) this.maybe = anySeen;
    } catch { /* unreadable or closed: keep assuming it is there */ }
  }

  /** Whether a seen entry may be `settled-elsewhere`: false only when the store never held one. */
  get any(): boolean { return this.maybe; }

  /**
   * For a batch that writes `settled-elsewhere` seen entries: the op that stores the mark with
   * them (null once it is stored). From now on `any` is true, before the batch is written.
   */
  opFor(): BatchOp | null {
    this.touched = true;
    this.maybe = true;
    return this.persisted ? null : { type: 'put', sublevel: this.store.meta, key: SETTLED_ELSEWHERE_MARK_KEY, value: Buffer.from([1]) };
  }

  /** The batch with the mark was written. */
  stored(): void { this.persisted = true; }
}

const marks = new WeakMap<Store, SettledElsewhereMark>();

/** The one mark of a store (intake writes it, the host turn reads it). */
export function settledElsewhereMark(store: Store): SettledElsewhereMark {
  let m = marks.get(store);
  if (!m) { m = new SettledElsewhereMark(store); marks.set(store, m); }
  return m;
}
