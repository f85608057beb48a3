// The agent seen through its HTTP API (src/api/backend.ts): this adapter reads
// the agent's state and turns API calls into agent actions. It holds no state
// of its own.
import type { PolicyReport, AdaptivePoliteness, ApiBackend, StatusReport, HostReport, UrlReport, SeedResult, HostControlResult, HostPolicy, TopHost, RecentError, ThroughputPoint, MemberReport, AgentState, RobotsSummary, ZoneReport, WaitingReport } from '../api/backend.js';
import { ApiError } from '../api/backend.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { ThroughputHistory, RecentErrors } from '../api/history.js';
import type { Frontier, HostState } from '../frontier/frontier.js';
import type { Store } from '../store/db.js';
import type { CrawlStats } from './stats.js';
import type { HostData } from './candidate.js';
import { hostKey, seenKey, prefixEnd } from '../store/keys.js';
import { seenStateOf } from '../seen/state.js';
import { normalizeUrl, hostOf } from '../url/normalize.js';
import { decodeFetchRecord } from './records.js';
import { describeHost, unpark } from '../politeness/host.js';
import { VERSION } from '../version.js';
import type { PolicyGate } from './policy-gate.js';

/** What the adapter needs from an agent. */
export interface AgentView {
  readonly id: string;
  readonly stats: CrawlStats;
  readonly metrics: AgentMetrics;
  readonly history: ThroughputHistory;
  readonly recentErrors: RecentErrors;
  readonly frontier: Frontier<HostData>;
  /** Operator overrides are kept across restarts and handoffs (src/crawl/host-state.ts). */
  readonly hostStates?: { save(host: string, d: HostData): void };
  readonly store: Store;
  readonly robotsToken: string;
  readonly minDelayMs: number;
  readonly capacity: number;
  /** The render tier (src/crawl/render-step.ts). */
  readonly render?: { status(): StatusReport['render'] };
  state(): AgentState;
  inFlightCount(): number;
  /** Members of the mesh as this agent sees them (itself only when alone). */
  members(): MemberReport[];
  /** Per-zone view in a mesh (docs/mesh.md "Zones"); empty when alone. */
  zones?(): ZoneReport[];
  crawlId(): string | null;
  /** Owner of a host by this agent's view (its own id when alone). */
  ownerOf(host: string): string;
  urlsSent(): number;
  urlsReceived(): number;
  /** Seeds URLs; returns the per-URL verdicts and where they were routed. */
  seedUrls(urls: string[]): Promise<SeedResult>;
  leave(): Promise<void>;
  /** The crawl policy (src/crawl/policy-gate.ts). */
  readonly policy: Pick<PolicyGate, 'report' | 'block' | 'unblock'>;
  /** Hosts in backoff or awaiting a robots.txt retry (src/crawl/deferred.ts). */
  waitingFor(): WaitingReport;
}

export class AgentBackend implements ApiBackend {
  constructor(private readonly a: AgentView) {}

  get metrics(): AgentMetrics { return this.a.metrics; }

  policy(): PolicyReport {
    return this.a.policy.report(this.a.members());
  }

  async block(targets: string[], reason: string): Promise<PolicyReport> {
    try { await this.a.policy.block(targets, reason); } catch (err) { throw new ApiError(400, (err as Error).message); }
    return this.policy();
  }

  async unblock(targets: string[]): Promise<PolicyReport> {
    try { await this.a.policy.unblock(targets); } catch (err) { throw new ApiError(400, (err as Error).message); }
    return this.policy();
  }

  status(): StatusReport {
    const s = this.a.stats;
    const now = Date.now();
    return {
      agent: {
        id: this.a.id,
        state: this.a.state(),
        version: VERSION,
        startedAt: s.startedAt,
        uptimeMs: now - s.startedAt,
        capacity: this.a.capacity,
        counters: {
          fetched: s.fetched,
          queued: this.a.frontier.queued,
          inFlight: this.a.inFlightCount(),
          bytes: s.bytes,
          pagesPerSecond: this.a.history.rate(10_000, now, s.fetched),
          errors: { ...s.errors },
          urlsSent: this.a.urlsSent(),
          urlsReceived: this.a.urlsReceived(),
        },
        waiting: this.a.waitingFor(),
      },
      mesh: { crawlId: this.a.crawlId(), members: this.a.members(), ...zonesOf(this.a) },
      ...(this.a.render?.status() ? { render: this.a.render.status() } : {}),
    };
  }

  async host(name: string): Promise<HostReport | null> {
    const owner = this.a.ownerOf(name);
    const local = owner === this.a.id;
    const h = this.a.frontier.host(name);
    const depth = await this.queueDepth(name);
    if (!h && depth === 0 && !local) {
      return { host: name, owner, local, robots: null, politeness: null, queue: { depth: 0, inFlight: false }, lastFetches: [], errors: {} };
    }
    if (!h && depth === 0) return null;
    return {
      host: name,
      owner,
      local,
      robots: h ? this.robotsSummary(h) : null,
      politeness: h ? {
        nextAllowedAt: h.nextAllowed || null,
        delayMs: Math.max(h.data.policy.minDelayMs ?? this.a.minDelayMs, h.data.polite.crawlDelayMs),
        minDelayMs: h.data.policy.minDelayMs ?? this.a.minDelayMs,
        crawlDelayMs: h.data.polite.crawlDelayMs,
        lastResponseMs: Math.round(h.data.polite.lastResponseMs * 10) / 10,
        errorRun: h.data.polite.errorRun,
        paused: h.paused,
        pageBudget: h.data.policy.pageBudget,
        pages: h.data.pages,
        adaptive: describeHost(h.data.polite, Date.now()) as unknown as AdaptivePoliteness,
      } : null,
      queue: { depth, inFlight: h?.inFlight ?? false },
      lastFetches: h ? [...h.data.recent].reverse() : [],
      errors: h ? { ...h.data.errors } : {},
    };
  }

  async url(raw: string): Promise<UrlReport | null> {
    const normalized = normalizeUrl(raw);
    if (!normalized) return null;
    const host = hostOf(normalized);
    const owner = this.a.ownerOf(host);
    const key = seenKey(hostKey(host), normalized);
    const seenValue = await this.a.store.seen.get(key);
    const record = decodeFetchRecord(await this.a.store.fetches.get(key));
    const state = seenValue ? seenStateOf(seenValue) : 'unseen';
    return {
      url: raw,
      normalized,
      host,
      owner,
      local: owner === this.a.id,
      seen: seenValue !== undefined,
      queued: state === 'queued',
      state,
      fetched: record && !record.failure ? {
        at: record.at,
        status: record.status,
        digest: record.digest ?? null,
        simhash: record.simhash ?? null,
        warc: record.warc ?? null,
      } : null,
    };
  }

  seed(urls: string[]): Promise<SeedResult> { return this.a.seedUrls(urls); }

  async pauseHost(name: string): Promise<HostControlResult> {
    const h = this.knownHost(name);
    h.data.operatorPaused = true;
    this.a.hostStates?.save(h.name, h.data);
    this.a.frontier.setPaused(h, true, true); // for as long as the operator wants: its active slot goes to other hosts
    return this.control(h);
  }

  async resumeHost(name: string): Promise<HostControlResult> {
    const h = this.knownHost(name);
    // Resuming also un-parks a host the politeness state gave up on (an operator's decision).
    if (h.data.polite.parked) unpark(h.data.polite, Date.now());
    h.data.operatorPaused = false;
    this.a.hostStates?.save(h.name, h.data);
    this.a.frontier.setPaused(h, false);
    return this.control(h);
  }

  async setHostPolicy(name: string, policy: HostPolicy): Promise<HostControlResult> {
    const h = this.knownHost(name);
    if (policy.minDelayMs !== undefined) h.data.policy.minDelayMs = policy.minDelayMs;
    if (policy.pageBudget !== undefined) h.data.policy.pageBudget = policy.pageBudget;
    this.a.hostStates?.save(h.name, h.data);
    return this.control(h);
  }

  leave(): Promise<void> { return this.a.leave(); }

  throughputHistory(): ThroughputPoint[] { return this.a.history.points(); }

  topHosts(n: number): TopHost[] {
    const out: TopHost[] = [];
    for (const h of this.a.frontier.allHosts()) {
      let errors = 0;
      for (const v of Object.values(h.data.errors)) errors += v;
      out.push({ host: h.name, fetched: h.data.pages, queued: Math.max(0, h.queued), errors, paused: h.paused });
    }
    return out.sort((x, y) => y.fetched - x.fetched).slice(0, n);
  }

  recentErrors(n: number): RecentError[] { return this.a.recentErrors.latest(n); }

  private knownHost(name: string): HostState<HostData> {
    const owner = this.a.ownerOf(name);
    if (owner !== this.a.id) throw new ApiError(409, `host ${name} is owned by agent ${owner}; ask that agent`);
    const h = this.a.frontier.host(name);
    if (!h) throw new ApiError(404, `no URL of host ${name} is known to this agent`);
    return h;
  }

  private control(h: HostState<HostData>): HostControlResult {
    return { host: h.name, owner: this.a.id, paused: h.paused, policy: { ...h.data.policy } };
  }

  private async queueDepth(name: string): Promise<number> {
    const hk = hostKey(name);
    let n = 0;
    // Bounded count: an operator wants a figure, not a full scan of a huge queue.
    for await (const _ of this.a.store.frontier.keys({ gte: hk, lt: prefixEnd(hk), limit: 100_000 })) n++;
    return n;
  }

  private robotsSummary(h: HostState<HostData>): RobotsSummary | null {
    const entry = [...h.data.robots.values()][0];
    if (!entry) return { state: 'unknown', status: null, fetchedAt: null, expiresAt: null, group: null, crawlDelaySeconds: null, rules: [], ruleCount: 0, sitemaps: [] };
    const groups = entry.rules.toJSON().groups;
    const token = this.a.robotsToken.toLowerCase();
    // RFC 9309 §2.2.1: the groups naming our token, merged; else the `*` groups.
    const mine = groups.filter((g) => g.agents.includes(token));
    const chosen = mine.length ? mine : groups.filter((g) => g.agents.includes('*'));
    const rules = chosen.flatMap((g) => g.rules).map(([allow, norm, , written]) => ({ allow: allow === 1, pattern: written ?? norm }));
    return {
      state: entry.verdict,
      status: entry.status ?? null,
      fetchedAt: null,
      expiresAt: entry.expires,
      group: mine.length ? token : chosen.length ? '*' : null,
      crawlDelaySeconds: entry.rules.crawlDelay(token) ?? null,
      rules: rules.slice(0, 200),
      ruleCount: rules.length,
      sitemaps: [...entry.rules.sitemaps],
    };
  }
}

/** The per-zone view for /status, when the agent is in a mesh. */
function zonesOf(a: { zones?(): ZoneReport[] }): { zones?: ZoneReport[] } {
  const zones = a.zones?.() ?? [];
  return zones.length ? { zones } : {};
}
