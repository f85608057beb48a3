// Completion of a URL (docs/storage.md "Write ordering"): its links are made
// durable first (routed: queued here or in the outbox to their owners), then
// its frontier entry is removed, its seen entry marked with the outcome and its
// fetch record written — in one atomic unit, which may share its LevelDB batch
// with other pages' (src/store/group-commit.ts). The replica seen entry for the
// host's next owner rides in the same unit (docs/mesh.md "Crashes").
import type { BatchOp, Store } from '../store/db.js';
import type { GroupCommit } from '../store/group-commit.js';
import { seenKey } from '../store/keys.js';
import { settledValue, type SettledState } from '../seen/state.js';
import type { Frontier, HostState, QueuedUrl } from '../frontier/frontier.js';
import type { Recrawler, RecrawlOutcome } from '../recrawl/recrawler.js';
import { encodeFetchRecord, type FetchRecord } from './records.js';
import { errorText } from './errors.js';
import type { Router } from './router.js';
import type { Candidate, HostData } from './candidate.js';

export interface CompletionComponents {
  store: Pick<Store, 'seen' | 'fetches'>;
  frontier: Pick<Frontier<HostData>, 'doneOp' | 'acknowledged'>;
  commits: Pick<GroupCommit, 'write'>;
  router: Pick<Router, 'route' | 'replicate' | 'replicated'>;
  recrawl: Pick<Recrawler, 'outcomeOps'> | undefined;
  /** The agent's first fatal error: after a failed write nothing more is acknowledged (docs/storage.md "Write failures"). */
  fatal(): Error | undefined;
  onFatal(err: Error): void;
}

/** What a URL's completion writes besides its own state. */
export interface CompletionExtras {
  recrawl?: RecrawlOutcome;
  /** e.g. the payload digest's first capture (src/dedup/content.ts). */
  ops?: BatchOp[];
  /** e.g. the page's SimHash indexed (src/dedup/content.ts), before it is marked fetched. */
  before?: Promise<void>;
}

export class Completion {
  constructor(private readonly c: CompletionComponents) {}

  /** Completes a URL with its links and its record; never throws (a failure is fatal to the agent). */
  async finish(q: QueuedUrl, h: HostState<HostData>, links: Candidate[], record: FetchRecord, extras: CompletionExtras = {}): Promise<void> {
    const { store, frontier, router } = this.c;
    try {
      await router.route(links);
      if (extras.before) await extras.before;
      const fatal = this.c.fatal();
      if (fatal) throw fatal;
      const key = seenKey(h.key, q.url);
      // Failed covers "not fetched" too (robots, budget); the noindex flag rides on the state (src/seen/state.ts).
      const outcome: SettledState = record.failure === 'settled-elsewhere' ? 'settled-elsewhere' : record.failure ? 'failed' : 'fetched';
      const ops: BatchOp[] = [
        frontier.doneOp(q),
        { type: 'put', sublevel: store.seen, key, value: settledValue(outcome, record.noindex) },
        { type: 'put', sublevel: store.fetches, key, value: encodeFetchRecord(record) },
        ...(extras.ops ?? []),
      ];
      if (this.c.recrawl && q.kind === 'page') ops.push(...this.c.recrawl.outcomeOps(q, key, extras.recrawl ?? { at: record.at, status: 0 }));
      const replica = outcome !== 'settled-elsewhere' ? router.replicate(h.name, q.url, ops) : undefined;
      await this.c.commits.write(ops);
      frontier.acknowledged(1, h, q);
      if (replica) router.replicated(replica);
    } catch (err) {
      const fatal = this.c.fatal();
      this.c.onFatal(fatal && err === fatal ? fatal : new Error(`store write failed: ${errorText(err)}`));
    } finally {
      h.data.pendingAcks--;
    }
  }
}
