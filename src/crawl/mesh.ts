// An agent's place in the mesh: starts the libp2p node, membership, outbox and
// URL exchange (src/mesh/) in the documented order, answers "who owns this
// host?", forwards URLs to their owners, and detects mesh-wide idleness.
// The agent supplies what happens to URLs that arrive (`accept`) and reacts to
// ownership changes (`onChange`): this module does not touch the frontier.
import { EventEmitter } from 'node:events';
import { createMeshNode, Membership, Outbox, UrlExchange, type MeshNode, type MembershipChange, type UrlItem, type MemberInfo } from '../mesh/index.js';
import type { Store } from '../store/db.js';
import type { Logger } from '../util/log.js';
import type { MeshConfig } from '../config.js';

export interface MeshHandlers {
  /** URLs a peer sent us; resolve only once they are durable. */
  accept(items: UrlItem[], from: string): Promise<void>;
  /** The ring changed. */
  onChange(change: MembershipChange): void;
  /** This agent's own counters for its heartbeat. */
  counters(): { fetched: number; queued: number };
  /** Nothing queued, in flight or being processed here. */
  localIdle(): boolean;
}

export class AgentMesh extends EventEmitter<{ idle: [] }> {
  private idleStreak = 0;
  /** The crawl has begun somewhere in the mesh: an agent waiting for peers and seeds is not "idle". */
  private sawWork = false;
  private lastSignature = '';
  private idleTimer: NodeJS.Timeout | undefined;

  private constructor(
    readonly node: MeshNode,
    readonly membership: Membership,
    readonly outbox: Outbox,
    /** Replica seen entries, sent on their own lane (docs/mesh.md "Crashes"). */
    readonly replicas: Outbox,
    readonly exchange: UrlExchange,
    private readonly cfg: MeshConfig,
    private readonly log: Logger,
  ) { super(); }

  static async start(cfg: MeshConfig, dataDir: string, store: Store, handlers: MeshHandlers, log: Logger): Promise<AgentMesh> {
    const node = await createMeshNode({
      dataDir, listen: cfg.listen, announce: cfg.announce, swarmKeyFile: cfg.swarmKeyFile, crawlId: cfg.crawlId, openMesh: cfg.openMesh, logger: log,
    });
    try {
      const outbox = await Outbox.open({ db: store.outbox });
      // No "recently forwarded" cache: every settled page is replicated once anyway.
      const replicas = await Outbox.open({ db: store.replicas, recentSize: 0 });
      let exchange: UrlExchange | undefined;
      const membership = new Membership({
        node, crawlId: cfg.crawlId, capacity: cfg.capacity, intervalMs: cfg.heartbeatMs, deadAfterMs: cfg.deadAfterMs, admission: cfg.admission, logger: log,
        counters: () => {
          const own = handlers.counters();
          const ex = exchange?.idleCounters() ?? { sent: 0, received: 0 };
          return { fetched: own.fetched, queued: own.queued + outbox.totalQueued() + (handlers.localIdle() ? 0 : 1), sent: ex.sent, received: ex.received };
        },
      });
      exchange = new UrlExchange({ node, outbox, replicaOutbox: replicas, inbox: store.inbox, accept: (items, from) => handlers.accept(items, from), logger: log });
      const mesh = new AgentMesh(node, membership, outbox, replicas, exchange, cfg, log);
      membership.on('change', (c) => handlers.onChange(c));
      exchange.on('rejected', (reason: string, peer: string) => log.warn({ reason, peer }, 'rejected a batch from a peer'));
      for (const peer of cfg.peers) {
        try {
          const id = await node.dialPeer(peer);
          log.info({ peer, id }, 'joined through peer');
        } catch (err) {
          throw new Error(`cannot reach peer ${peer}: ${(err as Error).message}`);
        }
      }
      await membership.start();
      await exchange.start();
      // A joiner learns the members from their heartbeats; route nothing (seeds) before it has heard them.
      if (cfg.peers.length) await new Promise((r) => setTimeout(r, 2.5 * cfg.heartbeatMs));
      // Checked once per heartbeat interval, so "the same figures twice in a row" spans whole rounds.
      mesh.idleTimer = setInterval(() => mesh.checkIdle(handlers), cfg.heartbeatMs);
      mesh.idleTimer.unref();
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
    return this.outbox.enqueue(owner, items, { bypassRecent: handoff });
  }

  /**
   * Mesh-wide idle (issue 5 item 6). Every member's heartbeat reports its
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
    if (!h.localIdle() || this.outbox.totalQueued() > 0) { reset(); return; }
    const members = this.membership.members();
    if (!this.sawWork) {
      const own = h.counters();
      this.sawWork = own.fetched > 0 || own.queued > 0
        || members.some((m) => m.counters.fetched + m.counters.queued + m.counters.sent + m.counters.received > 0);
      if (!this.sawWork) return;
    }
    for (const m of members) {
      if (!m.self && (m.counters.queued > 0 || m.state !== 'active')) { reset(); return; }
    }
    const own = this.exchange.idleCounters();
    const signature = members.map((m) => `${m.id}:${m.incarnation}:${m.counters.fetched}:${m.counters.sent}:${m.counters.received}`).sort().join('|')
      + `#${own.sent}:${own.received}`;
    if (signature === this.lastSignature) this.idleStreak++;
    else { this.idleStreak = 1; this.lastSignature = signature; }
    if (this.idleStreak >= 3) {
      this.log.info({ members: members.length }, 'mesh idle');
      this.emit('idle');
    }
  }

  async leave(): Promise<void> { await this.membership.leave(); }

  async stop(): Promise<void> {
    if (this.idleTimer) clearInterval(this.idleTimer);
    await this.membership.stop().catch(() => {});
    await this.exchange.stop().catch(() => {});
    await this.outbox.close().catch(() => {});
    await this.replicas.close().catch(() => {});
    await this.node.stop().catch(() => {});
  }
}
