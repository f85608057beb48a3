// What the agent reports about itself: the progress snapshot (the CLI's
// progress line, `AgentHandle.snapshot`), the gauges refreshed before a
// metrics scrape, and the end summary assembled from its components when it
// stops (src/crawl/summary.ts). Reads only; the agent (src/crawl/agent.ts)
// hands it the components.
import type { AgentConfig } from '../config.js';
import type { Frontier } from '../frontier/frontier.js';
import type { Fetcher } from '../fetch/fetcher.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { MemberReport } from '../api/backend.js';
import type { PolitenessControl } from '../politeness/control.js';
import type { Recrawler } from '../recrawl/recrawler.js';
import type { CrawlStats } from './stats.js';
import type { CrawlSummary } from './summary.js';
import type { HostData } from './candidate.js';
import type { Admission } from './admission.js';
import type { Archive } from './archive.js';
import type { Router } from './router.js';
import type { RenderStep } from './render-step.js';
import type { DeferredWork } from './deferred.js';
import type { RunEnding } from './ending.js';

export interface AgentSnapshot {
  fetched: number;
  queued: number;
  inFlight: number;
  hosts: number;
  activeHosts: number;
  errors: number;
  pagesPerSecond: number;
}

export function snapshotOf(stats: CrawlStats, frontier: Frontier<HostData>, inFlight: number): AgentSnapshot {
  const secs = (Date.now() - stats.startedAt) / 1000;
  let errors = 0;
  for (const v of Object.values(stats.errors)) errors += v;
  return {
    fetched: stats.fetched,
    queued: frontier.queued,
    inFlight,
    hosts: frontier.knownHosts,
    activeHosts: frontier.activeHosts,
    errors,
    pagesPerSecond: secs > 0 ? stats.fetched / secs : 0,
  };
}

/** Gauges set before each metrics scrape. */
export function scrapeGauges(metrics: AgentMetrics, config: AgentConfig, frontier: Frontier<HostData>, inFlight: number, router: Router): void {
  metrics.setFrontier(frontier.queued, frontier.knownHosts, frontier.activeHosts);
  metrics.setInFlight(inFlight);
  // Oldest robots.txt copy in use: its age is the TTL minus what is left of it.
  let oldestExpiry = Infinity;
  for (const h of frontier.allHosts()) for (const e of h.data.robots.values()) if (e.verdict === 'parsed' || e.verdict === 'unavailable') oldestExpiry = Math.min(oldestExpiry, e.expires);
  if (oldestExpiry !== Infinity) metrics.setRobotsCacheAge(Math.max(0, (config.robots.cacheTtlMs - (oldestExpiry - Date.now())) / 1000));
  router.scrape(metrics);
}

/** The parts of a stopping agent the end summary reads. */
export interface SummaryParts {
  config: AgentConfig;
  stats: CrawlStats;
  frontier: Frontier<HostData>;
  admission: Admission;
  politeness: PolitenessControl;
  fetcher: Fetcher;
  archive: Archive;
  router: Router;
  recrawl: Recrawler | undefined;
  render: RenderStep;
  deferred: DeferredWork;
  ending: RunEnding;
  agent: string;
  fatal: Error | undefined;
  /** The crawl's members (ours first), for the whole crawl's page count. */
  members: MemberReport[];
}

export function endSummary(p: SummaryParts): CrawlSummary {
  const { frontier, admission, fetcher } = p;
  return p.stats.summary({
    queued: frontier.queued,
    hosts: frontier.knownHosts,
    rejectedByScope: admission.scope.counts(),
    scope: { mode: admission.crawlScope.mode, seedUnits: admission.crawlScope.seedUnits().length },
    seen: { ...admission.drum.stats },
    politeness: p.politeness.summary([...frontier.allHosts()].map((h) => ({ name: h.name, state: h.data.polite })), Date.now()),
    dns: { ...fetcher.resolver.stats },
    dataDir: p.config.dataDir,
    warcDir: p.archive.dir,
    agent: p.agent,
    ...p.router.summary(),
    ...(fetcher.requestSummary() ? { requests: fetcher.requestSummary() } : {}),
    ...(p.recrawl ? { recrawl: p.recrawl.summary() } : {}),
    ...(p.render.configured ? { render: p.render.summary() } : {}),
    ...(p.fatal ? { failure: p.fatal.message } : {}),
    ...endFacts(p),
  });
}

/** Deferred work kept for the next run, and why nothing was fetched when nothing was (src/crawl/deferred.ts, src/crawl/ending.ts). */
function endFacts(p: SummaryParts): Pick<CrawlSummary, 'deferred' | 'nothingFetched'> {
  const deferred = p.deferred.report(Date.now());
  // The whole crawl's pages: ours, and each other member's as its last heartbeat said.
  let crawlPages = p.stats.fetched;
  for (const m of p.members) if (!m.self) crawlPages += m.counters.fetched;
  const nothingFetched = p.fatal ? undefined : p.ending.nothingFetched(crawlPages);
  return { ...(deferred.urls > 0 ? { deferred } : {}), ...(nothingFetched ? { nothingFetched } : {}) };
}
