// The robots.txt part of a host's turn (RFC 9309): one request of it —
// robots.txt itself or one redirect hop (RFC 9309 §2.3.1.2) — is the turn's
// request; the page waits for a later turn. Each hop waits for the clock of the
// host it goes to, as every request does (docs/politeness.md "Redirects"). Part
// of the host turn (src/crawl/host-turn.ts), which gives it its collaborators.
import type { Frontier, HostState, QueuedUrl } from '../frontier/frontier.js';
import type { FetchOutcome } from '../fetch/fetcher.js';
import type { BlockedAddress } from '../fetch/address.js';
import type { RobotsCache, RobotsEntry } from '../robots/cache.js';
import { hostOf } from '../url/normalize.js';
import { retryDelayMs, type HostPoliteness } from '../politeness/host.js';
import type { PolitenessControl, Verdict } from '../politeness/control.js';
import type { SideClocks } from '../politeness/side-clocks.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { CrawlStats } from './stats.js';
import { robotsGivenUp, type HostData } from './candidate.js';
import type { Logger } from '../util/log.js';

/** A host held for one robots.txt redirect hop made on another host's turn (RobotsTurn.holdHopHost). */
interface HopHold {
  state: HostPoliteness;
  minDelayMs: number | null;
  frontierHost: HostState<HostData> | undefined;
  release(nextAllowedAt: number): void;
}

/** How soon a robots.txt hop to a host with a request in flight is tried again. */
const HOP_BUSY_RETRY_MS = 100;

export interface RobotsTurnComponents {
  frontier: Frontier<HostData>;
  robots: RobotsCache;
  politeness: PolitenessControl;
  /** Clocks of hosts outside the frontier that robots.txt redirects lead to. */
  sideClocks: SideClocks;
  stats: CrawlStats;
  metrics: AgentMetrics;
  log: Logger;
  /** Our robots.txt product token (RFC 9309 §2.2.1). */
  token: string;
  writeWarc(out: FetchOutcome & { ok: true }): Promise<unknown>;
  /** robots.txt was decided: its sitemaps (Sitemaps 0.90). */
  discoverSitemaps(origin: string, entry: RobotsEntry): Promise<void>;
  /** The host turn's DNS and per-IP clock check (src/crawl/host-turn.ts `beforeRequest`). */
  beforeRequest(h: HostState<HostData>, q: QueuedUrl, u: URL): string | undefined | null | BlockedAddress;
  refuseAddress(q: QueuedUrl, h: HostState<HostData>, blocked: BlockedAddress): Promise<void>;
  dnsPermanent(out: FetchOutcome, host: string): boolean;
  notePoliteness(h: HostState<HostData>, v: Verdict, url: string): void;
  /** The host's robots.txt retries changed: its saved state follows (src/crawl/host-state.ts). */
  robotsRetriesChanged?(h: HostState<HostData>): void;
}

export class RobotsTurn {
  constructor(private readonly c: RobotsTurnComponents) {}

  /**
   * robots.txt of `origin` is not known: request it (or its next redirect hop) on this turn. 'done': the turn is
   * over (a request was made, or the host waits); 'next': `q` was settled without a request, the turn goes on.
   */
  async step(h: HostState<HostData>, q: QueuedUrl, origin: string): Promise<'done' | 'next'> {
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
      this.c.frontier.unshift(h, q);
      h.data.pendingAcks--;
      this.c.frontier.release(h, Math.max(other, h.data.polite.nextAllowedAt));
      return 'done';
    }
    if (other === 'parked') {
      // Not contacted again in this run: robots.txt is unreachable (RFC 9309 §2.3.1.4).
      this.c.frontier.unshift(h, q);
      h.data.pendingAcks--;
      h.data.robotsHop = undefined;
      await this.robotsDecided(h, origin, await this.c.robots.giveUp(origin));
      this.c.frontier.release(h, Math.max(Date.now(), h.data.polite.nextAllowedAt));
      return 'done';
    }
    const checked = this.c.beforeRequest(h, q, new URL(target));
    if (checked === null) { other?.release(Date.now()); return 'done'; }
    if (typeof checked === 'object' && hop === 0) { other?.release(Date.now()); await this.c.refuseAddress(q, h, checked); return 'next'; }
    // A redirect hop to a refused address is refused again by the fetcher's connect check: robots.txt is then
    // unreachable (RFC 9309 §2.3.1.4), never silently allowed.
    const ip = typeof checked === 'object' ? undefined : checked;
    this.c.frontier.unshift(h, q);
    h.data.pendingAcks--;
    const step = await this.c.robots.step(origin, target, hop);
    const out = step.out;
    if (out.ok) await this.c.writeWarc(out);
    // The exchange shapes the clock of the host it went to (its backoff, pauses and parking too).
    const now = Date.now();
    // The Crawl-delay this robots.txt states holds from this exchange on: the gap after it too (docs/politeness.md).
    if (!other && step.next === undefined) h.data.polite.crawlDelayMs = (step.entry.rules.crawlDelay(this.c.token) ?? 0) * 1000;
    const clock = other ? other.state : h.data.polite;
    const v = this.c.politeness.record(targetHost, clock, out, 0, now, {
      dnsPermanent: this.c.dnsPermanent(out, new URL(target).hostname), minDelayMs: other ? other.minDelayMs : h.data.policy.minDelayMs, robots: true,
    });
    this.c.politeness.releaseIp(ip, v?.ipNextAllowedAt ?? now);
    const next = v && !v.park ? v.nextAllowedAt : now;
    if (other) {
      if (v && other.frontierHost) this.c.notePoliteness(other.frontierHost, v, out.url);
      other.release(next);
    } else if (v) {
      this.c.notePoliteness(h, v, out.url);
    }
    if (step.next !== undefined) {
      h.data.robotsHop = { origin, target: step.next, hop: hop + 1 };
    } else {
      h.data.robotsHop = undefined;
      await this.robotsDecided(h, origin, step.entry);
      // Its retries used up (RFC 9309 §2.3.1.4): the host's URLs are recorded as failed in this turn, without a
      // request, so none waits for the host's clock (nor do those read from disk or queued later: the host turn
      // releases the host at once, src/crawl/host-turn.ts `settlesOnly`).
      if (!other && step.entry.verdict === 'unreachable' && robotsGivenUp(h.data, this.c.politeness.cfg.maxRetries)) return 'next';
    }
    this.c.frontier.release(h, other ? Math.max(now, h.data.polite.nextAllowedAt) : next);
    return 'done';
  }

  /** robots.txt for `origin` is decided: kept, counted, its sitemaps found. */
  private async robotsDecided(h: HostState<HostData>, origin: string, entry: RobotsEntry): Promise<void> {
    this.c.stats.robotsDecided(entry.verdict);
    // An unreachable robots.txt is asked again after the retry delays (then its URLs wait no longer: they fail).
    const before = h.data.robotsFailures;
    if (entry.verdict === 'unreachable') {
      const n = h.data.robotsFailures++;
      if (n < this.c.politeness.cfg.maxRetries) entry.expires = Math.min(entry.expires, Date.now() + retryDelayMs(n, this.c.politeness.cfg));
    } else {
      h.data.robotsFailures = 0;
      h.data.robotsGaveUpUntil = undefined;
    }
    h.data.robots.set(origin, entry);
    if (h.data.robotsFailures !== before) this.c.robotsRetriesChanged?.(h);
    h.data.polite.crawlDelayMs = (entry.rules.crawlDelay(this.c.token) ?? 0) * 1000;
    if (entry.verdict === 'unreachable') this.c.log.warn({ origin }, 'robots.txt unreachable: host disallowed for now');
    else await this.c.discoverSitemaps(origin, entry);
  }

  /**
   * The clock of another host a robots.txt redirect leads to, held for one
   * request: that host's frontier record if we have one (held like a turn of
   * its own, so none of its pages goes out meanwhile), else a side clock. A
   * number when the host is busy or resting (try again then); 'parked' for a
   * host we no longer contact.
   */
  private holdHopHost(name: string, now: number): HopHold | number | 'parked' {
    const fh = this.c.frontier.host(name);
    if (fh) {
      if (fh.data.polite.parked) return 'parked';
      const at = Math.max(fh.nextAllowed, fh.data.polite.nextAllowedAt);
      if (at > now) return at;
      if (!this.c.frontier.hold(fh)) return now + HOP_BUSY_RETRY_MS;
      return {
        state: fh.data.polite, minDelayMs: fh.data.policy.minDelayMs, frontierHost: fh,
        // Never earlier than it was (a hop that sent nothing, e.g. waiting for DNS, leaves its clock as it was).
        release: (t) => this.c.frontier.release(fh, Math.max(t, fh.nextAllowed)),
      };
    }
    const c = this.c.sideClocks.get(name, now);
    if (c.state.parked) return 'parked';
    if (c.state.nextAllowedAt > now) return c.state.nextAllowedAt;
    if (c.busy) return now + HOP_BUSY_RETRY_MS;
    c.busy = true;
    return { state: c.state, minDelayMs: null, frontierHost: undefined, release: () => { c.busy = false; } };
  }

}
