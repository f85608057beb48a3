// The agent's side of adaptive politeness (docs/politeness.md): turns fetch results into
// outcomes for the per-host state machine (./host.ts), keeps the crawl-wide
// counters the summary reports, and owns the optional per-IP clock.
//
// Pure apart from the clock and random source passed in: the agent hands it
// each exchange (pages and robots.txt alike) and acts on the verdict — when
// the host may be contacted next, whether the URL is retried, whether the host
// is parked, when the IP is free again.
import {
  onOutcome, kindOfStatus, kindOfFailure, isTransient, describeHost, IpClock,
  type HostPoliteness, type PolitenessConfig, type Decision, type OutcomeKind,
} from './host.js';
import { parseRetryAfter } from './delay.js';

/** The parts of a fetch result (src/fetch/fetcher.ts FetchOutcome) the decision needs. */
export interface Exchange {
  ok: boolean;
  /** HTTP status (responses only). */
  status?: number;
  /** Fetcher error kind (failures only): dns, connect, timeout, reset, tls, protocol, aborted, other. */
  kind?: string;
  durationMs: number;
  header?(name: string): string | undefined;
}

export interface Verdict extends Decision {
  kind: OutcomeKind;
  /**
   * Set when the URL is finished as failed: a transient failure whose retries
   * are used up, or a permanent one without a response (NXDOMAIN, …). Short
   * and stable, e.g. `http-503`, `timeout`, `reset`, `dns-nxdomain`.
   */
  failure: string | undefined;
  /** Retry-After the server sent, ms (for logs). */
  retryAfterMs: number | undefined;
}

export interface PolitenessCounts {
  /** Responses that raised a host's backoff level (429, 503). */
  backoffs: number;
  /** Hosts paused after a run of failures (a failed probe pauses again). */
  pauses: number;
  /** Requests that ended a pause. */
  probes: number;
  /** Hosts parked (NXDOMAIN, or a failing probe after maxPauses pauses). */
  parkedHosts: number;
  /** URLs re-queued after a transient failure. */
  retries: number;
  /** URLs whose retries ran out (recorded as failed). */
  retriesExhausted: number;
  /** Requests held back because another host on the same IP was busy or resting. */
  ipWaits: number;
}

const PARKED_LISTED = 50;

export interface RecordOptions {
  /** HostResolver.failure(host)?.permanent after a fetch failed with kind 'dns'. */
  dnsPermanent?: boolean;
  /** The host's operator override of the floor (null: the crawl's). */
  minDelayMs?: number | null;
  /** A robots.txt exchange: it shapes the host's clock, but no URL is retried or failed by it (RFC 9309 §2.3.1 decides). */
  robots?: boolean;
}

export class PolitenessControl {
  readonly ipClock: IpClock | undefined;
  readonly counts: PolitenessCounts = { backoffs: 0, pauses: 0, probes: 0, parkedHosts: 0, retries: 0, retriesExhausted: 0, ipWaits: 0 };
  /** URLs finished as failed, by reason (retries used up, permanent failures, parked hosts). */
  readonly failures: Record<string, number> = {};
  private readonly parked: { host: string; reason: string }[] = [];
  /**
   * Called after an exchange that changed what a host's saved state says
   * (docs/storage.md "Host state"): its backoff level, a new Retry-After,
   * backoff or pause deadline, its pause count, or parking. Not called for the
   * ordinary exchange that leaves the host at its floor.
   */
  onChange: ((host: string, st: HostPoliteness) => void) | undefined;

  constructor(readonly cfg: PolitenessConfig, private readonly rand: () => number = Math.random) {
    this.ipClock = cfg.perIp ? new IpClock(Math.max(10, cfg.ipMinDelayMs)) : undefined;
  }

  /**
   * Records one exchange with a host (ended at `now`). `attempt`: retries of
   * this URL already made. `minDelayMs`: the host's operator override, if any.
   * Returns undefined for our own abort (not the host's doing).
   */
  record(host: string, st: HostPoliteness, ex: Exchange, attempt: number, now: number, opts: RecordOptions = {}): Verdict | undefined {
    const kind = ex.ok ? kindOfStatus(ex.status ?? 0) : kindOfFailure(ex.kind ?? 'other', opts.dnsPermanent);
    if (kind === undefined) return undefined;
    const retryAfterMs = ex.ok ? parseRetryAfter(ex.header?.('retry-after'), now) : undefined;
    const cfg = opts.minDelayMs != null && opts.minDelayMs !== this.cfg.minDelayMs ? { ...this.cfg, minDelayMs: opts.minDelayMs } : this.cfg;
    const wasProbe = st.probing;
    const wasParked = st.parked;
    const level = st.backoffLevel;
    const pausedUntil = st.pausedUntil;
    const pauses = st.pauses;
    const d = onOutcome(st, { kind, status: ex.status, responseMs: ex.durationMs, retryAfterMs, attempt }, now, cfg, this.rand);
    if (this.onChange && (st.backoffLevel !== level || st.pausedUntil !== pausedUntil || st.pauses !== pauses || st.parked !== wasParked
      || d.reason === 'retry-after' || d.reason === 'backoff')) this.onChange(host, st);
    if (wasProbe) this.counts.probes++;
    if ((kind === 'too-many' || kind === 'unavailable') && !wasParked) this.counts.backoffs++;
    if (d.paused) this.counts.pauses++;
    if (d.park) {
      this.counts.parkedHosts++;
      if (this.parked.length < PARKED_LISTED) this.parked.push({ host, reason: st.parkReason ?? kind });
    }
    if (opts.robots) return verdict(d, kind, undefined, retryAfterMs, false);
    if (d.retry) this.counts.retries++;
    let failure: string | undefined;
    if (!d.retry) {
      if (isTransient(kind)) {
        failure = ex.ok ? `http-${ex.status}` : ex.kind ?? 'other';
        if (attempt > 0) this.counts.retriesExhausted++;
      } else if (kind === 'dns-permanent') {
        failure = 'dns-nxdomain';
      } else if (!ex.ok) {
        failure = ex.kind ?? 'other';
      }
      if (failure) this.failed(failure);
    }
    return verdict(d, kind, failure, retryAfterMs, d.retry);
  }

  /** Counts a URL finished as failed for a reason decided elsewhere (e.g. `parked`). */
  failed(reason: string): void {
    this.failures[reason] = (this.failures[reason] ?? 0) + 1;
  }

  /** Per-IP gate before a request: `now` when granted (release it later), else when to try again. */
  reserveIp(ip: string | undefined, now: number): number {
    if (!this.ipClock || !ip) return now;
    const t = this.ipClock.reserve(ip, now);
    if (t > now) this.counts.ipWaits++;
    return t;
  }

  releaseIp(ip: string | undefined, nextAllowedAt: number): void {
    if (this.ipClock && ip) this.ipClock.release(ip, nextAllowedAt);
  }

  /** For the closing summary: counters, failures by reason, parked hosts, hosts backed off or paused now. */
  summary(hosts: Iterable<{ name: string; state: HostPoliteness }>, now: number): Record<string, unknown> {
    let backedOff = 0;
    let paused = 0;
    for (const { state } of hosts) {
      if (state.backoffLevel > 0) backedOff++;
      if (state.pausedUntil > now && !state.parked) paused++;
    }
    return {
      ...this.counts,
      failures: { ...this.failures },
      parked: this.parked.slice(),
      backedOffNow: backedOff,
      pausedNow: paused,
      perIp: this.ipClock !== undefined,
    };
  }

  /** One host's state for logs and the API (describeHost with the host name). */
  describe(host: string, st: HostPoliteness, now: number): Record<string, unknown> {
    return { host, ...describeHost(st, now) };
  }
}

/** One object shape for every verdict (no spread on the per-page path). */
function verdict(d: Decision, kind: OutcomeKind, failure: string | undefined, retryAfterMs: number | undefined, retry: boolean): Verdict {
  return {
    nextAllowedAt: d.nextAllowedAt, reason: d.reason, retry, retryAt: retry ? d.retryAt : undefined, park: d.park, paused: d.paused,
    ipNextAllowedAt: d.ipNextAllowedAt, kind, failure, retryAfterMs,
  };
}
