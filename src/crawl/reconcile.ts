// Healing a partition (docs/mesh.md "Partitions longer than the window"): a
// member we declared dead comes back. If it was cut off rather than dead, it
// declared us dead too and crawled our hosts meanwhile, under a ring of its
// own side that we never had. Two things follow, both for the hosts both
// sides touched:
//
// - its handoff of our hosts (their seen entries, queued URLs) must be taken:
//   the rings of its side are added to our recent rings, under which it owned
//   them (src/crawl/recent-rings.ts is what intake checks seen entries against);
// - with a takeover grace (a death means a long silence: across data centers
//   the other side most likely took our hosts over), its marker from before
//   the death is forgotten, so the handoff gate holds our hosts until it has
//   handed them back with what it fetched (src/crawl/handoff.ts newcomer gate),
//   and no host is requested by both sides at once after the heal.
//
// Pure: src/crawl/ownership.ts feeds it every membership change.
import { copyRing, zoneOfMember, zoneWeightOfMember, type OwnerRing, type ZonedRing } from '../assign/zones.js';

export interface PartitionReturnsOptions {
  /** How long a death is remembered (a member back later is treated as new anyway). */
  keepMs: number;
  /** At most this many deaths remembered (oldest forgotten first). */
  maxDead?: number;
}

export interface Returned {
  /** Members back after we declared them dead. */
  returned: string[];
  /**
   * Those of them back in the same incarnation: cut off, not dead, so they may have crawled our hosts
   * meanwhile. A member that restarted (a higher incarnation, src/mesh/membership.ts) was down, crawled
   * nothing of ours, and is not waited for.
   */
  cutOff: string[];
  /** The rings of their side during the partition (them alone; them with the members still dead to us), to trust their seen entries under. */
  rings: ZonedRing[];
}

export class PartitionReturns {
  /** The ring before the change being applied (it still holds the members that change declares dead). */
  private last: ZonedRing | undefined;
  /** Members we declared dead: when, and the last ring they were in. */
  private readonly dead = new Map<string, { at: number; ring: ZonedRing; incarnation: number | undefined }>();
  /** The incarnation each member of the ring last had. */
  private readonly incarnations = new Map<string, number>();
  readonly stats = { deaths: 0, returns: 0 };

  constructor(private readonly opts: PartitionReturnsOptions) {}

  /**
   * A membership change: `dead` were declared dead in it, `added` entered the ring. Call before anything else
   * reads the new ring. `incarnationOf` tells a live member's incarnation (none known: every return is a cut).
   */
  changed(change: { added: readonly string[]; dead: readonly string[] }, ring: OwnerRing, now: number, incarnationOf?: (id: string) => number | undefined): Returned {
    for (const [id, d] of this.dead) if (now - d.at > this.opts.keepMs) this.dead.delete(id);
    const before = this.last ?? copyRing(ring);
    for (const id of change.dead) {
      this.dead.delete(id); // re-inserted: the map stays in order of death
      this.dead.set(id, { at: now, ring: before, incarnation: this.incarnations.get(id) });
      this.incarnations.delete(id);
      this.stats.deaths++;
    }
    const max = this.opts.maxDead ?? 1024;
    while (this.dead.size > max) this.dead.delete(this.dead.keys().next().value!);
    const returned = change.added.filter((id) => this.dead.has(id));
    const cutOff = returned.filter((id) => {
      const was = this.dead.get(id)!.incarnation;
      const is = incarnationOf?.(id);
      return was === undefined || is === undefined || is <= was;
    });
    const rings: ZonedRing[] = [];
    if (returned.length) {
      this.stats.returns += returned.length;
      // The ring the first of them was last in with us holds its side as it was before the cut.
      const base = this.dead.get(returned[0]!)!.ring;
      const stillDead = [...this.dead.keys()].filter((id) => !returned.includes(id));
      const side = (keep: readonly string[]) => {
        const r = copyRing(base);
        for (const id of r.members()) if (!keep.includes(id)) r.remove(id);
        // A returnee that was not in that ring (it joined meanwhile): as it is in ours now.
        for (const id of returned) if (!r.members().includes(id) && ring.members().includes(id)) r.add(id, ring.capacityOf(id) ?? 1, zoneOfMember(ring, id), zoneWeightOfMember(ring, id));
        return r;
      };
      rings.push(side(returned));
      if (stillDead.length) rings.push(side([...returned, ...stillDead]));
      for (const id of returned) this.dead.delete(id);
    }
    this.last = copyRing(ring);
    if (incarnationOf) {
      for (const id of ring.members()) { const n = incarnationOf(id); if (n !== undefined) this.incarnations.set(id, n); }
      for (const id of this.incarnations.keys()) if (!ring.members().includes(id)) this.incarnations.delete(id);
    }
    return { returned, cutOff, rings: rings.filter((r) => r.members().length > 0) };
  }
}
