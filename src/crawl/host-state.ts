// What the agent knows about a host beyond its URLs (docs/mesh.md "Everything
// about a host moves with it", docs/storage.md "Host state"): its politeness
// state (backoff level, the time a Retry-After, a backoff or a pause lets it be
// contacted again, parked, its robots.txt retries), and the operator's
// overrides (pause, minimum delay, page budget).
//
// A restart changes nothing of it (docs/storage.md "Host state"): deadlines are
// absolute times and hold as they were; the backoff level, the pause count and
// the robots.txt retries used come back as they were, so that a restart neither
// raises them (a request a SIGKILL cut short is not the host's error) nor hands
// the host a fresh set of retries whose failures would raise them. Kept in the store while it says something (a host at its floor
// with no override has no record), restored when the host is next seen — after
// a restart, or when a handoff brings it to its new owner, which then waits as
// long as the previous owner would have.
import type { BatchOp, Store } from '../store/db.js';
import type { Logger } from '../util/log.js';
import type { HostData } from './candidate.js';

/** The saved form (JSON in the `host-state` sublevel, and on the wire: src/mesh/wire.ts `host-state` items). */
export interface SavedHostState {
  /** 429/503 backoff level (src/politeness/host.ts). */
  backoff: number;
  /** Not contacted before this epoch ms (Retry-After, backoff, pause); 0: no such wait. */
  notBefore: number;
  /** The current failure pause ends (epoch ms), and pauses in a row. */
  pausedUntil: number;
  pauses: number;
  /** Parked: not contacted again in this crawl (until an operator resumes it). */
  parked: boolean;
  parkReason?: string;
  /** PUT/POST /hosts/:host/pause through the API. */
  operatorPaused: boolean;
  /** PUT /hosts/:host/policy overrides (null: the crawl's). */
  minDelayMs: number | null;
  pageBudget: number | null;
  /** robots.txt fetches in a row that found it unreachable (HostData.robotsFailures); 0 when absent (older records). */
  robotsFailures: number;
  /** Its unreachable verdict holds until this epoch ms (0: none); restored once the retries are used up. */
  robotsUntil: number;
}

const WAITS = new Set(['retry-after', 'backoff', 'pause']);

/** What a host's data says worth keeping, or null when it is at its floor with no override. */
export function snapshotHost(d: HostData, operatorPaused: boolean, now: number): SavedHostState | null {
  const p = d.polite;
  const notBefore = WAITS.has(p.reason) && p.nextAllowedAt > now && Number.isFinite(p.nextAllowedAt) ? Math.ceil(p.nextAllowedAt) : 0;
  let robotsUntil = d.robotsGaveUpUntil !== undefined && d.robotsGaveUpUntil > now ? d.robotsGaveUpUntil : 0;
  if (d.robotsFailures > 0) for (const e of d.robots.values()) if (e.verdict === 'unreachable' && e.expires > robotsUntil && Number.isFinite(e.expires)) robotsUntil = e.expires;
  const s: SavedHostState = {
    backoff: p.backoffLevel, notBefore, pausedUntil: p.pausedUntil > now ? p.pausedUntil : 0, pauses: p.pauses,
    parked: p.parked, ...(p.parkReason ? { parkReason: p.parkReason } : {}),
    operatorPaused, minDelayMs: d.policy.minDelayMs, pageBudget: d.policy.pageBudget,
    robotsFailures: d.robotsFailures, robotsUntil: d.robotsFailures > 0 ? robotsUntil : 0,
  };
  const says = s.backoff > 0 || s.notBefore > 0 || s.pausedUntil > 0 || s.pauses > 0 || s.parked || s.operatorPaused || s.minDelayMs !== null || s.pageBudget !== null
    || s.robotsFailures > 0;
  return says ? s : null;
}

/**
 * Puts a saved state into a host's data; returns the earliest time the host may be contacted (0: no wait).
 * Into a host known here (a handoff), the larger of each wins; into fresh data (a restart), it is as saved.
 */
export function applyHost(d: HostData, s: SavedHostState): number {
  const p = d.polite;
  d.robotsFailures = Math.max(d.robotsFailures, s.robotsFailures);
  if (s.robotsUntil > (d.robotsGaveUpUntil ?? 0)) d.robotsGaveUpUntil = s.robotsUntil;
  p.backoffLevel = Math.max(p.backoffLevel, s.backoff);
  p.pausedUntil = Math.max(p.pausedUntil, s.pausedUntil);
  p.pauses = Math.max(p.pauses, s.pauses);
  if (s.pausedUntil > 0) p.probing = true; // the first request after a pause is a probe (src/politeness/host.ts)
  if (s.parked && !p.parked) { p.parked = true; p.parkReason = s.parkReason ?? 'parked by its previous owner'; p.nextAllowedAt = Infinity; p.reason = 'parked'; }
  if (s.notBefore > p.nextAllowedAt && !p.parked) { p.nextAllowedAt = s.notBefore; p.reason = s.pausedUntil >= s.notBefore ? 'pause' : 'retry-after'; }
  if (s.minDelayMs !== null) d.policy.minDelayMs = s.minDelayMs;
  if (s.pageBudget !== null) d.policy.pageBudget = s.pageBudget;
  d.operatorPaused = s.operatorPaused;
  return p.parked ? Infinity : Math.max(s.notBefore, s.pausedUntil);
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;
const isNumOrNull = (x: unknown): x is number | null => x === null || isNum(x);

/** Strict decoder (a peer's bytes, or the store's): null for anything malformed. */
export function decodeHostState(text: string): SavedHostState | null {
  let o: unknown;
  try { o = JSON.parse(text); } catch { return null; }
  if (typeof o !== 'object' || o === null) return null;
  const r = o as Record<string, unknown>;
  if (!isNum(r.backoff) || r.backoff > 64 || !isNum(r.notBefore) || !isNum(r.pausedUntil) || !isNum(r.pauses) || r.pauses > 1000) return null;
  if (typeof r.parked !== 'boolean' || typeof r.operatorPaused !== 'boolean' || !isNumOrNull(r.minDelayMs) || !isNumOrNull(r.pageBudget)) return null;
  if (r.parkReason !== undefined && (typeof r.parkReason !== 'string' || r.parkReason.length > 200)) return null;
  if ((r.robotsFailures !== undefined && (!isNum(r.robotsFailures) || r.robotsFailures > 1000)) || (r.robotsUntil !== undefined && !isNum(r.robotsUntil))) return null;
  return {
    backoff: r.backoff, notBefore: r.notBefore, pausedUntil: r.pausedUntil, pauses: r.pauses, parked: r.parked,
    ...(typeof r.parkReason === 'string' ? { parkReason: r.parkReason } : {}),
    operatorPaused: r.operatorPaused, minDelayMs: r.minDelayMs, pageBudget: r.pageBudget,
    robotsFailures: (r.robotsFailures as number | undefined) ?? 0, robotsUntil: (r.robotsUntil as number | undefined) ?? 0,
  };
}

export function encodeHostState(s: SavedHostState): string {
  return JSON.stringify(s);
}

/** Most saved states waiting for their host to be seen (restored at start, or received ahead of the host's URLs). */
const MAX_PENDING = 100_000;

/**
 * The agent's host states: saved as they change, restored into a host's data
 * when the frontier first sees the host (`created`), handed to a host's new
 * owner (`forHandoff`) and taken from its previous one (`received`).
 */
export class HostStates {
  /** Saved states of hosts not in the frontier yet. */
  private readonly pending = new Map<string, SavedHostState>();
  /** The JSON last written per host (no write when nothing changed). */
  private readonly written = new Map<string, string>();
  private chain: Promise<void> = Promise.resolve();
  /** Hosts not to be contacted before a restored or received time (epoch ms): the host turn asks `notBefore`. */
  private readonly waits = new Map<string, number>();
  /** Hosts known here that the operator paused (what `--until-idle` may leave queued: src/crawl/deferred.ts). */
  private readonly paused = new Set<string>();
  readonly stats = { saved: 0, restored: 0, received: 0, handedOver: 0 };

  /** `robotsRetries`: the crawl's retries of an unreachable robots.txt (politeness maxRetries). */
  constructor(private readonly c: { store: Pick<Store, 'hostState'>; log: Logger; now?: () => number; robotsRetries?: number }) {}

  private now(): number { return this.c.now?.() ?? Date.now(); }

  /** Reads every saved state (at start, before the frontier sees any host). */
  async load(): Promise<void> {
    for await (const [k, v] of this.c.store.hostState.iterator()) {
      const s = decodeHostState(v.toString('utf8'));
      const host = k.toString('latin1');
      if (!s) continue;
      if (this.pending.size < MAX_PENDING) this.pending.set(host, s);
      this.written.set(host, v.toString('utf8'));
    }
  }

  /** The frontier made the host's data: its saved state goes in; returns the earliest contact time (0: none). */
  created(host: string, d: HostData): number {
    const s = this.pending.get(host);
    if (!s) return 0;
    this.pending.delete(host);
    this.stats.restored++;
    const t = applyHost(d, s);
    this.notePause(host, d);
    return this.wait(host, this.turnWait(d, t));
  }

  /**
   * No request goes to a parked host, nor to one whose robots.txt was given up on until after `t`: its turns
   * only record its URLs as failed (src/crawl/host-turn.ts) and need not wait. Its own clock holds any request.
   */
  private turnWait(d: HostData, t: number): number {
    const settleOnly = d.polite.parked || (this.c.robotsRetries !== undefined && d.robotsFailures > this.c.robotsRetries && (d.robotsGaveUpUntil ?? 0) >= t);
    return settleOnly ? 0 : t;
  }

  /** Hosts known here that the operator paused. */
  pausedHosts(): Iterable<string> { return this.paused; }

  private notePause(host: string, d: HostData): void {
    if (d.operatorPaused) this.paused.add(host); else this.paused.delete(host);
  }

  private wait(host: string, t: number): number {
    if (t > this.now()) this.waits.set(host, t); else this.waits.delete(host);
    return t;
  }

  /** 0, or when the host may be contacted (a Retry-After, backoff or pause its saved or received state still runs). */
  notBefore(host: string, now: number): number {
    if (this.waits.size === 0) return 0;
    const t = this.waits.get(host);
    if (t === undefined) return 0;
    if (t > now) return t;
    this.waits.delete(host);
    return 0;
  }

  /** After an exchange, an operator's action, or a restored state: keeps what the host's data now says. */
  save(host: string, d: HostData): void {
    this.notePause(host, d);
    const s = snapshotHost(d, d.operatorPaused === true, this.now());
    const text = s ? encodeHostState(s) : undefined;
    const last = this.written.get(host);
    if (text === last) return;
    if (text === undefined) this.written.delete(host); else this.written.set(host, text);
    const op: BatchOp = text === undefined
      ? { type: 'del', sublevel: this.c.store.hostState, key: Buffer.from(host, 'latin1') }
      : { type: 'put', sublevel: this.c.store.hostState, key: Buffer.from(host, 'latin1'), value: Buffer.from(text) };
    this.stats.saved++;
    // Not synced and not awaited by the crawl: a lost write costs a host its backoff once, never a URL.
    this.chain = this.chain.then(() => (op.type === 'put' ? op.sublevel.put(op.key, op.value) : op.sublevel.del(op.key)))
      .catch((err: Error) => this.c.log.warn({ host, err: err.message }, 'host state not saved'));
  }

  /** The state a host's new owner needs, or null (nothing worth sending). */
  forHandoff(host: string, d: HostData, operatorPaused: boolean): SavedHostState | null {
    const s = snapshotHost(d, operatorPaused, this.now());
    if (s) this.stats.handedOver++;
    return s;
  }

  /** The host left us: its record goes (its new owner keeps its own). */
  forget(host: string): void {
    this.pending.delete(host);
    this.waits.delete(host);
    this.paused.delete(host);
    if (!this.written.has(host)) return;
    this.written.delete(host);
    this.chain = this.chain.then(() => this.c.store.hostState.del(Buffer.from(host, 'latin1'))).catch(() => {});
  }

  /** A previous owner's state for a host we own now: applied if the host is known here, else kept until it is. */
  received(host: string, s: SavedHostState, d: HostData | undefined): number {
    this.stats.received++;
    if (d) { const t = this.wait(host, this.turnWait(d, applyHost(d, s))); this.save(host, d); return t; }
    if (this.pending.size < MAX_PENDING) this.pending.set(host, s);
    const text = encodeHostState(s);
    this.written.set(host, text);
    this.chain = this.chain.then(() => this.c.store.hostState.put(Buffer.from(host, 'latin1'), Buffer.from(text)))
      .catch((err: Error) => this.c.log.warn({ host, err: err.message }, 'host state not saved'));
    // A Retry-After or pause still running: no contact before it, whenever the host's URLs arrive.
    return this.wait(host, s.parked ? 0 : Math.max(s.notBefore, s.pausedUntil));
  }

  /** Resolves once every write queued so far is done (before the store closes). */
  flushed(): Promise<void> { return this.chain; }
}
