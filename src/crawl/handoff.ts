// The receiving side of a host handoff (docs/mesh.md "Handoff protocol"):
// which hosts this agent owns but must not contact yet, because an agent that
// may have held them (their previous owner, or a member we just learned of)
// has not said "handoff complete" for our current ring.
//
// Pure and synchronous (the clock is passed in); src/crawl/ownership.ts feeds it
// ring changes, markers and deaths, and the agent asks `notBefore(host)` before a turn.
import { ZonedRing, copyRing, zoneOfMember, zoneWeightOfMember, type OwnerRing, type ZoneRule } from '../assign/zones.js';
import { xxh64 } from '../hash/xxhash.js';

/**
 * A ring's identity: xxhash64 of its sorted `id:capacity` list (`@zone*weight`
 * appended for members outside the default zone). Two agents with the same
 * view compute the same id, so a marker names exactly the assignment it was made under.
 */
export function ringIdOf(ring: OwnerRing): bigint {
  return xxh64(ring.members().map((id) => {
    const zone = zoneOfMember(ring, id);
    return `${id}:${ring.capacityOf(id)}${zone ? `@${zone}*${zoneWeightOfMember(ring, id)}` : ''}`;
  }).join(','));
}

/** A frozen copy of a ring (the live one is updated in place by Membership). */
export function snapshotRing(ring: OwnerRing): ZonedRing {
  return copyRing(ring);
}

interface Gate {
  /** Hosts this gate holds: those `before` did not give us; null = every host we own. */
  before: OwnerRing | null;
  /** Peers whose marker for our current ring we still wait for. */
  waiting: Set<string>;
  createdAt: number;
  deadline: number;
  /** Its fallback time: how long a peer may go without handing us anything before the gate gives up on it. */
  timeoutMs: number;
  /** When `waiting` became empty (or the deadline passed); NaN while open. */
  clearedAt: number;
  /** The gate of members that appeared without a marker (one at a time, shared: docs/mesh.md "Admission"). */
  newcomers: boolean;
}

export interface HandoffGateOptions {
  /** Longest wait for a live peer's marker (the fallback for a lost marker or a wedged peer), ms. */
  timeoutMs: number;
  /** After a gate clears, its hosts wait this long more (politeness floor: the previous owner's last request may have just ended), ms. */
  floorMs: number;
  /** How soon a blocked host is looked at again, ms. */
  recheckMs?: number;
  /**
   * Longest wait for a member that appeared (entered the ring) without having
   * sent us any marker. Newcomers share one gate: a newcomer joins the open one
   * without moving its deadline. Default timeoutMs.
   */
  newcomerTimeoutMs?: number;
  /**
   * Longest wait of a gate whose peers keep handing data over (`progress`): each
   * handoff item from a peer it waits for pushes its deadline to a fallback time
   * after it, up to this long after the gate opened. Default 4 × timeoutMs.
   */
  maxWaitMs?: number;
  /** After a newcomer gate gave up, no newcomer gate opens for this long (bounds churning identities). Default 0. */
  newcomerCooldownMs?: number;
  /**
   * A peer that has cost this much waiting in total (gates that gave up on it)
   * without ever sending a marker is *silent*: no gate waits for it until its
   * first marker. Default Infinity (every gate waits for it).
   */
  silentAfterMs?: number;
}

export interface HandoffGateStats {
  gates: number;
  markers: number;
  /** Peers that stopped being waited for because they died or vanished. */
  deadCleared: number;
  /** Gates that gave up waiting (timeout fallback). */
  timedOut: number;
  /** Newcomers not waited for: during the cooldown, or silent. */
  newcomersSkipped: number;
  /** Peers that became silent. */
  silenced: number;
}

export class HandoffGate {
  readonly stats: HandoffGateStats = { gates: 0, markers: 0, deadCleared: 0, timedOut: 0, newcomersSkipped: 0, silenced: 0 };
  private gates: Gate[] = [];
  private ring: OwnerRing | null = null;
  private rid = -1n;
  /**
   * Latest marker ring id per peer, and when it came. A peer may be ahead of us — its marker may even come
   * before we know it as a member — and its marker counts once we catch up.
   */
  private readonly lastMarker = new Map<string, { ring: bigint; at: number }>();
  /** Leavers whose marker came after they stopped owning anything: it holds for every later ring. */
  private readonly finished = new Set<string>();
  private readonly recheckMs: number;
  /** Ring id of the last marker we queued for each peer (sending side). */
  private readonly sent = new Map<string, bigint>();
  /** Last incarnation seen per peer: a higher one is a restart, which needs our marker again. */
  private readonly incarnations = new Map<string, number>();
  /** Waiting a gate gave up on, per peer that never sent a marker (ms, summed): silentAfterMs bounds it. */
  private readonly waitedFor = new Map<string, number>();
  private readonly silent = new Set<string>();
  private newcomerCooldownUntil = 0;
  /** Until when every host waits for us to join (holdUntilJoined); 0 = no hold. */
  private joinHoldUntil = 0;
  /** Until the gates opened while we start (or join) have all cleared: see `startingUp`. */
  private startup = true;
  /** Members known when we joined whose marker for our ring start-up also waits for (holdUntilJoined), and until when. */
  private readonly startupExpects = new Set<string>();
  private startupUntil = 0;
  /** The latest clock a caller gave us (for `startingUp`, which takes none). */
  private lastNow = 0;
  /** Peers whose marker for a ring of ours (us in it) came: they have handed us our hosts at least once. */
  private readonly handedToUs = new Set<string>();
  /** Members active in the mesh when we joined it (holdUntilJoined): they may have held any host of ours. */
  private readonly knownAtJoin = new Set<string>();

  /**
   * `self` may be set later (`setSelf`): the agent creates the gate before its
   * node exists, so that markers arriving while it starts are not lost.
   */
  constructor(private self: string, private readonly opts: HandoffGateOptions) {
    this.recheckMs = opts.recheckMs ?? 200;
  }

  setSelf(id: string): void { this.self = id; }

  /**
   * A joiner (or an agent restarted into a mesh) owns every host in its own
   * view until another member enters its ring — and another member enters it
   * only once its marker came (docs/mesh.md "Admission"). Until then (or
   * `until`), no host may be contacted: members we have not heard of yet may
   * hold them. The first member in our ring then opens the newcomer gate.
   */
  holdUntilJoined(until: number, known: readonly string[] = []): void {
    this.startup = true;
    // Start-up also lasts until each member we knew at the start has handed us our hosts (its
    // marker for our ring): one that joins our ring after our gates cleared still hands over.
    for (const p of known) if (p !== this.self && this.lastMarker.get(p)?.ring !== this.rid) this.startupExpects.add(p);
    for (const p of known) if (p !== this.self) this.knownAtJoin.add(p);
    this.startupUntil = until;
    // Members whose markers came while we started may be in our ring already: nothing to hold for.
    if (this.ring?.members().some((m) => m !== this.self)) return;
    this.joinHoldUntil = until;
  }

  /**
   * True from start-up (or holdUntilJoined) until every gate opened meanwhile
   * has cleared: the time in which peers hand us what they held of our hosts
   * while we were not in their rings (docs/mesh.md "Admission").
   */
  get startingUp(): boolean {
    this.endStartupIfClear();
    return this.startup;
  }

  /** `startingUp` as last settled, without ending start-up here (for a record of the time, not a decision). */
  get startupNotEnded(): boolean { return this.startup; }

  /** Start-up ends the first moment nothing holds us (checked before any later gate can open). */
  private endStartupIfClear(): void {
    if (!this.self || !this.startup) return; // (no self: the agent has not started its gate yet)
    if (this.startupExpects.size > 0 && this.lastNow < this.startupUntil) return;
    if (!this.joinHoldUntil && this.gates.every((g) => !Number.isNaN(g.clearedAt))) { this.startup = false; this.startupExpects.clear(); }
  }

  /** Whether the hold of holdUntilJoined() is still on. */
  get joining(): boolean { return this.joinHoldUntil > 0; }

  /** Our current ring id (what our own markers carry). */
  get ringId(): bigint { return this.rid; }

  /**
   * The ring changed to `ring`. `alive`: the other live members (active or
   * leaving); `added`: members new to the ring in this change. Two gates:
   * the hosts we gained (previous ring's owner was someone else) wait for
   * every live peer; and when a member appeared, every host we own waits for
   * it (it may have crawled them while we did not know it: a joiner before it
   * saw the mesh, an agent restarted after a crash).
   */
  ringChanged(ring: OwnerRing, alive: readonly string[], added: readonly string[], now: number): void {
    this.lastNow = Math.max(this.lastNow, now);
    if (this.ring) this.endStartupIfClear(); // (the first ring opens the start-up gates, below)
    for (const p of added) this.finished.delete(p); // a leaver back as a member owns hosts again
    if (this.joinHoldUntil && ring.members().some((m) => m !== this.self)) this.joinHoldUntil = 0;
    const before = this.ring;
    this.ring = snapshotRing(ring);
    this.rid = ringIdOf(this.ring);
    for (const [p, m] of this.lastMarker) if (m.ring === this.rid) this.handedToUs.add(p);
    for (const g of this.gates) for (const p of g.waiting) if (this.lastMarker.get(p)?.ring === this.rid) g.waiting.delete(p);
    for (const p of this.startupExpects) if (this.lastMarker.get(p)?.ring === this.rid) this.startupExpects.delete(p);
    const others = alive.filter((p) => p !== this.self && this.lastMarker.get(p)?.ring !== this.rid && !this.finished.has(p) && !this.silent.has(p));
    if (before && others.length) this.open(before, others, now, this.opts.timeoutMs);
    // A member that sent us a marker for this ring has handed over what it held for us; the others may hold our hosts' data.
    const newcomers = added.filter((p) => p !== this.self && alive.includes(p) && this.lastMarker.get(p)?.ring !== this.rid);
    const wait = newcomers.filter((p) => !this.silent.has(p));
    this.stats.newcomersSkipped += newcomers.length - wait.length;
    if (wait.length) {
      const open = this.gates.find((g) => g.newcomers && Number.isNaN(g.clearedAt));
      if (open) for (const p of wait) open.waiting.add(p);
      else if (now < this.newcomerCooldownUntil) this.stats.newcomersSkipped += wait.length;
      else this.open(null, wait, now, this.opts.newcomerTimeoutMs ?? this.opts.timeoutMs, true);
    }
    this.sweep(now);
  }

  /**
   * A peer's marker arrived (after everything it queued for us before it).
   * `leaving`: the sender is leaving and owns nothing, so "I hold nothing for
   * hosts I do not own" is true under any ring: it clears every wait on it.
   */
  marker(from: string, ringId: bigint, now: number, leaving = false): void {
    this.stats.markers++;
    this.lastMarker.set(from, { ring: ringId, at: now });
    this.silent.delete(from);
    this.waitedFor.delete(from);
    if (leaving) this.finished.add(from);
    // Only a marker for our own ring says the peer handed us our hosts: a joiner's first marker is
    // for a ring without us in it (docs/mesh.md "Admission"), so it clears no gate of ours.
    for (const g of this.gates) if (leaving || ringId === this.rid) g.waiting.delete(from);
    if (leaving || ringId === this.rid) this.startupExpects.delete(from);
    if (leaving || ringId === this.rid) this.handedToUs.add(from);
    this.sweep(now);
  }

  /**
   * Handoff data from a peer arrived (seen entries, a host's state, queued URLs
   * of a host it hands over): its pass towards us is under way, only slow (a
   * loaded machine; in-flight fetches it waits for), so the gates waiting for it
   * do not give up yet. Their fallback is for a lost marker or a wedged peer
   * (docs/mesh.md "Handoff protocol"): counted from the peer's last handoff
   * data, bounded by maxWaitMs from the gate's opening.
   */
  progress(from: string, now: number): void {
    const max = this.opts.maxWaitMs ?? 4 * this.opts.timeoutMs;
    for (const g of this.gates) {
      if (!Number.isNaN(g.clearedAt) || !g.waiting.has(from)) continue;
      g.deadline = Math.max(g.deadline, Math.min(g.createdAt + max, now + g.timeoutMs));
    }
  }

  /**
   * A peer was declared dead (or is gone): take over at once, do not wait for
   * it. Its last marker is kept (until prune): declared dead by mistake, it
   * comes back under the same incarnation with nothing new to say; a restart
   * (a higher incarnation, `heard`) forgets it.
   */
  gone(peer: string, now: number): void {
    this.finished.delete(peer);
    this.sent.delete(peer);
    this.silent.delete(peer);
    this.waitedFor.delete(peer);
    for (const g of this.gates) if (g.waiting.delete(peer)) this.stats.deadCleared++;
    this.startupExpects.delete(peer);
    this.handedToUs.delete(peer);
    this.sweep(now);
  }

  /**
   * Forgets the last marker of `peer` (back after we declared it dead past a takeover grace: it may have
   * crawled our hosts meanwhile, docs/mesh.md "Partitions longer than the window"): it is waited for as a newcomer.
   */
  forgetMarker(peer: string): void { this.lastMarker.delete(peer); }

  /** Drops waits on peers that are no longer members (a leaver that went silent is not always a ring change). */
  prune(isMember: (id: string) => boolean, now: number): void {
    for (const g of this.gates) for (const p of g.waiting) if (!isMember(p)) { g.waiting.delete(p); this.stats.deadCleared++; }
    // A marker from a peer we do not know yet is kept a while: it may be ahead of our membership view.
    for (const [p, m] of this.lastMarker) if (!isMember(p) && now - m.at > this.opts.timeoutMs) this.lastMarker.delete(p);
    for (const p of this.finished) if (!isMember(p)) this.finished.delete(p);
    for (const p of this.sent.keys()) if (!isMember(p)) this.sent.delete(p);
    for (const p of this.incarnations.keys()) if (!isMember(p)) this.incarnations.delete(p);
    for (const p of this.silent) if (!isMember(p)) this.silent.delete(p);
    for (const p of this.handedToUs) if (!isMember(p)) this.handedToUs.delete(p);
    for (const p of this.knownAtJoin) if (!isMember(p)) this.knownAtJoin.delete(p);
    for (const p of this.startupExpects) if (!isMember(p)) this.startupExpects.delete(p);
    for (const p of this.waitedFor.keys()) if (!isMember(p)) this.waitedFor.delete(p);
    this.sweep(now);
  }

  /**
   * 0 when `host` (which the caller owns by its current ring) may be contacted
   * now; otherwise the earliest time to look again.
   */
  notBefore(host: string, now: number): number {
    if (this.joinHoldUntil) {
      if (now < this.joinHoldUntil) return now + this.recheckMs;
      this.joinHoldUntil = 0;
      this.stats.timedOut++;
    }
    if (this.gates.length === 0) return 0;
    this.sweep(now);
    let until = 0;
    for (const g of this.gates) {
      if (g.before && g.before.ownerOf(host) === this.self) continue;
      if (g.waiting.size > 0) return now + this.recheckMs;
      const t = g.clearedAt + this.opts.floorMs;
      if (t > now && t > until) until = t;
    }
    return until;
  }

  // ---- sending side: which peers still need our marker for the current ring

  /** Of `peers` (the ring's members), those not yet sent our marker for the current ring. */
  markersDue(peers: readonly string[]): string[] {
    return peers.filter((p) => p !== this.self && this.sent.get(p) !== this.rid);
  }

  markerSent(peer: string, ringId: bigint): void { this.sent.set(peer, ringId); }

  /**
   * Whether we have sent `peer` a marker (for any ring) since we heard of it (or of its restart): its
   * first marker from us is what lets us into its ring (docs/mesh.md "Joining"), so until then it
   * refuses our seen entries as a stranger's.
   */
  introduced(peer: string): boolean { return this.sent.has(peer); }

  /**
   * The ring id an introduction to `peer` carries: our ring without it. "Handoff complete" for a ring
   * without the receiver is true of any sender (the receiver owns nothing in it), and it is never the
   * receiver's own ring (an active member is in its own), so it clears none of its gates: it only
   * vouches for us (docs/mesh.md "Handoff protocol", introductions).
   */
  introRingId(peer: string): bigint {
    if (!this.ring?.members().includes(peer)) return this.rid;
    const r = snapshotRing(this.ring);
    r.remove(peer);
    return ringIdOf(r);
  }

  /** A heartbeat's incarnation; true when the peer restarted (it waits for our marker again). */
  heard(peer: string, incarnation: number): boolean {
    const known = this.incarnations.get(peer);
    this.incarnations.set(peer, incarnation);
    if (known === undefined || incarnation <= known) return false;
    this.sent.delete(peer);
    this.finished.delete(peer);
    this.lastMarker.delete(peer);
    return true;
  }

  /**
   * Whether `peer` is yet to hand us our hosts for the first time: a gate waits for it and no marker of it
   * for a ring with us in it has come. Until then what it holds of our hosts it held as their owner under
   * the ring without us — a member we heard of only after our start-up (a loaded machine) included —
   * so its seen entries for them are taken as its handoff (docs/mesh.md "Admission").
   */
  firstHandoffFrom(peer: string): boolean {
    if (peer === this.self || this.handedToUs.has(peer)) return false;
    return this.gates.some((g) => Number.isNaN(g.clearedAt) && g.waiting.has(peer));
  }

  /** Whether `peer` was an active member of the mesh when we joined it (or came back to it): see holdUntilJoined. */
  wasMemberAtJoin(peer: string): boolean { return this.knownAtJoin.has(peer); }

  /** Peers still waited for (status, logs). */
  waitingFor(): string[] {
    const s = new Set<string>();
    for (const g of this.gates) for (const p of g.waiting) s.add(p);
    return [...s];
  }

  /** Expires gates past their deadline, closes empty ones, forgets cleared ones past the floor. */
  sweep(now: number): void {
    this.lastNow = Math.max(this.lastNow, now);
    // The join hold ends at its deadline even when no host asks (notBefore): start-up must end.
    if (this.joinHoldUntil && now >= this.joinHoldUntil) { this.joinHoldUntil = 0; this.stats.timedOut++; }
    this.endStartupIfClear();
    let drop = false;
    for (const g of this.gates) {
      if (Number.isNaN(g.clearedAt)) {
        if (g.waiting.size === 0) g.clearedAt = now;
        else if (now >= g.deadline) {
          this.stats.timedOut++;
          for (const p of g.waiting) this.gaveUpOn(p, g.deadline - g.createdAt);
          if (g.newcomers) this.newcomerCooldownUntil = now + (this.opts.newcomerCooldownMs ?? 0);
          g.waiting.clear();
          g.clearedAt = now;
        }
      }
      if (!Number.isNaN(g.clearedAt) && now >= g.clearedAt + this.opts.floorMs) drop = true;
    }
    if (drop) this.gates = this.gates.filter((g) => Number.isNaN(g.clearedAt) || now < g.clearedAt + this.opts.floorMs);
  }

  /** Peers no gate waits for (they cost silentAfterMs of waiting without a marker). */
  silentPeers(): string[] {
    return [...this.silent];
  }

  private gaveUpOn(peer: string, ms: number): void {
    if (this.lastMarker.has(peer)) return; // it speaks, only late: not silent
    const total = (this.waitedFor.get(peer) ?? 0) + ms;
    this.waitedFor.set(peer, total);
    if (total >= (this.opts.silentAfterMs ?? Infinity) && !this.silent.has(peer)) {
      this.silent.add(peer);
      this.stats.silenced++;
      for (const g of this.gates) g.waiting.delete(peer);
    }
  }

  private open(before: OwnerRing | null, waiting: string[], now: number, timeoutMs: number, newcomers = false): void {
    this.stats.gates++;
    this.gates.push({ before, waiting: new Set(waiting), createdAt: now, deadline: now + timeoutMs, timeoutMs, clearedAt: NaN, newcomers });
  }
}
