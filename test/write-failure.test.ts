// Write failures and durability (docs/storage.md "Write failures", "Durability
// window"): a WARC write that fails
// leaves its URL queued and stops the agent with `failure` in its summary; a
// failed store batch stops the group commit and the DRUM from writing anything
// after it (fail-stop). The WARC failure is a real one: the WARC directory is
// removed while the agent waits for a page, so the writer's next file (one per
// record with a 1-byte size limit) cannot be created. Then what is synced: a
// peer's URLs (DRUM round, sync barrier) and the WARC file being written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent } from '../src/crawl/agent.js';
import { openStore } from '../src/store/db.js';
import { GroupCommit } from '../src/store/group-commit.js';
import { SyncBarrier } from '../src/store/sync-barrier.js';
import { WarcWriter } from '../src/warc/writer.js';
import { Drum, type BatchOp } from '../src/seen/drum.js';
import { hostKey, seenKey, prefixEnd } from '../src/store/keys.js';
import { tempDir } from './helpers.js';

const HOST = 'site.test';

test('a failed WARC write leaves the URL queued, unacknowledged, and stops the agent with a failure; a restart fetches it', async () => {
  const requests: string[] = [];
  let onPage: (() => void) | undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.url!);
    if (req.url === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n'); return; }
    if (req.url === '/a') onPage?.();
    const body = req.url === '/a' ? '<html><body><a href="/b">b</a></body></html>' : '<html><body>b</body></html>';
    res.writeHead(200, { 'content-type': 'text/html' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const dir = tempDir();
  const a = `http://${HOST}:${port}/a`;
  const options = {
    dataDir: dir, seeds: [a], untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 2, logLevel: 'silent',
    resolve: [{ host: HOST, port, address: '127.0.0.1' }], sitemaps: { enabled: false },
  };
  try {
    // The robots.txt record opens the first file; the page's record needs a new one, in a directory that is gone.
    onPage = () => rmSync(join(dir, 'warc'), { recursive: true, force: true });
    const agent = await startAgent({ ...options, warc: { maxFileBytes: 1 } });
    const summary = await agent.done;
    assert.match(String(summary.failure), /^WARC write failed: .*ENOENT/);
    assert.deepEqual(requests, ['/robots.txt', '/a'], 'no request after the failure');

    const store = await openStore(dir);
    try {
      const hk = hostKey(HOST);
      assert.deepEqual([...((await store.seen.get(seenKey(hk, a))) ?? [])].slice(0, 1), [1], 'its seen state is still "queued"');
      const queued = await store.frontier.iterator({ gte: hk, lt: prefixEnd(hk) }).all();
      assert.equal(queued.length, 1, 'its frontier entry is kept');
      assert.equal(await store.fetches.get(seenKey(hk, a)), undefined, 'no fetch record');
      assert.equal(await store.seen.get(seenKey(hk, `http://${HOST}:${port}/b`)), undefined, 'its links were not taken');
    } finally {
      await store.close();
    }

    onPage = undefined;
    const again = await startAgent(options);
    const second = await again.done;
    assert.equal(second.failure, undefined);
    assert.equal(second.queued, 0);
    assert.deepEqual(requests.filter((p) => p !== '/robots.txt'), ['/a', '/a', '/b'], 'the page is fetched again, then its link');
  } finally {
    server.close();
  }
});

/** A store whose next `failures` batches fail (as LevelDB does on ENOSPC), counting the batches that reach it. */
async function failingStore(dir: string) {
  const store = await openStore(dir);
  const db = store.db as unknown as { batch: (...a: unknown[]) => Promise<void> };
  const real = db.batch.bind(db);
  const state = { failures: 0, written: 0 };
  db.batch = (...args: unknown[]) => {
    if (state.failures > 0) { state.failures--; return Promise.reject(new Error('IO error: 000003.log: No space left on device')); }
    state.written++;
    return real(...args);
  };
  return { store, state };
}

test('fail-stop: after a failed batch the group commit and the DRUM write nothing more', async () => {
  const { store, state } = await failingStore(tempDir());
  try {
    const put = (k: string): BatchOp => ({ type: 'put', sublevel: store.meta, key: Buffer.from(k), value: Buffer.from('v') });
    const gc = new GroupCommit(store.db);
    await gc.write([put('before')]);
    state.failures = 1;
    await assert.rejects(gc.write([put('failed')]), /No space left/);
    const written = state.written;
    // Space is back, but a torn log record may precede anything written now: nothing is.
    await assert.rejects(gc.write([put('after')]), /No space left/);
    assert.equal(state.written, written);
    assert.equal(await store.meta.get(Buffer.from('after')), undefined);

    const drum = new Drum<{ key: Buffer }>(store.db, store.seen, {
      batchSize: 10, maxWaitMs: 1, valueOf: () => Buffer.from([1]), onNew: () => [], afterCommit: () => {}, filter: false,
    });
    await drum.submit([{ key: Buffer.alloc(16, 1) }]);
    state.failures = 1;
    await assert.rejects(drum.submit([{ key: Buffer.alloc(16, 2) }]), /No space left/);
    const before = state.written;
    await assert.rejects(drum.submit([{ key: Buffer.alloc(16, 3) }]), /No space left/);
    assert.equal(state.written, before);
    assert.equal(await store.seen.get(Buffer.alloc(16, 3)), undefined);
  } finally {
    await store.close();
  }
});

test('durability for peers: a DRUM round with a sync submitter is written with sync: true, one with nothing new writes the barrier; concurrent barriers share a write', async () => {
  const store = await openStore(tempDir());
  try {
    const db = store.db as unknown as { batch: (ops: unknown, o?: { sync?: boolean }) => Promise<void> };
    const real = db.batch.bind(db);
    const syncs: boolean[] = [];
    db.batch = (ops, o) => { syncs.push(o?.sync === true); return real(ops, o); };
    const barrier = new SyncBarrier(store.meta);
    const drum = new Drum<{ key: Buffer }>(store.db, store.seen, {
      batchSize: 100, maxWaitMs: 1, valueOf: () => Buffer.from([1]), onNew: () => [], afterCommit: () => {}, filter: false,
      syncBarrier: () => barrier.sync(),
    });
    await drum.submit([{ key: Buffer.alloc(16, 1) }]);
    assert.deepEqual(syncs, [false], 'a local round is not synced');
    // A peer's URLs and local ones in one round: one synced batch for all of them.
    await Promise.all([drum.submit([{ key: Buffer.alloc(16, 2) }], true), drum.submit([{ key: Buffer.alloc(16, 3) }])]);
    assert.deepEqual(syncs, [false, true]);
    // Nothing new (stored before, perhaps unsynced): the barrier is written, synced.
    const before = barrier.syncs;
    await drum.submit([{ key: Buffer.alloc(16, 1) }], true);
    assert.equal(barrier.syncs, before + 1);
    // Callers arriving together share one synced write; one arriving during it waits for the next.
    const n = barrier.syncs;
    const first = [barrier.sync(), barrier.sync()];
    const later = [barrier.sync(), barrier.sync(), barrier.sync()];
    await Promise.all([...first, ...later]);
    assert.equal(barrier.syncs, n + 2);
  } finally {
    await store.close();
  }
});

test('WARC writer: the file being written is fsynced every fsyncIntervalMs, only when it grew', async () => {
  const dir = tempDir();
  const w = await WarcWriter.open({ dir, agentShortId: 'a', worker: false, fsyncIntervalMs: 20 });
  try {
    await w.writeMetadata('http://x.test/', new Date(), { note: 'one' });
    const deadline = Date.now() + 5000;
    while (w.stats.syncs < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.ok(w.stats.syncs >= 1, 'synced after the write');
    // A tick may have fallen between the file's warcinfo and the record (two appends): let it sync that tail too.
    await new Promise((r) => setTimeout(r, 60));
    const settled = w.stats.syncs;
    assert.ok(settled <= 2, 'at most one sync per append');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(w.stats.syncs, settled, 'not again while nothing was written');
    await w.writeMetadata('http://x.test/', new Date(), { note: 'two' });
    while (w.stats.syncs < settled + 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(w.stats.syncs, settled + 1);
  } finally {
    await w.close();
  }
});
