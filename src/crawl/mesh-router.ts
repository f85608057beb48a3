// Routing in a mesh (docs/mesh.md): hosts are owned by the consistent-hash ring
// (src/assign/ring.ts); a URL of a host we do not own is forwarded to its owner
// through the outbox, one we do is admitted here. It starts the mesh node
// (src/crawl/mesh.ts) and the ownership component (src/crawl/ownership.ts:
// ring changes, handoffs, peer intake), and runs a graceful leave.
import type { BatchOp, Store } from '../store/db.js';
import type { SyncBarrier } from '../store/sync-barrier.js';
import type { AgentConfig } from '../config.js';
import type { Frontier } from '../frontier/frontier.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { AgentState, MemberReport, ZoneReport } from '../api/backend.js';
import { encodeItem, queueOpsFor, writtenFor, type UrlItem } from '../mesh/index.js';
import { AgentMesh, type MeshHandlers } from './mesh.js';
import { HandoffGate } from './handoff.js';
import { Ownership } from './ownership.js';
import { FrontierReplica, type ReplicaOps } from './frontier-replica.js';
import type { HostHandoff } from './host-handoff.js';
import type { HostStates } from './host-state.js';
import { isStoreFailure, errorText } from './errors.js';
import { queueHere, type Replica, type Router } from './router.js';
import type { Admission } from './admission.js';
import type { Sitemaps } from './sitemaps.js';
import type { MeshPolicyHooks } from './policy-gate.js';
import type { Candidate, HostData } from './candidate.js';
import type { RoutingFacts } from './summary.js';
import type { Logger } from '../util/log.js';
import { shortPeerId } from '../mesh/index.js';
import { successorsOf } from '../assign/ring.js';
import { LeaveReceivers } from './leave-receivers.js';
import { HeldPassOn } from './pass-held.js';

/** Pause between two handoff rounds of a leave while URLs are still queued here. */
const LEAVE_ROUND_MS = 50;
/** Pause between two looks at the outbox while a leave waits for the peers' acknowledgements. */
const LEAVE_ACK_POLL_MS = 200;

export interface MeshRouterComponents {
  config: AgentConfig;
  store: Store;
  frontier: Frontier<HostData>;
  admission: Pick<Admission, 'submit' | 'candidate' | 'followsFromPeer' | 'drum'>;
  sitemaps: Pick<Sitemaps, 'keepGrants' | 'attachGrants'>;
  barrier: Pick<SyncBarrier, 'sync'>;
  metrics: AgentMetrics;
  log: Logger;
  lifecycle(): AgentState;
  /** Wakes the scheduling loop (a marker may have opened a gate). */
  schedulePump(): void;
  /** What our heartbeats tell the others. */
  counters(): { fetched: number; queued: number; began?: boolean };
  /** Nothing in flight or queued here (the mesh's idle detection, src/crawl/mesh.ts). */
  localIdle(): boolean;
  /** Fetches or pages still being processed here: a leave waits for them. */
  working(): boolean;
  /** The whole mesh is idle. */
  onIdle(): void;
  onFatal(err: Error): void;
  stopping(): boolean;
  /** The crawl policy: carried in heartbeats, kept in step over its topic (src/crawl/policy-gate.ts). */
  policy?: MeshPolicyHooks;
  /** A host's state and recrawl entries, handed over with it (src/crawl/host-handoff.ts). */
  hostHandoff?: HostHandoff;
  hostStates?: Pick<HostStates, 'forget' | 'flushed'>;
  /** Starts the mesh node (default: src/crawl/mesh.ts on loopback or the network); a test gives a fake. */
  startMesh?(handlers: MeshHandlers): Promise<AgentMesh>;
}

export class MeshRouter implements Router {
  readonly shared = true;
  private mesh: AgentMesh | undefined;
  private readonly ownership: Ownership<Candidate, HostData>;
  private forwarded = 0;
  /** Another member was ever in the mesh with us (or we join one): a host new to us may have had an owner before. */
  private everShared: boolean;
  /** Our hosts' queued URLs copied to their successors, and theirs held here (docs/mesh.md "Replicated frontier"). */
  readonly frontierReplica: FrontierReplica;
  /** Who we hand to while we leave with nobody else in our ring (src/crawl/leave-receivers.ts). */
  private readonly leaveReceivers: LeaveReceivers;
  /** What we hold for other owners, passed on to their hosts' next successors as we leave (src/crawl/pass-held.ts). */
  private readonly heldPassOn: HeldPassOn;

  constructor(private readonly c: MeshRouterComponents) {
    const { config } = c;
    this.everShared = config.mesh.peers.length > 0;
    const hb = config.mesh.heartbeatMs;
    const gate = new HandoffGate('', {
      // Fallback for a live peer whose marker does not come: its handoff first waits for its in-flight fetches.
      timeoutMs: config.fetch.totalTimeoutMs + 20 * hb,
      floorMs: config.minDelayMs,
      // Members known when we start, whose markers we wait for before crawling (docs/mesh.md "Admission"):
      // waits that give up on one that never speaks add up to silentAfterMs, then it is not waited for.
      newcomerCooldownMs: 40 * hb,
      silentAfterMs: config.fetch.totalTimeoutMs + 20 * hb,
    });
    this.ownership = new Ownership<Candidate, HostData>({
      config, store: c.store, frontier: c.frontier, drum: c.admission.drum, barrier: c.barrier, gate, log: c.log, metrics: c.metrics,
      candidate: (url, depth, kind) => c.admission.candidate(url, undefined, depth, kind),
      followsFromPeer: (cand) => c.admission.followsFromPeer(cand),
      // URLs from peers (and our outbox's re-routes) are relayed: see route().
      route: (cands, sync) => this.route(cands, sync, true),
      attachGrants: (items) => c.sitemaps.attachGrants(items),
      schedulePump: () => c.schedulePump(),
      lifecycle: () => c.lifecycle(),
      standby: {
        hold: (urls) => this.frontierReplica.hold(urls), trimFrom: (from, keys) => this.frontierReplica.trimFrom(from, keys),
        seenOps: (urls) => this.frontierReplica.seenOps(urls), requestPass: () => this.frontierReplica.requestPass(), replicas: config.mesh.replicas,
      },
      hostItems: c.hostHandoff ? (items) => c.hostHandoff!.take(items) : undefined,
      handOffItems: c.hostHandoff ? (h) => c.hostHandoff!.itemsFor(h.name, h.key, h.data, h.data.operatorPaused === true) : undefined,
      handedOff: (host) => c.hostStates?.forget(host),
      ownerOf: (host) => this.ownerFor(host),
      replicaTaken: (hosts) => this.heldPassOn.taken(hosts),
    });
    this.heldPassOn = new HeldPassOn({
      store: c.store, replicas: config.mesh.replicas,
      heldHosts: () => this.ownership.heldReplicaHosts(), heldHost: (host) => this.ownership.heldReplicaHost(host),
    });
    this.leaveReceivers = new LeaveReceivers({ heardWithinMs: config.mesh.deadAfterMs, maxCapacity: config.mesh.admission.maxCapacity });
    this.frontierReplica = new FrontierReplica({
      store: c.store, frontier: c.frontier, drum: c.admission.drum, replicas: config.mesh.replicas, log: c.log,
      // One more dead-after period: a member declared dead by mistake is back in our ring by then.
      promoteAfterMs: config.mesh.deadAfterMs,
      settledHosts: () => this.ownership.settledHosts(),
      promote: (urls) => this.route(urls.map((u) => c.admission.candidate(u.url, undefined, u.depth, u.kind)).filter((x): x is Candidate => x !== null && c.admission.followsFromPeer(x)).map((x) => { x.via = 'promoted'; return x; }), true, true),
    });
  }

  get id(): string { return this.mesh?.id ?? ''; }
  get busy(): boolean { return this.ownership.rebalancePending || this.frontierReplica.busy; }
  get crawlId(): string { return this.c.config.mesh.crawlId; }

  async start(): Promise<void> {
    const { config, store, metrics, log } = this.c;
    const ownership = this.ownership;
    await ownership.restoreRings();
    const handlers: MeshHandlers = {
      // A store that fails to take a peer's batch stops the agent as any failed write does (no ack is sent).
      accept: (items, from) => ownership.acceptFromPeer(items, from).catch((err: unknown) => {
        if (!this.c.stopping() && isStoreFailure(err)) this.c.onFatal(new Error(`store write failed: ${errorText(err)}`));
        throw err;
      }),
      onChange: (ch) => {
        if (ch.members.length > 1 || ch.removed.length > 0) this.everShared = true;
        ownership.onMembershipChange(ch);
        // Members that left with nothing queued (an --until-idle end): what we hold of their queues is stale (src/crawl/left-empty.ts).
        this.frontierReplica.ringChanged(ch.removed.filter((id) => { const m = this.mesh?.membership.member(id); return m?.state === 'leaving' && m.counters.queued === 0; }));
      },
      counters: () => this.c.counters(),
      // A joiner has not heard the mesh's state yet: every member is new to it and not counted, so the
      // mesh would look idle to it before it joined (docs/mesh.md "Admission").
      localIdle: () => this.c.localIdle() && !ownership.gate.startingUp,
      created: (m) => { ownership.attach(m); this.c.policy?.attach(m.node); },
      policy: this.c.policy,
    };
    const mesh = this.mesh = await (this.c.startMesh ? this.c.startMesh(handlers) : AgentMesh.start(config.mesh, config.dataDir, store, handlers, log));
    this.frontierReplica.attach(mesh);
    mesh.on('idle', () => {
      if (!config.untilIdle) { this.c.onIdle(); return; }
      // The run ends with nothing queued here: announced as a leave, so the others take our hosts over as
      // from a leaver (nothing to hand over) rather than as from the dead — whose last acknowledged URLs they
      // would send again to owners that may not know those pages were fetched (docs/mesh.md "Replicated frontier").
      // At most a second for it; the timer is cleared once the announcement is out (a pending one kept the process up).
      let bound: NodeJS.Timeout | undefined;
      void Promise.race([mesh.announceEnd(), new Promise<void>((r) => { bound = setTimeout(r, 1000); })]).catch(() => {})
        .finally(() => { clearTimeout(bound); this.c.onIdle(); });
    });
    mesh.on('forget', (peer) => metrics.removePeer(shortPeerId(peer)));
    mesh.exchange.on('rejected', (reason) => metrics.meshRefused(reason));
    await ownership.start(mesh);
  }

  owns(host: string): boolean { return !this.mesh || this.mesh.ownerOf(host) === this.mesh.id; }

  /**
   * The host's owner by our ring; while we leave with nobody else in our ring, a member we still hear
   * (src/crawl/leave-receivers.ts), which passes the URLs on to the host's owner in its view.
   */
  private ownerFor(host: string): string {
    const mesh = this.mesh!;
    if (this.c.lifecycle() === 'leaving' && mesh.membership.ring.members().length === 0) return this.leaveReceivers.ownerOf(mesh, host) ?? mesh.ownerOf(host);
    return mesh.ownerOf(host);
  }
  ownerOf(host: string): string { return this.mesh ? this.mesh.ownerOf(host) : ''; }

  /**
   * `relay`: the URLs come from a peer (or a departed owner's replica), not from our own pages. They skip
   * the outbox's "recently forwarded" cache: that we sent a URL to a peer lately does not mean the peer still
   * has it — two members whose views disagree about a host pass its URLs back and forth (a handoff each way,
   * then forwards), and the cache dropped such a URL on its second bounce, before the hop limit kept it
   * anywhere (docs/mesh.md "Outbox layout", the mesh soak in docs/performance.md).
   */
  async route(cands: Candidate[], sync = false, relay = false): Promise<void> {
    if (cands.length === 0) return;
    const { admission, sitemaps } = this.c;
    const mesh = this.mesh;
    // Peer intake runs while the mesh starts (a joiner listens first): what comes then is queued here.
    if (!mesh) { await queueHere(admission, sitemaps, cands, sync); return; }
    const local: Candidate[] = [];
    const byOwner = new Map<string, UrlItem[]>();
    const self = mesh.id;
    for (const c of cands) {
      const owner = this.ownerFor(c.host);
      // Past the hop limit a URL stays where it is: views disagree only for a moment (docs/mesh.md).
      if (owner === self || c.hops >= this.c.config.mesh.maxHops) { local.push(c); continue; }
      const items = byOwner.get(owner);
      const item = encodeItem({ kind: 'crawl', url: c.url, depth: c.depth, hops: c.hops + 1, sitemap: c.kind === 'sitemap', grant: c.grant });
      if (items) items.push(item); else byOwner.set(owner, [item]);
    }
    await sitemaps.keepGrants(local);
    const jobs: Promise<unknown>[] = [admission.submit(local, sync)];
    for (const [owner, items] of byOwner) {
      jobs.push(mesh.forward(owner, items, relay).then((n) => { this.forwarded += n; this.c.metrics.urlsForwarded(shortPeerId(owner), n); }));
    }
    await Promise.all(jobs);
    if (sync && byOwner.size > 0) await this.c.barrier.sync(); // the outbox writes
  }

  /**
   * The host's next owner on the ring (who takes it over should we die) learns
   * what we settled, so a crash of ours costs no second fetch of it beyond the
   * pages in flight (docs/mesh.md "Crashes"). The replica seen entry is queued
   * in the same batch as the completion (appended to `ops`): a settled page's
   * replica is on its way or acknowledged, never missing. It leaves on the
   * replica lane at once (src/mesh/exchange.ts), not behind URL batches.
   */
  replicateQueued(items: Candidate[]): ReplicaOps | undefined {
    // Where each newly queued URL came from: enough to trace a page fetched twice back to its path (debug only).
    if (this.c.log.isLevelEnabled('debug')) for (const it of items) this.c.log.debug({ url: it.url, via: it.via ?? 'link', owner: this.owns(it.host) }, 'queued');
    return this.frontierReplica.queueOps(items);
  }

  replicate(host: string, url: string, ops: BatchOp[]): Replica | undefined {
    const mesh = this.mesh;
    if (!mesh) return undefined;
    // The successors that hold the host's queued URLs (docs/mesh.md "Replicated frontier"): this entry trims them there.
    const next = successorsOf(mesh.membership.ring, host, Math.max(1, this.c.config.mesh.replicas)).filter((p) => p !== mesh.id);
    if (next.length === 0) return undefined;
    try {
      const item = [encodeItem({ kind: 'replica', url })];
      return queueOpsFor(mesh.replicas, next.map((peer) => [peer, item] as const), ops, this.c.store.replicas);
    } catch (err) {
      // The mesh is stopping (outbox closed): the page is settled all the same, without a replica.
      this.c.log.debug({ err: (err as Error).message }, 'replicating a seen entry failed');
      return undefined;
    }
  }

  replicated(r: Replica): void { if (this.mesh) writtenFor(this.mesh.replicas, r); }
  notBefore(host: string, now: number): number { return this.ownership.notBefore(host, now); }
  handOn(): void { this.ownership.scheduleRebalance(); }
  initialNextAllowed(now: number): number {
    // An agent that has been alone since it started is the only one that ever contacted its hosts: its first
    // request goes at once (docs/performance.md "Start-up"). Otherwise the previous owner may just have.
    if (!this.everShared) this.everShared = this.mesh?.members().some((m) => !m.self) ?? false;
    return this.everShared ? now + this.c.config.minDelayMs : now;
  }
  sent(): number { return this.forwarded + this.ownership.handedOver; }
  received(): number { return this.ownership.received; }

  members(): MemberReport[] {
    const mesh = this.mesh;
    if (!mesh) return [];
    const shares = mesh.membership.ring.shares();
    return mesh.members().map((m) => ({
      id: shortPeerId(m.id), self: m.self, addrs: m.addrs, state: m.state === 'active' && !mesh.membership.isVouched(m.id) ? 'joining' : mesh.membership.isSuspect(m.id) ? 'suspect' : m.state, capacity: m.capacity, share: shares.get(m.id) ?? 0,
      counters: { ...m.counters }, lastSeen: m.lastHeard, ...(m.zone ? { zone: m.zone } : {}),
    }));
  }

  zones(): ZoneReport[] {
    const mesh = this.mesh;
    return mesh ? mesh.zones.report(mesh.membership.ring, mesh.members()) : [];
  }

  idleWith(): boolean { return false; }

  /**
   * Graceful leave: announce it, hand every host (queued URLs and seen
   * entries) to its new owner, wait until the peers acknowledged all of it.
   * With no other member to hand to, the queue stays on disk for the next
   * start. Bounded by mesh.leaveTimeoutMs; waits on timers and I/O only, so the
   * API and a second signal are answered meanwhile (docs/mesh.md, "Graceful leave").
   */
  async leave(): Promise<void> {
    const mesh = this.mesh;
    if (!mesh) return;
    const { frontier, log, config } = this.c;
    const drum = this.c.admission.drum;
    const ownership = this.ownership;
    log.info('leaving the mesh: handing hosts over');
    // Counted in first: a member that has had no marker from us has not put us in its ring, and once we
    // announce the leave it never will (a leaver owns nothing), so it would refuse every seen entry we hand it
    // (`seen-not-owner`) and fetch those pages again. Our introduction, acknowledged while we are still active,
    // puts us in its ring with the hosts we own (docs/mesh.md "Graceful leave"); bounded, a slow peer costs time only.
    const active = mesh.members().filter((m) => !m.self && m.state === 'active' && !mesh.membership.isExcluded(m.id)).map((m) => m.id);
    const introduced = await ownership.introduce(mesh, active);
    if (introduced.length && !await mesh.outbox.waitEmpty({ peers: introduced, timeoutMs: Math.min(10_000, config.mesh.leaveTimeoutMs / 6) })) {
      log.warn({ peers: introduced.map(shortPeerId) }, 'leaving before every member acknowledged our introduction');
    }
    await mesh.leave();
    // Our own ring no longer holds us: with nobody else in it, and no other member heard of, every host maps back to us.
    const nobodyToHandTo = () => mesh.membership.ring.members().length === 0 && !this.leaveReceivers.ring(mesh);
    if (nobodyToHandTo()) {
      if (frontier.queued > 0) log.warn({ queued: frontier.queued }, 'no other member to hand hosts to: stopping with the queue kept for the next start');
      return;
    }
    const deadline = Date.now() + config.mesh.leaveTimeoutMs;
    // Our queue drains only through handoffs now. URLs still in the DRUM buffer, or
    // arriving from peers that have not yet seen us leave (also while we wait for
    // acknowledgements), or a stalled peer's queue re-routed back to us, land in our
    // frontier after a handoff: repeat until nothing is left here and every peer
    // acknowledged what we queued for it.
    let fallbackLogged = false;
    // The replicas we hold for other owners, passed on to their hosts' next successors: acknowledged before we go
    // (src/crawl/pass-held.ts). Every round: their owners send us more until they see us leave.
    const passOn = this.heldPassOn;
    const passAcked = () => [...passOn.targets].every((p) => mesh.replicas.queued(p) === 0 || !mesh.membership.member(p));
    for (;;) {
      if (!fallbackLogged && mesh.membership.ring.members().length === 0) {
        const to = this.leaveReceivers.ring(mesh)?.members() ?? [];
        if (to.length) { fallbackLogged = true; log.warn({ receivers: to.map(shortPeerId) }, 'our ring names nobody else: handing over to the members we still hear'); }
      }
      await drum.flush();
      try {
        await passOn.round(mesh);
      } catch (err) {
        // The mesh is stopping (outbox closed), or a store read failed: what we hold stays for the next start.
        log.warn({ err: errorText(err) }, 'passing on the replicas held for other owners failed');
      }
      ownership.scheduleRebalance();
      await ownership.rebalancing;
      while ((this.c.working() || ownership.rebalancePending) && Date.now() < deadline) await ownership.rebalancing.then(() => sleep(20));
      const drained = frontier.queued === 0 && !drum.busy;
      if ((drained && mesh.outbox.totalQueued() === 0 && passAcked()) || Date.now() >= deadline || nobodyToHandTo()) break;
      // A real timer between rounds: URLs that cannot move yet must not make this a microtask loop.
      await sleep(drained ? LEAVE_ACK_POLL_MS : LEAVE_ROUND_MS);
    }
    if (passOn.stats.queued + passOn.stats.seen > 0) {
      log.info({ queued: passOn.stats.queued, seen: passOn.stats.seen, to: [...passOn.targets].map(shortPeerId), acknowledged: passAcked() }, 'replicas held for other owners passed on to their hosts\' next successors');
    }
    if (passOn.stats.kept > 0) log.warn({ queued: passOn.stats.kept }, 'left with replicas held for other owners that no other member could take');
    if (frontier.queued > 0) log.warn({ queued: frontier.queued }, 'left with URLs still queued here; they are crawled when this agent returns');
    if (mesh.outbox.totalQueued() > 0) log.warn({ queued: mesh.outbox.totalQueued() }, 'left with URLs not yet acknowledged by their owners; they stay in the outbox for the next start');
  }

  scrape(metrics: AgentMetrics): void {
    const mesh = this.mesh;
    if (!mesh) return;
    const members = mesh.members();
    metrics.setMembers({
      active: members.filter((m) => m.state === 'active' && mesh.membership.isVouched(m.id) && !mesh.membership.isSuspect(m.id)).length,
      suspect: members.filter((m) => mesh.membership.isSuspect(m.id)).length,
      joining: members.filter((m) => m.state === 'active' && !mesh.membership.isVouched(m.id)).length,
      leaving: members.filter((m) => m.state === 'leaving').length,
    });
    metrics.retainPeers(members.filter((m) => !m.self).map((m) => shortPeerId(m.id)));
    for (const m of members) if (!m.self) metrics.setOutboxDepth(shortPeerId(m.id), mesh.outbox.queued(m.id));
    metrics.heartbeatsRefusedTotals(mesh.membership.refusals());
    metrics.setZones(this.zones());
  }

  summary(): RoutingFacts {
    if (!this.mesh) return {};
    return { peerId: this.mesh.id, forwarded: this.sent(), received: this.received(), mesh: { ...this.ownership.meshSummary(), replicatedFrontier: { ...this.frontierReplica.stats, passedOnQueued: this.heldPassOn.stats.queued, passedOnSeen: this.heldPassOn.stats.seen } } };
  }

  quiesce(): void { this.ownership.stop(); this.frontierReplica.stop(); }
  async stop(): Promise<void> { await this.mesh?.stop(); }
  saved(): Promise<void> { return Promise.all([this.ownership.saved(), this.c.hostStates?.flushed()]).then(() => {}); }
}

function sleep(ms: number): Promise<void> { return new Promise((r) => setTimeout(r, ms)); }
