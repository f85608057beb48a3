// Deferred work (docs/politeness.md "Ending a run"): URLs queued for hosts the
// crawl may not contact yet — in backoff after 429/503, paused after a run of
// failures, waiting for a robots.txt retry (RFC 9309 §2.3.1.4) or for a URL's
// own retry. What the live display and /status show as "waiting for", the
// rule by which `--until-idle` ends a run once nothing else is left and
// nothing deferred is due within `--idle-grace`, and the list the summary
// keeps. Deferred URLs stay in the frontier on disk: the next run tries them.
import type { Frontier, HostState } from '../frontier/frontier.js';
import type { HostData } from './candidate.js';

/** Why a host's queued URLs wait. */
export type DeferReason = 'robots-retry' | 'backoff' | 'retry-after' | 'paused' | 'retry' | 'parked';

export interface DeferredHost {
  host: string;
  /** Its URLs still queued. */
  urls: number;
  reason: DeferReason;
  /** When the host is contacted next, ISO 8601 (UTC). */
  nextAttempt: string;
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
  'queued' | 'pendingHosts' | 'loadsRunning' | 'recovering' | 'readyHosts' | 'activeHosts' | 'nextWake' | 'allHosts' | 'inMemory'>;

export interface DeferredComponents {
  frontier: DeferredFrontier;
  /** `--idle-grace`, ms: deferred work due within this long holds the run open. */
  graceMs: number;
}

/** Entries a report lists (the count covers them all). */
export const DEFERRED_LISTED = 20;

export class DeferredWork {
  constructor(private readonly c: DeferredComponents) {}

  /**
   * True when URLs are queued and every host that has them waits on its clock
   * (none is due, in flight, loading or waiting for a slot), the earliest not
   * due within the grace. Cheap: counters of the frontier, no walk over hosts.
   */
  onlyDeferred(now: number): boolean {
    const f = this.c.frontier;
    if (f.queued === 0 || f.recovering || f.pendingHosts > 0 || f.loadsRunning > 0) return false;
    if (f.readyHosts !== f.activeHosts) return false; // a host in flight (DNS answer awaited), loading or paused
    const wake = f.nextWake();
    return wake !== undefined && wake > now + this.c.graceMs;
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
      list: found.slice(0, limit).map(({ h, reason, at }) => ({ host: h.name, urls: h.queued, reason, nextAttempt: new Date(at).toISOString() })),
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
  const some = r.list.slice(0, shown).map((d) => `${d.host}: ${REASON_TEXT[d.reason]}, next attempt ${d.nextAttempt}`);
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
};
