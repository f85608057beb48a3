import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../src/store/db.js';
import { SimhashStore, SIMHASH_ENTRY_BYTES, bucketKeys } from '../src/dedup/index.js';
import { DigestStore, encodeDigestRecord, decodeDigestRecord } from '../src/dedup/digests.js';
import { SIMHASH_TABLES, SIMHASH_TABLES_16, simhashLayout, hamming64, simhash64, SimhashIndex, permute } from '../src/dedup/simhash.js';
import { prng, article } from '../bench/textgen.js';
import { tempDir } from './helpers.js';

function rnd64(r: () => number): bigint {
  return (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32));
}

/** `fp` with `d` distinct random bits flipped. */
function flip(fp: bigint, d: number, r: () => number): bigint {
  const bits = new Set<number>();
  while (bits.size < d) bits.add(Math.floor(r() * 64));
  for (const b of bits) fp ^= 1n << BigInt(b);
  return fp;
}

async function build(n: number, seed: number, layout = SIMHASH_TABLES) {
  const store = await openStore(tempDir());
  const idx = new SimhashStore(store.simhash, layout);
  const r = prng(seed);
  const fps: bigint[] = [];
  const entries: Array<[bigint, string]> = [];
  for (let i = 0; i < n; i++) {
    const fp = rnd64(r);
    fps.push(fp);
    entries.push([fp, `https://example.test/doc/${i}`]);
  }
  await idx.addMany(entries);
  return { store, idx, fps, r };
}

/** Brute force: every id within maxDistance, with its distance. */
function reference(fps: bigint[], q: bigint, maxDistance: number): Map<string, number> {
  const out = new Map<string, number>();
  for (let i = 0; i < fps.length; i++) {
    const d = hamming64(fps[i]!, q);
    if (d <= maxDistance) out.set(`https://example.test/doc/${i}`, d);
  }
  return out;
}

test('Manku et al. 2007 §3: bucket keys are the leading prefixBits of the permuted fingerprint (all layouts)', () => {
  const r = prng(21);
  const layouts = [SIMHASH_TABLES, SIMHASH_TABLES_16, simhashLayout(8, 2), simhashLayout(8, 3), simhashLayout(16, 14), simhashLayout(2, 1), simhashLayout(4, 3), simhashLayout(64, 1)];
  const fps = [0n, (1n << 64n) - 1n, 1n, 1n << 63n, ...Array.from({ length: 300 }, () => rnd64(r))];
  for (const layout of layouts) {
    const nb = Math.ceil(layout.prefixBits / 8);
    for (const fp of fps) {
      const keys = bucketKeys(fp, layout);
      layout.tables.forEach((t, i) => {
        const want = (permute(fp, t) >> BigInt(64 - layout.prefixBits)) << BigInt(8 * nb - layout.prefixBits);
        const k = keys[i]!;
        assert.equal(k.length, 1 + nb);
        assert.equal(k[0], t.id);
        assert.equal(BigInt('0x' + k.subarray(1).toString('hex')), want, `layout ${layout.prefixBits} bits, table ${i}`);
      });
    }
  }
});

test('Manku et al. 2007 §3: 100 % recall for planted near-duplicates at distance 0..3 (4 tables × 16 bits)', async () => {
  const { store, idx, fps, r } = await build(20_000, 1);
  let checked = 0;
  for (let q = 0; q < 2000; q++) {
    const target = Math.floor(r() * fps.length);
    const d = q % 4;
    const probe = flip(fps[target]!, d, r);
    const hits = await idx.query(probe, 3);
    const hit = hits.find((h) => h.id === `https://example.test/doc/${target}`);
    assert.ok(hit, `target ${target} at distance ${d} not found`);
    assert.equal(hit.distance, d);
    assert.equal(hit.fp, fps[target]);
    checked++;
  }
  assert.equal(checked, 2000);
  await store.close();
});

test('Manku et al. 2007 §3: answers equal a brute-force scan — nothing beyond the distance, nothing missing', async () => {
  const { store, idx, fps, r } = await build(5_000, 2);
  for (let q = 0; q < 300; q++) {
    // Mix of near probes (0..8 bits from an indexed fingerprint) and random ones.
    const probe = q % 3 === 2 ? rnd64(r) : flip(fps[Math.floor(r() * fps.length)]!, q % 9, r);
    for (const maxD of [0, 1, 3]) {
      const hits = await idx.query(probe, maxD);
      const want = reference(fps, probe, maxD);
      assert.equal(hits.length, want.size, `probe ${q} maxDistance ${maxD}`);
      for (const h of hits) {
        assert.equal(want.get(h.id), h.distance);
        assert.equal(hamming64(h.fp, probe), h.distance);
        assert.ok(h.distance <= maxD);
      }
    }
  }
  await store.close();
});

test('Manku et al. 2007 §3: planted matches at distance 4..8 are not returned for maxDistance 3', async () => {
  const { store, idx, fps, r } = await build(5_000, 3);
  for (let q = 0; q < 500; q++) {
    const target = Math.floor(r() * fps.length);
    const probe = flip(fps[target]!, 4 + (q % 5), r);
    const hits = await idx.query(probe, 3);
    assert.ok(!hits.some((h) => h.id === `https://example.test/doc/${target}`));
    for (const h of hits) assert.ok(hamming64(h.fp, probe) <= 3);
  }
  await store.close();
});

test('SimhashStore: same answers as the in-memory SimhashIndex, and the 16-table 28-bit layout agrees', async () => {
  for (const layout of [SIMHASH_TABLES, SIMHASH_TABLES_16]) {
    const { store, idx, fps, r } = await build(3_000, 4, layout);
    const mem = new SimhashIndex<string>(layout);
    fps.forEach((fp, i) => mem.add(fp, `https://example.test/doc/${i}`));
    for (let q = 0; q < 300; q++) {
      const probe = flip(fps[Math.floor(r() * fps.length)]!, q % 5, r);
      const a = (await idx.query(probe, 3)).map((h) => `${h.id}@${h.distance}`).sort();
      const b = mem.query(probe, 3).map((h) => `${h.id}@${h.distance}`).sort();
      assert.deepEqual(a, b);
    }
    await store.close();
  }
});

test('SimhashStore: a wider layout (8 blocks, 2 exact → k = 6) finds everything within 6', async () => {
  const layout = simhashLayout(8, 2);
  const { store, idx, fps, r } = await build(2_000, 5, layout);
  for (let q = 0; q < 200; q++) {
    const target = Math.floor(r() * fps.length);
    const d = q % 7;
    const probe = flip(fps[target]!, d, r);
    const hits = await idx.query(probe);
    assert.equal(hits.find((h) => h.id === `https://example.test/doc/${target}`)?.distance, d);
    assert.equal(hits.length, reference(fps, probe, 6).size);
  }
  await store.close();
});

test('SimhashStore: a 48-bit prefix layout (4 blocks, 3 exact → k = 1) answers like brute force', async () => {
  const layout = simhashLayout(4, 3);
  const { store, idx, fps, r } = await build(2_000, 6, layout);
  for (let q = 0; q < 200; q++) {
    const probe = flip(fps[Math.floor(r() * fps.length)]!, q % 3, r);
    const hits = await idx.query(probe);
    const want = reference(fps, probe, 1);
    assert.equal(hits.length, want.size);
    for (const h of hits) assert.equal(want.get(h.id), h.distance);
  }
  await store.close();
});

test('SimhashStore: works on any Sublevel-shaped object (no root-prefix fast path)', async () => {
  const store = await openStore(tempDir());
  const sub = store.simhash;
  const plain = {
    getMany: (k: Buffer[]) => sub.getMany(k),
    batch: (ops: Array<{ type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer }>) => sub.batch(ops),
  } as unknown as typeof sub;
  const a = new SimhashStore(plain);
  const b = new SimhashStore(sub);
  await a.add(0xfedcba9876543210n, 'x');
  await a.add(0xfedcba9876543211n, 'y');
  assert.deepEqual((await b.query(0xfedcba9876543210n)).map((h) => [h.id, h.distance]), [['x', 0], ['y', 1]]);
  assert.deepEqual((await a.query(0xfedcba9876543210n)).map((h) => [h.id, h.distance]), [['x', 0], ['y', 1]]);
  await a.remove(0xfedcba9876543210n, 'x');
  assert.deepEqual((await b.query(0xfedcba9876543210n)).map((h) => h.id), ['y']);
  await store.close();
});

test('SimhashStore: survives close and reopen; edge fingerprints (0, all ones) and shared fingerprints', async () => {
  const dir = tempDir();
  let store = await openStore(dir);
  let idx = new SimhashStore(store.simhash);
  const ones = (1n << 64n) - 1n;
  await idx.add(0n, 'zero');
  await idx.add(ones, 'ones');
  await idx.add(ones ^ 1n, 'ones-1');
  await idx.add(0x0123456789abcdefn, 'a');
  await idx.add(0x0123456789abcdefn, 'b'); // same fingerprint, another document
  await idx.add(0x0123456789abcdeen, 'c');
  await idx.add(0x0123456789abcdeen, 'c'); // again: a no-op
  await store.close();

  store = await openStore(dir);
  idx = new SimhashStore(store.simhash);
  assert.deepEqual((await idx.query(1n, 3)).map((h) => [h.id, h.distance]), [['zero', 1]]);
  assert.deepEqual((await idx.query(ones, 3)).map((h) => [h.id, h.distance]), [['ones', 0], ['ones-1', 1]]);
  assert.deepEqual((await idx.query(0x0123456789abcdefn, 3)).map((h) => [h.id, h.distance]), [['a', 0], ['b', 0], ['c', 1]]);
  assert.deepEqual((await idx.query(0x0123456789abcdefn, 0)).map((h) => h.id), ['a', 'b']);
  // Every table's bucket holds each (fp, id) once: 4 tables, the duplicate add of 'c' changed nothing.
  let entries = 0;
  for await (const [k, v] of store.simhash.iterator()) if (k[0] !== 0xff) entries += v.length / SIMHASH_ENTRY_BYTES;
  assert.equal(entries, 4 * 6);
  // Removal takes a document out of every table (and its id record).
  await idx.remove(0x0123456789abcdefn, 'a');
  assert.deepEqual((await idx.query(0x0123456789abcdefn, 3)).map((h) => h.id), ['b', 'c']);
  await idx.remove(0x0123456789abcdeen, 'c');
  assert.deepEqual((await idx.query(0x0123456789abcdefn, 3)).map((h) => h.id), ['b']);
  await idx.remove(0x0123456789abcdeen, 'never-added');
  entries = 0;
  let docs = 0;
  for await (const [k, v] of store.simhash.iterator()) if (k[0] !== 0xff) entries += v.length / SIMHASH_ENTRY_BYTES; else docs++;
  assert.equal(entries, 4 * 4);
  assert.equal(docs, 4);
  await store.close();
});

test('SimhashStore: concurrent adds to the same buckets are all kept (writes are serialised)', async () => {
  const store = await openStore(tempDir());
  const idx = new SimhashStore(store.simhash);
  const r = prng(11);
  const base = rnd64(r);
  // 200 documents sharing every bucket (same fingerprint or one bit off in the last block), added concurrently.
  await Promise.all(Array.from({ length: 200 }, (_, i) => idx.add(i % 2 === 0 ? base : base ^ 1n, `d${i}`)));
  const hits = await idx.query(base, 3);
  assert.equal(hits.length, 200);
  await store.close();
});

test('SimhashStore: near-duplicate articles (different boilerplate) are found, distinct articles are not', async () => {
  const store = await openStore(tempDir());
  const idx = new SimhashStore(store.simhash);
  for (let s = 0; s < 200; s++) await idx.add(simhash64(`${article(9000 + s, 8)}\n${article(s, 1000)}`), `orig-${s}`);
  let within = 0, found = 0, wrong = 0;
  for (let s = 0; s < 200; s++) {
    const fp = simhash64(`${article(7000 + s, 3)}\n${article(s, 1000)}`);
    const d = hamming64(fp, simhash64(`${article(9000 + s, 8)}\n${article(s, 1000)}`));
    const hits = await idx.query(fp, 3);
    if (d <= 3) { within++; if (hits.some((h) => h.id === `orig-${s}` && h.distance === d)) found++; }
    else assert.ok(!hits.some((h) => h.id === `orig-${s}`));
    wrong += hits.filter((h) => h.id !== `orig-${s}`).length;
  }
  // Every pair SimHash puts within 3 is found (the index adds no misses), most pairs are, and distinct articles never match.
  assert.equal(found, within);
  assert.ok(within >= 150, `only ${within}/200 pairs within distance 3`);
  assert.equal(wrong, 0);
  await store.close();
});

test('WARC/1.1 §6.7.2: digest index keeps the first capture for revisit records, across reopen', async () => {
  const dir = tempDir();
  let store = await openStore(dir);
  let digests = new DigestStore(store.digests);
  const first = { uri: 'https://a.test/x', date: new Date('2024-05-01T10:00:00.123Z'), recordId: '<urn:uuid:11111111-2222-3333-4444-555555555555>' };
  const later = { uri: 'https://b.test/y', date: new Date('2024-05-02T10:00:00Z'), recordId: '<urn:uuid:66666666-2222-3333-4444-555555555555>' };
  assert.equal(await digests.get('sha256:AAAA'), undefined);
  assert.equal(await digests.putIfAbsent('sha256:AAAA', first), undefined);
  assert.deepEqual(await digests.putIfAbsent('sha256:AAAA', later), first);
  await store.db.batch([digests.putOp('sha256:BBBB', later)] as never);
  await store.close();
  store = await openStore(dir);
  digests = new DigestStore(store.digests);
  assert.deepEqual(await digests.get('sha256:AAAA'), first);
  assert.deepEqual(await digests.get('sha256:BBBB'), later);
  assert.equal(decodeDigestRecord(Buffer.from([9, 9, 9])), null);
  assert.deepEqual(decodeDigestRecord(encodeDigestRecord({ ...first, uri: 'https://a.test/ü?q=1' })), { ...first, uri: 'https://a.test/ü?q=1' });
  await store.close();
});

test('SimhashStore bucket cache: interleaved adds, removes and queries answer as without it; a reopened store agrees', async () => {
  const dir = tempDir();
  let store = await openStore(dir);
  // A tiny cache (resets often) and a normal one, against a model kept in memory.
  const small = new SimhashStore(store.simhash, SIMHASH_TABLES, { cacheBytes: 2048 });
  const r = prng(31);
  // Few distinct buckets, so queries and writes keep meeting in the same ones.
  const bases = Array.from({ length: 6 }, () => rnd64(r));
  const model = new Map<string, bigint>(); // id → fp (indexed now)
  const settledQuery = async (q: bigint) => {
    const want = new Map<string, number>();
    for (const [id, fp] of model) { const d = hamming64(fp, q); if (d <= 3) want.set(id, d); }
    const got = new Map((await small.query(q, 3)).map((h) => [h.id, h.distance] as const));
    assert.deepEqual(got, want);
  };
  for (let step = 0; step < 60; step++) {
    // A burst of concurrent operations; queries made meanwhile must not crash or invent ids.
    const ops: Array<Promise<unknown>> = [];
    const known = new Set(model.keys());
    for (let j = 0; j < 12; j++) {
      const fp = flip(bases[Math.floor(r() * bases.length)]!, Math.floor(r() * 3), r);
      const x = r();
      if (x < 0.5) {
        const id = `u${Math.floor(r() * 40)}`;
        if (model.has(id)) continue; // one fingerprint per id in this model
        model.set(id, fp); known.add(id);
        ops.push(small.add(fp, id));
      } else if (x < 0.65 && model.size > 0) {
        const ids = [...model.keys()];
        const id = ids[Math.floor(r() * ids.length)]!;
        ops.push(small.remove(model.get(id)!, id));
        model.delete(id);
      } else {
        ops.push(small.query(fp, 3).then((hits) => { for (const h of hits) assert.ok(known.has(h.id), h.id); }));
      }
    }
    await Promise.all(ops);
    // Once everything has resolved, answers are exact.
    await settledQuery(flip(bases[step % bases.length]!, 1, r));
  }
  assert.ok(small.stats.cacheHits > 0);
  await store.close();
  store = await openStore(dir);
  const reopened = new SimhashStore(store.simhash);
  for (const b of bases) {
    const want = new Map<string, number>();
    for (const [id, fp] of model) { const d = hamming64(fp, b); if (d <= 3) want.set(id, d); }
    assert.deepEqual(new Map((await reopened.query(b, 3)).map((h) => [h.id, h.distance] as const)), want);
  }
  await store.close();
});

test('SimhashStore presence bitmap (load): buckets known empty are not read, answers equal brute force — load racing adds, and after reopen', async () => {
  const dir = tempDir();
  let store = await openStore(dir);
  const r = prng(77);
  const fps: bigint[] = [];
  const entries: Array<[bigint, string]> = [];
  for (let i = 0; i < 3000; i++) {
    const fp = rnd64(r);
    fps.push(fp);
    entries.push([fp, `https://example.test/doc/${i}`]);
  }
  // Cache off, so every answer comes from the store or the bitmap.
  let idx = new SimhashStore(store.simhash, SIMHASH_TABLES, { cacheBytes: 0 });
  await idx.addMany(entries.slice(0, 1000)); // stored before load() starts
  const loading = idx.load();
  const adding = idx.addMany(entries.slice(1000, 2000)); // racing the scan
  await loading;
  await adding;
  for (const [fp, id] of entries.slice(2000)) await idx.add(fp, id); // after it
  const check = async (s: SimhashStore) => {
    for (let i = 0; i < 300; i++) {
      const q = i % 2 === 0 ? flip(fps[Math.floor(r() * fps.length)]!, Math.floor(r() * 4), r) : rnd64(r);
      const got = new Map((await s.query(q, 3)).map((h) => [h.id, h.distance] as const));
      assert.deepEqual(got, reference(fps, q, 3));
    }
  };
  await check(idx);
  assert.ok(idx.stats.emptySkips > 0, 'empty buckets skipped');
  await store.close();
  store = await openStore(dir);
  idx = new SimhashStore(store.simhash, SIMHASH_TABLES, { cacheBytes: 0 });
  await idx.load();
  await check(idx);
  // 3000 fingerprints fill ≈ 4.5 % of each table's 65 536 buckets: most reads are skipped.
  assert.ok(idx.stats.emptySkips > idx.stats.bucketReads / 2, JSON.stringify(idx.stats));
  await store.close();
});
