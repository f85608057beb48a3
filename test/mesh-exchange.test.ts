// URL exchange between real libp2p nodes on loopback: durable delivery across a
// receiver restart, and hostile input on /ubicrawl/urls/1.0.0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { peerIdFromString } from '@libp2p/peer-id';
import * as lp from 'it-length-prefixed';
import { tempDir } from './helpers.js';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import { Outbox, type OutboxDb } from '../src/mesh/outbox.js';
import { UrlExchange, type AcceptFn } from '../src/mesh/exchange.js';
import { PROTOCOL_URLS, FLAG_REPLICA, REPLICA_SEEN_HOPS, decodeAck, encodeBatchFrame, type UrlItem } from '../src/mesh/wire.js';

type Db = ClassicLevel<Buffer, Buffer>;
const enc = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;
async function openDb(dir: string): Promise<Db> {
  const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), enc);
  await db.open();
  return db;
}
const sub = (db: Db, name: string) => db.sublevel<Buffer, Buffer>(name, enc) as unknown as OutboxDb;

const url = (i: number) => `https://www.host${i % 211}.example.com/articles/2024/${i}/some-title-${i}.html?src=feed`;
const items = (from: number, n: number): UrlItem[] => Array.from({ length: n }, (_, k) => ({ url: url(from + k), depth: 1, hops: 0 }));

async function until(what: string, cond: () => boolean, ms = 15000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A receiving agent: node + exchange whose accept() writes each batch to LevelDB before resolving. */
interface Receiver { node: MeshNode; ex: UrlExchange; db: Db; close(): Promise<void> }
async function receiver(dir: string, listen: string[] | undefined, counts: Map<string, number>, opts: { failOnce?: () => boolean } = {}): Promise<Receiver> {
  const node = await createMeshNode({ dataDir: dir, listen });
  const db = await openDb(dir);
  const store = sub(db, 'received');
  const accept: AcceptFn = async (its) => {
    if (opts.failOnce?.()) throw new Error('disk full (injected)');
    await store.batch(its.map((it) => ({ type: 'put' as const, key: Buffer.from(it.url), value: Buffer.from([it.depth]) })));
    for (const it of its) counts.set(it.url, (counts.get(it.url) ?? 0) + 1);
  };
  const ex = new UrlExchange({ node, accept, inbox: sub(db, 'inbox'), readIdleMs: 5000 });
  await ex.start();
  return {
    node, ex, db,
    async close() {
      await ex.stop(500);
      await node.stop();
      await db.close();
    },
  };
}

test('docs/mesh.md "URL exchange": every URL reaches the receiver\'s accept exactly once across a receiver restart; the outbox keeps unacked batches', async () => {
  const rDir = tempDir();
  const counts = new Map<string, number>();
  let injected = false;
  let r = await receiver(rDir, undefined, counts, { failOnce: () => (!injected && counts.size > 3000 ? (injected = true) : false) });
  const port = Number(r.node.addrs()[0]!.split('/')[4]);
  const rid = r.node.id;

  const sDir = tempDir();
  const sNode = await createMeshNode({ dataDir: sDir });
  const sDb = await openDb(sDir);
  const outbox = await Outbox.open({ db: sub(sDb, 'outbox') });
  const sEx = new UrlExchange({ node: sNode, outbox, accept: async () => {}, backoffMinMs: 50, backoffMaxMs: 300, idleCloseMs: 1500 });
  await sEx.start();
  const N = 20_000;
  try {
    await sNode.dialPeer(r.node.addrs()[0]!);
    // Producer: 40 chunks of 500, each awaited (durable in the outbox).
    const producing = (async () => {
      for (let i = 0; i < N; i += 500) {
        await outbox.enqueue(rid, items(i, 500));
        await new Promise((res) => setTimeout(res, 5));
      }
    })();
    // Kill the receiver's node mid-stream (streams die with batches in flight), then restart it.
    await until('some deliveries', () => counts.size >= 6000);
    await r.node.stop();
    await r.close();
    const atRestart = counts.size;
    assert.ok(atRestart < N, 'restart happened mid-stream');
    await new Promise((res) => setTimeout(res, 300));
    r = await receiver(rDir, [`/ip4/127.0.0.1/tcp/${port}`], counts);
    assert.equal(r.node.id, rid);
    await producing;
    await until('all delivered', () => outbox.queued(rid) === 0 && counts.size === N, 30000);
    const dup = [...counts.values()].filter((c) => c !== 1).length;
    assert.equal(dup, 0, 'no URL accepted twice');
    for (let i = 0; i < N; i++) assert.equal(counts.get(url(i)), 1);
    // The receiver's durable store holds them all.
    const stored = await (r.db.sublevel<Buffer, Buffer>('received', enc)).keys().all();
    assert.equal(stored.length, N);
    const s = sEx.stats();
    assert.equal(s.acked, N);
    assert.ok(s.failures >= 1, 'the restart and the injected accept failure made the sender retry');
    assert.ok(injected);
    assert.equal(r.ex.stats().acceptErrors, 0);
  } finally {
    await sEx.stop(500);
    await outbox.close();
    await sNode.stop();
    await sDb.close();
    await r.close().catch(() => {});
  }
});

/** Opens a raw stream on the protocol, writes `chunks`, and returns the ack frames read back (if any) and how it ended. */
async function raw(from: MeshNode, to: MeshNode, chunks: Uint8Array[]): Promise<{ acks: number[]; error: string | null }> {
  const stream = await from.libp2p.dialProtocol(peerIdFromString(to.id), PROTOCOL_URLS);
  const acks: number[] = [];
  let error: string | null = null;
  const writing = stream.sink((async function* () { for (const c of chunks) yield c; })()).catch((e: Error) => { error ??= e.name; });
  try {
    for await (const f of lp.decode(stream.source)) {
      const a = decodeAck(f.subarray());
      if (a.ok) acks.push(a.value.batchId);
    }
  } catch (e) {
    error ??= (e as Error).name || 'error';
  }
  await writing;
  return { acks, error };
}

test('docs/mesh.md "URL exchange": garbage on the protocol is rejected and counted, the stream reset, and the receiver keeps accepting good batches', async () => {
  const counts = new Map<string, number>();
  const r = await receiver(tempDir(), undefined, counts);
  const evil = await createMeshNode({ dataDir: tempDir() });
  try {
    await evil.dialPeer(r.node.addrs()[0]!);
    const good = (id: number, its: UrlItem[], from = evil.id) => encodeBatchFrame({ batchId: id, from, epoch: 7, flags: 0, items: its, seqs: its.map((_, i) => id * 10_000 + i) });
    // 1. A good batch is acked.
    assert.deepEqual((await raw(evil, r.node, [good(1, items(0, 10))])).acks, [1]);
    // 1b. The same batch again (a re-send after a lost ack): acked, not accepted twice.
    assert.deepEqual((await raw(evil, r.node, [good(1, items(0, 10))])).acks, [1]);
    assert.equal(r.ex.stats().duplicates, 10);
    // 2. Bad length prefix (an endless varint).
    assert.deepEqual((await raw(evil, r.node, [new Uint8Array(12).fill(0xff)])).acks, []);
    // 3. A length prefix announcing more than MAX_BATCH_BYTES.
    assert.deepEqual((await raw(evil, r.node, [Uint8Array.from([0x81, 0x80, 0x80, 0x01, 1, 2, 3])])).acks, []);
    // 4. Well framed nonsense.
    assert.deepEqual((await raw(evil, r.node, [Uint8Array.from([5, 9, 9, 9, 9, 9])])).acks, []);
    // 5. A batch claiming another sender.
    const other = await createMeshNode({ dataDir: tempDir() });
    const forged = good(2, items(100, 5), other.id);
    await other.stop();
    assert.deepEqual((await raw(evil, r.node, [forged])).acks, []);
    // 6. A frame cut short, then the stream closed.
    const g = good(3, items(200, 5));
    assert.deepEqual((await raw(evil, r.node, [g.subarray(0, g.length - 7)])).acks, []);
    // 7. A good batch, then garbage on the same stream: the first is acked, the rest rejected.
    const res = await raw(evil, r.node, [good(4, items(300, 10)), Uint8Array.from([3, 1, 9, 0])]);
    assert.deepEqual(res.acks, [4]);
    // 8. A batch with one bad URL among good ones: the bad one is dropped and counted, the rest accepted and acked.
    const mixed = good(5, [...items(400, 3), { url: 'http://ok.example/x', depth: 0, hops: 0 }]);
    const at = Buffer.from(mixed).indexOf('http://ok.example/x');
    mixed[at + 9] = 0x7f; // DEL inside the URL
    assert.deepEqual((await raw(evil, r.node, [mixed])).acks, [5]);

    const st = r.ex.stats();
    assert.deepEqual(st.rejected, { framing: 1, oversize: 1, type: 1, 'from-mismatch': 1, truncated: 1, version: 1, url: 1 });
    assert.equal(st.peers.get(evil.id)?.rejected, 7);
    assert.equal(counts.size, 10 + 10 + 3);
    assert.equal(counts.has(url(100)), false);

    // The receiver still serves a normal sender.
    const sDb = await openDb(tempDir());
    const outbox = await Outbox.open({ db: sub(sDb, 'outbox') });
    const sEx = new UrlExchange({ node: evil, outbox, accept: async () => {}, lingerMs: 5 });
    await sEx.start();
    try {
      await outbox.enqueue(r.node.id, items(1000, 1200));
      await until('good batches accepted', () => outbox.queued(r.node.id) === 0);
      assert.equal(counts.size, 23 + 1200);
    } finally {
      await sEx.stop(500);
      await outbox.close();
      await sDb.close();
    }
  } finally {
    await evil.stop();
    await r.close();
  }
});

/** A sender with a URL lane and a replica lane (docs/mesh.md "Crashes"). */
async function senderLanes(o: { idleCloseMs?: number; backoffMinMs?: number; backoffMaxMs?: number } = {}) {
  const sNode = await createMeshNode({ dataDir: tempDir() });
  const sDb = await openDb(tempDir());
  const outbox = await Outbox.open({ db: sub(sDb, 'outbox') });
  const replicas = await Outbox.open({ db: sub(sDb, 'replicas'), recentSize: 0 });
  const sEx = new UrlExchange({ node: sNode, outbox, replicaOutbox: replicas, accept: async () => {}, ...o });
  await sEx.start();
  const close = async () => {
    await sEx.stop(500);
    await outbox.close();
    await replicas.close();
    await sNode.stop();
    await sDb.close();
  };
  return { sNode, sDb, outbox, replicas, sEx, close };
}

/** A receiver taking batches with `accept`, and a sender with both lanes (`senderLanes`). */
async function twoLanes(accept: AcceptFn, o: { readIdleMs?: number; idleCloseMs?: number } = {}) {
  const rNode = await createMeshNode({ dataDir: tempDir() });
  const rEx = new UrlExchange({ node: rNode, accept, readIdleMs: o.readIdleMs });
  await rEx.start();
  const sender = await senderLanes({ idleCloseMs: o.idleCloseMs });
  const close = async () => {
    await sender.close();
    await rEx.stop(500);
    await rNode.stop();
  };
  return { ...sender, rNode, rEx, close };
}

test('docs/mesh.md "Crashes": replica seen entries go on their own lane, accepted while the sender\'s URL batches are held up; a replica frame carries nothing else', async () => {
  let releaseUrls!: () => void;
  const urlsHeld = new Promise<void>((r) => { releaseUrls = r; });
  const gotUrls: UrlItem[] = [];
  const gotReplicas: { item: UrlItem; at: number }[] = [];
  const accept: AcceptFn = async (its, _from, meta) => {
    if (meta.replica) { for (const it of its) gotReplicas.push({ item: it, at: Date.now() }); return; }
    await urlsHeld; // e.g. a slow seen-set round at the receiver
    gotUrls.push(...its);
  };
  const { rNode, rEx, sNode, sDb, outbox, replicas, sEx, close } = await twoLanes(accept, { readIdleMs: 5000 });
  try {
    await sNode.dialPeer(rNode.addrs()[0]!);
    await outbox.enqueue(rNode.id, items(0, 3000));
    await until('URL batches on the wire', () => sEx.stats().sent > 0);
    // A finished page's replica: queued in the caller's own batch (queueOps), sendable once written.
    const replicaItems: UrlItem[] = [0, 1, 2].map((i) => ({ url: `https://done${i}.example/page`, depth: 0, hops: REPLICA_SEEN_HOPS }));
    const written = Date.now();
    for (const it of replicaItems) {
      const q = replicas.queueOps(rNode.id, [it]);
      await (sDb.sublevel<Buffer, Buffer>('replicas', enc) as unknown as OutboxDb).batch(q.ops);
      replicas.written(rNode.id, q.n);
    }
    await until('replicas accepted', () => gotReplicas.length === 3 && replicas.queued(rNode.id) === 0);
    assert.equal(gotUrls.length, 0, 'the URL batches are still held at the receiver');
    assert.deepEqual(gotReplicas.map((r) => r.item.url).sort(), replicaItems.map((it) => it.url).sort());
    assert.ok(Math.max(...gotReplicas.map((r) => r.at)) - written < 5000);
    releaseUrls();
    await until('URL batches accepted', () => outbox.queued(rNode.id) === 0);
    assert.equal(new Set(gotUrls.map((it) => it.url)).size, 3000);

    // A replica frame holding an ordinary URL: that item is refused and counted; the replica in it is taken.
    const frame = encodeBatchFrame({ batchId: 9, from: sNode.id, epoch: 3, flags: FLAG_REPLICA, items: [items(5000, 1)[0]!, { url: 'https://done9.example/', depth: 0, hops: REPLICA_SEEN_HOPS }], seqs: [1, 2] });
    assert.deepEqual((await raw(sNode, rNode, [frame])).acks, [9]);
    assert.equal(rEx.stats().rejected['replica-item'], 1);
    assert.ok(gotReplicas.some((r) => r.item.url === 'https://done9.example/'));
    assert.ok(!gotUrls.some((it) => it.url === url(5000)));
  } finally {
    releaseUrls();
    await close();
  }
});

test('docs/mesh.md "Crashes": a replica whose batch landed after a later page\'s (its seq lower) goes out on the open replica stream at once, not at the next session', async () => {
  const got: string[] = [];
  // The stream stays open while idle (a busy lane never idles: new replicas keep coming in a crawl).
  const { rNode, sNode, sDb, replicas, close } = await twoLanes(async (its, _from, meta) => { if (meta.replica) got.push(...its.map((it) => it.url)); }, { idleCloseMs: 120_000 });
  const rdb = sDb.sublevel<Buffer, Buffer>('replicas', enc) as unknown as OutboxDb;
  try {
    await sNode.dialPeer(rNode.addrs()[0]!);
    const [a, b] = ['https://late.example/a', 'https://early.example/b'].map((u) => ({ url: u, depth: 0, hops: REPLICA_SEEN_HOPS }));
    // Two completions take their seqs in this order; the second one's batch is durable (and sent) first.
    const qa = replicas.queueOps(rNode.id, [a!]);
    const qb = replicas.queueOps(rNode.id, [b!]);
    await rdb.batch(qb.ops);
    replicas.written(rNode.id, qb.n, qb.seq);
    await until('the later page\'s replica accepted', () => got.includes(b!.url) && replicas.queued(rNode.id) === 0);
    await rdb.batch(qa.ops);
    replicas.written(rNode.id, qa.n, qa.seq);
    // Before, the open session's cursor was past it: it waited for the stream to close (idleCloseMs, here 2 minutes).
    await until('the earlier page\'s replica accepted', () => got.includes(a!.url) && replicas.queued(rNode.id) === 0, 10_000);
    assert.equal(got.filter((u) => u === b!.url).length, 1, 'what was acknowledged is not sent again');
  } finally {
    await close();
  }
});

test('docs/mesh.md "URL exchange": a receiver resetting replica streams while the sender is busy reading its outbox never leaves an ack wait unhandled (an unhandled rejection ends the agent)', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => { unhandled.push(reason); };
  process.on('unhandledRejection', onUnhandled);
  // The receiver refuses the way a restarted member that does not know us yet does: it resets each stream
  // soon after it opens (src/mesh/exchange.ts `serve`), here after 0-20 ms so the reset lands at every point
  // of the sender's session.
  const rNode = await createMeshNode({ dataDir: tempDir() });
  let resets = 0;
  await rNode.libp2p.handle(PROTOCOL_URLS, ({ stream }) => {
    setTimeout(() => { resets++; stream.abort(new Error('refused (test)')); }, Math.random() * 20);
  });
  const { sNode, sDb, replicas, sEx, close } = await senderLanes({ backoffMinMs: 5, backoffMaxMs: 20 });
  const rdb = sDb.sublevel<Buffer, Buffer>('replicas', enc) as unknown as OutboxDb;
  let written = 0;
  try {
    await sNode.dialPeer(rNode.addrs()[0]!);
    // Replicas keep landing one by one, as completions do in a crawl: each wakes the busy sender.
    const end = Date.now() + 3000;
    while (Date.now() < end && unhandled.length === 0) {
      const q = replicas.queueOps(rNode.id, [{ url: `https://done.example/${written}`, depth: 0, hops: REPLICA_SEEN_HOPS }]);
      await rdb.batch(q.ops);
      replicas.written(rNode.id, q.n, q.seq);
      written++;
      await new Promise((r) => setTimeout(r, 1));
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(unhandled.map((e) => String(e)), []);
    assert.ok(resets > 10, `streams reset: ${resets}`);
    assert.ok(sEx.stats().failures > 10, `sessions failed: ${sEx.stats().failures}`);
    assert.equal(replicas.queued(rNode.id), written, 'nothing acknowledged, nothing lost');
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await close();
    await rNode.stop();
  }
});
