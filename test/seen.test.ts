import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { Drum, type DrumItem, type DrumOptions } from '../src/seen/drum.js';
import { KeyBloom, KeySet } from '../src/seen/bloom.js';
import { tempDir } from './helpers.js';

const VALUE = Buffer.from([1]);
const key = (i: number, host = `h${i % 50}.test`): Buffer => seenKey(hostKey(host), `http://${host}/p/${i}`);

function drumOf(store: Awaited<ReturnType<typeof openStore>>, extra: { batchSize?: number; cacheSize?: number; filter?: DrumOptions<DrumItem>['filter'] } = {}): Drum<DrumItem> & { newKeys: Buffer[] } {
  const newKeys: Buffer[] = [];
  const d = new Drum<DrumItem>(store.db, store.seen, {
    batchSize: 512, maxWaitMs: 2, valueOf: () => VALUE, onNew: () => [], afterCommit: (items) => { for (const it of items) newKeys.push(it.key); }, ...extra,
  });
  return Object.assign(d, { newKeys });
}

test('Bloom filter (Putze et al. 2007, blocked; Almeida et al. 2007, scalable): no false negatives, ~1 % false positives, grows by layers', () => {
  const f = new KeyBloom({ initialCapacity: 10_000 });
  const keys = Array.from({ length: 50_000 }, () => randomBytes(16));
  for (const k of keys) f.add(k);
  for (const k of keys) assert.equal(f.mayContain(k), true);
  assert.ok(f.layerCount >= 3, `layers ${f.layerCount}`);
  let fp = 0;
  const probes = 100_000;
  for (let i = 0; i < probes; i++) if (f.mayContain(randomBytes(16))) fp++;
  // Layers are 10 bits/key each; their false positive rates add up (≈ 1 % each when full).
  assert.ok(fp / probes < 0.04, `false positive rate ${fp / probes}`);
  // Keys of other lengths are folded, never dropped.
  const odd = Buffer.from('not a 16-byte key');
  f.add(odd);
  assert.equal(f.mayContain(odd), true);
});

test('KeySet: exact answers; two generations bound its size', () => {
  const s = new KeySet(1000);
  const keys = Array.from({ length: 5000 }, () => randomBytes(16));
  for (const k of keys) s.add(k);
  assert.ok(s.size <= 2000);
  for (const k of keys.slice(-1000)) assert.equal(s.has(k), true); // the young generation is always kept
  let spurious = 0;
  for (let i = 0; i < 10_000; i++) if (s.has(randomBytes(16))) spurious++;
  assert.equal(spurious, 0);
  assert.equal(s.has(Buffer.from('short')), false);
});

test('DRUM (IRLbot §5): checkMany answers from the store, never inserts; has() agrees', async () => {
  const store = await openStore(tempDir());
  const d = drumOf(store);
  await d.ready();
  await d.submit(Array.from({ length: 3000 }, (_, i) => ({ key: key(i) })));
  assert.equal(d.stats.fresh, 3000);
  const probe = Array.from({ length: 6000 }, (_, i) => key(i));
  const res = await d.checkMany(probe);
  for (let i = 0; i < 6000; i++) assert.equal(res[i], i < 3000, `key ${i}`);
  assert.equal(await d.has(key(10)), true);
  assert.equal(await d.has(key(5000)), false);
  // Nothing was inserted by the lookups.
  assert.deepEqual(await d.checkMany([key(4000), key(5999)]), [false, false]);
  assert.equal((await store.seen.keys().all()).length, 3000);
  await store.close();
});

test('DRUM: the filter is rebuilt from the store after a restart — no false negatives for earlier keys', async () => {
  const dir = tempDir();
  let store = await openStore(dir);
  let d = drumOf(store);
  await d.submit(Array.from({ length: 5000 }, (_, i) => ({ key: key(i) })));
  // A seen entry written outside the Drum, then announced (e.g. a host handoff).
  const external = key(1_000_000, 'handed.over');
  await store.seen.put(external, VALUE);
  d.noteStored([external]);
  assert.equal(await d.has(external), true);
  await store.close();

  store = await openStore(dir);
  d = drumOf(store);
  // Submissions racing the start-up scan are still checked against the store.
  const early = d.submit(Array.from({ length: 6000 }, (_, i) => ({ key: key(i) })));
  await d.ready();
  await early;
  assert.equal(d.filterInfo.ready, true);
  assert.ok(d.filterInfo.keys >= 5001);
  assert.equal(d.stats.fresh, 1000, 'only keys 5000..5999 are new');
  assert.deepEqual(d.newKeys.map((k) => k.toString('hex')).sort(), Array.from({ length: 1000 }, (_, i) => key(5000 + i).toString('hex')).sort());
  assert.equal(await d.has(external), true);
  const again = await d.checkMany(Array.from({ length: 7000 }, (_, i) => key(i)));
  assert.equal(again.filter(Boolean).length, 6000);
  await store.close();
});

test('DRUM: duplicates inside a batch are new once, in submission order; the filter proves most new keys without a read', async () => {
  const store = await openStore(tempDir());
  const d = drumOf(store, { batchSize: 100_000 });
  await d.ready();
  const items: DrumItem[] = [];
  for (let i = 0; i < 2000; i++) items.push({ key: key(i) }, { key: key(i >> 1) });
  await d.submit(items);
  assert.equal(d.stats.fresh, 2000);
  // First occurrences, in the order they were submitted.
  assert.deepEqual(d.newKeys.map((k) => k.toString('hex')), Array.from({ length: 2000 }, (_, i) => key(i).toString('hex')));
  assert.ok(d.stats.filterNew >= 1950, `filter proved ${d.stats.filterNew}`);
  await d.submit(Array.from({ length: 2000 }, (_, i) => ({ key: key(i) })));
  assert.equal(d.stats.fresh, 2000);
  await store.close();
});

test('DRUM: a new item\'s seen value is decided after onNew has seen its round (the agent stores admitted URLs as queued, the rest as rejected)', async () => {
  const store = await openStore(tempDir());
  const admitted = new Set<DrumItem>();
  const d = new Drum<DrumItem>(store.db, store.seen, {
    batchSize: 512, maxWaitMs: 2,
    valueOf: (it) => Buffer.from([admitted.has(it) ? 1 : 4]),
    onNew: (items) => { items.forEach((it, i) => { if (i % 2 === 0) admitted.add(it); }); return []; },
    afterCommit: () => {},
  });
  const items = Array.from({ length: 100 }, (_, i) => ({ key: key(i) }));
  await d.submit(items);
  const values = await store.seen.getMany(items.map((it) => it.key));
  assert.deepEqual(values.map((v) => v?.[0]), items.map((_, i) => (i % 2 === 0 ? 1 : 4)));
  await store.close();
});

test('DRUM: with the filter off every check reads the store, with the same answers', async () => {
  const store = await openStore(tempDir());
  const d = drumOf(store, { filter: false, cacheSize: 0 });
  await d.submit(Array.from({ length: 1000 }, (_, i) => ({ key: key(i) })));
  await d.submit(Array.from({ length: 2000 }, (_, i) => ({ key: key(i) })));
  assert.equal(d.stats.fresh, 2000);
  assert.equal(d.stats.filterNew, 0);
  assert.equal(d.filterInfo.ready, false);
  assert.deepEqual(await d.checkMany([key(1), key(1999), key(2000)]), [true, true, false]);
  await store.close();
});

test('DRUM: store options are accepted and the store reopens with defaults', async () => {
  const dir = tempDir();
  let store = await openStore(dir, { cacheSize: 1 << 20, writeBufferSize: 1 << 20, compression: false });
  const d = drumOf(store);
  await d.submit([{ key: key(1) }]);
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(await store.seen.get(key(1)), VALUE);
  await store.close();
});
