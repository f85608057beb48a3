// The end summary of a run (printed by `ubicrawl join` on stdout, returned by
// `AgentHandle.done`): what a person or a test wants to know afterwards. The
// crawl's own counters come from src/crawl/stats.ts; the rest is filled in by
// the agent from its components when it stops.
import type { Counts } from './stats.js';
import type { PolitenessCounts } from '../politeness/control.js';
import type { RenderSummary } from './render-step.js';
import type { DeferredReport } from './deferred.js';
import type { NothingFetched } from './ending.js';

/** Mesh admission figures (src/crawl/ownership.ts `meshSummary`, docs/mesh.md "Admission"). */
export type MeshSummary = Record<string, unknown>;

/** The counters of the crawl itself (src/crawl/stats.ts `CrawlStats.summary`). */
export type CrawlCounts = {
  pages: number;
  pagesByStatusClass: Counts;
  pagesByStatus: Counts;
  bytes: number;
  durationMs: number;
  pagesPerSecond: number;
  robotsBlocked: number;
  robotsFetches: number;
  errors: Counts;
  /** URLs turned away before fetching, by reason (robots, scope, traps, invalid). */
  rejected: Counts;
  /** Responses fetched but not stored, by reason. */
  skipped: Counts;
  /** `--media`: media responses by kind, and `truncated` at their cap. */
  media: Counts;
  truncated: number;
  redirects: number;
  linksExtracted: number;
  sitemaps: { discovered: number; fetched: number; urls: number; rejected: number; truncated: number; invalid: number; tooDeep: number };
  directives: { noindex: number; nofollowPages: number; canonicals: number; metaRefreshes: number };
  urlsDiscovered: number;
  inlinks: { crossings: number; promoted: number; skipped: number };
  dedup: { digests: number; digestReads: number; exact: number; fingerprinted: number; near: number };
};

/** What the agent adds when it stops. */
export type RunFacts = {
  queued: number;
  hosts: number;
  /** Trap-policy refusals by reason (src/scope/traps.ts). */
  rejectedByScope: Record<string, number>;
  scope: { mode: string; seedUnits: number };
  /** Seen-set figures (src/seen/drum.ts). */
  seen: Record<string, number>;
  /** Politeness counters (src/politeness/control.ts), failures by reason, parked hosts. */
  politeness: Partial<PolitenessCounts> & { failures?: unknown; parked?: unknown } & Record<string, unknown>;
  dns: Record<string, number>;
  dataDir: string;
  warcDir: string | undefined;
  /** The agent's short id (names its WARC files). */
  agent: string;
  /** In a mesh: our PeerId, URLs sent to and items taken from other agents, admission figures. */
  peerId?: string;
  forwarded?: number;
  received?: number;
  mesh?: MeshSummary;
  /** Operator header fields, proxies and cookies, when any is set (docs/requests.md). */
  requests?: Record<string, unknown>;
  /** `--recrawl` figures (src/recrawl/recrawler.ts). */
  recrawl?: Record<string, unknown>;
  /** The render tier (src/crawl/render-step.ts), when --render or --render-host turned it on. */
  render?: RenderSummary;
  /** Why the agent stopped early (a failed write, a full disk). */
  failure?: string;
  /** Work kept queued for the next run: hosts in backoff or awaiting a robots.txt retry (src/crawl/deferred.ts). */
  deferred?: DeferredReport;
  /** The whole crawl fetched no page: why its hosts failed (src/crawl/ending.ts). */
  nothingFetched?: NothingFetched;
};

/** The routing part of the summary (src/crawl/router.ts). */
export type RoutingFacts = Pick<RunFacts, 'peerId' | 'forwarded' | 'received' | 'mesh'>;

export type CrawlSummary = CrawlCounts & RunFacts;
