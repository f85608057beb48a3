// Zone-aware host ownership: a host is first given a zone (a data center, a
// region), then an agent of that zone by the identifier-seeded consistent
// hashing of src/assign/ring.ts. UbiCrawler's paper leaves geography to future
// work; this two-level assignment keeps its properties inside each zone.
//
// A host's zone:
//   1. by rule (`--zone-rule SUFFIX=ZONE` or `CIDR=ZONE`), so a site can be
//      crawled from near it: the longest matching name suffix, or for an IP
//      literal host the first matching CIDR. A rule whose zone has no member
//      falls through to 2;
//   2. by weighted rendezvous hashing over the zones that have members (Thaler
//      and Ravishankar 1998; scores -w/ln(u), so a zone's expected share is
//      its weight over the sum). Adding a zone moves hosts only into it,
//      removing one moves only its hosts.
// A zone's weight is what its members declare (`--zone-weight`, the largest
// declared wins, default 1), not the sum of live members' capacities: a sum
// would move hosts across zones on every join, leave or restart inside a zone,
// and rebalancing inside a zone must never do that (docs/mesh.md "Zones").
// Weight a zone by the capacity you plan for it.
//
// With every member in one zone (the default, no `--zone`) the owner of every
// host is exactly HostRing's. Pure: plain data in and out.
import { BlockList, isIP } from 'node:net';
import { xxh64 } from '../hash/xxhash.js';
import { HostRing, ringHostName, type HostRingOptions } from './ring.js';

/** Largest zone weight a heartbeat may declare (a hostile member cannot claim every host for its zone at an unbounded ratio). */
export const MAX_ZONE_WEIGHT = 10_000;

/** The zone of members started without `--zone`. */
export const DEFAULT_ZONE = '';
/** Longest zone name: it travels in every heartbeat. */
export const MAX_ZONE_CHARS = 32;
const ZONE_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

export function isZoneName(s: unknown): s is string {
  return typeof s === 'string' && (s === DEFAULT_ZONE || ZONE_NAME.test(s));
}

export interface ZoneRule {
  /** The rule as written, for messages. */
  text: string;
  zone: string;
  /** Name suffix, lower case with a leading dot (`.de`), or null for a CIDR rule. */
  suffix: string | null;
  /** Address range of a CIDR rule. */
  range: BlockList | null;
}

/** Parses `SUFFIX=ZONE` (`.de=eu`, `example.org=us`) or `CIDR=ZONE` (`10.0.0.0/8=eu`); throws a one-line error. */
export function parseZoneRule(text: string): ZoneRule {
  const eq = text.lastIndexOf('=');
  if (eq <= 0) throw new Error(`--zone-rule: expected SUFFIX=ZONE or CIDR=ZONE, got ${text}`);
  const match = text.slice(0, eq).trim().toLowerCase();
  const zone = text.slice(eq + 1).trim().toLowerCase();
  if (!isZoneName(zone) || zone === DEFAULT_ZONE) throw new Error(`--zone-rule: bad zone name in ${text} (letters, digits, - and _, at most ${MAX_ZONE_CHARS})`);
  const slash = match.indexOf('/');
  if (slash > 0) {
    const addr = match.slice(0, slash);
    const bits = Number(match.slice(slash + 1));
    const family = isIP(addr);
    if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) throw new Error(`--zone-rule: bad CIDR in ${text}`);
    const range = new BlockList();
    range.addSubnet(addr, bits, family === 4 ? 'ipv4' : 'ipv6');
    return { text, zone, suffix: null, range };
  }
  const name = match.replace(/^\*?\.?/, '');
  if (!/^[a-z0-9.-]+$/.test(name) || name.length === 0) throw new Error(`--zone-rule: bad name suffix in ${text}`);
  return { text, zone, suffix: `.${name}`, range: null };
}

/** The zone a rule gives a host (ring key: lower case, no port), or null. Longest suffix first; CIDRs for IP literals. */
export function zoneByRules(host: string, rules: readonly ZoneRule[]): string | null {
  const ip = host.startsWith('[') ? host.slice(1, -1) : host;
  const family = isIP(ip);
  if (family !== 0) {
    for (const r of rules) if (r.range?.check(ip, family === 4 ? 'ipv4' : 'ipv6')) return r.zone;
    return null;
  }
  const dotted = `.${host}`;
  let best: ZoneRule | null = null;
  for (const r of rules) {
    if (r.suffix !== null && dotted.endsWith(r.suffix) && (best === null || r.suffix.length > best.suffix!.length)) best = r;
  }
  return best?.zone ?? null;
}

/**
 * A digest of a rule list (16 hex digits), carried in heartbeats: members that
 * apply different rules would disagree on owners, so a mismatch is reported
 * (docs/mesh.md "Zones"). Order matters (the first matching CIDR wins).
 */
export function zoneRulesDigest(rules: readonly ZoneRule[]): string | undefined {
  if (rules.length === 0) return undefined;
  const canon = rules.map((r) => `${r.suffix ?? r.text.slice(0, r.text.lastIndexOf('=')).trim().toLowerCase()}=${r.zone}`).join('\n');
  return xxh64(canon).toString(16).padStart(16, '0');
}

/** A uniform (0, 1) draw from a 64-bit hash. */
function unit(h: bigint): number {
  return (Number(h >> 11n) + 0.5) / 9007199254740992;
}

/** The zone of `host` by weighted rendezvous hashing over `weights` (zone → weight > 0); undefined when empty. */
export function zoneByHash(host: string, weights: ReadonlyMap<string, number>): string | undefined {
  let best: string | undefined;
  let bestScore = -Infinity;
  for (const [zone, w] of weights) {
    const score = -w / Math.log(unit(xxh64(`${zone}\n${host}`)));
    if (score > bestScore || (score === bestScore && best !== undefined && zone < best)) {
      best = zone;
      bestScore = score;
    }
  }
  return best;
}

interface ZoneEntry { ring: HostRing; weights: Map<string, number> }

/**
 * What ownership consumers need of a ring: HostRing and ZonedRing both offer
 * it, so a consumer (handoff gates, recent rings, routing) takes either.
 */
export interface OwnerRing {
  readonly replicas: number;
  readonly maxCapacity: number;
  readonly size: number;
  members(): string[];
  has(id: string): boolean;
  capacityOf(id: string): number | undefined;
  ownerOf(host: string): string | undefined;
  nextOwnersOf(host: string, n: number): string[];
  shares(): Map<string, number>;
}

/** A member's zone in `ring` (DEFAULT_ZONE for a plain HostRing or a non-member). */
export function zoneOfMember(ring: OwnerRing, id: string): string {
  return ring instanceof ZonedRing ? ring.memberZone(id) ?? DEFAULT_ZONE : DEFAULT_ZONE;
}

/** A member's declared zone weight in `ring` (1 for a plain HostRing or a non-member). */
export function zoneWeightOfMember(ring: OwnerRing, id: string): number {
  return ring instanceof ZonedRing ? ring.declaredWeight(id) ?? 1 : 1;
}

/** The zone rules a ring applies (none for a plain HostRing). */
export function rulesOf(ring: OwnerRing): readonly ZoneRule[] {
  return ring instanceof ZonedRing ? ring.zoneRules : [];
}

/**
 * A frozen copy of a ring (the live one is updated in place by Membership):
 * members, capacities, zones, declared weights and rules.
 */
export function copyRing(ring: OwnerRing): ZonedRing {
  const copy = new ZonedRing({ replicas: ring.replicas, maxCapacity: ring.maxCapacity }, rulesOf(ring));
  for (const id of ring.members()) copy.add(id, ring.capacityOf(id), zoneOfMember(ring, id), zoneWeightOfMember(ring, id));
  return copy;
}

/**
 * HostRing's interface over zones: members carry a zone and the weight they
 * declare for it. Consumers that ask ownerOf / nextOwnersOf need not know zones.
 */
export class ZonedRing implements OwnerRing {
  private readonly zones = new Map<string, ZoneEntry>();
  private readonly zoneOfId = new Map<string, string>();
  private weights: Map<string, number> | null = null;
  readonly replicas: number;
  readonly maxCapacity: number;

  constructor(private readonly ringOptions: HostRingOptions = {}, private readonly rules: readonly ZoneRule[] = []) {
    const probe = new HostRing(ringOptions); // validates the options and resolves their defaults
    this.replicas = probe.replicas;
    this.maxCapacity = probe.maxCapacity;
  }

  /** The zone rules this ring applies, in the order given. */
  get zoneRules(): readonly ZoneRule[] {
    return this.rules;
  }

  /** Adds member `id` to `zone` (or changes its capacity, zone or declared zone weight). */
  add(id: string, capacity = 1, zone = DEFAULT_ZONE, zoneWeight = 1): void {
    if (!isZoneName(zone)) throw new RangeError(`bad zone name: ${zone}`);
    if (!(zoneWeight > 0) || !Number.isFinite(zoneWeight) || zoneWeight > MAX_ZONE_WEIGHT) throw new RangeError('zone weight must be a positive number ≤ ' + MAX_ZONE_WEIGHT);
    const was = this.zoneOfId.get(id);
    if (was !== undefined && was !== zone) this.remove(id);
    let e = this.zones.get(zone);
    if (e === undefined) {
      e = { ring: new HostRing(this.ringOptions), weights: new Map() };
      this.zones.set(zone, e);
    }
    e.ring.add(id, capacity);
    if (e.weights.get(id) !== zoneWeight) {
      e.weights.set(id, zoneWeight);
      this.weights = null;
    }
    if (was !== zone) this.weights = null;
    this.zoneOfId.set(id, zone);
  }

  remove(id: string): boolean {
    const zone = this.zoneOfId.get(id);
    if (zone === undefined) return false;
    const e = this.zones.get(zone)!;
    e.ring.remove(id);
    e.weights.delete(id);
    if (e.ring.size === 0) this.zones.delete(zone);
    this.zoneOfId.delete(id);
    this.weights = null;
    return true;
  }

  has(id: string): boolean {
    return this.zoneOfId.has(id);
  }

  capacityOf(id: string): number | undefined {
    const zone = this.zoneOfId.get(id);
    return zone === undefined ? undefined : this.zones.get(zone)!.ring.capacityOf(id);
  }

  /** The zone of a member, or undefined. */
  memberZone(id: string): string | undefined {
    return this.zoneOfId.get(id);
  }

  /** The zone weight a member declared, or undefined. */
  declaredWeight(id: string): number | undefined {
    const zone = this.zoneOfId.get(id);
    return zone === undefined ? undefined : this.zones.get(zone)!.weights.get(id);
  }

  members(): string[] {
    return [...this.zoneOfId.keys()].sort();
  }

  get size(): number {
    return this.zoneOfId.size;
  }

  /** Weight of each zone with members: the largest its members declare. Zones whose members all have capacity 0 own nothing. */
  zoneWeights(): Map<string, number> {
    if (this.weights !== null) return this.weights;
    const out = new Map<string, number>();
    for (const [zone, e] of [...this.zones].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (e.ring.pointTotal === 0) continue;
      let w = 0;
      for (const v of e.weights.values()) w = Math.max(w, v);
      out.set(zone, w);
    }
    this.weights = out;
    return out;
  }

  /** The zone that owns `host` (name, optionally with port), or undefined with no member. */
  zoneOf(host: string): string | undefined {
    const weights = this.zoneWeights();
    if (weights.size <= 1) return weights.keys().next().value;
    const key = ringHostName(host);
    if (this.rules.length > 0) {
      const z = zoneByRules(key, this.rules);
      if (z !== null && weights.has(z)) return z;
    }
    return zoneByHash(key, weights);
  }

  ownerOf(host: string): string | undefined {
    const zone = this.zoneOf(host);
    return zone === undefined ? undefined : this.zones.get(zone)!.ring.ownerOf(host);
  }

  /**
   * The owner of `host`, then the next distinct members of its zone clockwise,
   * then those of the other zones in the host's rendezvous order: who would own
   * it if the ones before failed.
   */
  nextOwnersOf(host: string, n: number): string[] {
    const zone = this.zoneOf(host);
    if (zone === undefined || !(n > 0)) return [];
    const out = this.zones.get(zone)!.ring.nextOwnersOf(host, n);
    if (out.length >= n) return out;
    const key = ringHostName(host);
    const others = [...this.zoneWeights()].filter(([z]) => z !== zone)
      .map(([z, w]) => ({ z, score: -w / Math.log(unit(xxh64(`${z}\n${key}`))) }))
      .sort((a, b) => b.score - a.score);
    for (const { z } of others) {
      for (const id of this.zones.get(z)!.ring.nextOwnersOf(host, n - out.length)) out.push(id);
      if (out.length >= n) break;
    }
    return out;
  }

  /**
   * The owner of `host` and the next distinct members clockwise *of its zone
   * only* (at most min(n, the zone's members)): who takes the host over if its
   * owner fails while its zone lives. nextOwnersOf()[1] is the same member
   * whenever the zone has two or more; this one never leaves the zone.
   */
  nextOwnersInZone(host: string, n: number): string[] {
    const zone = this.zoneOf(host);
    return zone === undefined || !(n > 0) ? [] : this.zones.get(zone)!.ring.nextOwnersOf(host, n);
  }

  /** Expected share of hosts per member: its zone's weight share times its share of the zone's ring (rules not counted). */
  shares(): Map<string, number> {
    const weights = this.zoneWeights();
    let total = 0;
    for (const w of weights.values()) total += w;
    const out = new Map<string, number>();
    for (const [zone, e] of this.zones) {
      const zoneShare = weights.has(zone) ? weights.get(zone)! / total : 0;
      for (const [id, s] of e.ring.shares()) out.set(id, zoneShare * s);
    }
    return out;
  }

  /** Expected share of hosts per zone (its weight over the sum; rules not counted). */
  zoneShares(): Map<string, number> {
    const weights = this.zoneWeights();
    let total = 0;
    for (const w of weights.values()) total += w;
    const out = new Map<string, number>();
    for (const zone of this.zones.keys()) out.set(zone, weights.has(zone) ? weights.get(zone)! / total : 0);
    return out;
  }

  /** Members per zone, sorted. */
  zoneMembers(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [zone, e] of [...this.zones].sort((a, b) => (a[0] < b[0] ? -1 : 1))) out.set(zone, e.ring.members());
    return out;
  }
}
