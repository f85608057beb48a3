// Who a leaver hands its hosts to when its own ring names nobody else
// (docs/mesh.md "Graceful leave"). Our ring holds only members that sent us a
// handoff marker and that we have not left out for acknowledging nothing; under
// churn and load it can empty while other members are alive and heard (in the
// mesh soak, docs/performance.md "Mesh soak", two leavers' rings emptied that
// way and they exited with hundreds of URLs queued, some queued nowhere else).
// Such members can still take URLs to crawl: each passes them on to the host's
// owner in its own view. So a leaver hands to them, by a ring of its own over
// them (zones as in our ring), rather than keeping its queue for a next start
// that may never come.
import { DEFAULT_ZONE, ZonedRing, rulesOf, type OwnerRing } from '../assign/zones.js';
import { ownsHosts, type MemberInfo } from '../mesh/index.js';

/** What the receivers are picked from: our member table and our ring. */
export interface LeaveView {
  readonly membership: { readonly ring: OwnerRing; isExcluded(id: string): boolean };
  members(): MemberInfo[];
}

/**
 * Members a leaver may hand to: active, owning hosts (capacity > 0), heard
 * within `heardWithinMs`, not us. Those we left out of our ring (they
 * acknowledged nothing for a while) come only when there is nobody else: a
 * try beats leaving with the queue.
 */
export function leaveReceivers(members: readonly MemberInfo[], excluded: (id: string) => boolean, now: number, heardWithinMs: number): MemberInfo[] {
  const heard = members.filter((m) => !m.self && ownsHosts(m) && now - m.lastHeard <= heardWithinMs);
  const useful = heard.filter((m) => !excluded(m.id));
  return useful.length ? useful : heard;
}

export class LeaveReceivers {
  private cached: { key: string; ring: ZonedRing | undefined } | undefined;

  constructor(private readonly o: { heardWithinMs: number; maxCapacity: number }) {}

  /** A ring over the receivers (cached per receiver set), or undefined when there is none. */
  ring(view: LeaveView, now = Date.now()): ZonedRing | undefined {
    const ms = leaveReceivers(view.members(), (id) => view.membership.isExcluded(id), now, this.o.heardWithinMs);
    const key = ms.map((m) => `${m.id}:${m.capacity}@${m.zone ?? ''}*${m.zoneWeight ?? 1}`).join(',');
    if (this.cached?.key !== key) {
      let ring: ZonedRing | undefined;
      if (ms.length) {
        ring = new ZonedRing({ maxCapacity: this.o.maxCapacity }, rulesOf(view.membership.ring));
        for (const m of ms) ring.add(m.id, m.capacity, m.zone ?? DEFAULT_ZONE, m.zone ? m.zoneWeight ?? 1 : 1);
      }
      this.cached = { key, ring };
    }
    return this.cached.ring;
  }

  /** The receiver for `host`, or undefined when there is none. */
  ownerOf(view: LeaveView, host: string, now = Date.now()): string | undefined {
    return this.ring(view, now)?.ownerOf(host);
  }
}
