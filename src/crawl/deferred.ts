// Deferred work (docs/politeness.md "Ending a run"): URLs queued for hosts the
// crawl may not contact yet — in backoff after 429/503, paused after a run of
// failures, waiting for a robots.txt retry (RFC 9309 §2.3.1.4) or for a URL's
// own retry, or paused by the operator (until resumed; the pause survives a
// restart). What the live display and /status show as "waiting for", the
// rule by which `--until-idle` ends a run once nothing else is left and
// nothing deferred is due within `--idle-grace` (an operator's pause, never
// due, holds the run for the grace), and the list the summary keeps.
// Deferred URLs stay in the frontier on disk: the next run tries them.
import type { Frontier, HostState } from '../frontier/frontier.js';
import type { HostData } from './candidate.js';

/** Why a host's queued URLs wait. */
export type DeferReason = 'robots-retry' | 'backoff' | 'retry-after' | 'paused' | 'retry' | 'parked' | 'operator-paused';

export interface DeferredHost {
  host: string;
  /** Its URLs still queued. */
  urls: number;
  reason: DeferReason;
  /** When the host is contacted next, ISO 8601 (UTC); null: when the operator resumes it (`operator-paused`). */
  nextAttempt: string | null;
}

export interface DeferredReport {
  /** Hosts with deferred work, and their queued URLs. */
  hosts: number;
  urls: number;
  /** The first `limit` of them, soonest first. */
  list: DeferredHost[];
}

/** What the rule reads of the frontier. */
export type DeferredFrontier = Pick<Frontier<HostData>,
  'queued' | 'pendingHosts' | 'loadsRunning' | 'recovering' | 'readyHosts' | 'activeHosts' | 'nextWake' | 'allHosts' | 'inMemory' | 'host'>;

export interface DeferredComponents {
  frontier: DeferredFrontier;
  /** `--idle-grace`, ms: deferred work due within this long holds the run open. */
  graceMs: number;
  /** Hosts the operator paused (src/crawl/host-state.ts keeps them): a paused host is never due. */
  operatorPaused?(): Iterable<string>;
}

/** Entries a report lists (the count covers them all). */
export const DEFERRED_LISTED = 20;

export class DeferredWork {
  /** Since when only deferred work with an operator's pause among it is left (undefined: not now). */
  private heldSince: number | undefined;
  /** The last host found waiting past the grace on its ordinary delay (`waitsOnItsDelay`). */
  private slowHost: HostState<HostData> | undefined;

  constructor(private readonly c: DeferredComponents) {}

  /**
   * True when URLs are queued and every host that has them waits on its clock
   * (none is due, in flight, loading or waiting for a slot) or on an operator's
   * pause, the earliest clock not due within the grace and none of them the
   * host's ordinary delay (`deferral` names no reason); with a paused host
   * among them, once that has lasted the grace (a pause has no end to wait
   * for, but an operator who just paused a host may resume it soon). Cheap:
   * counters of the frontier and the paused hosts; a walk over the hosts only
   * once every clock is past the grace.
   */
  onlyDeferred(now: number): boolean {
    const f = this.c.frontier;
    const busy = f.queued === 0 || f.recovering || f.pendingHosts > 0 || f.loadsRunning > 0;
    const { held, inSlots } = busy ? { held: -1, inSlots: 0 } : this.heldByOperator();
    // Otherwise a host in flight (DNS answer awaited), loading, or paused for a handoff.
    if (held < 0 || f.readyHosts + inSlots !== f.activeHosts) return this.notOnly();
    const wake = f.nextWake();
    if (wake === undefined ? held === 0 : wake <= now + this.c.graceMs) return this.notOnly();
    if (wake !== undefined && this.waitsOnItsDelay(now)) return this.notOnly();
    if (held === 0) return true;
    this.heldSince ??= now;
    return now - this.heldSince >= this.c.graceMs;
  }

  /**
   * Whether a host waits past the grace on its ordinary delay (a Crawl-delay, k × its response time, the per-IP
   * rest, a handoff gate), which is no reason to defer: the run is crawling slowly, not waiting on a failure, and
   * holds open for it. Only when every waiting host is past the grace (so rarely) does this walk the hosts; the
   * host found is checked first next time.
   */
  private waitsOnItsDelay(now: number): boolean {
    const waits = (h: HostState<HostData>) => h.queued > 0 && !h.inFlight && !h.data.polite.parked
      && Math.max(h.nextAllowed, h.data.polite.nextAllowedAt) > now + this.c.graceMs && deferral(h, now, this.c.frontier) === undefined;
    if (this.slowHost && waits(this.slowHost)) return true;
    this.slowHost = undefined;
    for (const h of this.c.frontier.allHosts()) if (waits(h)) { this.slowHost = h; return true; }
    return false;
  }

  private notOnly(): false {
    this.heldSince = undefined;
    return false;
  }

  /**
   * Hosts with queued URLs that wait for nothing but the operator's resume (`held`), and how many
   * of them still hold an active slot (`inSlots`: a paused host gives its slot up at the end of its turn or load).
   */
  private heldByOperator(): { held: number; inSlots: number } {
    let held = 0;
    let inSlots = 0;
    if (!this.c.operatorPaused) return { held, inSlots };
    for (const name of this.c.operatorPaused()) {
      const h = this.c.frontier.host(name);
      if (!h || !h.paused || h.inFlight || h.queued <= 0 || !h.data.operatorPaused) continue;
      held++;
      if (h.active) inSlots++;
    }
    return { held, inSlots };
  }

  /** The hosts whose queued URLs wait for one of the reasons above, soonest first (a walk over the host records). */
  report(now: number, limit = DEFERRED_LISTED): DeferredReport {
    const found: { h: HostState<HostData>; reason: DeferReason; at: number }[] = [];
    let urls = 0;
    for (const h of this.c.frontier.allHosts()) {
      if (h.queued <= 0 || h.inFlight) continue;
      const why = deferral(h, now, this.c.frontier);
      if (!why) continue;
      urls += h.queued;
      found.push({ h, ...why });
    }
    found.sort((a, b) => a.at - b.at);
    return {
      hosts: found.length,
      urls,
      list: found.slice(0, limit).map(({ h, reason, at }) => ({ host: h.name, urls: h.queued, reason, nextAttempt: Number.isFinite(at) ? new Date(at).toISOString() : null })),
    };
  }
}

/**
 * Why a host's URLs wait, and until when; undefined when they do not (due now,
 * or only the ordinary per-host delay between two requests).
 */
export function deferral(h: HostState<HostData>, now: number, frontier?: Pick<Frontier<HostData>, 'inMemory'>): { reason: DeferReason; at: number } | undefined {
  const p = h.data.polite;
  if (p.parked) return undefined; // its URLs are being recorded as failed, not kept
  if (h.data.operatorPaused) return { reason: 'operator-paused', at: Infinity };
  const at = Math.max(h.nextAllowed, p.nextAllowedAt);
  if (at <= now) return undefined;
  for (const e of h.data.robots.values()) if (e.verdict === 'unreachable' && e.expires > now) return { reason: 'robots-retry', at: Math.max(at, e.expires) };
  if (p.reason === 'pause' || p.pausedUntil > now) return { reason: 'paused', at };
  if (p.reason === 'backoff') return { reason: 'backoff', at };
  if (p.reason === 'retry-after') return { reason: 'retry-after', at };
  if (frontier) for (const q of frontier.inMemory(h)) if (q.notBefore !== undefined && q.notBefore > now) return { reason: 'retry', at };
  return undefined;
}

/** One line for the operator: "2 hosts, 14 URLs (a.example: robots-retry at 12:00:05Z; …)". */
export function describeDeferred(r: DeferredReport, shown = 3): string {
  const some = r.list.slice(0, shown).map((d) => `${d.host}: ${REASON_TEXT[d.reason]}${d.nextAttempt === null ? '' : `, next attempt ${d.nextAttempt}`}`);
  const more = r.hosts > shown ? `; ${r.hosts - shown} more` : '';
  return `${r.hosts} host${r.hosts === 1 ? '' : 's'}, ${r.urls} URL${r.urls === 1 ? '' : 's'} (${some.join('; ')}${more})`;
}

export const REASON_TEXT: Record<DeferReason, string> = {
  'robots-retry': 'robots.txt unreachable, retried',
  backoff: 'backed off after 429/503',
  'retry-after': 'Retry-After',
  paused: 'paused after failures',
  retry: 'URL retries waiting',
  parked: 'parked',
  'operator-paused': 'paused by the operator until resumed (POST /hosts/<host>/resume)',
};
