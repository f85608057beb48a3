import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../src/store/db.js';
import { GroupCommit } from '../src/store/group-commit.js';
import type { BatchOp } from '../src/seen/drum.js';
import { tempDir } from './helpers.js';

test('group commit: units handed over together share a batch, each settles once written, in order', async () => {
  const store = await openStore(tempDir());
  try {
    const gc = new GroupCommit(store.db);
    const unit = (i: number): BatchOp[] => [
      { type: 'put', sublevel: store.seen, key: Buffer.from(`k${i}`), value: Buffer.from([i & 255]) },
      { type: 'put', sublevel: store.fetches, key: Buffer.from(`k${i}`), value: Buffer.from(`rec ${i}`) },
    ];
    const settled: number[] = [];
    // 50 units in one turn, then 50 more while the first batch is being written.
    const first = Array.from({ length: 50 }, (_, i) => gc.write(unit(i)).then(async () => {
      settled.push(i);
      // Written when settled: the caller may rely on it.
      assert.deepEqual(await store.fetches.get(Buffer.from(`k${i}`)), Buffer.from(`rec ${i}`));
    }));
    await new Promise((r) => setImmediate(r));
    const second = Array.from({ length: 50 }, (_, j) => gc.write(unit(50 + j)).then(() => { settled.push(50 + j); }));
    await Promise.all([...first, ...second]);
    assert.equal(gc.stats.units, 100);
    assert.ok(gc.stats.batches >= 2 && gc.stats.batches <= 4, `100 units in ${gc.stats.batches} batches`);
    assert.deepEqual(settled, Array.from({ length: 100 }, (_, i) => i), 'settled in hand-over order');
    for (let i = 0; i < 100; i++) assert.deepEqual(await store.seen.get(Buffer.from(`k${i}`)), Buffer.from([i]));
    // Later ops of the same key win, as with one batch per unit.
    await Promise.all([
      gc.write([{ type: 'put', sublevel: store.meta, key: Buffer.from('x'), value: Buffer.from('a') }]),
      gc.write([{ type: 'put', sublevel: store.meta, key: Buffer.from('x'), value: Buffer.from('b') }]),
      gc.write([{ type: 'del', sublevel: store.meta, key: Buffer.from('y') }]),
    ]);
    assert.deepEqual(await store.meta.get(Buffer.from('x')), Buffer.from('b'));
  } finally {
    await store.close();
  }
});

test('group commit: a failed batch rejects every unit in it, and a later one is written again', async () => {
  const store = await openStore(tempDir());
  const gc = new GroupCommit(store.db);
  const bad = { type: 'put', sublevel: store.seen, key: null, value: Buffer.from([1]) } as unknown as BatchOp;
  const ok = (k: string): BatchOp => ({ type: 'put', sublevel: store.seen, key: Buffer.from(k), value: Buffer.from([2]) });
  // A null key is refused by abstract-level for the whole batch: both units fail together (never half-written).
  const results = await Promise.allSettled([gc.write([ok('a')]), gc.write([bad])]);
  assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
  assert.equal(await store.seen.get(Buffer.from('a')), undefined, 'nothing of a failed batch is written');
  await gc.write([ok('b')]);
  assert.deepEqual(await store.seen.get(Buffer.from('b')), Buffer.from([2]));
  await store.close();
  await assert.rejects(gc.write([ok('c')]), 'a closed store rejects');
});
