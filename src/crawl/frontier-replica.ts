// The replicated frontier (docs/mesh.md "Replicated frontier"): every URL a
// host's owner queues is also held by the host's next `--replicas` owners on
// the ring, so that losing the owner for good loses nothing it had queued.
//
// - Owner side: a URL the seen-set finds new is queued for the host's
//   successors in the same LevelDB batch that queues it here (`queueOps`, called
//   from the DRUM round through admission), on the replica lane: the same
//   per-peer FIFO as the replica seen entries of settled pages, so a successor
//   that has a page's seen entry also has the links that page queued before.
//   When the successors change while the host stays ours (a member died or
//   joined), the host's whole queue goes to the new ones (`ringChanged`), and
//   so do the seen entries of its settled pages (its fetch records): a new
//   successor that takes the host over fetches nothing we settled. A host that
//   becomes ours (a takeover, a handoff) is caught up the same way at its
//   first queued URL (`catchUp`).
// - Successor side: held in the `standby` sublevel, never crawled (`hold`),
//   deleted when the page's replica seen entry comes (peer intake trims it), and
//   on every ring change kept, promoted through the router (its sender is gone,
//   or the host is ours now and its owner left our ring; the seen-set skips what
//   is settled) or dropped (src/crawl/held-replicas.ts).
import type { BatchOp, Store } from '../store/db.js';
import { hostKey, prefixEnd, seenKey } from '../store/keys.js';
import { decodeEntry, type Frontier, type UrlKind } from '../frontier/frontier.js';
import { decodeFetchRecord } from './records.js';
import { successorsOf, type HostRing } from '../assign/ring.js';
import { encodeItem, queueOpsFor, writtenFor, type Outbox, type QueuedFor, type UrlItem } from '../mesh/index.js';
import { hostOf } from '../url/normalize.js';
import type { Drum } from '../seen/drum.js';
import type { Logger } from '../util/log.js';
import { copyRing, type OwnerRing } from '../assign/zones.js';
import { LeftEmpty } from './left-empty.js';
import { heldVerdict } from './held-replicas.js';
import { SerialLane } from '../util/serial-lane.js';

/** What the replicated frontier uses of the agent's mesh (src/crawl/mesh.ts). */
export interface ReplicaMesh {
  readonly id: string;
  /** `member`: whether a member is still in our member table (without it, whether it is in our ring). */
  readonly membership: { readonly ring: OwnerRing; member?(id: string): { state: string } | undefined; isExcluded?(id: string): boolean };
  readonly replicas: Pick<Outbox, 'queueOps' | 'written'>;
}

/** A candidate as the DRUM round hands it over (src/crawl/candidate.ts has more). */
export interface QueuedCandidate { url: string; host: string; depth: number; kind?: UrlKind }

/**
 * A queued replica a peer sent us, admitted by peer intake; `from`: its sender (src/crawl/held-replicas.ts) —
 * with `passedOn`, the owner a leaver held it for and passed it on from (src/crawl/pass-held.ts).
 */
export interface HeldUrl { key: Buffer; url: string; depth: number; sitemap: boolean; from?: string; passedOn?: boolean }

/** Writes of one DRUM round's replicas; `done()` once the round's batch is durable. */
export interface ReplicaOps { ops: BatchOp[]; done(): void }

export interface FrontierReplicaComponents {
  store: Pick<Store, 'db' | 'seen' | 'standby' | 'frontier' | 'replicas' | 'fetches'>;
  frontier: Pick<Frontier<unknown>, 'allHosts'>;
  drum: Pick<Drum<never>, 'exclusive'>;
  /** Extra copies per host (--replicas). */
  replicas: number;
  /**
   * A host that became ours because its owner left our ring is promoted only once it has stayed ours
   * this long (a member declared dead by mistake is back within it, still crawling its hosts).
   */
  promoteAfterMs: number;
  log: Logger;
  /** Promoted URLs go where any URL goes (ours now: the seen-set round); durable when this resolves. */
  promote(urls: Array<{ url: string; depth: number; kind: UrlKind }>): Promise<void>;
  /**
   * Hosts we hold seen entries for without frontier state (handed to us with nothing queued, or taken over
   * from a dead owner whose replicas we held): their successors must know those entries too, although no
   * URL of theirs is ever queued here (src/crawl/ownership.ts `settledOnly`).
   */
  settledHosts?(): Iterable<string>;
}

export interface FrontierReplicaStats {
  /** Queued URLs sent to successors. */
  sent: number;
  /** Queued replicas taken from owners and stored. */
  held: number;
  /** Queued replicas taken but already settled or known here (not stored). */
  skipped: number;
  /** Held URLs promoted into our frontier (their owner was gone). */
  promoted: number;
  /** Held URLs dropped (we are no longer one of their host's successors). */
  dropped: number;
  /** Hosts whose whole queue went to a new successor. */
  rereplicatedHosts: number;
  /** Seen entries of settled pages sent to a host's new successors (catch-up). */
  seenCaughtUp: number;
}

const KIND_PAGE = 0;
const KIND_SITEMAP = 1;
/** The same two kinds, with the sender's id after the depth. */
const KIND_PAGE_FROM = 2;
const KIND_SITEMAP_FROM = 3;

/**
 * standby value: u8 kind ‖ u16 BE depth ‖ URL (ASCII); with a sender (kinds 2, 3):
 * u8 kind ‖ u16 BE depth ‖ u8 id length ‖ id ‖ URL.
 */
export function encodeHeld(url: string, depth: number, sitemap: boolean, from?: string): Buffer {
  const id = from && from.length <= 0xff ? from : undefined;
  const head = id ? 4 + id.length : 3;
  const b = Buffer.allocUnsafe(head + url.length);
  b[0] = id ? (sitemap ? KIND_SITEMAP_FROM : KIND_PAGE_FROM) : (sitemap ? KIND_SITEMAP : KIND_PAGE);
  b.writeUInt16BE(Math.min(depth, 0xffff), 1);
  if (id) { b[3] = id.length; b.write(id, 4, 'latin1'); }
  b.write(url, head, 'latin1');
  return b;
}

export function decodeHeld(v: Buffer): { url: string; depth: number; kind: UrlKind; from?: string } | undefined {
  if (v.length < 4 || v[0]! > KIND_SITEMAP_FROM) return undefined;
  const kind: UrlKind = v[0] === KIND_SITEMAP || v[0] === KIND_SITEMAP_FROM ? 'sitemap' : 'page';
  if (v[0]! <= KIND_SITEMAP) return { kind, depth: v.readUInt16BE(1), url: v.toString('latin1', 3) };
  const n = v[3]!;
  if (v.length < 5 + n) return undefined;
  return { kind, depth: v.readUInt16BE(1), from: v.toString('latin1', 4, 4 + n), url: v.toString('latin1', 4 + n) };
}

/** What the log says when a background job fails (each is asked for again on the next ring change or round). */
const PASS_FAILED: Record<string, string> = {
  sweep: 'replicated frontier sweep failed; will retry on the next ring change',
  pass: 'replicated frontier pass failed; will retry on the next ring change',
  'catch-up': 'seen entries catch-up failed',
};

/** Rows read per step of a standby scan. */
const SCAN_CHUNK = 2000;

export class FrontierReplica {
  private mesh: ReplicaMesh | undefined;
  readonly stats: FrontierReplicaStats = { sent: 0, held: 0, skipped: 0, promoted: 0, dropped: 0, rereplicatedHosts: 0, seenCaughtUp: 0 };
  /** Hosts new to lastSuccessors in a seen-set round: their settled pages' seen entries go to those successors. */
  private readonly catchUpDue = new Set<string>();
  /** The successors each of our hosts' queue was last replicated to (a new one gets the whole queue). */
  private readonly lastSuccessors = new Map<string, string[]>();
  /** Ring-change passes (re-replication, seen entries' catch-up). */
  private readonly passes = new SerialLane((job, err) => this.jobFailed(job, err));
  /**
   * The standby sweep (promotions) runs in a lane of its own: a re-replication pass takes a seen-set
   * round per host, minutes under load, and a dead owner's queue waited behind it until this agent died
   * too (the mesh soak, docs/performance.md "Mesh soak").
   */
  private readonly sweeps = new SerialLane((job, err) => this.jobFailed(job, err));
  /**
   * We have been in a ring with others. Before that (a start, a restart) our ring holds only us and every
   * host maps to us although its owner may be alive: nothing held is promoted until then.
   */
  private meshed = false;
  private promoteTimer: NodeJS.Timeout | undefined;
  /** The next pass promotes what is ours (set by the timer after a ring change). */
  private promoteDue = false;
  /** A sweep left held URLs of hosts that are ours for the timer's pass to promote. */
  private promotable = false;
  /** Our ring as of the last change (who owned what before the next one). */
  private lastRing: OwnerRing | undefined;
  /** Members that left with nothing queued, each with our ring before it left (src/crawl/left-empty.ts). */
  private readonly leftEmpty = new LeftEmpty();

  constructor(private readonly c: FrontierReplicaComponents) {}

  /** The mesh runs: replicas are sent and held from now on. */
  attach(mesh: ReplicaMesh): void { this.mesh = mesh; }

  /** A ring-change pass is queued or running (the agent is not idle meanwhile). */
  get busy(): boolean {
    return this.passes.isWaiting('pass') || this.sweeps.isWaiting('sweep') || this.promoteDue || this.promotable || this.catchUpDue.size > 0;
  }
  /** The passes queued so far, done. */
  get settled(): Promise<void> { return Promise.all([this.passes.settled, this.sweeps.settled]).then(() => {}); }

  private successors(host: string): string[] {
    const mesh = this.mesh!;
    return successorsOf(mesh.membership.ring, host, this.c.replicas).filter((p) => p !== mesh.id);
  }

  /**
   * The replica writes for URLs a seen-set round queues here, to go in the
   * round's own batch: a URL queued here is either on its way to the host's
   * successors or acknowledged by them, never neither.
   */
  queueOps(items: readonly QueuedCandidate[]): ReplicaOps | undefined {
    const mesh = this.mesh;
    if (!mesh || this.c.replicas <= 0 || items.length === 0) return undefined;
    const entries: Array<{ host: string; item: UrlItem }> = [];
    for (const it of items) {
      // Kept past the hop limit on a host we do not own: handed on soon, its owner replicates it.
      if (mesh.membership.ring.ownerOf(it.host) !== mesh.id) continue;
      entries.push({ host: it.host, item: encodeItem({ kind: 'queued', url: it.url, depth: it.depth, sitemap: it.kind === 'sitemap' }) });
    }
    return this.successorOps(mesh, entries, (n) => { this.stats.sent += n; }, 'queued URLs');
  }

  /**
   * Seen entries a previous owner handed us (peer intake, in the batch that stores them): for the hosts we
   * own, replica seen entries for their successors, in the same batch — as for a page we settle here
   * (src/crawl/mesh-router.ts `replicate`). Without them a host handed to us with nothing left to queue
   * was known to us alone: killed, we took its pages' entries with us and the next owner fetched them
   * again (the mesh soak, docs/performance.md "Mesh soak"). A host new to us is caught up whole as well.
   */
  seenOps(urls: readonly string[]): ReplicaOps | undefined {
    const mesh = this.mesh;
    if (!mesh || urls.length === 0) return undefined;
    const entries: Array<{ host: string; item: UrlItem }> = [];
    for (const url of urls) {
      const host = hostOf(url);
      if (host && mesh.membership.ring.ownerOf(host) === mesh.id) entries.push({ host, item: encodeItem({ kind: 'replica', url }) });
    }
    return this.successorOps(mesh, entries, (n) => { this.stats.seenCaughtUp += n; }, 'handed-over seen entries');
  }

  /**
   * Each item queued for its host's successors, as outbox writes for the caller's batch; `done` after that
   * batch is written (counted by `counted`). A host new to us gets its settled pages caught up too.
   */
  private successorOps(mesh: ReplicaMesh, entries: ReadonlyArray<{ host: string; item: UrlItem }>, counted: (n: number) => void, what: string): ReplicaOps | undefined {
    const byPeer = new Map<string, UrlItem[]>();
    for (const { host, item } of entries) {
      const succ = this.successors(host);
      if (!this.lastSuccessors.has(host)) {
        this.lastSuccessors.set(host, succ);
        if (succ.length) this.catchUpDue.add(host);
      }
      for (const p of succ) {
        const l = byPeer.get(p);
        if (l) l.push(item); else byPeer.set(p, [item]);
      }
    }
    if (byPeer.size === 0) return undefined;
    const ops: BatchOp[] = [];
    let written: QueuedFor[];
    try {
      written = queueOpsFor(mesh.replicas, byPeer, ops, this.c.store.replicas);
    } catch (err) {
      // The mesh is stopping (outbox closed): what the caller stores is kept all the same.
      this.c.log.debug({ err: (err as Error).message }, `replicating ${what} failed`);
      return undefined;
    }
    return {
      ops,
      done: () => {
        counted(writtenFor(mesh.replicas, written));
        if (this.catchUpDue.size) this.scheduleCatchUp();
      },
    };
  }

  /** A ring-change pass for hosts that became ours without a ring change of their own (taken over from replicas we held). */
  requestPass(): void {
    this.passes.request('pass', async () => {
      if (!this.isMeshed()) return;
      await this.replicateToNewSuccessors();
      await this.catchUpNewHosts();
    });
  }

  /**
   * Queued replicas admitted by peer intake (their sender owns the host and we
   * are one of its successors): stored unless our seen-set already knows the
   * URL (settled: its replica seen entry came first; or queued here).
   */
  async hold(urls: readonly HeldUrl[]): Promise<void> {
    if (urls.length === 0) return;
    const { store } = this.c;
    const mesh = this.mesh;
    const known = await store.seen.getMany(urls.map((u) => u.key));
    // A replica passed on never replaces one a sender gave us itself (which its owner may have sent too):
    // whose fate decides an entry is not for a third member to change.
    const passed = urls.some((u) => u.passedOn);
    const have = passed ? await store.standby.getMany(urls.map((u) => u.key)) : [];
    const ops: BatchOp[] = [];
    let ours = false;
    for (let i = 0; i < urls.length; i++) {
      if (known[i] || (urls[i]!.passedOn && have[i])) { this.stats.skipped++; continue; }
      const u = urls[i]!;
      // Sent before its owner left our ring, arriving after our sweep: ours now, promoted by a pass of its own.
      if (mesh && this.meshed && mesh.membership.ring.ownerOf(hostOf(u.url)) === mesh.id) ours = true;
      // Passed on by a leaver for an owner already gone from our member table: no ring change may come to
      // promote it (the owner's left ours already), so a pass of its own does (src/crawl/held-replicas.ts).
      if (mesh && this.meshed && u.passedOn && u.from !== undefined && mesh.membership.member && !mesh.membership.member(u.from)) ours = true;
      ops.push({ type: 'put', sublevel: store.standby, key: u.key, value: encodeHeld(u.url, u.depth, u.sitemap, u.from) });
    }
    // Not synced, like replica seen entries: losing them needs this agent's power loss and the owner's death at once.
    if (ops.length) await store.db.batch(ops);
    this.stats.held += ops.length;
    if (ours) { this.promotable = true; this.schedulePromotion(); }
  }

  /**
   * Replica seen entries from `from` that intake refused as seen entries (in our view it does not own the
   * host, or we are not next): they still delete what `from` itself asked us to hold — its page is settled
   * there — so that its promotion does not fetch the page again (src/crawl/held-replicas.ts). Nothing else.
   */
  async trimFrom(from: string, keys: readonly Buffer[]): Promise<void> {
    if (keys.length === 0) return;
    const { store } = this.c;
    const values = await store.standby.getMany([...keys]);
    const ops: BatchOp[] = [];
    for (let i = 0; i < keys.length; i++) {
      const v = values[i];
      if (v && decodeHeld(v)?.from === from) ops.push({ type: 'del', sublevel: store.standby, key: keys[i]! });
    }
    if (ops.length) await store.db.batch(ops);
  }

  /** The ring changed: promote (after promoteAfterMs), keep or drop what we hold; send our hosts' queues to new successors. */
  ringChanged(leftEmpty: readonly string[] = []): void {
    if (!this.mesh) return;
    const ring = this.mesh.membership.ring;
    this.leftEmpty.changed(this.lastRing, ring, leftEmpty);
    this.lastRing = copyRing(ring);
    clearTimeout(this.promoteTimer);
    this.promoteTimer = undefined;
    this.schedulePromotion();
    this.pass(false);
  }

  private schedulePromotion(): void {
    if (this.promoteTimer) return;
    this.promoteTimer = setTimeout(() => { this.promoteTimer = undefined; this.pass(true); }, this.c.promoteAfterMs);
    this.promoteTimer.unref();
  }

  /** No promotion pass is waiting (the agent stops). */
  stop(): void { clearTimeout(this.promoteTimer); }

  private pass(promote: boolean): void {
    if (promote) this.promoteDue = true;
    this.sweeps.request('sweep', async () => {
      // Alone in our ring (a start, a restart): a promotion due now is void, not kept for the first ring with
      // another member — that ring change arms the timer again, so promotion still waits a dead-after period
      // (docs/mesh.md "Replicated frontier"). Kept, it promoted at once, before the other live members were heard.
      if (!this.isMeshed()) { this.promoteDue = false; return; }
      const promoteNow = this.promoteDue;
      this.promoteDue = false;
      if (promoteNow) this.promotable = false;
      await this.sweepStandby(promoteNow);
    });
    this.requestPass();
  }

  private jobFailed(job: string, err: Error): void {
    this.c.log.error({ err: err.message }, PASS_FAILED[job] ?? `${job} failed`);
  }

  /** True once our ring has held another member (see `meshed`). */
  private isMeshed(): boolean {
    if (this.mesh!.membership.ring.members().length > 1) this.meshed = true;
    return this.meshed;
  }

  /** Every held URL: ours now → promoted (`promoteNow`; else on the timer's pass); still a successor → kept; otherwise dropped. */
  private async sweepStandby(promoteNow: boolean): Promise<void> {
    const mesh = this.mesh!;
    const { store } = this.c;
    const ring = mesh.membership.ring;
    const isMember = (id: string) => (mesh.membership.member ? mesh.membership.member(id) !== undefined : ring.has(id));
    // Left our ring while still a member: leaving, or left out by us; not a member yet to enter it.
    const leftRing = (id: string) => !ring.has(id) && (mesh.membership.member?.(id)?.state === 'leaving' || mesh.membership.isExcluded?.(id) === true);
    let after: Buffer | undefined;
    for (;;) {
      const rows = await store.standby.iterator(after ? { gt: after, limit: SCAN_CHUNK } : { limit: SCAN_CHUNK }).all();
      if (rows.length === 0) break;
      after = rows[rows.length - 1]![0];
      const promote: Array<{ url: string; depth: number; kind: UrlKind }> = [];
      const del: BatchOp[] = [];
      let dropped = 0;
      for (const [k, v] of rows) {
        const h = decodeHeld(v);
        const host = h ? hostOf(h.url) : '';
        if (!h || !host) { del.push({ type: 'del', sublevel: store.standby, key: k }); dropped++; continue; }
        const owner = ring.ownerOf(host);
        // Promote, keep or drop (src/crawl/held-replicas.ts); a member that left with nothing queued
        // (an --until-idle end) had settled its pages: its replicas are stale, dropped.
        const from = h.from !== undefined && h.from !== mesh.id ? h.from : undefined;
        const verdict = heldVerdict({
          ownerIsUs: owner === mesh.id,
          successor: successorsOf(ring, host, this.c.replicas).includes(mesh.id),
          settledThere: this.leftEmpty.settledThere(host),
          sender: from === undefined ? undefined : {
            member: isMember(from), leftRing: leftRing(from), owner: owner === from, leftEmpty: this.leftEmpty.has(from),
          },
        });
        if (verdict === 'promote') {
          if (promoteNow) { promote.push(h); del.push({ type: 'del', sublevel: store.standby, key: k }); } else this.promotable = true;
        } else if (verdict === 'drop') {
          del.push({ type: 'del', sublevel: store.standby, key: k });
          dropped++;
        }
      }
      // Durable in our frontier (or the owners' outboxes) before the replica goes.
      if (promote.length) {
        await this.c.promote(promote);
        this.stats.promoted += promote.length;
        this.c.log.info({ urls: promote.length }, 'replicated frontier: queued URLs of a departed owner promoted');
      }
      if (del.length) await store.db.batch(del);
      this.stats.dropped += dropped;
      if (rows.length < SCAN_CHUNK) break;
    }
  }

  /** Hosts we own whose successors changed: their whole queue goes to the new successors. */
  private async replicateToNewSuccessors(): Promise<void> {
    const mesh = this.mesh!;
    if (this.c.replicas <= 0) return;
    const { store, frontier, drum } = this.c;
    const ring = mesh.membership.ring;
    const live = new Set<string>();
    const queuedHosts = new Set([...frontier.allHosts()].map((h) => (h as { name: string }).name));
    for (const host of [...queuedHosts, ...[...(this.c.settledHosts?.() ?? [])].filter((x) => !queuedHosts.has(x))]) {
      live.add(host);
      if (ring.ownerOf(host) !== mesh.id) continue;
      const now = this.successors(host);
      const before = this.lastSuccessors.get(host) ?? [];
      this.lastSuccessors.set(host, now);
      const fresh = now.filter((p) => !before.includes(p));
      if (fresh.length === 0) continue;
      const hk = hostKey(host);
      // With seen-set rounds held off: a round that commits URLs of this host replicates them to `now` itself.
      // A host with nothing queued here has no queue to send (and no seen-set round to wait for).
      if (queuedHosts.has(host)) await drum.exclusive(async () => {
        const items: UrlItem[] = [];
        for (const [, v] of await store.frontier.iterator({ gte: hk, lt: prefixEnd(hk) }).all()) {
          const e = decodeEntry(v, host);
          if (e) items.push(encodeItem({ kind: 'queued', url: e.url, depth: e.depth, sitemap: e.kind === 'sitemap' }));
        }
        if (items.length === 0) return;
        const ops: BatchOp[] = [];
        const written = queueOpsFor(mesh.replicas, fresh.map((p) => [p, items] as const), ops, store.replicas);
        await store.db.batch(ops);
        this.stats.sent += writtenFor(mesh.replicas, written);
        this.stats.rereplicatedHosts++;
      });
      // After its queue, on the same FIFO: a settled page's entry trims its queued replica there.
      await this.sendSettled(host, fresh);
      this.catchUpDue.delete(host);
    }
    for (const host of this.lastSuccessors.keys()) if (!live.has(host)) this.lastSuccessors.delete(host);
  }

  /** A catch-up of the hosts first queued since, after the passes queued so far (not a whole ring-change pass: no standby scan). */
  private scheduleCatchUp(): void {
    this.passes.request('catch-up', () => this.catchUpNewHosts());
  }

  /** Hosts first queued here since the last pass (taken over, handed to us, or new): their settled pages' seen entries go to their successors. */
  private async catchUpNewHosts(): Promise<void> {
    const mesh = this.mesh!;
    for (const host of [...this.catchUpDue]) {
      this.catchUpDue.delete(host);
      if (mesh.membership.ring.ownerOf(host) !== mesh.id) continue;
      const succ = this.lastSuccessors.get(host) ?? this.successors(host);
      if (succ.length) await this.sendSettled(host, succ);
    }
  }

  /**
   * The seen entries of a host's settled pages (its fetch records: fetched here, or settled elsewhere and
   * handed or replicated to us), as replica seen entries for `peers`: a successor that becomes the
   * host's owner fetches none of them again (docs/mesh.md "Replicated frontier").
   */
  private async sendSettled(host: string, peers: readonly string[]): Promise<void> {
    const mesh = this.mesh!;
    const { store } = this.c;
    if (peers.length === 0) return;
    const hk = hostKey(host);
    let after: Buffer | undefined;
    for (;;) {
      const rows = await store.fetches.iterator(after ? { gt: after, lt: prefixEnd(hk), limit: CATCH_UP_CHUNK } : { gte: hk, lt: prefixEnd(hk), limit: CATCH_UP_CHUNK }).all();
      if (rows.length === 0) break;
      after = rows[rows.length - 1]![0];
      const items: UrlItem[] = [];
      for (const [, v] of rows) {
        const r = decodeFetchRecord(v);
        if (r) items.push(encodeItem({ kind: 'replica', url: r.url }));
      }
      if (items.length) {
        const ops: BatchOp[] = [];
        const written = queueOpsFor(mesh.replicas, peers.map((p) => [p, items] as const), ops, store.replicas);
        await store.db.batch(ops);
        this.stats.seenCaughtUp += writtenFor(mesh.replicas, written);
      }
      if (rows.length < CATCH_UP_CHUNK) break;
    }
  }
}

/** Rows of fetch records read per step of a catch-up. */
const CATCH_UP_CHUNK = 2000;

/** The standby key of a URL: its seen key (a replica seen entry trims it by the same key). */
export function standbyKey(url: string): Buffer | undefined {
  const host = hostOf(url);
  return host ? seenKey(hostKey(host), url) : undefined;
}
