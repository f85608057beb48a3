// Prometheus metrics of one agent (docs/operations.md "Metrics"), on prom-client 15.
// The agent sees only `AgentMetrics` and its plain methods; prom-client types stay
// in here. Label sets are bounded on purpose: status classes, failure kinds from
// the fetcher's fixed list, dedup kinds, member states, heartbeat refusal
// reasons (a fixed list in src/mesh/membership.ts), and peer ids: one series per
// current member (`retainPeers` drops departed ones), at most `maxPeerLabels`,
// anything else folded into the label `other`.
// Hot-path methods use pre-bound label children, so recording a page costs a
// few additions and no label hashing.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MemberState } from './backend.js';

/** Zone label values kept apart in the metrics (zones are named by heartbeats: bounded). */
const MAX_ZONE_LABELS = 32;

/** What the API server needs to answer `GET /metrics`. */
export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

export interface MetricsOptions {
  /** Node process metrics (event-loop lag, RSS, heap, GC, handles). Default true. */
  defaultMetrics?: boolean;
  /** Metric name prefix for the crawler's own metrics. Default `ubicrawl_`. */
  prefix?: string;
  /** Most distinct peer label values; further peers are counted under `other`. Default 256. */
  maxPeerLabels?: number;
}

/** The peer label that collects every peer beyond the bound (or not a current member). */
export const OTHER_PEER = 'other';

type Child = { inc(n?: number): void };
type GaugeChild = { set(n: number): void };

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'other'] as const;
const MEMBER_STATES: MemberState[] = ['active', 'joining', 'leaving', 'suspect', 'dead'];
/** Why the mesh refused something a peer sent (docs/mesh.md "Admission"); anything else counts as `other`. */
const MESH_REFUSALS = [
  'not-member', 'seen-not-owner', 'replica-not-owner', 'oversize', 'framing', 'truncated', 'type', 'version', 'flags', 'from', 'count', 'seq',
  'depth', 'hops', 'url-length', 'trailing', 'from-mismatch', 'url', 'idle', 'other',
] as const;
/** Seconds; from a loopback hit to a slow server near the fetch timeout. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class AgentMetrics implements MetricsSource {
  readonly registry: Registry;
  private readonly pages: Counter<'outcome'>;
  private readonly pageChildren: Child[];
  private readonly pageError: Child;
  private readonly bytes: Counter;
  private readonly latency: Histogram;
  private readonly fetchErrors: Counter<'kind'>;
  private readonly fetchErrorChildren = new Map<string, Child>();
  private readonly rejected: Counter<'reason'>;
  private readonly rejectedChildren = new Map<string, Child>();
  private readonly skipped: Counter<'reason'>;
  private readonly media: Counter<'kind'>;
  private readonly robotsFetches: Counter<'verdict'>;
  private readonly robotsAge: Gauge;
  private readonly dedup: Counter<'kind'>;
  private readonly dedupExact: Child;
  private readonly dedupNear: Child;
  private readonly frontierUrls: Gauge;
  private readonly frontierHosts: Gauge;
  private readonly activeHosts: Gauge;
  private readonly inFlight: Gauge;
  private readonly forwarded: Counter<'peer'>;
  private readonly received: Counter<'peer'>;
  private readonly receiveRejected: Counter<'peer'>;
  private readonly outbox: Gauge<'peer'>;
  private readonly peerChildren = new Map<string, { fwd: Child; rcv: Child; rej: Child; outbox: GaugeChild }>();
  private readonly maxPeerLabels: number;
  /** Current members' labels, once known: other peers are counted under OTHER_PEER. */
  private peerAllow: Set<string> | undefined;
  private readonly heartbeatsRefused: Counter<'reason'>;
  private readonly heartbeatsRefusedSeen = new Map<string, number>();
  private readonly members: Gauge<'state'>;
  private readonly zoneMembers: Gauge<'zone'>;
  private readonly zoneShare: Gauge<'zone'>;
  private readonly zoneForwarded: Counter<'zone'>;
  /** Last cumulative forwarded count per zone label (the counter is advanced by the difference). */
  private readonly zoneForwardedSeen = new Map<string, number>();
  private readonly meshRefusals: Counter<'reason'>;
  private readonly meshRefusalChildren = new Map<string, Child>();
  private readonly info: Gauge<'agent' | 'version'>;
  private readonly hooks: Array<() => void> = [];
  private scrapeErrors = 0;

  constructor(opts: MetricsOptions = {}) {
    const p = opts.prefix ?? 'ubicrawl_';
    const registers = [(this.registry = new Registry())];
    this.pages = new Counter({ name: `${p}pages_total`, help: 'Fetch outcomes: responses by status class, or error (no response).', labelNames: ['outcome'], registers });
    this.pageChildren = STATUS_CLASSES.map((c) => this.pages.labels(c));
    this.pageError = this.pages.labels('error');
    this.bytes = new Counter({ name: `${p}response_bytes_total`, help: 'Response bytes received, as on the wire (before content decoding).', registers });
    this.latency = new Histogram({ name: `${p}fetch_duration_seconds`, help: 'Time from sending a request to the end of its body (or the failure).', buckets: LATENCY_BUCKETS, registers });
    this.fetchErrors = new Counter({ name: `${p}fetch_errors_total`, help: 'Failed fetches by kind (dns, connect, timeout, reset, tls, protocol, aborted, other).', labelNames: ['kind'], registers });
    this.rejected = new Counter({ name: `${p}urls_rejected_total`, help: 'URLs turned away before fetching, by reason (robots, scope, traps, invalid-url, …).', labelNames: ['reason'], registers });
    this.media = new Counter({ name: `${p}media_fetched_total`, help: 'Media responses (--media) by kind: images, pdf, video, audio, and truncated at their cap (docs/media.md).', labelNames: ['kind'], registers });
    this.skipped = new Counter({ name: `${p}responses_skipped_total`, help: 'Responses fetched but not stored, by reason (type-not-accepted: --accept-type; docs/scope.md).', labelNames: ['reason'], registers });
    this.robotsFetches = new Counter({ name: `${p}robots_fetches_total`, help: 'robots.txt fetches by verdict (parsed, unavailable, unreachable, stale-copy).', labelNames: ['verdict'], registers });
    this.robotsAge = new Gauge({ name: `${p}robots_cache_oldest_age_seconds`, help: 'Age of the oldest robots.txt copy in use (RFC 9309 §2.4: at most 24 h).', registers });
    this.dedup = new Counter({ name: `${p}dedup_hits_total`, help: 'Fetched pages that duplicate an earlier one: exact (same digest) or near (SimHash within the Hamming limit).', labelNames: ['kind'], registers });
    this.dedupExact = this.dedup.labels('exact');
    this.dedupNear = this.dedup.labels('near');
    this.frontierUrls = new Gauge({ name: `${p}frontier_urls`, help: 'URLs waiting in the frontier (on disk and in memory).', registers });
    this.frontierHosts = new Gauge({ name: `${p}frontier_hosts`, help: 'Hosts known to the frontier (with or without queued URLs).', registers });
    this.activeHosts = new Gauge({ name: `${p}frontier_active_hosts`, help: 'Hosts with an in-memory queue head, ready or waiting for their politeness delay.', registers });
    this.inFlight = new Gauge({ name: `${p}fetches_in_flight`, help: 'Host turns in progress (one request each).', registers });
    this.forwarded = new Counter({ name: `${p}urls_forwarded_total`, help: 'URLs sent to the peer owning their host.', labelNames: ['peer'], registers });
    this.received = new Counter({ name: `${p}urls_received_total`, help: 'URLs received from a peer and accepted.', labelNames: ['peer'], registers });
    this.receiveRejected = new Counter({ name: `${p}urls_receive_rejected_total`, help: 'URLs received from a peer and refused by validation (schema, size, syntax).', labelNames: ['peer'], registers });
    this.outbox = new Gauge({ name: `${p}outbox_urls`, help: 'URLs waiting in the outbox for a peer (not yet acknowledged).', labelNames: ['peer'], registers });
    this.meshRefusals = new Counter({ name: `${p}mesh_refused_total`, help: 'Frames, batches and items from peers refused, by reason (not-member, seen-not-owner, replica-not-owner, frame errors…).', labelNames: ['reason'], registers });
    for (const r of MESH_REFUSALS) this.meshRefusalChildren.set(r, this.meshRefusals.labels(r));
    this.maxPeerLabels = opts.maxPeerLabels ?? 256;
    this.heartbeatsRefused = new Counter({ name: `${p}mesh_heartbeats_refused_total`, help: 'Membership heartbeats refused, by reason (malformed, capacity, signer: rejected, costing the relayer gossipsub score; rate, admission, cooldown, full: ignored; unreachable: identities dropped for never becoming reachable).', labelNames: ['reason'], registers });
    this.members = new Gauge({ name: `${p}mesh_members`, help: 'Mesh members in this agent\'s view, by state.', labelNames: ['state'], registers });
    this.zoneMembers = new Gauge({ name: `${p}zone_members`, help: 'Mesh members per zone in this agent\'s view (zone "" = no --zone; docs/mesh.md "Zones").', labelNames: ['zone'], registers });
    this.zoneShare = new Gauge({ name: `${p}zone_host_share`, help: 'Expected fraction of hosts each zone owns (its weight over the sum).', labelNames: ['zone'], registers });
    this.zoneForwarded = new Counter({ name: `${p}zone_urls_forwarded_total`, help: 'URLs and seen entries this agent forwarded to members of each zone (its own included): the cross-zone traffic.', labelNames: ['zone'], registers });
    for (const s of MEMBER_STATES) this.members.labels(s).set(0);
    this.info = new Gauge({ name: `${p}agent_info`, help: 'Always 1; labels name this agent and its version.', labelNames: ['agent', 'version'], registers });
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Runs the scrape hooks (so gauges are current), then renders the text exposition format 0.0.4. */
  async render(): Promise<string> {
    for (const h of this.hooks) {
      try { h(); } catch { this.scrapeErrors++; }
    }
    return this.registry.metrics();
  }

  /** `fn` runs before every scrape: the place to set gauges from the agent's state. */
  beforeScrape(fn: () => void): void {
    this.hooks.push(fn);
  }

  /** Hook failures so far (a throwing hook must not break the scrape). */
  get hookErrors(): number { return this.scrapeErrors; }

  setAgentInfo(agentId: string, version: string): void {
    this.info.reset();
    this.info.labels(agentId, version).set(1);
  }

  // ---- per page ---------------------------------------------------------

  /** A response arrived (any status). */
  pageFetched(status: number, rawBytes: number, durationMs: number): void {
    const c = status >= 100 && status < 600 ? ((status / 100) | 0) - 1 : 5;
    this.pageChildren[c].inc();
    if (rawBytes > 0) this.bytes.inc(rawBytes);
    if (durationMs >= 0) this.latency.observe(durationMs / 1000);
  }

  /** A fetch failed without a response. */
  fetchFailed(kind: string, durationMs?: number): void {
    this.pageError.inc();
    let child = this.fetchErrorChildren.get(kind);
    if (!child) { child = this.fetchErrors.labels(kind); this.fetchErrorChildren.set(kind, child); }
    child.inc();
    if (durationMs !== undefined && durationMs >= 0) this.latency.observe(durationMs / 1000);
  }

  urlRejected(reason: string, n = 1): void {
    let child = this.rejectedChildren.get(reason);
    if (!child) { child = this.rejected.labels(reason); this.rejectedChildren.set(reason, child); }
    child.inc(n);
  }

  mediaFetched(kind: string): void {
    this.media.labels(kind).inc();
  }

  responseSkipped(reason: string): void {
    this.skipped.labels(reason).inc();
  }

  robotsFetched(verdict: string): void {
    this.robotsFetches.labels(verdict).inc();
  }

  dedupHit(kind: 'exact' | 'near'): void {
    (kind === 'exact' ? this.dedupExact : this.dedupNear).inc();
  }

  // ---- gauges (set them in a `beforeScrape` hook or when they change) -----

  setFrontier(urls: number, hosts: number, activeHosts: number): void {
    this.frontierUrls.set(urls);
    this.frontierHosts.set(hosts);
    this.activeHosts.set(activeHosts);
  }

  setInFlight(n: number): void {
    this.inFlight.set(n);
  }

  /** Age in seconds of the oldest robots.txt copy in use (0 when none). */
  setRobotsCacheAge(oldestSeconds: number): void {
    this.robotsAge.set(oldestSeconds);
  }

  /** Member counts by state; states left out are 0. */
  setMembers(counts: Partial<Record<MemberState, number>>): void {
    for (const s of MEMBER_STATES) this.members.labels(s).set(counts[s] ?? 0);
  }

  /** The per-zone view (src/crawl/zone-view.ts); at most MAX_ZONE_LABELS zones, the rest under `other`. */
  setZones(zones: ReadonlyArray<{ zone: string; members: number; share: number; forwarded: number }>): void {
    const members = new Map<string, number>();
    const share = new Map<string, number>();
    const fwd = new Map<string, number>();
    for (const z of zones) {
      const label = members.size < MAX_ZONE_LABELS - 1 || members.has(z.zone) ? z.zone : 'other';
      members.set(label, (members.get(label) ?? 0) + z.members);
      share.set(label, (share.get(label) ?? 0) + z.share);
      fwd.set(label, (fwd.get(label) ?? 0) + z.forwarded);
    }
    this.zoneMembers.reset();
    this.zoneShare.reset();
    for (const [zone, n] of members) this.zoneMembers.labels(zone).set(n);
    for (const [zone, v] of share) this.zoneShare.labels(zone).set(v);
    for (const [zone, n] of fwd) {
      const d = n - (this.zoneForwardedSeen.get(zone) ?? 0);
      if (d > 0) this.zoneForwarded.labels(zone).inc(d);
      this.zoneForwardedSeen.set(zone, Math.max(n, this.zoneForwardedSeen.get(zone) ?? 0));
    }
  }

  // ---- mesh exchange, per peer ------------------------------------------

  private peer(label: string) {
    let id = label;
    if (id !== OTHER_PEER && ((this.peerAllow && !this.peerAllow.has(id)) || (!this.peerChildren.has(id) && this.peerChildren.size >= this.maxPeerLabels - 1))) id = OTHER_PEER;
    let c = this.peerChildren.get(id);
    if (!c) {
      c = { fwd: this.forwarded.labels(id), rcv: this.received.labels(id), rej: this.receiveRejected.labels(id), outbox: this.outbox.labels(id) };
      this.peerChildren.set(id, c);
    }
    return c;
  }

  urlsForwarded(peer: string, n: number): void {
    this.peer(peer).fwd.inc(n);
  }

  urlsReceived(peer: string, accepted: number, rejected = 0): void {
    const c = this.peer(peer);
    if (accepted > 0) c.rcv.inc(accepted);
    if (rejected > 0) c.rej.inc(rejected);
  }

  /** Something a peer sent was refused (a fixed set of reasons: the label set stays bounded). */
  meshRefused(reason: string, n = 1): void {
    (this.meshRefusalChildren.get(reason) ?? this.meshRefusalChildren.get('other')!).inc(n);
  }

  setOutboxDepth(peer: string, n: number): void {
    this.peer(peer).outbox.set(n);
  }

  /**
   * The current members' peer labels: every other peer's series is dropped and
   * from now on counted under `other` (a departed member's counters restart
   * from 0 if it comes back, which Prometheus' rate() handles).
   */
  retainPeers(labels: Iterable<string>): void {
    this.peerAllow = new Set(labels);
    for (const id of [...this.peerChildren.keys()]) if (id !== OTHER_PEER && !this.peerAllow.has(id)) this.removePeer(id);
  }

  /** Distinct peer label values in use (bounded by maxPeerLabels). */
  get peerLabelCount(): number { return this.peerChildren.size; }

  /** Brings the refused-heartbeat counters up to the membership's running totals by reason. */
  heartbeatsRefusedTotals(totals: Record<string, number>): void {
    for (const [reason, n] of Object.entries(totals)) {
      const seen = this.heartbeatsRefusedSeen.get(reason) ?? 0;
      if (n > seen) this.heartbeatsRefused.labels(reason).inc(n - seen);
      this.heartbeatsRefusedSeen.set(reason, n);
    }
  }

  /** Drops a departed peer's series (its counters restart from 0 if it comes back, which Prometheus' rate() handles). */
  removePeer(peer: string): void {
    if (!this.peerChildren.delete(peer)) return;
    this.forwarded.remove(peer);
    this.received.remove(peer);
    this.receiveRejected.remove(peer);
    this.outbox.remove(peer);
  }
}

export function createMetrics(opts: MetricsOptions = {}): AgentMetrics {
  return new AgentMetrics(opts);
}
