import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey, prefixEnd } from '../src/store/keys.js';
import { Drum } from '../src/seen/drum.js';
import { Frontier, type NewUrl } from '../src/frontier/frontier.js';
import { tempDir } from './helpers.js';

interface Item extends NewUrl { key: Buffer }

function item(host: string, path: string): Item {
  const hk = hostKey(host);
  const url = `http://${host}${path}`;
  return { host, hostKey: hk, url, depth: 0, hops: 0, key: seenKey(hk, url) };
}

async function setup(dir: string, opts: { maxActiveHosts?: number; headSize?: number } = {}) {
  const store = await openStore(dir);
  const frontier = new Frontier<null>(store.frontier, store.hosts, store.meta, {
    maxActiveHosts: opts.maxActiveHosts ?? 4, headSize: opts.headSize ?? 4, createData: () => null,
  });
  await frontier.recover();
  const drum = new Drum<Item>(store.db, store.seen, {
    batchSize: 100, maxWaitMs: 5, valueOf: () => Buffer.from([1]),
    onNew: (items) => frontier.enqueueOps(items),
    afterCommit: (items) => frontier.committed(items),
  });
  return { store, frontier, drum };
}

/** Drains the frontier in scheduling order, acknowledging each URL; returns URLs in fetch order. */
/** The first host ready to crawl, once the submitted URLs have reached the frontier (its loads are asynchronous); bounded. */
async function readyHost(s: Awaited<ReturnType<typeof setup>>) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const h = s.frontier.nextReady(Date.now());
    if (h) return h;
    if (Date.now() > deadline) throw new Error('no host became ready within 10 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function drain(s: Awaited<ReturnType<typeof setup>>): Promise<string[]> {
  const got: string[] = [];
  for (let spins = 0; spins < 10_000; spins++) {
    const h = s.frontier.nextReady(Date.now());
    if (!h) {
      if (s.frontier.idle) break;
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    const q = s.frontier.take(h)!;
    got.push(q.url);
    await s.store.db.batch([s.frontier.doneOp(q)] as never);
    s.frontier.acknowledged();
    s.frontier.release(h, 0);
  }
  return got;
}

test('keys: a host\'s seen keys share its 8-byte prefix and sort inside [prefix, prefixEnd)', () => {
  const hk = hostKey('example.com');
  const k = seenKey(hk, 'http://example.com/a');
  assert.equal(k.length, 16);
  assert.deepEqual(k.subarray(0, 8), hk);
  assert.ok(Buffer.compare(k, hk) > 0 && Buffer.compare(k, prefixEnd(hk)) < 0);
  assert.deepEqual(prefixEnd(Buffer.from([1, 0xff])), Buffer.from([2]));
});

test('DRUM seen-set: duplicates inside a batch and across batches are new exactly once', async () => {
  const s = await setup(tempDir());
  const batch = [item('a.test', '/1'), item('a.test', '/1'), item('b.test', '/1'), item('a.test', '/2')];
  await s.drum.submit(batch);
  assert.equal(s.drum.stats.fresh, 3);
  await s.drum.submit([item('a.test', '/1'), item('a.test', '/3')]);
  assert.equal(s.drum.stats.fresh, 4);
  assert.equal(s.frontier.queued, 4);
  assert.equal(await s.drum.has(item('b.test', '/1').key), true);
  assert.equal(await s.drum.has(item('b.test', '/9').key), false);
  await s.store.close();
});

test('frontier: per-host FIFO order, every URL handed out exactly once, bounded heads', async () => {
  const s = await setup(tempDir(), { maxActiveHosts: 2, headSize: 3 });
  const items: Item[] = [];
  for (let h = 0; h < 5; h++) for (let p = 0; p < 10; p++) items.push(item(`h${h}.test`, `/${p}`));
  await s.drum.submit(items);
  assert.ok(s.frontier.activeHosts <= 2);
  const got = await drain(s);
  assert.equal(got.length, 50);
  assert.equal(new Set(got).size, 50);
  for (let h = 0; h < 5; h++) {
    const order = got.filter((u) => u.startsWith(`http://h${h}.test/`)).map((u) => Number(u.split('/').pop()));
    assert.deepEqual(order, [...Array(10).keys()], `host h${h} must be served in FIFO order`);
  }
  assert.equal(s.frontier.queued, 0);
  await s.store.close();
});

test('frontier: politeness heap never hands out a host before its next-allowed time', async () => {
  const s = await setup(tempDir());
  await s.drum.submit([item('x.test', '/1'), item('x.test', '/2')]);
  const h = await readyHost(s);
  s.frontier.take(h);
  const later = Date.now() + 60_000;
  s.frontier.release(h, later);
  assert.equal(s.frontier.nextReady(Date.now()), undefined);
  assert.equal(s.frontier.nextWake(), later);
  assert.equal(s.frontier.nextReady(later)?.name, 'x.test');
  await s.store.close();
});

test('frontier + seen survive a reopen: unacknowledged URLs come back, acknowledged ones do not', async () => {
  const dir = tempDir();
  let s = await setup(dir);
  await s.drum.submit([item('r.test', '/1'), item('r.test', '/2'), item('q.test', '/1')]);
  const h = await readyHost(s);
  const q = s.frontier.take(h)!;
  await s.store.db.batch([s.frontier.doneOp(q)] as never);
  await s.store.close();

  s = await setup(dir);
  assert.equal(s.frontier.queued, 2);
  await s.drum.submit([item('r.test', '/1'), item('r.test', '/2'), item('q.test', '/1')]);
  assert.equal(s.drum.stats.fresh, 0, 'everything was seen before the restart');
  const got = await drain(s);
  assert.equal(got.length, 2);
  assert.ok(!got.includes(q.url));
  await s.store.close();
});
