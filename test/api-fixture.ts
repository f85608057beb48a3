// An in-memory ApiBackend for the HTTP layer's tests: the real backend is the agent;
// this one holds a small made-up crawl (three members, a few hosts and URLs) in
// plain maps, uses the real URL normaliser, the real metrics and the real history
// rings, and records what the server asked it to do.
import { createMetrics, type AgentMetrics } from '../src/api/metrics.js';
import { RecentErrors, ThroughputHistory } from '../src/api/history.js';
import {
  ApiError,
  type ApiBackend, type HostControlResult, type HostPolicy, type HostReport, type MemberReport, type RecentError,
  type SeedResult, type StatusReport, type ThroughputPoint, type TopHost, type UrlReport,
} from '../src/api/backend.js';
import { hostOf, normalizeUrl } from '../src/url/normalize.js';
import { xxh64 } from '../src/hash/xxhash.js';

export const SELF = '12D3KooWSelfAgentAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
export const PEER_B = '12D3KooWPeerBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
export const PEER_C = '12D3KooWPeerCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';
export const FETCHED_URL = 'http://www.example.com/articles/one.html';
export const WARC_FILE = 'ubicrawl-20250101000000000-00001-a1b2c3.warc.gz';

export class MemoryBackend implements ApiBackend {
  readonly metrics: AgentMetrics;
  readonly history = new ThroughputHistory(300);
  readonly errors = new RecentErrors(100);
  readonly startedAt = Date.now() - 3_723_000;
  state: StatusReport['agent']['state'] = 'active';
  fetched = 1000;
  leaveCalls = 0;
  seeded: string[] = [];
  readonly urls = new Map<string, UrlReport>();
  readonly hosts = new Map<string, HostReport>();
  private ticker: NodeJS.Timeout | undefined;
  private sampler: NodeJS.Timeout | undefined;
  /** Makes the next call of `host()` throw this. */
  failNext: Error | undefined;

  constructor() {
    this.metrics = createMetrics();
    this.metrics.setAgentInfo(SELF, '0.1.0');
    this.metrics.pageFetched(200, 5120, 42);
    this.metrics.pageFetched(404, 300, 12);
    this.metrics.pageFetched(301, 0, 8);
    this.metrics.fetchFailed('timeout', 30_000);
    this.metrics.fetchFailed('dns');
    this.metrics.urlRejected('robots', 3);
    // A label value with every character the format must escape.
    this.metrics.urlRejected('odd "reason" \\ with\nnewline');
    this.metrics.robotsFetched('parsed');
    this.metrics.dedupHit('exact');
    this.metrics.dedupHit('near');
    this.metrics.urlsForwarded(PEER_B, 12);
    this.metrics.urlsReceived(PEER_C, 7, 1);
    this.metrics.setOutboxDepth(PEER_B, 3);
    this.metrics.setMembers({ active: 3 });
    this.metrics.beforeScrape(() => {
      this.metrics.setFrontier(250, 12, 4);
      this.metrics.setInFlight(2);
      this.metrics.setRobotsCacheAge(3600);
    });
    const t0 = Date.now() - 60_000;
    for (let i = 0; i <= 60; i++) this.history.sample(t0 + i * 1000, 400 + i * 10);
    this.errors.record('timeout', 'no response within 30000 ms', 'http://slow.example.org/x', 'slow.example.org');
    this.errors.record('dns', 'ENOTFOUND nowhere.invalid', null, 'nowhere.invalid');
    this.urls.set(FETCHED_URL, {
      url: FETCHED_URL, normalized: FETCHED_URL, host: 'www.example.com', owner: SELF, local: true, seen: true, queued: false, state: 'fetched',
      fetched: { at: Date.parse('2025-01-01T00:00:05Z'), status: 200, digest: 'sha1:2UVA5XFQGJ2QH6MVAPPG7WCAOJ7GNGKN', simhash: '0f1e2d3c4b5a6978', warc: { filename: WARC_FILE, offset: 12345, length: 6789 } },
    });
    this.hosts.set('www.example.com', {
      host: 'www.example.com', owner: SELF, local: true,
      robots: {
        state: 'parsed', status: 200, fetchedAt: Date.now() - 3_600_000, expiresAt: Date.now() + 20 * 3_600_000, group: '*', crawlDelaySeconds: 2,
        rules: [{ allow: false, pattern: '/private/' }, { allow: true, pattern: '/private/open$' }], ruleCount: 2, sitemaps: ['http://www.example.com/sitemap.xml'],
      },
      politeness: { nextAllowedAt: Date.now() + 1500, delayMs: 2000, minDelayMs: 1000, crawlDelayMs: 2000, lastResponseMs: 42, errorRun: 0, paused: false, pageBudget: null, pages: 31 },
      queue: { depth: 17, inFlight: false },
      lastFetches: [{ url: FETCHED_URL, status: 200, at: Date.now() - 5000, durationMs: 42, error: null }],
      errors: { timeout: 1 },
    });
  }

  ownerOf(host: string): string {
    const members = [SELF, PEER_B, PEER_C];
    return members[Number(xxh64(host) % 3n)];
  }

  /** Simulates crawling: `perTick` more pages every `ms`, and a throughput sample every second. */
  startTicking(ms = 100, perTick = 3): void {
    this.ticker = setInterval(() => { this.fetched += perTick; }, ms);
    this.sampler = setInterval(() => this.history.sample(Date.now(), this.fetched), 1000);
  }

  stopTicking(): void {
    clearInterval(this.ticker);
    clearInterval(this.sampler);
  }

  status(): StatusReport {
    const now = Date.now();
    const member = (id: string, share: number, lastSeen: number | null): MemberReport => ({
      id, self: id === SELF, addrs: [`/ip4/127.0.0.1/tcp/${4000 + share * 100}/p2p/${id}`], state: 'active', capacity: 1, share,
      counters: { fetched: id === SELF ? this.fetched : 500, queued: 100, sent: 12, received: 7 }, lastSeen,
    });
    return {
      agent: {
        id: SELF, state: this.state, version: '0.1.0', startedAt: this.startedAt, uptimeMs: now - this.startedAt, capacity: 1,
        counters: {
          fetched: this.fetched, queued: 250, inFlight: 2, bytes: 123_456_789,
          pagesPerSecond: this.history.rate(10_000, now, this.fetched), errors: { timeout: 1, dns: 1 }, urlsSent: 12, urlsReceived: 7,
        },
      },
      mesh: { crawlId: 'test-crawl', members: [member(SELF, 0.34, null), member(PEER_B, 0.33, now - 800), member(PEER_C, 0.33, now - 1200)] },
      render: { mode: 'auto', queue: 17, active: 2, renders: { rendered: 40, timeout: 3, budget: 1, crashed: 2, unavailable: 0 }, meanRenderMs: 1450, browserRssBytes: 300 * 1024 * 1024 },
    };
  }

  async host(name: string): Promise<HostReport | null> {
    if (this.failNext) { const e = this.failNext; this.failNext = undefined; throw e; }
    return this.hosts.get(name) ?? null;
  }

  async url(url: string): Promise<UrlReport | null> {
    const n = normalizeUrl(url);
    if (!n) return null;
    const known = this.urls.get(n);
    if (known) return { ...known, url };
    const host = hostOf(n);
    const owner = this.ownerOf(host);
    return { url, normalized: n, host, owner, local: owner === SELF, seen: false, queued: false, state: owner === SELF ? 'unseen' : 'unknown', fetched: null };
  }

  async seed(urls: string[]): Promise<SeedResult> {
    const rejected: SeedResult['rejected'] = [];
    const routed: Record<string, number> = {};
    let accepted = 0;
    for (const u of urls) {
      const n = normalizeUrl(u);
      if (!n || !/^https?:/.test(n)) { rejected.push({ url: u, reason: 'invalid-url' }); continue; }
      accepted++;
      this.seeded.push(n);
      const owner = this.ownerOf(hostOf(n));
      routed[owner] = (routed[owner] ?? 0) + 1;
    }
    return { accepted, rejected, routed };
  }

  private control(name: string, f: (h: HostReport) => void): HostControlResult {
    const h = this.hosts.get(name);
    if (!h || !h.politeness) throw new ApiError(409, `host ${name} is owned by ${this.ownerOf(name)}, not by this agent`);
    f(h);
    const p = h.politeness;
    return { host: name, owner: h.owner, paused: p.paused, policy: { minDelayMs: p.minDelayMs === 1000 ? null : p.minDelayMs, pageBudget: p.pageBudget } };
  }

  async pauseHost(name: string): Promise<HostControlResult> {
    return this.control(name, (h) => { h.politeness!.paused = true; });
  }

  async resumeHost(name: string): Promise<HostControlResult> {
    return this.control(name, (h) => { h.politeness!.paused = false; });
  }

  async setHostPolicy(name: string, policy: HostPolicy): Promise<HostControlResult> {
    return this.control(name, (h) => {
      const p = h.politeness!;
      if (policy.minDelayMs !== undefined) p.minDelayMs = policy.minDelayMs ?? 1000;
      if (policy.pageBudget !== undefined) p.pageBudget = policy.pageBudget;
    });
  }

  async leave(): Promise<void> {
    this.leaveCalls++;
    this.state = 'leaving';
  }

  throughputHistory(): ThroughputPoint[] {
    return this.history.points();
  }

  topHosts(n: number): TopHost[] {
    const all: TopHost[] = [
      { host: 'www.example.com', fetched: 31, queued: 17, errors: 1, paused: this.hosts.get('www.example.com')?.politeness?.paused ?? false },
      { host: 'docs.example.org', fetched: 20, queued: 3, errors: 0, paused: false },
      { host: 'slow.example.org', fetched: 2, queued: 40, errors: 5, paused: false },
    ];
    return all.slice(0, n);
  }

  recentErrors(n: number): RecentError[] {
    return this.errors.latest(n);
  }
}
