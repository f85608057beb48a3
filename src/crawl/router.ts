// Routing: where a candidate goes, and whose hosts are ours. One interface, two
// implementations: alone (src/crawl/router.ts `StandaloneRouter`: every host is
// ours) and in a mesh (src/crawl/mesh-router.ts `MeshRouter`: hosts by the
// consistent-hash ring, foreign URLs forwarded to their owners, docs/mesh.md).
// The pipeline (admission, host turn, page processing, completion) asks the
// router and never which of the two it has.
import { randomBytes } from 'node:crypto';
import type { BatchOp, Store } from '../store/db.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { MemberReport, ZoneReport } from '../api/backend.js';
import type { Admission } from './admission.js';
import type { Sitemaps } from './sitemaps.js';
import type { Candidate } from './candidate.js';
import type { RoutingFacts } from './summary.js';
import type { ReplicaOps } from './frontier-replica.js';
import type { QueuedFor } from '../mesh/index.js';

/** Replica seen entries queued with a completion (docs/mesh.md "Crashes"): for whom, how many items each. */
export type Replica = QueuedFor[];

export interface Router {
  /** Our id: the libp2p PeerId in a mesh, the data dir's agent id alone (its last 12 characters name us in logs and WARC files). */
  readonly id: string;
  /** URLs queued here may have been settled by another agent meanwhile: the host turn checks the seen-set first. */
  readonly shared: boolean;
  /** A handoff pass is queued (the agent is not idle). */
  readonly busy: boolean;
  /** Which crawl this is, when other agents share it. */
  readonly crawlId: string | null;
  /** Starts routing (a mesh joins here). */
  start(): Promise<void>;
  owns(host: string): boolean;
  /** The host's owner (our id for ours). */
  ownerOf(host: string): string;
  /** Sends each URL to the agent that owns its host (ourselves included); durable when this resolves, with `sync` fsynced too. */
  route(cands: Candidate[], sync?: boolean): Promise<void>;
  /** Appends to `ops` the replica seen entry of a settled URL for the host's next owners; what was queued, if anything. */
  replicate(host: string, url: string, ops: BatchOp[]): Replica | undefined;
  /** The completion holding the replica is durable. */
  replicated(r: Replica): void;
  /** The replicas of newly queued URLs for their hosts' successors, for the seen-set round's batch (docs/mesh.md "Replicated frontier"); none alone. */
  replicateQueued(items: Candidate[]): ReplicaOps | undefined;
  /** 0, or when the host may be contacted (a previous owner's handoff is not complete yet: src/crawl/handoff.ts). */
  notBefore(host: string, now: number): number;
  /** A host we hold but no longer own: hand it on. */
  handOn(): void;
  /** When a host new to us may first be contacted (its previous owner may have just done so). */
  initialNextAllowed(now: number): number;
  /** URLs sent to other agents, and items taken from them. */
  sent(): number;
  received(): number;
  /** The members of the crawl; `self` is our own report when we are alone. */
  members(self: MemberReport): MemberReport[];
  /** Per-zone view (docs/mesh.md "Zones"); none when alone. */
  zones?(): ZoneReport[];
  /** Whether the crawl is idle now, given that this agent is (`--until-idle`); a mesh decides on its own and calls `onIdle`. */
  idleWith(localIdle: boolean): boolean;
  /** Hands every host over and waits for the acknowledgements (bounded); false when there is nobody to hand to. */
  leave(): Promise<void>;
  /** Gauges for a metrics scrape. */
  scrape(metrics: AgentMetrics): void;
  /** The routing part of the end summary. */
  summary(): RoutingFacts;
  /** No new handoff pass starts (timers stopped). */
  quiesce(): void;
  /** Leaves the mesh's network; then `saved()` resolves once routing state is in the store. */
  stop(): Promise<void>;
  saved(): Promise<void>;
}

/** Queues candidates here: their sitemap grants first, then the seen-set round (src/crawl/admission.ts). */
export async function queueHere(admission: Pick<Admission, 'submit'>, sitemaps: Pick<Sitemaps, 'keepGrants'>, cands: Candidate[], sync: boolean): Promise<void> {
  await sitemaps.keepGrants(cands);
  await admission.submit(cands, sync);
}

export interface StandaloneComponents {
  store: Pick<Store, 'meta'>;
  admission: Pick<Admission, 'submit'>;
  sitemaps: Pick<Sitemaps, 'keepGrants'>;
}

/** Alone: every host is ours, every URL is queued here. */
export class StandaloneRouter implements Router {
  readonly shared = false;
  readonly busy = false;
  readonly crawlId = null;
  private agentId = '';

  constructor(private readonly c: StandaloneComponents) {}

  get id(): string { return this.agentId; }

  /** Our id, stable per data dir (a mesh uses its PeerId instead). */
  async start(): Promise<void> {
    const k = Buffer.from('agent-id');
    let id = await this.c.store.meta.get(k);
    if (!id) {
      id = Buffer.from(randomBytes(6).toString('hex'));
      await this.c.store.meta.put(k, id);
    }
    this.agentId = id.toString('utf8');
  }

  owns(_host: string): boolean { return true; }
  ownerOf(_host: string): string { return this.agentId; }
  async route(cands: Candidate[], sync = false): Promise<void> {
    if (cands.length === 0) return;
    await queueHere(this.c.admission, this.c.sitemaps, cands, sync);
  }
  replicate(_host: string, _url: string, _ops: BatchOp[]): Replica | undefined { return undefined; }
  replicated(): void {}
  replicateQueued(): ReplicaOps | undefined { return undefined; }
  notBefore(): number { return 0; }
  handOn(): void {}
  initialNextAllowed(): number { return 0; }
  sent(): number { return 0; }
  received(): number { return 0; }
  members(self: MemberReport): MemberReport[] { return [self]; }
  idleWith(localIdle: boolean): boolean { return localIdle; }
  async leave(): Promise<void> {}
  scrape(metrics: AgentMetrics): void { metrics.setMembers({ active: 1 }); }
  summary(): RoutingFacts { return {}; }
  quiesce(): void {}
  async stop(): Promise<void> {}
  saved(): Promise<void> { return Promise.resolve(); }
}
