// Gossip membership on real libp2p nodes over loopback, and its pure core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from './helpers.js';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import { Membership, MemberTable, syncRing, type MembershipChange } from '../src/mesh/membership.js';
import { HostRing } from '../src/assign/ring.js';
import { decodeHeartbeat, encodeHeartbeat, membersTopic, MAX_HEARTBEAT_BYTES, type Heartbeat } from '../src/mesh/wire.js';
import { ID_A, ID_B, hb } from './mesh-fixtures.js';

const FAST = { intervalMs: 150, deadAfterMs: 900 };
const GOSSIP = { heartbeatInterval: 200 };


async function until(what: string, cond: () => boolean, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('heartbeat wire format: round trip; strict schema, size limit', () => {
  const h = hb(ID_A, { counters: { fetched: 5, queued: 7, sent: 11, received: 13 }, seq: 42, incarnation: 3, state: 'leaving', capacity: 2.5 });
  const d = decodeHeartbeat(encodeHeartbeat(h));
  assert.deepEqual(d, { ok: true, value: h });
  const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
  const good = JSON.parse(new TextDecoder().decode(encodeHeartbeat(h)));
  const cases: Array<[unknown, string]> = [
    [{ ...good, extra: 1 }, 'schema'],
    [{ ...good, v: 2 }, 'version'],
    [{ ...good, id: 'not base58 0OIl' }, 'schema'],
    [{ ...good, addrs: Array(17).fill('/ip4/1.2.3.4/tcp/1') }, 'schema'],
    [{ ...good, addrs: ['ip4/no-slash'] }, 'schema'],
    [{ ...good, capacity: -1 }, 'schema'],
    [{ ...good, capacity: 'x' }, 'schema'],
    [{ ...good, incarnation: 1.5 }, 'schema'],
    [{ ...good, state: 'gone' }, 'schema'],
    [{ ...good, seq: -1 }, 'schema'],
    [{ ...good, counters: { fetched: 1, queued: 1, sent: 1 } }, 'schema'],
    [{ ...good, counters: { ...good.counters, sent: 2 ** 60 } }, 'schema'],
    [[1, 2], 'schema'],
  ];
  for (const [o, reason] of cases) assert.deepEqual(decodeHeartbeat(enc(o)), { ok: false, reason }, JSON.stringify(o).slice(0, 80));
  assert.deepEqual(decodeHeartbeat(new Uint8Array([0xff, 0xfe])), { ok: false, reason: 'json' });
  assert.deepEqual(decodeHeartbeat(new Uint8Array(MAX_HEARTBEAT_BYTES + 1)), { ok: false, reason: 'oversize' });
});

test('MemberTable: (incarnation, seq) supersedes; dead = silent AND unconnected; tombstones stop stale resurrection', () => {
  const t = new MemberTable(ID_A, { deadAfterMs: 1000, maxMembers: 10 });
  t.setSelf(hb(ID_A), 0);
  assert.equal(t.observe(hb(ID_A, { seq: 99 }), 0), 'stale'); // own echo
  assert.equal(t.observe(hb(ID_B, { seq: 5 }), 0), 'new');
  assert.equal(t.observe(hb(ID_B, { seq: 5 }), 10), 'stale');
  assert.equal(t.observe(hb(ID_B, { seq: 4 }), 10), 'stale');
  assert.equal(t.observe(hb(ID_B, { seq: 6, capacity: 3 }), 100), 'updated');
  assert.equal(t.observe(hb(ID_B, { incarnation: 2, seq: 1 }), 200), 'updated'); // restart: seq starts over
  assert.equal(t.observe(hb(ID_B, { incarnation: 1, seq: 50 }), 200), 'stale');
  assert.deepEqual([...t.ringMembers()].sort(), [[ID_A, 1], [ID_B, 1]].sort());
  // Silent but connected: alive. Silent and unconnected: dead.
  assert.deepEqual(t.sweep(1100, () => true), []);
  assert.deepEqual(t.sweep(1199, () => false), []);
  assert.deepEqual(t.sweep(1201, () => false), [ID_B]);
  assert.equal(t.get(ID_B), undefined);
  assert.equal(t.observe(hb(ID_B, { incarnation: 2, seq: 1 }), 1300), 'stale'); // delayed copy of the dead one
  assert.equal(t.observe(hb(ID_B, { incarnation: 2, seq: 2 }), 1300), 'new'); // it was alive after all
  assert.equal(t.observe(hb(ID_B, { seq: 3, incarnation: 2, state: 'leaving' }), 1400), 'updated');
  assert.deepEqual([...t.ringMembers().keys()], [ID_A]);
  assert.equal(t.all().length, 2);
  const small = new MemberTable(ID_A, { deadAfterMs: 1000, maxMembers: 1 });
  small.setSelf(hb(ID_A), 0);
  assert.equal(small.observe(hb(ID_B), 0), 'full');
});

test('syncRing applies joins, leaves and capacity changes', () => {
  const ring = new HostRing({ replicas: 16 });
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 1], [ID_B, 1]])), { added: [ID_A, ID_B], removed: [], changed: true });
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 1], [ID_B, 1]])), { added: [], removed: [], changed: false });
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 2], [ID_B, 1]])), { added: [], removed: [], changed: true });
  assert.equal(ring.capacityOf(ID_A), 2);
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 2]])), { added: [], removed: [ID_B], changed: true });
});

interface Agent { node: MeshNode; m: Membership; changes: MembershipChange[] }

async function agent(seed?: MeshNode, capacity = 1, dataDir = tempDir(), ringNeedsVouch = false): Promise<Agent> {
  const node = await createMeshNode({ dataDir, gossip: GOSSIP });
  const m = new Membership({ node, crawlId: 'test', capacity, ...FAST, ring: { replicas: 256 }, ringNeedsVouch });
  const changes: MembershipChange[] = [];
  m.on('change', (c) => changes.push(c));
  if (seed) await node.dialPeer(seed.addrs()[0]!);
  await m.start();
  return { node, m, changes };
}

const stopped = new WeakSet<Agent>();
async function shutdown(...as: Agent[]): Promise<void> {
  await Promise.all(as.filter((a) => !stopped.has(a)).map(async (a) => {
    stopped.add(a);
    await a.m.stop();
    await a.node.stop();
  }));
}

test('docs/mesh.md "Membership": three agents meet through one seed, agree on the member set and on every host\'s owner; failure detection drops a stopped agent', async () => {
  const a = await agent();
  const b = await agent(a.node);
  const c = await agent(a.node, 2);
  const all = [a, b, c];
  try {
    const ids = [a.node.id, b.node.id, c.node.id].sort();
    await until('three-member views', () => all.every((x) => x.m.view().join() === ids.join()));
    // c never dialed b: it learned b's address from b's heartbeat and connected.
    await until('full mesh', () => b.node.isConnected(c.node.id) && c.node.isConnected(b.node.id));
    for (const x of all) assert.equal(x.m.ring.capacityOf(c.node.id), 2);
    for (let i = 0; i < 2000; i++) {
      const host = `host${i}.example`;
      const o = a.m.ring.ownerOf(host);
      assert.equal(b.m.ring.ownerOf(host), o);
      assert.equal(c.m.ring.ownerOf(host), o);
    }
    // Counters travel with the heartbeats.
    const seen = a.m.member(b.node.id);
    assert.ok(seen && seen.state === 'active' && seen.incarnation === 1 && seen.seq > 0);

    // Stop c: a and b declare it dead once it has been silent for deadAfterMs (its connections closed). Silent
    // since the last heartbeat each of them heard, which on a loaded machine can be well before the stop.
    await shutdown(c);
    const lastHeard = Math.max(a.m.member(c.node.id)!.lastHeard, b.m.member(c.node.id)!.lastHeard);
    await until('c dropped', () => a.m.view().length === 2 && b.m.view().length === 2);
    const took = Date.now() - lastHeard;
    assert.ok(took >= FAST.deadAfterMs, `dropped ${took} ms after its last heartbeat, before the timeout`);
    assert.deepEqual(a.m.view(), [a.node.id, b.node.id].sort());
    const last = a.changes[a.changes.length - 1]!;
    assert.deepEqual(last.removed, [c.node.id]);
    assert.deepEqual(last.dead, [c.node.id]);
  } finally {
    await shutdown(a, b, c);
  }
});

test('docs/mesh.md "Membership": a leaving agent leaves every ring at once but stays listed as leaving; its restart (higher incarnation) supersedes it', async () => {
  const a = await agent();
  const bDir = tempDir();
  const b = await agent(a.node, 1, bDir);
  let b2: Agent | undefined;
  try {
    await until('two-member views', () => a.m.view().length === 2 && b.m.view().length === 2);
    await b.m.leave();
    assert.deepEqual(b.m.view(), [a.node.id]);
    await until('a drops b from its ring', () => a.m.view().length === 1);
    assert.equal(a.m.member(b.node.id)?.state, 'leaving');
    assert.equal(a.m.ring.ownerOf('example.com'), a.node.id);
    await shutdown(b);
    // Same data dir: same id, incarnation 2, active again at once (no wait for the old state to expire).
    b2 = await agent(a.node, 1, bDir);
    assert.equal(b2.node.id, b.node.id);
    await until('b back in a\'s ring', () => a.m.view().length === 2);
    assert.equal(a.m.member(b.node.id)?.incarnation, 2);
    assert.equal(a.m.member(b.node.id)?.state, 'active');
  } finally {
    await shutdown(a, b, ...(b2 ? [b2] : []));
  }
});

test('membership rejects malformed heartbeats and heartbeats speaking for another peer, and keeps working', async () => {
  const a = await agent();
  const b = await agent(a.node);
  try {
    await until('two-member views', () => a.m.view().length === 2);
    const pubsub = b.node.libp2p.services.pubsub;
    const topic = membersTopic('test');
    await pubsub.publish(topic, new TextEncoder().encode('{"v":1,'));
    await pubsub.publish(topic, new Uint8Array(MAX_HEARTBEAT_BYTES + 10));
    await pubsub.publish(topic, encodeHeartbeat(hb(ID_A, { seq: 1e6 }))); // signed by b, claims to be someone else
    await until('rejections counted', () => (a.m.stats.rejected.json ?? 0) >= 1 && (a.m.stats.rejected.oversize ?? 0) >= 1 && (a.m.stats.rejected.signer ?? 0) >= 1);
    assert.equal(a.m.member(ID_A), undefined);
    const before = a.m.member(b.node.id)!.seq;
    await until('b still heard', () => a.m.member(b.node.id)!.seq > before);
  } finally {
    await shutdown(a, b);
  }
});

test('ringNeedsVouch: a member heard is in no ring until vouched for; the vouch outlives its membership', async () => {
  const a = await agent(undefined, 1, tempDir(), true);
  const b = await agent(a.node, 1, tempDir(), true);
  try {
    await until('members heard', () => a.m.member(b.node.id) !== undefined && b.m.member(a.node.id) !== undefined);
    assert.deepEqual(a.m.view(), [a.node.id], 'a member, but owns nothing in our ring');
    assert.equal(a.m.isVouched(b.node.id), false);
    assert.equal(a.m.isVouched(a.node.id), true, 'we are always in our own ring');
    a.m.vouch(b.node.id);
    assert.deepEqual(a.m.view(), [a.node.id, b.node.id].sort());
    assert.deepEqual(a.changes[a.changes.length - 1]!.added, [b.node.id]);
    assert.deepEqual(b.m.view(), [b.node.id], 'vouching is each agent\'s own decision');
    a.m.vouch('12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq');
    assert.deepEqual(a.m.view(), [a.node.id, b.node.id].sort(), 'an identity that is not a member cannot be vouched for');
    await shutdown(b);
    await until('b dead', () => a.m.view().length === 1);
    assert.equal(a.m.isVouched(b.node.id), true, 'remembered: back (a restart, or a death declared by mistake), it is in our ring at once');
  } finally {
    await shutdown(a, b);
  }
});
