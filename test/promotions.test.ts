// In-link promotions (src/crawl/promotions.ts) built alone: repeat links of a
// queued URL move it up a class (src/frontier/priority.ts `inlinkBonus`); the
// seen value follows it to its new frontier entry, in one batch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queuedAt, settledValue } from '../src/seen/state.js';
import { HOST_KEY_BYTES } from '../src/store/keys.js';
import { pipelineRig, found } from './pipeline-fixtures.js';
import { waitUntil } from './helpers.js';

test('promotions: a queued URL linked from 3 pages moves up one class; its seen entry points at the new frontier entry', async () => {
  const r = await pipelineRig();
  try {
    r.admission.asSeed(r.admission.candidate('http://seed.example/', undefined, 0)!);
    const first = found(r, 'http://seed.example/popular', 'http://seed.example/a', 3)!;
    await r.admission.submit([first]);
    const before = queuedAt(first.key, (await r.store.seen.get(first.key))!)!;
    for (const from of ['b', 'c']) await r.admission.submit([found(r, 'http://seed.example/popular', `http://seed.example/${from}`, 3)!]);
    assert.ok(await waitUntil(() => r.stats.inlinks.promoted === 1, 3000), `promoted once (${JSON.stringify(r.stats.inlinks)})`);
    await r.promotions.running;
    const after = queuedAt(first.key, (await r.store.seen.get(first.key))!)!;
    assert.ok(after[HOST_KEY_BYTES]! < before[HOST_KEY_BYTES]!, 'a better class (a lower rank byte)');
    assert.equal(await r.store.frontier.get(before), undefined, 'the old entry is gone');
    assert.ok(await r.store.frontier.get(after), 'the new entry is there');
    assert.equal(r.frontier.queued, 1, 'still one queued URL');
    assert.deepEqual(r.fatal, []);
  } finally { await r.close(); }
});

test('promotions: a URL no longer queued (taken and completed) is skipped, not queued again', async () => {
  const r = await pipelineRig();
  try {
    r.admission.asSeed(r.admission.candidate('http://seed.example/', undefined, 0)!);
    const c = found(r, 'http://seed.example/done', 'http://seed.example/a', 3)!;
    await r.admission.submit([c]);
    let h: ReturnType<typeof r.frontier.nextReady>;
    // The host's head loads from disk first (bounded wait).
    assert.ok(await waitUntil(() => (h = r.frontier.nextReady(Date.now())) !== undefined, 3000), 'the host is ready');
    const q = r.frontier.take(h!)!;
    await r.store.db.batch([r.frontier.doneOp(q)]);
    r.frontier.acknowledged(1, h!, q);
    await r.store.seen.put(c.key, settledValue('fetched'));
    for (const from of ['b', 'c']) await r.admission.submit([found(r, 'http://seed.example/done', `http://seed.example/${from}`, 3)!]);
    assert.ok(await waitUntil(() => r.stats.inlinks.skipped === 1, 3000), JSON.stringify(r.stats.inlinks));
    await r.promotions.running;
    assert.equal(r.stats.inlinks.promoted, 0);
    assert.equal(r.frontier.queued, 0);
  } finally { await r.close(); }
});
