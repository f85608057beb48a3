// What an agent knows and reports about zones (docs/mesh.md "Zones"): which
// destinations are in another zone (their URL batches are formed otherwise:
// fewer, larger), the URLs it forwarded to each zone, and the per-zone view
// for /status and /metrics. Ownership itself is src/assign/zones.ts.
import { DEFAULT_ZONE, type ZonedRing } from '../assign/zones.js';
import type { BatchPolicy } from '../mesh/exchange.js';
import type { MemberInfo } from '../mesh/index.js';
import type { ZoneReport } from '../api/backend.js';

export interface ZoneViewOptions {
  /** Our zone. */
  zone: string;
  /** Our rules' digest (heartbeats carry theirs), undefined without rules. */
  rulesDigest: string | undefined;
  /** The batch policy for a member of another zone. */
  crossZone: BatchPolicy;
}

/** The zone of a member by its latest heartbeat. */
export function memberZone(m: Pick<MemberInfo, 'zone'> | undefined): string {
  return m?.zone ?? DEFAULT_ZONE;
}

/**
 * Per-destination batches and per-zone traffic of one agent. The zone of a
 * peer is what its latest heartbeat says (a departed peer's, the last known).
 */
export class ZoneView {
  private readonly forwardedTo = new Map<string, number>();
  private readonly lastZone = new Map<string, string>();
  /** Members (and their digest) already reported for applying other zone rules. */
  private readonly rulesWarned = new Map<string, string | undefined>();
  /** URLs forwarded to members of other zones, all together. */
  crossZoneForwarded = 0;

  constructor(private readonly o: ZoneViewOptions, private readonly member: (id: string) => MemberInfo | undefined) {}

  get zone(): string { return this.o.zone; }

  /** A peer's zone: its heartbeat's, else the last one we knew, else ours (unknown peers are not treated as far away). */
  zoneOf(peer: string): string {
    const m = this.member(peer);
    if (m) {
      const z = memberZone(m);
      if (this.lastZone.get(peer) !== z) {
        this.lastZone.set(peer, z);
        if (this.lastZone.size > 4096) this.lastZone.delete(this.lastZone.keys().next().value!);
      }
      return z;
    }
    return this.lastZone.get(peer) ?? this.o.zone;
  }

  /** The exchange's batch policy: another zone's members get fewer, larger batches; our zone's the defaults. */
  batchPolicy(peer: string): BatchPolicy | undefined {
    return this.zoneOf(peer) === this.o.zone ? undefined : this.o.crossZone;
  }

  /**
   * Whether a member's heartbeat shows other zone rules than ours, for the first time for that
   * member and digest (the caller logs it once: the owners it computes differ from ours).
   */
  newRulesMismatch(m: Pick<MemberInfo, 'id' | 'zoneRules'>): boolean {
    if (m.zoneRules === this.o.rulesDigest) { this.rulesWarned.delete(m.id); return false; }
    if (this.rulesWarned.has(m.id) && this.rulesWarned.get(m.id) === m.zoneRules) return false;
    this.rulesWarned.set(m.id, m.zoneRules);
    if (this.rulesWarned.size > 4096) this.rulesWarned.delete(this.rulesWarned.keys().next().value!);
    return true;
  }

  /** `n` items queued for `peer`. */
  noteForwarded(peer: string, n: number): void {
    if (n <= 0) return;
    const z = this.zoneOf(peer);
    this.forwardedTo.set(z, (this.forwardedTo.get(z) ?? 0) + n);
    if (z !== this.o.zone) this.crossZoneForwarded += n;
  }

  /** Cumulative items forwarded per destination zone. */
  forwarded(): Map<string, number> {
    return new Map(this.forwardedTo);
  }

  /** The per-zone view: members and owners by zone, each zone's share, our traffic to it, rule mismatches. */
  report(ring: ZonedRing, members: readonly MemberInfo[]): ZoneReport[] {
    const out = new Map<string, ZoneReport>();
    const get = (zone: string): ZoneReport => {
      let r = out.get(zone);
      if (!r) out.set(zone, r = { zone, members: 0, owners: 0, share: 0, self: zone === this.o.zone, forwarded: this.forwardedTo.get(zone) ?? 0, rulesMismatch: 0 });
      return r;
    };
    get(this.o.zone);
    for (const m of members) {
      const r = get(memberZone(m));
      r.members++;
      if (ring.has(m.id)) r.owners++;
      if (!m.self && m.zoneRules !== this.o.rulesDigest) r.rulesMismatch++;
    }
    for (const [zone, share] of ring.zoneShares()) get(zone).share = share;
    for (const zone of this.forwardedTo.keys()) get(zone);
    return [...out.values()].sort((a, b) => (a.zone < b.zone ? -1 : a.zone > b.zone ? 1 : 0));
  }
}
