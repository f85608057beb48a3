// Gossip membership (DESIGN.md "Membership"): every agent publishes a signed
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
import { decodeHeartbeat, encodeHeartbeat, membersTopic, type Heartbeat, type MemberCounters, type MemberState } from './wire.js';
import { silentLogger, type MeshLogger, type MeshNode } from './node.js';

/** A member as this agent knows it: its latest heartbeat, plus when we heard it. */
export interface MemberInfo extends Heartbeat {
  /** Local clock (ms) when the latest heartbeat was accepted; for self, when it was sent. */
  lastHeard: number;
  self: boolean;
}

export type ObserveOutcome = 'new' | 'updated' | 'stale' | 'full';

// ---------------------------------------------------------------- pure core

/**
 * The member table: pure state, no I/O, driven by observe() and sweep(). A
 * heartbeat supersedes another of the same member if its (incarnation, seq)
 * is larger; tombstones of recently dead members keep replayed or delayed
 * heartbeats of a dead incarnation from resurrecting it.
 */
export class MemberTable {
  private readonly byId = new Map<string, MemberInfo>();
  private readonly tombstones = new Map<string, { incarnation: number; seq: number }>();
  constructor(
    readonly selfId: string,
    readonly opts: { deadAfterMs: number; maxMembers: number; maxTombstones?: number },
  ) {}

  /** Records our own heartbeat (self is always live). */
  setSelf(hb: Heartbeat, now: number): void {
    this.byId.set(hb.id, { ...hb, lastHeard: now, self: true });
  }

  observe(hb: Heartbeat, now: number): ObserveOutcome {
    if (hb.id === this.selfId) return 'stale'; // our own, echoed back: ignore
    const cur = this.byId.get(hb.id);
    if (cur) {
      if (hb.incarnation < cur.incarnation || (hb.incarnation === cur.incarnation && hb.seq <= cur.seq)) return 'stale';
      this.byId.set(hb.id, { ...hb, lastHeard: now, self: false });
      return 'updated';
    }
    const t = this.tombstones.get(hb.id);
    if (t && (hb.incarnation < t.incarnation || (hb.incarnation === t.incarnation && hb.seq <= t.seq))) return 'stale';
    if (this.byId.size >= this.opts.maxMembers) return 'full';
    this.tombstones.delete(hb.id);
    this.byId.set(hb.id, { ...hb, lastHeard: now, self: false });
    return 'new';
  }

  /** Declares dead every member silent for more than deadAfterMs that has no open connection; returns their ids. */
  sweep(now: number, isConnected: (id: string) => boolean): string[] {
    const dead: string[] = [];
    for (const m of this.byId.values()) {
      if (m.self) continue;
      if (now - m.lastHeard > this.opts.deadAfterMs && !isConnected(m.id)) dead.push(m.id);
    }
    for (const id of dead) this.forget(id);
    return dead;
  }

  /** Removes a member at once (e.g. it was declared dead), leaving a tombstone. */
  forget(id: string): boolean {
    const m = this.byId.get(id);
    if (!m || m.self) return false;
    this.byId.delete(id);
    this.tombstones.set(id, { incarnation: m.incarnation, seq: m.seq });
    const max = this.opts.maxTombstones ?? 4096;
    if (this.tombstones.size > max) this.tombstones.delete(this.tombstones.keys().next().value!);
    return true;
  }

  get(id: string): MemberInfo | undefined {
    return this.byId.get(id);
  }

  /** All live members (active and leaving), self included, sorted by id. */
  all(): MemberInfo[] {
    return [...this.byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Live members that own hosts: state active, ready (first handoff round
   * done, docs/mesh.md "Admission") and capacity > 0, with their capacities;
   * `excluded` ids are left out (members this agent found not useful).
   */
  ringMembers(excluded?: ReadonlyMap<string, number>): Map<string, number> {
    const out = new Map<string, number>();
    for (const m of this.byId.values()) {
      if (m.state === 'active' && m.ready !== false && m.capacity > 0 && !excluded?.has(m.id)) out.set(m.id, m.capacity);
    }
    return out;
  }
}

/**
 * Brings `ring` to exactly the member set `want` (id → capacity). Returns the
 * ids added and removed (a capacity change counts as neither; it is applied).
 */
export function syncRing(ring: HostRing, want: Map<string, number>): { added: string[]; removed: string[]; changed: boolean } {
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
  for (const [id, cap] of want) {
    const had = ring.capacityOf(id);
    if (had === undefined) {
      ring.add(id, cap);
      added.push(id);
      changed = true;
    } else if (had !== Math.min(cap, ring.maxCapacity)) {
      ring.add(id, cap);
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
  /** This agent's share of hosts. Default 1. */
  capacity?: number;
  /** Default node.incarnation. */
  incarnation?: number;
  /** Heartbeat interval, ms. Default 1000. */
  intervalMs?: number;
  /** Silence after which a member without a connection is dead, ms. Default 5 × intervalMs. */
  deadAfterMs?: number;
  /** Counters to publish, read at every heartbeat. Default all zero. */
  counters?: () => MemberCounters;
  /** Most members tracked (bounds memory against a flood of identities). Default 4096. */
  maxMembers?: number;
  /**
   * Whether we own hosts from the start. An agent starts not ready and calls
   * setReady() after its first handoff round (docs/mesh.md "Admission"). Default true.
   */
  ready?: boolean;
  /** Connect to members learned from heartbeats. Default true. */
  autoDial?: boolean;
  ring?: HostRingOptions;
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
  /** Heartbeats rejected by the topic validator, by reason (oversize, json, schema, version, signer). */
  rejected: Record<string, number>;
  ignoredFull: number;
  dials: number;
  dialErrors: number;
}

export interface MembershipEvents {
  change: [MembershipChange];
  /** A member's heartbeat was accepted (counters updated). */
  heartbeat: [MemberInfo];
}

/**
 * Membership over gossipsub. Call start() once the node runs (and after
 * dialing a seed, or before: members found later are added as they appear).
 * Events: 'change' (MembershipChange) whenever the ring changes;
 * 'heartbeat' (MemberInfo) for every accepted heartbeat from another member.
 */
export class Membership extends EventEmitter<MembershipEvents> {
  readonly ring: HostRing;
  readonly topic: string;
  readonly stats: MembershipStats = { published: 0, publishErrors: 0, received: 0, stale: 0, rejected: {}, ignoredFull: 0, dials: 0, dialErrors: 0 };
  private readonly node: MeshNode;
  private readonly table: MemberTable;
  private readonly log: MeshLogger;
  private readonly intervalMs: number;
  private readonly deadAfterMs: number;
  private readonly autoDial: boolean;
  private readonly counters: () => MemberCounters;
  private capacity: number;
  private readonly incarnation: number;
  private state: MemberState = 'active';
  private ready: boolean;
  /** Members left out of our ring until the given time (local decision: not useful to us). */
  private readonly excluded = new Map<string, number>();
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private readonly dialing = new Set<string>();
  private readonly lastDial = new Map<string, number>();
  private readonly onMessage = (evt: CustomEvent<Message>) => this.handleMessage(evt.detail);
  // Decoded heartbeats, passed from the validator to the message handler.
  private readonly validated = new WeakMap<Message, Heartbeat>();

  constructor(opts: MembershipOptions) {
    super();
    this.node = opts.node;
    this.topic = membersTopic(opts.crawlId);
    this.capacity = opts.capacity ?? 1;
    this.incarnation = opts.incarnation ?? opts.node.incarnation;
    this.intervalMs = opts.intervalMs ?? 1000;
    this.deadAfterMs = opts.deadAfterMs ?? 5 * this.intervalMs;
    this.autoDial = opts.autoDial ?? true;
    this.ready = opts.ready ?? true;
    this.counters = opts.counters ?? (() => ({ fetched: 0, queued: 0, sent: 0, received: 0 }));
    this.log = opts.logger ?? silentLogger;
    this.ring = new HostRing(opts.ring);
    this.table = new MemberTable(this.node.id, { deadAfterMs: this.deadAfterMs, maxMembers: opts.maxMembers ?? 4096 });
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
    try {
      pubsub.unsubscribe(this.topic);
    } catch { /* node already stopped */ }
    pubsub.topicValidators.delete(this.topic);
  }

  /**
   * Announces `leaving` (graceful leave, DESIGN.md "Membership"): published at
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

  /** We finished our first handoff round: we own hosts from now on (published at once). */
  async setReady(): Promise<void> {
    if (this.ready) return;
    this.ready = true;
    this.table.setSelf(this.selfHeartbeat(), Date.now());
    this.applyRing([]);
    await this.beat();
  }

  get isReady(): boolean { return this.ready; }

  /**
   * Leaves `id` out of our ring for `ms` (a member that never acknowledges
   * what we send it: docs/mesh.md "Admission"). Local: other agents decide
   * for themselves. Emits 'change' like a death, without a tombstone.
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

  /** Changes our capacity; published with the next heartbeat (sent now). */
  async setCapacity(capacity: number): Promise<void> {
    this.capacity = capacity;
    this.table.setSelf(this.selfHeartbeat(), Date.now());
    this.applyRing([]);
    await this.beat();
  }

  /** Ids owning hosts (the ring's members), sorted. */
  view(): string[] {
    return this.ring.members();
  }

  /** Every live member (active or leaving, self included) with its latest counters. */
  members(): MemberInfo[] {
    return this.table.all();
  }

  member(id: string): MemberInfo | undefined {
    return this.table.get(id);
  }

  // ------------------------------------------------------------ internals

  private selfHeartbeat(): Heartbeat {
    return {
      id: this.node.id,
      addrs: this.node.addrs().slice(0, 16),
      capacity: this.capacity,
      incarnation: this.incarnation,
      state: this.state,
      counters: this.counters(),
      seq: this.seq,
      ...(this.ready ? {} : { ready: false }),
    };
  }

  private async tick(): Promise<void> {
    if (!this.running) return;
    await this.beat();
    const now = Date.now();
    const dead = this.table.sweep(now, (id) => this.node.isConnected(id));
    let expired = false;
    for (const [id, until] of this.excluded) if (until <= now || !this.table.get(id)) { this.excluded.delete(id); expired = true; }
    if (dead.length) {
      this.log.info({ dead }, 'members declared dead');
      this.applyRing(dead);
    } else if (expired) this.applyRing([]);
    if (this.autoDial) for (const m of this.table.all()) if (!m.self && m.state === 'active') this.maybeDial(m);
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

  // Runs before gossipsub forwards a message: a rejected heartbeat is neither
  // delivered nor propagated, and counts against the peer that relayed it
  // (gossipsub peer scoring, P4).
  private validate(_from: PeerId, msg: Message): TopicValidatorResult {
    if (msg.type !== 'signed') return this.reject('unsigned');
    const d = decodeHeartbeat(msg.data);
    if (!d.ok) return this.reject(d.reason);
    // StrictSign authenticates the signer; the heartbeat must speak for it.
    if (d.value.id !== msg.from.toString()) return this.reject('signer');
    this.validated.set(msg, d.value);
    return TopicValidatorResult.Accept;
  }

  private handleMessage(msg: Message): void {
    if (msg.topic !== this.topic || !this.running) return;
    const hb = this.validated.get(msg);
    if (!hb) return;
    this.stats.received++;
    const outcome = this.table.observe(hb, Date.now());
    if (outcome === 'stale') { this.stats.stale++; return; }
    if (outcome === 'full') { this.stats.ignoredFull++; return; }
    const info = this.table.get(hb.id)!;
    this.emit('heartbeat', info);
    this.applyRing([]);
    if (this.autoDial && hb.state === 'active') this.maybeDial(info);
  }

  private applyRing(dead: string[]): void {
    const { added, removed, changed } = syncRing(this.ring, this.table.ringMembers(this.excluded));
    if (!changed) return;
    const change: MembershipChange = { members: this.ring.members(), added, removed, dead: dead.filter((d) => removed.includes(d)) };
    this.log.info(change, 'membership changed');
    this.emit('change', change);
  }

  // Full mesh: connect to every member we hear of (URL exchange needs direct
  // streams anyway). One dial at a time per member, at most one per interval.
  private maybeDial(m: MemberInfo): void {
    if (m.self || this.dialing.has(m.id) || this.node.isConnected(m.id)) return;
    const now = Date.now();
    if (now - (this.lastDial.get(m.id) ?? 0) < Math.max(this.intervalMs, 1000)) return;
    const addrs: Multiaddr[] = [];
    for (const a of m.addrs) {
      try {
        const ma = multiaddr(a);
        addrs.push(ma.getPeerId() ? ma : ma.encapsulate(`/p2p/${m.id}`));
      } catch { /* skip unparsable address */ }
    }
    if (!addrs.length) return;
    let peer: PeerId;
    try {
      peer = peerIdFromString(m.id);
    } catch {
      return;
    }
    // Only addresses naming this member's id: a heartbeat cannot make us dial someone else.
    const own = addrs.filter((a) => a.getPeerId() === m.id);
    if (!own.length) return;
    this.dialing.add(m.id);
    this.lastDial.set(m.id, now);
    this.stats.dials++;
    void this.node.libp2p.peerStore.merge(peer, { multiaddrs: own.map((a) => a.decapsulateCode(421)) })
      .then(() => this.node.libp2p.dial(peer, { signal: AbortSignal.timeout(10_000) }))
      .catch((err: Error) => {
        this.stats.dialErrors++;
        this.log.debug({ peer: m.id, err: err.message }, 'dial to member failed');
      })
      .finally(() => this.dialing.delete(m.id));
    if (this.lastDial.size > 2 * (this.table.all().length + 16)) {
      for (const id of this.lastDial.keys()) if (!this.table.get(id)) this.lastDial.delete(id);
    }
  }
}
