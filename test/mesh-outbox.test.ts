// URL exchange wire format and the durable per-peer outbox (LevelDB, no network).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { tempDir } from './helpers.js';
import { Outbox, batchItems, batchLimits, type OutboxDb } from '../src/mesh/outbox.js';
import { RecentHashes } from '../src/mesh/recent.js';
import {
  decodeAck, decodeBatch, encodeAckFrame, encodeBatchFrame, isWireUrl, MAX_BATCH_BYTES, MAX_BATCH_URLS, MAX_URL_BYTES, type UrlItem,
  decodeSegment, encodeSegment, isWireItem, GRANT_FLAG, SITEMAP_FLAG, HOPS_MASK, REPLICA_SEEN_HOPS,
} from '../src/mesh/wire.js';
import { DEFAULT_MESH_EXCHANGE } from '../src/config.js';

const P1 = '12D3KooWB92f6rzMWUvLZHsGqKLY1SpAavAFS9ZWYRFQGQZRfN9E';
const P2 = '12D3KooWKEipnGNqSH84wnUumPDZRmgz1T7rGv7Rq7fY5Yk1KP1Z';
const P3 = '12D3KooWLCKr2HxCqmV3CNeCwTAfZzzGTtVuGzm9kuZuDNG4sRjx';

const url = (i: number) => `https://host${i % 97}.example.org/section/${i}/page-${i}.html?ref=nav&id=${i}`;
const items = (from: number, n: number, hops = 0): UrlItem[] => Array.from({ length: n }, (_, k) => ({ url: url(from + k), depth: (from + k) % 7, hops }));

// Strips the varint length prefix of one frame.
function payload(frame: Uint8Array): Uint8Array {
  let i = 0;
  while (frame[i]! & 0x80) i++;
  return frame.subarray(i + 1);
}

async function openDb(dir: string): Promise<ClassicLevel<Buffer, Buffer>> {
  const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  return db;
}
const sub = (db: ClassicLevel<Buffer, Buffer>) => db.sublevel<Buffer, Buffer>('outbox', { keyEncoding: 'buffer', valueEncoding: 'buffer' }) as unknown as OutboxDb;

test('isWireUrl: printable-ASCII http(s) URLs with an authority, bounded length', () => {
  assert.ok(isWireUrl('http://a.b/'));
  assert.ok(isWireUrl('https://xn--bcher-kva.example/%C3%A9?q=1#f'));
  for (const bad of ['ftp://a.b/', 'http:///path', 'https://', 'http://a b/', 'http://ü.example/', 'HTTP://a.b/', 'http://a.b/\n', `http://a.b/${'x'.repeat(MAX_URL_BYTES)}`, 'javascript:alert(1)']) {
    assert.equal(isWireUrl(bad), false, bad);
  }
});

test('Sitemaps 0.90 cross submits: the grant of a robots.txt travels with it (GRANT_FLAG) in frames and outbox segments', () => {
  const granted: UrlItem = { url: 'http://maps.example/s/all.xml', depth: 0, hops: 2 | SITEMAP_FLAG | GRANT_FLAG, grant: 'http://shop.example/' };
  const plain = items(0, 2);
  const its = [plain[0]!, granted, plain[1]!];
  assert.ok(isWireItem(granted));
  assert.equal(isWireItem({ ...granted, grant: undefined }), false, 'the flag without a grant is not sendable');
  assert.equal(isWireItem({ ...granted, grant: 'ftp://x/' }), false, 'a grant must be a wire URL');
  const d = decodeBatch(payload(encodeBatchFrame({ batchId: 3, from: P1, epoch: 1, flags: 0, items: its, seqs: [1, 2, 3] })));
  assert.ok(d.ok);
  assert.deepEqual(d.value.items, its);
  assert.equal(d.value.items[1]!.hops & HOPS_MASK, 2, 'the hop count survives beside the flags');
  assert.deepEqual(decodeSegment(encodeSegment(its)), its);
  // A grant that is not a wire URL drops that item alone, counted like a bad URL.
  const frame = Buffer.from(payload(encodeBatchFrame({ batchId: 3, from: P1, epoch: 1, flags: 0, items: its, seqs: [1, 2, 3] })));
  const at = frame.indexOf('http://shop.example/');
  frame[at + 7] = 0x20; // a space inside the grant
  const bad = decodeBatch(frame);
  assert.ok(bad.ok);
  assert.equal(bad.value.invalidUrls, 1);
  assert.deepEqual(bad.value.items, plain);
});

test('batch frames: round trip; the encoder enforces the limits; the decoder rejects every malformation with a reason', () => {
  const its = items(0, 300);
  const seqs = its.map((_, i) => 1000 + i * 3);
  const frame = encodeBatchFrame({ batchId: seqs[299]!, from: P1, epoch: 123456789012, flags: 0, items: its, seqs });
  const d = decodeBatch(payload(frame));
  assert.ok(d.ok);
  assert.deepEqual(d.value, { batchId: seqs[299], from: P1, epoch: 123456789012, flags: 0, items: its, seqs, invalidUrls: 0 });

  assert.throws(() => encodeBatchFrame({ batchId: 1, from: P1, epoch: 1, flags: 0, items: [], seqs: [] }), RangeError);
  const many = items(0, MAX_BATCH_URLS + 1);
  assert.throws(() => encodeBatchFrame({ batchId: 1, from: P1, epoch: 1, flags: 0, items: many, seqs: many.map((_, i) => i + 1) }), RangeError);
  const big = Array.from({ length: 200 }, (_, i) => ({ url: `http://h.example/${i}/${'x'.repeat(8000)}`, depth: 0, hops: 0 }));
  assert.throws(() => encodeBatchFrame({ batchId: 1, from: P1, epoch: 1, flags: 0, items: big, seqs: big.map((_, i) => i + 1) }), /too large/);
  assert.throws(() => encodeBatchFrame({ batchId: 1, from: P1, epoch: 1, flags: 0, items: items(0, 2), seqs: [5, 5] }), RangeError);

  const p = payload(encodeBatchFrame({ batchId: 9, from: P1, epoch: 1, flags: 0, items: items(0, 3), seqs: [7, 8, 9] }));
  const mut = (f: (b: Uint8Array) => void) => { const c = Uint8Array.from(p); f(c); return decodeBatch(c); };
  // Layout: type, version, flags, from length, from, batchId (8), epoch (8), run count, runs (seq (8), n, items).
  const fromOff = 4;
  const runsOff = fromOff + P1.length + 16;
  assert.deepEqual(mut((b) => { b[0] = 7; }), { ok: false, reason: 'type' });
  assert.deepEqual(mut((b) => { b[1] = 2; }), { ok: false, reason: 'version' });
  assert.deepEqual(mut((b) => { b[2] = 0x80; }), { ok: false, reason: 'flags' });
  assert.deepEqual(mut((b) => { b[fromOff] = 0x30; }), { ok: false, reason: 'from' }); // '0' is not base58
  assert.deepEqual(mut((b) => { b[fromOff + P1.length] = 0xff; }), { ok: false, reason: 'seq' }); // batchId ≥ 2^53
  assert.deepEqual(mut((b) => { b[runsOff] = 0; }), { ok: false, reason: 'count' }); // no runs
  assert.deepEqual(mut((b) => { b[runsOff + 1] = 0xff; }), { ok: false, reason: 'seq' }); // run seq ≥ 2^53
  assert.deepEqual(mut((b) => { b[runsOff + 9] = 0; }), { ok: false, reason: 'count' }); // empty run
  assert.deepEqual(mut((b) => { b[runsOff + 9] = 4; }), { ok: false, reason: 'truncated' }); // a run claiming 4 of 3 items
  // Two runs out of order.
  const twoRuns = payload(encodeBatchFrame({ batchId: 9, from: P1, epoch: 1, flags: 0, items: items(0, 2), seqs: [7, 9] }));
  const r2 = Uint8Array.from(twoRuns);
  const second = runsOff + 1 + 8 + 1 + (twoRuns.length - runsOff - 1 - 2 * 9) / 2; // start of run 2
  r2[second + 7] = 7; // run 2 seq = 7 ≤ run 1's last seq
  assert.deepEqual(decodeBatch(r2), { ok: false, reason: 'seq' });
  assert.deepEqual(decodeBatch(p.subarray(0, p.length - 5)), { ok: false, reason: 'truncated' });
  assert.deepEqual(decodeBatch(Uint8Array.from([...p, 0])), { ok: false, reason: 'trailing' });
  assert.deepEqual(decodeBatch(Uint8Array.from([1, 1, 0])), { ok: false, reason: 'truncated' });
  assert.deepEqual(decodeBatch(new Uint8Array(3)), { ok: false, reason: 'type' });
  assert.deepEqual(decodeBatch(new Uint8Array((1 << 20) + 1)), { ok: false, reason: 'oversize' });
  // A bad URL drops that item only.
  const withBad = payload(encodeBatchFrame({ batchId: 3, from: P1, epoch: 1, flags: 0, items: [{ url: 'http://a.example/1', depth: 0, hops: 0 }, { url: 'http://b.example/2', depth: 0, hops: 0 }], seqs: [1, 2] }));
  const bi = Buffer.from(withBad).indexOf('http://b');
  withBad[bi + 10] = 0x20; // a space in the second URL
  const dd = decodeBatch(withBad);
  assert.ok(dd.ok);
  assert.equal(dd.value.invalidUrls, 1);
  assert.deepEqual(dd.value.items.map((i) => i.url), ['http://a.example/1']);
  assert.deepEqual(dd.value.seqs, [1]);
});

test('ack frames round trip and are bounded', () => {
  const f = encodeAckFrame({ batchId: 2 ** 40 + 5, accepted: 500, dropped: 3 });
  assert.deepEqual(decodeAck(payload(f)), { ok: true, value: { batchId: 2 ** 40 + 5, accepted: 500, dropped: 3 } });
  assert.equal(decodeAck(new Uint8Array(40)).ok, false);
  assert.equal(decodeAck(Uint8Array.from([1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0])).ok, false);
});

test('RecentHashes keeps recently used keys, bounded; delete keeps probing intact', () => {
  const r = new RecentHashes(4); // generations of 2
  r.add(1, 0); r.add(2, 0); // cur = {1,2}
  r.add(3, 0); // rotates: old = {1,2}, cur = {3}
  assert.ok(r.has(1, 0)); // promoted: cur = {3,1}
  r.add(4, 0); // rotates: old = {3,1}, cur = {4}
  r.add(5, 0); // cur = {4,5}
  r.add(6, 0); // rotates: old = {4,5}: 1, 2 and 3 gone
  assert.ok(!r.has(2, 0) && !r.has(3, 0) && r.has(5, 0));
  assert.ok(r.size <= 4);
  assert.ok(r.has(0, 0) === false && r.add(0, 0) && r.has(0, 0));
  // Many colliding keys, then deletes: every remaining key is still found.
  const big = new RecentHashes(1 << 12);
  const keys: Array<[number, number]> = [];
  for (let i = 0; i < 1500; i++) keys.push([(i * 0x10000) >>> 0, i & 3]);
  for (const [lo, hi] of keys) big.add(lo, hi);
  for (let i = 0; i < keys.length; i += 3) big.delete(keys[i]![0], keys[i]![1]);
  for (let i = 0; i < keys.length; i++) assert.equal(big.has(keys[i]![0], keys[i]![1]), i % 3 !== 0, `key ${i}`);
});

test('outbox: durable across reopen, per-peer order, epoch and seq counter kept even after the queue drains', async () => {
  const dir = tempDir();
  let db = await openDb(dir);
  let ob = await Outbox.open({ db: sub(db) });
  const epoch = ob.epoch;
  assert.equal(await ob.enqueue(P1, items(0, 700)), 700);
  assert.equal(await ob.enqueue(P2, items(1000, 5)), 5);
  assert.equal(await ob.enqueue(P1, items(700, 10)), 10);
  assert.deepEqual(ob.peers().sort(), [P1, P2].sort());
  await ob.close();
  await db.close();

  db = await openDb(dir);
  ob = await Outbox.open({ db: sub(db) });
  assert.equal(ob.epoch, epoch);
  assert.equal(ob.queued(P1), 710);
  assert.equal(ob.queued(P2), 5);
  const r1 = await ob.read(P1, 0, { maxUrls: 500 });
  assert.ok(r1.batch);
  assert.deepEqual(batchItems(r1.batch).items, items(0, 500));
  assert.ok(!r1.batch.exhausted);
  const r2 = await ob.read(P1, r1.batch.lastSeq, { maxUrls: 500 });
  assert.ok(r2.batch && r2.batch.exhausted);
  assert.deepEqual(batchItems(r2.batch).items, items(500, 210));
  assert.equal(r2.batch.runs.length, 2, 'two segments: 700 = 500 + 200, then 10 more');
  await ob.ack(r1.batch);
  await ob.ack(r2.batch);
  assert.equal(ob.queued(P1), 0);
  const lastSeq = r2.batch.lastSeq;
  await ob.close();
  await db.close();

  db = await openDb(dir);
  ob = await Outbox.open({ db: sub(db) });
  assert.equal(ob.queued(P1), 0);
  assert.equal(await ob.enqueue(P1, items(5000, 1)), 1);
  const r3 = await ob.read(P1, 0);
  assert.ok(r3.batch && batchItems(r3.batch).seqs[0]! > lastSeq, 'seqs never repeat within an epoch');
  await ob.close();
  await db.close();
});

test('outbox: refuses invalid items, skips URLs recently forwarded to the same peer, batches by count, bytes and time', async () => {
  const db = await openDb(tempDir());
  try {
    const ob = await Outbox.open({ db: sub(db) });
    assert.equal(await ob.enqueue(P1, [{ url: 'ftp://x.example/', depth: 0, hops: 0 }, { url: 'http://x.example/', depth: -1, hops: 0 }, { url: 'http://x.example/', depth: 0, hops: 300 }]), 0);
    assert.equal(ob.stats.invalid, 3);
    await assert.rejects(ob.enqueue('not-a-peer', items(0, 1)), RangeError);
    assert.equal(await ob.enqueue(P1, items(0, 10)), 10);
    assert.equal(await ob.enqueue(P1, items(5, 10)), 5); // 5..9 were sent to P1 already
    assert.equal(await ob.enqueue(P2, items(0, 10)), 10); // another peer: not skipped
    assert.equal(ob.stats.deduped, 5);
    // Time: a partial batch younger than lingerMs waits.
    const young = await ob.read(P1, 0, { maxUrls: 100, lingerMs: 10_000 });
    assert.equal(young.batch, null);
    assert.ok(young.waitMs > 9000);
    // Count.
    // Count: whole segments (two here: 10 and 5 items) up to maxUrls, at least one.
    const byCount = await ob.read(P1, 0, { maxUrls: 12, lingerMs: 10_000 });
    assert.equal(byCount.batch?.count, 10);
    const byCount2 = await ob.read(P1, 0, { maxUrls: 15, lingerMs: 10_000 });
    assert.equal(byCount2.batch?.count, 15);
    // Bytes: small segments so the byte limit bites between them.
    const ob2 = await Outbox.open({ db: sub(db), segmentMaxUrls: 2 });
    for (let i = 0; i < 5; i++) await ob2.enqueue(P3, items(100 + 2 * i, 2));
    // Each item is ~75 bytes, a segment of 2 ~150 (+8 seq); 500 bytes minus 160 of header headroom hold 2 segments.
    const byBytes = await ob2.read(P3, 0, { maxUrls: 100, maxBytes: 500 });
    assert.ok(byBytes.batch && byBytes.batch.count === 4 && byBytes.batch.runs.length === 2 && !byBytes.batch.exhausted);
  } finally {
    await db.close();
  }
});

test('outbox: reassign moves a peer\'s queue to new owners atomically, keeps or hands items to the local agent', async () => {
  const db = await openDb(tempDir());
  try {
    const ob = await Outbox.open({ db: sub(db) });
    await ob.enqueue(P1, items(0, 300));
    const ready: string[] = [];
    ob.on('ready', (p) => ready.push(p));
    const local: UrlItem[] = [];
    // host<i % 97>: even hosts go to P2, multiples of 3 stay local, the rest stay with P1.
    const hostNo = (u: string) => Number(/host(\d+)/.exec(u)![1]);
    const res = await ob.reassign(P1, (it) => (hostNo(it.url) % 2 === 0 ? P2 : hostNo(it.url) % 3 === 0 ? null : P1), async (its) => { local.push(...its); }, { chunk: 64 });
    const expect = items(0, 300);
    const toP2 = expect.filter((it) => hostNo(it.url) % 2 === 0);
    const toLocal = expect.filter((it) => hostNo(it.url) % 2 !== 0 && hostNo(it.url) % 3 === 0);
    assert.deepEqual(res, { moved: toP2.length, local: toLocal.length, kept: 300 - toP2.length - toLocal.length });
    assert.deepEqual(local, toLocal);
    assert.equal(ob.queued(P2), toP2.length);
    assert.equal(ob.queued(P1), res.kept);
    const r = await ob.read(P2, 0, { maxUrls: 5000 });
    assert.ok(r.batch);
    assert.deepEqual(batchItems(r.batch).items, toP2);
    const k = await ob.read(P1, 0, { maxUrls: 5000 });
    assert.ok(k.batch);
    assert.deepEqual(batchItems(k.batch).items, expect.filter((it) => hostNo(it.url) % 2 !== 0 && hostNo(it.url) % 3 !== 0));
    assert.ok(ready.includes(P2));
  } finally {
    await db.close();
  }
});

test('outbox: drainPeer deletes a chunk only once the consumer asks for the next one', async () => {
  const db = await openDb(tempDir());
  try {
    const ob = await Outbox.open({ db: sub(db), segmentMaxUrls: 50 }); // chunks are whole segments
    await ob.enqueue(P3, items(0, 250));
    for await (const chunk of ob.drainPeer(P3, { chunk: 100 })) {
      assert.equal(chunk.length, 100);
      break; // not consumed: stays queued
    }
    assert.equal(ob.queued(P3), 250);
    const got: UrlItem[] = [];
    let paused = false;
    for await (const chunk of ob.drainPeer(P3, { chunk: 100 })) {
      paused ||= ob.isPaused(P3);
      got.push(...chunk);
    }
    assert.ok(paused);
    assert.deepEqual(got, items(0, 250));
    assert.equal(ob.queued(P3), 0);
    assert.equal((await ob.read(P3, 0)).batch, null);
    assert.ok(!ob.isPaused(P3));
  } finally {
    await db.close();
  }
});

test('batchLimits: the defaults of src/config.ts, never over what a receiver accepts', () => {
  assert.deepEqual(batchLimits(), { maxUrls: DEFAULT_MESH_EXCHANGE.batchMaxUrls, maxBytes: DEFAULT_MESH_EXCHANGE.batchMaxBytes });
  assert.deepEqual(batchLimits({ maxUrls: 7, maxBytes: 4096 }), { maxUrls: 7, maxBytes: 4096 });
  assert.deepEqual(batchLimits({ maxUrls: MAX_BATCH_URLS * 2, maxBytes: MAX_BATCH_BYTES * 2 }), { maxUrls: MAX_BATCH_URLS, maxBytes: MAX_BATCH_BYTES });
});

test('outbox: a read that can only say "wait" (lingering) or "nothing" (all in flight) opens no LevelDB iterator, and what is released is read again', async () => {
  const db = await openDb(tempDir());
  try {
    const inner = sub(db);
    let iterators = 0;
    const counting = new Proxy(inner, {
      get(target, prop, recv) {
        if (prop === 'iterator') return (...a: Parameters<OutboxDb['iterator']>) => { iterators++; return target.iterator(...a); };
        const v = Reflect.get(target, prop, recv) as unknown;
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    }) as OutboxDb;
    const ob = await Outbox.open({ db: counting });
    assert.equal(await ob.enqueue(P1, items(0, 10)), 10);
    const before = iterators;
    // Lingering: a partial batch younger than lingerMs, answered from the counters.
    const young = await ob.read(P1, 0, { maxUrls: 100, lingerMs: 10_000 });
    assert.equal(young.batch, null);
    assert.ok(young.waitMs > 9000);
    assert.equal(iterators, before);
    // Without linger the queue is read (to its end).
    const full = await ob.read(P1, 0, { maxUrls: 100 });
    assert.equal(full.batch?.count, 10);
    assert.equal(full.batch?.exhausted, true);
    assert.equal(iterators, before + 1);
    // Everything written is in flight: nothing to read, no iterator.
    const none = await ob.read(P1, full.batch!.lastSeq, { maxUrls: 100 });
    assert.deepEqual(none, { batch: null, waitMs: 0 });
    assert.equal(iterators, before + 1);
    // A write after it is read (through an iterator), after the in-flight batch.
    assert.equal(await ob.enqueue(P1, items(10, 3)), 3);
    const next = await ob.read(P1, full.batch!.lastSeq, { maxUrls: 100 });
    assert.equal(next.batch?.count, 3);
    assert.equal(iterators, before + 2);
    // Released (a failed session): both are read again from the start.
    ob.release(full.batch!);
    ob.release(next.batch!);
    const again = await ob.read(P1, 0, { maxUrls: 100 });
    assert.equal(again.batch?.count, 13);
    await ob.ack(again.batch!);
    assert.equal(ob.queued(P1), 0);
  } finally {
    await db.close();
  }
});

test('outbox: a caller\'s batch (queueOps) that lands after one with higher seqs is read next, below the cursor; batches in flight are not read twice', async () => {
  const db = await openDb(tempDir());
  try {
    const inner = sub(db);
    const ob = await Outbox.open({ db: inner, recentSize: 0 });
    const [a, b, c, d, e] = items(0, 5, REPLICA_SEEN_HOPS);
    // The sender's cursor, as src/mesh/exchange.ts keeps it: the highest lastSeq read.
    let cursor = 0;
    const read = async () => {
      const r = await ob.read(P1, cursor, { maxUrls: 100 });
      if (r.batch) cursor = Math.max(cursor, r.batch.lastSeq);
      return r.batch;
    };
    const write = async (q: { ops: Parameters<OutboxDb['batch']>[0]; n: number; seq: number }) => { await inner.batch(q.ops); ob.written(P1, q.n, q.seq); };
    // Two completions take their seqs in this order; the second one's batch is durable first, and read.
    const qa = ob.queueOps(P1, [a!]);
    const qb = ob.queueOps(P1, [b!]);
    assert.ok(qa.seq < qb.seq);
    await write(qb);
    const first = await read();
    assert.deepEqual(batchItems(first!).items, [b]);
    assert.equal(cursor, qb.seq);
    // The cursor is past a's seq: it is read all the same, at once (before, only by the sender's next session).
    await write(qa);
    const late = await read();
    assert.deepEqual(late && batchItems(late).items, [a], 'the late segment is read at once');
    assert.equal(late!.lastSeq, qa.seq);
    assert.equal(cursor, qb.seq, 'the cursor stays');
    // b is in flight: not read again, and the count is kept.
    assert.equal(await read(), null);
    assert.equal(ob.queued(P1), 2);
    // Later writes go out after the cursor as usual; a late one among them first.
    const qc = ob.queueOps(P1, [c!]);
    const qd = ob.queueOps(P1, [d!]);
    await write(qd);
    await write(qc);
    const next = await read();
    assert.deepEqual(batchItems(next!).items, [c, d]);
    for (const x of [first, late, next]) await ob.ack(x!);
    assert.equal(ob.queued(P1), 0);
    // A batch released on an open session (it was not acknowledged) is read again whatever the cursor.
    const qe = ob.queueOps(P1, [e!]);
    await write(qe);
    const got = await read();
    ob.release(got!);
    const again = await read();
    assert.deepEqual(again && batchItems(again).items, [e]);
    await ob.ack(again!);
    assert.equal(ob.queued(P1), 0);
  } finally {
    await db.close();
  }
});
