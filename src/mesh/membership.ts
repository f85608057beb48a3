// Gossip membership (docs/mesh.md "Membership"): every agent publishes a signed
// heartbeat on `ubicrawl/<crawl-id>/members` every interval; every agent keeps
// the table of members it hears from and derives the HostRing of live active
// members from it. A member is dead once it has been silent for deadAfterMs
// AND has no open connection to us (a live connection proves liveness even
// when gossip is lagging). UbiCrawler (Boldi et al. 2004, §4) needs exactly
// this: each agent's local view of the live set, from which ownership follows
// by consistent hashing; views may disagree for a moment and the forwarding
// hop limit absorbs that.
import { EventEmitter } from 'node:events';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import { peerIdFromString } from '@libp2p/peer-id';
import { TopicValidatorResult, type Message, type PeerId } from '@libp2p/interface';
import { HostRing, type HostRingOptions } from '../assign/ring.js';
import { DEFAULT_ZONE, ZonedRing, zoneRulesDigest, type ZoneRule } from '../assign/zones.js';
import { decodeHeartbeat, encodeHeartbeat, membersTopic, type Heartbeat, type MemberCounters, type MemberState } from './wire.js';
import { silentLogger, type MeshLogger, type MeshNode } from './node.js';
import { RateLimitedLog } from './admission.js';
import { countFailure, failureLabel } from './link-failures.js';
import { DEAD_AFTER_HEARTBEATS, DEFAULT_MESH, defaultMeshAdmission, type MeshAdmissionConfig } from '../config.js';

/** A member as this agent knows it: its latest heartbeat, plus when we heard it. */
export interface MemberInfo extends Heartbeat {
  /** Local clock (ms) when the latest heartbeat was accepted; for self, when it was sent. */
  lastHeard: number;
  self: boolean;
}

/**
 * 'new': admitted to the ring view now; 'pending': recorded, but not admitted
 * until we have a direct connection to it (docs/mesh.md "Admission");
 * 'cooldown': an identity that never became reachable, refused for a while.
 */
export type ObserveOutcome = 'new' | 'pending' | 'updated' | 'stale' | 'full' | 'cooldown';

export interface MemberTableOptions {
  deadAfterMs: number;
  /** Most members, admitted and pending together. */
  maxMembers: number;
  /** Most tombstones and cooldown entries, each. Default 4096. */
  maxTombstones?: number;
  /** A pending member not reachable within this long is dropped and cooled down. Default 2 × deadAfterMs. */
  confirmWithinMs?: number;
  /** How long a dropped pending identity is refused. Default 10 × deadAfterMs. */
  cooldownMs?: number;
  /**
   * A member silent this long is dead even with an open connection (its
   * heartbeats may be ignored, e.g. gossipsub graylisted it). Default 4 × deadAfterMs.
   */
  maxSilenceMs?: number;
  /**
   * A member that meets the dead rule above is first *suspect*, and declared dead (taken over) only
   * once it has met it without a break this long (docs/mesh.md "Suspicion before takeover"). Default 0: at once.
   */
  suspectGraceMs?: number;
}

// ---------------------------------------------------------------- pure core

/**
 * The member table: pure state, no I/O, driven by observe() and sweep(). A
 * heartbeat supersedes another of the same member if its (incarnation, seq)
 * is larger; tombstones of recently dead members keep replayed or delayed
 * heartbeats of a dead incarnation from resurrecting it. A new identity is
 * admitted (all(), ringMembers()) only once we have a direct connection to it;
 * until then it is pending, and one that never becomes reachable is dropped
 * and refused for a cooldown (docs/mesh.md "Admission").
 */
export class MemberTable {
  private readonly byId = new Map<string, MemberInfo>();
  private readonly pending = new Map<string, MemberInfo & { since: number }>();
  private readonly tombstones = new Map<string, { incarnation: number; seq: number }>();
  private readonly cooldown = new Map<string, number>();
  private readonly maxTombstones: number;
  private readonly confirmWithinMs: number;
  private readonly cooldownMs: number;
  private readonly maxSilenceMs: number;
  private readonly suspectGraceMs: number;
  /** Since when each suspect member has met the dead rule. */
  private readonly suspectSince = new Map<string, number>();
  constructor(
    readonly selfId: string,
    readonly opts: MemberTableOptions,
  ) {
    this.maxTombstones = opts.maxTombstones ?? 4096;
    this.confirmWithinMs = opts.confirmWithinMs ?? 2 * opts.deadAfterMs;
    this.cooldownMs = opts.cooldownMs ?? 10 * opts.deadAfterMs;
    this.maxSilenceMs = opts.maxSilenceMs ?? 4 * opts.deadAfterMs;
    this.suspectGraceMs = opts.suspectGraceMs ?? 0;
  }

  /** Records our own heartbeat (self is always live). */
  setSelf(hb: Heartbeat, now: number): void {
    this.byId.set(hb.id, { ...hb, lastHeard: now, self: true });
  }

  /** What observe() would do with a heartbeat of `id` not yet known ('known' if it is). */
  admission(hb: Heartbeat, now: number): 'known' | 'stale' | 'cooldown' | 'full' | 'new' {
    if (hb.id === this.selfId) return 'stale';
    if (this.byId.has(hb.id) || this.pending.has(hb.id)) return 'known';
    const t = this.tombstones.get(hb.id);
    if (t && (hb.incarnation < t.incarnation || (hb.incarnation === t.incarnation && hb.seq <= t.seq))) return 'stale';
    const until = this.cooldown.get(hb.id);
    if (until !== undefined) {
      if (now < until) return 'cooldown';
      this.cooldown.delete(hb.id);
    }
    if (this.byId.size + this.pending.size >= this.opts.maxMembers) return 'full';
    return 'new';
  }

  /**
   * Applies a heartbeat. `connected`: whether we have a direct connection to
   * the member (default true: the caller vouches for it); a new member without
   * one waits in pending.
   */
  observe(hb: Heartbeat, now: number, connected = true): ObserveOutcome {
    if (hb.id === this.selfId) return 'stale'; // our own, echoed back: ignore
    const newer = (cur: { incarnation: number; seq: number }) => hb.incarnation > cur.incarnation || (hb.incarnation === cur.incarnation && hb.seq > cur.seq);
    const cur = this.byId.get(hb.id);
    if (cur) {
      if (!newer(cur)) return 'stale';
      this.byId.set(hb.id, { ...hb, lastHeard: now, self: false });
      return 'updated';
    }
    const waiting = this.pending.get(hb.id);
    if (waiting) {
      if (!newer(waiting)) return 'stale';
      this.pending.set(hb.id, { ...hb, lastHeard: now, self: false, since: waiting.since });
      if (connected) return this.confirm(hb.id) ? 'new' : 'pending';
      return 'pending';
    }
    const a = this.admission(hb, now);
    if (a === 'stale' || a === 'cooldown' || a === 'full') return a;
    this.tombstones.delete(hb.id);
    if (!connected) {
      this.pending.set(hb.id, { ...hb, lastHeard: now, self: false, since: now });
      return 'pending';
    }
    this.byId.set(hb.id, { ...hb, lastHeard: now, self: false });
    return 'new';
  }

  /** Admits a pending member (we now have a direct connection to it). False if it was not pending. */
  confirm(id: string): boolean {
    const p = this.pending.get(id);
    if (!p) return false;
    this.pending.delete(id);
    const { since: _since, ...info } = p;
    this.byId.set(id, info);
    return true;
  }

  /**
   * Declares dead every member silent for more than deadAfterMs that has no
   * open connection, or silent for more than maxSilenceMs whatever its
   * connections, once it has been so (suspect) for suspectGraceMs; returns their ids. Pending members that stayed silent are
   * forgotten too (not returned: they were never in the ring).
   */
  sweep(now: number, isConnected: (id: string) => boolean): string[] {
    const dead: string[] = [];
    for (const m of this.byId.values()) {
      if (m.self) continue;
      const silent = now - m.lastHeard;
      if (!((silent > this.opts.deadAfterMs && !isConnected(m.id)) || silent > this.maxSilenceMs)) {
        this.suspectSince.delete(m.id); // heard again (or connected): no longer suspect
        continue;
      }
      let since = this.suspectSince.get(m.id);
      if (since === undefined) this.suspectSince.set(m.id, since = now);
      if (now - since >= this.suspectGraceMs) dead.push(m.id);
    }
    for (const id of dead) this.forget(id);
    for (const p of [...this.pending.values()]) if (now - p.lastHeard > this.opts.deadAfterMs) this.forget(p.id);
    return dead;
  }

  /**
   * Drops pending members that have not become reachable within
   * confirmWithinMs, refusing them for cooldownMs; returns their ids. One
   * `dialing` says is being dialed is not dropped before that dial ends: on a
   * loaded machine a first dial (a Noise handshake through a busy peer) takes
   * longer than confirmWithinMs, and a connection that opens a moment after the
   * drop came too late (docs/mesh.md "Admission"). The dial's own timeout bounds the wait.
   */
  expirePending(now: number, dialing: (id: string) => boolean = () => false): string[] {
    const out: string[] = [];
    for (const p of this.pending.values()) if (now - p.since > this.confirmWithinMs && !dialing(p.id)) out.push(p.id);
    for (const id of out) {
      this.pending.delete(id);
      this.cooldown.delete(id);
      this.cooldown.set(id, now + this.cooldownMs);
      if (this.cooldown.size > this.maxTombstones) this.cooldown.delete(this.cooldown.keys().next().value!);
    }
    return out;
  }

  /**
   * A connection to `id` opened: it is reachable after all, so a cooldown for
   * never becoming reachable no longer holds (its next heartbeat is a new
   * identity's again, through the admission bucket). True if one was lifted.
   */
  reachable(id: string): boolean {
    return this.cooldown.delete(id);
  }

  /** Removes a member (admitted or pending) at once (e.g. it was declared dead), leaving a tombstone. */
  forget(id: string): boolean {
    const m = this.byId.get(id) ?? this.pending.get(id);
    if (!m || m.self) return false;
    this.byId.delete(id);
    this.pending.delete(id);
    this.suspectSince.delete(id);
    this.tombstones.delete(id);
    this.tombstones.set(id, { incarnation: m.incarnation, seq: m.seq });
    if (this.tombstones.size > this.maxTombstones) this.tombstones.delete(this.tombstones.keys().next().value!);
    return true;
  }

  /** Whether an admitted member is suspect: silent past the dead rule, within the grace before it is declared dead. */
  isSuspect(id: string): boolean {
    return this.suspectSince.has(id);
  }

  /** An admitted member (pending ones are not members yet). */
  get(id: string): MemberInfo | undefined {
    return this.byId.get(id);
  }

  /** A pending member's latest heartbeat. */
  getPending(id: string): MemberInfo | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    const { since: _since, ...info } = p;
    return info;
  }

  /** Whether `id` is admitted or pending. */
  knows(id: string): boolean {
    return this.byId.has(id) || this.pending.has(id);
  }

  /** Ids of pending members. */
  pendingIds(): string[] {
    return [...this.pending.keys()];
  }

  /** Sizes of the bounded maps (for tests and metrics). */
  sizes(): { members: number; pending: number; tombstones: number; cooldown: number } {
    return { members: this.byId.size, pending: this.pending.size, tombstones: this.tombstones.size, cooldown: this.cooldown.size };
  }

  /** All admitted live members (active and leaving), self included, sorted by id. */
  all(): MemberInfo[] {
    return [...this.byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Admitted live members that own hosts: state active and capacity > 0, with
   * their capacities; of the others, only those `include` accepts (the agent
   * decides: a member that has not proven its handoff round, or one found not
   * useful, stays out: docs/mesh.md "Admission").
   */
  ringMembers(include: (m: MemberInfo) => boolean = () => true): Map<string, number> {
    const out = new Map<string, number>();
    for (const m of this.byId.values()) {
      if (ownsHosts(m) && (m.self || include(m))) out.set(m.id, m.capacity);
    }
    return out;
  }
}

/** Whether a member takes a share of the hosts when it is in a ring: active, with capacity. */
export function ownsHosts(m: Pick<MemberInfo, 'state' | 'capacity'>): boolean {
  return m.state === 'active' && m.capacity > 0;
}

/**
 * A token bucket: `burst` tokens, refilled at `perMs` tokens per millisecond.
 * Admission of new identities (docs/mesh.md "Admission").
 */
export class TokenBucket {
  private tokens: number;
  private at: number;
  constructor(private readonly burst: number, private readonly perMs: number, now: number) {
    this.tokens = burst;
    this.at = now;
  }

  take(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + Math.max(0, now - this.at) * this.perMs);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/**
 * Per-key event counts in fixed windows of `windowMs`; `hit` says whether the
 * key is still within `limit` this window. Keys are dropped by `retain`.
 */
export class WindowCounter {
  private readonly counts = new Map<string, { start: number; n: number }>();
  constructor(private readonly windowMs: number, private readonly limit: number) {}

  hit(key: string, now: number): boolean {
    let c = this.counts.get(key);
    if (!c || now - c.start >= this.windowMs) {
      c = { start: now, n: 0 };
      this.counts.set(key, c);
    }
    c.n++;
    return c.n <= this.limit;
  }

  retain(keep: (key: string) => boolean): void {
    for (const k of this.counts.keys()) if (!keep(k)) this.counts.delete(k);
  }

  get size(): number {
    return this.counts.size;
  }
}

/** A member's zone and the weight it declares for it (src/assign/zones.ts). */
export interface MemberZone { zone: string; weight: number }

/**
 * Brings `ring` to exactly the member set `want` (id → capacity), and for a
 * ZonedRing each member to the zone `zoneOf` gives it. Returns the ids added
 * and removed (a capacity, zone or weight change counts as neither; it is applied).
 */
export function syncRing(ring: HostRing | ZonedRing, want: Map<string, number>, zoneOf?: (id: string) => MemberZone): { added: string[]; removed: string[]; changed: boolean } {
  const added: string[] = [];
  const removed: string[] = [];
  let changed = false;
  for (const id of ring.members()) {
    if (!want.has(id)) {
      ring.remove(id);
      removed.push(id);
      changed = true;
    }
  }
  const zoned = ring instanceof ZonedRing ? ring : null;
  for (const [id, cap] of want) {
    const had = ring.capacityOf(id);
    const z = zoned && zoneOf ? zoneOf(id) : { zone: DEFAULT_ZONE, weight: 1 };
    const add = () => (zoned ? zoned.add(id, cap, z.zone, z.weight) : ring.add(id, cap));
    if (had === undefined) {
      add();
      added.push(id);
      changed = true;
    } else if (had !== Math.min(cap, ring.maxCapacity) || (zoned && (zoned.memberZone(id) !== z.zone || zoned.declaredWeight(id) !== z.weight))) {
      add();
      changed = true;
    }
  }
  return { added: added.sort(), removed: removed.sort(), changed };
}

// ---------------------------------------------------------------- the service

export interface MembershipOptions {
  node: MeshNode;
  /** Crawl identifier: one gossip topic per crawl. */
  crawlId: string;
  /** This agent's share of hosts, within [admission.minCapacity, admission.maxCapacity]. Default 1. */
  capacity?: number;
  /** Default node.incarnation. */
  incarnation?: number;
  /** Heartbeat interval, ms. Default 1000. */
  intervalMs?: number;
  /** Silence after which a member without a connection is dead, ms. Default 5 × intervalMs. */
  deadAfterMs?: number;
  /** A member that meets the dead rule stays suspect this long before it is declared dead, ms. Default 0. */
  suspectGraceMs?: number;
  /** Counters to publish, read at every heartbeat. Default all zero. */
  counters?: () => MemberCounters;
  /** Summary of the crawl policy in force (src/policy/sync.ts), read at every heartbeat; none by default. */
  policySummary?: () => string | undefined;
  /** Most members tracked (bounds memory against a flood of identities). Default admission.maxMembers. */
  maxMembers?: number;
  /**
   * Whether another member enters our ring only once vouch() was called for it
   * (the agent calls it when the member's first handoff marker arrives:
   * docs/mesh.md "Admission"). Default false: every admitted member is in the ring.
   */
  ringNeedsVouch?: boolean;
  /** Limits on what heartbeats may claim and how fast they are admitted; defaults in src/config.ts. */
  admission?: Partial<MeshAdmissionConfig>;
  /** Connect to members learned from heartbeats. Default true. */
  autoDial?: boolean;
  ring?: HostRingOptions;
  /** This agent's zone (`--zone`); default the default zone (docs/mesh.md "Zones"). */
  zone?: string;
  /** The weight this agent declares for its zone (`--zone-weight`). Default 1. */
  zoneWeight?: number;
  /** Zone rules (`--zone-rule`), the same on every member. Default none. */
  zoneRules?: readonly ZoneRule[];
  logger?: MeshLogger;
}

export interface MembershipChange {
  /** Ids owning hosts now (active, capacity > 0), sorted; self included unless leaving. */
  members: string[];
  added: string[];
  removed: string[];
  /** Ids declared dead in this change (a subset of removed; the others left gracefully or set capacity 0). */
  dead: string[];
}

export interface MembershipStats {
  published: number;
  publishErrors: number;
  received: number;
  stale: number;
  /** Heartbeats rejected by the topic validator (they cost the relayer gossipsub score), by reason (oversize, json, schema, version, signer, unsigned, capacity). */
  rejected: Record<string, number>;
  /** Valid heartbeats ignored (no score cost, not forwarded), by reason (rate, admission, cooldown, full). */
  ignored: Record<string, number>;
  ignoredFull: number;
  /** Pending identities dropped because they never became reachable. */
  unreachable: number;
  dials: number;
  dialErrors: number;
  /** Dials not started because the global dial budget of the interval was spent. */
  dialsDeferred: number;
  /** Failed dials by cause (./link-failures.ts). */
  dialFailures: Record<string, number>;
  /** Cooldowns ended early because a connection to that identity opened. */
  cooldownsLifted: number;
}

export interface MembershipEvents {
  change: [MembershipChange];
  /** A member's heartbeat was accepted (counters updated). */
  heartbeat: [MemberInfo];
}

/** Most addresses of one member dialed at once; the rest of its (≤ 16) announced addresses are ignored. */
const MAX_DIAL_ADDRS = 8;
/** Refusals are logged at most once per this long, as counts (not one line per message). */
const REFUSAL_LOG_EVERY_MS = 10_000;

/**
 * Membership over gossipsub. Call start() once the node runs (and after
 * dialing a seed, or before: members found later are added as they appear).
 * Events: 'change' (MembershipChange) whenever the ring changes;
 * 'heartbeat' (MemberInfo) for every accepted heartbeat from another member.
 */
/** Most identities remembered as vouched for (a few hundred members, each restarting now and then). */
const MAX_VOUCHED = 4096;

export class Membership extends EventEmitter<MembershipEvents> {
  /** Who owns what: zones first, then the consistent-hash ring of the zone (src/assign/zones.ts). */
  readonly ring: ZonedRing;
  readonly zone: string;
  readonly zoneWeight: number;
  /** Digest of our zone rules (undefined without rules): members whose heartbeats carry another disagree on owners. */
  readonly zoneRulesDigest: string | undefined;
  readonly topic: string;
  readonly stats: MembershipStats = {
    published: 0, publishErrors: 0, received: 0, stale: 0, rejected: {}, ignored: {}, ignoredFull: 0, unreachable: 0, dials: 0, dialErrors: 0, dialsDeferred: 0, dialFailures: {}, cooldownsLifted: 0,
  };
  readonly admission: MeshAdmissionConfig;
  private readonly node: MeshNode;
  private readonly table: MemberTable;
  private readonly log: MeshLogger;
  private readonly intervalMs: number;
  private readonly deadAfterMs: number;
  /** Set when the run ended here (`announceEnd`): no ring change is applied any more. */
  private ringFrozen = false;
  private readonly autoDial: boolean;
  private readonly counters: () => MemberCounters;
  private readonly policySummary: () => string | undefined;
  private capacity: number;
  private readonly incarnation: number;
  private state: MemberState = 'active';
  private readonly ringNeedsVouch: boolean;
  /**
   * Members that proved their first handoff round to us (ringNeedsVouch). Kept after they leave the
   * table (bounded, oldest dropped): one declared dead by mistake, or restarted, is back in our ring
   * with its next heartbeat — it would not send a marker again, having seen no change of its own.
   */
  private readonly vouched = new Set<string>();
  /** Members left out of our ring until the given time (local decision: not useful to us). */
  private readonly excluded = new Map<string, number>();
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private readonly newMembers: TokenBucket;
  private readonly heartbeatRate: WindowCounter;
  private readonly dialing = new Set<string>();
  /** Per member: earliest next dial and consecutive failures (exponential backoff). */
  private readonly dialBackoff = new Map<string, { next: number; failures: number; lastError?: string }>();
  /** Says which identities expired unreachable, and why, at most once per 10 s. */
  private readonly unreachableLog: RateLimitedLog;
  /**
   * Members we declared dead, still dialed (with the same backoff) for a while: one cut off by a partition
   * is only heard again once a connection is back, and neither side may have it as a member or seed then
   * (docs/mesh.md "Partitions longer than the window").
   */
  private readonly departed = new Map<string, { m: MemberInfo; until: number }>();
  /** When each live member was first heard (local clock): only one heard for a while counts as departed. */
  private readonly firstHeard = new Map<string, number>();
  private dialWindow = { start: 0, n: 0 };
  private lastRefusalLog = { at: 0, total: 0 };
  private readonly onMessage = (evt: CustomEvent<Message>) => this.handleMessage(evt.detail);
  private readonly onConnect = (evt: CustomEvent<PeerId>) => this.connected(evt.detail.toString());
  // Decoded heartbeats, passed from the validator to the message handler.
  private readonly validated = new WeakMap<Message, Heartbeat>();

  constructor(opts: MembershipOptions) {
    super();
    this.node = opts.node;
    this.topic = membersTopic(opts.crawlId);
    this.admission = { ...defaultMeshAdmission(), ...opts.admission };
    this.capacity = this.checkCapacity(opts.capacity ?? DEFAULT_MESH.capacity);
    this.incarnation = opts.incarnation ?? opts.node.incarnation;
    this.intervalMs = opts.intervalMs ?? DEFAULT_MESH.heartbeatMs;
    this.deadAfterMs = opts.deadAfterMs ?? DEAD_AFTER_HEARTBEATS * this.intervalMs;
    this.autoDial = opts.autoDial ?? true;
    this.ringNeedsVouch = opts.ringNeedsVouch ?? false;
    this.counters = opts.counters ?? (() => ({ fetched: 0, queued: 0, sent: 0, received: 0 }));
    this.policySummary = opts.policySummary ?? (() => undefined);
    this.log = opts.logger ?? silentLogger;
    this.zone = opts.zone ?? DEFAULT_ZONE;
    this.zoneWeight = opts.zoneWeight ?? 1;
    this.zoneRulesDigest = zoneRulesDigest(opts.zoneRules ?? []);
    this.ring = new ZonedRing({ maxCapacity: this.admission.maxCapacity, ...opts.ring }, opts.zoneRules ?? []);
    this.table = new MemberTable(this.node.id, { deadAfterMs: this.deadAfterMs, maxMembers: opts.maxMembers ?? this.admission.maxMembers, suspectGraceMs: opts.suspectGraceMs });
    this.newMembers = new TokenBucket(this.admission.newMembersBurst, this.admission.newMembersPerInterval / this.intervalMs, Date.now());
    this.heartbeatRate = new WindowCounter(this.intervalMs, this.admission.heartbeatsPerInterval);
    this.unreachableLog = new RateLimitedLog(this.log);
  }

  get selfId(): string {
    return this.node.id;
  }

  /** Subscribes, publishes the first heartbeat and starts the timer. The ring holds self at once. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const pubsub = this.node.libp2p.services.pubsub;
    pubsub.topicValidators.set(this.topic, (from, msg) => this.validate(from, msg));
    pubsub.addEventListener('message', this.onMessage);
    this.node.libp2p.addEventListener('peer:connect', this.onConnect);
    pubsub.subscribe(this.topic);
    this.table.setSelf(this.selfHeartbeat(), Date.now());
    this.applyRing([]);
    await this.beat();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref?.();
  }

  /** Stops heartbeats and unsubscribes. Others declare us dead after deadAfterMs once our connections close. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearInterval(this.timer);
    const pubsub = this.node.libp2p.services.pubsub;
    pubsub.removeEventListener('message', this.onMessage);
    this.node.libp2p.removeEventListener('peer:connect', this.onConnect);
    try {
      pubsub.unsubscribe(this.topic);
    } catch { /* node already stopped */ }
    pubsub.topicValidators.delete(this.topic);
  }

  /**
   * Announces `leaving` (graceful leave, docs/mesh.md "Membership"): published at
   * once; others drop us from their rings, and so does our own ring, so
   * ring.ownerOf() names each of our hosts' new owner for the handoff.
   */
  async leave(): Promise<void> {
    if (this.state === 'leaving') return;
    this.state = 'leaving';
    this.table.setSelf(this.selfHeartbeat(), Date.now());
    this.applyRing([]);
    await this.beat();
  }

  /**
   * Announces `leaving` as the run ends with nothing queued here (`--until-idle`): the others drop us
   * from their rings as from a leaver, not a dead member. Our own ring keeps us: there is nothing to
   * hand over, and no handoff is started.
   */
  async announceEnd(): Promise<void> {
    if (this.state === 'leaving') return;
    this.state = 'leaving';
    // Our ring stays as it is from now on: recomputed, it would leave us out (we are leaving) and start
    // handing our hosts over while the agent closes its store.
    this.ringFrozen = true;
    this.table.setSelf(this.selfHeartbeat(), Date.now());
    await this.beat();
  }

  /**
   * `id` finished its first handoff round towards us (its marker came, after
   * everything it held for our hosts): with ringNeedsVouch, it enters our ring
   * now. A member that is not (or no longer) admitted is ignored.
   */
  vouch(id: string): void {
    if (id === this.node.id || this.vouched.has(id) || !this.table.get(id)) return;
    this.vouched.add(id);
    if (this.vouched.size > MAX_VOUCHED) this.vouched.delete(this.vouched.values().next().value!);
    this.applyRing([]);
  }

  /** Whether `id` may be in our ring (vouched for, or vouching is not required). */
  isVouched(id: string): boolean {
    return !this.ringNeedsVouch || id === this.node.id || this.vouched.has(id);
  }

  /**
   * Leaves `id` out of our ring for `ms` (a member that never acknowledges
   * what we send it: docs/mesh.md "Admission: URL batches…"). Local: other
   * agents decide for themselves. Emits 'change' like a death, without a tombstone.
   */
  exclude(id: string, ms: number): void {
    if (id === this.node.id) return;
    this.excluded.set(id, Date.now() + ms);
    if (this.excluded.size > 4096) this.excluded.delete(this.excluded.keys().next().value!);
    this.applyRing([id]);
  }

  isExcluded(id: string): boolean {
    return this.excluded.has(id);
  }

  /** Changes our capacity (within the admission range, else RangeError); published with the next heartbeat (sent now). */
  async setCapacity(capacity: number): Promise<void> {
    this.capacity = this.checkCapacity(capacity);
    this.table.setSelf(this.selfHeartbeat(), Date.now());
    this.applyRing([]);
    await this.beat();
  }

  /** Ids owning hosts (the ring's members), sorted. */
  view(): string[] {
    return this.ring.members();
  }

  /** Every admitted live member (active or leaving, self included) with its latest counters. */
  members(): MemberInfo[] {
    return this.table.all();
  }

  /** Whether a member is suspect: silent, within the grace before it is taken over (docs/mesh.md "Suspicion before takeover"). */
  isSuspect(id: string): boolean {
    return this.table.isSuspect(id);
  }

  /**
   * How long a live member has been heard: from the first heartbeat our sweep saw to the latest one
   * (local clock; 0 until a sweep saw it). A member that went silent stops ageing here, unlike by the clock.
   */
  heardForMs(id: string): number {
    const m = this.table.get(id);
    const first = this.firstHeard.get(id);
    return m && first !== undefined ? Math.max(0, m.lastHeard - first) : 0;
  }

  /** An admitted member; identities waiting for a connection are not members yet. */
  member(id: string): MemberInfo | undefined {
    return this.table.get(id);
  }

  /** Sizes of the member table's bounded maps and of the per-peer state. */
  sizes(): { members: number; pending: number; tombstones: number; cooldown: number; rateKeys: number; dialKeys: number } {
    return { ...this.table.sizes(), rateKeys: this.heartbeatRate.size, dialKeys: this.dialBackoff.size };
  }

  /** Refused heartbeats by reason: rejected (score cost) and ignored, plus unreachable identities dropped. */
  refusals(): Record<string, number> {
    const out: Record<string, number> = { ...this.stats.rejected };
    for (const [k, v] of Object.entries(this.stats.ignored)) out[k] = (out[k] ?? 0) + v;
    if (this.stats.unreachable) out.unreachable = this.stats.unreachable;
    return out;
  }

  // ------------------------------------------------------------ internals

  private checkCapacity(capacity: number): number {
    const { minCapacity, maxCapacity } = this.admission;
    if (!Number.isFinite(capacity) || capacity < minCapacity || capacity > maxCapacity) {
      throw new RangeError(`capacity must be a number from ${minCapacity} to ${maxCapacity}`);
    }
    return capacity;
  }

  private selfHeartbeat(): Heartbeat {
    const policy = this.policySummary();
    return {
      id: this.node.id,
      addrs: this.node.addrs().slice(0, 16),
      capacity: this.capacity,
      incarnation: this.incarnation,
      state: this.state,
      counters: this.counters(),
      seq: this.seq,
      ...(policy === undefined ? {} : { policy }),
      ...(this.zone === DEFAULT_ZONE ? {} : { zone: this.zone, ...(this.zoneWeight === 1 ? {} : { zoneWeight: this.zoneWeight }) }),
      ...(this.zoneRulesDigest === undefined ? {} : { zoneRules: this.zoneRulesDigest }),
    };
  }

  private async tick(): Promise<void> {
    if (!this.running) return;
    await this.beat();
    const now = Date.now();
    const lastSeen = new Map(this.table.all().map((m) => [m.id, m]));
    for (const id of lastSeen.keys()) if (!this.firstHeard.has(id)) this.firstHeard.set(id, now);
    const dead = this.table.sweep(now, (id) => this.node.isConnected(id));
    for (const id of dead) {
      const m = this.autoDial ? lastSeen.get(id) : undefined;
      // A member heard for a while only: identities that come and go (a hostile churn) leave no dial state behind.
      const heardFor = m ? m.lastHeard - (this.firstHeard.get(id) ?? m.lastHeard) : 0;
      if (m && heardFor >= DEPARTED_MIN_LIFE_DEAD_AFTERS * this.deadAfterMs) this.departed.set(id, { m, until: now + DEPARTED_DIAL_MS });
    }
    for (const id of this.firstHeard.keys()) if (!this.table.knows(id)) this.firstHeard.delete(id);
    for (const [id, d] of this.departed) if (d.until <= now || this.table.get(id) || this.departed.size > MAX_DEPARTED) this.departed.delete(id);
    let expired = false;
    for (const [id, until] of this.excluded) if (until <= now || !this.table.get(id)) { this.excluded.delete(id); expired = true; }
    if (dead.length) {
      this.log.info({ dead }, 'members declared dead');
      this.applyRing(dead);
    } else if (expired) this.applyRing([]);
    // A connection may have opened while its heartbeat was still on the way.
    for (const id of this.table.pendingIds()) if (this.node.isConnected(id)) this.confirm(id);
    const unreachable = this.table.expirePending(now, (id) => this.dialing.has(id));
    this.stats.unreachable += unreachable.length;
    if (unreachable.length) {
      this.unreachableLog.warn('unreachable', {
        ids: unreachable.slice(0, 4).map((id) => ({ id, dialing: this.dialing.has(id), failures: this.dialBackoff.get(id)?.failures ?? 0, lastError: this.dialBackoff.get(id)?.lastError })),
        count: unreachable.length,
      }, 'identities not reachable in time: refused for a cooldown', now);
    }
    // Per-peer state only for identities the table still knows.
    const known = (id: string) => this.table.knows(id);
    this.heartbeatRate.retain(known);
    for (const id of this.dialBackoff.keys()) if (!known(id) && !this.departed.has(id)) this.dialBackoff.delete(id);
    if (this.autoDial) {
      for (const m of this.table.all()) if (!m.self && m.state === 'active') this.maybeDial(m);
      for (const id of this.table.pendingIds()) {
        const m = this.table.getPending(id);
        if (m && m.state === 'active') this.maybeDial(m);
      }
      // A short backoff: the partition's heal should be noticed within seconds, not after a minute's backoff.
      for (const d of this.departed.values()) this.maybeDial(d.m, DEPARTED_MAX_BACKOFF_MS);
    }
    this.logRefusals(now);
  }

  private async beat(): Promise<void> {
    this.seq++;
    const hb = this.selfHeartbeat();
    this.table.setSelf(hb, Date.now());
    try {
      await this.node.libp2p.services.pubsub.publish(this.topic, encodeHeartbeat(hb));
      this.stats.published++;
    } catch (err) {
      this.stats.publishErrors++;
      this.log.debug({ err: (err as Error).message }, 'heartbeat publish failed');
    }
  }

  private reject(reason: string): TopicValidatorResult {
    this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1;
    return TopicValidatorResult.Reject;
  }

  private ignore(reason: string): TopicValidatorResult {
    this.stats.ignored[reason] = (this.stats.ignored[reason] ?? 0) + 1;
    if (reason === 'full') this.stats.ignoredFull++;
    return TopicValidatorResult.Ignore;
  }

  // Runs before gossipsub forwards a message. A rejected heartbeat (malformed,
  // or claiming what no honest agent sends) is neither delivered nor
  // propagated and costs the peer that relayed it (gossipsub peer scoring, P4;
  // parameters in node.ts). An ignored one (valid, but over a rate limit) is
  // dropped without cost: its relayer may be honest.
  private validate(_from: PeerId, msg: Message): TopicValidatorResult {
    if (msg.type !== 'signed') return this.reject('unsigned');
    const d = decodeHeartbeat(msg.data);
    if (!d.ok) return this.reject(d.reason);
    const hb = d.value;
    // StrictSign authenticates the signer; the heartbeat must speak for it.
    if (hb.id !== msg.from.toString()) return this.reject('signer');
    // Refused, not clamped: a member claiming most of the hosts is not one to trust with any.
    if (hb.capacity < this.admission.minCapacity || hb.capacity > this.admission.maxCapacity) return this.reject('capacity');
    const now = Date.now();
    const admission = this.table.admission(hb, now);
    if (admission === 'cooldown' || admission === 'full') return this.ignore(admission);
    // A delayed or replayed heartbeat of a member declared dead: not forwarded, and no per-peer state for it.
    if (admission === 'stale') { this.stats.stale++; return TopicValidatorResult.Ignore; }
    if (admission === 'new' && !this.newMembers.take(now)) return this.ignore('admission');
    if (!this.heartbeatRate.hit(hb.id, now)) return this.ignore('rate');
    this.validated.set(msg, hb);
    return TopicValidatorResult.Accept;
  }

  private handleMessage(msg: Message): void {
    if (msg.topic !== this.topic || !this.running) return;
    const hb = this.validated.get(msg);
    if (!hb) return;
    this.stats.received++;
    const outcome = this.table.observe(hb, Date.now(), this.node.isConnected(hb.id));
    if (outcome === 'stale') { this.stats.stale++; return; }
    if (outcome === 'full' || outcome === 'cooldown') { this.ignore(outcome); return; }
    if (outcome === 'pending') {
      if (this.autoDial && hb.state === 'active') this.maybeDial(this.table.getPending(hb.id)!);
      return;
    }
    const info = this.table.get(hb.id)!;
    this.emit('heartbeat', info);
    this.applyRing([]);
    if (this.autoDial && hb.state === 'active') this.maybeDial(info);
  }

  /** A connection to `id` opened: reachable, so neither pending nor cooled down any more (docs/mesh.md "Admission"). */
  private connected(id: string): void {
    if (this.running && this.table.reachable(id)) this.stats.cooldownsLifted++;
    this.confirm(id);
  }

  /** A pending identity became reachable: it is a member from now on. */
  private confirm(id: string): void {
    if (!this.running || !this.table.confirm(id)) return;
    const info = this.table.get(id)!;
    this.emit('heartbeat', info);
    this.applyRing([]);
  }

  private applyRing(dead: string[]): void {
    if (this.ringFrozen) return;
    const { added, removed, changed } = syncRing(this.ring, this.table.ringMembers((m) => !this.excluded.has(m.id) && this.isVouched(m.id)), (id) => {
      const m = this.table.get(id);
      // The default zone's members declare no weight: theirs is 1, as in zoneOf's hash.
      return { zone: m?.zone ?? DEFAULT_ZONE, weight: m?.zone ? m.zoneWeight ?? 1 : 1 };
    });
    if (!changed) return;
    const change: MembershipChange = { members: this.ring.members(), added, removed, dead: dead.filter((d) => removed.includes(d)) };
    this.log.info(change, 'membership changed');
    this.emit('change', change);
  }

  private logRefusals(now: number): void {
    const counts = this.refusals();
    let total = 0;
    for (const v of Object.values(counts)) total += v;
    if (total === this.lastRefusalLog.total || now - this.lastRefusalLog.at < REFUSAL_LOG_EVERY_MS) return;
    this.log.warn({ refused: counts, since: total - this.lastRefusalLog.total }, 'heartbeats refused (totals by reason)');
    this.lastRefusalLog = { at: now, total };
  }

  // Full mesh: connect to every member we hear of (URL exchange needs direct
  // streams anyway). Only addresses a valid heartbeat of that member announced,
  // completed with its own id; one dial at a time per member, the next one
  // after a backoff that doubles on every failure; at most dialsPerInterval
  // dials per interval in all. So heartbeats cannot turn us into a dialer of
  // arbitrary addresses at any sustained rate.
  private maybeDial(m: MemberInfo, maxBackoffMs = this.admission.maxDialBackoffMs): void {
    if (m.self || this.dialing.has(m.id) || this.node.isConnected(m.id)) return;
    const now = Date.now();
    const backoff = this.dialBackoff.get(m.id);
    if (backoff && now < backoff.next) return;
    if (now - this.dialWindow.start >= this.intervalMs) this.dialWindow = { start: now, n: 0 };
    if (this.dialWindow.n >= this.admission.dialsPerInterval) { this.stats.dialsDeferred++; return; }
    const own = dialableAddrs(m);
    if (!own.length) return;
    let peer: PeerId;
    try {
      peer = peerIdFromString(m.id);
    } catch {
      return;
    }
    this.dialWindow.n++;
    this.dialing.add(m.id);
    const failures = backoff?.failures ?? 0;
    this.dialBackoff.set(m.id, { next: now + Math.min(maxBackoffMs, Math.max(this.intervalMs, 1000) * 2 ** failures), failures, lastError: backoff?.lastError });
    this.stats.dials++;
    void this.node.libp2p.peerStore.merge(peer, { multiaddrs: own.map((a) => a.decapsulateCode(421)) })
      .then(() => this.node.libp2p.dial(peer, { signal: AbortSignal.timeout(10_000) }))
      .then(() => { this.dialBackoff.set(m.id, { next: Date.now() + this.intervalMs, failures: 0 }); })
      .catch((err: Error) => {
        this.stats.dialErrors++;
        const label = failureLabel('dial', err);
        countFailure(this.stats.dialFailures, label);
        const b = this.dialBackoff.get(m.id);
        if (b) { b.failures = Math.min(failures + 1, 30); b.lastError = label; }
        this.log.debug({ peer: m.id, err: err.message }, 'dial to member failed');
      })
      .finally(() => this.dialing.delete(m.id));
  }
}

/** How long a member declared dead is still dialed (a partition that heals within it reconnects). */
const DEPARTED_DIAL_MS = 3600_000;
/** At most this many of them. */
const MAX_DEPARTED = 64;
/** Only a member heard for at least this many dead-after periods is dialed once departed. */
const DEPARTED_MIN_LIFE_DEAD_AFTERS = 3;
/** Their longest dial backoff (one dial at a time each, and dialsPerInterval in all, bound the rate). */
const DEPARTED_MAX_BACKOFF_MS = 5000;

const DIALABLE = /^\/(ip4|ip6|dns|dns4|dns6)\/[^/]+\/tcp\/([0-9]{1,5})(\/p2p\/[^/]+)?$/;

/**
 * The addresses of a member we may dial: TCP multiaddrs (our only transport)
 * with a non-zero port, naming the member's own id (added when missing, so a
 * heartbeat cannot make us dial someone else), at most MAX_DIAL_ADDRS.
 */
export function dialableAddrs(m: Pick<MemberInfo, 'id' | 'addrs'>): Multiaddr[] {
  const out: Multiaddr[] = [];
  for (const a of m.addrs) {
    const match = DIALABLE.exec(a);
    if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) continue;
    try {
      const ma = multiaddr(a);
      const full = ma.getPeerId() ? ma : ma.encapsulate(`/p2p/${m.id}`);
      if (full.getPeerId() === m.id) out.push(full);
    } catch { /* skip unparsable address */ }
    if (out.length >= MAX_DIAL_ADDRS) break;
  }
  return out;
}
