// LevelDB-backed SimHash index (DESIGN.md "Storage": the `simhash` sublevel),
// using the permuted-table layout of src/dedup/simhash.ts (Manku, Jain, Das
// Sarma 2007, §3): a query is one ordered range read per table, over the
// entries whose permuted fingerprint shares the query's leading block(s).
//
// Keys (17 bytes): [table id][permuted fingerprint, 8 bytes BE][xxh64(id), 8 bytes BE]
//   - the first 9 bytes are `tableKeys()`; the id hash makes entries of equal
//     fingerprints but different documents distinct keys.
// Values: table 0 holds the document id (UTF-8); the other tables hold
//   nothing, so a URL is stored once, not once per table. A match first seen
//   in another table is resolved with one point read of its table-0 key.
//
// Hot path: a permutation preserves Hamming distance, so candidates are
// compared in permuted form, as two 32-bit words read from the key bytes —
// no BigInt per candidate; only matches are unpermuted.
import { xxh64 } from '../hash/xxhash.js';
import type { Sublevel } from '../store/db.js';
import type { BatchOp } from '../seen/drum.js';
import { SIMHASH_TABLES, TABLE_KEY_BYTES, permute, unpermute, popcount32, type SimhashLayout } from './simhash.js';

export const SIMHASH_KEY_BYTES = TABLE_KEY_BYTES + 8;

export interface SimhashStoreHit {
  id: string;
  fp: bigint;
  distance: number;
}

const EMPTY = Buffer.alloc(0);
const MASK64 = (1n << 64n) - 1n;

interface Found {
  distance: number;
  table: number;
  hi: number;
  lo: number;
  /** Id when the entry came from table 0. */
  id: string | undefined;
  idHash: Buffer;
}

export class SimhashStore {
  readonly layout: SimhashLayout;

  constructor(private readonly sub: Sublevel, layout: SimhashLayout = SIMHASH_TABLES) {
    if (layout.tables.length < 1 || layout.tables.length > 256) throw new RangeError('1..256 tables');
    if (layout.prefixBits < 1 || layout.prefixBits > 63) throw new RangeError('prefixBits must be in 1..63');
    layout.tables.forEach((t, i) => { if (t.id !== i) throw new RangeError('table ids must be 0..n-1 in order'); });
    this.layout = layout;
  }

  /**
   * The writes that index `fp` for document `id`: one entry per table. The
   * caller applies them in its own atomic batch (e.g. with the page's seen
   * state) — `db.batch(ops)` — or uses {@link add}.
   */
  addOps(fp: bigint, id: string): BatchOp[] {
    return this.keysOf(fp, id).map((key, t) => ({ type: 'put', sublevel: this.sub, key, value: t === 0 ? Buffer.from(id, 'utf8') : EMPTY }));
  }

  /** The writes that remove what {@link addOps} wrote for the same (fp, id). */
  removeOps(fp: bigint, id: string): BatchOp[] {
    return this.keysOf(fp, id).map((key) => ({ type: 'del', sublevel: this.sub, key }));
  }

  /** Indexes `fp` for `id` (one atomic batch). */
  async add(fp: bigint, id: string): Promise<void> {
    const value = Buffer.from(id, 'utf8');
    await this.sub.batch(this.keysOf(fp, id).map((key, t) => ({ type: 'put' as const, key, value: t === 0 ? value : EMPTY })));
  }

  async remove(fp: bigint, id: string): Promise<void> {
    await this.sub.batch(this.keysOf(fp, id).map((key) => ({ type: 'del' as const, key })));
  }

  /**
   * Every indexed document whose fingerprint is within `maxDistance` of
   * `fp`, once each (its smallest distance), closest first. Complete for
   * maxDistance ≤ layout.maxDistance; beyond that only what the tables reach.
   */
  async query(fp: bigint, maxDistance = this.layout.maxDistance): Promise<SimhashStoreHit[]> {
    fp &= MASK64;
    const tables = this.layout.tables;
    const pb = this.layout.prefixBits;
    const shift = BigInt(64 - pb);
    const reads: Array<Promise<[Buffer, Buffer][]>> = new Array(tables.length);
    const qhi = new Array<number>(tables.length);
    const qlo = new Array<number>(tables.length);
    for (let t = 0; t < tables.length; t++) {
      const perm = permute(fp, tables[t]!);
      qhi[t] = Number(perm >> 32n);
      qlo[t] = Number(perm & 0xffffffffn);
      // Range of every key whose leading `pb` permuted bits equal the query's.
      const prefix = perm >> shift;
      const gte = Buffer.allocUnsafe(TABLE_KEY_BYTES);
      const tid = tables[t]!.id;
      gte[0] = tid;
      gte.writeBigUInt64BE(prefix << shift, 1);
      const next = prefix + 1n;
      let lt: Buffer;
      if (next >> BigInt(pb) !== 0n) lt = Buffer.from([tid + 1]); // all-ones prefix: to the end of the table
      else {
        lt = Buffer.allocUnsafe(TABLE_KEY_BYTES);
        lt[0] = tid;
        lt.writeBigUInt64BE(next << shift, 1);
      }
      reads[t] = this.sub.iterator({ gte, lt }).all();
    }
    const results = await Promise.all(reads);
    const best = new Map<string, Found>();
    for (let t = 0; t < results.length; t++) {
      const entries = results[t]!;
      const h = qhi[t]!, l = qlo[t]!;
      for (let j = 0; j < entries.length; j++) {
        const key = entries[j]![0];
        if (key.length !== SIMHASH_KEY_BYTES) continue;
        const hi = key.readUInt32BE(1), lo = key.readUInt32BE(5);
        const d = popcount32((hi ^ h) >>> 0) + popcount32((lo ^ l) >>> 0);
        if (d > maxDistance) continue;
        const idHash = key.subarray(TABLE_KEY_BYTES);
        const hk = idHash.toString('latin1');
        const prev = best.get(hk);
        const id = t === 0 ? entries[j]![1].toString('utf8') : undefined;
        if (prev === undefined || d < prev.distance) {
          best.set(hk, { distance: d, table: t, hi, lo, id: id ?? prev?.id, idHash });
        } else if (prev.id === undefined && id !== undefined) {
          prev.id = id;
        }
      }
    }
    if (best.size === 0) return [];
    const hits: SimhashStoreHit[] = [];
    const unresolved: Array<{ f: Found; fp: bigint }> = [];
    for (const f of best.values()) {
      const matchFp = unpermute((BigInt(f.hi) << 32n) | BigInt(f.lo), tables[f.table]!);
      if (f.id !== undefined) hits.push({ id: f.id, fp: matchFp, distance: f.distance });
      else unresolved.push({ f, fp: matchFp });
    }
    if (unresolved.length > 0) {
      // Ids live in table 0 only: one batched point read for matches first seen elsewhere.
      const keys = unresolved.map(({ f, fp: m }) => {
        const k = Buffer.allocUnsafe(SIMHASH_KEY_BYTES);
        k[0] = 0;
        k.writeBigUInt64BE(permute(m, tables[0]!), 1);
        f.idHash.copy(k, TABLE_KEY_BYTES);
        return k;
      });
      const ids = await this.sub.getMany(keys);
      for (let i = 0; i < unresolved.length; i++) {
        const v = ids[i];
        // Absent: removed between the two reads (or a partial write by another tool); not a match any more.
        if (v !== undefined) hits.push({ id: v.toString('utf8'), fp: unresolved[i]!.fp, distance: unresolved[i]!.f.distance });
      }
    }
    hits.sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return hits;
  }

  private keysOf(fp: bigint, id: string): Buffer[] {
    fp &= MASK64;
    const idHash = xxh64(id);
    return this.layout.tables.map((t) => {
      const key = Buffer.allocUnsafe(SIMHASH_KEY_BYTES);
      key[0] = t.id;
      key.writeBigUInt64BE(permute(fp, t), 1);
      key.writeBigUInt64BE(idHash, TABLE_KEY_BYTES);
      return key;
    });
  }
}
