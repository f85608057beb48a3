// What ownership (src/crawl/ownership.ts) and its peer intake
// (src/crawl/intake.ts) are given: their `components` object, and the narrow
// views of the candidate, the host data and the mesh they use, so that both
// can be built and tested with fakes (docs/architecture.md "Components of the agent").
import type { Store } from '../store/db.js';
import type { SyncBarrier } from '../store/sync-barrier.js';
import type { AgentConfig } from '../config.js';
import type { Drum } from '../seen/drum.js';
import type { Frontier, HostState, UrlKind } from '../frontier/frontier.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { AgentState } from '../api/backend.js';
import type { AgentMesh } from './mesh.js';
import type { HandoffGate } from './handoff.js';
import type { OwnerRing } from '../assign/zones.js';
import type { HeldUrl, ReplicaOps } from './frontier-replica.js';
import type { HandedHostItem } from './host-handoff.js';
import type { UrlItem, MemberInfo, Outbox, UrlExchange } from '../mesh/index.js';
import type { Logger } from '../util/log.js';

/** What ownership reads and sets on a candidate the agent built from a peer's URL. */
export interface PeerCandidate {
  kind?: UrlKind;
  hops: number;
  /** Found as a link on a page: counts as an in-link (src/frontier/inlinks.ts). */
  inlink?: boolean;
  /** A sitemap's cross-submit grant (src/sitemap/grants.ts). */
  grant?: string;
  /** Where it came from (logged at debug when queued). */
  via?: string;
}

/** The per-host data ownership reads (the agent's HostData has more). */
export interface OwnedHostData {
  /** URLs taken from the frontier and not yet acknowledged (a handoff waits for them). */
  pendingAcks: number;
  /** Another agent told us it settled some of this host's URLs: check the seen-set before fetching. */
  checkSeen: boolean;
}

/** The parts of the agent's mesh (src/crawl/mesh.ts) ownership uses. */
export interface OwnershipMesh {
  readonly id: string;
  ownerOf(host: string): string;
  members(): MemberInfo[];
  forward(owner: string, items: UrlItem[], handoff?: boolean): Promise<number>;
  readonly stats: AgentMesh['stats'];
  readonly membership: {
    readonly ring: OwnerRing;
    readonly stats: { rejected: Record<string, number> };
    member(id: string): MemberInfo | undefined;
    isVouched(id: string): boolean;
    isExcluded(id: string): boolean;
    /** Silent past the dead rule, within the takeover grace (docs/mesh.md "Suspicion before takeover"). */
    isSuspect?(id: string): boolean;
    vouch(id: string): void;
    on(event: 'heartbeat', listener: (m: MemberInfo) => void): unknown;
  };
  readonly outbox: Pick<Outbox, 'forgetRecent' | 'queued' | 'isPaused' | 'reassign' | 'peers'> & Partial<Pick<Outbox, 'takeAcked'>>;
  readonly replicas: Pick<Outbox, 'queued' | 'isPaused' | 'reassign' | 'peers'>;
  readonly exchange: Pick<UrlExchange, 'inboxPeers' | 'stats'>;
}

export interface OwnershipComponents<C extends PeerCandidate & { key: Buffer }, D extends OwnedHostData> {
  config: AgentConfig;
  store: Store;
  frontier: Frontier<D>;
  drum: Pick<Drum<C>, 'exclusive' | 'noteStored' | 'forgetCached'>;
  /** A synced write: what a peer's batch stored is durable before the batch is acknowledged (docs/storage.md "Durability window"). */
  barrier: Pick<SyncBarrier, 'sync'>;
  /** Hosts we own but may not contact until their previous owners said "handoff complete" (src/crawl/handoff.ts). */
  gate: HandoffGate;
  log: Logger;
  metrics: Pick<AgentMetrics, 'meshRefused' | 'urlsReceived' | 'setMembers' | 'retainPeers'>;
  /** A peer's URL admitted as a crawl candidate (normalised, scope-checked), or null. */
  candidate(url: string, depth: number, kind: UrlKind): C | null;
  /** Whether the crawl follows a peer's candidate (URL filters, depth; a seed widens the scope: docs/scope.md). */
  followsFromPeer(c: C): boolean;
  /** Sends candidates to their owners (ourselves included); with `sync`, durable against a power loss. */
  route(cands: C[], sync: boolean): Promise<void>;
  /** Queued sitemaps leaving with their host take their grants along. */
  attachGrants(items: UrlItem[]): Promise<void>;
  /** Wakes the scheduling loop (a marker may have opened a gate). */
  schedulePump(): void;
  lifecycle(): AgentState;
  /** Queued URLs held for their owners (src/crawl/frontier-replica.ts): peer intake stores and trims them. */
  standby?: {
    hold(urls: HeldUrl[]): Promise<void>;
    trimFrom?(from: string, keys: readonly Buffer[]): Promise<void>;
    /** Replica seen entries for our successors of the handed-over seen entries of hosts we own, written in the batch that stores them. */
    seenOps?(urls: readonly string[]): ReplicaOps | undefined;
    /** Hosts became ours without a ring change of their own: their successors are caught up. */
    requestPass?(): void;
    readonly replicas: number;
  };
  /** A host's state and recrawl entries from its previous owner (src/crawl/host-handoff.ts), stored before the batch is acknowledged. */
  hostItems?(items: HandedHostItem[]): Promise<void>;
  /** What goes to a host's new owner before its URLs (its state, its recrawl entries), and the host left us. */
  handOffItems?(h: HostState<D>): Promise<UrlItem[]>;
  handedOff?(host: string): void;
  /** Replica seen entries of these hosts were stored (a leaver passes them on: src/crawl/pass-held.ts). */
  replicaTaken?(hosts: Iterable<string>): void;
  /** Who a host goes to, when not the mesh's owner by our ring (a leaver whose ring is empty: src/crawl/leave-receivers.ts). */
  ownerOf?(host: string): string;
}
