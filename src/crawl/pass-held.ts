// A graceful leaver passes on the replicas it holds for other owners
// (docs/mesh.md "Replicated frontier", "A holder that leaves"). It held queued
// URLs (`standby`) and replica seen entries of hosts whose owner it came next
// to; once it is gone, an owner's loss would lose those URLs until the owner
// has sent its queue to its new successor — a whole ring-change pass, one
// seen-set round per host (src/crawl/frontier-replica.ts
// `replicateToNewSuccessors`), that nobody waits for: in the mesh soak an
// owner SIGKILLed 16 s after its holder's exit had not done it
// (docs/performance.md "Mesh soak"). So the leaver sends each held replica to
// the host's next successor in its ring (src/crawl/held-replicas.ts
// `passOnTargets`), naming the owner it holds it for (src/mesh/wire.ts
// `HELD_QUEUED_HOPS`), on the replica lane, and its leave waits for the
// acknowledgements within its bound (src/crawl/mesh-router.ts `leave`).
import type { BatchOp, Store } from '../store/db.js';
import type { Outbox } from '../mesh/outbox.js';
import { prefixEnd } from '../store/keys.js';
import { encodeItem, queueOpsFor, writtenFor, type UrlItem } from '../mesh/index.js';
import { hostOf } from '../url/normalize.js';
import type { OwnerRing } from '../assign/zones.js';
import { decodeHeld } from './frontier-replica.js';
import { decodeFetchRecord } from './records.js';
import { passOnTargets } from './held-replicas.js';

/** What the pass uses of the agent's mesh. */
export interface PassHeldMesh {
  readonly id: string;
  readonly membership: { readonly ring: OwnerRing; member(id: string): unknown };
  readonly replicas: Pick<Outbox, 'queueOps' | 'written'>;
}

export interface PassHeldComponents {
  store: Pick<Store, 'db' | 'standby' | 'fetches' | 'replicas'>;
  /** Extra copies per host (--replicas): how many successors a held replica goes to. */
  replicas: number;
  /** Hosts whose replica seen entries we hold, with the owner that sent them (src/crawl/ownership.ts `replicaHosts`). */
  heldHosts(): Iterable<[string, { hk: Buffer; from: string }]>;
  /** The owner of a held host's replica seen entries, if we still hold them. */
  heldHost(host: string): { hk: Buffer; from: string } | undefined;
}

export interface PassHeldStats {
  /** Queued URLs held for others, passed on. */
  queued: number;
  /** Replica seen entries held for others, passed on. */
  seen: number;
  /** Held queued URLs with no one to pass them to (our ring holds only their owner). */
  kept: number;
}

/** Standby rows read per step. */
const CHUNK = 2000;

export class HeldPassOn {
  readonly stats: PassHeldStats = { queued: 0, seen: 0, kept: 0 };
  /**
   * Hosts whose replica seen entries came since the leave began (peer intake, once stored: `taken`); undefined
   * before. The owner keeps sending them to us until it sees us leave: each round passes those on too.
   */
  private dirty: Set<string> | undefined;
  /** Peers anything was passed to (the leave waits for their acknowledgements). */
  readonly targets = new Set<string>();

  constructor(private readonly c: PassHeldComponents) {}

  /** Replica seen entries of `hosts` are stored here (peer intake): passed on at the next round once the leave began. */
  taken(hosts: Iterable<string>): void {
    if (this.dirty) for (const h of hosts) this.dirty.add(h);
  }

  /**
   * One round: every held queued URL (deleted here in the batch that queues it for its targets: on its way
   * or acknowledged, never neither), then the replica seen entries of the hosts not passed on yet (all of them
   * the first time). Returns how many items went.
   */
  async round(mesh: PassHeldMesh): Promise<number> {
    if (this.c.replicas <= 0) return 0;
    const first = this.dirty === undefined;
    const hosts = first ? [...this.c.heldHosts()].map(([h]) => h) : [...this.dirty!];
    this.dirty = new Set();
    let n = await this.passQueued(mesh);
    for (const host of hosts) n += await this.passSeen(mesh, host);
    return n;
  }

  private ownerOf(mesh: PassHeldMesh, host: string, from: string | undefined): string | undefined {
    // An entry kept from before senders were recorded: held for the host's owner in our view.
    const owner = from ?? mesh.membership.ring.ownerOf(host);
    return owner && owner !== mesh.id ? owner : undefined;
  }

  private async passQueued(mesh: PassHeldMesh): Promise<number> {
    const { store } = this.c;
    const ring = mesh.membership.ring;
    let after: Buffer | undefined;
    let sent = 0;
    let kept = 0;
    for (;;) {
      const rows = await store.standby.iterator(after ? { gt: after, limit: CHUNK } : { limit: CHUNK }).all();
      if (rows.length === 0) break;
      after = rows[rows.length - 1]![0];
      const byPeer = new Map<string, UrlItem[]>();
      const del: BatchOp[] = [];
      for (const [k, v] of rows) {
        const h = decodeHeld(v);
        const host = h ? hostOf(h.url) : '';
        const owner = h && host ? this.ownerOf(mesh, host, h.from) : undefined;
        if (!h || !owner) { del.push({ type: 'del', sublevel: store.standby, key: k }); continue; }
        const to = passOnTargets(ring, host, owner, mesh.id, this.c.replicas);
        if (to.length === 0) { kept++; continue; }
        const item = encodeItem({ kind: 'queued', url: h.url, depth: h.depth, sitemap: h.kind === 'sitemap', owner });
        for (const p of to) { const l = byPeer.get(p); if (l) l.push(item); else byPeer.set(p, [item]); }
        del.push({ type: 'del', sublevel: store.standby, key: k });
      }
      sent += await this.write(mesh, byPeer, del);
      if (rows.length < CHUNK) break;
    }
    this.stats.queued += sent;
    this.stats.kept = kept;
    return sent;
  }

  /** The host's settled pages (its fetch records here: the owner's replica seen entries), to the host's targets. */
  private async passSeen(mesh: PassHeldMesh, host: string): Promise<number> {
    const held = this.c.heldHost(host);
    const owner = held ? this.ownerOf(mesh, host, held.from) : undefined;
    // An owner gone from our member table: its entries go to the host's new owner (src/crawl/ownership.ts `passReplicas`).
    if (!held || !owner || !mesh.membership.member(owner)) return 0;
    const to = passOnTargets(mesh.membership.ring, host, owner, mesh.id, this.c.replicas);
    if (to.length === 0) return 0;
    const { store } = this.c;
    let after: Buffer | undefined;
    let sent = 0;
    for (;;) {
      const rows = await store.fetches.iterator(after ? { gt: after, lt: prefixEnd(held.hk), limit: CHUNK } : { gte: held.hk, lt: prefixEnd(held.hk), limit: CHUNK }).all();
      if (rows.length === 0) break;
      after = rows[rows.length - 1]![0];
      const items: UrlItem[] = [];
      for (const [, v] of rows) {
        const r = decodeFetchRecord(v);
        if (r) items.push(encodeItem({ kind: 'replica', url: r.url, owner }));
      }
      if (items.length) sent += await this.write(mesh, new Map(to.map((p) => [p, items])), []);
      if (rows.length < CHUNK) break;
    }
    this.stats.seen += sent;
    return sent;
  }

  private async write(mesh: PassHeldMesh, byPeer: Map<string, UrlItem[]>, ops: BatchOp[]): Promise<number> {
    const written = queueOpsFor(mesh.replicas, byPeer, ops, this.c.store.replicas);
    if (ops.length) await this.c.store.db.batch(ops);
    for (const w of written) this.targets.add(w.peer);
    return writtenFor(mesh.replicas, written);
  }
}
