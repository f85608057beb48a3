// Peer intake (docs/mesh.md "Admission: URL batches, seen entries, handoffs"):
// what another member sent us — URLs to crawl (or to pass on to their owner),
// seen entries of a host handed to us (or replicas of one we are next in line
// for), handoff markers — checked for admission, made durable, then
// acknowledged. Part of ownership (src/crawl/ownership.ts), which gives it its
// collaborators and the rings it checks seen entries against.
import type { BatchOp } from '../store/db.js';
import { hostKey, seenKey } from '../store/keys.js';
import { settledValue } from '../seen/state.js';
import { hostOf } from '../url/normalize.js';
import { encodeFetchRecord } from './records.js';
import type { RecentRings } from './recent-rings.js';
import { DEFAULT_ZONE, ZonedRing, rulesOf } from '../assign/zones.js';
import { RateLimitedLog } from '../mesh/admission.js';
import { classifyItem, encodeItem, ownsHosts, shortPeerId, type UrlItem } from '../mesh/index.js';
import type { HeldUrl } from './frontier-replica.js';
import type { HandedHostItem } from './host-handoff.js';
import type { OwnershipComponents, OwnershipMesh, PeerCandidate, OwnedHostData } from './ownership-components.js';

export interface IntakeComponents<C extends PeerCandidate & { key: Buffer }, D extends OwnedHostData> extends OwnershipComponents<C, D> {
  /** The mesh from its creation on (peer intake starts before the node runs), or undefined. */
  mesh(): OwnershipMesh | undefined;
  /** Our last rings: who may send us seen entries for a host. */
  recentRings: RecentRings;
  /** Hosts we hold seen entries for but no frontier state (a later handoff must include them). */
  settledOnly: Map<string, Buffer>;
  /** Hosts we hold replica seen entries for, with the owner that sent them (passed on should it go: src/crawl/ownership.ts). */
  replicaHosts: Map<string, { hk: Buffer; from: string }>;
}

export class PeerIntake<C extends PeerCandidate & { key: Buffer }, D extends OwnedHostData> {
  /** heardRing()'s cache. */
  private heard: { key: string; ring: ZonedRing } | undefined;
  /** Items and batches from peers we refused, by reason (docs/mesh.md "Admission"). */
  private readonly refused: Record<string, number> = {};
  private readonly refusalLog: RateLimitedLog;
  /** Items taken from peers (all kinds). */
  received = 0;

  constructor(private readonly c: IntakeComponents<C, D>) {
    this.refusalLog = new RateLimitedLog(c.log);
  }

  /** Refusals by reason, of this component's own checks. */
  refusals(): Record<string, number> { return { ...this.refused }; }

  /**
   * URLs a peer sent: seen entries of a handed-over host, or URLs to crawl (or
   * to pass on), or handoff markers. `local`: items of our own outbox (a
   * departed peer's queue re-routed to us), not checked for admission.
   */
  async accept(items: UrlItem[], from: string, local = false): Promise<void> {
    // While the mesh starts, batches come already (a joiner listens a while first): the markers among them vouch.
    const mesh = this.c.mesh();
    const { config, store, frontier, drum } = this.c;
    // docs/mesh.md "Admission": only members send us anything (the exchange checks too, when the stream
    // opens); rejecting makes an honest sender we have not heard of yet retry later.
    if (!local && mesh && !mesh.membership.member(from)) {
      this.refuse('not-member', from, items.length);
      throw new Error('not a member');
    }
    // A handoff under way keeps the gates waiting for its sender (src/crawl/handoff.ts `progress`).
    if (!local && items.some(isHandoffData)) this.c.gate.progress(from, Date.now());
    const cands: C[] = [];
    const settled: Buffer[] = [];
    const settledUrls: string[] = [];
    let handedOver = 0; // settled entries that are not replicas
    const passOn = new Map<string, UrlItem[]>();
    const markers: bigint[] = [];
    const held: HeldUrl[] = [];
    const hostItems: HandedHostItem[] = [];
    const trims: Buffer[] = []; // replica seen entries: the queued replica of that URL is done with
    const ownSeen: string[] = []; // seen entries handed over for hosts ours by our view: replicated to their successors
    const foreignTrims: Buffer[] = []; // refused replica seen entries: done with only if that sender's
    const replicaHostsTaken = new Set<string>(); // hosts of the replica seen entries stored here
    let beforeLeave = 0; // replica seen entries passed on by a member we have not yet heard leave
    let startupRing: ZonedRing | null | undefined; // computed at the first seen entry
    let withoutUs: boolean | undefined; // likewise (heldWithoutUs)
    let bad = 0;
    // Where a URL came from is logged at debug only (src/crawl/mesh-router.ts): not built per URL otherwise.
    const traceVia = this.c.log.isLevelEnabled('debug');
    for (const it of items) {
      const w = classifyItem(it);
      if (w.kind === 'bad') { bad++; continue; }
      if (w.kind === 'marker') {
        markers.push(w.ringId);
        // The sender's first marker lets it into our ring as we read it, not after the batch: an introduction
        // comes right before what its sender hands us (src/crawl/ownership.ts `handTo`), often in the same
        // batch, and those seen entries are checked against the ring it enters (docs/mesh.md "Handoff protocol").
        if (!local && mesh && !mesh.membership.isVouched(from)) {
          mesh.membership.vouch(from);
          startupRing = undefined;
          withoutUs = undefined;
        }
        continue;
      }
      if (w.kind === 'host-state' || w.kind === 'recrawl') {
        // What a host's previous owner knew about it besides its URLs (docs/mesh.md "Everything about a host moves with it").
        const host = w.kind === 'host-state' ? w.host : hostOf(w.url);
        if (!host || !this.c.hostItems) { bad++; continue; }
        if (!local && mesh) {
          startupRing ??= this.c.gate.startingUp ? this.heardRing(mesh) : null;
          const heard = startupRing ?? undefined;
          if (!this.c.recentRings.owned(from, host, heard ? mesh.id : undefined, heard)
            && !this.heldBeforeUs(mesh, from, host, heard)) { this.refuse('state-not-owner', from, 1); bad++; continue; }
        }
        hostItems.push(w.kind === 'host-state' ? { kind: 'host-state', host, state: w.state } : { kind: 'recrawl', host, url: w.url, depth: w.depth, state: w.state });
        continue;
      }
      if (w.kind === 'seen' || w.kind === 'replica' || w.kind === 'queued') {
        const host = hostOf(it.url);
        if (!host) { bad++; continue; }
        // A seen entry hides a page for good: only the host's recent owner may send one, and a
        // replica only the owner for whom we are next (docs/mesh.md "Admission").
        // A replica its sender held for another member (`owner`) and passes on as it leaves (src/crawl/pass-held.ts):
        // held for that owner as if the owner had sent it — the owner's fate decides (src/crawl/held-replicas.ts).
        const heldFor = w.kind !== 'seen' ? w.owner : undefined;
        if (heldFor !== undefined && (local || !mesh || heldFor === mesh.id)) { bad++; continue; }
        // Passed on right after its sender announced its leave: the batch may overtake that heartbeat (gossip).
        if (heldFor !== undefined && w.kind === 'replica' && mesh?.membership.member(from)?.state !== 'leaving') { beforeLeave++; continue; }
        if (!local && mesh) {
          const replica = w.kind !== 'seen';
          // While we start up, also the owner without us, and the ring of all members heard of (docs/mesh.md "Admission").
          startupRing ??= this.c.gate.startingUp ? this.heardRing(mesh) : null;
          const heard = startupRing ?? undefined;
          const depth = Math.max(1, this.c.standby?.replicas ?? 1);
          // A seen entry passed on to us by the member that held the host before we counted (src/crawl/recent-rings.ts `passedOn`).
          const relayed = w.kind === 'seen' && w.hops > 0 && this.c.recentRings.passedOn(from, host, mesh.id);
          if (!replica && !relayed) withoutUs ??= heard !== undefined || this.heldWithoutUs(mesh, from);
          // A queued replica hides nothing: it is held for its sender whatever our view of the host's owner
          // (views disagree under churn), and promoted once its sender is gone (src/crawl/held-replicas.ts).
          if (w.kind === 'queued') { /* admitted: any member */ } else if (heldFor !== undefined ? !this.passedOnReplica(mesh, from, heldFor, host, heard, depth) : replica ? !this.c.recentRings.replicaFor(from, mesh.id, host, heard, depth) : !relayed && !this.c.recentRings.owned(from, host, withoutUs ? mesh.id : undefined, heard)
            // A departed owner's replica seen entries, from a member that held them (src/crawl/ownership.ts `passReplicas`).
            && !this.c.recentRings.heldFor(from, host, depth + 1, (id) => id !== mesh.id && (!mesh.membership.member(id) || mesh.membership.isSuspect?.(id) === true))
            // A member of the mesh before us, in its first handoff to us, for a host ours (heldBeforeUs).
            && !this.heldBeforeUs(mesh, from, host, heard)) {
            this.refuse(replica ? 'replica-not-owner' : 'seen-not-owner', from, 1);
            this.c.log.debug({ url: it.url, from: shortPeerId(from), kind: w.kind }, 'seen entry refused');
            // It may still trim a queued replica the same sender asked us to hold (src/crawl/frontier-replica.ts `trimFrom`).
            if (w.kind === 'replica' && heldFor === undefined && this.c.standby?.trimFrom) foreignTrims.push(seenKey(hostKey(host), it.url));
            bad++;
            continue;
          }
        }
        // Not ours by our view: pass it on like a URL (hop limit), so it reaches the host's owner; and keep
        // it here too: our view may lag the sender's (the host is ours once we catch up, and the sender's
        // marker may come first), or the owner may refuse it (docs/mesh.md "Admission").
        const owner = mesh ? mesh.ownerOf(host) : undefined;
        const passed = mesh !== undefined && owner !== mesh.id && w.kind === 'seen' && w.hops < config.mesh.maxHops;
        if (passed) {
          const l = passOn.get(owner!);
          const item = encodeItem({ kind: 'seen', url: w.url, hops: w.hops + 1 });
          if (l) l.push(item); else passOn.set(owner!, [item]);
        }
        const hk = hostKey(host);
        if (w.kind === 'queued') {
          // Held, not crawled, while its owner lives (docs/mesh.md "Replicated frontier").
          if (this.c.standby) held.push({ key: seenKey(hk, w.url), url: w.url, depth: w.depth, sitemap: w.sitemap, ...(local ? {} : { from: heldFor ?? from }), ...(heldFor !== undefined ? { passedOn: true } : {}) });
          continue;
        }
        settled.push(seenKey(hk, it.url));
        if (w.kind === 'replica' && this.c.standby) trims.push(settled[settled.length - 1]!);
        settledUrls.push(it.url);
        if (w.kind === 'seen') { handedOver++; if (!passed) ownSeen.push(it.url); }
        if (w.kind === 'replica' && !local && this.c.replicaHosts.size < 1_000_000) { this.c.replicaHosts.set(host, { hk, from: heldFor ?? from }); replicaHostsTaken.add(host); }
        const h = frontier.host(host);
        if (h) h.data.checkSeen = true;
        else if (w.kind === 'seen' && !passed && this.c.settledOnly.size < 1_000_000) this.c.settledOnly.set(host, hk);
        continue;
      }
      const c = this.c.candidate(w.url, w.depth, w.sitemap ? 'sitemap' : 'page');
      if (!c) { bad++; continue; }
      if (!this.c.followsFromPeer(c)) continue;
      c.hops = w.hops;
      // A peer forwards the links its pages have to our hosts: in-links too.
      if (c.kind === 'page') c.inlink = true;
      if (w.grant !== undefined) c.grant = w.grant; // a sitemap's only
      if (traceVia) c.via = `${local ? 'rerouted' : 'peer'} ${shortPeerId(from)} h${w.hops}`;
      cands.push(c);
    }
    // Retried rather than refused (nothing of the batch is written yet): refused, they were lost, and pages
    // the owner settled fetched again after its loss. A member that is not leaving never sends them.
    if (beforeLeave > 0) {
      this.refuse('held-before-leave', from, beforeLeave);
      throw new Error('replicas passed on by a member not yet heard leaving: retried');
    }
    if (settled.length) {
      const value = settledValue('settled-elsewhere');
      const now = Date.now();
      const write = async () => {
        // A fetch record too (unless we have our own): a later handoff of the host passes it on (settledItems).
        const have = await store.fetches.getMany(settled);
        const ops: BatchOp[] = settled.map((key) => ({ type: 'put', sublevel: store.seen, key, value }));
        for (const key of trims) ops.push({ type: 'del', sublevel: store.standby, key });
        for (let i = 0; i < settled.length; i++) {
          if (!have[i]) ops.push({ type: 'put', sublevel: store.fetches, key: settled[i]!, value: encodeFetchRecord({ url: settledUrls[i]!, at: now, status: 0, failure: 'settled-elsewhere' }) });
        }
        // Our successors for these hosts learn them in the same write, as they learn the pages we settle
        // (docs/mesh.md "Replicated frontier"): should we die, the next owner fetches none of them again.
        const replicas = ownSeen.length ? this.c.standby?.seenOps?.(ownSeen) : undefined;
        if (replicas) ops.push(...replicas.ops);
        // Acknowledged to the peer next: synced, except replica entries alone, which only spare a second
        // fetch after a crash (a power loss that takes them costs that fetch) and must not lag (docs/mesh.md "Crashes").
        await store.db.batch(ops, { sync: handedOver > 0 });
        replicas?.done();
        drum.noteStored(settled); // the DRUM's Bloom filter must know every key in the store
      };
      // Replica seen entries alone, of hosts another member owns by our view, are written at once. The exclusion
      // keeps a seen-set round from overwriting an entry with "queued", and a round here holds our own hosts'
      // URLs (and a few kept past the hop limit, handed on at their host's turn, where the owner's seen-set
      // drops them). Behind the round under way and the sections queued before it they waited up to 7 s before
      // a kill at load 15-20, and the victim's pages whose replicas had not reached their next owner in time
      // were fetched again (docs/mesh.md "Crashes").
      if (replicasOfOthers(mesh, handedOver, local, settledUrls)) await write();
      else await drum.exclusive(write);
      if (replicaHostsTaken.size) this.c.replicaTaken?.(replicaHostsTaken);
    }
    if (hostItems.length) await this.c.hostItems!(hostItems);
    // After the seen entries: a queued replica of a page settled in the same frames is not kept.
    if (held.length) await this.c.standby!.hold(held);
    if (foreignTrims.length) await this.c.standby!.trimFrom!(from, foreignTrims);
    // The sender deletes the batch once we acknowledge it: what it stored here is synced first.
    await Promise.all([this.c.route(cands, true), ...[...passOn].map(([owner, its]) => mesh!.forward(owner, its, true))]);
    if (passOn.size > 0) await this.c.barrier.sync();
    // A marker comes after everything its sender queued for us before it (one ordered stream), all of which is durable now.
    for (const rid of markers) {
      // A leaver's marker frees it for every later ring only if it was made for a ring without it — ours
      // (a leaver is in none of our rings). An older one, late on a slow stream, comes before its last
      // handoff: taken as final, it opened the gate before the leaver's seen entries came (docs/mesh.md "Handoff protocol").
      const leaving = mesh?.membership.member(from)?.state === 'leaving' && rid === this.c.gate.ringId;
      this.c.gate.marker(from, rid, Date.now(), leaving);
      // Its first marker shows the sender finished a handoff round towards us: it may own hosts now.
      mesh?.membership.vouch(from);
      this.c.log.info({ from: shortPeerId(from), ring: rid.toString(16), waitingFor: this.c.gate.waitingFor().map(shortPeerId) }, 'handoff marker received');
    }
    if (markers.length) this.c.schedulePump();
    this.received += items.length;
    if (!local) this.c.metrics.urlsReceived(shortPeerId(from), items.length - bad, bad);
  }

  /**
   * The ring of every active member we have heard of, ourselves included (cached per member set):
   * who owns what in the mesh while we start up, before the members' markers let them into our ring.
   */
  private heardRing(mesh: OwnershipMesh): ZonedRing {
    const ms = mesh.members().filter((m) => ownsHosts(m) && !mesh.membership.isExcluded(m.id));
    const key = ms.map((m) => `${m.id}:${m.capacity}@${m.zone ?? ''}*${m.zoneWeight ?? 1}`).join(',');
    if (this.heard?.key !== key) {
      const ring = new ZonedRing({ maxCapacity: this.c.config.mesh.admission.maxCapacity }, rulesOf(mesh.membership.ring));
      for (const m of ms) ring.add(m.id, m.capacity, m.zone ?? DEFAULT_ZONE, m.zone ? m.zoneWeight ?? 1 : 1);
      this.heard = { key, ring };
    }
    return this.heard.ring;
  }

  /**
   * Whether `from` may hand us the hosts it would own without us: a member that was in the mesh before us
   * (it has sent more heartbeats) and has yet to hand us our hosts for the first time (src/crawl/handoff.ts
   * `firstHandoffFrom`) held them as their owner under the ring without us, even if we heard of it only
   * after our start-up (a loaded machine). One that came after us held none of ours (docs/mesh.md "Admission").
   */
  private heldWithoutUs(mesh: OwnershipMesh, from: string): boolean {
    if (!this.c.gate.firstHandoffFrom(from)) return false;
    const their = mesh.membership.member(from)?.seq ?? 0;
    const ours = mesh.members().find((m) => m.self)?.seq ?? Infinity;
    return their > ours;
  }

  /**
   * Whether `from` may pass us a replica seen entry of `host` that it held for `owner` (src/crawl/pass-held.ts):
   * it is leaving in our view (a leaver passes on what it held, and owns nothing any more), and under one of our
   * recent rings (or, while we start up, the ring of every member heard of) it came after `owner` — it held the
   * owner's replicas — and so did we, one place further at most (it stood between us until it left). A seen
   * entry hides a page: a member that was not the owner's successor, or that stays, cannot plant one this way,
   * and a holder could only plant what it could once the owner is gone (`RecentRings.heldFor`), a little sooner.
   */
  private passedOnReplica(mesh: OwnershipMesh, from: string, owner: string, host: string, heard: ZonedRing | undefined, depth: number): boolean {
    return owner !== from && mesh.membership.member(from)?.state === 'leaving'
      && this.c.recentRings.replicaFor(owner, from, host, heard, depth)
      && this.c.recentRings.replicaFor(owner, mesh.id, host, heard, depth + 1);
  }

  /**
   * Whether `from` may hand us, in its first handoff to us, seen entries of any host we own: it was an active
   * member when we joined (src/crawl/handoff.ts `wasMemberAtJoin`). Before us the mesh went through rings we
   * never had — members joining one by one, the first crawling alone — and a member that counts several of
   * us in at once hands each host straight to its owner under its latest ring, skipping the owner between
   * (who never held it): so the owner "without us" is not always the one that held the host, and checking
   * it refused the entries of pages fetched at the mesh's start (3 agents started together: ≈ 50 pages
   * fetched twice of 10,200). The cost: a member already in the mesh could hide pages of a joiner's hosts,
   * once per join, until its marker for the joiner's ring (docs/mesh.md "Admission").
   */
  private heldBeforeUs(mesh: OwnershipMesh, from: string, host: string, heard: ZonedRing | undefined): boolean {
    // Asked only once the other rules have refused (rare): the gates' scan comes last.
    return this.c.gate.wasMemberAtJoin(from) && (mesh.ownerOf(host) === mesh.id || heard?.ownerOf(host) === mesh.id)
      && this.c.gate.firstHandoffFrom(from);
  }

  private refuse(reason: string, from: string, n: number): void {
    this.refused[reason] = (this.refused[reason] ?? 0) + n;
    this.c.metrics.meshRefused(reason, n);
    this.refusalLog.warn(reason, { peer: shortPeerId(from), items: n }, 'refused items from a peer');
  }
}

/** Whether what a batch settles is replica seen entries only (no handed-over entry), none of a host we own. */
export function replicasOfOthers(mesh: Pick<OwnershipMesh, 'id' | 'ownerOf'> | undefined, handedOver: number, local: boolean, urls: readonly string[]): boolean {
  if (!mesh || local || handedOver > 0) return false;
  for (const u of urls) if (mesh.ownerOf(hostOf(u)) === mesh.id) return false;
  return true;
}

/**
 * Items a previous owner sends in a handoff: seen entries, a host's state and
 * recrawl entries, and queued URLs (hops 0; a link forwarded from a page has
 * hops ≥ 1). Relayed seen entries (hops ≥ 1) are not: their sender is not the one handing over.
 */
function isHandoffData(it: UrlItem): boolean {
  const w = classifyItem(it);
  return w.kind === 'host-state' || w.kind === 'recrawl' || ((w.kind === 'seen' || w.kind === 'crawl') && w.hops === 0);
}
