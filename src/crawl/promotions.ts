// In-link promotions: a queued URL whose in-link count (src/frontier/inlinks.ts)
// crosses a priority threshold (src/frontier/priority.ts `inlinkBonus`) is moved
// up one class per threshold crossed. A hint, not a duty: what cannot be moved
// safely now is skipped (counted).
//
// Its collaborators come in one `components` object: the store, the frontier,
// the seen-set's exclusive section, the counters, and where a failure goes.
import type { BatchOp, Store } from '../store/db.js';
import { HOST_KEY_BYTES } from '../store/keys.js';
import type { Drum } from '../seen/drum.js';
import { queuedAt, queuedValue } from '../seen/state.js';
import { decodeEntry, type Frontier, type FrontierMove } from '../frontier/frontier.js';
import { inlinkBonus, MAX_PRIORITY } from '../frontier/priority.js';
import { InlinkCounter } from '../frontier/inlinks.js';
import type { CrawlStats } from './stats.js';
import type { Candidate, HostData } from './candidate.js';

/** Promotions looked up per store round trip. */
const PROMOTION_BATCH = 512;
/** Crossings waiting beyond this are dropped (counted as skipped). */
const MAX_WAITING = 65_536;

export interface PromotionComponents {
  store: Pick<Store, 'db' | 'seen' | 'frontier'>;
  frontier: Frontier<HostData>;
  drum: Pick<Drum<Candidate>, 'exclusive'>;
  stats: Pick<CrawlStats, 'inlinks'>;
  /** A failed promotion write stops the agent (docs/storage.md "Write failures"). */
  onFatal(err: Error): void;
  /** True once the agent stops: no new promotion pass begins. */
  stopping(): boolean;
}

export class Promotions {
  /** Recent in-link counts per URL (src/frontier/inlinks.ts). */
  private readonly inlinks = new InlinkCounter();
  /** Queued URLs whose in-link count crossed a priority threshold, waiting to be moved up. */
  private waiting: Candidate[] = [];
  private promoting: Promise<void> | undefined;

  constructor(private readonly c: PromotionComponents) {}

  /** The pass under way, if any (awaited before the store closes). */
  get running(): Promise<void> | undefined { return this.promoting; }

  /** New URLs of a seen-set round: those found as links start their in-link count. */
  noteNew(items: Candidate[]): void {
    for (const it of items) if (it.inlink) this.inlinks.add(it.key);
  }

  /**
   * Repeat discoveries from the seen-set: each link adds to its URL's in-link
   * count, and a URL whose count crosses a priority threshold is queued for
   * promotion, if it is still queued itself.
   */
  noteRepeats(items: Candidate[]): void {
    const st = this.c.stats.inlinks;
    for (const it of items) {
      if (!it.inlink) continue;
      const after = this.inlinks.add(it.key);
      if (inlinkBonus(after) <= inlinkBonus(this.inlinks.lastBefore)) continue;
      st.crossings++;
      if (this.waiting.length < MAX_WAITING) this.waiting.push(it);
      else st.skipped++;
    }
    this.start();
  }

  private start(): void {
    if (this.waiting.length === 0 || this.promoting || this.c.stopping()) return;
    this.promoting = this.promoteQueued().catch((err: Error) => this.c.onFatal(new Error(`in-link promotion failed: ${err.message}`))).finally(() => {
      this.promoting = undefined;
      this.start(); // crossings that arrived as it finished
    });
  }

  /**
   * Moves queued URLs up one class per threshold crossed. Between seen-set
   * rounds (a round's new seen values and handoffs cannot interleave), the
   * URL's seen value says where it is queued; the frontier entry there must
   * still be this URL; the frontier moves it only if it is not handed out
   * (`Frontier.moveOps`). Entry, new entry and seen value change in one batch.
   */
  private async promoteQueued(): Promise<void> {
    const { store, frontier, stats } = this.c;
    while (this.waiting.length > 0 && !this.c.stopping()) {
      // One entry per URL, with the thresholds it crossed (a link repeated on 20 pages of one
      // seen-set round crosses 3 and 20 at once): the same entry must not be moved twice.
      const steps = new Map<string, { c: Candidate; steps: number }>();
      for (const c of this.waiting.splice(0, PROMOTION_BATCH)) {
        const k = c.key.toString('latin1');
        const s = steps.get(k);
        if (s) s.steps++; else steps.set(k, { c, steps: 1 });
      }
      const batch = [...steps.values()];
      await this.c.drum.exclusive(async () => {
        // Pages that complete while we read are refused below: what we read may predate them.
        frontier.watchAcks();
        const moves: FrontierMove[] = [];
        const ops: BatchOp[] = [];
        try {
          const values = await store.seen.getMany(batch.map((b) => b.c.key));
          const found: { c: Candidate; steps: number; fk: Buffer }[] = [];
          for (let i = 0; i < batch.length; i++) {
            const fk = queuedAt(batch[i]!.c.key, values[i]);
            if (fk) found.push({ ...batch[i]!, fk });
            else stats.inlinks.skipped++; // fetched, failed, rejected, or queued before positions were kept
          }
          if (found.length === 0) return;
          const entries = await store.frontier.getMany(found.map((f) => f.fk));
          for (let i = 0; i < found.length; i++) {
            const { c, fk } = found[i]!;
            const entry = entries[i] ? decodeEntry(entries[i]!, c.host) : undefined;
            if (!entry || entry.url !== c.url || !frontier.host(c.host)) { stats.inlinks.skipped++; continue; }
            const move = frontier.moveOps(fk, c.host, entry, Math.min(MAX_PRIORITY, MAX_PRIORITY - fk[HOST_KEY_BYTES]! + found[i]!.steps));
            if (!move) { stats.inlinks.skipped++; continue; }
            ops.push(...move.ops, { type: 'put', sublevel: store.seen, key: c.key, value: queuedValue(move.item.frontierKey) });
            moves.push(move);
          }
        } finally {
          frontier.unwatchAcks();
        }
        if (moves.length === 0) return;
        try {
          await store.db.batch(ops);
        } catch (err) {
          frontier.moved(moves, false);
          throw err;
        }
        frontier.moved(moves);
        stats.inlinks.promoted += moves.length;
      });
    }
    this.waiting.length = 0;
  }
}
