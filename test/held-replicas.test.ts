// Queued replicas are held for their sender and promoted once it is gone, also when our view of the
// host's owner differs from the sender's (src/crawl/held-replicas.ts, docs/mesh.md "Replicated
// frontier"). In the mesh soak (docs/performance.md "Mesh soak") URLs stayed queued only at agents
// SIGKILLed during the churn: their successors had refused or dropped the replicas because, in their
// view, another member owned those hosts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { Outbox } from '../src/mesh/index.js';
import { decodeHeld, encodeHeld } from '../src/crawl/frontier-replica.js';
import { heldVerdict } from '../src/crawl/held-replicas.js';
import { tempDir } from './helpers.js';
import { replicaAlone } from './replica-fixture.js';

const A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'; // self
const B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const C = '12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';

test('standby values keep their sender; values written before senders were kept still decode', () => {
  assert.deepEqual(decodeHeld(encodeHeld('http://h.example/a', 3, false, B)), { kind: 'page', depth: 3, from: B, url: 'http://h.example/a' });
  assert.deepEqual(decodeHeld(encodeHeld('http://h.example/s.xml', 1, true, B)), { kind: 'sitemap', depth: 1, from: B, url: 'http://h.example/s.xml' });
  assert.deepEqual(decodeHeld(encodeHeld('http://h.example/a', 2, false)), { kind: 'page', depth: 2, url: 'http://h.example/a' });
  assert.equal(decodeHeld(Buffer.from([2, 0, 1, 60, 65])), undefined, 'a truncated sender is malformed');
});

test('held-replica verdicts: kept while the sender lives, promoted once it is gone', () => {
  const alive = { member: true, leftRing: false, owner: false, leftEmpty: false };
  // The soak's case: in our view another member owns the host, and we are not its successor.
  assert.equal(heldVerdict({ ownerIsUs: false, successor: false, settledThere: false, sender: alive }), 'keep');
  assert.equal(heldVerdict({ ownerIsUs: false, successor: false, settledThere: false, sender: { ...alive, member: false } }), 'promote');
  // Our view: the sender owns the host and we are not next; the sender's view may still name us (it re-sends its queue only when its own view changes).
  assert.equal(heldVerdict({ ownerIsUs: false, successor: false, settledThere: false, sender: { ...alive, owner: true } }), 'keep');
  assert.equal(heldVerdict({ ownerIsUs: false, successor: true, settledThere: false, sender: { ...alive, owner: true } }), 'keep');
  assert.equal(heldVerdict({ ownerIsUs: true, successor: false, settledThere: false, sender: { ...alive, leftRing: true } }), 'promote');
  // A member not in our ring yet (no marker from it) may own the host in its view: nothing of its is crawled here.
  assert.equal(heldVerdict({ ownerIsUs: true, successor: false, settledThere: false, sender: alive }), 'keep');
  assert.equal(heldVerdict({ ownerIsUs: true, successor: false, settledThere: false, sender: { ...alive, member: false, leftEmpty: true } }), 'drop');
  // Without a sender: by our ring alone, as before.
  assert.equal(heldVerdict({ ownerIsUs: false, successor: false, settledThere: false }), 'drop');
  assert.equal(heldVerdict({ ownerIsUs: true, successor: false, settledThere: false }), 'promote');
});

test('replicated frontier: a URL held for a sender that another member owns the host for in our view is promoted when the sender dies', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    // Our view: A, B, C. B's view lacked C (not vouched yet there), so B owned hosts that are C's in ours.
    const ring = new HostRing({ replicas: 64 });
    for (const id of [A, B, C]) ring.add(id);
    const members = new Set([A, B, C]);
    const hosts = Array.from({ length: 400 }, (_, i) => `h${i}.example`);
    const ofC = hosts.find((h) => ring.nextOwnersOf(h, 2).join() === [C, B].join())!; // B's in B's view; we are not next
    const ofB = hosts.find((h) => ring.nextOwnersOf(h, 2).join() === [B, C].join())!; // B's in both views; we are not next
    const promoted: string[] = [];
    const replica = replicaAlone(store, { promoted });
    replica.attach({ id: A, membership: { ring, member: (id) => (members.has(id) ? { state: 'active' } : undefined) }, replicas: outbox });
    replica.ringChanged();
    await replica.settled;
    const diverged = `http://${ofC}/queued-at-b`;
    const agreed = `http://${ofB}/queued-at-b`;
    await replica.hold([diverged, agreed].map((url) => ({ key: seenKey(hostKey(new URL(url).hostname), url), url, depth: 1, sitemap: false, from: B })));
    assert.equal(replica.stats.held, 2);
    // A ring change while B lives (a member joins and leaves elsewhere): both are kept.
    replica.ringChanged();
    await replica.settled;
    assert.equal(replica.stats.dropped, 0, 'nothing dropped while B lives');
    assert.equal((await store.standby.iterator().all()).length, 2, 'both kept while B lives');
    // B is SIGKILLed and declared dead: gone from our member table and ring.
    members.delete(B);
    ring.remove(B);
    replica.ringChanged();
    const deadline = Date.now() + 5000;
    while (promoted.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await replica.settled;
    while (promoted.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await replica.settled;
    assert.deepEqual(promoted.sort(), [agreed, diverged].sort(), 'what B had queued goes to the hosts\' owners (their seen-sets skip what is settled)');
    assert.deepEqual(await store.standby.iterator().all(), [], 'nothing is held any more');
  } finally {
    await outbox.close?.();
    await store.close();
  }
});

test('a replica seen entry refused as a seen entry still trims what the same sender asked us to hold, and only that', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    const ring = new HostRing({ replicas: 64 });
    for (const id of [A, B, C]) ring.add(id);
    const replica = replicaAlone(store);
    replica.attach({ id: A, membership: { ring, member: () => ({ state: 'active' }) }, replicas: outbox });
    const url = 'http://h1.example/settled-at-b';
    const key = seenKey(hostKey('h1.example'), url);
    await replica.hold([{ key, url, depth: 1, sitemap: false, from: B }]);
    await replica.trimFrom(C, [key]);
    assert.equal((await store.standby.iterator().all()).length, 1, 'another member cannot trim it');
    await replica.trimFrom(B, [key]);
    assert.deepEqual(await store.standby.iterator().all(), [], 'its sender can');
  } finally {
    await outbox.close?.();
    await store.close();
  }
});

test('a restarted agent promotes nothing held the moment its ring gains a member: the promotion still waits a dead-after period', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    // We (A) restarted: our ring holds only us. C replicated its queue to us before; B is heard first, C not yet.
    const ring = new HostRing({ replicas: 64 });
    ring.add(A);
    const members = new Set([A]);
    const full = new HostRing({ replicas: 64 });
    for (const id of [A, B, C]) full.add(id);
    const host = Array.from({ length: 400 }, (_, i) => `h${i}.example`).find((h) => full.nextOwnersOf(h, 2).join() === [C, A].join())!;
    const promoted: string[] = [];
    const promoteAfterMs = 300;
    const replica = replicaAlone(store, { promoteAfterMs, promoted });
    replica.attach({ id: A, membership: { ring, member: (id) => (members.has(id) ? { state: 'active' } : undefined) }, replicas: outbox });
    const url = `http://${host}/queued-at-c`;
    await replica.hold([{ key: seenKey(hostKey(host), url), url, depth: 1, sitemap: false, from: C }]);
    replica.ringChanged();
    // The promotion timer of our lone start-up ring fires (a loaded restart: the first member came 4-6 s in).
    await new Promise((r) => setTimeout(r, promoteAfterMs + 100));
    await replica.settled;
    assert.deepEqual(promoted, [], 'alone in our ring: nothing promoted');
    members.add(B);
    ring.add(B);
    replica.ringChanged();
    await replica.settled;
    await new Promise((r) => setTimeout(r, promoteAfterMs / 3));
    await replica.settled;
    assert.deepEqual(promoted, [], 'not at once when B enters: C may simply not be heard yet');
    // C is never heard: after the period it counts as gone, as for any sender (held-replicas.ts).
    const deadline = Date.now() + 5000;
    while (promoted.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await replica.settled;
    assert.deepEqual(promoted, [url]);
  } finally {
    await outbox.close?.();
    await store.close();
  }
});
