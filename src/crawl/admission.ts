// Admission: a discovered URL on its way into the frontier — normalised, checked
// against the trap policy (src/scope/traps.ts) and the crawl scope
// (src/scope/crawl-scope.ts, docs/scope.md), then through the seen-set (DRUM,
// src/seen/drum.ts), whose round writes its seen entry and its frontier entry in
// one batch (docs/storage.md). Budgets of the trap policy are charged only for
// URLs the seen-set finds new, so repeat links do not use them up.
//
// Its collaborators come in one `components` object (src/crawl/ownership.ts does
// the same). Where a candidate goes (here or to its host's owner) is the
// router's business (src/crawl/router.ts); admission is what runs for the URLs
// that stay here.
import type { BatchOp, Store } from '../store/db.js';
import type { SyncBarrier } from '../store/sync-barrier.js';
import { hostKey, seenKey } from '../store/keys.js';
import type { AgentConfig } from '../config.js';
import { Drum } from '../seen/drum.js';
import { REJECTED_VALUE, queuedValue } from '../seen/state.js';
import type { Frontier, NewUrl, UrlKind } from '../frontier/frontier.js';
import { priorityClass } from '../frontier/priority.js';
import { normalizeUrl, hostOf } from '../url/normalize.js';
import { ScopePolicy } from '../scope/traps.js';
import { CrawlScope } from '../scope/crawl-scope.js';
import { BLOCKED_BY_POLICY } from './policy-gate.js';
import { bump, type CrawlStats } from './stats.js';
import type { Candidate, HostData } from './candidate.js';
import type { ReplicaOps } from './frontier-replica.js';

export interface AdmissionComponents {
  config: Pick<AgentConfig, 'seen' | 'scope' | 'crawlScope'>;
  store: Pick<Store, 'db' | 'seen'>;
  frontier: Pick<Frontier<HostData>, 'enqueueOps' | 'committed'>;
  /** A synced write, for a round a submitter asked to sync that has nothing of its own to write. */
  barrier: Pick<SyncBarrier, 'sync'>;
  stats: CrawlStats;
  /** The in-link counts (src/crawl/promotions.ts): new URLs found as links, and repeat discoveries. */
  inlinks: { noteNew(items: Candidate[]): void; noteRepeats(items: Candidate[]): void };
  /** The crawl policy in force (src/crawl/policy-gate.ts): scope with the mesh's seed units, block list. Absent: the options' scope alone. */
  policy?: AdmissionPolicy;
  /** The replicas of newly queued URLs for their hosts' successors, written in the round's batch (src/crawl/frontier-replica.ts). */
  replicas?: { queueOps(items: Candidate[]): ReplicaOps | undefined };
}

/** What admission reads of the crawl policy in force. */
export interface AdmissionPolicy {
  readonly crawlScope: CrawlScope;
  /** A seed's unit is in scope from now on (mesh-wide, through the policy). */
  addSeed(host: string): void;
  blocked(url: string, host: string): boolean;
}

export class Admission {
  /** Traps and budgets (src/scope/traps.ts). */
  readonly scope: ScopePolicy;
  /** The crawl policy in force: what the crawl follows (--scope, --allow-host, --include/--exclude, --max-depth; docs/scope.md), what is blocked. */
  private readonly policy: AdmissionPolicy;
  /** The seen-set: one round writes the new URLs' seen entries and frontier entries in one batch. */
  readonly drum: Drum<Candidate>;
  /** Candidates of the DRUM round in progress that passed the scope budgets. */
  private readonly admitted = new Set<Candidate>();
  /** The replica writes of the DRUM round in progress: sendable once its batch is durable. */
  private replicaOps: ReplicaOps | undefined;

  constructor(private readonly c: AdmissionComponents) {
    this.scope = new ScopePolicy(c.config.scope);
    this.policy = c.policy ?? optionsPolicy(new CrawlScope(c.config.crawlScope));
    this.drum = new Drum<Candidate>(c.store.db, c.store.seen, {
      batchSize: c.config.seen.batchSize,
      maxWaitMs: c.config.seen.maxWaitMs,
      valueOf: (it) => (this.admitted.has(it) ? queuedValue(it.frontierKey) : REJECTED_VALUE),
      onNew: (items) => {
        const admitted = items.filter((it) => this.scope.admit(it.url, it.host) === null);
        for (const it of admitted) this.admitted.add(it);
        const ops = c.frontier.enqueueOps(admitted);
        this.replicaOps = c.replicas?.queueOps(admitted);
        return this.replicaOps ? [...ops, ...this.replicaOps.ops] : ops;
      },
      afterCommit: (items) => {
        this.replicaOps?.done();
        this.replicaOps = undefined;
        const admitted = items.filter((it) => this.admitted.delete(it));
        c.stats.urlsDiscovered += admitted.length;
        c.frontier.committed(admitted);
        c.inlinks.noteNew(items);
      },
      onOld: (items) => c.inlinks.noteRepeats(items),
      syncBarrier: () => c.barrier.sync(),
    });
  }

  /** What the crawl follows, as in force now. */
  get crawlScope(): CrawlScope {
    return this.policy.crawlScope;
  }

  /** Candidates that stay here: queued if new, durable when this resolves (with `sync`, fsynced). */
  submit(cands: Candidate[], sync = false): Promise<void> {
    return this.drum.submit(cands, sync);
  }

  /** Due URLs back into the frontier: no seen-set check (they are known), one batch with the recrawl index ops. */
  async enqueueRevisits(items: NewUrl[], ops: BatchOp[]): Promise<void> {
    await this.drum.exclusive(async () => {
      await this.c.store.db.batch([...this.c.frontier.enqueueOps(items), ...ops]);
      this.c.frontier.committed(items);
    });
  }

  /** Normalises and filters a discovered URL; null if it is turned away (counted). */
  candidate(raw: string, base: string | undefined, depth: number, kind: UrlKind = 'page', sitemapPriority?: number): Candidate | null {
    const normal = normalizeUrl(raw, base);
    if (!normal) { bump(this.c.stats.rejected, 'invalid-url'); return null; }
    const url = this.scope.rewrite(normal);
    const host = hostOf(url);
    // Scope rejections are counted by the policy itself (summary: rejectedByScope).
    if (this.scope.checkStatic(url, host)) return null;
    // The block list, for every URL whatever agent it came through (docs/scope.md "Block list").
    if (this.policy.blocked(url, host)) { this.c.stats.reject(BLOCKED_BY_POLICY); return null; }
    const hk = hostKey(host);
    return { host, hostKey: hk, url, depth, hops: 0, kind, key: seenKey(hk, url), priority: priorityClass({ depth, sitemapPriority }) };
  }

  /**
   * The crawl scope (src/scope/crawl-scope.ts, docs/scope.md) of a URL found on `from` (a page, a sitemap, a
   * redirecting URL): the host must be in scope (a seed's unit, an allowed host, or `from`'s unit); a page must
   * pass the URL filters and the depth limit. Refusals are counted by reason.
   */
  follows(c: Candidate | null, from: string): c is Candidate {
    if (!c) return false;
    const fromHost = hostOf(from);
    const refusal = c.kind === 'sitemap'
      ? (this.crawlScope.hostInScope(c.host, fromHost) ? null : 'out-of-scope')
      : this.crawlScope.check(c.url, c.host, c.depth, fromHost);
    return refusal === null || this.refuse(refusal);
  }

  /** A seed (or a seed's redirect): always in scope, and its unit is from now on (docs/scope.md). */
  asSeed(c: Candidate): Candidate {
    this.policy.addSeed(c.host);
    return c;
  }

  /**
   * A URL another agent sent. The sender checked its host against the scope with the page it was found on, which
   * only the sender knows; here a seed (depth 0) widens the scope, and a page passes the URL filters and depth limit.
   */
  followsFromPeer(c: Candidate): boolean {
    if (c.kind === 'sitemap') return true;
    if (c.depth === 0) { this.asSeed(c); return true; }
    const refusal = this.crawlScope.filter(c.url, c.depth);
    return refusal === null || this.refuse(refusal);
  }

  private refuse(reason: string): false {
    this.c.stats.reject(reason);
    return false;
  }
}

/** Without a policy document (a component test): the options' scope, no block list. */
function optionsPolicy(crawlScope: CrawlScope): AdmissionPolicy {
  return { crawlScope, addSeed: (host) => { crawlScope.addSeed(host); }, blocked: () => false };
}
