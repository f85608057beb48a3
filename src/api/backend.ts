// The agent's side of the HTTP API (docs/operations.md): what the server asks an agent for.
// Everything crossing this interface is plain JSON data (numbers, strings, arrays,
// plain objects, null) so the server can serialise it as is and the CLI and the
// dashboard read the same shapes. Times are epoch milliseconds; durations say
// their unit in the name.
import type { MetricsSource } from './metrics.js';
import type { SeenState } from '../seen/state.js';
import type { MemberCounters } from '../mesh/wire.js';

/** Where the API listens unless told otherwise (loopback only): src/config.ts. */
export { DEFAULT_API_LISTEN } from '../config.js';

/** Lifecycle of this agent as the API reports it. */
export type AgentState = 'starting' | 'active' | 'leaving' | 'stopped';

/** A mesh member as this agent sees it (docs/mesh.md "Membership"). */
/** `joining`: a member that has not finished its first handoff round (it owns no host yet; docs/mesh.md "Admission"). */
export type MemberState = 'active' | 'joining' | 'leaving' | 'suspect' | 'dead';

export interface AgentCounters {
  /** Responses received (any status). */
  fetched: number;
  /** URLs waiting in the frontier. */
  queued: number;
  /** Host turns in progress (fetches, robots.txt fetches). */
  inFlight: number;
  /** Raw (on-the-wire) response bytes. */
  bytes: number;
  /** Recent rate (not the lifetime average): pages per second over the last few seconds. */
  pagesPerSecond: number;
  /** Failed fetches and other counted problems, by kind (`timeout`, `dns`, `warc`, …). */
  errors: Record<string, number>;
  /** URLs forwarded to peers / received from peers (mesh exchange). */
  urlsSent: number;
  urlsReceived: number;
}

export interface MemberReport {
  /** libp2p PeerId (string form). */
  id: string;
  /** True for the agent answering the request. */
  self: boolean;
  addrs: string[];
  state: MemberState;
  capacity: number;
  /** Fraction (0..1) of the host ring this member owns in this agent's view. */
  share: number;
  /** As last heard in the member's heartbeat (this agent's own for `self`). */
  counters: MemberCounters;
  /** When the last heartbeat arrived; null for `self`. */
  lastSeen: number | null;
  /** The member's zone (`--zone`); absent for the default zone. */
  zone?: string;
}

/** One zone as an agent sees it (`GET /status` → mesh.zones). */
export interface ZoneReport {
  /** The zone's name ('' = the default zone of members started without `--zone`). */
  zone: string;
  /** Members in our view (active, joining or leaving). */
  members: number;
  /** Of them, in our ring (owning hosts). */
  owners: number;
  /** Expected fraction of hosts the zone owns (its weight over the sum; rules not counted). */
  share: number;
  /** The zone this agent is in. */
  self: boolean;
  /** URLs and seen entries this agent forwarded to the zone's members (cumulative; our own zone included). */
  forwarded: number;
  /** Members whose heartbeat carries other zone rules than ours (they disagree on owners). */
  rulesMismatch: number;
}

/** Hosts whose queued URLs wait (backoff, pause, a robots.txt retry), soonest first (src/crawl/deferred.ts). */
export interface WaitingReport {
  hosts: number;
  urls: number;
  /** At most a few; `hosts` counts them all. nextAttempt: ISO 8601, or null for a host paused until the operator resumes it. */
  list: { host: string; urls: number; reason: string; nextAttempt: string | null }[];
}

export interface StatusReport {
  agent: {
    id: string;
    state: AgentState;
    version: string;
    startedAt: number;
    uptimeMs: number;
    capacity: number;
    counters: AgentCounters;
    /** What the crawl waits for: hosts in backoff or awaiting a robots.txt retry. */
    waiting?: WaitingReport;
  };
  mesh: {
    /** Crawl (gossip topic) identifier; null when the agent runs alone. */
    crawlId: string | null;
    members: MemberReport[];
    /** Per zone (docs/mesh.md "Zones"): members, share of hosts, URLs this agent forwarded to it. Absent when alone. */
    zones?: ZoneReport[];
  };
  /** The render tier (docs/render.md), when --render or --render-host turned it on. */
  render?: {
    mode: 'never' | 'auto' | 'always';
    /** Pages in the durable render queue (those being rendered included). */
    queue: number;
    active: number;
    /** Renders by outcome (rendered, timeout, budget, crashed, unavailable). */
    renders: Record<string, number>;
    meanRenderMs: number;
    /** The browser's process tree at the last check (PSS summed). */
    browserRssBytes: number;
    /** Why rendering is off on this machine (no Chromium). */
    off?: string;
  };
}

export interface ThroughputPoint {
  /** Sample time. */
  t: number;
  /** Cumulative pages fetched at `t` (the chart derives the rate from consecutive points). */
  fetched: number;
}

export interface TopHost {
  host: string;
  fetched: number;
  queued: number;
  errors: number;
  paused: boolean;
}

export interface RecentError {
  at: number;
  /** Fetch failure kind (`timeout`, `dns`, …) or problem kind (`warc`, `parse`, `robots-unreachable`, …). */
  kind: string;
  url: string | null;
  host: string | null;
  message: string;
}

/** What `GET /status` answers: the backend's report plus the dashboard's series. */
export interface StatusResponse extends StatusReport {
  now: number;
  throughput: ThroughputPoint[];
  topHosts: TopHost[];
  recentErrors: RecentError[];
}

export type RobotsState = 'unknown' | 'parsed' | 'unavailable' | 'unreachable' | 'stale-copy';

/** robots.txt of a host as cached (RFC 9309), summarised for people. */
export interface RobotsSummary {
  /** `unknown`: not fetched yet; the others are RobotsCache verdicts. */
  state: RobotsState;
  /** HTTP status of the robots.txt fetch, null if none (unreachable / not fetched). */
  status: number | null;
  fetchedAt: number | null;
  expiresAt: number | null;
  /** The group that applies to our product token (`*` or the token), null if none. */
  group: string | null;
  crawlDelaySeconds: number | null;
  /** Rules of that group, at most 100 (`ruleCount` says how many there are). */
  rules: Array<{ allow: boolean; pattern: string }>;
  ruleCount: number;
  sitemaps: string[];
}

export interface PolitenessState {
  /** The host is not contacted before this time; null when it has no pending turn. */
  nextAllowedAt: number | null;
  /** Delay the last turn was charged (max of the rules in docs/politeness.md). */
  delayMs: number;
  /** Effective minimum delay (the agent's default or this host's policy override). */
  minDelayMs: number;
  crawlDelayMs: number;
  lastResponseMs: number;
  /** Consecutive failed fetches. */
  errorRun: number;
  paused: boolean;
  /** Page budget override for this host (null: the agent's default applies). */
  pageBudget: number | null;
  /** Pages fetched from this host. */
  pages: number;
  /** Adaptive politeness state (src/politeness/host.ts describeHost); absent from agents that predate it. */
  adaptive?: AdaptivePoliteness;
}

/** Why a host waits and how hard it is backed off (docs/politeness.md "Visibility"). */
export interface AdaptivePoliteness {
  /** ms until the host may be contacted; null when parked. */
  nextInMs: number | null;
  reason: 'floor' | 'crawl-delay' | 'response-time' | 'retry-after' | 'backoff' | 'pause' | 'parked';
  backoffLevel: number;
  /** Failures in a row (5xx, timeouts, network errors). */
  errorRun: number;
  pausedForMs: number;
  /** Pauses in a row; the next request after a pause is a probe. */
  pauses: number;
  probing: boolean;
  parked: boolean;
  parkReason?: string;
  lastResponseMs: number;
  crawlDelayMs: number;
  requests: number;
  failures: number;
  tooMany: number;
  unavailable: number;
  pausesTotal: number;
}

export interface FetchRecord {
  url: string;
  /** HTTP status; null when the fetch failed (see `error`). */
  status: number | null;
  at: number;
  durationMs: number | null;
  error: string | null;
}

export interface HostReport {
  host: string;
  /** Member id owning this host in this agent's view (null if the mesh is empty). */
  owner: string | null;
  /** Owned by the agent answering (only then are robots/politeness/queue known). */
  local: boolean;
  robots: RobotsSummary | null;
  politeness: PolitenessState | null;
  queue: { depth: number; inFlight: boolean };
  /** Most recent first. */
  lastFetches: FetchRecord[];
  /** Failure counts by kind. */
  errors: Record<string, number>;
}

export interface WarcLocation {
  filename: string;
  offset: number;
  length: number;
}

export interface UrlReport {
  /** As asked. */
  url: string;
  /** The normal form the crawler keys on. */
  normalized: string;
  host: string;
  owner: string | null;
  local: boolean;
  /** In the seen-set (of the owner; false if this agent is not the owner and cannot tell). */
  seen: boolean;
  queued: boolean;
  /**
   * The seen-set's state (src/seen/state.ts): `rejected`: seen but turned away by scope/traps/robots;
   * `failed`: fetch failed; `settled-elsewhere`: fetched or settled by the agent that handed the host
   * over; `unknown`: a state this version cannot read.
   */
  state: 'unseen' | SeenState | 'unknown';
  fetched: {
    at: number;
    status: number;
    /** WARC-Payload-Digest form, e.g. `sha1:BASE32`. */
    digest: string | null;
    /** 64-bit SimHash as 16 hex digits. */
    simhash: string | null;
    warc: WarcLocation | null;
  } | null;
}

export interface SeedResult {
  /** URLs accepted (queued locally or routed to their owner). */
  accepted: number;
  /** `reason` `blocked-address`: the host is an internal address; `detail` says which range. */
  rejected: Array<{ url: string; reason: string; detail?: string }>;
  /** Accepted URLs by owner id (this agent's id included). */
  routed: Record<string, number>;
}

/** `PUT /hosts/:host/policy`: a field left out stays as is; null clears the override. */
export interface HostPolicy {
  minDelayMs?: number | null;
  pageBudget?: number | null;
}

export interface HostControlResult {
  host: string;
  owner: string | null;
  paused: boolean;
  policy: { minDelayMs: number | null; pageBudget: number | null };
}

/** A block rule as `GET /policy` shows it (src/policy/document.ts). */
export interface PolicyRuleReport {
  kind: 'host' | 'domain' | 'url';
  value: string;
  /** The policy version that set it. */
  rev: number;
  changedAt: number;
  reason: string;
}

/** `GET /policy`: the crawl policy in force on this agent, and the version each member announced (docs/scope.md "Mesh-wide policy"). */
export interface PolicyReport {
  /** `version.digest`: equal on two agents means the same policy. */
  summary: string;
  version: number;
  updatedAt: number;
  scope: { mode: string; allowHosts: string[]; include: string[]; exclude: string[]; maxDepth: number; maxPagesPerHost: number; acceptTypes: string[] };
  /** Who set the scope (empty: the options of every agent, never changed). */
  scopeOrigin: string;
  seedUnits: string[];
  /** Rules in force (unblocked ones are left out). */
  blocks: PolicyRuleReport[];
  /** Each member's announced policy (`self` is this agent); null when its heartbeats carry none (yet). */
  members: Array<{ id: string; self: boolean; summary: string | null; version: number | null; same: boolean }>;
}

/**
 * What the agent implements for the API server. Methods may throw `ApiError`
 * to answer with a given 4xx status and message; anything else thrown becomes a
 * 500 with a generic message (the detail goes to the log).
 */
export interface ApiBackend {
  status(): StatusReport;
  /** null: nothing is known about the host (→ 404). Host names arrive lower-cased, IDNA-encoded, without port. */
  host(name: string): Promise<HostReport | null>;
  /** null: the URL is not crawlable (the normaliser rejected it) (→ 400). */
  url(url: string): Promise<UrlReport | null>;
  seed(urls: string[]): Promise<SeedResult>;
  pauseHost(name: string): Promise<HostControlResult>;
  resumeHost(name: string): Promise<HostControlResult>;
  setHostPolicy(name: string, policy: HostPolicy): Promise<HostControlResult>;
  /** The crawl policy in force and each member's version (`GET /policy`). */
  policy?(): PolicyReport;
  /** Adds block rules (`ubicrawl block` arguments); throws ApiError 400 for a bad one, nothing changed. */
  block?(targets: string[], reason: string): Promise<PolicyReport>;
  /** Lifts block rules. */
  unblock?(targets: string[]): Promise<PolicyReport>;
  /** Starts the graceful leave (docs/mesh.md "Membership"); the API answers 202 without waiting for it. */
  leave(): Promise<void>;
  /** What `GET /metrics` renders (see `createMetrics`). */
  readonly metrics: MetricsSource;
  /** Oldest first; one point per second is plenty (see `ThroughputHistory`). */
  throughputHistory(): ThroughputPoint[];
  topHosts(n: number): TopHost[];
  /** Most recent first. */
  recentErrors(n: number): RecentError[];
}

/** Thrown by a backend (or the server's validation) to answer with `status` and `{ error: message }`. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'ApiError';
  }
}
