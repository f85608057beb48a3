// Host ownership: identifier-seeded consistent hashing with capacity weights
// (UbiCrawler, Boldi, Codenotti, Santini, Vigna 2004, §4 "Assignment
// function"; consistent hashing per Karger et al. 1997). The contract
// (docs/mesh.md "Membership" derives the ring from it):
//   - agent points: xxhash64(`${id}#${i}`) for i < round(replicas × capacity),
//     computed from the identifier alone, so every agent derives every other
//     agent's points;
//   - host point: xxhash64 of the lower-cased host name, port excluded;
//   - owner: the agent holding the first point clockwise (≥ the host point,
//     wrapping past 2^64 - 1 to the smallest point).
// Two rings with the same members and capacities agree on every host, whatever
// order the members were added in (equal points, vanishingly rare, are broken
// by identifier order).
//
// Replica count: DEFAULT_REPLICAS = 2048 points per unit of capacity. Load
// imbalance of consistent hashing shrinks like 1/√replicas. Measured over 1 M
// hosts with 100 equal agents, 20 different identifier sets each (max/mean,
// median and worst): 1024 → 1.084 / 1.106 (2 of 20 sets above 1.10),
// 1536 → 1.071 / 1.082, 2048 → 1.060 / 1.079. The goal is ≤ 1.10, so 2048
// keeps a margin for any identifier set. Cost: 12 bytes per point plus a
// bucket table of ≤ 4 bytes per point (100 agents → 3.2 MB; 1,000 agents →
// 32 MB), a one-off 2048 hashes per joining member, and an O(N) merge per join
// or leave.

import { xxh64 } from '../hash/xxhash.js';
import { hostWithoutPort } from '../url/host.js';

export const DEFAULT_REPLICAS = 2048;
/** Capacities above this are clamped: a member (or a hostile peer's heartbeat)
 * cannot make the ring allocate unbounded points. */
export const DEFAULT_MAX_CAPACITY = 64;

export interface HostRingOptions {
  /** Points per unit of capacity. Default {@link DEFAULT_REPLICAS}. */
  replicas?: number;
  /** Largest accepted capacity; larger values are clamped. Default {@link DEFAULT_MAX_CAPACITY}. */
  maxCapacity?: number;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = 1 - LO;
const scratch64 = new BigUint64Array(1);
const scratch32 = new Uint32Array(scratch64.buffer);

/**
 * The ring key of a host: lower-cased, port removed (politeness is per host
 * name). Accepts `example.com`, `Example.COM:8080`, `[::1]:443`, `[::1]`.
 */
export function ringHostName(host: string): string {
  return hostWithoutPort(host).toLowerCase();
}

/** The ring point of a host (xxhash64 of {@link ringHostName}). */
export function hostPoint(host: string): bigint {
  return xxh64(ringHostName(host));
}

/** The i-th ring point of agent `id`. */
export function agentPoint(id: string, i: number): bigint {
  return xxh64(`${id}#${i}`);
}

/** Number of points for a capacity: round(replicas × capacity), at least 1 for any capacity > 0. */
export function pointCount(replicas: number, capacity: number): number {
  if (!(capacity > 0)) return 0;
  return Math.max(1, Math.round(replicas * capacity));
}

interface Member {
  capacity: number;
  /** The member's points, sorted ascending (native BigUint64Array sort). */
  points: BigUint64Array;
}

/** Consistent-hashing ring of agents, mapping host names to their owner. */
/**
 * The members that take `host` over should its owner fail, in order: the
 * next `n` distinct owners after it (fewer when the ring is smaller). Replicas
 * of a host's frontier go to them (docs/mesh.md "Replicated frontier"). Any
 * ring with `nextOwnersOf` fits (a zoned ring lists its zone's members first).
 */
export function successorsOf(ring: Pick<HostRing, 'nextOwnersOf'>, host: string, n: number): string[] {
  return n > 0 ? ring.nextOwnersOf(host, n + 1).slice(1) : [];
}

export class HostRing {
  readonly replicas: number;
  readonly maxCapacity: number;
  private readonly byId = new Map<string, Member>();
  // Lookup arrays, rebuilt lazily on the first lookup after a membership
  // change: one change is merged in (or filtered out) in O(N); several at
  // once rebuild from the members' sorted point lists in O(N log m).
  private dirty = true;
  private built = false;
  private pending: string[] = []; // ids added, removed or re-weighted since the last build
  private ids: string[] = []; // members, sorted; owners[] index into it
  private points: BigUint64Array = new BigUint64Array(0); // sorted ascending
  private words: Uint32Array = new Uint32Array(0); // view of `points`: [2i + LO] low, [2i + HI] high word
  private owners: Uint32Array = new Uint32Array(0); // parallel to `points`
  // bucket[b] = first index whose point's top `bucketBits` bits are ≥ b, so a
  // lookup binary-searches only the one or two points of its bucket.
  private bucket: Uint32Array = new Uint32Array(2);
  private bucketShift = 32;
  /** Members with at least one point: a walk for more distinct owners than this would visit every point. */
  private holders = 0;

  constructor(opts: HostRingOptions = {}) {
    const r = opts.replicas ?? DEFAULT_REPLICAS;
    if (!Number.isInteger(r) || r < 1 || r > 1 << 16) throw new RangeError('replicas must be an integer in 1..65536');
    this.replicas = r;
    const m = opts.maxCapacity ?? DEFAULT_MAX_CAPACITY;
    if (!(m > 0) || !Number.isFinite(m)) throw new RangeError('maxCapacity must be a positive number');
    this.maxCapacity = m;
  }

  /**
   * Adds agent `id` (or changes its capacity). Capacity is a relative share of
   * hosts: finite and ≥ 0 (0 = a member that owns nothing), clamped to
   * maxCapacity. Its points are those of `pointsOf(id, capacity)`; raising a
   * capacity keeps the existing points and adds more, so a capacity change
   * moves hosts only to or from that agent.
   */
  add(id: string, capacity = 1): void {
    if (typeof id !== 'string' || id.length === 0) throw new TypeError('agent id must be a non-empty string');
    if (!Number.isFinite(capacity) || capacity < 0) throw new RangeError('capacity must be a finite number ≥ 0');
    const cap = Math.min(capacity, this.maxCapacity);
    const prev = this.byId.get(id);
    if (prev !== undefined && prev.capacity === cap) return;
    const points = this.pointsOf(id, cap);
    points.sort();
    this.byId.set(id, { capacity: cap, points });
    this.pending.push(id);
    this.dirty = true;
  }

  /** Removes agent `id`; false if it was not a member. */
  remove(id: string): boolean {
    const had = this.byId.delete(id);
    if (had) {
      this.pending.push(id);
      this.dirty = true;
    }
    return had;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** Capacity of a member (after clamping), or undefined. */
  capacityOf(id: string): number | undefined {
    return this.byId.get(id)?.capacity;
  }

  /** Member ids, sorted. */
  members(): string[] {
    return [...this.byId.keys()].sort();
  }

  get size(): number {
    return this.byId.size;
  }

  /** Total number of points on the ring. */
  get pointTotal(): number {
    this.build();
    return this.points.length;
  }

  /**
   * Points of agent `id` for `capacity` (default: its current capacity, or 1
   * for a non-member), in generation order: xxhash64(`${id}#${i}`).
   */
  pointsOf(id: string, capacity?: number): BigUint64Array {
    const cap = Math.min(capacity ?? this.byId.get(id)?.capacity ?? 1, this.maxCapacity);
    const n = pointCount(this.replicas, cap);
    const out = new BigUint64Array(n);
    for (let i = 0; i < n; i++) out[i] = agentPoint(id, i);
    return out;
  }

  /** Owner of `host` (name, optionally with port), or undefined for an empty ring. */
  ownerOf(host: string): string | undefined {
    return this.ownerOfPoint(xxh64(ringHostName(host)));
  }

  /** Owner of a ring point: the member holding the first point ≥ p, wrapping. */
  ownerOfPoint(p: bigint): string | undefined {
    this.build();
    const n = this.owners.length;
    if (n === 0) return undefined;
    const i = this.successor(p);
    return this.ids[this.owners[i === n ? 0 : i]];
  }

  /**
   * The owner of `host` followed by the next distinct members clockwise: who
   * would own it if the ones before failed (replicated handoff). At most
   * min(n, members with points) ids.
   */
  nextOwnersOf(host: string, n: number): string[] {
    this.build();
    const total = this.owners.length;
    const out: string[] = [];
    if (total === 0 || !(n > 0)) return out;
    // Asked for more owners than there are (one agent alone, asked for a successor), the walk would go round
    // the whole ring for each host: stop once every holder is found.
    n = Math.min(n, this.holders);
    const start = this.successor(xxh64(ringHostName(host)));
    if (n === 1) { out.push(this.ids[this.owners[start === total ? 0 : start]]); return out; }
    const seen = new Uint8Array(this.ids.length);
    for (let k = 0; k < total && out.length < n; k++) {
      let i = start + k;
      if (i >= total) i -= total;
      const o = this.owners[i];
      if (seen[o] === 0) {
        seen[o] = 1;
        out.push(this.ids[o]);
      }
    }
    return out;
  }

  /**
   * Fraction of the ring (hence expected fraction of hosts) owned by each
   * member: the arcs ending at its points. Sums to 1 for a non-empty ring.
   */
  shares(): Map<string, number> {
    this.build();
    const out = new Map<string, number>();
    for (const id of this.ids) out.set(id, 0);
    const n = this.points.length;
    if (n === 0) return out;
    const TWO64 = 18446744073709551616;
    const acc = new Float64Array(this.ids.length);
    for (let i = 0; i < n; i++) {
      // Arc (points[i-1], points[i]] belongs to owners[i]; the first one wraps.
      const prev = i === 0 ? this.points[n - 1] : this.points[i - 1];
      let arc = Number(this.points[i] - prev);
      if (i === 0) arc += TWO64;
      acc[this.owners[i]] += arc;
    }
    for (let j = 0; j < this.ids.length; j++) out.set(this.ids[j], acc[j] / TWO64);
    return out;
  }

  /** Index of the first point ≥ p (n if none): bucket, then binary search on 32-bit words (no BigInt per step). */
  private successor(p: bigint): number {
    scratch64[0] = p; // stored modulo 2^64
    const qh = scratch32[HI], ql = scratch32[LO];
    const w = this.words;
    const b = this.bucketShift >= 32 ? 0 : qh >>> this.bucketShift;
    let lo = this.bucket[b], hi = this.bucket[b + 1];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const mh = w[2 * mid + HI];
      if (mh < qh || (mh === qh && w[2 * mid + LO] < ql)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private build(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const pending = this.pending;
    this.pending = [];
    if (!(this.built && pending.length === 1 && this.incremental(pending[0]))) this.rebuild();
    this.built = true;
    this.index();
    let holders = 0;
    for (const m of this.byId.values()) if (m.points.length > 0) holders++;
    this.holders = holders;
  }

  /** Applies one join or leave to the built arrays in O(N); false if the change is not one of those. */
  private incremental(id: string): boolean {
    const was = sortedIndexOf(this.ids, id);
    const member = this.byId.get(id);
    if (was < 0 && member !== undefined) {
      // Join: insert into ids, shift owner indices, merge the newcomer's points.
      const q = -was - 1;
      const ids = this.ids.slice();
      ids.splice(q, 0, id);
      const own = this.owners.slice();
      for (let i = 0; i < own.length; i++) if (own[i] >= q) own[i]++;
      this.ids = ids;
      const merged = merge({ pts: this.points, own }, { pts: member.points, own: new Uint32Array(member.points.length).fill(q) });
      this.points = merged.pts;
      this.owners = merged.own;
      return true;
    }
    if (was >= 0 && member === undefined) {
      // Leave: drop the leaver's points, shift owner indices.
      const ids = this.ids.slice();
      ids.splice(was, 1);
      let keep = 0;
      for (let i = 0; i < this.owners.length; i++) if (this.owners[i] !== was) keep++;
      const pts = new BigUint64Array(keep);
      const own = new Uint32Array(keep);
      const src = this.words;
      const dst = new Uint32Array(pts.buffer);
      let k = 0;
      for (let i = 0; i < this.owners.length; i++) {
        const o = this.owners[i];
        if (o === was) continue;
        dst[2 * k] = src[2 * i]; dst[2 * k + 1] = src[2 * i + 1];
        own[k++] = o > was ? o - 1 : o;
      }
      this.ids = ids;
      this.points = pts;
      this.owners = own;
      return true;
    }
    return false;
  }

  /** Merges all members' sorted point lists (pairwise, O(N log m)). */
  private rebuild(): void {
    this.ids = [...this.byId.keys()].sort();
    type Run = { pts: BigUint64Array; own: Uint32Array };
    let runs: Run[] = [];
    for (let j = 0; j < this.ids.length; j++) {
      const pts = this.byId.get(this.ids[j])!.points;
      if (pts.length > 0) runs.push({ pts, own: new Uint32Array(pts.length).fill(j) });
    }
    if (runs.length === 0) {
      this.points = new BigUint64Array(0);
      this.owners = new Uint32Array(0);
      return;
    }
    while (runs.length > 1) {
      const next: Run[] = [];
      for (let i = 0; i + 1 < runs.length; i += 2) next.push(merge(runs[i], runs[i + 1]));
      if (runs.length % 2 === 1) next.push(runs[runs.length - 1]);
      runs = next;
    }
    // Never mutated after this point, so aliasing a member's own array is fine.
    this.points = runs[0].pts;
    this.owners = runs[0].own;
  }

  /** Derives the word view and the bucket table from `points`. */
  private index(): void {
    const n = this.points.length;
    this.words = new Uint32Array(this.points.buffer, this.points.byteOffset, n * 2);
    // About one point per bucket, between 2^4 and 2^20 buckets.
    let bits = 4;
    while (bits < 20 && 1 << bits < n) bits++;
    const shift = 32 - bits;
    const size = 1 << bits;
    const bucket = new Uint32Array(size + 1);
    let i = 0;
    for (let b = 0; b <= size; b++) {
      while (i < n && this.words[2 * i + HI] >>> shift < b) i++;
      bucket[b] = i;
    }
    bucket[size] = n;
    this.bucket = bucket;
    this.bucketShift = shift;
  }
}

/** Binary search in a sorted string array: index, or -(insertion point) - 1. */
function sortedIndexOf(a: string[], x: string): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < a.length && a[lo] === x ? lo : -lo - 1;
}

/**
 * Merges two sorted runs. Equal points (a 64-bit collision) are ordered by
 * owner index, i.e. by identifier, so the result does not depend on insertion
 * order, and lookups resolve to the holder with the smallest identifier.
 */
function merge(
  a: { pts: BigUint64Array; own: Uint32Array },
  b: { pts: BigUint64Array; own: Uint32Array },
): { pts: BigUint64Array; own: Uint32Array } {
  const na = a.pts.length, nb = b.pts.length;
  const pts = new BigUint64Array(na + nb);
  const own = new Uint32Array(na + nb);
  const aw = new Uint32Array(a.pts.buffer, a.pts.byteOffset, na * 2);
  const bw = new Uint32Array(b.pts.buffer, b.pts.byteOffset, nb * 2);
  const ow = new Uint32Array(pts.buffer);
  const ao = a.own, bo = b.own;
  let i = 0, j = 0, k = 0;
  while (i < na && j < nb) {
    const ah = aw[2 * i + HI], bh = bw[2 * j + HI];
    let takeA: boolean;
    if (ah !== bh) takeA = ah < bh;
    else {
      const al = aw[2 * i + LO], bl = bw[2 * j + LO];
      takeA = al !== bl ? al < bl : ao[i] <= bo[j];
    }
    if (takeA) {
      ow[2 * k] = aw[2 * i]; ow[2 * k + 1] = aw[2 * i + 1]; own[k++] = ao[i++];
    } else {
      ow[2 * k] = bw[2 * j]; ow[2 * k + 1] = bw[2 * j + 1]; own[k++] = bo[j++];
    }
  }
  while (i < na) { ow[2 * k] = aw[2 * i]; ow[2 * k + 1] = aw[2 * i + 1]; own[k++] = ao[i++]; }
  while (j < nb) { ow[2 * k] = bw[2 * j]; ow[2 * k + 1] = bw[2 * j + 1]; own[k++] = bo[j++]; }
  return { pts, own };
}
