// One crawling agent: wires the pipeline of docs/architecture.md together.
//
//   candidates ─► scope/traps ─► seen-set (DRUM) ─► frontier (disk) ─► robots ─► fetch
//        ▲                                                                         │
//        └──── normalise ◄── extract links ◄── WARC ◄──────────────────────────────┘
//
// Write ordering (why a SIGKILL loses nothing, see docs/storage.md):
//   1. a URL's seen entry and its frontier entry are written in one batch;
//   2. after a fetch, the WARC records are written, then the page's links go
//      through (1) and are durable, and only then is the URL's frontier entry
//      deleted (in the same batch that marks it fetched).
// A kill at any point re-queues at most the URLs that were in flight.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openStore, type BatchOp, type Store } from '../store/db.js';
import { GroupCommit } from '../store/group-commit.js';
import { SyncBarrier } from '../store/sync-barrier.js';
import { limitHeapGrowth } from '../util/memory.js';
import { hostKey, seenKey, HOST_KEY_BYTES } from '../store/keys.js';
import { resolveConfig, type AgentConfig, type AgentOptions } from '../config.js';
import { Drum } from '../seen/drum.js';
import { REJECTED_VALUE, queuedAt, queuedValue, settledValue, type SettledState } from '../seen/state.js';
import { Frontier, type FrontierMove, type HostState, type NewUrl, type QueuedUrl } from '../frontier/frontier.js';
import { Fetcher, archivedBody, type FetchOutcome, type FetchResponse } from '../fetch/fetcher.js';
import { HostResolver } from '../fetch/dns.js';
import { requestOptions } from '../fetch/requests.js';
import { AddressPolicy, parseCidr, type BlockedAddress } from '../fetch/address.js';
import { RobotsCache, type RobotsEntry } from '../robots/cache.js';
import { productToken } from '../robots/index.js';
import { normalizeUrl, hostOf } from '../url/normalize.js';
import { extractPage } from '../parse/html.js';
import { ScopePolicy } from '../scope/traps.js';
import { CrawlScope, typeAccepted } from '../scope/crawl-scope.js';
import { WarcWriter, type WriteResult } from '../warc/writer.js';
import { LinkGraphRecorder, captureRef } from '../graph/recorder.js';
import { encodeFetchRecord, type FetchRecord } from './records.js';
import { createMetrics } from '../api/metrics.js';
import { ThroughputHistory, RecentErrors } from '../api/history.js';
import type { ApiServer } from '../api/server.js';
import { preflight, StartupError } from './preflight.js';
import type { AgentState, MemberReport, SeedResult } from '../api/backend.js';
import { AgentBackend, type AgentView } from './backend.js';
import { SOFTWARE, VERSION } from '../version.js';
import { AgentMesh } from './mesh.js';
import { HandoffGate } from './handoff.js';
import { Ownership } from './ownership.js';
import { HostTurn, BLOCKED, noteRecent } from './host-turn.js';
import { classifyItem, encodeItem, shortPeerId, type UrlItem } from '../mesh/index.js';
import { parseSitemap } from '../sitemap/parse.js';
import { robotsGrantPrefix } from '../sitemap/scope.js';
import { sitemapDepthOk } from '../sitemap/limits.js';
import { SitemapGrants } from '../sitemap/grants.js';
import type { UrlKind } from '../frontier/frontier.js';
import { decodeEntry } from '../frontier/frontier.js';
import { priorityClass, inlinkBonus, MAX_PRIORITY } from '../frontier/priority.js';
import { InlinkCounter } from '../frontier/inlinks.js';
import { indexWarcFile } from '../warc/cdxj.js';
import { newHostPoliteness, politenessConfig, type HostPoliteness } from '../politeness/host.js';
import { PolitenessControl } from '../politeness/control.js';
import { SideClocks } from '../politeness/side-clocks.js';
import { CrawlStats, bump } from './stats.js';
import { ContentDedup, revisitFor, nearDupFields, type ExactCheck } from '../dedup/content.js';
import { warcinfoFields } from '../warc/warcinfo.js';
import { Fingerprinter } from '../dedup/fingerprinter.js';
import type { FingerprintJob } from '../dedup/simhash.js';
import { createLogger, silentLogger, type Logger } from '../util/log.js';
import { Recrawler, payloadDigestBytes, type RecrawlOutcome, type RevisitUrl } from '../recrawl/recrawler.js';
import { serverNotModifiedRevisit } from '../warc/notmodified.js';

export interface HostData {
  robots: Map<string, RobotsEntry>;
  /** Adaptive politeness (src/politeness/host.ts): the one source of the host's delays, backoff, pauses and parking. */
  polite: HostPoliteness;
  /** DNS prefetch for this host is not asked again before this epoch ms. */
  dnsCheckAt: number;
  /** Responses received from this host. */
  pages: number;
  /** Fetches started for this host's URLs, retries not counted: what a page budget counts (exact, as the host is held while it fetches). */
  budgetUsed: number;
  errors: Record<string, number>;
  /** The last few fetches, newest last (for the API's host view). */
  recent: RecentFetch[];
  /** Operator overrides (PUT /hosts/:host/policy); null = the crawl's default. */
  policy: { minDelayMs: number | null; pageBudget: number | null };
  /** URLs taken from the frontier and not yet acknowledged (a handoff waits for them). */
  pendingAcks: number;
  /** Another agent told us it settled some of this host's URLs: check the seen-set before fetching. */
  checkSeen: boolean;
  /** robots.txt fetches in a row that found it unreachable (5xx, 429, network): its URLs wait while this is within the retry limit. */
  robotsFailures: number;
  /** A robots.txt exchange under way: the redirect hop its next turn requests (RFC 9309 §2.3.1.2). */
  robotsHop?: { origin: string; target: string; hop: number };
}

export interface RecentFetch { url: string; status: number | null; at: number; durationMs: number | null; error: string | null }


function newHostData(): HostData {
  return {
    robots: new Map(), polite: newHostPoliteness(), dnsCheckAt: 0, pages: 0, budgetUsed: 0, errors: {}, recent: [],
    policy: { minDelayMs: null, pageBudget: null }, pendingAcks: 0, checkSeen: false, robotsFailures: 0,
  };
}

/** A URL on its way into the frontier. */
interface Candidate extends NewUrl {
  key: Buffer;
  /** Found as a link on a page (or a redirect's target): counts as an in-link (src/frontier/inlinks.ts). */
  inlink?: boolean;
  /** A sitemap's cross-submit grant (sitemap/grants.ts), travelling with it to its owner. */
  grant?: string;
}

/** Pause between two handoff rounds of a leave while URLs are still queued here. */
const LEAVE_ROUND_MS = 50;

/** Promotions looked up per store round trip. */
const PROMOTION_BATCH = 512;

export interface AgentHandle {
  readonly config: AgentConfig;
  /** Where the HTTP API listens, when it was asked for. */
  readonly apiUrl: string | undefined;
  readonly stats: CrawlStats;
  readonly done: Promise<Record<string, unknown>>;
  seed(urls: string[]): Promise<number>;
  snapshot(): AgentSnapshot;
  /** Graceful leave: hand hosts over to the mesh, then stop. */
  leave(): Promise<void>;
  /** Stop now (queued work stays on disk for the next start). */
  stop(): Promise<Record<string, unknown>>;
}

export interface AgentSnapshot {
  fetched: number;
  queued: number;
  inFlight: number;
  hosts: number;
  activeHosts: number;
  errors: number;
  pagesPerSecond: number;
}

export async function startAgent(options: AgentOptions & { logger?: Logger } = {}): Promise<AgentHandle> {
  const config = resolveConfig(options);
  for (const a of config.allowAddress) parseCidr(a); // a bad range is a usage error, found before anything opens
  new CrawlScope(config.crawlScope); // so is a bad scope or pattern
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
  readonly stats = new CrawlStats();
  readonly metrics = createMetrics();
  readonly history = new ThroughputHistory();
  readonly recentErrors = new RecentErrors();
  readonly done: Promise<Record<string, unknown>>;
  private resolveDone!: (s: Record<string, unknown>) => void;
  private readonly token: string;
  private api: ApiServer | undefined;
  private sampler: NodeJS.Timeout | undefined;
  private lifecycle: AgentState = 'starting';
  private mesh: AgentMesh | undefined;
  private forwarded = 0;
  /** Ring changes, handoffs, peer intake and markers (src/crawl/ownership.ts); in a mesh only. */
  private ownership: Ownership<Candidate, HostData> | undefined;
  /**
   * Sitemap URL → origins whose robots.txt named it (their URLs may be listed in it): kept in LevelDB, and sent
   * along with the sitemap URL to the agent that fetches it (src/sitemap/grants.ts).
   */
  private readonly sitemapGrants: SitemapGrants;
  private readonly fetcher: Fetcher;
  readonly politeness: PolitenessControl;
  /** Each host's turn: robots, DNS, politeness, one request (src/crawl/host-turn.ts). */
  private readonly turns: HostTurn;
  private readonly drum: Drum<Candidate>;
  /** Finished pages' writes, grouped into shared batches (src/store/group-commit.ts). */
  private readonly commits: GroupCommit;
  /** A synced write: what a peer's batch stored is durable before the batch is acknowledged (docs/storage.md "Durability window"). */
  private readonly barrier: SyncBarrier;
  readonly frontier: Frontier<HostData>;
  private readonly scope: ScopePolicy;
  /** What the crawl follows (--scope, --allow-host, --include/--exclude, --max-depth; docs/scope.md). */
  private readonly crawlScope: CrawlScope;
  /** Candidates of the DRUM round in progress that passed the scope budgets. */
  private readonly admitted = new Set<Candidate>();
  /** Recent in-link counts per URL (src/frontier/inlinks.ts). */
  private readonly inlinks = new InlinkCounter();
  /** Queued URLs whose in-link count crossed a priority threshold, waiting to be moved up. */
  private promotions: Candidate[] = [];
  private promoting: Promise<void> | undefined;
  /** CDXJ indexing of closed WARC files still running. */
  private readonly pendingIndexes = new Set<Promise<void>>();
  private warc: WarcWriter | undefined;
  /** Outlinks of every page: WARC metadata records and the edge file (src/graph/recorder.ts). */
  private linkGraph: LinkGraphRecorder | undefined;
  /** Computes the SimHash of pages off the event loop (near-dup on), or undefined. */
  private readonly fingerprinter: Fingerprinter | undefined;
  /** Content dedup (exact: revisit records; near: noted), or undefined when off. */
  private readonly dedup: ContentDedup | undefined;
  /** Host turns in progress (each holds one fetch slot). */
  private inFlight = 0;
  /** Fetched pages still being written, parsed and acknowledged (host already released). */
  private processing = 0;
  private readonly maxProcessing: number;
  private running = false;
  private stopping: Promise<Record<string, unknown>> | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;
  private idleTimer: NodeJS.Timeout | undefined;
  private shortId = '';
  private pumpScheduled = false;
  private fatal: Error | undefined;
  /** `--recrawl`: revisit scheduling (src/recrawl/); undefined for a one-pass crawl. */
  private readonly recrawl: Recrawler | undefined;
  private durationTimer: NodeJS.Timeout | undefined;

  constructor(readonly config: AgentConfig, readonly store: Store, private readonly log: Logger, api?: ApiServer) {
    this.api = api;
    this.done = new Promise((r) => { this.resolveDone = r; });
    this.token = productToken(config.userAgent);
    this.maxProcessing = config.concurrency * 4;
    this.fetcher = new Fetcher(config.fetch, config.userAgent, new HostResolver(config.resolve, config.dns), {
      addresses: new AddressPolicy(config.allowAddress), ...requestOptions(config.requests),
    });
    this.politeness = new PolitenessControl(politenessConfig(config));
    this.scope = new ScopePolicy(config.scope);
    this.crawlScope = new CrawlScope(config.crawlScope);
    this.sitemapGrants = new SitemapGrants(store.meta);
    this.dedup = config.dedup.enabled ? new ContentDedup(store.digests, store.simhash, { ...config.dedup, digest: config.warc.digest }, this.stats.dedup) : undefined;
    // SimHash on its own thread (src/dedup/fingerprinter.ts); the parser hands the text over as pieces.
    this.fingerprinter = this.dedup?.wantsText ? new Fingerprinter() : undefined;
    this.frontier = new Frontier<HostData>(store.frontier, store.hosts, store.meta, {
      maxActiveHosts: Math.max(1, config.concurrency * config.frontier.activeHostsPerSlot),
      headSize: config.frontier.headSize,
      createData: newHostData,
      // In a mesh a host new to us may have just been contacted by its previous
      // owner: wait for the politeness floor (the handoff gate does the rest).
      initialNextAllowed: () => (this.mesh ? Date.now() + this.config.minDelayMs : 0),
    });
    this.frontier.onReady = (h) => { this.turns.prefetchDns(h); this.schedulePump(); };
    this.frontier.onLoadError = (host, err) => this.onFatal(new Error(`frontier read for ${host} failed: ${err.message}`));
    this.commits = new GroupCommit(store.db);
    this.barrier = new SyncBarrier(store.meta);
    this.drum = new Drum<Candidate>(store.db, store.seen, {
      batchSize: config.seen.batchSize,
      maxWaitMs: config.seen.maxWaitMs,
      valueOf: (it) => (this.admitted.has(it) ? queuedValue(it.frontierKey) : REJECTED_VALUE),
      // Budgets are charged only for URLs the seen-set says are new (repeat links must not use them up).
      onNew: (items) => {
        const admitted = items.filter((it) => this.scope.admit(it.url, it.host) === null);
        for (const it of admitted) this.admitted.add(it);
        return this.frontier.enqueueOps(admitted);
      },
      afterCommit: (items) => {
        const admitted = items.filter((it) => this.admitted.delete(it));
        this.stats.urlsDiscovered += admitted.length;
        this.frontier.committed(admitted);
        for (const it of items) if (it.inlink) this.inlinks.add(it.key);
      },
      onOld: (items) => this.countInlinks(items),
      syncBarrier: () => this.barrier.sync(),
    });
    if (config.recrawl.enabled) {
      this.recrawl = new Recrawler(store, config.recrawl, {
        enqueue: (items, ops) => this.enqueueRevisits(items, ops),
        queued: () => this.frontier.queued,
        owns: (host) => !this.mesh || this.mesh.ownerOf(host) === this.mesh.id,
        onError: (err) => this.onFatal(new Error(`recrawl scheduling failed: ${err.message}`)),
      });
    }
    this.turns = new HostTurn({
      store, frontier: this.frontier, fetcher: this.fetcher, robots: new RobotsCache(store.robots, this.fetcher, config.robots), politeness: this.politeness,
      sideClocks: new SideClocks(), recrawl: this.recrawl, stats: this.stats, metrics: this.metrics, recentErrors: this.recentErrors, log, token: this.token, maxPagesPerHost: config.crawlScope.maxPagesPerHost,
      inMesh: () => this.mesh !== undefined,
      owns: (host) => !this.mesh || this.mesh.ownerOf(host) === this.mesh.id,
      handOn: () => this.ownership?.scheduleRebalance(),
      notBefore: (host, now) => (this.ownership ? this.ownership.notBefore(host, now) : 0),
      running: () => this.running,
      settle: (q, h, record) => this.finish(q, h, [], record),
      writeWarc: (out) => this.writeWarc(out),
      process: (q, h, out, failure) => this.process(q, h, out, failure),
      background: (job, fatal) => {
        this.processing++;
        job().catch((err: Error) => { if (fatal) this.onFatal(err); }).finally(() => { this.processing--; this.schedulePump(); });
      },
      discoverSitemaps: (origin, entry) => this.discoverSitemaps(origin, entry),
    });
  }

  /** Due URLs back into the frontier: no seen-set check (they are known), one batch with the recrawl index ops. */
  private async enqueueRevisits(items: RevisitUrl[], ops: BatchOp[]): Promise<void> {
    await this.drum.exclusive(async () => {
      await this.store.db.batch([...this.frontier.enqueueOps(items), ...ops]);
      this.frontier.committed(items);
    });
  }

  async start(): Promise<void> {
    await this.frontier.recover();
    // The digest filter fills in the background; lookups go to the store until it is ready.
    this.dedup?.load().then(({ otherAlgorithm }) => {
      if (otherAlgorithm) this.log.warn({ digests: otherAlgorithm, now: this.config.warc.digest }, 'payload digests of the other --warc-digest in this data dir: their payloads are archived once more, then deduplicated again (docs/warc.md "Digests")');
    }, (err: Error) => this.log.warn({ err: err.message }, 'dedup filter not loaded: every payload is looked up'));
    if (this.config.mesh.enabled) {
      const hb = this.config.mesh.heartbeatMs;
      const gate = new HandoffGate('', {
        // Fallback for a live peer whose marker does not come: its handoff first waits for its in-flight fetches.
        timeoutMs: this.config.fetch.totalTimeoutMs + 20 * hb,
        floorMs: this.config.minDelayMs,
        // Members known when we start, whose markers we wait for before crawling (docs/mesh.md "Admission"):
        // waits that give up on one that never speaks add up to silentAfterMs, then it is not waited for.
        newcomerCooldownMs: 40 * hb,
        silentAfterMs: this.config.fetch.totalTimeoutMs + 20 * hb,
      });
      const ownership = this.ownership = new Ownership<Candidate, HostData>({
        config: this.config, store: this.store, frontier: this.frontier, drum: this.drum, barrier: this.barrier, gate, log: this.log, metrics: this.metrics,
        candidate: (url, depth, kind) => this.candidate(url, undefined, depth, kind),
        followsFromPeer: (c) => this.followsFromPeer(c),
        route: (cands, sync) => this.route(cands, sync),
        attachGrants: (items) => this.attachGrants(items),
        schedulePump: () => this.schedulePump(),
        lifecycle: () => this.lifecycle,
      });
      await ownership.restoreRings();
      this.mesh = await AgentMesh.start(this.config.mesh, this.config.dataDir, this.store, {
        // A store that fails to take a peer's batch stops the agent as any failed write does (no ack is sent).
        accept: (items, from) => ownership.acceptFromPeer(items, from).catch((err: unknown) => {
          if (!this.stopping && isStoreFailure(err)) this.onFatal(new Error(`store write failed: ${errorText(err)}`));
          throw err;
        }),
        onChange: (c) => ownership.onMembershipChange(c),
        counters: () => ({ fetched: this.stats.fetched, queued: this.frontier.queued }),
        localIdle: () => this.localIdle(),
        created: (m) => ownership.attach(m),
      }, this.log);
      this.mesh.on('idle', () => { if (this.config.untilIdle) void this.stop(); });
      this.mesh.on('forget', (peer) => this.metrics.removePeer(shortPeerId(peer)));
      this.mesh.exchange.on('rejected', (reason) => this.metrics.meshRefused(reason));
      await ownership.start(this.mesh);
    }
    this.shortId = this.mesh ? shortPeerId(this.mesh.id) : await this.agentShortId();
    if (this.config.warc.enabled) {
      this.warc = await WarcWriter.open({
        dir: join(this.config.dataDir, 'warc'),
        prefix: this.config.warc.prefix,
        agentShortId: this.shortId,
        maxFileBytes: this.config.warc.maxFileBytes,
        // Each finished (or recovered) WARC gets its CDXJ index next to it.
        onFileClosed: (path: string, lines?: string[]) => this.indexLater(path, lines),
        collectCdxj: true,
        fsyncIntervalMs: this.config.warc.fsyncIntervalMs,
        // A file whose index write failed (disk full) is indexed at the next start.
        indexMissing: true,
        digest: this.config.warc.digest,
        warcinfo: warcinfoFields({
          software: SOFTWARE, userAgent: this.config.userAgent, operator: this.config.warc.operator,
          crawlId: this.config.mesh.crawlId, description: this.config.warc.description, digest: this.config.warc.digest,
          exactDedup: this.config.dedup.enabled, nearDedup: this.config.dedup.near, maxDistance: this.config.dedup.maxDistance,
          recrawl: this.config.recrawl.enabled,
        }),
      });
    }
    if (this.config.linkGraph.enabled) this.linkGraph = await this.openLinkGraph();
    this.running = true;
    this.lifecycle = 'active';
    this.metrics.setAgentInfo(this.shortId, VERSION);
    this.metrics.beforeScrape(() => {
      this.metrics.setFrontier(this.frontier.queued, this.frontier.knownHosts, this.frontier.activeHosts);
      this.metrics.setInFlight(this.inFlight);
      // Oldest robots.txt copy in use: its age is the TTL minus what is left of it.
      let oldestExpiry = Infinity;
      for (const h of this.frontier.allHosts()) for (const e of h.data.robots.values()) if (e.verdict === 'parsed' || e.verdict === 'unavailable') oldestExpiry = Math.min(oldestExpiry, e.expires);
      if (oldestExpiry !== Infinity) this.metrics.setRobotsCacheAge(Math.max(0, (this.config.robots.cacheTtlMs - (oldestExpiry - Date.now())) / 1000));
      if (this.mesh) {
        const members = this.mesh.members();
        this.metrics.setMembers({
          active: members.filter((m) => m.state === 'active' && this.mesh!.membership.isVouched(m.id)).length,
          joining: members.filter((m) => m.state === 'active' && !this.mesh!.membership.isVouched(m.id)).length,
          leaving: members.filter((m) => m.state === 'leaving').length,
        });
        this.metrics.retainPeers(members.filter((m) => !m.self).map((m) => shortPeerId(m.id)));
        for (const m of members) if (!m.self) this.metrics.setOutboxDepth(shortPeerId(m.id), this.mesh.outbox.queued(m.id));
        this.metrics.heartbeatsRefusedTotals(this.mesh.membership.refusals());
      } else {
        this.metrics.setMembers({ active: 1 });
      }
    });
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
  async seed(urls: string[]): Promise<number> {
    const cands: Candidate[] = [];
    for (const u of urls) {
      const c = this.candidate(u, undefined, 0);
      if (!c) continue;
      this.crawlScope.addSeed(c.host);
      // Queued all the same: the crawl records it as blocked-address without a request.
      const blocked = this.blockedTarget(c.url);
      if (blocked) this.log.warn({ url: c.url, reason: blocked.reason }, 'seed is an internal address: not fetched (--allow-address opens a range)');
      cands.push(c);
    }
    await this.route(cands);
    return cands.length;
  }

  // ---- AgentView (what the API sees) ------------------------------------

  get id(): string { return this.shortId; }
  get robotsToken(): string { return this.token; }
  get minDelayMs(): number { return this.config.minDelayMs; }
  get capacity(): number { return this.config.mesh.capacity; }
  get apiUrl(): string | undefined { return this.api?.url; }
  state(): AgentState { return this.lifecycle; }
  inFlightCount(): number { return this.inFlight; }
  crawlId(): string | null { return this.mesh ? this.config.mesh.crawlId : null; }
  ownerOf(host: string): string { return this.mesh ? shortPeerId(this.mesh.ownerOf(host)) : this.shortId; }
  urlsSent(): number { return this.forwarded + (this.ownership?.handedOver ?? 0); }
  urlsReceived(): number { return this.ownership?.received ?? 0; }

  members(): MemberReport[] {
    const mesh = this.mesh;
    if (mesh) {
      const shares = mesh.membership.ring.shares();
      return mesh.members().map((m) => ({
        id: shortPeerId(m.id), self: m.self, addrs: m.addrs, state: m.state === 'active' && !mesh.membership.isVouched(m.id) ? 'joining' : m.state, capacity: m.capacity, share: shares.get(m.id) ?? 0,
        counters: { ...m.counters }, lastSeen: m.lastHeard,
      }));
    }
    return [{
      id: this.shortId, self: true, addrs: [], state: this.lifecycle === 'leaving' ? 'leaving' : 'active', capacity: this.capacity, share: 1,
      counters: { fetched: this.stats.fetched, queued: this.frontier.queued, sent: 0, received: 0 }, lastSeen: Date.now(),
    }];
  }

  async seedUrls(urls: string[]): Promise<SeedResult> {
    const rejected: SeedResult['rejected'] = [];
    const cands: Candidate[] = [];
    for (const u of urls) {
      const c = this.candidate(u, undefined, 0);
      const blocked = c && this.blockedTarget(c.url);
      if (blocked) rejected.push({ url: u, reason: BLOCKED, detail: `${blocked.reason}; --allow-address opens a range` });
      else if (c) { this.crawlScope.addSeed(c.host); cands.push(c); }
      else rejected.push({ url: u, reason: normalizeUrl(u) ? 'out of scope' : 'not a crawlable http(s) URL' });
    }
    const routed: Record<string, number> = {};
    for (const c of cands) { const o = this.ownerOf(c.host); routed[o] = (routed[o] ?? 0) + 1; }
    await this.route(cands);
    return { accepted: cands.length, rejected, routed };
  }

  /**
   * Graceful leave: announce it, hand every host (queued URLs and seen
   * entries) to its new owner, wait until the peers acknowledged all of it,
   * then stop. Without a mesh, or with no other member to hand to, just stop:
   * the queue stays on disk for the next start. The whole leave is bounded by
   * mesh.leaveTimeoutMs and waits on timers and I/O only, so the API and a
   * second signal are answered meanwhile (docs/mesh.md, "Graceful leave").
   */
  async leave(): Promise<void> {
    if (!this.mesh || !this.ownership || this.lifecycle !== 'active') { void this.stop(); return; }
    const mesh = this.mesh;
    const ownership = this.ownership;
    this.lifecycle = 'leaving';
    this.log.info('leaving the mesh: handing hosts over');
    await mesh.leave();
    // Our own ring no longer holds us: with nobody else in it every host maps back to us.
    const nobodyToHandTo = () => mesh.membership.ring.members().length === 0;
    if (nobodyToHandTo()) {
      if (this.frontier.queued > 0) this.log.warn({ queued: this.frontier.queued }, 'no other member to hand hosts to: stopping with the queue kept for the next start');
      void this.stop();
      return;
    }
    const deadline = Date.now() + this.config.mesh.leaveTimeoutMs;
    // Our queue drains only through handoffs now. URLs still in the DRUM buffer, or
    // arriving from peers that have not yet seen us leave, land in our frontier
    // after a handoff: repeat until nothing is left here.
    for (;;) {
      await this.drum.flush();
      ownership.scheduleRebalance();
      await ownership.rebalancing;
      while ((this.inFlight > 0 || this.processing > 0 || ownership.rebalancePending) && Date.now() < deadline) await ownership.rebalancing.then(() => sleep(20));
      if ((this.frontier.queued === 0 && !this.drum.busy) || Date.now() >= deadline || nobodyToHandTo()) break;
      // A real timer between rounds: URLs that cannot move yet must not make this a microtask loop.
      await sleep(LEAVE_ROUND_MS);
    }
    if (this.frontier.queued > 0) this.log.warn({ queued: this.frontier.queued }, 'left with URLs still queued here; they are crawled when this agent returns');
    const acked = await mesh.outbox.waitEmpty({ timeoutMs: Math.max(0, deadline - Date.now()) });
    if (!acked) this.log.warn({ queued: mesh.outbox.totalQueued() }, 'left with URLs not yet acknowledged by their owners; they stay in the outbox for the next start');
    void this.stop();
  }

  // ---- the mesh: routing, receiving, handing over ------------------------

  /**
   * Sends each URL to the agent that owns its host (ourselves included). Resolves once all are
   * durable; with `sync`, durable against a power loss too (fsynced).
   */
  private async route(cands: Candidate[], sync = false): Promise<void> {
    if (cands.length === 0) return;
    const mesh = this.mesh;
    if (!mesh) { await this.keepGrants(cands); await this.drum.submit(cands, sync); return; }
    const local: Candidate[] = [];
    const byOwner = new Map<string, UrlItem[]>();
    const self = mesh.id;
    for (const c of cands) {
      const owner = mesh.ownerOf(c.host);
      // Past the hop limit a URL stays where it is: views disagree only for a moment (docs/mesh.md "In the agent").
      if (owner === self || c.hops >= this.config.mesh.maxHops) { local.push(c); continue; }
      const items = byOwner.get(owner);
      const item = encodeItem({ kind: 'crawl', url: c.url, depth: c.depth, hops: c.hops + 1, sitemap: c.kind === 'sitemap', grant: c.grant });
      if (items) items.push(item); else byOwner.set(owner, [item]);
    }
    await this.keepGrants(local);
    const jobs: Promise<unknown>[] = [this.drum.submit(local, sync)];
    for (const [owner, items] of byOwner) {
      jobs.push(mesh.forward(owner, items).then((n) => { this.forwarded += n; this.metrics.urlsForwarded(shortPeerId(owner), n); }));
    }
    await Promise.all(jobs);
    if (sync && byOwner.size > 0) await this.barrier.sync(); // the outbox writes
  }

  private localIdle(): boolean {
    return this.inFlight === 0 && this.processing === 0 && !this.drum.busy && this.frontier.idle && !this.ownership?.rebalancePending
      && (!this.recrawl || this.recrawl.idle(Date.now()));
  }

  snapshot(): AgentSnapshot {
    const secs = (Date.now() - this.stats.startedAt) / 1000;
    let errors = 0;
    for (const v of Object.values(this.stats.errors)) errors += v;
    return {
      fetched: this.stats.fetched,
      queued: this.frontier.queued,
      inFlight: this.inFlight,
      hosts: this.frontier.knownHosts,
      activeHosts: this.frontier.activeHosts,
      errors,
      pagesPerSecond: secs > 0 ? this.stats.fetched / secs : 0,
    };
  }

  stop(): Promise<Record<string, unknown>> {
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

  // ---- one fetched page -------------------------------------------------

  /** `failure`: set when politeness gave up on the URL (retries used up, permanent failure): it is recorded as failed. */
  private async process(q: QueuedUrl, h: HostState<HostData>, out: FetchOutcome, failure?: string): Promise<void> {
    const at = out.startedAt.getTime();
    if (!out.ok) {
      await this.turns.recordFailure(q, h, out, failure);
      return;
    }
    h.data.pages++;
    noteRecent(h, { url: q.url, status: out.status, at, durationMs: out.durationMs, error: null });
    this.metrics.pageFetched(out.status, out.rawBytes, out.durationMs);
    if (out.truncated) { this.stats.truncated++; bump(this.stats.errors, `truncated-${out.truncated}`); }
    if (out.contentEncodingError) bump(this.stats.errors, 'content-encoding');
    const record: FetchRecord = { url: q.url, at, status: out.status };
    if (failure) record.failure = failure; // e.g. still 503 after the last retry
    // A 304 to a revisit is stored as a server-not-modified revisit record (WARC/1.1 §6.7.3).
    const earlier = out.status === 304 ? this.recrawl?.earlierCapture(q) : undefined;
    // --accept-type: a successful response of another type is not stored, but still parsed for links (docs/scope.md).
    const skipped = out.status >= 200 && out.status < 300 && !typeAccepted(this.config.crawlScope.acceptTypes, out.header('content-type')) ? 'type-not-accepted' : undefined;
    if (skipped) { record.skipped = skipped; bump(this.stats.skipped, skipped); this.metrics.responseSkipped(skipped); }
    // Content dedup (src/dedup/content.ts): an exact duplicate is stored as a revisit record and its links are not extracted again.
    const exact = !skipped && !earlier && this.dedup && q.kind === 'page' && this.dedup.applies(out.status, out.body, out.truncated) ? await this.dedup.checkExact(out.url, out.startedAt, archivedBody(out).body) : undefined;
    let stored: WriteResult | undefined;
    try {
      stored = skipped ? undefined : earlier ? await this.writeNotModified(out, earlier) : exact?.original ? await this.writeRevisit(out, exact, record) : await this.writeWarc(out, exact);
    } catch (err) {
      // Not recorded, so not acknowledged: the URL stays queued for the next run (docs/storage.md "Write failures").
      h.data.pendingAcks--;
      throw err;
    }
    if (stored) { record.digest = stored.payloadDigest; record.warc = { filename: stored.filename, offset: stored.offset, length: stored.length }; }
    let recrawlOutcome: RecrawlOutcome | undefined;
    if (this.recrawl && q.kind === 'page') {
      recrawlOutcome = { at, status: out.status, etag: out.header('etag'), lastModified: out.header('last-modified') };
      if (out.status >= 200 && out.status < 300) recrawlOutcome.digest = payloadDigestBytes(stored?.payloadDigest, out.body);
    }
    const links: Candidate[] = [];
    let near: Promise<void> | undefined;
    if (out.status === 304) {
      // Not modified: nothing new to parse, its links were taken from the capture.
    } else if (out.status >= 300 && out.status < 400) {
      const loc = out.header('location');
      if (loc) {
        if (q.kind === 'page') this.linkGraph?.redirect(q.url, captureRef(out, stored), loc);
        this.stats.redirects++;
        // A sitemap's redirect leads to the sitemap (with its cross-submit grants), queued like any URL: through the
        // frontier, so the target waits for its host's clock.
        const target = this.candidate(loc, q.url, q.depth, q.kind);
        // A seed's redirect is a seed (http://example.org/ → https://www.example.com/): it widens the scope.
        const c = target && q.depth === 0 && q.kind === 'page' ? this.asSeed(target) : this.follows(target, q.url) ? target : null;
        if (c && q.kind === 'sitemap') {
          const grants = await this.sitemapGrants.get(q.url);
          if (grants?.length) { c.grant = grants[0]; for (const g of grants.slice(1)) links.push({ ...c, grant: g }); }
          links.push(c);
        } else if (c) { c.inlink = true; links.push(c); }
      }
    } else if (out.status >= 200 && out.status < 300) {
      if (q.kind === 'sitemap') this.readSitemap(q, out, links, await this.sitemapGrants.get(q.url));
      else if (!exact?.original) {
        const fp = this.extractLinks(q, out, links, record, stored);
        // The SimHash check runs while the links are made durable; the page completes after both.
        if (fp !== undefined && fp !== 0n && exact) { near = this.noteNearDup(out, record, this.fingerprintOf(q, out, fp), stored); near.catch(() => {}); } // failures surface in finish
      }
    }
    if (this.recrawl && q.kind === 'sitemap') await this.recrawl.flushHints();
    // The first capture's digest entry only once its response record is in a WARC file (or WARC is off).
    await this.finish(q, h, links, record, recrawlOutcome, stored || !this.warc ? exact?.ops : undefined, near);
    this.dedup?.committed(exact);
  }

  /** An exact duplicate: a revisit record naming the first capture (WARC/1.1 §6.7.2), counted. */
  private async writeRevisit(out: FetchResponse, exact: ExactCheck, record: FetchRecord): Promise<WriteResult | undefined> {
    const original = exact.original!;
    record.duplicateOf = original.uri;
    record.duplicateKind = 'exact';
    this.metrics.dedupHit('exact');
    const warc = this.warc;
    return warc ? this.warcWrite(1, () => warc.writeRevisit(revisitFor(out, { ...exact, original }))) : undefined;
  }

  /** SimHash of the visible text: a near-duplicate is noted in the fetch record and a WARC metadata record; the fingerprint is indexed before the page completes. */
  private async noteNearDup(out: FetchResponse, record: FetchRecord, fingerprint: Promise<bigint>, stored: WriteResult | undefined): Promise<void> {
    const fp = await fingerprint;
    if (fp === 0n) return; // no word in the text
    const near = await this.dedup!.checkNearFingerprint(out.url, fp);
    if (!near) return;
    record.simhash = near.hex;
    if (near.match) {
      record.duplicateOf = near.match.url;
      record.duplicateKind = 'near';
      record.distance = near.match.distance;
      this.metrics.dedupHit('near');
      const warc = this.warc;
      const fields = nearDupFields({ ...near, match: near.match }, this.dedup!.config.maxDistance);
      if (warc) await this.warcWrite(1, () => warc.writeMetadata(out.url, out.startedAt, fields, stored?.recordId, captureRef(out).protocols));
    }
    await near.indexed;
  }

  /** The page's SimHash: as the parser gave it, or from the fingerprint thread (inline again when that declines). */
  private async fingerprintOf(q: QueuedUrl, out: FetchResponse, fp: bigint | FingerprintJob): Promise<bigint> {
    if (typeof fp === 'bigint') return fp;
    const offloaded = await this.fingerprinter!.fingerprint(fp);
    if (offloaded !== null) return offloaded;
    // simhash64's reference path (rare characters), or the thread is gone: the parser's own fingerprint.
    return this.parsePage(q, out, false).fingerprint ?? 0n;
  }

  /**
   * Sitemaps 0.90 discovery: the `Sitemap:` lines of a freshly fetched
   * robots.txt (RFC 9309 §2.2.4), or the host's /sitemap.xml when it names none.
   */
  private async discoverSitemaps(origin: string, entry: RobotsEntry): Promise<void> {
    if (!this.config.sitemaps.enabled) return;
    const listed = entry.verdict === 'parsed' ? entry.rules.sitemaps : [];
    const urls = listed.length ? listed.slice(0, 50) : [`${origin}/sitemap.xml`];
    const cands: Candidate[] = [];
    const grant = robotsGrantPrefix(`${origin}/robots.txt`);
    for (const u of urls) {
      const c = this.candidate(u, origin + '/', 0, 'sitemap');
      if (!this.follows(c, origin + '/')) continue;
      cands.push(c);
      // Sitemaps 0.90 "cross submits": a sitemap named by host X's robots.txt may list X's URLs.
      if (grant && listed.length) c.grant = grant;
    }
    this.stats.sitemaps.discovered += cands.length;
    await this.route(cands);
  }

  /** A fetched sitemap: its URLs become page candidates, nested sitemaps (bounded depth) sitemap candidates. */
  private readSitemap(q: QueuedUrl, out: FetchResponse, into: Candidate[], grant: string[] | undefined): void {
    const sm = parseSitemap(out.body, q.url, grant ? { allowedPrefixes: grant } : {});
    const st = this.stats.sitemaps;
    st.fetched++;
    st.urls += sm.urls.length;
    st.rejected += sm.rejected.outOfScope + sm.rejected.invalid + sm.rejected.overLimit;
    if (sm.truncated || out.truncated) st.truncated++;
    if (sm.kind === 'invalid') { st.invalid++; this.log.warn({ url: q.url, note: sm.note }, 'invalid sitemap'); return; }
    for (const u of sm.urls) {
      // Sitemaps 0.90 <priority> is kept for scheduling: it nudges the URL's frontier class.
      const c = this.candidate(u.loc, undefined, 1, 'page', u.priority);
      if (!this.follows(c, q.url)) continue;
      into.push(c);
      if (this.recrawl) this.recrawl.noteHint(c.key, u); // lastmod/changefreq/priority seed its first interval
    }
    if (!sitemapDepthOk(q.depth + 1, this.config.sitemaps.maxIndexDepth)) { st.tooDeep += sm.sitemaps.length; return; }
    for (const child of sm.sitemaps) {
      const c = this.candidate(child.loc, undefined, q.depth + 1, 'sitemap');
      if (this.follows(c, q.url)) into.push(c);
    }
  }

  /** Queued sitemaps leaving with their host take their grants along (one item per grant; the receiver's seen-set keeps one). */
  private async attachGrants(items: UrlItem[]): Promise<void> {
    const n = items.length;
    for (let i = 0; i < n; i++) {
      const w = classifyItem(items[i]!);
      if (w.kind !== 'crawl' || !w.sitemap) continue;
      const grants = await this.sitemapGrants.get(w.url);
      if (!grants?.length) continue;
      items[i] = encodeItem({ ...w, grant: grants[0] });
      for (const g of grants.slice(1)) items.push(encodeItem({ ...w, grant: g }));
    }
  }

  /** Grants of the sitemaps about to be queued here are made durable first (a restart must not lose them). */
  private async keepGrants(local: Candidate[]): Promise<void> {
    for (const c of local) if (c.grant !== undefined) await this.sitemapGrants.add(c.url, c.grant);
  }

  /** Why a URL's host is refused, when that is known without a query (src/crawl/host-turn.ts). */
  private blockedTarget(url: string): BlockedAddress | null { return this.turns.blockedTarget(url); }

  /** Links, directives and (dedup on) the SimHash of the visible text, or the job that computes it elsewhere. */
  private parsePage(q: QueuedUrl, out: FetchResponse, fingerprintLater: boolean) {
    return extractPage(out.body, {
      url: q.url,
      contentType: out.header('content-type'),
      xRobotsTag: out.responseHeaders.filter(([k]) => k === 'x-robots-tag').map(([, v]) => v),
      robotsToken: this.token,
      wantFingerprint: this.dedup?.wantsText ?? false,
      fingerprintLater,
    });
  }

  /** Returns the simhash64 of the page's visible text when dedup asked for it, or what the fingerprint thread needs to take it. */
  private extractLinks(q: QueuedUrl, out: FetchResponse, into: Candidate[], record: FetchRecord, stored?: WriteResult): bigint | FingerprintJob | undefined {
    let page;
    try {
      // A job only while the fingerprint thread runs: after it fails, every job would come back for a second parse.
      page = this.parsePage(q, out, this.fingerprinter?.available ?? false);
    } catch (err) {
      bump(this.stats.errors, 'parse');
      this.recentErrors.record('parse', (err as Error).message, q.url, hostOf(q.url));
      this.log.warn({ url: q.url, err: (err as Error).message }, 'page could not be parsed');
      return;
    }
    // noindex (meta robots, meta <token>, X-Robots-Tag): fetched and stored, but flagged.
    if (page.directives.noindex) { this.stats.noindex++; record.noindex = true; }
    if (!page.isHtml) return;
    this.linkGraph?.page(q.url, captureRef(out, stored), page.links);
    if (page.nofollowLinks) bump(this.stats.rejected, 'rel-nofollow', page.nofollowLinks);
    if (page.directives.nofollow) { this.stats.nofollowPages++; return page.fingerprintJob ?? page.fingerprint; }
    if (page.canonical) this.stats.canonicals++;
    if (page.metaRefresh) this.stats.metaRefreshes++;
    this.stats.linksExtracted += page.links.length;
    let links = page.links;
    if (links.length > this.scope.maxLinksPerPage) {
      this.scope.noteLinkCap(links.length - this.scope.maxLinksPerPage);
      links = links.slice(0, this.scope.maxLinksPerPage);
    }
    for (const link of links) {
      const c = this.candidate(link.url, undefined, q.depth + 1);
      if (this.follows(c, q.url)) { c.inlink = true; into.push(c); }
    }
    return page.fingerprintJob ?? page.fingerprint;
  }

  /** Normalises and filters a discovered URL; null if it is turned away (counted). */
  private candidate(raw: string, base: string | undefined, depth: number, kind: UrlKind = 'page', sitemapPriority?: number): Candidate | null {
    const normal = normalizeUrl(raw, base);
    if (!normal) { bump(this.stats.rejected, 'invalid-url'); return null; }
    const url = this.scope.rewrite(normal);
    const host = hostOf(url);
    // Scope rejections are counted by the policy itself (summary: rejectedByScope).
    if (this.scope.checkStatic(url, host)) return null;
    const hk = hostKey(host);
    return { host, hostKey: hk, url, depth, hops: 0, kind, key: seenKey(hk, url), priority: priorityClass({ depth, sitemapPriority }) };
  }

  /**
   * The crawl scope (src/scope/crawl-scope.ts, docs/scope.md) of a URL found on `from` (a page, a sitemap, a
   * redirecting URL): the host must be in scope (a seed's unit, an allowed host, or `from`'s unit); a page must
   * pass the URL filters and the depth limit. Refusals are counted by reason.
   */
  private follows(c: Candidate | null, from: string): c is Candidate {
    if (!c) return false;
    const fromHost = hostOf(from);
    const refusal = c.kind === 'sitemap'
      ? (this.crawlScope.hostInScope(c.host, fromHost) ? null : 'out-of-scope')
      : this.crawlScope.check(c.url, c.host, c.depth, fromHost);
    if (refusal === null) return true;
    bump(this.stats.rejected, refusal);
    this.metrics.urlRejected(refusal);
    return false;
  }

  /** A seed (or a seed's redirect): always in scope, and its unit is from now on (docs/scope.md). */
  private asSeed(c: Candidate): Candidate {
    this.crawlScope.addSeed(c.host);
    return c;
  }

  /**
   * A URL another agent sent. The sender checked its host against the scope with the page it was found on, which
   * only the sender knows; here a seed (depth 0) widens the scope, and a page passes the URL filters and depth limit.
   */
  private followsFromPeer(c: Candidate): boolean {
    if (c.kind === 'sitemap') return true;
    if (c.depth === 0) { this.asSeed(c); return true; }
    const refusal = this.crawlScope.filter(c.url, c.depth);
    if (refusal === null) return true;
    bump(this.stats.rejected, refusal);
    this.metrics.urlRejected(refusal);
    return false;
  }

  /**
   * Repeat discoveries from the seen-set: each link adds to its URL's in-link
   * count, and a URL whose count crosses a priority threshold (priority.ts
   * `inlinkBonus`) is queued for promotion, if it is still queued itself.
   */
  private countInlinks(items: Candidate[]): void {
    // Not in a mesh, for now: with promotions on, the join/leave test fetched a page twice on
    // one agent in about 1 run of 8 under load (0 of 10 without them; cause not found yet).
    if (this.mesh) return;
    for (const it of items) {
      if (!it.inlink) continue;
      const after = this.inlinks.add(it.key);
      if (inlinkBonus(after) <= inlinkBonus(this.inlinks.lastBefore)) continue;
      this.stats.inlinks.crossings++;
      // Bounded: past this, crossings are dropped (a hint, not a duty).
      if (this.promotions.length < 65_536) this.promotions.push(it);
      else this.stats.inlinks.skipped++;
    }
    this.startPromotions();
  }

  private startPromotions(): void {
    if (this.promotions.length === 0 || this.promoting || this.stopping) return;
    this.promoting = this.promoteQueued().catch((err: Error) => this.onFatal(new Error(`in-link promotion failed: ${err.message}`))).finally(() => {
      this.promoting = undefined;
      this.startPromotions(); // crossings that arrived as it finished
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
    while (this.promotions.length > 0 && !this.stopping) {
      // One entry per URL, with the thresholds it crossed (a link repeated on 20 pages of one
      // seen-set round crosses 3 and 20 at once): the same entry must not be moved twice.
      const steps = new Map<string, { c: Candidate; steps: number }>();
      for (const c of this.promotions.splice(0, PROMOTION_BATCH)) {
        const k = c.key.toString('latin1');
        const s = steps.get(k);
        if (s) s.steps++; else steps.set(k, { c, steps: 1 });
      }
      const batch = [...steps.values()];
      await this.drum.exclusive(async () => {
        // Pages that complete while we read are refused below: what we read may predate them.
        this.frontier.watchAcks();
        const moves: FrontierMove[] = [];
        const ops: BatchOp[] = [];
        try {
          const values = await this.store.seen.getMany(batch.map((b) => b.c.key));
          const found: { c: Candidate; steps: number; fk: Buffer }[] = [];
          for (let i = 0; i < batch.length; i++) {
            const fk = queuedAt(batch[i]!.c.key, values[i]);
            if (fk) found.push({ ...batch[i]!, fk });
            else this.stats.inlinks.skipped++; // fetched, failed, rejected, or queued before positions were kept
          }
          if (found.length === 0) return;
          const entries = await this.store.frontier.getMany(found.map((f) => f.fk));
          for (let i = 0; i < found.length; i++) {
            const { c, fk } = found[i]!;
            const entry = entries[i] ? decodeEntry(entries[i]!, c.host) : undefined;
            if (!entry || entry.url !== c.url || !this.frontier.host(c.host)) { this.stats.inlinks.skipped++; continue; }
            const move = this.frontier.moveOps(fk, c.host, entry, Math.min(MAX_PRIORITY, MAX_PRIORITY - fk[HOST_KEY_BYTES]! + found[i]!.steps));
            if (!move) { this.stats.inlinks.skipped++; continue; }
            ops.push(...move.ops, { type: 'put', sublevel: this.store.seen, key: c.key, value: queuedValue(move.item.frontierKey) });
            moves.push(move);
          }
        } finally {
          this.frontier.unwatchAcks();
        }
        if (moves.length === 0) return;
        try {
          await this.store.db.batch(ops);
        } catch (err) {
          this.frontier.moved(moves, false);
          throw err;
        }
        this.frontier.moved(moves);
        this.stats.inlinks.promoted += moves.length;
      });
    }
    this.promotions.length = 0;
  }

  /**
   * Completes a URL: its links are made durable first, then its frontier entry
   * is removed, its seen entry marked with the outcome and its fetch record
   * written — in one atomic unit, after the links (the unit may share its
   * LevelDB batch with other pages': src/store/group-commit.ts).
   */
  private async finish(q: QueuedUrl, h: HostState<HostData>, links: Candidate[], record: FetchRecord, recrawl?: RecrawlOutcome, extraOps: BatchOp[] = [], before?: Promise<void>): Promise<void> {
    try {
      await this.route(links);
      if (before) await before; // e.g. the page's SimHash indexed (src/dedup/content.ts), before it is marked fetched
      // After a failed write nothing more is acknowledged (docs/storage.md "Write failures").
      if (this.fatal) throw this.fatal;
      const key = seenKey(h.key, q.url);
      // Failed covers "not fetched" too (robots, budget); the noindex flag rides on the state (src/seen/state.ts).
      const outcome: SettledState = record.failure === 'settled-elsewhere' ? 'settled-elsewhere' : record.failure ? 'failed' : 'fetched';
      const state = settledValue(outcome, record.noindex);
      const ops: BatchOp[] = [
        this.frontier.doneOp(q),
        { type: 'put', sublevel: this.store.seen, key, value: state },
        { type: 'put', sublevel: this.store.fetches, key, value: encodeFetchRecord(record) },
        ...extraOps, // e.g. the payload digest's first capture (src/dedup/content.ts)
      ];
      if (this.recrawl && q.kind === 'page') ops.push(...this.recrawl.outcomeOps(q, key, recrawl ?? { at: record.at, status: 0 }));
      const replica = outcome !== 'settled-elsewhere' ? this.replicateSettled(h.name, q.url, ops) : undefined;
      await this.commits.write(ops);
      this.frontier.acknowledged(1, h, q);
      if (replica) this.mesh?.replicas.written(replica.peer, replica.n);
    } catch (err) {
      this.onFatal(this.fatal && err === this.fatal ? this.fatal : new Error(`store write failed: ${errorText(err)}`));
    } finally {
      h.data.pendingAcks--;
    }
  }

  /**
   * The host's next owner on the ring (who takes it over should we die) learns
   * what we settled, so a crash of ours costs no second fetch of it beyond the
   * pages in flight (docs/mesh.md "Crashes"). The replica seen entry is queued
   * in the same batch as the completion (appended to `ops`): a settled page's
   * replica is on its way or acknowledged, never missing. It leaves on the
   * replica lane at once (src/mesh/exchange.ts), not behind URL batches.
   */
  private replicateSettled(host: string, url: string, ops: BatchOp[]): { peer: string; n: number } | undefined {
    const mesh = this.mesh;
    if (!mesh) return undefined;
    const next = mesh.membership.ring.nextOwnersOf(host, 2)[1];
    if (!next || next === mesh.id) return undefined;
    try {
      const q = mesh.replicas.queueOps(next, [encodeItem({ kind: 'replica', url })]);
      for (const op of q.ops) ops.push({ ...op, sublevel: this.store.replicas });
      return { peer: next, n: q.n };
    } catch (err) {
      // The mesh is stopping (outbox closed): the page is settled all the same, without a replica.
      this.log.debug({ err: (err as Error).message }, 'replicating a seen entry failed');
      return undefined;
    }
  }

  private indexLater(path: string, lines?: string[]): void {
    const job: Promise<void> = indexWarcFile(path, lines).then(() => undefined, (err: Error) => {
      bump(this.stats.errors, 'cdxj');
      this.log.error({ path, err: err.message }, 'CDXJ indexing failed');
    }).finally(() => this.pendingIndexes.delete(job));
    this.pendingIndexes.add(job);
  }

  private async writeWarc(out: FetchResponse, pre?: { recordId: string; digest: string }): Promise<WriteResult | undefined> {
    const warc = this.warc;
    if (!warc) return undefined;
    return this.warcWrite(2, () => warc.writeExchange({
      url: out.url,
      date: out.startedAt,
      ip: out.ip,
      method: out.method,
      requestHeaders: out.requestHeaders,
      status: out.status,
      statusText: out.statusText,
      responseHeaders: out.responseHeaders,
      ...archivedBody(out),
      ...(pre ? { recordId: pre.recordId, payloadDigest: pre.digest } : {}),
    }));
  }

  private async writeNotModified(out: FetchResponse, earlier: { capturedAt: Date; payloadDigest?: string }): Promise<WriteResult | undefined> {
    const warc = this.warc;
    if (!warc) return undefined;
    return this.warcWrite(1, () => warc.writeRevisit(serverNotModifiedRevisit({
      url: out.url, date: out.startedAt, ip: out.ip, status: out.status, statusText: out.statusText,
      responseHeaders: out.responseHeaders, ...earlier, ...(out.wire ? { wire: out.wire } : {}),
    })));
  }

  /**
   * One WARC write: `records` counted when it lands. A failure is counted, fatal, and thrown on:
   * the page must not be acknowledged unrecorded (docs/storage.md "Write failures").
   */
  private async warcWrite<T>(records: number, write: () => Promise<T>): Promise<T> {
    try {
      const result = await write();
      this.stats.warcRecords += records;
      return result;
    } catch (err) {
      bump(this.stats.errors, 'warc');
      const failure = new Error(`WARC write failed: ${errorText(err)}`);
      this.onFatal(failure);
      throw failure;
    }
  }

  // ---- lifecycle -------------------------------------------------------

  private armIdleCheck(): void {
    this.idleTimer = setInterval(() => {
      if (!this.running) return;
      if (this.config.untilIdle && !this.mesh && this.localIdle()) void this.stop();
    }, 50);
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

  private async shutdown(): Promise<Record<string, unknown>> {
    this.running = false;
    this.lifecycle = 'leaving';
    if (this.sampler) clearInterval(this.sampler);
    this.ownership?.stop();
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    if (this.durationTimer) clearTimeout(this.durationTimer);
    await this.recrawl?.stop().catch((err: Error) => this.log.error({ err: err.message }, 'recrawl stop failed'));
    // Let in-flight turns finish (each is bounded by the fetch timeouts).
    const deadline = Date.now() + this.config.fetch.totalTimeoutMs + 5000;
    while ((this.inFlight > 0 || this.processing > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await this.drum.flush().catch((err: Error) => this.log.error({ err: err.message }, 'seen flush failed'));
    await this.promoting; // stops after its current batch (errors were reported where they happened)
    await this.linkGraph?.close(); // its metadata records go to the WARC writer: before it closes
    await this.warc?.close().catch((err: Error) => this.log.error({ err: err.message }, 'WARC close failed'));
    await this.fingerprinter?.close();
    await Promise.all([...this.pendingIndexes]);
    await this.fetcher.close();
    const summary = this.stats.summary({
      queued: this.frontier.queued,
      hosts: this.frontier.knownHosts,
      rejectedByScope: this.scope.counts(),
      scope: { mode: this.crawlScope.mode, seedUnits: this.crawlScope.seedUnits().length },
      seen: { ...this.drum.stats },
      politeness: this.politeness.summary([...this.frontier.allHosts()].map((h) => ({ name: h.name, state: h.data.polite })), Date.now()),
      dns: { ...this.fetcher.resolver.stats },
      requests: this.fetcher.requestSummary(),
      dataDir: this.config.dataDir,
      warcDir: this.warc ? join(this.config.dataDir, 'warc') : undefined,
      agent: this.shortId,
      ...(this.mesh ? { peerId: this.mesh.id, forwarded: this.urlsSent(), received: this.urlsReceived(), mesh: this.ownership!.meshSummary() } : {}),
      ...(this.recrawl ? { recrawl: this.recrawl.summary() } : {}),
      ...(this.fatal ? { failure: this.fatal.message } : {}),
    });
    await this.api?.close().catch(() => {});
    await this.mesh?.stop();
    this.lifecycle = 'stopped';
    await this.ownership?.saved();
    await this.store.close().catch(() => {});
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.log.info({ pages: this.stats.fetched }, 'agent stopped');
    this.resolveDone(summary);
    return summary;
  }

  /** Undoes a start() that threw: nothing was crawled, so nothing is flushed, only closed. */
  async abandonStart(): Promise<void> {
    this.running = false;
    this.ownership?.stop();
    if (this.sampler) clearInterval(this.sampler);
    await this.api?.close().catch(() => {});
    await this.mesh?.stop().catch(() => {});
    await this.linkGraph?.close().catch(() => {});
    await this.warc?.close().catch(() => {});
    await this.fingerprinter?.close().catch(() => {});
    await this.fetcher.close().catch(() => {});
    await this.store.close().catch(() => {});
  }

  private openLinkGraph(): Promise<LinkGraphRecorder> {
    const warc = this.warc;
    return LinkGraphRecorder.open({
      dataDir: this.config.dataDir, agentShortId: this.shortId, rewrite: (u) => this.scope.rewriteQuiet(u),
      writeMetadata: warc ? (url, date, fields, concurrentTo, protocols) => this.warcWrite(1, () => warc.writeMetadata(url, date, fields, concurrentTo, protocols)) : undefined,
      onError: (err) => { bump(this.stats.errors, 'link-graph'); this.log.error({ err: err.message }, 'link graph write failed'); },
    });
  }

  private async agentShortId(): Promise<string> {
    const k = Buffer.from('agent-id');
    let id = await this.store.meta.get(k);
    if (!id) {
      // Replaced by the libp2p PeerId once the mesh exists; stable per data dir either way.
      id = Buffer.from(randomBytes(6).toString('hex'));
      await this.store.meta.put(k, id);
    }
    return id.toString('utf8');
  }
}

function sleep(ms: number): Promise<void> { return new Promise((r) => setTimeout(r, ms)); }

/** A LevelDB I/O or corruption error (classic-level's codes), or a full disk. */
function isStoreFailure(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return e?.code === 'LEVEL_IO_ERROR' || e?.code === 'LEVEL_CORRUPTION' || /ENOSPC|no space left/i.test(String(e?.message));
}

/** An error's message with its cause's (classic-level puts LevelDB's own status text, e.g. "No space left on device", in the cause). */
function errorText(err: unknown): string {
  const e = err as Error & { code?: string; cause?: Error };
  const msg = e?.message ?? String(err);
  const cause = e?.cause?.message;
  return cause && !msg.includes(cause) ? `${msg}: ${cause}` : msg;
}
