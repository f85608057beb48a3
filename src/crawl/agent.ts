// One crawling agent: wires the pipeline of DESIGN.md together.
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
import { hostKey, seenKey, prefixEnd, HOST_KEY_BYTES } from '../store/keys.js';
import { resolveConfig, type AgentConfig, type AgentOptions } from '../config.js';
import { Drum } from '../seen/drum.js';
import { REJECTED_VALUE, queuedAt, queuedValue, seenStateOf, settledValue, type SettledState } from '../seen/state.js';
import { Frontier, type FrontierMove, type HostState, type NewUrl, type QueuedUrl } from '../frontier/frontier.js';
import { Fetcher, type FetchFailure, type FetchOutcome, type FetchResponse } from '../fetch/fetcher.js';
import { HostResolver } from '../fetch/dns.js';
import { AddressPolicy, parseCidr, type BlockedAddress } from '../fetch/address.js';
import { RobotsCache, type RobotsEntry } from '../robots/cache.js';
import { productToken } from '../robots/index.js';
import { normalizeUrl, hostOf } from '../url/normalize.js';
import { extractPage } from '../parse/html.js';
import { ScopePolicy } from '../scope/traps.js';
import { CrawlScope, typeAccepted } from '../scope/crawl-scope.js';
import { WarcWriter, type WriteResult } from '../warc/writer.js';
import { encodeFetchRecord, type FetchRecord } from './records.js';
import { createMetrics } from '../api/metrics.js';
import { ThroughputHistory, RecentErrors } from '../api/history.js';
import type { ApiServer } from '../api/server.js';
import { preflight, StartupError } from './preflight.js';
import type { AgentState, MemberReport, SeedResult } from '../api/backend.js';
import { AgentBackend, VERSION, type AgentView } from './backend.js';
import { AgentMesh } from './mesh.js';
import { HandoffGate, RecentRings } from './handoff.js';
import { HostRing } from '../assign/ring.js';
import { RateLimitedLog } from '../mesh/admission.js';
import { classifyItem, encodeItem, encodeHandoffMarker, type UrlItem, type MembershipChange } from '../mesh/index.js';
import { parseSitemap } from '../sitemap/parse.js';
import { robotsGrantPrefix } from '../sitemap/scope.js';
import { SitemapGrants } from '../sitemap/grants.js';
import type { UrlKind } from '../frontier/frontier.js';
import { decodeEntry } from '../frontier/frontier.js';
import { priorityClass, inlinkBonus, MAX_PRIORITY } from '../frontier/priority.js';
import { InlinkCounter } from '../frontier/inlinks.js';
import { decodeFetchRecord } from './records.js';
import { indexWarcFile } from '../warc/cdxj.js';
import { newHostPoliteness, politenessConfig, retryDelayMs, unpark, type HostPoliteness } from '../politeness/host.js';
import { PolitenessControl, type Verdict } from '../politeness/control.js';
import { SideClocks } from '../politeness/side-clocks.js';
import { DnsError } from '../fetch/dns.js';
import { CrawlStats, bump } from './stats.js';
import { ContentDedup, revisitFor, nearDupFields, type ExactCheck } from '../dedup/content.js';
import { Fingerprinter } from '../dedup/fingerprinter.js';
import type { FingerprintJob } from '../parse/html.js';
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

/** A host held for one robots.txt redirect hop made on another host's turn (Agent.holdHopHost). */
interface HopHold {
  state: HostPoliteness;
  minDelayMs: number | null;
  frontierHost: HostState<HostData> | undefined;
  release(nextAllowedAt: number): void;
}

/** How soon a robots.txt hop to a host with a request in flight is tried again. */
const HOP_BUSY_RETRY_MS = 100;

export interface RecentFetch { url: string; status: number | null; at: number; durationMs: number | null; error: string | null }

const RECENT_PER_HOST = 10;

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

/** Failure kind and record reason of a URL whose address is internal (src/fetch/address.ts). */
const BLOCKED = 'blocked-address';

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
  /** Ownership changes are applied one at a time, in order. */
  private rebalancing: Promise<void> = Promise.resolve();
  private rebalancePending = false;
  private forwarded = 0;
  private received = 0;
  /** Hosts we own but may not contact until their previous owners said "handoff complete" (src/crawl/handoff.ts). */
  private handoff: HandoffGate | undefined;
  private handoffTimer: NodeJS.Timeout | undefined;
  /** Hosts we hold seen entries for (received in a handoff) but no frontier state: a later handoff must include them. */
  private readonly settledOnly = new Map<string, Buffer>();
  /** Our last rings: who may send us seen entries for a host (docs/mesh.md "Admission"). */
  private readonly recentRings = new RecentRings();
  /** heardRing()'s cache. */
  private heard: { key: string; ring: HostRing } | undefined;
  /** The last write of recentRings to the store (writes are chained, newest last). */
  private ringsSaved: Promise<void> = Promise.resolve();
  /** Items and batches from peers we refused, by reason (docs/mesh.md "Admission"). */
  private readonly refused: Record<string, number> = {};
  private refusalLog: RateLimitedLog | undefined;
  /**
   * Sitemap URL → origins whose robots.txt named it (their URLs may be listed in it): kept in LevelDB, and sent
   * along with the sitemap URL to the agent that fetches it (src/sitemap/grants.ts).
   */
  private readonly sitemapGrants: SitemapGrants;
  private readonly fetcher: Fetcher;
  readonly politeness: PolitenessControl;
  private readonly robots: RobotsCache;
  /** Clocks of hosts outside the frontier that robots.txt redirects lead to. */
  private readonly sideClocks = new SideClocks();
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
      addresses: new AddressPolicy(config.allowAddress),
    });
    this.politeness = new PolitenessControl(politenessConfig(config));
    this.robots = new RobotsCache(store.robots, this.fetcher, config.robots);
    this.scope = new ScopePolicy(config.scope);
    this.crawlScope = new CrawlScope(config.crawlScope);
    this.sitemapGrants = new SitemapGrants(store.meta);
    this.dedup = config.dedup.enabled ? new ContentDedup(store.digests, store.simhash, config.dedup, this.stats.dedup) : undefined;
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
    this.frontier.onReady = (h) => { this.prefetchDns(h); this.schedulePump(); };
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
    this.dedup?.load().catch((err: Error) => this.log.warn({ err: err.message }, 'dedup filter not loaded: every payload is looked up'));
    if (this.config.mesh.enabled) {
      const hb = this.config.mesh.heartbeatMs;
      this.handoff = new HandoffGate('', {
        // Fallback for a live peer whose marker does not come: its handoff first waits for its in-flight fetches.
        timeoutMs: this.config.fetch.totalTimeoutMs + 20 * hb,
        floorMs: this.config.minDelayMs,
        // Members known when we start, whose markers we wait for before crawling (docs/mesh.md "Admission"):
        // waits that give up on one that never speaks add up to silentAfterMs, then it is not waited for.
        newcomerCooldownMs: 40 * hb,
        silentAfterMs: this.config.fetch.totalTimeoutMs + 20 * hb,
      });
      this.refusalLog = new RateLimitedLog(this.log);
      // Before the first batch can arrive: who owned what under the rings we had before a restart.
      try {
        const saved = await this.store.meta.get(RECENT_RINGS_KEY);
        if (saved) this.recentRings.restore(JSON.parse(saved.toString('utf8')), { maxCapacity: this.config.mesh.admission.maxCapacity });
      } catch (err) { this.log.warn({ err: (err as Error).message }, 'saved recent rings unreadable: starting afresh'); }
      this.mesh = await AgentMesh.start(this.config.mesh, this.config.dataDir, this.store, {
        // A store that fails to take a peer's batch stops the agent as any failed write does (no ack is sent).
        accept: (items, from) => this.acceptFromPeer(items, from).catch((err: unknown) => {
          if (!this.stopping && isStoreFailure(err)) this.onFatal(new Error(`store write failed: ${errorText(err)}`));
          throw err;
        }),
        onChange: (c) => this.onMembershipChange(c),
        counters: () => ({ fetched: this.stats.fetched, queued: this.frontier.queued }),
        localIdle: () => this.localIdle(),
      }, this.log);
      this.mesh.on('idle', () => { if (this.config.untilIdle) void this.stop(); });
      this.mesh.on('forget', (peer) => this.metrics.removePeer(peer.slice(-12)));
      this.mesh.exchange.on('rejected', (reason) => this.metrics.meshRefused(reason));
      await this.startHandoffGate(this.mesh);
    }
    this.shortId = this.mesh ? this.mesh.id.slice(-12) : await this.agentShortId();
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
        warcinfo: {
          software: 'ubicrawl/0.1',
          format: 'WARC File Format 1.1',
          'http-header-user-agent': this.config.userAgent,
          robots: 'obey (RFC 9309)',
        },
      });
    }
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
        this.metrics.retainPeers(members.filter((m) => !m.self).map((m) => m.id.slice(-12)));
        for (const m of members) if (!m.self) this.metrics.setOutboxDepth(m.id.slice(-12), this.mesh.outbox.queued(m.id));
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
  ownerOf(host: string): string { return this.mesh ? this.mesh.ownerOf(host).slice(-12) : this.shortId; }
  urlsSent(): number { return this.forwarded; }
  urlsReceived(): number { return this.received; }

  members(): MemberReport[] {
    const mesh = this.mesh;
    if (mesh) {
      const shares = mesh.membership.ring.shares();
      return mesh.members().map((m) => ({
        id: m.id.slice(-12), self: m.self, addrs: m.addrs, state: m.state === 'active' && !mesh.membership.isVouched(m.id) ? 'joining' : m.state, capacity: m.capacity, share: shares.get(m.id) ?? 0,
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
    if (!this.mesh || this.lifecycle !== 'active') { void this.stop(); return; }
    const mesh = this.mesh;
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
      this.scheduleRebalance();
      await this.rebalancing;
      while ((this.inFlight > 0 || this.processing > 0 || this.rebalancePending) && Date.now() < deadline) await this.rebalancing.then(() => sleep(20));
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
      // Past the hop limit a URL stays where it is: views disagree only for a moment (DESIGN.md).
      if (owner === self || c.hops >= this.config.mesh.maxHops) { local.push(c); continue; }
      const items = byOwner.get(owner);
      const item = encodeItem({ kind: 'crawl', url: c.url, depth: c.depth, hops: c.hops + 1, sitemap: c.kind === 'sitemap', grant: c.grant });
      if (items) items.push(item); else byOwner.set(owner, [item]);
    }
    await this.keepGrants(local);
    const jobs: Promise<unknown>[] = [this.drum.submit(local, sync)];
    for (const [owner, items] of byOwner) {
      jobs.push(mesh.forward(owner, items).then((n) => { this.forwarded += n; this.metrics.urlsForwarded(owner.slice(-12), n); }));
    }
    await Promise.all(jobs);
    if (sync && byOwner.size > 0) await this.barrier.sync(); // the outbox writes
  }

  /**
   * URLs a peer sent: seen entries of a handed-over host, or URLs to crawl (or
   * to pass on), or handoff markers. `local`: items of our own outbox (a
   * departed peer's queue re-routed to us), not checked for admission.
   */
  private async acceptFromPeer(items: UrlItem[], from: string, local = false): Promise<void> {
    const mesh = this.mesh;
    // docs/mesh.md "Admission": only members send us anything (the exchange checks too, when the stream
    // opens); rejecting makes an honest sender we have not heard of yet retry later.
    if (!local && mesh && !mesh.membership.member(from)) {
      this.refuse('not-member', from, items.length);
      throw new Error('not a member');
    }
    const cands: Candidate[] = [];
    const settled: Buffer[] = [];
    const settledUrls: string[] = [];
    let handedOver = 0; // settled entries that are not replicas
    const passOn = new Map<string, UrlItem[]>();
    const markers: bigint[] = [];
    let startupRing: HostRing | null | undefined; // computed at the first seen entry
    let bad = 0;
    for (const it of items) {
      const w = classifyItem(it);
      if (w.kind === 'bad') { bad++; continue; }
      if (w.kind === 'marker') {
        markers.push(w.ringId);
        continue;
      }
      if (w.kind === 'seen' || w.kind === 'replica') {
        const host = hostOf(it.url);
        if (!host) { bad++; continue; }
        // A seen entry hides a page for good: only the host's recent owner may send one, and a
        // replica only the owner for whom we are next (docs/mesh.md "Admission").
        if (!local && mesh) {
          const replica = w.kind === 'replica';
          // While we start up, also the owner without us, and the ring of all members heard of (docs/mesh.md "Admission").
          startupRing ??= this.handoff?.startingUp ? this.heardRing(mesh) : null;
          const heard = startupRing ?? undefined;
          if (replica ? !this.recentRings.replicaFor(from, mesh.id, host, heard) : !this.recentRings.owned(from, host, heard ? mesh.id : undefined, heard)) {
            this.refuse(replica ? 'replica-not-owner' : 'seen-not-owner', from, 1);
            bad++;
            continue;
          }
        }
        // Not ours by our view: pass it on like a URL (hop limit), so it reaches the host's owner.
        const owner = mesh ? mesh.ownerOf(host) : undefined;
        if (mesh && owner !== mesh.id && w.kind === 'seen' && w.hops < this.config.mesh.maxHops) {
          const l = passOn.get(owner!);
          const item = encodeItem({ kind: 'seen', url: w.url, hops: w.hops + 1 });
          if (l) l.push(item); else passOn.set(owner!, [item]);
          continue;
        }
        const hk = hostKey(host);
        settled.push(seenKey(hk, it.url));
        settledUrls.push(it.url);
        if (w.kind === 'seen') handedOver++;
        const h = this.frontier.host(host);
        if (h) h.data.checkSeen = true;
        else if (w.kind === 'seen' && this.settledOnly.size < 1_000_000) this.settledOnly.set(host, hk);
        continue;
      }
      const c = this.candidate(w.url, undefined, w.depth, w.sitemap ? 'sitemap' : 'page');
      if (!c) { bad++; continue; }
      if (!this.followsFromPeer(c)) continue;
      c.hops = w.hops;
      // A peer forwards the links its pages have to our hosts: in-links too.
      if (c.kind === 'page') c.inlink = true;
      if (w.grant !== undefined) c.grant = w.grant; // a sitemap's only
      cands.push(c);
    }
    if (settled.length) {
      const value = settledValue('settled-elsewhere');
      const now = Date.now();
      await this.drum.exclusive(async () => {
        // A fetch record too (unless we have our own): a later handoff of the host passes it on (settledItems).
        const have = await this.store.fetches.getMany(settled);
        const ops: BatchOp[] = settled.map((key) => ({ type: 'put', sublevel: this.store.seen, key, value }));
        for (let i = 0; i < settled.length; i++) {
          if (!have[i]) ops.push({ type: 'put', sublevel: this.store.fetches, key: settled[i]!, value: encodeFetchRecord({ url: settledUrls[i]!, at: now, status: 0, failure: 'settled-elsewhere' }) });
        }
        // Acknowledged to the peer next: synced, except replica entries alone, which only spare a second
        // fetch after a crash (a power loss that takes them costs that fetch) and must not lag (docs/mesh.md "Crashes").
        await this.store.db.batch(ops, { sync: handedOver > 0 });
        this.drum.noteStored(settled); // the DRUM's Bloom filter must know every key in the store
      });
    }
    // The sender deletes the batch once we acknowledge it: what it stored here is synced first.
    await Promise.all([this.route(cands, true), ...[...passOn].map(([owner, its]) => mesh!.forward(owner, its, true))]);
    if (passOn.size > 0) await this.barrier.sync();
    // A marker comes after everything its sender queued for us before it (one ordered stream), all of which is durable now.
    for (const rid of markers) {
      this.handoff?.marker(from, rid, Date.now(), mesh?.membership.member(from)?.state === 'leaving');
      // Its first marker shows the sender finished a handoff round towards us: it may own hosts now.
      mesh?.membership.vouch(from);
      this.log.info({ from: from.slice(-12), ring: rid.toString(16), waitingFor: this.handoff?.waitingFor().map((p) => p.slice(-12)) }, 'handoff marker received');
    }
    if (markers.length) this.schedulePump();
    this.received += items.length;
    if (!local) this.metrics.urlsReceived(from.slice(-12), items.length - bad, bad);
  }

  /**
   * The ring of every active member we have heard of, ourselves included (cached per member set):
   * who owns what in the mesh while we start up, before the members' markers let them into our ring.
   */
  private heardRing(mesh: AgentMesh): HostRing {
    const ms = mesh.members().filter((m) => m.state === 'active' && m.capacity > 0 && !mesh.membership.isExcluded(m.id));
    const key = ms.map((m) => `${m.id}:${m.capacity}`).join(',');
    if (this.heard?.key !== key) {
      const ring = new HostRing({ maxCapacity: this.config.mesh.admission.maxCapacity });
      for (const m of ms) ring.add(m.id, m.capacity);
      this.heard = { key, ring };
    }
    return this.heard.ring;
  }

  private refuse(reason: string, from: string, n: number): void {
    this.refused[reason] = (this.refused[reason] ?? 0) + n;
    this.metrics.meshRefused(reason, n);
    this.refusalLog?.warn(reason, { peer: from.slice(-12), items: n }, 'refused items from a peer');
  }

  private onMembershipChange(c: MembershipChange): void {
    const mesh = this.mesh;
    if (!mesh) return;
    this.log.info({ members: c.members.length, added: c.added.map((x) => x.slice(-12)), removed: c.removed.map((x) => x.slice(-12)) }, 'membership changed');
    this.metrics.setMembers({ active: c.members.length });
    this.pushRing(mesh);
    this.metrics.retainPeers(mesh.members().filter((m) => !m.self).map((m) => m.id.slice(-12)));
    if (this.handoff) {
      const now = Date.now();
      for (const d of c.dead) this.handoff.gone(d, now); // crash: take over at once
      // Only members in our ring (or leaving it) may hold our hosts' data: one we left out (it acknowledges
      // nothing) or one that has not sent its first marker yet (it owned nothing) is not waited for.
      const alive = this.markerPeers(mesh, true);
      this.handoff.ringChanged(mesh.membership.ring, alive, c.added, now);
      this.log.info({ ring: this.handoff.ringId.toString(16), waitingFor: this.handoff.waitingFor().map((p) => p.slice(-12)) }, 'handoff gate');
    }
    // Hosts go back to earlier owners, which may have handed on URLs we sent them.
    if (c.removed.length) mesh.outbox.forgetRecent();
    for (const id of c.removed) this.rerouteOutbox(id);
    // Seen entries go out at once, not behind earlier handoffs still waiting for
    // in-flight fetches: the new owners must know what we fetched before they start.
    const moving = [...this.frontier.allHosts()].filter((h) => mesh.ownerOf(h.name) !== mesh.id);
    for (const h of moving) this.frontier.setPaused(h, true);
    this.sendSettled(moving).catch((err: Error) => this.log.error({ err: err.message }, 'sending seen entries failed'));
    this.scheduleRebalance();
  }

  /** Hands over every host we hold that another agent now owns (after any ring change). */
  private scheduleRebalance(): void {
    if (this.rebalancePending) return;
    this.rebalancePending = true;
    this.rebalancing = this.rebalancing.then(async () => {
      this.rebalancePending = false;
      const mesh = this.mesh;
      if (!mesh) return;
      const rid = this.handoff?.ringId;
      let failed = false;
      const moving = [...this.frontier.allHosts()].filter((h) => mesh.ownerOf(h.name) !== mesh.id);
      for (const h of moving) {
        try { await this.handOff(h); } catch (err) { failed = true; this.log.error({ host: h.name, err: (err as Error).message }, 'handoff failed; will retry on the next change'); this.frontier.setPaused(h, false); }
      }
      if (moving.length) this.log.info({ hosts: moving.length }, 'hosts handed over');
      // Hosts we only hold seen entries for (no frontier state) move too.
      for (const [host, hk] of this.settledOnly) {
        const owner = mesh.ownerOf(host);
        if (owner === mesh.id || this.frontier.host(host)) continue;
        try {
          const items = await this.settledItems(hk);
          if (items.length) await mesh.forward(owner, items, true);
          this.settledOnly.delete(host);
        } catch (err) { failed = true; this.log.error({ host, err: (err as Error).message }, 'handing over seen entries failed'); }
      }
      if (!failed) await this.sendMarkers(rid);
    });
  }

  /**
   * "Handoff complete" for ring `rid` to every member that has not had ours
   * yet: queued after everything this pass handed over, on the same ordered
   * streams. Skipped when the ring moved on during the pass (the next pass marks).
   */
  private async sendMarkers(rid: bigint | undefined): Promise<void> {
    const mesh = this.mesh;
    const gate = this.handoff;
    if (!mesh || !gate || rid === undefined || rid !== gate.ringId) return;
    // Joiners too: our marker is what lets them into our peers' rings, and theirs into ours.
    const due = gate.markersDue(this.markerPeers(mesh, false));
    if (due.length) this.log.info({ ring: rid.toString(16), to: due.map((p) => p.slice(-12)) }, 'handoff markers sent');
    await Promise.all(due.map((p) => mesh.forward(p, [encodeHandoffMarker(rid)], true).then(() => gate.markerSent(p, rid))));
  }

  /**
   * Other members that take part in handoffs: active ones (joiners included)
   * to send our markers to, or — `owners` — those that may hold data of our
   * hosts: vouched for (in our ring, or leaving it). Members we left out of our
   * ring for acknowledging nothing take part in neither.
   */
  private markerPeers(mesh: AgentMesh, owners: boolean): string[] {
    const ms = mesh.membership;
    return mesh.members()
      .filter((m) => !m.self && !ms.isExcluded(m.id) && (owners ? ms.isVouched(m.id) : m.state === 'active'))
      .map((m) => m.id);
  }

  /** A dead or departed peer's queue goes to the hosts' new owners (ourselves included). */
  private rerouteOutbox(id: string): void {
    const mesh = this.mesh!;
    const ring = mesh.membership.ring;
    if (id !== mesh.id && mesh.replicas.queued(id) > 0 && !mesh.replicas.isPaused(id)) {
      // Replica seen entries go to the hosts' new next owner, or are dropped when that is us.
      const nextOwner = (it: UrlItem) => { const n = ring.nextOwnersOf(hostOf(it.url), 2)[1]; return n && n !== mesh.id ? n : null; };
      void mesh.replicas.reassign(id, nextOwner, async () => {})
        .catch((err: Error) => this.log.error({ peer: id, err: err.message }, 're-routing replica entries failed'));
    }
    if (id === mesh.id || mesh.outbox.queued(id) === 0 || mesh.outbox.isPaused(id)) return;
    void mesh.outbox.reassign(id, (it) => {
      const kind = classifyItem(it).kind;
      if (kind === 'marker' || kind === 'bad') return null; // a marker is meant for that peer only: dropped below
      if (kind === 'replica') { const n = ring.nextOwnersOf(hostOf(it.url), 2)[1]; return n && n !== mesh.id ? n : null; }
      const o = mesh.ownerOf(hostOf(it.url));
      return o === mesh.id ? null : o;
    }, (its) => this.acceptFromPeer(its.filter((it) => { const kind = classifyItem(it).kind; return kind === 'crawl' || kind === 'seen'; }), id, true),
    // A member left out for never acknowledging: its in-flight batches will not be acked; do not wait for them.
    mesh.membership.isExcluded(id) ? { waitInflightMs: 0 } : {})
      .catch((err: Error) => this.log.error({ peer: id, err: err.message }, 're-routing an outbox failed'));
  }

  private async startHandoffGate(mesh: AgentMesh): Promise<void> {
    const gate = this.handoff!;
    gate.setSelf(mesh.id);
    this.pushRing(mesh);
    // Every member known at start is new to us: it may hold hosts we own (we were away, or never
    // here). Until it is in our ring (its marker came), it owns nothing in our view.
    const others = mesh.members().filter((m) => !m.self).map((m) => m.id);
    gate.ringChanged(mesh.membership.ring, others, others, Date.now());
    // A joiner, or an agent back in a mesh it was part of (its outbox or inbox names peers), contacts
    // no host until a member is in its ring (bounded: peers that never come are given up on).
    if (this.config.mesh.peers.length > 0 || mesh.outbox.peers().length > 0 || mesh.replicas.peers().length > 0 || await mesh.exchange.inboxPeers().then((p) => p.length > 0, () => false)) {
      gate.holdUntilJoined(Date.now() + this.config.fetch.totalTimeoutMs + 20 * this.config.mesh.heartbeatMs);
      this.log.info('joining: no host is contacted until a member is in our ring');
    }
    mesh.membership.on('heartbeat', (m) => {
      // A peer restarted without a ring change waits for our marker again; a member new to us gets
      // our marker (its way into our peers' rings) without waiting for a ring change.
      const restarted = gate.heard(m.id, m.incarnation);
      if (restarted || (m.state === 'active' && this.lifecycle !== 'leaving' && gate.markersDue([m.id]).length > 0 && !mesh.membership.isExcluded(m.id))) this.scheduleRebalance();
    });
    const startedAt = Date.now();
    this.handoffTimer = setInterval(() => {
      gate.prune((id) => mesh.membership.member(id) !== undefined, Date.now());
      // A queue kept from an earlier run for a peer that is not (or no longer) in the mesh:
      // once it could have been heard of, it goes to the hosts' owners.
      if (Date.now() - startedAt > this.config.mesh.deadAfterMs) {
        for (const p of new Set([...mesh.outbox.peers(), ...mesh.replicas.peers()])) if (!mesh.membership.member(p)) this.rerouteOutbox(p);
      }
      // A member we left out of our ring: whatever reached its queue since (or a re-route that was skipped
      // while another pass held the queue) goes to the hosts' owners too.
      for (const p of mesh.outbox.peers()) if (mesh.membership.isExcluded(p) && mesh.outbox.queued(p) > 0) this.rerouteOutbox(p);
    }, this.config.mesh.heartbeatMs);
    this.handoffTimer.unref();
    this.scheduleRebalance();
  }

  /**
   * Moves one host to its new owner: its queued URLs, then the URLs we already
   * fetched or settled (as seen entries), all made durable in our outbox before
   * they leave our frontier. In-flight work on the host finishes first, so the
   * new owner never fetches what we are fetching.
   */
  private async handOff(h: HostState<HostData>): Promise<void> {
    const mesh = this.mesh!;
    this.frontier.setPaused(h, true);
    const deadline = Date.now() + 120_000;
    while ((h.inFlight || h.data.pendingAcks > 0 || h.loading) && Date.now() < deadline) await sleep(10);
    const owner = mesh.ownerOf(h.name);
    if (owner === mesh.id) { this.frontier.setPaused(h, false); return; }
    // Read, send and delete with DRUM rounds held off, so no URL of this host is
    // committed to our frontier between the read and the delete.
    const moved = await this.drum.exclusive(async () => {
      const entries = await this.store.frontier.iterator({ gte: h.key, lt: prefixEnd(h.key) }).all();
      const queued: UrlItem[] = [];
      for (const [, v] of entries) {
        const e = decodeEntry(v, h.name);
        if (e) queued.push(encodeItem({ kind: 'crawl', url: e.url, depth: e.depth, hops: 0, sitemap: e.kind === 'sitemap' }));
      }
      await this.attachGrants(queued);
      // Seen entries again: those of pages that finished while we waited above.
      const settled = await this.settledItems(h.key);
      await mesh.forward(owner, [...settled, ...queued], true);
      // Their seen entries go too: "queued" is no longer true here, and should the host come
      // back to us with these URLs (a later ring change), they must be taken, not deduplicated.
      const unseen: BatchOp[] = queued.map((q) => ({ type: 'del', sublevel: this.store.seen, key: seenKey(h.key, q.url) }));
      await this.store.db.batch([...entries.map(([key]): BatchOp => ({ type: 'del', sublevel: this.store.frontier, key })), ...unseen]);
      if (unseen.length) this.drum.forgetCached();
      this.frontier.dropHost(h, entries.length);
      return queued.length;
    });
    this.forwarded += moved;
  }

  /** The URLs of a host we fetched or settled, as seen entries for its next owner. */
  private async settledItems(hk: Buffer): Promise<UrlItem[]> {
    const out: UrlItem[] = [];
    for (const [, v] of await this.store.fetches.iterator({ gte: hk, lt: prefixEnd(hk) }).all()) {
      const r = decodeFetchRecord(v);
      if (r) out.push(encodeItem({ kind: 'seen', url: r.url, hops: 0 }));
    }
    return out;
  }

  private async sendSettled(hosts: HostState<HostData>[]): Promise<void> {
    const mesh = this.mesh!;
    const byOwner = new Map<string, UrlItem[]>();
    for (const h of hosts) {
      const owner = mesh.ownerOf(h.name);
      if (owner === mesh.id) continue;
      const items = await this.settledItems(h.key);
      if (!items.length) continue;
      const l = byOwner.get(owner);
      if (l) l.push(...items); else byOwner.set(owner, items);
    }
    await Promise.all([...byOwner].map(([owner, items]) => mesh.forward(owner, items, true)));
  }

  private localIdle(): boolean {
    return this.inFlight === 0 && this.processing === 0 && !this.drum.busy && this.frontier.idle && !this.rebalancePending
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
      this.turn(h).catch((err: Error) => this.onFatal(err)).finally(() => {
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

  /** One turn of a host: at most one request to it (robots.txt or a page). */
  private async turn(h: HostState<HostData>): Promise<void> {
    if (this.mesh && this.mesh.ownerOf(h.name) !== this.mesh.id) {
      // URLs committed after a handoff (or during a view change): hand them on, do not fetch.
      this.frontier.release(h, Date.now());
      this.frontier.setPaused(h, true);
      this.scheduleRebalance();
      return;
    }
    const gated = this.handoff ? this.handoff.notBefore(h.name, Date.now()) : 0;
    if (gated > 0) { this.frontier.release(h, gated); return; } // the previous owner's handoff is not complete yet
    for (;;) {
      const q = this.takeDue(h);
      if (q === null) return; // only retries waiting: the host was released until the first is due
      if (!q) { this.frontier.release(h, Date.now()); return; }
      h.data.pendingAcks++;
      if (h.data.polite.parked) {
        // A parked host is not contacted again in this run: its URLs are recorded as failed.
        this.politeness.failed('parked');
        await this.finish(q, h, [], { url: q.url, at: Date.now(), status: 0, failure: 'parked' });
        continue;
      }
      // In a mesh a previous owner's handoff may have settled this URL after we queued it.
      if (this.mesh || h.data.checkSeen) {
        const v = await this.store.seen.get(seenKey(h.key, q.url));
        if (v && seenStateOf(v) === 'settled-elsewhere') {
          await this.finish(q, h, [], { url: q.url, at: Date.now(), status: 0, failure: 'settled-elsewhere' });
          continue;
        }
      }
      let u: URL;
      try { u = new URL(q.url); } catch { await this.finish(q, h, [], { url: q.url, at: Date.now(), status: 0, failure: 'invalid-url' }); continue; }
      const origin = u.origin;
      let robots = h.data.robots.get(origin);
      if (!robots || robots.expires <= Date.now()) {
        robots = await this.robots.lookup(origin);
        if (robots) h.data.robots.set(origin, robots);
      }
      if (!robots) {
        // Fetching robots.txt — one request of it: robots.txt itself or one redirect hop (RFC 9309 §2.3.1.2) — is
        // this turn's request; the page waits for a later turn. Each hop waits for the clock of the host it goes
        // to, as every request does (docs/politeness.md "Redirects").
        const pending = h.data.robotsHop?.origin === origin ? h.data.robotsHop : undefined;
        const target = pending?.target ?? `${origin}/robots.txt`;
        const hop = pending?.hop ?? 0;
        const targetHost = hostOf(target);
        const other = targetHost === h.name ? undefined : this.holdHopHost(targetHost, Date.now());
        if (typeof other === 'number') {
          // The target's host is busy or resting: this host tries again when it is free (nothing was sent).
          this.frontier.unshift(h, q);
          h.data.pendingAcks--;
          this.frontier.release(h, Math.max(other, h.data.polite.nextAllowedAt));
          return;
        }
        if (other === 'parked') {
          // Not contacted again in this run: robots.txt is unreachable (RFC 9309 §2.3.1.4).
          this.frontier.unshift(h, q);
          h.data.pendingAcks--;
          h.data.robotsHop = undefined;
          await this.robotsDecided(h, origin, await this.robots.giveUp(origin));
          this.frontier.release(h, Math.max(Date.now(), h.data.polite.nextAllowedAt));
          return;
        }
        const checked = this.beforeRequest(h, q, new URL(target));
        if (checked === null) { other?.release(Date.now()); return; }
        if (typeof checked === 'object' && hop === 0) { other?.release(Date.now()); await this.refuseAddress(q, h, checked); continue; }
        // A redirect hop to a refused address is refused again by the fetcher's connect check: robots.txt is then
        // unreachable (RFC 9309 §2.3.1.4), never silently allowed.
        const ip = typeof checked === 'object' ? undefined : checked;
        this.frontier.unshift(h, q);
        h.data.pendingAcks--;
        const step = await this.robots.step(origin, target, hop);
        const out = step.out;
        if (out.ok) await this.writeWarc(out);
        // The exchange shapes the clock of the host it went to (its backoff, pauses and parking too).
        const now = Date.now();
        const clock = other ? other.state : h.data.polite;
        const v = this.politeness.record(targetHost, clock, out, 0, now, {
          dnsPermanent: this.dnsPermanent(out, new URL(target).hostname), minDelayMs: other ? other.minDelayMs : h.data.policy.minDelayMs, robots: true,
        });
        this.politeness.releaseIp(ip, v?.ipNextAllowedAt ?? now);
        const next = v && !v.park ? v.nextAllowedAt : now;
        if (other) {
          if (v && other.frontierHost) this.notePoliteness(other.frontierHost, v, out.url);
          other.release(next);
        } else if (v) {
          this.notePoliteness(h, v, out.url);
        }
        if (step.next !== undefined) {
          h.data.robotsHop = { origin, target: step.next, hop: hop + 1 };
        } else {
          h.data.robotsHop = undefined;
          await this.robotsDecided(h, origin, step.entry);
        }
        this.frontier.release(h, other ? Math.max(now, h.data.polite.nextAllowedAt) : next);
        return;
      }
      if (robots.rules.crawlDelay(this.token) !== undefined) h.data.polite.crawlDelayMs = robots.rules.crawlDelay(this.token)! * 1000;
      if (robots.verdict === 'unreachable' && h.data.robotsFailures <= this.politeness.cfg.maxRetries && !h.data.polite.parked) {
        // RFC 9309 §2.3.1.4: nothing may be fetched while robots.txt is unreachable; the URLs wait for it (a transient
        // failure, retried like one: src/politeness/host.ts) rather than failing at once.
        this.frontier.unshift(h, q);
        h.data.pendingAcks--;
        this.frontier.release(h, Math.max(robots.expires, h.data.polite.nextAllowedAt));
        return;
      }
      if (!robots.rules.isAllowed(q.url, this.token)) {
        this.stats.robotsBlocked++;
        const reason = robots.verdict === 'unreachable' ? 'robots-unreachable' : 'robots';
        bump(this.stats.rejected, reason);
        this.metrics.urlRejected(reason);
        await this.finish(q, h, [], { url: q.url, at: Date.now(), status: 0, failure: reason });
        continue; // no request was made: the host's turn goes on
      }
      // An operator's budget for the host (PUT /hosts/:host/policy), else --max-pages-per-host.
      const budget = h.data.policy.pageBudget ?? (this.config.crawlScope.maxPagesPerHost > 0 ? this.config.crawlScope.maxPagesPerHost : null);
      if (budget !== null && !q.attempt && h.data.budgetUsed >= budget) {
        bump(this.stats.rejected, 'host-page-budget');
        this.metrics.urlRejected('host-page-budget');
        await this.finish(q, h, [], { url: q.url, at: Date.now(), status: 0, failure: 'host-page-budget' });
        continue;
      }
      const ip = this.beforeRequest(h, q, u);
      if (ip === null) return;
      if (typeof ip === 'object') { await this.refuseAddress(q, h, ip); continue; }
      // Revisits are conditional GETs (If-None-Match / If-Modified-Since from the stored state).
      const conditional = this.recrawl && q.kind === 'page' ? await this.recrawl.prepare(q, seenKey(h.key, q.url)) : undefined;
      if (!q.attempt) h.data.budgetUsed++;
      const out = await this.fetcher.fetch(q.url, conditional);
      if (!this.running && !out.ok) {
        // Shutdown aborted it: leave it queued for the next run.
        this.recrawl?.forget(q);
        h.data.pendingAcks--;
        this.politeness.releaseIp(ip, Date.now());
        this.frontier.release(h, Date.now());
        return;
      }
      const now = Date.now();
      const v = this.politeness.record(h.name, h.data.polite, out, q.attempt ?? 0, now, { dnsPermanent: this.dnsPermanent(out, u.hostname), minDelayMs: h.data.policy.minDelayMs });
      this.politeness.releaseIp(ip, v?.ipNextAllowedAt ?? now);
      if (v) this.notePoliteness(h, v, q.url);
      if (v?.retry) {
        // Transient failure with retries left: the URL stays in the frontier on disk (a crash
        // re-queues it) and waits in the host's head until retryAt; other URLs of the host go first.
        this.noteFailedAttempt(h, q, out);
        this.recrawl?.forget(q); // prepared again (conditional headers) on the next attempt
        q.attempt = (q.attempt ?? 0) + 1;
        q.notBefore = v.retryAt;
        this.frontier.unshift(h, q);
        h.data.pendingAcks--;
        this.frontier.release(h, v.nextAllowedAt);
        return;
      }
      // The host's clock starts now; processing the page need not hold the host (or the fetch slot).
      // A parked host is released at once: its next turns record its queue as failed.
      this.frontier.release(h, v && !v.park ? v.nextAllowedAt : now);
      if (out.ok) this.stats.recordResponse(out.status, out.rawBytes);
      this.processing++;
      this.process(q, h, out, v?.failure).catch((err: Error) => this.onFatal(err)).finally(() => {
        this.processing--;
        this.schedulePump();
      });
      return;
    }
  }

  /** robots.txt for `origin` is decided: kept, counted, its sitemaps found. */
  private async robotsDecided(h: HostState<HostData>, origin: string, entry: RobotsEntry): Promise<void> {
    this.stats.robotsFetches++;
    this.metrics.robotsFetched(entry.verdict);
    // An unreachable robots.txt is asked again after the retry delays (then its URLs wait no longer: they fail).
    if (entry.verdict === 'unreachable') {
      const n = h.data.robotsFailures++;
      if (n < this.politeness.cfg.maxRetries) entry.expires = Math.min(entry.expires, Date.now() + retryDelayMs(n, this.politeness.cfg));
    } else {
      h.data.robotsFailures = 0;
    }
    h.data.robots.set(origin, entry);
    h.data.polite.crawlDelayMs = (entry.rules.crawlDelay(this.token) ?? 0) * 1000;
    if (entry.verdict === 'unreachable') this.log.warn({ origin }, 'robots.txt unreachable: host disallowed for now');
    else await this.discoverSitemaps(origin, entry);
  }

  /**
   * The clock of another host a robots.txt redirect leads to, held for one
   * request: that host's frontier record if we have one (held like a turn of
   * its own, so none of its pages goes out meanwhile), else a side clock. A
   * number when the host is busy or resting (try again then); 'parked' for a
   * host we no longer contact.
   */
  private holdHopHost(name: string, now: number): HopHold | number | 'parked' {
    const fh = this.frontier.host(name);
    if (fh) {
      if (fh.data.polite.parked) return 'parked';
      const at = Math.max(fh.nextAllowed, fh.data.polite.nextAllowedAt);
      if (at > now) return at;
      if (!this.frontier.hold(fh)) return now + HOP_BUSY_RETRY_MS;
      return {
        state: fh.data.polite, minDelayMs: fh.data.policy.minDelayMs, frontierHost: fh,
        // Never earlier than it was (a hop that sent nothing, e.g. waiting for DNS, leaves its clock as it was).
        release: (t) => this.frontier.release(fh, Math.max(t, fh.nextAllowed)),
      };
    }
    const c = this.sideClocks.get(name, now);
    if (c.state.parked) return 'parked';
    if (c.state.nextAllowedAt > now) return c.state.nextAllowedAt;
    if (c.busy) return now + HOP_BUSY_RETRY_MS;
    c.busy = true;
    return { state: c.state, minDelayMs: null, frontierHost: undefined, release: () => { c.busy = false; } };
  }

  /**
   * The host's next URL, skipping retries that are not yet due. Null when
   * only such retries are queued in memory: the host is then released until
   * the earliest of them.
   */
  private takeDue(h: HostState<HostData>): QueuedUrl | undefined | null {
    const q = this.frontier.take(h);
    if (!q || q.notBefore === undefined || h.data.polite.parked) return q;
    const now = Date.now();
    if (q.notBefore <= now) return q;
    let earliest = q.notBefore;
    for (const x of this.frontier.inMemory(h)) {
      if (x.notBefore === undefined || x.notBefore <= now) {
        this.frontier.remove(h, x);
        this.frontier.unshift(h, q);
        return x;
      }
      if (x.notBefore < earliest) earliest = x.notBefore;
    }
    this.frontier.unshift(h, q);
    this.frontier.release(h, Math.max(earliest, h.data.polite.nextAllowedAt));
    return null;
  }

  /**
   * DNS and the per-IP clock, right before a request. Returns the IP held on
   * the per-IP clock (undefined when none is held), or null when the request
   * cannot go now: the URL is put back and the host either waits for its
   * DNS answer (the fetch slot is freed meanwhile, so a slow name delays only
   * its own host) or is released until its IP is free. An internal address
   * (src/fetch/address.ts) returns why it is refused: no request is made.
   */
  private beforeRequest(h: HostState<HostData>, q: QueuedUrl, u: URL): string | undefined | null | BlockedAddress {
    const port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
    const host = u.hostname.charCodeAt(0) === 91 ? u.hostname.slice(1, -1) : u.hostname;
    const resolver = this.fetcher.resolver;
    const known = resolver.cached(host, port);
    if (known === undefined) {
      this.frontier.unshift(h, q);
      h.data.pendingAcks--;
      // The host stays "in flight" (out of the ready heap) until the answer, or the failure, is in.
      void resolver.resolve(host, port).catch(() => {}).then(() => this.frontier.release(h, Date.now()));
      return null;
    }
    if (known instanceof DnsError) return undefined; // the fetch fails at once and is classified
    // Cheap and early; the fetcher checks again on the address it really dials (DNS may change meanwhile).
    const blocked = resolver.fromRule(known) ? null : this.fetcher.addresses.check(known.address);
    if (blocked) return blocked;
    const now = Date.now();
    const t = this.politeness.reserveIp(known.address, now);
    if (t > now) {
      this.frontier.unshift(h, q);
      h.data.pendingAcks--;
      this.frontier.release(h, t);
      return null;
    }
    return this.politeness.ipClock ? known.address : undefined;
  }

  /**
   * Why a URL's host is refused, when that is known without a query: an IP
   * literal, localhost, or a cached DNS answer that is internal
   * (src/fetch/address.ts). A `--resolve` rule's target is never refused.
   */
  private blockedTarget(url: string): BlockedAddress | null {
    const hp = hostPort(url);
    if (!hp) return null;
    const resolver = this.fetcher.resolver;
    const known = resolver.cached(hp.host, hp.port);
    return known && !(known instanceof DnsError) && !resolver.fromRule(known) ? this.fetcher.addresses.check(known.address) : null;
  }

  /** A URL whose host is an internal address: recorded as failed with `blocked-address`, no request made. */
  private async refuseAddress(q: QueuedUrl, h: HostState<HostData>, blocked: BlockedAddress): Promise<void> {
    const startedAt = new Date();
    await this.recordFailure(q, h, { ok: false, url: q.url, kind: BLOCKED, message: `${BLOCKED}: ${blocked.reason}`, startedAt, durationMs: 0 });
  }

  /** Whether a failed fetch failed on a permanent DNS answer (NXDOMAIN, NODATA). */
  private dnsPermanent(out: FetchOutcome, host: string): boolean {
    return !out.ok && out.kind === 'dns' && this.fetcher.resolver.failure(host)?.permanent === true;
  }

  /** Logs and counts what the politeness state decided after an exchange. */
  private notePoliteness(h: HostState<HostData>, v: Verdict, url: string): void {
    if (v.park) {
      this.log.warn({ ...this.politeness.describe(h.name, h.data.polite, Date.now()), url }, 'host parked: not contacted again in this run; its queued URLs are recorded as failed');
    } else if (v.paused) {
      this.log.warn({ ...this.politeness.describe(h.name, h.data.polite, Date.now()), url }, 'host paused after a run of failures; the next request is a probe');
    } else if (v.kind === 'too-many' || v.kind === 'unavailable') {
      this.log.info({ host: h.name, status: v.kind === 'too-many' ? 429 : 503, backoffLevel: h.data.polite.backoffLevel, retryAfterMs: v.retryAfterMs, nextInMs: v.nextAllowedAt - Date.now(), reason: v.reason }, 'host backed off');
    }
    if (v.retry) this.log.debug({ url, kind: v.kind, retryInMs: (v.retryAt ?? 0) - Date.now() }, 'fetch will be retried');
  }

  /** A failed attempt that will be retried: counted and visible, its response (if any) kept in the WARC. */
  private noteFailedAttempt(h: HostState<HostData>, q: QueuedUrl, out: FetchOutcome): void {
    const at = out.startedAt.getTime();
    const kind = out.ok ? `http-${out.status}` : out.kind;
    bump(h.data.errors, kind);
    this.noteRecent(h, { url: q.url, status: out.ok ? out.status : null, at, durationMs: out.durationMs, error: kind });
    if (!out.ok) { this.metrics.fetchFailed(out.kind, out.durationMs); return; }
    this.processing++;
    // A failure is fatal and reported by warcWrite; the URL is queued for its retry either way.
    this.writeWarc(out).catch(() => {}).finally(() => { this.processing--; this.schedulePump(); });
  }

  /** Warms the DNS cache for a host that just entered the ready heap (at most every few seconds per host). */
  private prefetchDns(h: HostState<HostData>): void {
    const q = this.frontier.inMemory(h).next().value as QueuedUrl | undefined;
    if (!q) return;
    const now = Date.now();
    if (h.data.dnsCheckAt > now) return;
    h.data.dnsCheckAt = now + 5000;
    const hp = hostPort(q.url);
    if (hp) this.fetcher.resolver.prefetch(hp.host, hp.port);
  }

  // ---- one fetched page -------------------------------------------------

  /** A URL that failed for good: counted (stats, host, metrics, recent errors) and recorded with its reason. */
  private async recordFailure(q: QueuedUrl, h: HostState<HostData>, out: FetchFailure, failure?: string): Promise<void> {
    const at = out.startedAt.getTime();
    bump(this.stats.errors, out.kind);
    bump(h.data.errors, out.kind);
    // Politeness never sees a refused address (nothing reached the host), so it is counted here.
    if (out.kind === BLOCKED) this.politeness.failed(BLOCKED);
    this.noteRecent(h, { url: q.url, status: null, at, durationMs: out.durationMs, error: out.kind });
    this.metrics.fetchFailed(out.kind, out.durationMs);
    this.recentErrors.record(out.kind, out.message, q.url, h.name);
    this.log.debug({ url: q.url, kind: out.kind, err: out.message }, 'fetch failed');
    await this.finish(q, h, [], { url: q.url, at, status: 0, failure: failure ?? out.kind });
  }

  /** `failure`: set when politeness gave up on the URL (retries used up, permanent failure): it is recorded as failed. */
  private async process(q: QueuedUrl, h: HostState<HostData>, out: FetchOutcome, failure?: string): Promise<void> {
    const at = out.startedAt.getTime();
    if (!out.ok) {
      await this.recordFailure(q, h, out, failure);
      return;
    }
    h.data.pages++;
    this.noteRecent(h, { url: q.url, status: out.status, at, durationMs: out.durationMs, error: null });
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
    const exact = !skipped && !earlier && this.dedup && q.kind === 'page' && this.dedup.applies(out.status, out.body, out.truncated) ? await this.dedup.checkExact(out.url, out.startedAt, out.body) : undefined;
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
        const fp = this.extractLinks(q, out, links, record);
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
      if (warc) await this.warcWrite(1, () => warc.writeMetadata(out.url, out.startedAt, fields, stored?.recordId));
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
    if (q.depth + 1 > this.config.sitemaps.maxIndexDepth) { st.tooDeep += sm.sitemaps.length; return; }
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

  private noteRecent(h: HostState<HostData>, f: RecentFetch): void {
    h.data.recent.push(f);
    if (h.data.recent.length > RECENT_PER_HOST) h.data.recent.shift();
  }

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
  private extractLinks(q: QueuedUrl, out: FetchResponse, into: Candidate[], record: FetchRecord): bigint | FingerprintJob | undefined {
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
      body: out.body,
      truncated: out.truncated,
      ...(pre ? { recordId: pre.recordId, payloadDigest: pre.digest } : {}),
    }));
  }

  private async writeNotModified(out: FetchResponse, earlier: { capturedAt: Date; payloadDigest?: string }): Promise<WriteResult | undefined> {
    const warc = this.warc;
    if (!warc) return undefined;
    return this.warcWrite(1, () => warc.writeRevisit(serverNotModifiedRevisit({
      url: out.url, date: out.startedAt, ip: out.ip, status: out.status, statusText: out.statusText,
      responseHeaders: out.responseHeaders, ...earlier,
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
    if (this.handoffTimer) clearInterval(this.handoffTimer);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    if (this.durationTimer) clearTimeout(this.durationTimer);
    await this.recrawl?.stop().catch((err: Error) => this.log.error({ err: err.message }, 'recrawl stop failed'));
    // Let in-flight turns finish (each is bounded by the fetch timeouts).
    const deadline = Date.now() + this.config.fetch.totalTimeoutMs + 5000;
    while ((this.inFlight > 0 || this.processing > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await this.drum.flush().catch((err: Error) => this.log.error({ err: err.message }, 'seen flush failed'));
    await this.promoting; // stops after its current batch (errors were reported where they happened)
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
      dataDir: this.config.dataDir,
      warcDir: this.warc ? join(this.config.dataDir, 'warc') : undefined,
      agent: this.shortId,
      ...(this.mesh ? { peerId: this.mesh.id, forwarded: this.forwarded, received: this.received, mesh: this.meshSummary() } : {}),
      ...(this.recrawl ? { recrawl: this.recrawl.summary() } : {}),
      ...(this.fatal ? { failure: this.fatal.message } : {}),
    });
    await this.api?.close().catch(() => {});
    await this.mesh?.stop();
    this.lifecycle = 'stopped';
    await this.ringsSaved;
    await this.store.close().catch(() => {});
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.log.info({ pages: this.stats.fetched }, 'agent stopped');
    this.resolveDone(summary);
    return summary;
  }

  /** Undoes a start() that threw: nothing was crawled, so nothing is flushed, only closed. */
  async abandonStart(): Promise<void> {
    this.running = false;
    if (this.handoffTimer) clearInterval(this.handoffTimer);
    if (this.sampler) clearInterval(this.sampler);
    await this.api?.close().catch(() => {});
    await this.mesh?.stop().catch(() => {});
    await this.warc?.close().catch(() => {});
    await this.fingerprinter?.close().catch(() => {});
    await this.fetcher.close().catch(() => {});
    await this.store.close().catch(() => {});
  }

  /** Admission figures (docs/mesh.md "Admission"): every refusal by reason, rate limiting, members left out. */
  private meshSummary(): Record<string, unknown> {
    const mesh = this.mesh!;
    const ex = mesh.exchange.stats();
    return {
      refused: { ...ex.rejected, ...this.refused },
      throttled: ex.throttled,
      excluded: { ...mesh.stats.excluded },
      forgottenPeers: mesh.stats.forgotten,
      heartbeatsRejected: { ...mesh.membership.stats.rejected },
      handoff: { ...this.handoff!.stats },
    };
  }

  /** Records our ring in the recent rings and keeps them in the store (they survive a crash). */
  private pushRing(mesh: AgentMesh): void {
    this.recentRings.push(mesh.membership.ring);
    const value = Buffer.from(JSON.stringify(this.recentRings.toJSON()));
    this.ringsSaved = this.ringsSaved.then(() => this.store.meta.put(RECENT_RINGS_KEY, value))
      .catch((err: Error) => this.log.warn({ err: err.message }, 'recent rings not saved: a restart may refuse seen entries sent under them'));
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

/** store.meta key of the recent rings (src/crawl/handoff.ts RecentRings). */
const RECENT_RINGS_KEY = Buffer.from('recent-rings');

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

/** Host name and port of an absolute http(s) URL string, without a URL object (hot path). */
function hostPort(url: string): { host: string; port: number } | undefined {
  const https = url.startsWith('https://');
  if (!https && !url.startsWith('http://')) return undefined;
  const from = https ? 8 : 7;
  let end = url.length;
  for (let i = from; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 47 || c === 63 || c === 35) { end = i; break; } // / ? #
  }
  const auth = url.slice(from, end);
  const at = auth.lastIndexOf('@');
  const hp = at >= 0 ? auth.slice(at + 1) : auth;
  const colon = hp.lastIndexOf(':');
  if (colon > 0 && hp.indexOf(']') < colon) {
    return { host: hp.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(hp.slice(colon + 1)) || (https ? 443 : 80) };
  }
  return { host: hp.replace(/^\[|\]$/g, ''), port: https ? 443 : 80 };
}
