// Members that left our ring with nothing queued — an `--until-idle` run that
// ended (src/mesh/membership.ts `announceEnd`), or a leaver whose queue was
// empty — and who owned what before they left. The queued replicas we hold of
// their hosts are stale: each page was settled there (its trim may have gone to
// another successor during a ring change, or been refused), and a leaver that
// ends hands no seen entries over, so promoting them would fetch those pages
// again (docs/mesh.md "Replicated frontier").
import type { OwnerRing } from '../assign/zones.js';

/** How many such members are remembered (the oldest is forgotten first). */
const MAX_LEFT = 64;

export class LeftEmpty {
  /** Member → our ring before it left. */
  private readonly left = new Map<string, OwnerRing>();

  /** The ring changed from `before` to `ring`; `leftEmpty`: members that left it with nothing queued. */
  changed(before: OwnerRing | undefined, ring: OwnerRing, leftEmpty: readonly string[]): void {
    for (const id of [...this.left.keys()]) if (ring.has(id)) this.left.delete(id); // back: it owns hosts again
    if (!before) return;
    for (const id of leftEmpty) {
      if (!before.has(id) || ring.has(id)) continue;
      this.left.delete(id);
      this.left.set(id, before);
    }
    while (this.left.size > MAX_LEFT) this.left.delete(this.left.keys().next().value!);
  }

  /** Whether `id` left our ring with nothing queued (and has not come back). */
  has(id: string): boolean { return this.left.has(id); }

  /** Whether `host` was owned, before it left, by a member that left with nothing queued. */
  settledThere(host: string): boolean {
    for (const [id, ring] of this.left) if (ring.ownerOf(host) === id) return true;
    return false;
  }
}
