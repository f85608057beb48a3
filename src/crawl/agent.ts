// One crawling agent: its lifecycle and the scheduling loop. The pipeline is in
// components that receive their collaborators in one `components` object
// (docs/architecture.md has the map):
//
//   candidates ─► router ─► admission (scope, seen-set) ─► frontier (disk) ─► host turn (robots, DNS, politeness, fetch)
//        ▲                                                                                    │
//        └──── completion (links durable, then the URL settled) ◄── page processing (WARC, parse, dedup) ◄──┘
//
// Write ordering (why a SIGKILL loses nothing, see docs/storage.md):
//   1. a URL's seen entry and its frontier entry are written in one batch;
//   2. after a fetch, the WARC records are written, then the page's links go
//      through (1) and are durable, and only then is the URL's frontier entry
//      deleted (in the same batch that marks it fetched).
// A kill at any point re-queues at most the URLs that were in flight.
import { openStore, type Store } from '../store/db.js';
import { limitHeapGrowth } from '../util/memory.js';
import { resolveConfig, type AgentConfig, type AgentOptions } from '../config.js';
import { Frontier } from '../frontier/frontier.js';
import { Fetcher } from '../fetch/fetcher.js';
import { parseCidr } from '../fetch/address.js';
import { productToken } from '../robots/index.js';
import { CrawlScope } from '../scope/crawl-scope.js';
import { createMetrics } from '../api/metrics.js';
import { ThroughputHistory, RecentErrors } from '../api/history.js';
import type { ApiServer } from '../api/server.js';
import { preflight, StartupError } from './preflight.js';
import type { AgentState, MemberReport, SeedResult, ZoneReport } from '../api/backend.js';
import { AgentBackend, type AgentView } from './backend.js';
import { VERSION } from '../version.js';
import { shortPeerId } from '../mesh/index.js';
import { LinkGraphRecorder } from '../graph/recorder.js';
import { bump } from './stats.js';
import { HostTurn } from './host-turn.js';
import { PolitenessControl } from '../politeness/control.js';
import { CrawlStats } from './stats.js';
import type { CrawlSummary } from './summary.js';
import { ContentDedup } from '../dedup/content.js';
import { Fingerprinter } from '../dedup/fingerprinter.js';
import type { HelperThread } from '../util/helper-thread.js';
import { createLogger, silentLogger, type Logger } from '../util/log.js';
import { Recrawler } from '../recrawl/recrawler.js';
import { Admission } from './admission.js';
import { Promotions } from './promotions.js';
import { Archive } from './archive.js';
import type { Router } from './router.js';
import type { HostData } from './candidate.js';
import { buildPipeline } from './pipeline.js';
import type { RenderStep } from './render-step.js';
import { readBlocklistFile, type PolicyGate } from './policy-gate.js';
import type { HostStates } from './host-state.js';
import type { DeferredReport, DeferredWork } from './deferred.js';
import { RunEnding } from './ending.js';
import { hostWithoutPort, unbracketHost } from '../url/host.js';
import { seed, seedUrls, type SeedingComponents } from './seeding.js';
import { endSummary, scrapeGauges, snapshotOf, type AgentSnapshot } from './agent-report.js';

/** How often a lone agent looks whether its run is over (--until-idle). */
const IDLE_CHECK_MS = 50;
/** The same timer in a mesh, where it decides nothing and only holds the process open. */
const IDLE_CHECK_SHARED_MS = 1000;

export type { Candidate, HostData, RecentFetch } from './candidate.js';
export type { AgentSnapshot } from './agent-report.js';

export interface AgentHandle {
  readonly config: AgentConfig;
  /** Where the HTTP API listens, when it was asked for. */
  readonly apiUrl: string | undefined;
  readonly stats: CrawlStats;
  /** The end summary, once the agent stopped (src/crawl/summary.ts). */
  readonly done: Promise<CrawlSummary>;
  seed(urls: string[]): Promise<number>;
  snapshot(): AgentSnapshot;
  /** Graceful leave: hand hosts over to the mesh, then stop. */
  leave(): Promise<void>;
  /** Stop now (queued work stays on disk for the next start). */
  stop(): Promise<CrawlSummary>;
  /** Hosts in backoff or awaiting a robots.txt retry, with their next attempt (src/crawl/deferred.ts). */
  waitingFor(): DeferredReport;
}

export async function startAgent(options: AgentOptions & { logger?: Logger } = {}): Promise<AgentHandle> {
  const config = resolveConfig(options);
  for (const a of config.allowAddress) parseCidr(a); // a bad range is a usage error, found before anything opens
  new CrawlScope(config.crawlScope); // so is a bad scope or pattern
  if (config.blocklistFile) {
    try { readBlocklistFile(config.blocklistFile); } catch (err) { throw new StartupError((err as Error).message); } // and a bad block list line
  }
  const logger = options.logger ?? (config.logLevel === 'silent' ? silentLogger : createLogger(config.logLevel));
  // Every startup error is found before anything starts (src/crawl/preflight.ts).
  const { api } = await preflight(config, logger);
  limitHeapGrowth(config.heapGrowthPercent);
  let store: Store;
  try {
    store = await openStore(config.dataDir);
  } catch (err) {
    await api?.close();
    throw new StartupError((err as Error).message);
  }
  const agent = new Agent(config, store, logger, api);
  try {
    await agent.start();
  } catch (err) {
    await agent.abandonStart();
    throw err;
  }
  return agent;
}

class Agent implements AgentHandle, AgentView {
  readonly metrics = createMetrics();
  /** The crawl's counters; those the metrics endpoint shows too are passed on to it (src/crawl/stats.ts). */
  readonly stats = new CrawlStats(this.metrics);
  readonly history = new ThroughputHistory();
  readonly recentErrors = new RecentErrors();
  readonly done: Promise<CrawlSummary>;
  private resolveDone!: (s: CrawlSummary) => void;
  private readonly token: string;
  private api: ApiServer | undefined;
  private sampler: NodeJS.Timeout | undefined;
  private lifecycle: AgentState = 'starting';
  private readonly fetcher: Fetcher;
  readonly politeness: PolitenessControl;
  readonly frontier: Frontier<HostData>;
  /** Where a URL goes: alone every host is ours, in a mesh the ring decides (src/crawl/router.ts). */
  private readonly router: Router;
  /** The crawl policy in force, shared with the mesh (src/crawl/policy-gate.ts). */
  readonly policy: PolicyGate;
  /** Candidate → normalise → scope → seen-set (src/crawl/admission.ts). */
  private readonly admission: Admission;
  private readonly promotions: Promotions;
  /** Each host's turn: robots, DNS, politeness, one request (src/crawl/host-turn.ts). */
  private readonly turns: HostTurn;
  /** Hosts' politeness state and operator overrides, kept in the store (src/crawl/host-state.ts). */
  readonly hostStates: HostStates;
  /** The WARC files (src/crawl/archive.ts). */
  private readonly archive: Archive;
  /** Computes the SimHash of pages off the event loop (near-dup on), or undefined. */
  private readonly fingerprinter: Fingerprinter | undefined;
  /** The worker thread the WARC encoder and the fingerprints share (src/util/helper-thread.ts). */
  private readonly helperThread: HelperThread;
  /** Content dedup (exact: revisit records; near: noted), or undefined when off. */
  private readonly dedup: ContentDedup | undefined;
  /** `--recrawl`: revisit scheduling (src/recrawl/); undefined for a one-pass crawl. */
  private readonly recrawl: Recrawler | undefined;
  /** The render tier (src/crawl/render-step.ts, docs/render.md); idle unless --render or --render-host. */
  readonly render: RenderStep;
  /** Host turns in progress (each holds one fetch slot). */
  private inFlight = 0;
  /** Fetched pages still being written, parsed and acknowledged (host already released). */
  private processing = 0;
  private readonly maxProcessing: number;
  private running = false;
  private stopping: Promise<CrawlSummary> | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;
  private idleTimer: NodeJS.Timeout | undefined;
  private durationTimer: NodeJS.Timeout | undefined;
  private shortId = '';
  /** Outlinks of every page: WARC metadata records and the edge file (src/graph/recorder.ts). */
  private linkGraph: LinkGraphRecorder | undefined;
  private pumpScheduled = false;
  private fatal: Error | undefined;
  /** Deferred work: what the crawl waits for, and the `--until-idle` rule around it (src/crawl/deferred.ts). */
  private readonly deferred: DeferredWork;
  /** Why a run that fetched nothing failed (src/crawl/ending.ts). */
  private readonly ending: RunEnding;
  /** The operator's seeds: candidates, internal addresses, routing (src/crawl/seeding.ts). */
  private readonly seeding: SeedingComponents;

  constructor(readonly config: AgentConfig, readonly store: Store, private readonly log: Logger, api?: ApiServer) {
    this.api = api;
    this.done = new Promise((r) => { this.resolveDone = r; });
    this.token = productToken(config.userAgent);
    this.maxProcessing = config.concurrency * 4;
    const p = buildPipeline({
      config, store, log, stats: this.stats, metrics: this.metrics, recentErrors: this.recentErrors, token: this.token,
      schedulePump: () => this.schedulePump(),
      onFatal: (err) => this.onFatal(err),
      fatal: () => this.fatal,
      stopping: () => this.stopping !== undefined,
      running: () => this.running,
      lifecycle: () => this.lifecycle,
      localIdle: () => this.localIdle(),
      working: () => this.inFlight > 0 || this.processing > 0,
      onIdle: () => { if (config.untilIdle) void this.stop(); },
      background: (job, fatal) => {
        this.processing++;
        job().catch((err: Error) => { if (fatal) this.onFatal(err); }).finally(() => { this.processing--; this.schedulePump(); });
      },
      linkGraph: () => this.linkGraph,
      // URLs held here (a restart's kept queue, all of it deferred, e.g. behind an operator's pause) are a crawl begun too.
      began: () => this.ending.began || this.stats.fetched > 0 || this.stats.robotsFetches > 0 || this.frontier.queued > 0,
    });
    ({ fetcher: this.fetcher, politeness: this.politeness, dedup: this.dedup, fingerprinter: this.fingerprinter, helperThread: this.helperThread, frontier: this.frontier, policy: this.policy, admission: this.admission,
      promotions: this.promotions, recrawl: this.recrawl, router: this.router, archive: this.archive,
      turns: this.turns, hostStates: this.hostStates, deferred: this.deferred } = p);
    this.render = p.render;
    this.ending = new RunEnding({
      frontier: this.frontier, owns: (host) => this.router.owns(host), ownerOf: (host) => this.ownerOf(host),
      dnsFailure: (host) => this.fetcher.resolver.failure(unbracketHost(hostWithoutPort(host))),
    });
    this.seeding = { admission: this.admission, turns: this.turns, router: this.router, log, ownerOf: (host) => this.ownerOf(host), policy: this.policy, ending: this.ending };
  }

  async start(): Promise<void> {
    await this.hostStates.load(); // before the frontier sees a host
    await this.frontier.recover();
    // The digest filter fills in the background; lookups go to the store until it is ready.
    this.dedup?.load().then(({ otherAlgorithm }) => {
      if (otherAlgorithm) this.log.warn({ digests: otherAlgorithm, now: this.config.warc.digest }, 'payload digests of the other --warc-digest in this data dir: their payloads are archived once more, then deduplicated again (docs/warc.md "Digests")');
    }, (err: Error) => this.log.warn({ err: err.message }, 'dedup filter not loaded: every payload is looked up'));
    await this.policy.load();
    await this.router.start();
    await this.policy.started();
    this.shortId = shortPeerId(this.router.id);
    await this.archive.open(this.shortId);
    await this.render.open();
    if (this.config.linkGraph.enabled) this.linkGraph = await this.openLinkGraph();
    this.running = true;
    this.lifecycle = 'active';
    this.metrics.setAgentInfo(this.shortId, VERSION);
    this.metrics.beforeScrape(() => scrapeGauges(this.metrics, this.config, this.frontier, this.inFlight, this.router));
    this.sampler = setInterval(() => this.history.sample(Date.now(), this.stats.fetched), 1000);
    this.sampler.unref();
    if (this.api) {
      // Bound before anything started (src/crawl/preflight.ts); it answers from now on.
      this.api.attach(new AgentBackend(this));
      this.log.info({ api: this.api.url }, 'API listening');
    }
    this.log.info({ dataDir: this.config.dataDir, queued: this.frontier.queued, hosts: this.frontier.knownHosts, agent: this.shortId }, 'agent started');
    await this.seed(this.config.seeds);
    this.schedulePump();
    this.armIdleCheck();
    this.recrawl?.start();
    if (this.config.maxDurationMs > 0) this.durationTimer = setTimeout(() => void this.stop(), this.config.maxDurationMs);
  }

  /** Adds crawl seeds; returns how many were accepted for queuing (before the seen check). */
  seed(urls: string[]): Promise<number> { return seed(this.seeding, urls); }

  // ---- AgentView (what the API sees) ------------------------------------

  get id(): string { return this.shortId; }
  get robotsToken(): string { return this.token; }
  get minDelayMs(): number { return this.config.minDelayMs; }
  get capacity(): number { return this.config.mesh.capacity; }
  get apiUrl(): string | undefined { return this.api?.url; }
  state(): AgentState { return this.lifecycle; }
  inFlightCount(): number { return this.inFlight; }
  crawlId(): string | null { return this.router.crawlId; }
  ownerOf(host: string): string { return shortPeerId(this.router.ownerOf(host)); }
  urlsSent(): number { return this.router.sent(); }
  urlsReceived(): number { return this.router.received(); }

  members(): MemberReport[] {
    return this.router.members({
      id: this.shortId, self: true, addrs: [], state: this.lifecycle === 'leaving' ? 'leaving' : 'active', capacity: this.capacity, share: 1,
      counters: { fetched: this.stats.fetched, queued: this.frontier.queued, sent: 0, received: 0 }, lastSeen: Date.now(),
    });
  }

  zones(): ZoneReport[] { return this.router.zones?.() ?? []; }

  seedUrls(urls: string[]): Promise<SeedResult> { return seedUrls(this.seeding, urls); }

  /**
   * Graceful leave: the router hands every host over (in a mesh: queued URLs and seen entries to their new
   * owners, acknowledged; docs/mesh.md "Graceful leave"), then the agent stops. Alone, it just stops: the
   * queue stays on disk for the next start.
   */
  async leave(): Promise<void> {
    if (this.lifecycle !== 'active') { void this.stop(); return; }
    this.lifecycle = 'leaving';
    await this.router.leave();
    void this.stop();
  }

  private localIdle(): boolean {
    // With --until-idle, deferred work not due within --idle-grace does not hold the run open (docs/politeness.md "Ending a run").
    const frontierIdle = this.frontier.idle || (this.config.untilIdle && this.deferred.onlyDeferred(Date.now()));
    return this.inFlight === 0 && this.processing === 0 && !this.admission.drum.busy && frontierIdle && !this.router.busy
      && (!this.recrawl || this.recrawl.idle(Date.now()));
  }

  snapshot(): AgentSnapshot { return snapshotOf(this.stats, this.frontier, this.inFlight); }

  waitingFor(): DeferredReport { return this.deferred.report(Date.now()); }

  stop(): Promise<CrawlSummary> {
    if (!this.stopping) this.stopping = this.shutdown();
    return this.stopping;
  }

  // ---- scheduling -------------------------------------------------------

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => { this.pumpScheduled = false; this.pump(); });
  }

  private pump(): void {
    if (!this.running) return;
    const limitReached = this.config.maxPages > 0 && this.stats.fetched + this.inFlight >= this.config.maxPages;
    const now = Date.now();
    // Backpressure: fetch slots, and a bound on pages waiting to be processed.
    while (!limitReached && this.inFlight < this.config.concurrency && this.processing < this.maxProcessing) {
      if (this.config.maxPages > 0 && this.stats.fetched + this.inFlight >= this.config.maxPages) break;
      const h = this.frontier.nextReady(now);
      if (!h) break;
      this.inFlight++;
      this.turns.turn(h).catch((err: Error) => this.onFatal(err)).finally(() => {
        this.inFlight--;
        this.schedulePump();
      });
    }
    const wake = this.frontier.nextWake();
    if (wake !== undefined && wake > now && wake < this.wakeAt) {
      if (this.wakeTimer) clearTimeout(this.wakeTimer);
      this.wakeAt = wake;
      this.wakeTimer = setTimeout(() => { this.wakeAt = Infinity; this.wakeTimer = undefined; this.pump(); }, wake - now);
    }
    if (limitReached && this.inFlight === 0 && this.processing === 0) void this.stop();
  }

  // ---- lifecycle -------------------------------------------------------

  private armIdleCheck(): void {
    // In a mesh the end is the mesh's idle detection (src/crawl/mesh.ts), never this check (idleWith is false):
    // the timer only keeps the process alive there, and 20 wake-ups a second of an idle member's event loop
    // bought nothing (docs/performance.md "Mesh CPU").
    const everyMs = this.router.shared ? IDLE_CHECK_SHARED_MS : IDLE_CHECK_MS;
    this.idleTimer = setInterval(() => {
      if (!this.running || !this.config.untilIdle) return;
      if (this.router.idleWith(this.localIdle())) void this.stop();
    }, everyMs);
    // Deliberately not unref'd: a running agent keeps its process alive until `done`
    // (some of its awaits, e.g. on the WARC worker thread, hold no handle of their own).
  }

  /**
   * The first failed write (or other fatal error) stops the agent: no new fetch starts, nothing
   * more is acknowledged, queued work stays on disk for the next start (docs/storage.md "Write failures").
   */
  private onFatal(err: Error): void {
    if (this.fatal) return;
    this.fatal = /ENOSPC|no space left/i.test(err.message) && !err.message.startsWith('disk full') ? new Error(`disk full: ${err.message}`) : err;
    this.log.error({ err: this.fatal.message }, 'agent failed: stopping (queued work is kept for the next start)');
    void this.stop();
  }

  private async shutdown(): Promise<CrawlSummary> {
    this.running = false;
    this.lifecycle = 'leaving';
    if (this.sampler) clearInterval(this.sampler);
    this.router.quiesce();
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    if (this.durationTimer) clearTimeout(this.durationTimer);
    await this.recrawl?.stop().catch((err: Error) => this.log.error({ err: err.message }, 'recrawl stop failed'));
    // Let in-flight turns finish (each is bounded by the fetch timeouts).
    const deadline = Date.now() + this.config.fetch.totalTimeoutMs + 5000;
    while ((this.inFlight > 0 || this.processing > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const drum = this.admission.drum;
    await drum.flush().catch((err: Error) => this.log.error({ err: err.message }, 'seen flush failed'));
    await this.promotions.running; // stops after its current batch (errors were reported where they happened)
    await this.render.stop(); // its records go to the WARC writer: before it closes
    await this.linkGraph?.close(); // its metadata records go to the WARC writer: before it closes
    await this.archive.close();
    await this.fingerprinter?.close();
    await this.helperThread.close();
    await this.fetcher.close();
    const summary = endSummary({
      config: this.config, stats: this.stats, frontier: this.frontier, admission: this.admission, politeness: this.politeness, fetcher: this.fetcher,
      archive: this.archive, router: this.router, recrawl: this.recrawl, render: this.render, deferred: this.deferred, ending: this.ending,
      agent: this.shortId, fatal: this.fatal, members: this.members(),
    });
    await this.api?.close().catch(() => {});
    this.policy.stop();
    await this.router.stop();
    this.lifecycle = 'stopped';
    await this.router.saved();
    await this.hostStates.flushed(); // a lone agent's too (the mesh router also waits for it)
    await this.policy.flushed();
    await this.store.close().catch(() => {});
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.log.info({ pages: this.stats.fetched }, 'agent stopped');
    this.resolveDone(summary);
    return summary;
  }

  /** Undoes a start() that threw: nothing was crawled, so nothing is flushed, only closed. */
  async abandonStart(): Promise<void> {
    this.running = false;
    this.router.quiesce();
    if (this.sampler) clearInterval(this.sampler);
    await this.api?.close().catch(() => {});
    this.policy.stop();
    await this.router.stop().catch(() => {});
    await this.policy.flushed().catch(() => {});
    await this.linkGraph?.close().catch(() => {});
    await this.archive.abandon();
    await this.fingerprinter?.close().catch(() => {});
    await this.helperThread.close().catch(() => {});
    await this.fetcher.close().catch(() => {});
    await this.store.close().catch(() => {});
  }

  private openLinkGraph(): Promise<LinkGraphRecorder> {
    const archive = this.archive;
    return LinkGraphRecorder.open({
      dataDir: this.config.dataDir, agentShortId: this.shortId, rewrite: (u) => this.admission.scope.rewriteQuiet(u),
      writeMetadata: archive.enabled ? (url, date, fields, concurrentTo, protocols) => archive.writeMetadata(url, date, fields, concurrentTo, protocols) : undefined,
      onError: (err) => { bump(this.stats.errors, 'link-graph'); this.log.error({ err: err.message }, 'link graph write failed'); },
    });
  }
}
