// Mesh admission (docs/mesh.md "Admission"): who may listen where, what a
// heartbeat may claim, how fast identities and heartbeats are admitted, and
// gossipsub scoring of peers relaying invalid heartbeats. Real libp2p nodes on
// 127.0.0.1 only; a "hostile" node is a plain mesh node driven by the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, spawnAgent, tempDir, waitUntil } from './helpers.js';
import { checkSwarmKey, createMeshNode, isLoopbackListen, meshExposureError, type MeshNode } from '../src/mesh/node.js';
import { Membership, MemberTable, TokenBucket, WindowCounter, dialableAddrs, type MembershipChange } from '../src/mesh/membership.js';
import { encodeHeartbeat, membersTopic, type Heartbeat } from '../src/mesh/wire.js';
import { AgentMetrics } from '../src/api/metrics.js';
import type { MeshAdmissionConfig } from '../src/config.js';
import { ID_A, ID_B, hb } from './mesh-fixtures.js';

const GOSSIP = { heartbeatInterval: 200 };

async function until(what: string, cond: () => boolean, ms = 8000): Promise<void> {
  if (!(await waitUntil(cond, ms, 20))) throw new Error(`timed out waiting for ${what}`);
}

function run(args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000 });
}

// ---------------------------------------------------------------- listening and keys

test('listen policy: loopback needs nothing; beyond loopback needs a swarm key or --open-mesh', () => {
  for (const a of ['/ip4/127.0.0.1/tcp/4001', '/ip4/127.9.8.7/tcp/0', '/ip6/::1/tcp/4001', '/dns4/localhost/tcp/1', '/ip6/::ffff:127.0.0.1/tcp/1']) {
    assert.equal(isLoopbackListen(a), true, a);
  }
  for (const a of ['/ip4/0.0.0.0/tcp/4001', '/ip6/::/tcp/4001', '/ip4/10.0.0.5/tcp/4001', '/ip4/192.168.1.2/tcp/1', '/dns4/example.org/tcp/1', '/ip6/fe80::1/tcp/1', 'garbage']) {
    assert.equal(isLoopbackListen(a), false, a);
  }
  assert.equal(meshExposureError(['/ip4/127.0.0.1/tcp/4001'], { swarmKey: false, openMesh: false }), null);
  const err = meshExposureError(['/ip4/127.0.0.1/tcp/1', '/ip4/0.0.0.0/tcp/4001'], { swarmKey: false, openMesh: false });
  assert.ok(err && !err.includes('\n') && err.includes('ubicrawl keygen') && err.includes('/ip4/0.0.0.0/tcp/4001') && !err.includes('127.0.0.1'), String(err));
  assert.equal(meshExposureError(['/ip4/0.0.0.0/tcp/4001'], { swarmKey: true, openMesh: false }), null);
  assert.equal(meshExposureError(['/ip4/0.0.0.0/tcp/4001'], { swarmKey: false, openMesh: true }), null);
  assert.match(meshExposureError(['0.0.0.0:4001'], { swarmKey: true, openMesh: false }) ?? '', /not a multiaddr/);
});

test('createMeshNode refuses a non-loopback listen address without a key or openMesh', async () => {
  await assert.rejects(createMeshNode({ dataDir: tempDir(), listen: ['/ip4/0.0.0.0/tcp/0'] }), /ubicrawl keygen/);
});

test('join --listen 0.0.0.0 without a key exits 2 with one line naming keygen, before anything starts; with --open-mesh it starts', async () => {
  const dir = tempDir();
  const data = join(dir, 'data');
  const r = run(['join', '--data-dir', data, '--listen', '/ip4/0.0.0.0/tcp/0', '--progress', 'off']);
  assert.equal(r.status, 2, r.stderr);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /ubicrawl keygen FILE/);
  assert.match(lines[0]!, /--open-mesh/);
  assert.equal(existsSync(data), false, 'nothing started: no data dir');
  assert.equal(r.stdout, '');

  // Listening on 0.0.0.0 is fine on this machine (nothing is dialed): the agent starts.
  const a = spawnAgent(['join', '--data-dir', data, '--listen', '/ip4/0.0.0.0/tcp/0', '--open-mesh', '--progress', 'log', '--log-level', 'info']);
  try {
    await until('agent started', () => a.stderr.includes('agent started') || a.proc.exitCode !== null, 20_000);
    assert.ok(a.stderr.includes('agent started'), a.stderr.slice(0, 2000));
  } finally {
    a.proc.kill('SIGKILL');
    await a.closed;
  }
});

test('keygen writes a valid swarm key with mode 0600 and refuses to overwrite without --force; --capacity is range-checked', () => {
  const dir = tempDir();
  const file = join(dir, 'swarm.key');
  const r = run(['keygen', file]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const key = readFileSync(file);
  checkSwarmKey(key);
  const again = run(['keygen', file]);
  assert.equal(again.status, 2);
  assert.equal(again.stderr.trim().split('\n').length, 1, again.stderr);
  assert.match(again.stderr, /exists/);
  assert.deepEqual(readFileSync(file), key, 'not overwritten');
  const forced = run(['keygen', '--force', file]);
  assert.equal(forced.status, 0, forced.stderr);
  checkSwarmKey(readFileSync(file));
  assert.notDeepEqual(readFileSync(file), key);
  for (const cap of ['0.5', '17', '1e6', 'x']) {
    const c = run(['join', '--capacity', cap, '--data-dir', join(dir, 'd')]);
    assert.equal(c.status, 2, `--capacity ${cap}: ${c.stderr}`);
    assert.match(c.stderr, /--capacity must be a number from 1 to 16/);
  }
});

test('a node with a swarm key may listen on 0.0.0.0', async () => {
  const dir = tempDir();
  const r = run(['keygen', join(dir, 'k')]);
  assert.equal(r.status, 0, r.stderr);
  const node = await createMeshNode({ dataDir: dir, listen: ['/ip4/0.0.0.0/tcp/0'], swarmKeyFile: join(dir, 'k') });
  await node.stop();
});

// ---------------------------------------------------------------- pure cores

test('MemberTable: identities wait in pending until reachable; unreachable ones expire into a cooldown; all maps bounded', () => {
  const t = new MemberTable(ID_A, { deadAfterMs: 1000, maxMembers: 3, maxTombstones: 2, confirmWithinMs: 2000, cooldownMs: 10_000 });
  t.setSelf(hb(ID_A), 0);
  assert.equal(t.observe(hb(ID_B), 0, false), 'pending');
  assert.equal(t.get(ID_B), undefined);
  assert.deepEqual([...t.ringMembers().keys()], [ID_A]);
  assert.equal(t.observe(hb(ID_B, { seq: 2 }), 500, false), 'pending');
  assert.equal(t.observe(hb(ID_B, { seq: 3 }), 900, true), 'new'); // a connection admits it
  assert.deepEqual([...t.ringMembers().keys()].sort(), [ID_A, ID_B].sort());
  // Never reachable: dropped after confirmWithinMs, refused for cooldownMs even with newer heartbeats.
  const C = '12D3KooWLfE1wAPUBuwK9Tmn6zxS4aZ2c1GcCQNyv1Ge8fNbL6Fz';
  assert.equal(t.observe(hb(C), 1000, false), 'pending');
  assert.equal(t.observe(hb('12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq'), 1000, false), 'full');
  for (let now = 1000; now <= 2900; now += 200) t.observe(hb(C, { seq: now }), now, false); // keeps talking, never connects
  assert.deepEqual(t.expirePending(2900), []);
  assert.deepEqual(t.expirePending(3001), [C]);
  assert.equal(t.admission(hb(C, { seq: 9999 }), 5000), 'cooldown');
  assert.equal(t.observe(hb(C, { seq: 9999 }), 5000, true), 'cooldown');
  assert.equal(t.admission(hb(C, { seq: 9999 }), 13_002), 'new');
  // A graylisted (ignored) member whose connection stays open is dead after maxSilenceMs (4 × deadAfterMs).
  assert.deepEqual(t.sweep(900 + 3999, () => true), []);
  assert.deepEqual(t.sweep(900 + 4001, () => true), [ID_B]);
  const s = t.sizes();
  assert.ok(s.tombstones <= 2 && s.cooldown <= 2 && s.members + s.pending <= 3, JSON.stringify(s));
});

test('TokenBucket and WindowCounter', () => {
  const b = new TokenBucket(2, 1 / 100, 0);
  assert.deepEqual([b.take(0), b.take(0), b.take(0)], [true, true, false]);
  assert.equal(b.take(99), false);
  assert.equal(b.take(101), true);
  const w = new WindowCounter(100, 2);
  assert.deepEqual([w.hit('a', 0), w.hit('a', 10), w.hit('a', 20), w.hit('b', 20)], [true, true, false, true]);
  assert.equal(w.hit('a', 100), true);
  w.retain((k) => k === 'b');
  assert.equal(w.size, 1);
});

test('dialableAddrs: TCP addresses of the member itself only, at most 8', () => {
  const other = ID_B;
  const addrs = [
    '/ip4/127.0.0.1/tcp/4001',
    `/ip4/127.0.0.1/tcp/4002/p2p/${ID_A}`,
    `/ip4/127.0.0.1/tcp/4003/p2p/${other}`, // names someone else
    '/ip4/127.0.0.1/udp/53', '/ip4/127.0.0.1/tcp/0', '/unix/tmp/x', '/ip4/127.0.0.1/tcp/80/http',
    ...Array.from({ length: 12 }, (_, i) => `/ip4/127.0.0.1/tcp/${5000 + i}`),
  ];
  const out = dialableAddrs({ id: ID_A, addrs }).map(String);
  assert.equal(out.length, 8);
  assert.equal(out[0], `/ip4/127.0.0.1/tcp/4001/p2p/${ID_A}`);
  assert.equal(out[1], `/ip4/127.0.0.1/tcp/4002/p2p/${ID_A}`);
  for (const a of out) assert.ok(a.endsWith(`/p2p/${ID_A}`) && !a.includes('/tcp/0/') && !a.includes('4003'), a);
});

test('metrics: peer labels bounded and limited to current members; refused heartbeats by reason', async () => {
  const m = new AgentMetrics({ defaultMetrics: false, maxPeerLabels: 8 });
  for (let i = 0; i < 30; i++) m.urlsReceived(`peer${i}`, 1);
  assert.ok(m.peerLabelCount <= 8, String(m.peerLabelCount));
  let text = await m.render();
  assert.match(text, /urls_received_total\{peer="other"\} 23/);
  m.retainPeers(['peer1', 'peer2']);
  m.urlsReceived('peer29', 1);
  m.urlsReceived('peer2', 1);
  text = await m.render();
  const peers = new Set([...text.matchAll(/urls_received_total\{peer="([^"]+)"\}/g)].map((x) => x[1]));
  assert.deepEqual([...peers].sort(), ['other', 'peer1', 'peer2']);
  m.heartbeatsRefusedTotals({ capacity: 3 });
  m.heartbeatsRefusedTotals({ capacity: 5, rate: 1 });
  text = await m.render();
  assert.match(text, /mesh_heartbeats_refused_total\{reason="capacity"\} 5/);
  assert.match(text, /mesh_heartbeats_refused_total\{reason="rate"\} 1/);
});

// ---------------------------------------------------------------- real nodes

const FAST = { intervalMs: 150, deadAfterMs: 900 };

interface Agent { node: MeshNode; m: Membership; changes: MembershipChange[] }

async function agent(seed?: MeshNode, o: { admission?: Partial<MeshAdmissionConfig>; intervalMs?: number; deadAfterMs?: number; autoDial?: boolean } = {}): Promise<Agent> {
  const node = await createMeshNode({ dataDir: tempDir(), gossip: GOSSIP, crawlId: 'adm' });
  const m = new Membership({ node, crawlId: 'adm', ...FAST, ...o, ring: { replicas: 64 } });
  const changes: MembershipChange[] = [];
  m.on('change', (c) => changes.push(c));
  if (seed) await node.dialPeer(seed.addrs()[0]!);
  await m.start();
  return { node, m, changes };
}

/** A node the test drives by hand: connected to `target`, publishing whatever it is told on the members topic. */
async function hostile(target: MeshNode): Promise<{ node: MeshNode; publish(data: Uint8Array): Promise<void>; heartbeat(over: Partial<Heartbeat>): Promise<void> }> {
  const node = await createMeshNode({ dataDir: tempDir(), gossip: GOSSIP, crawlId: 'adm' });
  await node.dialPeer(target.addrs()[0]!);
  const topic = membersTopic('adm');
  const pubsub = node.libp2p.services.pubsub;
  await until('hostile sees the target subscribed', () => pubsub.getSubscribers(topic).some((p) => p.toString() === target.id));
  const publish = async (data: Uint8Array) => { await pubsub.publish(topic, data); };
  return {
    node, publish,
    heartbeat: (over) => publish(encodeHeartbeat({ ...hb(node.id, { addrs: node.addrs() }), ...over })),
  };
}

async function shutdown(...as: Array<{ m?: Membership; node: MeshNode } | undefined>): Promise<void> {
  await Promise.all(as.map(async (a) => {
    if (!a) return;
    await a.m?.stop().catch(() => {});
    await a.node.stop().catch(() => {});
  }));
}

test('a heartbeat claiming capacity 1e6 (or 0, or 17) is rejected, counted, and never reaches a ring; the same peer with capacity 2 is admitted', async () => {
  const a = await agent();
  const b = await agent(a.node);
  let h: Awaited<ReturnType<typeof hostile>> | undefined;
  try {
    await until('two-member views', () => a.m.view().length === 2 && b.m.view().length === 2);
    h = await hostile(a.node);
    await h.heartbeat({ capacity: 1e6, seq: 1 });
    await h.heartbeat({ capacity: 0, seq: 2 });
    await h.heartbeat({ capacity: 17, seq: 3 });
    await until('capacity rejections counted', () => (a.m.stats.rejected.capacity ?? 0) >= 3);
    const hid = h.node.id;
    assert.equal(a.m.member(hid), undefined);
    assert.ok(!a.m.view().includes(hid) && !b.m.view().includes(hid));
    assert.equal(a.m.refusals().capacity, 3);
    // Same peer, same connection, a capacity in range: admitted at once (the refusal was the capacity).
    await h.heartbeat({ capacity: 2, seq: 4 });
    await until('admitted with capacity 2', () => a.m.ring.capacityOf(hid) === 2);
    for (const c of a.changes) for (const id of c.added) if (id === hid) assert.equal(a.m.ring.capacityOf(id), 2);
  } finally {
    await shutdown(h, a, b);
  }
});

test('a heartbeat flood from one member is rate-limited (ignored, counted) without costing it score', async () => {
  const a = await agent(undefined, { admission: { heartbeatsPerInterval: 4 } });
  let h: Awaited<ReturnType<typeof hostile>> | undefined;
  try {
    h = await hostile(a.node);
    const started = Date.now();
    const n = 80;
    for (let i = 1; i <= n; i++) await h.heartbeat({ seq: i });
    await until('flood processed', () => a.m.stats.received + (a.m.stats.ignored.rate ?? 0) >= n);
    const windows = Math.ceil((Date.now() - started) / FAST.intervalMs) + 1;
    assert.ok(a.m.stats.received <= 4 * windows, `accepted ${a.m.stats.received} in ${windows} windows`);
    assert.ok((a.m.stats.ignored.rate ?? 0) >= n - 4 * windows, JSON.stringify(a.m.stats.ignored));
    assert.ok(a.m.member(h.node.id), 'the flooding member itself is still a member');
    assert.ok(a.node.libp2p.services.pubsub && (a.node.libp2p.services.pubsub as unknown as { getScore(id: string): number }).getScore(h.node.id) >= 0);
    assert.ok(a.m.sizes().rateKeys <= 2);
  } finally {
    await shutdown(h, a);
  }
});

test('gossipsub scoring: a peer relaying invalid heartbeats ends graylisted and its further heartbeats are ignored; honest peers keep score 0', async () => {
  const a = await agent(undefined, { deadAfterMs: 500 });
  // b does not dial the hostile node: it would relay the hostile node's valid heartbeats to a (scoring judges relayers).
  const b = await agent(a.node, { deadAfterMs: 500, autoDial: false });
  let h: Awaited<ReturnType<typeof hostile>> | undefined;
  try {
    await until('two-member views', () => a.m.view().length === 2 && b.m.view().length === 2);
    h = await hostile(a.node);
    const hid = h.node.id;
    await h.heartbeat({ seq: 1 });
    await until('hostile admitted first', () => a.m.member(hid)?.seq === 1);
    const score = (id: string) => (a.node.libp2p.services.pubsub as unknown as { getScore(id: string): number }).getScore(id);
    assert.equal(score(hid), 0);
    for (let i = 0; i < 20; i++) await h.publish(new TextEncoder().encode(`{"v":1,"garbage":${i}`));
    await until('hostile graylisted at a', () => score(hid) < -80);
    // gossipsub accepts RPCs of a peer that scored ≥ 0 for up to 1 s without
    // rescoring it (ACCEPT_FROM_WHITELIST_DURATION_MS): let that pass.
    const bAt = a.m.member(b.node.id)!.seq;
    await until('the acceptance window passed', () => a.m.member(b.node.id)!.seq >= bAt + 9);
    const rejected = a.m.stats.rejected.json ?? 0;
    assert.ok(rejected >= 10, JSON.stringify(a.m.stats.rejected));
    // Now neither a valid heartbeat nor garbage is even validated, while a keeps hearing b.
    await h.heartbeat({ seq: 2 });
    await h.publish(new TextEncoder().encode('{"v":1,"more garbage"'));
    const bSeq = a.m.member(b.node.id)!.seq;
    await until('b heard three more times', () => a.m.member(b.node.id)!.seq >= bSeq + 3);
    assert.equal(a.m.member(hid)?.seq ?? 1, 1, 'the graylisted peer\'s heartbeat was ignored');
    assert.equal(a.m.stats.rejected.json ?? 0, rejected, 'nor was its garbage validated');
    assert.ok(score(b.node.id) >= 0, `honest b's score ${score(b.node.id)}`);
    // Its connection stays open, but silence beyond 4 × deadAfterMs drops it all the same.
    await until('graylisted peer dropped', () => a.m.member(hid) === undefined, 5000);
    assert.deepEqual(a.m.view(), [a.node.id, b.node.id].sort());
  } finally {
    await shutdown(h, a, b);
  }
});

test('a churn of 30 fresh identities leaves the member table, per-peer state and metrics bounded and the honest rings back to the honest set', async (t) => {
  // One new identity per 2 s after a burst of 2 (newMembersPerInterval 0.05 at 100 ms intervals).
  const admission: Partial<MeshAdmissionConfig> = { newMembersBurst: 2, newMembersPerInterval: 0.05, maxMembers: 12 };
  const o = { admission, intervalMs: 100, deadAfterMs: 600 };
  const a = await agent(undefined, o);
  const b = await agent(a.node, o);
  const metrics = new AgentMetrics({ defaultMetrics: false, maxPeerLabels: 16 });
  const churned = new Set<string>();
  const live = new Set<{ node: MeshNode }>();
  let dialFailures = 0;
  const maxSizes = { members: 0, pending: 0, rateKeys: 0, dialKeys: 0 };
  const sample = setInterval(() => {
    for (const x of [a, b]) {
      const s = x.m.sizes();
      for (const k of Object.keys(maxSizes) as Array<keyof typeof maxSizes>) maxSizes[k] = Math.max(maxSizes[k], s[k]);
    }
    metrics.retainPeers(a.m.members().filter((m) => !m.self).map((m) => m.id.slice(-12)));
    metrics.heartbeatsRefusedTotals(a.m.refusals());
  }, 25);
  try {
    await until('two-member views', () => a.m.view().length === 2 && b.m.view().length === 2);
    const honest = [a.node.id, b.node.id].sort();
    const started = Date.now();
    const lives: Array<Promise<void>> = [];
    // Under 5 per second: libp2p itself accepts at most 5 inbound connections per second from one host.
    for (let i = 0; i < 30; i++) {
      lives.push((async () => {
        let c: Awaited<ReturnType<typeof hostile>>;
        try {
          c = await hostile(a.node);
        } catch {
          dialFailures++;
          return;
        }
        live.add(c);
        churned.add(c.node.id);
        metrics.urlsReceived(c.node.id.slice(-12), 1); // as if it had sent us something
        // Heartbeats every 100 ms for 0.7 s, then gone.
        for (let seq = 1; seq <= 7; seq++) {
          await c.heartbeat({ seq });
          await new Promise((r) => setTimeout(r, 100));
        }
        await shutdown(c);
        live.delete(c);
      })());
      await new Promise((r) => setTimeout(r, 220));
    }
    await Promise.all(lives);
    const elapsedS = (Date.now() - started) / 1000;
    t.diagnostic(`churn: ${churned.size} identities in ${elapsedS.toFixed(1)} s, ${new Set(a.changes.flatMap((c) => c.added).filter((id) => churned.has(id))).size} entered a's ring; refused ${JSON.stringify(a.m.refusals())}; peak sizes ${JSON.stringify(maxSizes)}`);
    assert.ok(dialFailures <= 5, `${dialFailures} churn nodes could not connect`);
    const enteredRing = new Set(a.changes.flatMap((c) => c.added).filter((id) => churned.has(id)));
    assert.ok(enteredRing.size <= 2 + Math.ceil(elapsedS / 2) + 1, `${enteredRing.size} of ${churned.size} churn identities entered a's ring in ${elapsedS} s`);
    assert.ok((a.m.stats.ignored.admission ?? 0) > 0, JSON.stringify({ stats: a.m.stats, churned: churned.size, entered: enteredRing.size, maxSizes, elapsedS }));
    assert.ok(maxSizes.members + maxSizes.pending <= 12 && maxSizes.rateKeys <= 12 + 4 && maxSizes.dialKeys <= 12, JSON.stringify(maxSizes));
    // Back to the honest set on both, in agreement.
    await until('rings back to the honest set', () => a.m.view().join() === honest.join() && b.m.view().join() === honest.join(), 6000);
    for (let i = 0; i < 500; i++) assert.equal(a.m.ring.ownerOf(`h${i}.test`), b.m.ring.ownerOf(`h${i}.test`));
    await until('per-peer state pruned', () => a.m.sizes().members === 2 && a.m.sizes().rateKeys <= 2 && a.m.sizes().dialKeys <= 2, 10_000);
    metrics.retainPeers(a.m.members().filter((m) => !m.self).map((m) => m.id.slice(-12)));
    assert.ok(metrics.peerLabelCount <= 2, `peer labels after the churn: ${metrics.peerLabelCount}`);
    const text = await metrics.render();
    assert.match(text, /mesh_heartbeats_refused_total\{reason="admission"\} [1-9]/);
    const s = a.m.sizes();
    assert.ok(s.tombstones <= 30 && s.cooldown <= 30, JSON.stringify(s));
  } finally {
    clearInterval(sample);
    await shutdown(...live, a, b);
  }
});
