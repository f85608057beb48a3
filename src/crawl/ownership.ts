// Which hosts this agent owns, and what moves when that changes: ring changes,
// handoffs (docs/mesh.md "Handoff protocol"), peer intake (src/crawl/intake.ts:
// its admission of seen entries, docs/mesh.md "Admission: URL batches, seen
// entries, handoffs") and handoff markers (docs/mesh.md "Joining: a member owns hosts once its
// marker came").
//
// Its collaborators come in one `components` object: the store, the frontier,
// the seen-set (DRUM), the handoff gate, and narrow callbacks for what it needs
// back from the agent (routing a URL, admitting one, waking the scheduler). The
// mesh is attached by `start()`: the node calls back into this component while
// it starts, before it exists (markers that arrive meanwhile are kept: the gate
// exists before the node).
import type { BatchOp } from '../store/db.js';
import { seenKey, prefixEnd, hostKey } from '../store/keys.js';
import { decodeEntry, type HostState } from '../frontier/frontier.js';
import { hostOf } from '../url/normalize.js';
import { decodeFetchRecord } from './records.js';
import type { HandoffGate } from './handoff.js';
import type { OwnerRing } from '../assign/zones.js';
import { RecentRings } from './recent-rings.js';
import { DurableHostMap } from './held-hosts.js';
import { PartitionReturns } from './reconcile.js';
import { PeerIntake } from './intake.js';
import { parseZoneRule } from '../assign/zones.js';
import { classifyItem, encodeItem, encodeHandoffMarker, type UrlItem, type MembershipChange } from '../mesh/index.js';
import { shortPeerId } from '../mesh/index.js';
import type { OwnershipComponents, OwnershipMesh, PeerCandidate, OwnedHostData } from './ownership-components.js';

export type { OwnershipComponents, OwnershipMesh, PeerCandidate, OwnedHostData } from './ownership-components.js';

/** store.meta key of the recent rings (src/crawl/recent-rings.ts). */
export const RECENT_RINGS_KEY = Buffer.from('recent-rings');
/** Hosts handed over per exclusive section of the seen-set (their queues are read into memory together). */
export const HANDOFF_CHUNK = 256;
/** store.meta key prefixes of the hosts known only by seen entries, and of those whose replica seen entries we hold (src/crawl/held-hosts.ts). */
export const SETTLED_ONLY_PREFIX = 'settled-only/';
export const REPLICA_HOSTS_PREFIX = 'replica-host/';

export class Ownership<C extends PeerCandidate & { key: Buffer }, D extends OwnedHostData> {
  private mesh: OwnershipMesh | undefined;
  /** The mesh from its creation on, before start(): peer intake only (a joiner listens a while before it starts). */
  private intakeMesh: OwnershipMesh | undefined;
  /** Ownership changes are applied one at a time, in order. */
  private rebalancingP: Promise<void> = Promise.resolve();
  private pending = false;
  private handoffTimer: NodeJS.Timeout | undefined;
  /**
   * Hosts we hold seen entries for (received in a handoff) but no frontier state: a later handoff must include
   * them. Kept in the store (src/crawl/held-hosts.ts): a restarted agent still hands them on.
   */
  private readonly settledOnly: DurableHostMap<Buffer>;
  /**
   * Hosts we hold replica seen entries for (we were a successor of their owner), with that owner: should it
   * go, the entries go to the host's owner now — or, ours now, to our successors (`passReplicas`). Kept in the
   * store too.
   */
  private readonly replicaHosts: DurableHostMap<{ hk: Buffer; from: string }>;
  /** Our last rings: who may send us seen entries for a host (docs/mesh.md "Admission"). */
  private readonly recentRings = new RecentRings();
  /** The last write of recentRings to the store (writes are chained, newest last). */
  private ringsSaved: Promise<void> = Promise.resolve();
  /** We joined a mesh (seed peers, or queues for peers kept from an earlier run): our start-up rings are marked as such. */
  private joiner = false;
  /** What peers send us (src/crawl/intake.ts). */
  private readonly intake: PeerIntake<C, D>;
  /** Members back after we declared them dead (docs/mesh.md "Partitions longer than the window"). */
  private readonly returns = new PartitionReturns({ keepMs: 24 * 3600_000 });
  /** Introductions being queued, per peer (`introduce`). */
  private readonly intros = new Map<string, Promise<void>>();
  /** Queued URLs handed over to their new owners. */
  handedOver = 0;

  constructor(private readonly c: OwnershipComponents<C, D>) {
    const onError = (err: Error) => c.log.warn({ err: err.message }, 'held hosts not saved: a restart may fetch some settled pages again');
    this.settledOnly = new DurableHostMap<Buffer>({
      sublevel: c.store.meta, prefix: SETTLED_ONLY_PREFIX, onError,
      encode: () => Buffer.alloc(0), decode: (host) => hostKey(host),
    });
    this.replicaHosts = new DurableHostMap<{ hk: Buffer; from: string }>({
      sublevel: c.store.meta, prefix: REPLICA_HOSTS_PREFIX, onError,
      encode: (_host, v) => Buffer.from(v.from, 'utf8'),
      decode: (host, b) => (b.length ? { hk: hostKey(host), from: b.toString('utf8') } : undefined),
    });
    this.intake = new PeerIntake({ ...c, mesh: () => this.mesh ?? this.intakeMesh, recentRings: this.recentRings, settledOnly: this.settledOnly, replicaHosts: this.replicaHosts });
  }

  /** Items taken from peers (all kinds). */
  get received(): number { return this.intake.received; }

  get gate(): HandoffGate { return this.c.gate; }
  /** A handoff pass is queued and has not begun. */
  get rebalancePending(): boolean { return this.pending; }
  /** The handoff passes queued so far, done. */
  get rebalancing(): Promise<void> { return this.rebalancingP; }
  /** The recent rings' last write (awaited before the store closes). */
  saved(): Promise<void> { return Promise.all([this.ringsSaved, this.settledOnly.flush(), this.replicaHosts.flush()]).then(() => {}); }
  /** Refusals by reason, of this component's own checks. */
  refusals(): Record<string, number> { return this.intake.refusals(); }
  /** Hosts we hold seen entries for without frontier state (their successors are caught up like our queued hosts'). */
  settledHosts(): Iterable<string> { return this.settledOnly.keys(); }
  /** Hosts we hold replica seen entries for, with the owner that sent them (a leaver passes them on: src/crawl/pass-held.ts). */
  heldReplicaHosts(): Iterable<[string, { hk: Buffer; from: string }]> { return this.replicaHosts.entries(); }
  heldReplicaHost(host: string): { hk: Buffer; from: string } | undefined { return this.replicaHosts.get(host); }

  /**
   * Before the first batch can arrive: who owned what under the rings we had before a restart, and the hosts
   * we held seen entries for without a queue, or as a successor's replicas.
   */
  async restoreRings(): Promise<void> {
    try {
      const settled = await this.settledOnly.restore();
      const replicas = await this.replicaHosts.restore();
      if (settled || replicas) this.c.log.info({ settledOnly: settled, replicaHosts: replicas }, 'held hosts restored');
    } catch (err) { this.c.log.warn({ err: (err as Error).message }, 'saved held hosts unreadable'); }
    try {
      const saved = await this.c.store.meta.get(RECENT_RINGS_KEY);
      if (saved) this.recentRings.restore(JSON.parse(saved.toString('utf8')), { maxCapacity: this.c.config.mesh.admission.maxCapacity, rules: this.c.config.mesh.zoneRules.map(parseZoneRule) });
    } catch (err) { this.c.log.warn({ err: (err as Error).message }, 'saved recent rings unreadable: starting afresh'); }
  }

  /** The mesh exists and batches may arrive (before start): their markers vouch, their seen entries are checked. */
  attach(mesh: OwnershipMesh): void {
    this.intakeMesh = mesh;
  }

  /** The node runs: ownership follows its ring from now on (startHandoffGate). */
  async start(mesh: OwnershipMesh): Promise<void> {
    this.mesh = mesh;
    await this.startHandoffGate(mesh);
  }

  stop(): void {
    if (this.handoffTimer) clearInterval(this.handoffTimer);
  }

  /** 0, or when the host may be contacted (the previous owner's handoff is not complete yet). */
  notBefore(host: string, now: number): number {
    return this.c.gate.notBefore(host, now);
  }

  /**
   * URLs a peer sent (src/crawl/intake.ts). `local`: items of our own outbox (a
   * departed peer's queue re-routed to us), not checked for admission.
   */
  acceptFromPeer(items: UrlItem[], from: string, local = false): Promise<void> {
    return this.intake.accept(items, from, local);
  }

  onMembershipChange(c: MembershipChange): void {
    const mesh = this.mesh;
    if (!mesh) return;
    const { log, metrics, frontier, gate, config } = this.c;
    log.info({ members: c.members.length, added: c.added.map(shortPeerId), removed: c.removed.map(shortPeerId) }, 'membership changed');
    metrics.setMembers({ active: c.members.length });
    // Our ring before this change: whose hosts a member declared dead held.
    const before = this.recentRings.latest();
    const incarnations = new Map(mesh.members().map((m) => [m.id, m.incarnation]));
    const back = this.returns.changed(c, mesh.membership.ring, Date.now(), (id) => incarnations.get(id));
    for (const r of back.rings) this.recentRings.push(r);
    const waitFor = config.mesh.takeoverGraceMs > 0 ? back.cutOff : [];
    for (const id of waitFor) gate.forgetMarker(id);
    if (back.returned.length) log.info({ returned: back.returned.map(shortPeerId), waitForHandoff: waitFor.map(shortPeerId) }, 'members back after we declared them dead');
    this.pushRing(mesh);
    metrics.retainPeers(mesh.members().filter((m) => !m.self).map((m) => shortPeerId(m.id)));
    const now = Date.now();
    for (const d of c.dead) gate.gone(d, now); // crash: take over at once
    // Only members in our ring (or leaving it) may hold our hosts' data: one we left out (it acknowledges
    // nothing) or one that has not sent its first marker yet (it owned nothing) is not waited for.
    const alive = this.markerPeers(mesh, true);
    gate.ringChanged(mesh.membership.ring, alive, c.added, now);
    log.info({ ring: gate.ringId.toString(16), waitingFor: gate.waitingFor().map(shortPeerId) }, 'handoff gate');
    // Before the departed peers' queues are re-routed (their URLs may go to the same new owners). On every
    // change: a leaver is gone from the table only some time after it left our ring.
    this.passReplicas(mesh, c.dead, before);
    // Hosts go back to earlier owners, which may have handed on URLs we sent them.
    if (c.removed.length) mesh.outbox.forgetRecent();
    for (const id of c.removed) this.rerouteOutbox(id);
    for (const id of c.removed) this.resendAcked(id, c.dead.includes(id));
    // Seen entries go out at once, not behind earlier handoffs still waiting for
    // in-flight fetches: the new owners must know what we fetched before they start.
    const moving = [...frontier.allHosts()].filter((h) => this.ownerOf(h.name) !== mesh.id);
    for (const h of moving) frontier.setPaused(h, true);
    this.sendSettled(moving).catch((err: Error) => log.error({ err: err.message }, 'sending seen entries failed'));
    this.scheduleRebalance();
  }

  /**
   * The replica seen entries we hold of hosts whose owner is gone (declared dead, or left and no longer
   * heard). Ours now: they are what we know of the host, and our successors learn them (the replicated
   * frontier's next pass). Another member's now — one that joined after the owner last replicated, or whose
   * view differs — they go to it, passed on (one hop): otherwise its new owner knew nothing of what the
   * dead owner had fetched and fetched it all again (the mesh soak, docs/performance.md "Mesh soak").
   * Queued before our outbox for the departed is re-routed and before held URLs are promoted (a dead-after
   * period later), so they mostly come first; a URL that overtakes them is checked against the seen-set
   * before its fetch once they are in (`checkSeen`).
   */
  private passReplicas(mesh: OwnershipMesh, dead: readonly string[], ringBefore: OwnerRing | undefined): void {
    const byOwner = new Map<string, Buffer[]>();
    let adopted = 0;
    const before = dead.length ? ringBefore : undefined;
    for (const [host, { hk, from }] of this.replicaHosts) {
      // Its sender is gone, or the host's owner just died (our replicas may be from an earlier owner of it).
      const ownerDied = before !== undefined && dead.includes(before.ownerOf(host) ?? '');
      if (mesh.membership.member(from) && !ownerDied) continue;
      // Kept from before a restart: while we start up, a sender we have not heard of yet may well be alive.
      if (!ownerDied && this.c.gate.startingUp) continue;
      this.replicaHosts.delete(host);
      const owner = this.ownerOf(host);
      if (owner === mesh.id) {
        if (!this.c.frontier.host(host) && this.settledOnly.size < 1_000_000) this.settledOnly.set(host, hk);
        adopted++;
        continue;
      }
      const l = byOwner.get(owner);
      if (l) l.push(hk); else byOwner.set(owner, [hk]);
    }
    if (adopted) this.c.standby?.requestPass?.();
    if (byOwner.size === 0) return;
    this.c.log.info({ hosts: [...byOwner.values()].reduce((n, l) => n + l.length, 0), to: [...byOwner.keys()].map(shortPeerId) }, 'seen entries of a departed owner\'s hosts passed on to their new owners');
    void (async () => {
      for (const [owner, hks] of byOwner) {
        const items: UrlItem[] = [];
        for (const hk of hks) items.push(...await this.settledItems(hk, 1));
        if (items.length) await this.handTo(mesh, owner, items);
      }
    })().catch((err: Error) => this.c.log.error({ err: err.message }, 'passing on a departed owner\'s seen entries failed'));
  }

  /** Hands over every host we hold that another agent now owns (after any ring change). */
  scheduleRebalance(): void {
    if (this.pending) return;
    this.pending = true;
    this.rebalancingP = this.rebalancingP.then(async () => {
      this.pending = false;
      const mesh = this.mesh;
      if (!mesh) return;
      const { log, frontier } = this.c;
      const rid = this.c.gate.ringId;
      let failed = false;
      const moving = [...frontier.allHosts()].filter((h) => this.ownerOf(h.name) !== mesh.id);
      // In chunks, one exclusive section of the seen-set each: host by host, an agent holding thousands of
      // hosts (the one given the seeds) waited a seen-set round per host and kept them paused for the whole run.
      for (let i = 0; i < moving.length; i += HANDOFF_CHUNK) {
        const chunk = moving.slice(i, i + HANDOFF_CHUNK);
        try { await this.handOff(chunk); } catch (err) {
          failed = true;
          log.error({ hosts: chunk.length, first: chunk[0]!.name, err: (err as Error).message }, 'handoff failed; will retry on the next change');
          for (const h of chunk) if (frontier.host(h.name) === h) frontier.setPaused(h, false);
        }
      }
      if (moving.length) log.info({ hosts: moving.length }, 'hosts handed over');
      // Hosts we only hold seen entries for (no frontier state) move too.
      for (const [host, hk] of this.settledOnly) {
        const owner = this.ownerOf(host);
        if (owner === mesh.id || frontier.host(host)) continue;
        try {
          const items = await this.settledItems(hk);
          if (items.length) await this.handTo(mesh, owner, items);
          this.c.log.debug({ host, to: shortPeerId(owner), settled: items.length }, 'seen entries of a host handed over');
          this.settledOnly.delete(host);
        } catch (err) { failed = true; log.error({ host, err: (err as Error).message }, 'handing over seen entries failed'); }
      }
      if (!failed) await this.sendMarkers(rid);
    });
  }

  /**
   * "Handoff complete" for ring `rid` to every member that has not had ours
   * yet: queued after everything this pass handed over, on the same ordered
   * streams. Skipped when the ring moved on during the pass (the next pass marks).
   */
  private async sendMarkers(rid: bigint | undefined): Promise<void> {
    const mesh = this.mesh;
    const gate = this.c.gate;
    if (!mesh || rid === undefined || rid !== gate.ringId) return;
    // Joiners too: our marker is what lets them into our peers' rings, and theirs into ours.
    const due = gate.markersDue(this.markerPeers(mesh, false));
    if (due.length) this.c.log.info({ ring: rid.toString(16), to: due.map(shortPeerId) }, 'handoff markers sent');
    await Promise.all(due.map((p) => mesh.forward(p, [encodeHandoffMarker(rid)], true).then(() => gate.markerSent(p, rid))));
  }

  /**
   * Other members that take part in handoffs: active ones (joiners included)
   * to send our markers to, or — `owners` — those that may hold data of our
   * hosts: vouched for (in our ring, or leaving it). Members we left out of our
   * ring for acknowledging nothing take part in neither.
   */
  private markerPeers(mesh: OwnershipMesh, owners: boolean): string[] {
    const ms = mesh.membership;
    return mesh.members()
      .filter((m) => !m.self && !ms.isExcluded(m.id) && (owners ? ms.isVouched(m.id) : m.state === 'active'))
      .map((m) => m.id);
  }

  /** A dead or departed peer's queue goes to the hosts' new owners (ourselves included). */
  private rerouteOutbox(id: string): void {
    const mesh = this.mesh!;
    const log = this.c.log;
    const ring = mesh.membership.ring;
    if (id !== mesh.id && mesh.replicas.queued(id) > 0 && !mesh.replicas.isPaused(id)) {
      // Replica seen entries go to the hosts' new next owner, or are dropped when that is us.
      const nextOwner = (it: UrlItem) => { const n = ring.nextOwnersOf(hostOf(it.url), 2)[1]; return n && n !== mesh.id ? n : null; };
      void mesh.replicas.reassign(id, nextOwner, async () => {})
        .catch((err: Error) => log.error({ peer: id, err: err.message }, 're-routing replica entries failed'));
    }
    if (id === mesh.id || mesh.outbox.queued(id) === 0 || mesh.outbox.isPaused(id)) return;
    void mesh.outbox.reassign(id, (it) => {
      const kind = classifyItem(it).kind;
      if (kind === 'marker' || kind === 'bad') return null; // a marker is meant for that peer only: dropped below
      if (kind === 'replica') { const n = ring.nextOwnersOf(hostOf(it.url), 2)[1]; return n && n !== mesh.id ? n : null; }
      const o = this.ownerOf(hostOf(it.url));
      return o === mesh.id || o === id ? null : o; // back to that peer (a leaver's last resort): ours to hand on again
    }, (its) => this.acceptFromPeer(its.filter((it) => { const kind = classifyItem(it).kind; return kind === 'crawl' || kind === 'seen'; }), id, true),
    // A member left out for never acknowledging: its in-flight batches will not be acked; do not wait for them.
    mesh.membership.isExcluded(id) ? { waitInflightMs: 0 } : {})
      .catch((err: Error) => log.error({ peer: id, err: err.message }, 're-routing an outbox failed'));
  }

  /**
   * URLs a dead peer acknowledged last go again to their hosts' new owners: it may have died before their
   * replicas reached its successors (docs/mesh.md "Replicated frontier"); the owners' seen-sets drop the
   * rest. A peer that left gracefully handed its queue over: its are dropped.
   */
  private resendAcked(id: string, dead: boolean): void {
    const mesh = this.mesh!;
    const items = (mesh.outbox.takeAcked?.(id) ?? []).filter((it) => classifyItem(it).kind === 'crawl');
    if (!dead || items.length === 0) return;
    const mine: UrlItem[] = [];
    const byOwner = new Map<string, UrlItem[]>();
    for (const it of items) {
      const o = this.ownerOf(hostOf(it.url));
      if (o === mesh.id) { mine.push(it); continue; }
      const l = byOwner.get(o);
      if (l) l.push(it); else byOwner.set(o, [it]);
    }
    this.c.log.info({ peer: shortPeerId(id), urls: items.length }, 'URLs the dead peer acknowledged last sent again to their new owners');
    void Promise.all([
      ...(mine.length ? [this.acceptFromPeer(mine, id, true)] : []),
      ...[...byOwner].map(([o, its]) => mesh.forward(o, its, true)),
    ]).catch((err: Error) => this.c.log.error({ peer: shortPeerId(id), err: err.message }, 'sending acknowledged URLs again failed'));
  }

  private async startHandoffGate(mesh: OwnershipMesh): Promise<void> {
    const { gate, config, log } = this.c;
    gate.setSelf(mesh.id);
    this.joiner = config.mesh.peers.length > 0 || mesh.outbox.peers().length > 0 || mesh.replicas.peers().length > 0;
    this.pushRing(mesh);
    // Every member known at start is new to us: it may hold hosts we own (we were away, or never
    // here). Until it is in our ring (its marker came), it owns nothing in our view.
    const others = mesh.members().filter((m) => !m.self).map((m) => m.id);
    gate.ringChanged(mesh.membership.ring, others, others, Date.now());
    // A joiner, or an agent back in a mesh it was part of (its outbox or inbox names peers), contacts
    // no host until a member is in its ring (bounded: peers that never come are given up on).
    if (this.joiner || await mesh.exchange.inboxPeers().then((p) => p.length > 0, () => false)) {
      this.joiner = true;
      gate.holdUntilJoined(Date.now() + config.fetch.totalTimeoutMs + 20 * config.mesh.heartbeatMs, mesh.members().filter((m) => !m.self && m.state === 'active').map((m) => m.id));
      log.info('joining: no host is contacted until a member is in our ring');
    }
    mesh.membership.on('heartbeat', (m) => {
      // A peer restarted without a ring change waits for our marker again; a member new to us gets
      // our marker (its way into our peers' rings) without waiting for a ring change.
      const restarted = gate.heard(m.id, m.incarnation);
      // Introduced at once, not at the end of a pass that joins may keep cutting short: until our first marker
      // reaches it, a member refuses what we hand it (handTo).
      if (m.state === 'active' && !m.self && !gate.introduced(m.id) && !mesh.membership.isExcluded(m.id)) {
        this.introduce(mesh, [m.id]).catch((err: Error) => log.warn({ peer: shortPeerId(m.id), err: err.message }, 'introduction not queued'));
      }
      if (restarted || (m.state === 'active' && this.c.lifecycle() !== 'leaving' && gate.markersDue([m.id]).length > 0 && !mesh.membership.isExcluded(m.id))) this.scheduleRebalance();
    });
    const startedAt = Date.now();
    this.handoffTimer = setInterval(() => {
      gate.prune((id) => mesh.membership.member(id) !== undefined, Date.now());
      // A queue kept from an earlier run for a peer that is not (or no longer) in the mesh:
      // once it could have been heard of, it goes to the hosts' owners.
      if (Date.now() - startedAt > config.mesh.deadAfterMs) {
        for (const p of new Set([...mesh.outbox.peers(), ...mesh.replicas.peers()])) if (!mesh.membership.member(p)) this.rerouteOutbox(p);
      }
      // A member we left out of our ring: whatever reached its queue since (or a re-route that was skipped
      // while another pass held the queue) goes to the hosts' owners too.
      for (const p of mesh.outbox.peers()) if (mesh.membership.isExcluded(p) && mesh.outbox.queued(p) > 0) this.rerouteOutbox(p);
    }, config.mesh.heartbeatMs);
    this.handoffTimer.unref();
    this.scheduleRebalance();
  }

  /**
   * Moves hosts to their new owners: their queued URLs, then the URLs we already
   * fetched or settled (as seen entries), all made durable in our outbox before
   * they leave our frontier. In-flight work on the hosts finishes first, so a
   * new owner never fetches what we are fetching.
   */
  private async handOff(hosts: HostState<D>[]): Promise<void> {
    const mesh = this.mesh!;
    const { store, frontier, drum } = this.c;
    for (const h of hosts) frontier.setPaused(h, true);
    const deadline = Date.now() + 120_000;
    while (hosts.some((h) => h.inFlight || h.data.pendingAcks > 0 || h.loading) && Date.now() < deadline) await sleep(10);
    const going: Array<{ h: HostState<D>; owner: string }> = [];
    for (const h of hosts) {
      const owner = this.ownerOf(h.name);
      if (owner === mesh.id) frontier.setPaused(h, false); else going.push({ h, owner });
    }
    if (going.length === 0) return;
    // Read, send and delete with DRUM rounds held off, so no URL of these hosts is
    // committed to our frontier between the read and the delete.
    const moved = await drum.exclusive(async () => {
      const byOwner = new Map<string, UrlItem[]>();
      const ops: BatchOp[] = [];
      const dropped: Array<{ h: HostState<D>; entries: number }> = [];
      let queuedUrls = 0;
      for (const { h, owner } of going) {
        const entries = await store.frontier.iterator({ gte: h.key, lt: prefixEnd(h.key) }).all();
        const queued: UrlItem[] = [];
        for (const [, v] of entries) {
          const e = decodeEntry(v, h.name);
          if (e) queued.push(encodeItem({ kind: 'crawl', url: e.url, depth: e.depth, hops: 0, sitemap: e.kind === 'sitemap' }));
        }
        await this.c.attachGrants(queued);
        // Seen entries again: those of pages that finished while we waited above.
        const settled = await this.settledItems(h.key);
        // The host's state first: it is in place before any of its URLs can be queued there.
        const state = (await this.c.handOffItems?.(h)) ?? [];
        const l = byOwner.get(owner);
        if (l) l.push(...state, ...settled, ...queued); else byOwner.set(owner, [...state, ...settled, ...queued]);
        this.c.log.debug({ host: h.name, to: shortPeerId(owner), settled: settled.length, queued: queued.length }, 'host handed over');
        // Their seen entries go too: "queued" is no longer true here, and should the host come
        // back to us with these URLs (a later ring change), they must be taken, not deduplicated.
        for (const [key] of entries) ops.push({ type: 'del', sublevel: store.frontier, key });
        for (const q of queued) ops.push({ type: 'del', sublevel: store.seen, key: seenKey(h.key, q.url) });
        dropped.push({ h, entries: entries.length });
        queuedUrls += queued.length;
      }
      await Promise.all([...byOwner].map(([owner, items]) => this.handTo(mesh, owner, items)));
      await store.db.batch(ops);
      if (queuedUrls) drum.forgetCached();
      for (const { h, entries } of dropped) {
        frontier.dropHost(h, entries);
        this.c.handedOff?.(h.name);
      }
      return queuedUrls;
    });
    this.handedOver += moved;
  }

  /** The URLs of a host we fetched or settled, as seen entries for its next owner (`hops` 1: passed on, not handed over by its owner). */
  private async settledItems(hk: Buffer, hops = 0): Promise<UrlItem[]> {
    const out: UrlItem[] = [];
    for (const [, v] of await this.c.store.fetches.iterator({ gte: hk, lt: prefixEnd(hk) }).all()) {
      const r = decodeFetchRecord(v);
      if (r) out.push(encodeItem({ kind: 'seen', url: r.url, hops }));
    }
    return out;
  }

  private async sendSettled(hosts: HostState<D>[]): Promise<void> {
    const mesh = this.mesh!;
    const byOwner = new Map<string, UrlItem[]>();
    for (const h of hosts) {
      const owner = this.ownerOf(h.name);
      if (owner === mesh.id) continue;
      const items = await this.settledItems(h.key);
      if (!items.length) continue;
      const l = byOwner.get(owner);
      if (l) l.push(...items); else byOwner.set(owner, items);
    }
    await Promise.all([...byOwner].map(([owner, items]) => this.handTo(mesh, owner, items)));
  }

  /**
   * Hands `items` (seen entries, a host's state, its queued URLs) to `peer`, introduced first: a member
   * that has never had a marker from us has not counted us in, and refuses our seen entries as a
   * stranger's (`seen-not-owner`) — in the mesh soak a member whose passes kept being cut short by
   * joins sent its first marker to a newcomer 23 s after handing it hosts, and the newcomer fetched their
   * settled pages again (docs/performance.md "Mesh soak"). The introduction is queued ahead of the items
   * on the same ordered stream, and the receiver vouches for us as it reads it (src/crawl/intake.ts).
   */
  private async handTo(mesh: OwnershipMesh, peer: string, items: UrlItem[]): Promise<void> {
    await this.introduce(mesh, [peer]);
    await mesh.forward(peer, items, true);
  }

  /**
   * An introduction (docs/mesh.md "Handoff protocol"): a marker for our ring without the peer, to each of
   * `peers` that has had no marker from us yet. It claims nothing the receiver could act on — a ring
   * without it is never its own, so no gate of its clears — but it vouches for us: we enter its ring,
   * and what we hand it next is taken from a member it counts. Returns the peers introduced by this call
   * or by one still on its way (queued now, not yet acknowledged).
   */
  async introduce(mesh: OwnershipMesh, peers: Iterable<string>): Promise<string[]> {
    const gate = this.c.gate;
    const wanted = [...new Set(peers)].filter((p) => p !== mesh.id && !gate.introduced(p));
    // One introduction per peer: a caller that finds one on its way waits until it is queued (its data must come after).
    const due = wanted.filter((p) => !this.intros.has(p));
    for (const p of due) {
      const rid = gate.introRingId(p);
      this.intros.set(p, mesh.forward(p, [encodeHandoffMarker(rid)], true).then(() => {
        // A pass's marker for our ring may have gone meanwhile: it is the later word, keep it.
        if (!gate.introduced(p)) gate.markerSent(p, rid);
      }).finally(() => this.intros.delete(p)));
    }
    await Promise.all(wanted.map((p) => this.intros.get(p)));
    if (due.length) this.c.log.debug({ to: due.map(shortPeerId) }, 'introduced to members');
    return wanted;
  }

  /** Admission figures (docs/mesh.md "Admission"): every refusal by reason, rate limiting, members left out. */
  meshSummary(): Record<string, unknown> {
    const mesh = this.mesh!;
    const ex = mesh.exchange.stats();
    return {
      refused: { ...ex.rejected, ...this.intake.refusals() },
      throttled: ex.throttled,
      excluded: { ...mesh.stats.excluded },
      forgottenPeers: mesh.stats.forgotten,
      heartbeatsRejected: { ...mesh.membership.stats.rejected },
      handoff: { ...this.c.gate.stats },
    };
  }

  /** The host's owner (by our ring, or as the agent says while it leaves: components.ownerOf). */
  private ownerOf(host: string): string { return this.c.ownerOf ? this.c.ownerOf(host) : this.mesh!.ownerOf(host); }

  /** Records our ring in the recent rings and keeps them in the store (they survive a crash). */
  private pushRing(mesh: OwnershipMesh): void {
    // A joiner's rings of its start-up do not show it holding hosts (src/crawl/recent-rings.ts `passedOn`).
    this.recentRings.push(mesh.membership.ring, this.joiner && this.c.gate.startupNotEnded);
    const value = Buffer.from(JSON.stringify(this.recentRings.toJSON()));
    this.ringsSaved = this.ringsSaved.then(() => this.c.store.meta.put(RECENT_RINGS_KEY, value))
      .catch((err: Error) => this.c.log.warn({ err: err.message }, 'recent rings not saved: a restart may refuse seen entries sent under them'));
  }
}

function sleep(ms: number): Promise<void> { return new Promise((r) => setTimeout(r, ms)); }
