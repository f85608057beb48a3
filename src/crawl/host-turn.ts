// One turn of a host (docs/politeness.md): at most one request to it —
// robots.txt (or one redirect hop of it, RFC 9309 §2.3.1.2) or a page — after
// the checks that may settle a URL without one (handoff gate, parking, seen
// elsewhere, robots rules, budgets, refused addresses), and the politeness
// verdict after it. What comes back from a page is processed by the agent
// (`process`); a URL settled here goes back through `settle`.
//
// Its collaborators come in one `components` object (src/crawl/ownership.ts
// does the same): the frontier, the fetcher, robots, politeness, and narrow
// callbacks for what it needs back from the agent.
import type { Store } from '../store/db.js';
import { seenKey } from '../store/keys.js';
import { seenStateOf } from '../seen/state.js';
import type { Frontier, HostState, QueuedUrl } from '../frontier/frontier.js';
import { DnsError } from '../fetch/dns.js';
import type { Fetcher, FetchFailure, FetchOutcome, FetchResponse } from '../fetch/fetcher.js';
import type { BlockedAddress } from '../fetch/address.js';
import type { RobotsCache, RobotsEntry } from '../robots/cache.js';
import { RobotsTxt } from '../robots/parse.js';
import { RobotsTurn } from './robots-turn.js';
import { hostOf } from '../url/normalize.js';
import type { PolitenessControl, Verdict } from '../politeness/control.js';
import type { SideClocks } from '../politeness/side-clocks.js';
import type { Recrawler } from '../recrawl/recrawler.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { RecentErrors } from '../api/history.js';
import { bump, type CrawlStats } from './stats.js';
import type { FetchRecord } from './records.js';
import { robotsGivenUp, robotsGivenUpUntil, type HostData, type RecentFetch } from './candidate.js';
import type { Logger } from '../util/log.js';
import { unbracketHost } from '../url/host.js';
import { handOnTurn, holdBeforeRequest } from './request-recheck.js';

/** Failure kind and record reason of a URL whose address is internal (src/fetch/address.ts). */
export const BLOCKED = 'blocked-address';

/** Failure kind of a URL the crawl policy's block list refused (docs/scope.md "Block list"). */
const POLICY_BLOCKED = 'blocked-by-policy';

const RECENT_PER_HOST = 10;

export interface HostTurnComponents {
  store: Pick<Store, 'seen'>;
  frontier: Frontier<HostData>;
  fetcher: Fetcher;
  robots: RobotsCache;
  politeness: PolitenessControl;
  /** Clocks of hosts outside the frontier that robots.txt redirects lead to. */
  sideClocks: SideClocks;
  /** `--recrawl`: conditional requests for revisits; undefined for a one-pass crawl. */
  recrawl: Recrawler | undefined;
  stats: CrawlStats;
  metrics: AgentMetrics;
  recentErrors: RecentErrors;
  log: Logger;
  /** Our robots.txt product token (RFC 9309 §2.2.1). */
  token: string;
  /** `--max-pages-per-host` (0: no limit); an operator's per-host budget comes first (docs/scope.md). */
  maxPagesPerHost: number;
  /** In a mesh: URLs may have been settled by another agent (the seen-set is checked before each fetch). */
  inMesh(): boolean;
  /** Whether we own the host (always, without a mesh). */
  owns(host: string): boolean;
  /** The crawl policy's block list (src/crawl/policy-gate.ts): a blocked URL gets no request, robots.txt included. */
  policyBlocks?(url: string, host: string): boolean;
  /** A host we hold but no longer own: hand it on (src/crawl/ownership.ts). */
  handOn(): void;
  /** The handoff gate: 0, or when the host may be contacted (src/crawl/handoff.ts). */
  notBefore(host: string, now: number): number;
  /** False once the agent stops (a fetch it aborted is left queued). */
  running(): boolean;
  /** Completes a URL that made no page (no links): recorded with its outcome. */
  settle(q: QueuedUrl, h: HostState<HostData>, record: FetchRecord): Promise<void>;
  writeWarc(out: FetchResponse): Promise<unknown>;
  /** A fetched page (or a failure politeness gave up on), processed after the host is released. */
  process(q: QueuedUrl, h: HostState<HostData>, out: FetchOutcome, failure?: string): Promise<void>;
  /** Work that goes on after the turn, counted as processing; `fatal`: its failure stops the agent. */
  background(job: () => Promise<unknown>, fatal: boolean): void;
  /** robots.txt was decided: its sitemaps (Sitemaps 0.90). */
  discoverSitemaps(origin: string, entry: RobotsEntry): Promise<void>;
  /** The host's robots.txt retries changed: its saved state follows (src/crawl/host-state.ts). */
  robotsRetriesChanged?(h: HostState<HostData>): void;
}

export class HostTurn {
  private readonly frontier: Frontier<HostData>;
  private readonly fetcher: Fetcher;
  private readonly robots: RobotsCache;
  private readonly politeness: PolitenessControl;
  private readonly sideClocks: SideClocks;
  private readonly recrawl: Recrawler | undefined;
  private readonly stats: CrawlStats;
  private readonly metrics: AgentMetrics;
  private readonly recentErrors: RecentErrors;
  private readonly log: Logger;
  private readonly token: string;
  /** The robots.txt request of a turn (src/crawl/robots-turn.ts). */
  private readonly robotsTurn: RobotsTurn;

  constructor(private readonly c: HostTurnComponents) {
    ({ frontier: this.frontier, fetcher: this.fetcher, robots: this.robots, politeness: this.politeness, sideClocks: this.sideClocks, recrawl: this.recrawl,
      stats: this.stats, metrics: this.metrics, recentErrors: this.recentErrors, log: this.log, token: this.token } = c);
    this.robotsTurn = new RobotsTurn({
      ...c,
      writeWarc: (out) => c.writeWarc(out),
      beforeRequest: (h, q, u) => this.beforeRequest(h, q, u),
      refuseAddress: (q, h, blocked) => this.refuseAddress(q, h, blocked),
      dnsPermanent: (out, host) => this.dnsPermanent(out, host),
      notePoliteness: (h, v, url) => this.notePoliteness(h, v, url),
    });
  }

  /** One turn of a host: at most one request to it (robots.txt or a page). */
  async turn(h: HostState<HostData>): Promise<void> {
    if (!this.c.owns(h.name)) {
      // URLs committed after a handoff (or during a view change): hand them on, do not fetch.
      handOnTurn(this.c, h, Date.now());
      return;
    }
    // Paused by the operator before a restart or by the host's previous owner (src/crawl/host-state.ts).
    if (h.data.operatorPaused && !h.paused) { this.frontier.setPaused(h, true, true); this.frontier.release(h, Date.now()); return; }
    const gated = this.c.notBefore(h.name, Date.now());
    if (gated > 0) { this.frontier.release(h, gated); return; } // the previous owner's handoff is not complete yet
    for (;;) {
      const q = this.takeDue(h);
      if (q === null) return; // only retries waiting: the host was released until the first is due
      // On the host's own clock (this turn may have settled URLs after a request, src/crawl/robots-turn.ts), unless
      // its turns only settle URLs without a request: then URLs read from disk or queued later need not wait for it.
      if (!q) { this.frontier.release(h, this.settlesOnly(h) ? Date.now() : Math.max(Date.now(), h.data.polite.nextAllowedAt)); return; }
      h.data.pendingAcks++;
      if (h.data.polite.parked) {
        // A parked host is not contacted again in this run: its URLs are recorded as failed.
        this.politeness.failed('parked');
        await this.c.settle(q, h, { url: q.url, at: Date.now(), status: 0, failure: 'parked' });
        continue;
      }
      if (this.c.policyBlocks?.(q.url, h.name)) {
        this.stats.reject(POLICY_BLOCKED);
        await this.c.settle(q, h, { url: q.url, at: Date.now(), status: 0, failure: POLICY_BLOCKED });
        continue;
      }
      // In a mesh a previous owner's handoff may have settled this URL after we queued it.
      if (this.c.inMesh() || h.data.checkSeen) {
        const v = await this.c.store.seen.get(seenKey(h.key, q.url));
        if (v && seenStateOf(v) === 'settled-elsewhere') {
          await this.c.settle(q, h, { url: q.url, at: Date.now(), status: 0, failure: 'settled-elsewhere' });
          continue;
        }
      }
      let u: URL;
      try { u = new URL(q.url); } catch { await this.c.settle(q, h, { url: q.url, at: Date.now(), status: 0, failure: 'invalid-url' }); continue; }
      const origin = u.origin;
      let robots = h.data.robots.get(origin);
      const gaveUpUntil = robots ? 0 : robotsGivenUpUntil(h.data, this.politeness.cfg.maxRetries);
      if (gaveUpUntil > Date.now()) {
        // Given up on before a restart or by the host's previous owner, after its retries (src/crawl/host-state.ts):
        // unreachable until then (RFC 9309 §2.3.1.4), as it would have stayed without the restart.
        robots = { rules: RobotsTxt.disallowAll(), verdict: 'unreachable', expires: gaveUpUntil };
        h.data.robots.set(origin, robots);
      }
      if (!robots || robots.expires <= Date.now()) {
        robots = await this.robots.lookup(origin);
        if (robots) h.data.robots.set(origin, robots);
      }
      if (!robots) {
        // Fetching robots.txt (or one redirect hop of it) is this turn's request (src/crawl/robots-turn.ts).
        if (await this.robotsTurn.step(h, q, origin) === 'next') continue;
        return;
      }
      if (robots.rules.crawlDelay(this.token) !== undefined) h.data.polite.crawlDelayMs = robots.rules.crawlDelay(this.token)! * 1000;
      if (robots.verdict === 'unreachable' && !robotsGivenUp(h.data, this.politeness.cfg.maxRetries) && !h.data.polite.parked) {
        // RFC 9309 §2.3.1.4: nothing may be fetched while robots.txt is unreachable; the URLs wait for it (a transient
        // failure, retried like one: src/politeness/host.ts) rather than failing at once.
        this.waitUntil(h, q, Math.max(robots.expires, h.data.polite.nextAllowedAt));
        return;
      }
      if (!robots.rules.isAllowed(q.url, this.token)) {
        this.stats.robotsBlocked++;
        const reason = robots.verdict === 'unreachable' ? 'robots-unreachable' : 'robots';
        this.stats.reject(reason);
        await this.c.settle(q, h, { url: q.url, at: Date.now(), status: 0, failure: reason });
        continue; // no request was made: the host's turn goes on
      }
      // An operator's budget for the host (PUT /hosts/:host/policy), else --max-pages-per-host.
      const budget = h.data.policy.pageBudget ?? (this.c.maxPagesPerHost > 0 ? this.c.maxPagesPerHost : null);
      if (budget !== null && !q.attempt && h.data.budgetUsed >= budget) {
        this.stats.reject('host-page-budget');
        await this.c.settle(q, h, { url: q.url, at: Date.now(), status: 0, failure: 'host-page-budget' });
        continue;
      }
      const ip = this.beforeRequest(h, q, u);
      if (ip === null) return;
      if (typeof ip === 'object') { await this.refuseAddress(q, h, ip); continue; }
      // Revisits are conditional GETs (If-None-Match / If-Modified-Since from the stored state).
      const conditional = this.recrawl && q.kind === 'page' ? await this.recrawl.prepare(q, seenKey(h.key, q.url)) : undefined;
      if (!q.attempt) h.data.budgetUsed++;
      const out = await this.fetcher.fetch(q.url, conditional);
      if (!this.c.running() && !out.ok) {
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
        this.waitUntil(h, q, v.nextAllowedAt);
        return;
      }
      // The host's clock starts now; processing the page need not hold the host (or the fetch slot).
      // A parked host is released at once: its next turns record its queue as failed.
      this.frontier.release(h, v && !v.park ? v.nextAllowedAt : now);
      if (out.ok) this.stats.recordResponse(out.status, out.rawBytes);
      this.c.background(() => this.c.process(q, h, out, v?.failure), true);
      return;
    }
  }

  /** Puts the turn's URL back at the head of its host (its acknowledgement no longer pending) and the host back at `at`. */
  private waitUntil(h: HostState<HostData>, q: QueuedUrl, at: number): void {
    this.frontier.unshift(h, q);
    h.data.pendingAcks--;
    this.frontier.release(h, at);
  }

  /**
   * Whether the host's turns record its URLs as failed without a request: parked, or its robots.txt given up on
   * after its retries (RFC 9309 §2.3.1.4: unreachable, so nothing is allowed). No request may wait on such a
   * turn, and a URL that does need one (another origin's robots.txt, or the verdict expired) waits for the
   * host's clock at the last check before it (`beforeRequest`).
   */
  private settlesOnly(h: HostState<HostData>): boolean {
    return h.data.polite.parked || robotsGivenUp(h.data, this.politeness.cfg.maxRetries);
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
    // The ring or the handoff gate may have changed since the turn began (src/crawl/request-recheck.ts).
    const held = holdBeforeRequest(this.c, h, q, Date.now());
    if (held) { this.log.info({ host: h.name, url: q.url, why: held }, 'request held back: the host changed hands or waits for a handoff since its turn began'); return null; }
    // The host's own clock holds every request. A turn normally begins on it; a host whose turns only settle URLs
    // (`settlesOnly`) is handed out before it, and a URL of such a turn that needs a request waits here.
    const clock = h.data.polite.nextAllowedAt;
    if (clock > Date.now()) { this.waitUntil(h, q, clock); return null; }
    const port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
    const host = unbracketHost(u.hostname);
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
    if (t > now) { this.waitUntil(h, q, t); return null; }
    return this.politeness.ipClock ? known.address : undefined;
  }

  /**
   * Why a URL's host is refused, when that is known without a query: an IP
   * literal, localhost, or a cached DNS answer that is internal
   * (src/fetch/address.ts). A `--resolve` rule's target is never refused.
   */
  blockedTarget(url: string): BlockedAddress | null {
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
    noteRecent(h, { url: q.url, status: out.ok ? out.status : null, at, durationMs: out.durationMs, error: kind });
    if (!out.ok) { this.metrics.fetchFailed(out.kind, out.durationMs); return; }
    // A failure is fatal and reported by warcWrite; the URL is queued for its retry either way.
    this.c.background(() => this.c.writeWarc(out), false);
  }

  /** Warms the DNS cache for a host that just entered the ready heap (at most every few seconds per host). */
  prefetchDns(h: HostState<HostData>): void {
    const q = this.frontier.inMemory(h).next().value as QueuedUrl | undefined;
    if (!q) return;
    const now = Date.now();
    if (h.data.dnsCheckAt > now) return;
    h.data.dnsCheckAt = now + 5000;
    const hp = hostPort(q.url);
    if (hp) this.fetcher.resolver.prefetch(hp.host, hp.port);
  }

  /** A URL that failed for good: counted (stats, host, metrics, recent errors) and recorded with its reason. */
  async recordFailure(q: QueuedUrl, h: HostState<HostData>, out: FetchFailure, failure?: string): Promise<void> {
    const at = out.startedAt.getTime();
    this.stats.failed(out.kind, out.durationMs);
    bump(h.data.errors, out.kind);
    // Politeness never sees a refused address (nothing reached the host), so it is counted here.
    if (out.kind === BLOCKED) this.politeness.failed(BLOCKED);
    noteRecent(h, { url: q.url, status: null, at, durationMs: out.durationMs, error: out.kind });
    this.recentErrors.record(out.kind, out.message, q.url, h.name);
    this.log.debug({ url: q.url, kind: out.kind, err: out.message }, 'fetch failed');
    await this.c.settle(q, h, { url: q.url, at, status: 0, failure: failure ?? out.kind });
  }
}

/** Keeps the host's last few fetches for the API's host view. */
export function noteRecent(h: HostState<HostData>, f: RecentFetch): void {
  h.data.recent.push(f);
  if (h.data.recent.length > RECENT_PER_HOST) h.data.recent.shift();
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
    return { host: unbracketHost(hp.slice(0, colon)), port: Number(hp.slice(colon + 1)) || (https ? 443 : 80) };
  }
  return { host: unbracketHost(hp), port: https ? 443 : 80 };
}
