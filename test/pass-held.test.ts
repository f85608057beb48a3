// A graceful leaver passes on the replicas it holds for other owners
// (docs/mesh.md "Replicated frontier", "A holder that leaves"): the wire kinds
// that carry the owner, who they go to, and the leaver's rounds over a real
// store and outbox (the ring is given).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { Outbox, classifyItem, encodeItem, HELD_QUEUED_HOPS, HELD_REPLICA_HOPS } from '../src/mesh/index.js';
import { decodeBatch, encodeBatchFrame, FLAG_REPLICA } from '../src/mesh/wire.js';
import { decodeHeld, encodeHeld } from '../src/crawl/frontier-replica.js';
import { passOnTargets } from '../src/crawl/held-replicas.js';
import { HeldPassOn } from '../src/crawl/pass-held.js';
import { encodeFetchRecord } from '../src/crawl/records.js';
import { tempDir } from './helpers.js';
import { replicaAlone } from './replica-fixture.js';

const O = '12D3KooWQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ';
const L = '12D3KooWLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL';
const N = '12D3KooWNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN';
const M = '12D3KooWMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM';

test('held replicas passed on: the owner travels with the item; an older receiver reads such an item as bad, the rest of the batch stands', () => {
  const q = encodeItem({ kind: 'queued', url: 'http://a.example/x', depth: 3, sitemap: false, owner: O });
  const s = encodeItem({ kind: 'queued', url: 'http://a.example/sitemap.xml', depth: 1, sitemap: true, owner: O });
  const r = encodeItem({ kind: 'replica', url: 'http://a.example/y', owner: O });
  assert.equal(q.hops, HELD_QUEUED_HOPS);
  assert.equal(s.hops, HELD_QUEUED_HOPS + 1);
  assert.equal(r.hops, HELD_REPLICA_HOPS);
  assert.deepEqual(classifyItem(q), { kind: 'queued', url: 'http://a.example/x', depth: 3, sitemap: false, owner: O });
  assert.deepEqual(classifyItem(s), { kind: 'queued', url: 'http://a.example/sitemap.xml', depth: 1, sitemap: true, owner: O });
  assert.deepEqual(classifyItem(r), { kind: 'replica', url: 'http://a.example/y', owner: O });
  // Without an owner, the kinds are what they were, byte for byte.
  assert.deepEqual(encodeItem({ kind: 'queued', url: 'http://a.example/x', depth: 3, sitemap: false }), { url: 'http://a.example/x', depth: 3, hops: 0xc1 });
  assert.deepEqual(encodeItem({ kind: 'replica', url: 'http://a.example/y' }), { url: 'http://a.example/y', depth: 0, hops: 0x9f });
  // A second string that names no peer is bad (the item alone).
  assert.deepEqual(classifyItem({ ...q, grant: 'http://held.ubicrawl.invalid/v1/not-a-peer' }), { kind: 'bad', reason: 'grant' });
  assert.deepEqual(classifyItem({ ...q, grant: 'http://recrawl.ubicrawl.invalid/v1/AAAA' }), { kind: 'bad', reason: 'grant' });
  // The framing carries the second string, so a receiver of any version reads past it (as the seen-sitemap-with-
  // a-grant flags, these hops bytes were `bad` before: src/mesh/wire.ts "Versioning by kind").
  for (const h of [HELD_QUEUED_HOPS, HELD_QUEUED_HOPS + 1, HELD_REPLICA_HOPS]) assert.equal(h & 0xe0, 0xe0);
  const frame = encodeBatchFrame({ from: L, batchId: 3, epoch: 1, flags: FLAG_REPLICA, items: [q, encodeItem({ kind: 'replica', url: 'http://a.example/z' }), r], seqs: [1, 2, 3] });
  let i = 0;
  while (frame[i]! & 0x80) i++; // the length prefix
  const back = decodeBatch(frame.subarray(i + 1));
  assert.ok(back.ok);
  assert.deepEqual(back.value.items.map((it) => classifyItem(it)), [classifyItem(q), { kind: 'replica', url: 'http://a.example/z' }, classifyItem(r)]);
});

test('pass-on targets: the host\'s next owners in the leaver\'s ring, neither the owner nor the leaver', () => {
  const ring = new HostRing({ replicas: 64 });
  for (const id of [O, N, M]) ring.add(id);
  const hosts = Array.from({ length: 60 }, (_, i) => `h${i}.example`);
  for (const h of hosts) {
    const owners = ring.nextOwnersOf(h, 3);
    const t1 = passOnTargets(ring, h, O, L, 1);
    assert.equal(t1.length, 1);
    assert.ok(!t1.includes(O) && !t1.includes(L));
    // The owner in our ring: its successor (what it replicates to once it sees us leave).
    if (owners[0] === O) assert.deepEqual(t1, [owners[1]]);
    // Another owner in our view: that member first (it takes the host over should the sender go).
    else assert.deepEqual(t1, [owners[0]]);
    assert.deepEqual(passOnTargets(ring, h, O, L, 2), owners.filter((p) => p !== O).slice(0, 2));
    assert.deepEqual(passOnTargets(ring, h, O, L, 0), []);
  }
  const alone = new HostRing({ replicas: 64 });
  alone.add(O);
  assert.deepEqual(passOnTargets(alone, 'a.example', O, L, 1), [], 'nobody but the owner: nothing to pass to');
});

test('a leaver\'s rounds: held queued URLs go (and leave the standby in the same write), seen entries of held hosts go once, then those that came since', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    // The leaver's ring: L has left it.
    const ring = new HostRing({ replicas: 64 });
    for (const id of [O, N, M]) ring.add(id);
    const host = Array.from({ length: 200 }, (_, i) => `h${i}.example`).find((h) => ring.ownerOf(h) === O)!;
    const next = ring.nextOwnersOf(host, 2)[1]!;
    const url = (p: string) => `http://${host}${p}`;
    const hk = hostKey(host);
    await store.standby.put(seenKey(hk, url('/q1')), encodeHeld(url('/q1'), 2, false, O));
    await store.standby.put(seenKey(hk, url('/s.xml')), encodeHeld(url('/s.xml'), 1, true, O));
    // Held for a member gone from our table (an owner declared dead): still passed on, named; the receiver promotes it.
    const gone = '12D3KooWGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGG';
    await store.standby.put(seenKey(hk, url('/g')), encodeHeld(url('/g'), 2, false, gone));
    for (const p of ['/', '/a']) await store.fetches.put(seenKey(hk, url(p)), encodeFetchRecord({ url: url(p), at: 1, status: 0, failure: 'settled-elsewhere' }));
    const held = new Map([[host, { hk, from: O }]]);
    const pass = new HeldPassOn({ store, replicas: 1, heldHosts: () => held.entries(), heldHost: (h) => held.get(h) });
    const mesh = { id: L, membership: { ring, member: (id: string) => (id === gone ? undefined : {}) }, replicas: outbox };
    const drained = async (peer: string) => {
      const out: string[] = [];
      for await (const items of outbox.drainPeer(peer, { waitInflightMs: 0 })) {
        for (const it of items) { const w = classifyItem(it); out.push(`${w.kind} ${'url' in w ? w.url.slice(w.url.indexOf('/', 8)) : ''} ${'owner' in w ? (w.owner === O ? 'O' : w.owner === gone ? 'G' : w.owner) : '-'}`); }
      }
      return out.sort();
    };
    assert.equal(await pass.round(mesh), 5);
    // Held for O: to O's successor. Held for G: to the host's owner in our view, O (neither G nor us).
    assert.deepEqual([...pass.targets].sort(), [next, O].sort());
    assert.deepEqual(await drained(next), ['queued /q1 O', 'queued /s.xml O', 'replica / O', 'replica /a O'].sort());
    assert.deepEqual(await drained(O), ['queued /g G']);
    assert.equal((await store.standby.iterator().all()).length, 0, 'passed: gone from our standby in the write that queued it');
    // Nothing new: the next round sends nothing.
    assert.equal(await pass.round(mesh), 0);
    // The owner, not yet aware we leave, sends more: a queued URL and a settled page's replica.
    await store.standby.put(seenKey(hk, url('/q2')), encodeHeld(url('/q2'), 3, false, O));
    await store.fetches.put(seenKey(hk, url('/q1')), encodeFetchRecord({ url: url('/q1'), at: 2, status: 0, failure: 'settled-elsewhere' }));
    pass.taken([host]);
    assert.equal(await pass.round(mesh), 4);
    assert.deepEqual(await drained(next), ['queued /q2 O', 'replica / O', 'replica /a O', 'replica /q1 O'].sort());
    assert.deepEqual(pass.stats, { queued: 4, seen: 5, kept: 0 });
  } finally {
    await outbox.close();
    await store.close();
  }
});

test('a replica passed on never replaces one held already; one held for an owner already gone is promoted without a ring change', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    const ring = new HostRing({ replicas: 64 });
    for (const id of [N, M]) ring.add(id);
    const members = new Set([N, M, O]);
    const promoted: string[] = [];
    const replica = replicaAlone(store, { promoted });
    replica.attach({ id: N, membership: { ring, member: (id) => (members.has(id) ? { state: 'active' } : undefined) }, replicas: outbox });
    replica.ringChanged();
    await replica.settled;
    const host = Array.from({ length: 200 }, (_, i) => `h${i}.example`).find((h) => ring.ownerOf(h) === M)!;
    const u = `http://${host}/x`;
    const key = seenKey(hostKey(host), u);
    await replica.hold([{ key, url: u, depth: 1, sitemap: false, from: M }]);
    // A leaver passes the same URL on, held for O: M's entry stands.
    await replica.hold([{ key, url: u, depth: 1, sitemap: false, from: O, passedOn: true }]);
    assert.equal(decodeHeld((await store.standby.get(key))!)?.from, M);
    // Passed on for O, gone from our table: promoted by a pass of its own.
    members.delete(O);
    const v = `http://${host}/y`;
    await replica.hold([{ key: seenKey(hostKey(host), v), url: v, depth: 1, sitemap: false, from: O, passedOn: true }]);
    const deadline = Date.now() + 5000;
    while (promoted.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await replica.settled;
    assert.deepEqual(promoted, [v]);
  } finally {
    await outbox.close();
    await store.close();
  }
});
