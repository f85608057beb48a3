import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/db.js';
import { SettledElsewhereMark } from '../src/store/settled-mark.js';
import { settledValue } from '../src/seen/state.js';

test('settled-elsewhere mark: a new store skips the seen read until intake writes such an entry; the mark survives a reopen; a store with seen entries but no mark is assumed to hold some', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-mark-'));
  try {
    let store = await openStore(join(dir, 'a'));
    let mark = new SettledElsewhereMark(store);
    assert.equal(mark.any, true, 'assumed until read');
    await mark.ready;
    assert.equal(mark.any, false, 'a new store holds none');
    const op = mark.opFor();
    assert.ok(op, 'the first batch carries the mark');
    assert.equal(mark.any, true, 'true before the batch is written');
    await store.db.batch([{ type: 'put', sublevel: store.seen, key: Buffer.from('k'), value: settledValue('settled-elsewhere') }, op]);
    mark.stored();
    assert.equal(mark.opFor(), null, 'stored once');
    await store.close();

    store = await openStore(join(dir, 'a'));
    mark = new SettledElsewhereMark(store);
    await mark.ready;
    assert.equal(mark.any, true, 'the mark survives a reopen');
    assert.equal(mark.opFor(), null);
    await store.close();

    // A store written before the mark existed: seen entries, no mark.
    store = await openStore(join(dir, 'b'));
    await store.seen.put(Buffer.from('k'), settledValue('fetched'));
    mark = new SettledElsewhereMark(store);
    await mark.ready;
    assert.equal(mark.any, true, 'seen entries without the mark: assume some were settled elsewhere');
    assert.ok(mark.opFor(), 'and the mark is written with the next such batch');
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
