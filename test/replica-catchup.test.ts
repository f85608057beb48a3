// The replicated frontier's catch-up (docs/mesh.md "Replicated frontier"): a
// member that becomes a host's successor gets, after the host's queue, the
// seen entries of its settled pages, so that taking the host over later it
// fetches none of them again. Real store and outbox; the ring is given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { Outbox, classifyItem, encodeItem } from '../src/mesh/index.js';
import { encodeFetchRecord } from '../src/crawl/records.js';
import { tempDir } from './helpers.js';
import { replicaAlone } from './replica-fixture.js';

const A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';

test('catch-up: a new successor gets the settled pages\' seen entries of a host, on a ring change and at the first URL queued for a host that became ours', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    const ring = new HostRing({ replicas: 64 });
    ring.add(A);
    const two = new HostRing({ replicas: 64 });
    two.add(A); two.add(B);
    const [h1, h2] = Array.from({ length: 200 }, (_, i) => `h${i}.example`).filter((h) => two.ownerOf(h) === A);
    const settle = async (host: string, paths: string[]) => {
      for (const p of paths) {
        const url = `http://${host}${p}`;
        await store.fetches.put(seenKey(hostKey(host), url), encodeFetchRecord({ url, at: 1, status: 200 }));
      }
    };
    await settle(h1!, ['/', '/a', '/b']);
    const hosts = [{ name: h1! }];
    const replica = replicaAlone(store, { frontier: { allHosts: () => hosts.values() as never }, promoteAfterMs: 60_000 });
    replica.attach({ id: A, membership: { ring }, replicas: outbox });
    // Alone: h1's URL is queued for nobody.
    assert.equal(replica.queueOps([{ url: `http://${h1}/c`, host: h1!, depth: 1 }]), undefined);
    // B joins: it is h1's successor now, and gets its settled pages.
    ring.add(B);
    replica.ringChanged();
    await replica.settled;
    const drained = async (peer: string) => {
      const out: string[] = [];
      for await (const items of outbox.drainPeer(peer, { waitInflightMs: 0 })) for (const it of items) { const w = classifyItem(it); out.push(`${w.kind} ${'url' in w ? w.url : ''}`); }
      return out.sort();
    };
    assert.deepEqual(await drained(B), [`replica http://${h1}/`, `replica http://${h1}/a`, `replica http://${h1}/b`]);
    // h2 became ours (taken over: its pages settled elsewhere reached us); its first queued URL brings B its seen entries.
    await settle(h2!, ['/', '/x']);
    const r = replica.queueOps([{ url: `http://${h2}/y`, host: h2!, depth: 2 }]);
    assert.ok(r);
    await store.db.batch(r.ops);
    r.done();
    await replica.settled;
    assert.deepEqual(await drained(B), [`queued http://${h2}/y`, `replica http://${h2}/`, `replica http://${h2}/x`]);
    assert.equal(replica.stats.seenCaughtUp, 5);
    // Once caught up, later URLs of the host bring nothing more.
    const again = replica.queueOps([{ url: `http://${h2}/z`, host: h2!, depth: 2 }]);
    await store.db.batch(again!.ops);
    again!.done();
    await replica.settled;
    assert.deepEqual(await drained(B), [`queued http://${h2}/z`]);
  } finally {
    await outbox.close();
    await store.close();
  }
});

// The mesh soak (docs/performance.md "Mesh soak"): hosts handed to an agent with nothing left to queue were
// known to it alone — no URL of theirs was ever queued there, so neither the per-URL replicas nor the catch-up
// ran — and when it was killed the next owner fetched their pages again.
test('catch-up: seen entries handed to the owner of a host with nothing queued reach its successor in the same write, and a settled-only host is caught up when its successors change', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    const C = '12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';
    const ring = new HostRing({ replicas: 64 });
    ring.add(A); ring.add(B);
    const three = new HostRing({ replicas: 64 });
    three.add(A); three.add(B); three.add(C);
    const names = Array.from({ length: 400 }, (_, i) => `h${i}.example`);
    // handed: ours with B next; settledOnly: ours with B next now, with C next once C joins.
    const handed = names.find((h) => ring.ownerOf(h) === A)!;
    const settledOnly = names.find((h) => h !== handed && ring.ownerOf(h) === A && three.ownerOf(h) === A && three.nextOwnersOf(h, 2)[1] === C)!;
    assert.ok(handed && settledOnly);
    const record = async (host: string, path: string) => {
      const url = `http://${host}${path}`;
      await store.fetches.put(seenKey(hostKey(host), url), encodeFetchRecord({ url, at: 1, status: 0, failure: 'settled-elsewhere' }));
      return url;
    };
    const settledHosts = new Set<string>();
    const replica = replicaAlone(store, { promoteAfterMs: 60_000, settledHosts: () => settledHosts });
    replica.attach({ id: A, membership: { ring }, replicas: outbox });
    const drained = async (peer: string) => {
      const out: string[] = [];
      for await (const items of outbox.drainPeer(peer, { waitInflightMs: 0 })) for (const it of items) { const w = classifyItem(it); out.push(`${w.kind} ${'url' in w ? w.url : ''}`); }
      return out.sort();
    };
    // The previous owner hands `handed` over: one page, stored with its replica for B in one batch (peer intake).
    const page = await record(handed, '/');
    const ops = replica.seenOps([page, `http://${names.find((h) => ring.ownerOf(h) === B)}/not-ours`]);
    assert.ok(ops, 'replica writes for the host we own');
    await store.db.batch(ops.ops);
    ops.done();
    await replica.settled;
    // The page itself, and (a host new to us) the catch-up of its records: the same entry twice, harmless.
    assert.deepEqual(await drained(B), [`replica ${page}`, `replica ${page}`]);
    // A host known here only by its seen entries: C joins and becomes its successor.
    const settled = [await record(settledOnly, '/'), await record(settledOnly, '/p/1')];
    settledHosts.add(settledOnly);
    replica.ringChanged();
    await replica.settled;
    assert.deepEqual(await drained(C), [], 'C is not in our ring yet');
    ring.add(C);
    replica.ringChanged();
    await replica.settled;
    assert.deepEqual(await drained(C), settled.map((u) => `replica ${u}`).sort(), 'its new successor has every page of it');
  } finally {
    await outbox.close();
    await store.close();
  }
});

test('outbox retainAckedMs: batches acknowledged before the window are not sent again (their replicas reached the successors long ago)', async () => {
  const store = await openStore(tempDir());
  let now = 1_000_000;
  const outbox = await Outbox.open({ db: store.outbox, retainAcked: 100, retainAckedMs: 10_000, now: () => now });
  try {
    const urls = (from: number, n: number) => Array.from({ length: n }, (_, i) => encodeItem({ kind: 'crawl', url: `http://h.example/${from + i}`, depth: 1, hops: 0, sitemap: false }));
    const sendOne = async (from: number) => {
      await outbox.enqueue(B, urls(from, 2));
      await outbox.flush();
      const { batch } = await outbox.read(B, 0, { maxUrls: 2 });
      assert.ok(batch);
      await outbox.ack(batch);
    };
    await sendOne(0); // acknowledged at t
    now += 8_000;
    await sendOne(2); // t + 8 s
    now += 4_000; // t + 12 s: the first batch is out of the window, the second in it
    const kept = outbox.takeAcked(B).map((it) => classifyItem(it)).map((w) => ('url' in w ? w.url : ''));
    assert.deepEqual(kept, ['http://h.example/2', 'http://h.example/3']);
    await sendOne(4);
    now += 10_001;
    assert.deepEqual(outbox.takeAcked(B), [], 'nothing acknowledged within the window');
  } finally {
    await outbox.close();
    await store.close();
  }
});

test('outbox retainAcked: the last acknowledged URLs of a peer are kept (bounded) and taken once, for re-routing when it dies', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.outbox, retainAcked: 3 });
  try {
    const urls = (from: number, n: number) => Array.from({ length: n }, (_, i) => encodeItem({ kind: 'crawl', url: `http://h.example/${from + i}`, depth: 1, hops: 0, sitemap: false }));
    const sendAll = async () => {
      for (let i = 0; i < 10; i++) {
        const { batch } = await outbox.read(B, 0, { maxUrls: 2 });
        if (!batch) return;
        await outbox.ack(batch);
      }
    };
    await outbox.enqueue(B, urls(0, 2));
    await outbox.flush();
    await sendAll();
    await outbox.enqueue(B, urls(2, 2));
    await outbox.flush();
    await sendAll();
    await outbox.enqueue(B, urls(4, 2));
    await outbox.flush();
    await sendAll();
    assert.equal(outbox.queued(B), 0);
    const kept = outbox.takeAcked(B).map((it) => classifyItem(it)).map((w) => ('url' in w ? w.url : ''));
    // At least the last 3 acknowledged, in whole batches: the last two batches.
    assert.deepEqual(kept, ['http://h.example/2', 'http://h.example/3', 'http://h.example/4', 'http://h.example/5']);
    assert.deepEqual(outbox.takeAcked(B), [], 'taken once');
  } finally {
    await outbox.close();
    await store.close();
  }
});
