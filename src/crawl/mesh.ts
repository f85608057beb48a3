// An agent's place in the mesh: starts the libp2p node, membership, outbox and
// URL exchange (src/mesh/) in the documented order, answers "who owns this
// host?", forwards URLs to their owners, and detects mesh-wide idleness.
// The agent supplies what happens to URLs that arrive (`accept`) and reacts to
// ownership changes (`onChange`): this module does not touch the frontier.
import { EventEmitter } from 'node:events';
import { createMeshNode, joinThroughPeers, Membership, Outbox, UrlExchange, type MeshNode, type MembershipChange, type UrlItem, type MemberInfo } from '../mesh/index.js';
import type { Store } from '../store/db.js';
import type { Logger } from '../util/log.js';
import { DEFAULT_MESH_EXCHANGE, type MeshConfig } from '../config.js';
import { parseZoneRule } from '../assign/zones.js';
import { ZoneView } from './zone-view.js';
import { awaitedJoiner, ignoredForIdle, joinerWaitMs, type IdleMemberFacts } from './idle-members.js';
import { LinkWatch } from '../mesh/link-watch.js';

/** How often a member alone in its mesh checks whether its run is done (between its heartbeat-paced checks). */
const ALONE_IDLE_CHECK_MS = 50;

export interface MeshHandlers {
  /** URLs a peer sent us; resolve only once they are durable. */
  accept(items: UrlItem[], from: string): Promise<void>;
  /** The ring changed. */
  onChange(change: MembershipChange): void;
  /** This agent's own counters for its heartbeat; `began`: the crawl began here (seeds given, a URL tried), whatever came of it. */
  counters(): { fetched: number; queued: number; began?: boolean };
  /** Nothing queued, in flight or being processed here. */
  localIdle(): boolean;
  /**
   * The mesh exists and batches may arrive, before start() resolves (a joiner first listens for the
   * members' heartbeats): peer intake needs it from here on.
   */
  created?(mesh: AgentMesh): void;
  /** The crawl policy (src/crawl/policy-gate.ts): our `version.digest` for heartbeats, and each member's as heard. */
  policy?: { summary(): string; heard(peer: string, summary: unknown): void };
}

export interface AgentMeshStats {
  /** Members we left out of our ring because they acknowledged nothing (stall) or their queue passed the quota. */
  excluded: { stall: number; quota: number };
  /** Departed peers whose per-peer state was dropped. */
  forgotten: number;
}

export class AgentMesh extends EventEmitter<{ idle: []; forget: [peer: string] }> {
  readonly stats: AgentMeshStats = { excluded: { stall: 0, quota: 0 }, forgotten: 0 };
  /** When our graceful leave began (0: not leaving). */
  private leavingSince = 0;
  /** Since when each peer we keep state for has been out of the member table. */
  private readonly absentSince = new Map<string, number>();
  /** Since when each member has been in the table without having sent us its handoff marker (idle detection stops waiting for it after a while). */
  private readonly joiningSince = new Map<string, number>();
  private ticks = 0;
  private idleStreak = 0;
  /** The crawl has begun somewhere in the mesh: an agent waiting for peers and seeds is not "idle". */
  private sawWork = false;
  private lastSignature = '';
  /** Since when the end of this idle period has waited for joiners (awaitedJoiner); undefined: not waiting. */
  private joinerWaitSince: number | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private aloneIdleTimer: NodeJS.Timeout | undefined;
  private linkWatch: LinkWatch | undefined;
  /** Ends the background dials of seed peers not reached at the join. */
  private readonly joinDials = new AbortController();

  private constructor(
    readonly node: MeshNode,
    readonly membership: Membership,
    readonly outbox: Outbox,
    /** Replica seen entries, sent on their own lane (docs/mesh.md "Crashes"). */
    readonly replicas: Outbox,
    readonly exchange: UrlExchange,
    /** Zones: batches to other zones, traffic per zone (docs/mesh.md "Zones"). */
    readonly zones: ZoneView,
    private readonly cfg: MeshConfig,
    private readonly log: Logger,
  ) { super(); }

  static async start(cfg: MeshConfig, dataDir: string, store: Store, handlers: MeshHandlers, log: Logger): Promise<AgentMesh> {
    const node = await createMeshNode({
      dataDir, listen: cfg.listen, announce: cfg.announce, sourceAddress: cfg.sourceAddress, swarmKeyFile: cfg.swarmKeyFile, crawlId: cfg.crawlId, openMesh: cfg.openMesh, logger: log,
      // A connected member silent this long is dead anyway (src/mesh/membership.ts maxSilenceMs): its connection may go then.
      pingTimeoutMs: Math.max(DEFAULT_MESH_EXCHANGE.pingTimeoutMs, 4 * cfg.deadAfterMs),
    });
    try {
      // The last acknowledged URLs per peer are kept, to send again if it dies (docs/mesh.md "Replicated frontier").
      // Only those acknowledged within the replication window before the death is declared (silence, then grace).
      const outbox = await Outbox.open({
        db: store.outbox, retainAcked: cfg.replicas > 0 ? DEFAULT_MESH_EXCHANGE.retainAckedUrls : 0,
        retainAckedMs: cfg.deadAfterMs + cfg.takeoverGraceMs + DEFAULT_MESH_EXCHANGE.resendWindowMs,
      });
      // No "recently forwarded" cache: every settled page is replicated once anyway.
      const replicas = await Outbox.open({ db: store.replicas, recentSize: 0 });
      let exchange: UrlExchange | undefined;
      let mesh: AgentMesh | undefined;
      const zoneRules = cfg.zoneRules.map(parseZoneRule);
      const membership = new Membership({
        node, crawlId: cfg.crawlId, capacity: cfg.capacity, zone: cfg.zone, zoneWeight: cfg.zoneWeight, zoneRules, intervalMs: cfg.heartbeatMs, deadAfterMs: cfg.deadAfterMs, suspectGraceMs: cfg.takeoverGraceMs, admission: cfg.admission, logger: log,
        // Another member owns hosts in our view once its first handoff marker came (the agent vouches: docs/mesh.md "Admission").
        ringNeedsVouch: true,
        policySummary: handlers.policy ? () => handlers.policy!.summary() : undefined,
        counters: () => {
          const own = handlers.counters();
          const ex = exchange?.idleCounters() ?? { sent: 0, received: 0 };
          const pending = mesh ? mesh.pendingOutbox() : outbox.totalQueued();
          return { fetched: own.fetched, queued: own.queued + pending + (handlers.localIdle() ? 0 : 1), sent: ex.sent, received: ex.received };
        },
      });
      const zones = new ZoneView({
        zone: membership.zone, rulesDigest: membership.zoneRulesDigest,
        crossZone: { lingerMs: cfg.crossZoneLingerMs, maxUrls: DEFAULT_MESH_EXCHANGE.crossZoneBatchMaxUrls, maxBytes: DEFAULT_MESH_EXCHANGE.crossZoneBatchMaxBytes },
      }, (id) => membership.member(id));
      exchange = new UrlExchange({
        node, outbox, batchPolicy: (peer) => zones.batchPolicy(peer), replicaOutbox: replicas, inbox: store.inbox, accept: (items, from) => handlers.accept(items, from), logger: log,
        // Batches only from members (active or leaving, joining or not): docs/mesh.md "Admission".
        admit: (from) => (membership.member(from) ? null : 'not-member'),
        limits: cfg.receiveLimits,
      });
      mesh = new AgentMesh(node, membership, outbox, replicas, exchange, zones, cfg, log);
      handlers.created?.(mesh);
      membership.on('change', (c) => handlers.onChange(c));
      membership.on('heartbeat', (m) => {
        handlers.policy?.heard(m.id, m.policy);
        if (zones.newRulesMismatch(m)) log.warn({ peer: m.id, theirs: m.zoneRules ?? null, ours: membership.zoneRulesDigest ?? null }, 'member applies other --zone-rule lists: its owners differ from ours (docs/mesh.md "Zones")');
      });
      await membership.start();
      await exchange.start();
      mesh.linkWatch = new LinkWatch({
        libp2p: node.libp2p, log, peaks: { get: () => exchange!.peaks(), reset: () => exchange!.resetPeaks() },
        counters: () => {
          const ex = exchange!.stats();
          return { sendFailures: ex.failureReasons ?? {}, dialFailures: membership.stats.dialFailures, refusals: membership.refusals(), refusedBatches: ex.rejected };
        },
      });
      // A joiner keeps trying its seed peers until it hears a member (docs/mesh.md "Joining in any order"),
      // then learns the others from their heartbeats; it routes nothing (seeds) before.
      if (cfg.peers.length) {
        await joinThroughPeers({
          peers: cfg.peers, timeoutMs: cfg.joinTimeoutMs, listenMs: 2.5 * cfg.heartbeatMs, log, signal: mesh.joinDials.signal,
          dial: (p) => node.dialPeer(p), isConnected: (id) => node.isConnected(id), heardMember: () => membership.members().some((m) => !m.self),
        });
      }
      // Checked once per heartbeat interval, so "the same figures twice in a row" spans whole rounds.
      mesh.idleTimer = setInterval(() => { mesh.checkUseful(); mesh.sweepDeparted(); mesh.checkIdle(handlers); }, cfg.heartbeatMs);
      mesh.idleTimer.unref();
      // Alone, no other member's heartbeat can be stale (checkIdle): a run that is done ends within this, not within
      // up to a heartbeat interval.
      mesh.aloneIdleTimer = setInterval(() => { if (mesh.idleStreak === 0 && membership.members().length === 1) mesh.checkIdle(handlers); }, ALONE_IDLE_CHECK_MS);
      mesh.aloneIdleTimer.unref();
      return mesh;
    } catch (err) {
      await node.stop().catch(() => {});
      throw err;
    }
  }

  get id(): string { return this.node.id; }

  ownerOf(host: string): string { return this.membership.ring.ownerOf(host) ?? this.node.id; }

  members(): MemberInfo[] { return this.membership.members(); }

  /** Queues URLs for their owner; resolves once durable in our outbox. */
  forward(owner: string, items: UrlItem[], handoff = false): Promise<number> {
    return this.outbox.enqueue(owner, items, { bypassRecent: handoff }).then((n) => { this.zones.noteForwarded(owner, n); return n; });
  }

  /**
   * A ring member that acknowledges nothing we queue for it, or whose queue
   * passed the quota, is not useful: it leaves our ring for `excludeMs`, so its
   * queue goes to the hosts' other owners (ourselves included) like a dead
   * member's, and our disk stops growing for it (docs/mesh.md "Admission").
   */
  private checkUseful(): void {
    const now = Date.now();
    // While we leave, a member outside our ring we hand to (src/crawl/leave-receivers.ts) counts too, and
    // sooner: the leave is bounded, and what a peer does not take must go to another in time (docs/mesh.md).
    const leaving = this.leavingSince > 0;
    const stallMs = leaving ? Math.min(this.cfg.peerStallMs, this.cfg.leaveTimeoutMs / 6) : this.cfg.peerStallMs;
    for (const p of this.outbox.peers()) {
      const receiver = leaving && this.membership.member(p) !== undefined && !this.membership.isExcluded(p);
      if (!this.membership.ring.capacityOf(p) && !receiver) continue; // not in our ring: its queue is re-routed anyway
      // A suspect member is silent, not misbehaving: the takeover grace decides when its hosts move (docs/mesh.md).
      if (this.membership.isSuspect(p)) continue;
      const quota = this.outbox.queuedBytes(p) > this.cfg.outboxQuotaBytes;
      const stalled = this.outbox.stalledFor(p, now) > stallMs;
      if (!quota && !stalled) continue;
      this.stats.excluded[quota ? 'quota' : 'stall']++;
      this.log.warn({ peer: p, queued: this.outbox.queued(p), bytes: this.outbox.queuedBytes(p), stalledMs: this.outbox.stalledFor(p, now) },
        quota ? 'member over its outbox quota: left out of our ring' : 'member acknowledges nothing: left out of our ring');
      this.membership.exclude(p, this.cfg.excludeMs);
    }
  }

  /** Drops per-peer state (exchange counters and marks, outbox bookkeeping, metric series) of peers gone for a while. */
  private sweepDeparted(): void {
    const now = Date.now();
    const known = new Set(this.exchange.knownPeers());
    for (const p of known) if (!this.absentSince.has(p) && !this.membership.member(p)) this.absentSince.set(p, now);
    // The durable inbox too, now and then: marks left by earlier runs.
    if (this.ticks++ % 64 === 0) {
      void this.exchange.inboxPeers().then((ps) => {
        const t = Date.now();
        for (const p of ps) if (!this.absentSince.has(p) && !this.membership.member(p)) this.absentSince.set(p, t);
      }).catch(() => {});
    }
    for (const [p, since] of this.absentSince) {
      if (this.membership.member(p)) { this.absentSince.delete(p); continue; }
      if (now - since < this.cfg.forgetPeerAfterMs || this.outbox.queued(p) > 0) continue;
      this.absentSince.delete(p);
      this.outbox.forgetPeer(p);
      this.stats.forgotten++;
      void this.exchange.forget(p).catch((err: Error) => this.log.debug({ peer: p, err: err.message }, 'forgetting a peer failed'));
      this.emit('forget', p);
    }
    for (const m of this.membership.members()) {
      if (!this.membership.isVouched(m.id)) { if (!this.joiningSince.has(m.id)) this.joiningSince.set(m.id, now); } else this.joiningSince.delete(m.id);
    }
    for (const p of this.joiningSince.keys()) if (!this.membership.member(p)) this.joiningSince.delete(p);
  }

  /**
   * Mesh-wide idle (docs/mesh.md "In the agent"). Every member's heartbeat reports its
   * frontier *plus its outbox* as `queued`, and a URL leaves a sender's outbox
   * only when the receiver acknowledged it after writing it durably — so
   * "every member reports queued = 0" already means "every URL sent has been
   * received and settled". A plain Σsent = Σreceived test cannot be used: an
   * agent that left or died takes its counters with it, and the sums never
   * balance again. Stale heartbeats are guarded against by requiring the same
   * figures (fetched, sent, received of every member) over three rounds.
   */
  private checkIdle(h: MeshHandlers): void {
    const reset = () => { this.idleStreak = 0; this.lastSignature = ''; };
    // Members we left out of our ring, members that never finish joining and members younger than a
    // dead-after period (a stream of fresh identities) do not hold the crawl open, nor do our queues for them.
    const ignored = (id: string) => this.ignoredForIdle(id);
    if (!h.localIdle() || this.pendingOutbox() > 0) { reset(); this.joinerWaitSince = undefined; return; }
    const members = this.membership.members();
    if (!this.sawWork) {
      const own = h.counters();
      // Pages fetched or queued, not items exchanged: a mesh that formed and traded handoff markers has no work yet.
      // Only members that count: a joiner whose peers are all still unvouched (their markers cross a WAN) would
      // otherwise see their work, count none of them, and call the crawl idle before it took part.
      // A seed whose host failed at once is work too: it may have settled between two checks (docs/politeness.md "Ending a run").
      this.sawWork = own.fetched > 0 || own.queued > 0 || own.began === true || members.some((m) => !m.self && !ignored(m.id) && m.counters.fetched > 0);
      if (!this.sawWork) return;
    }
    // Joiners we heard that have not counted us in yet hold seeds of their own, and need our seen-set: the end
    // waits for them, once per idle period and bounded (src/crawl/idle-members.ts `awaitedJoiner`).
    const now = Date.now();
    if (members.some((m) => !m.self && m.state === 'active' && awaitedJoiner(this.idleFacts(m.id, now), this.cfg))) {
      this.joinerWaitSince ??= now;
      if (now - this.joinerWaitSince < joinerWaitMs(this.cfg)) { reset(); return; }
    }
    const counted = members.filter((m) => m.self || !ignored(m.id));
    for (const m of counted) {
      // A member leaving with nothing queued has handed everything over (or ended its run idle, as we are about to).
      if (!m.self && m.counters.queued > 0) { reset(); return; }
    }
    const own = this.exchange.idleCounters();
    const signature = counted.map((m) => `${m.id}:${m.incarnation}:${m.counters.fetched}:${m.counters.sent}:${m.counters.received}`).sort().join('|')
      + `#${own.sent}:${own.received}`;
    if (signature === this.lastSignature) this.idleStreak++;
    else { this.idleStreak = 1; this.lastSignature = signature; }
    // Alone, no other member's heartbeat can be stale: the first idle round is enough (a run with nothing left ends at once).
    if (this.idleStreak >= (counted.length === 1 ? 1 : 3)) {
      this.log.info({ members: members.length }, 'mesh idle');
      this.emit('idle');
    }
  }

  /** URLs queued in our outbox for members that count for idle detection (and for departed peers: re-routed soon). */
  pendingOutbox(): number {
    let n = 0;
    // A queue for a member we left out counts: it is being re-routed (src/crawl/ownership.ts), not given up.
    for (const p of this.outbox.peers()) if (this.membership.isExcluded(p) || !this.ignoredForIdle(p)) n += this.outbox.queued(p);
    return n;
  }

  private ignoredForIdle(id: string): boolean {
    return ignoredForIdle(this.idleFacts(id, Date.now()), this.cfg);
  }

  private idleFacts(id: string, now: number): IdleMemberFacts {
    const joining = this.joiningSince.get(id);
    const lastHeard = this.membership.member(id)?.lastHeard;
    return {
      excluded: this.membership.isExcluded(id),
      vouched: this.membership.isVouched(id),
      heardForMs: this.membership.heardForMs(id),
      joiningForMs: joining === undefined ? undefined : now - joining,
      silentForMs: lastHeard === undefined ? Infinity : now - lastHeard,
    };
  }

  async leave(): Promise<void> { this.leavingSince = Date.now(); await this.membership.leave(); }

  /** The run ends here with nothing queued (src/mesh/membership.ts `announceEnd`). */
  async announceEnd(): Promise<void> { await this.membership.announceEnd(); }

  async stop(): Promise<void> {
    if (this.idleTimer) clearInterval(this.idleTimer);
    if (this.aloneIdleTimer) clearInterval(this.aloneIdleTimer);
    this.linkWatch?.stop();
    this.joinDials.abort();
    await this.membership.stop().catch(() => {});
    await this.exchange.stop().catch(() => {});
    await this.outbox.close().catch(() => {});
    await this.replicas.close().catch(() => {});
    await this.node.stop().catch(() => {});
  }
}
