// The last few rings this agent had (docs/mesh.md "Admission"): who may send
// seen entries for a host. Pure; src/crawl/ownership.ts pushes every ring
// change and keeps them in the store, src/crawl/intake.ts asks.
import { ZonedRing, zoneOfMember, zoneWeightOfMember, type OwnerRing, type ZoneRule } from '../assign/zones.js';
import { snapshotRing } from './handoff.js';

/**
 * The last few rings this agent had (the current one included): who may send
 * seen entries for a host (docs/mesh.md "Admission"). A seen entry hides a
 * page for good, so only an agent that owned the host — under a ring we had a
 * moment ago (views lag) — may tell us it settled it; a replica seen entry
 * must come from the host's owner for whom we are the next owner.
 */
export class RecentRings {
  private rings: OwnerRing[] = [];
  /** The rings recorded while we started up or joined (`push`'s `startingUp`): not yet counted in by the mesh. */
  private readonly startup = new WeakSet<OwnerRing>();

  constructor(private readonly max = 16) {}

  /** The ring recorded last (the current one, between changes); undefined before any. */
  latest(): OwnerRing | undefined {
    return this.rings[this.rings.length - 1];
  }

  /**
   * Records the ring as it is now (call on every change). `startingUp`: we have not been counted in by the mesh
   * yet (src/crawl/handoff.ts `startingUp`): that we own a host in this ring says nothing of having held it.
   */
  push(ring: OwnerRing, startingUp = false): void {
    const snap = snapshotRing(ring);
    this.rings.push(snap);
    if (startingUp) this.startup.add(snap);
    if (this.rings.length > this.max) this.rings.shift();
  }

  /**
   * The rings as `[id, capacity]` lists (`[id, capacity, zone, weight]` for a
   * member outside the default zone), oldest first: kept in the store, so
   * that an agent restarted after a crash still knows who owned what before it
   * (the seen entries re-sent to it since were sent under those rings).
   */
  toJSON(): Array<Array<[string, number] | [string, number, string, number]>> {
    return this.rings.map((r) => r.members().map((id): [string, number] | [string, number, string, number] => {
      const zone = zoneOfMember(r, id);
      return zone ? [id, r.capacityOf(id) ?? 1, zone, zoneWeightOfMember(r, id)] : [id, r.capacityOf(id) ?? 1];
    }));
  }

  /** Rings saved by toJSON() (a malformed value is ignored: the history starts afresh), before any push. */
  restore(saved: unknown, options: { replicas?: number; maxCapacity?: number; rules?: readonly ZoneRule[] } = {}): void {
    if (!Array.isArray(saved)) return;
    for (const list of saved.slice(-this.max)) {
      if (!Array.isArray(list)) continue;
      const ring = new ZonedRing({ replicas: options.replicas, maxCapacity: options.maxCapacity }, options.rules ?? []);
      for (const e of list) {
        if (!Array.isArray(e) || typeof e[0] !== 'string' || typeof e[1] !== 'number' || !(e[1] > 0)) continue;
        try { ring.add(e[0], e[1], typeof e[2] === 'string' ? e[2] : undefined, typeof e[3] === 'number' ? e[3] : undefined); } catch { /* a malformed entry: skipped */ }
      }
      if (ring.members().length) this.rings.push(ring);
    }
  }

  /**
   * Whether `peer` owned `host` under one of the recent rings — or, given
   * `self` (while we start up or join), under one of them without us: the
   * mesh as it was before we joined, or while we were away after a crash.
   * Consistent hashing moves a host only between its owner and the member
   * that joins or leaves, so its owner then was the next owner after us
   * (Karger et al. 1997, monotonicity). Only then: later, such a claim could
   * only be forged. `also`: one more ring to look at (while we start up, that
   * of every member we have heard of: a peer hands our hosts over before its
   * marker lets it into our ring).
   */
  owned(peer: string, host: string, self?: string, also?: OwnerRing): boolean {
    for (const r of also ? [...this.rings, also] : this.rings) {
      const o = r.ownerOf(host);
      if (o === peer) return true;
      if (self !== undefined && o === self && r.nextOwnersOf(host, 2)[1] === peer) return true;
    }
    return false;
  }

  /**
   * Whether `peer` may pass on to us (`self`) a seen entry of `host` that the
   * host's previous owner handed it: we gained the host in one of the recent
   * ring changes (its owner under an earlier recent ring was another member),
   * and under a later one, where it is ours, `peer` comes right after us. A
   * previous owner that has not counted us in yet hands the host to the owner
   * of the ring without us, which is that next owner (consistent hashing moves
   * a host only between its owner and the member that joins or leaves: Karger
   * et al. 1997, monotonicity); that member, seeing the host is ours, passes
   * the entry on. Only for hosts gained within the recent rings: a host that
   * has long been ours takes seen entries from nobody but its recent owners.
   */
  passedOn(peer: string, host: string, self: string): boolean {
    let gained = false;
    for (const r of this.rings) {
      const [owner, next] = r.nextOwnersOf(host, 2);
      // A ring of our start-up is our own view before the mesh counted us in: a joiner owns every host in its
      // first, solo ring, and members that joined with it may pass on what the members before us held.
      if (owner !== self || this.startup.has(r)) gained = true;
      if (owner === self && gained && next === peer) return true;
    }
    return false;
  }

  /**
   * Whether, under one of the recent rings, `peer` came after the owner of `host` (within `depth` successors)
   * and that owner is `gone`: `peer` held the host's replica seen entries, and with the owner gone they are
   * the host's record, which its new owner takes (src/crawl/ownership.ts `passReplicas`). The new owner is
   * often itself the first of those successors in our view (it joined between the owner and the holder), so
   * `depth` counts one more than the replicas. A hostile member can hide pages this way only of hosts whose
   * owner just went and whose replicas it held — a host it would take over itself on the next loss.
   */
  heldFor(peer: string, host: string, depth: number, gone: (id: string) => boolean): boolean {
    for (const r of this.rings) {
      const o = r.nextOwnersOf(host, depth + 1);
      if (o.length > 1 && o[0] !== peer && o.indexOf(peer, 1) > 0 && gone(o[0]!)) return true;
    }
    return false;
  }

  /** Whether, under one of the recent rings (or `also`), `peer` owned `host` and `self` came next (within `depth` successors). */
  replicaFor(peer: string, self: string, host: string, also?: OwnerRing, depth = 1): boolean {
    for (const r of also ? [...this.rings, also] : this.rings) {
      const o = r.nextOwnersOf(host, depth + 1);
      if (o[0] === peer && o.indexOf(self, 1) > 0) return true;
    }
    return false;
  }
}
