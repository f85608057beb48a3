// Adaptive per-host politeness (docs/politeness.md).
//
// A pure state machine over plain data: the agent keeps one HostPoliteness per
// host, reports every exchange with `onOutcome` (robots.txt fetches included),
// and gets back when the host may be contacted next, whether the URL should be
// retried, and whether the host is to be parked. No I/O; the clock and the
// random source are passed in.
//
// The rules, in the order they are applied:
//   - floor: next allowed = end of the exchange + max(min delay, Crawl-delay,
//     k × response time) — Mercator's rule (Heydon & Najork 1999, k = 10),
//     computed by ./delay.ts;
//   - Retry-After (RFC 9110 §10.2.3) on any response is a floor of its own,
//     honoured exactly (never jittered) up to retryAfterMaxMs;
//   - 429 (RFC 6585 §4; RFC 9110 does not define it) and 503 (RFC 9110 §15.6.4)
//     raise the host's backoff level: delay base × 2^(level−1), capped, with
//     jitter so that many agents backing off one host do not return in step;
//     every clean response (2xx, 3xx, 4xx other than 429) lowers the level by
//     one, so the delay decays back to the floor;
//   - a run of `errorRunToPause` failures (5xx, timeouts, network errors)
//     pauses the host (pauseBaseMs, doubling per pause in a row, capped); the
//     first request after a pause is a probe: if it fails the host is paused
//     again at once (longer), if it is clean the run is forgotten;
//   - a probe failing after `maxPauses` pauses in a row parks the host: it is
//     not contacted again in this run and its queued URLs are recorded as
//     failed. A permanent DNS failure (NXDOMAIN, NODATA) parks it at once.
import { nextAllowedAt as floorAt } from './delay.js';
import { DEFAULT_POLITENESS } from '../config.js';

export type OutcomeKind =
  | 'ok' | 'redirect' | 'client-error'
  | 'too-many' | 'unavailable' | 'server-error'
  | 'timeout' | 'network' | 'dns-permanent';

export interface Outcome {
  kind: OutcomeKind;
  status?: number;
  /** Duration of the exchange (or of the attempt, for a failure), ms. */
  responseMs: number;
  /** Parsed Retry-After (see parseRetryAfter in ./delay.ts), ms from now. */
  retryAfterMs?: number;
  /** Retries of this URL already made (0 on its first fetch). */
  attempt?: number;
}

export interface PolitenessConfig {
  /** Per-host floor between two requests, ms. */
  minDelayMs: number;
  /** Mercator's k: the next request waits k × the last response time. */
  delayFactor: number;
  /** Cap on an honoured Crawl-delay, ms (as in ./delay.ts). */
  maxDelayMs: number;
  /** Cap on an honoured Retry-After, ms (a server asking for a day gets this). */
  retryAfterMaxMs: number;
  /** Backoff after the first 429/503, ms; doubles per level. */
  backoffBaseMs: number;
  /** Ceiling of the backoff, ms. */
  backoffMaxMs: number;
  /** Share of the backoff randomised away: the delay is uniform in [d × (1 − jitter), d]. */
  backoffJitter: number;
  /** Failures in a row (5xx, timeout, network) that pause a host. */
  errorRunToPause: number;
  /** First pause, ms; doubles for each pause in a row. */
  pauseBaseMs: number;
  pauseMaxMs: number;
  /** Pauses in a row after which a failing probe parks the host. */
  maxPauses: number;
  /** Retries of one URL after transient failures. */
  maxRetries: number;
  /** Delay before a URL's first retry, ms; doubles per retry (jittered), capped at backoffMaxMs. */
  retryBaseMs: number;
  /** Per-IP limit on (hosts that share an address share an IpClock). */
  perIp: boolean;
  /** Floor between two requests to one IP, ms (k × response time applies as well). */
  ipMinDelayMs: number;
}

// Defaults: src/config.ts (one place for every default).
export { DEFAULT_POLITENESS };

/** Builds the politeness config from an agent config's top-level delays plus a `politeness` section. */
export function politenessConfig(c: { minDelayMs?: number; delayFactor?: number; maxDelayMs?: number; politeness?: Partial<PolitenessConfig> } = {}): PolitenessConfig {
  const out: PolitenessConfig = { ...DEFAULT_POLITENESS };
  if (c.minDelayMs !== undefined) { out.minDelayMs = c.minDelayMs; out.ipMinDelayMs = c.minDelayMs; }
  if (c.delayFactor !== undefined) out.delayFactor = c.delayFactor;
  if (c.maxDelayMs !== undefined) out.maxDelayMs = c.maxDelayMs;
  if (c.politeness) for (const [k, v] of Object.entries(c.politeness)) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  return out;
}

/** What decided a host's next allowed time (for logs, the summary and the API). */
export type DelayReason = 'floor' | 'crawl-delay' | 'response-time' | 'retry-after' | 'backoff' | 'pause' | 'parked';

export interface HostPoliteness {
  /** 0: no backoff; n: the last 429/503 responses put us n doublings up. */
  backoffLevel: number;
  /** Failures (5xx, timeout, network) since the last clean response or pause. */
  errorRun: number;
  /** Epoch ms the current pause ends (0: never paused). */
  pausedUntil: number;
  /** Pauses in a row without a clean response in between. */
  pauses: number;
  /** The next request ends a pause; its outcome decides. */
  probing: boolean;
  parked: boolean;
  parkReason: string | undefined;
  lastResponseMs: number;
  /** robots.txt Crawl-delay for our group, ms (set by the agent; 0 = none). */
  crawlDelayMs: number;
  /** Result of the last decision, epoch ms (Infinity once parked). */
  nextAllowedAt: number;
  reason: DelayReason;
  // Counters, for visibility.
  requests: number;
  failures: number;
  tooMany: number;
  unavailable: number;
  pausesTotal: number;
}

export function newHostPoliteness(): HostPoliteness {
  return {
    backoffLevel: 0, errorRun: 0, pausedUntil: 0, pauses: 0, probing: false, parked: false, parkReason: undefined,
    lastResponseMs: 0, crawlDelayMs: 0, nextAllowedAt: 0, reason: 'floor',
    requests: 0, failures: 0, tooMany: 0, unavailable: 0, pausesTotal: 0,
  };
}

export interface Decision {
  /** Earliest next request to this host, epoch ms; Infinity when parked. */
  nextAllowedAt: number;
  /** What set nextAllowedAt. */
  reason: DelayReason;
  /** Re-queue the URL (transient failure, retries left, host not parked). */
  retry: boolean;
  /** Earliest time for that retry, epoch ms (≥ nextAllowedAt); undefined when retry is false. */
  retryAt: number | undefined;
  /** The host is parked now: record its queued URLs as failed, dispatch it no more. */
  park: boolean;
  /** The host was just paused (pausedUntil is set; the next request is a probe). */
  paused: boolean;
  /** For IpClock.release: the floor between requests to the host's IP. */
  ipNextAllowedAt: number;
}

/** Failures that count toward a pause. */
function isFailure(k: OutcomeKind): boolean {
  return k === 'unavailable' || k === 'server-error' || k === 'timeout' || k === 'network';
}

/** Transient outcomes: the same request may well succeed later. */
export function isTransient(k: OutcomeKind): boolean {
  return k === 'too-many' || isFailure(k);
}

/**
 * Per-URL retry policy. `attempt` = retries already made. Transient failures
 * (connection reset, timeout, 5xx, 429) are retried up to maxRetries; permanent
 * ones (4xx other than 429, NXDOMAIN) and successes never.
 */
export function shouldRetry(kind: OutcomeKind, attempt: number, cfg: Pick<PolitenessConfig, 'maxRetries'> = DEFAULT_POLITENESS): boolean {
  return isTransient(kind) && attempt < cfg.maxRetries;
}

/** Delay before retry number attempt+1 of a URL: retryBase × 2^attempt, jittered, capped. */
export function retryDelayMs(attempt: number, cfg: PolitenessConfig = DEFAULT_POLITENESS, rand: () => number = Math.random): number {
  const d = Math.min(cfg.backoffMaxMs, cfg.retryBaseMs * 2 ** Math.min(attempt, 30));
  return jitter(d, cfg.backoffJitter, rand);
}

/** The backoff for a level, before jitter: base × 2^(level−1), capped (0 at level 0). */
export function backoffMs(level: number, cfg: PolitenessConfig = DEFAULT_POLITENESS): number {
  if (level <= 0) return 0;
  return Math.min(cfg.backoffMaxMs, cfg.backoffBaseMs * 2 ** Math.min(level - 1, 30));
}

/** Highest useful level: the one whose backoff first reaches the ceiling (decay must not take forever). */
function maxLevel(cfg: PolitenessConfig): number {
  if (cfg.backoffBaseMs <= 0 || cfg.backoffMaxMs <= cfg.backoffBaseMs) return 1;
  return 1 + Math.ceil(Math.log2(cfg.backoffMaxMs / cfg.backoffBaseMs));
}

function jitter(d: number, share: number, rand: () => number): number {
  const s = share <= 0 ? 0 : share >= 1 ? 1 : share;
  return Math.round(d * (1 - s * rand()));
}

/**
 * Records one exchange with the host and decides what happens next. Updates
 * `state` in place. `now` is when the exchange ended.
 */
export function onOutcome(state: HostPoliteness, o: Outcome, now: number, cfg: PolitenessConfig = DEFAULT_POLITENESS, rand: () => number = Math.random): Decision {
  const k = o.kind;
  const responseMs = o.responseMs > 0 ? o.responseMs : 0;
  state.requests++;
  state.lastResponseMs = responseMs;
  const ipNextAllowedAt = now + Math.max(cfg.ipMinDelayMs, cfg.delayFactor * responseMs);

  if (state.parked) {
    return { nextAllowedAt: Infinity, reason: 'parked', retry: false, retryAt: undefined, park: false, paused: false, ipNextAllowedAt };
  }

  let paused = false;
  let park = false;
  if (k === 'ok' || k === 'redirect' || k === 'client-error') {
    // A clean answer: the server is healthy. Backoff decays one step; runs and pauses are forgotten.
    if (state.backoffLevel > 0) state.backoffLevel--;
    state.errorRun = 0;
    state.pauses = 0;
    state.probing = false;
  } else if (k === 'too-many') {
    // RFC 6585 §4: the server is fine but wants fewer requests. Back off; not a failure run.
    state.tooMany++;
    state.backoffLevel = Math.min(state.backoffLevel + 1, maxLevel(cfg));
    state.probing = false;
  } else if (k === 'dns-permanent') {
    state.failures++;
    park = true;
    state.parkReason = 'dns-permanent';
  } else {
    state.failures++;
    if (k === 'unavailable') {
      // RFC 9110 §15.6.4: 503 is temporary overload or maintenance: back off as for 429, and count it.
      state.unavailable++;
      state.backoffLevel = Math.min(state.backoffLevel + 1, maxLevel(cfg));
    }
    state.errorRun++;
    if (state.probing || state.errorRun >= cfg.errorRunToPause) {
      state.errorRun = 0;
      if (state.pauses >= cfg.maxPauses) {
        park = true;
        state.parkReason = `failing: ${state.pauses} pauses in a row, last ${o.status ?? k}`;
      } else {
        state.pauses++;
        state.pausesTotal++;
        state.pausedUntil = now + Math.min(cfg.pauseMaxMs, cfg.pauseBaseMs * 2 ** Math.min(state.pauses - 1, 30));
        state.probing = true;
        paused = true;
      }
    }
  }

  if (park) {
    state.parked = true;
    state.probing = false;
    state.nextAllowedAt = Infinity;
    state.reason = 'parked';
    return { nextAllowedAt: Infinity, reason: 'parked', retry: false, retryAt: undefined, park: true, paused: false, ipNextAllowedAt };
  }

  // The floor (./delay.ts), and which of its terms won.
  let at = floorAt({
    endedAt: now, minDelayMs: cfg.minDelayMs, crawlDelayMs: state.crawlDelayMs, lastResponseMs: responseMs,
    factor: cfg.delayFactor, retryAfterMs: undefined, maxDelayMs: cfg.maxDelayMs,
  });
  const crawlDelay = Math.min(state.crawlDelayMs, cfg.maxDelayMs);
  const mercator = cfg.delayFactor * responseMs;
  let reason: DelayReason = mercator > cfg.minDelayMs && mercator >= crawlDelay ? 'response-time' : crawlDelay > cfg.minDelayMs ? 'crawl-delay' : 'floor';
  // RFC 9110 §10.2.3: Retry-After is how long the server asks us to wait: a floor, not jittered.
  if (o.retryAfterMs !== undefined && o.retryAfterMs > 0) {
    const ra = now + Math.min(o.retryAfterMs, cfg.retryAfterMaxMs);
    if (ra > at) { at = ra; reason = 'retry-after'; }
  }
  if (state.backoffLevel > 0) {
    const b = now + jitter(backoffMs(state.backoffLevel, cfg), cfg.backoffJitter, rand);
    if (b > at) { at = b; reason = 'backoff'; }
  }
  if (state.pausedUntil > at) { at = state.pausedUntil; reason = 'pause'; }
  state.nextAllowedAt = at;
  state.reason = reason;

  const retry = shouldRetry(k, o.attempt ?? 0, cfg);
  const retryAt = retry ? Math.max(at, now + retryDelayMs(o.attempt ?? 0, cfg, rand)) : undefined;
  return { nextAllowedAt: at, reason, retry, retryAt, park: false, paused, ipNextAllowedAt };
}

/** Lets a parked host be tried again (an operator's decision, e.g. through the API). */
export function unpark(state: HostPoliteness, now: number): void {
  state.parked = false;
  state.parkReason = undefined;
  state.pauses = 0;
  state.errorRun = 0;
  state.probing = true; // the first request back is a probe
  state.nextAllowedAt = now;
  state.reason = 'floor';
}

/** The status-code half of the outcome classification (RFC 9110 §15). */
export function kindOfStatus(status: number): OutcomeKind {
  if (status === 429) return 'too-many';
  if (status === 503) return 'unavailable';
  // 408: the server timed the request out (RFC 9110 §15.5.9): worth repeating.
  if (status === 408) return 'timeout';
  // 501 / 505: the server says it will never do this — permanent, not a sign of trouble.
  if (status === 501 || status === 505) return 'client-error';
  if (status >= 500) return 'server-error';
  if (status >= 400) return 'client-error';
  if (status >= 300 && status !== 304) return 'redirect';
  return 'ok';
}

/**
 * The failure half: fetcher error kinds (src/fetch/fetcher.ts FetchErrorKind)
 * to outcomes. `dnsPermanent`: HostResolver.failure(host)?.permanent. Returns
 * undefined for 'aborted' (our own shutdown, not the host's doing) and for
 * 'blocked-address' (our own refusal to dial: nothing reached the host).
 */
export function kindOfFailure(fetchKind: string, dnsPermanent = false): OutcomeKind | undefined {
  switch (fetchKind) {
    case 'aborted': return undefined;
    case 'blocked-address': return undefined;
    case 'timeout': return 'timeout';
    case 'dns': return dnsPermanent ? 'dns-permanent' : 'network';
    default: return 'network'; // connect, reset, tls, protocol, other
  }
}

/** A plain summary of a host's politeness state for logs and the API. */
export function describeHost(s: HostPoliteness, now: number): Record<string, unknown> {
  return {
    nextInMs: s.nextAllowedAt === Infinity ? null : Math.max(0, s.nextAllowedAt - now),
    reason: s.reason,
    backoffLevel: s.backoffLevel,
    errorRun: s.errorRun,
    pausedForMs: s.pausedUntil > now ? s.pausedUntil - now : 0,
    pauses: s.pauses,
    probing: s.probing,
    parked: s.parked,
    ...(s.parkReason ? { parkReason: s.parkReason } : {}),
    lastResponseMs: Math.round(s.lastResponseMs),
    crawlDelayMs: s.crawlDelayMs,
    requests: s.requests,
    failures: s.failures,
    tooMany: s.tooMany,
    unavailable: s.unavailable,
    pausesTotal: s.pausesTotal,
  };
}

// ---- per-IP clock -----------------------------------------------------------

interface IpSlot { busy: boolean; nextAllowed: number }

/**
 * One clock per IP address (docs/politeness.md "Hosts that share an address"): hosts
 * that share an address share it, so a server with a thousand virtual hosts is
 * not sent a thousand requests at once. Never two requests to one IP at a time.
 *
 *   const t = clock.reserve(ip, now);
 *   if (t > now) { put the host back until t; }           // nothing held
 *   else { fetch; clock.release(ip, decision.ipNextAllowedAt); }
 */
export class IpClock {
  private readonly slots = new Map<string, IpSlot>();
  private reserves = 0;

  /** busyRetryMs: the wait suggested while the IP is in use (its release adds at least ipMinDelayMs anyway). */
  constructor(private readonly busyRetryMs = DEFAULT_POLITENESS.ipMinDelayMs, private readonly pruneAbove = 10_000) {}

  /**
   * Asks for the IP at `now`. Returns `now` when granted — the IP is then held
   * until `release` — otherwise the earliest time worth asking again (nothing held).
   */
  reserve(ip: string, now: number): number {
    if (++this.reserves % 4096 === 0 && this.slots.size > this.pruneAbove) this.prune(now);
    let s = this.slots.get(ip);
    if (!s) { s = { busy: false, nextAllowed: 0 }; this.slots.set(ip, s); }
    if (s.busy) return Math.max(s.nextAllowed, now + this.busyRetryMs);
    if (s.nextAllowed > now) return s.nextAllowed;
    s.busy = true;
    return now;
  }

  /** Ends the request holding the IP; no request may start before nextAllowedAt. */
  release(ip: string, nextAllowedAt: number): void {
    const s = this.slots.get(ip);
    if (!s) { this.slots.set(ip, { busy: false, nextAllowed: nextAllowedAt }); return; }
    s.busy = false;
    if (nextAllowedAt > s.nextAllowed) s.nextAllowed = nextAllowedAt;
  }

  busy(ip: string): boolean { return this.slots.get(ip)?.busy ?? false; }
  nextAllowed(ip: string): number { return this.slots.get(ip)?.nextAllowed ?? 0; }
  get size(): number { return this.slots.size; }

  /** Forgets idle IPs whose clock has run out (they behave exactly as unknown ones). */
  prune(now: number): void {
    for (const [ip, s] of this.slots) if (!s.busy && s.nextAllowed <= now) this.slots.delete(ip);
  }
}
