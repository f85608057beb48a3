// A slow first dial (docs/mesh.md "Admission"): on a loaded machine a first connection to a new member takes
// longer than the time a pending identity has to become reachable (2 × dead-after). It used to be dropped
// while the dial was still under way and refused for a cooldown (10 × dead-after) although the connection
// opened a moment later: its heartbeats ignored, its URL batches refused as not from a member, and our
// queue for it stalled until it was left out of our ring. Two agents here reach each other only through a
// loopback proxy that holds every new connection back longer than that.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tempDir } from './helpers.js';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import { Membership, MemberTable } from '../src/mesh/membership.js';
import { ID_A, hb } from './mesh-fixtures.js';

// Pending for at most 2 × 400 = 800 ms, then a cooldown of 4 s; the proxy holds a connection 2 s.
const TIMING = { intervalMs: 150, deadAfterMs: 400 };
const HOLD_MS = 2000;

/** A TCP proxy on loopback to `target` that connects upstream only `holdMs` after a client came (a slow handshake). */
async function slowProxy(targetPort: number, holdMs: number): Promise<{ port: number; server: Server; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.pause();
    const t = setTimeout(() => {
      const up = connect({ host: '127.0.0.1', port: targetPort });
      sockets.add(up);
      up.on('connect', () => { client.pipe(up); up.pipe(client); client.resume(); });
      const end = () => { client.destroy(); up.destroy(); };
      up.on('error', end); client.on('error', end); up.on('close', end); client.on('close', end);
    }, holdMs);
    client.on('close', () => clearTimeout(t));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, server, sockets };
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

interface Agent { node: MeshNode; m: Membership }

test('a member whose first dial outlasts the pending window is admitted once the dial completes, never cooled down', async () => {
  // c: reached directly by both, relays their heartbeats (gossipsub). a and b announce only their slow proxy.
  const c = await createMeshNode({ dataDir: tempDir(), gossip: { heartbeatInterval: 200 } });
  const proxies: Awaited<ReturnType<typeof slowProxy>>[] = [];
  const agents: Agent[] = [];
  const start = async (node: MeshNode): Promise<Agent> => {
    const m = new Membership({ node, crawlId: 'slow', ...TIMING });
    await node.dialPeer(c.addrs()[0]!);
    await m.start();
    const a = { node, m };
    agents.push(a);
    return a;
  };
  const cm = new Membership({ node: c, crawlId: 'slow', ...TIMING, autoDial: false });
  try {
    await cm.start();
    // Listen first, then announce the proxy in front of that port.
    const mk = async () => {
      const probe = await createMeshNode({ dataDir: tempDir() });
      const port = Number(probe.addrs()[0]!.split('/')[4]);
      await probe.stop();
      const proxy = await slowProxy(port, HOLD_MS);
      proxies.push(proxy);
      return createMeshNode({ dataDir: tempDir(), listen: [`/ip4/127.0.0.1/tcp/${port}`], announce: [`/ip4/127.0.0.1/tcp/${proxy.port}`], gossip: { heartbeatInterval: 200 } });
    };
    const [na, nb] = await Promise.all([mk(), mk()]);
    const t0 = Date.now();
    const [a, b] = await Promise.all([start(na), start(nb)]);
    // Each hears the other through c, finds it pending, dials its proxy and waits HOLD_MS for the connection.
    const met = await until(() => a.m.member(b.node.id) !== undefined && b.m.member(a.node.id) !== undefined, HOLD_MS + 2500);
    const took = Date.now() - t0;
    assert.ok(met, `a and b not members of each other ${took} ms after they started (refusals: a ${JSON.stringify(a.m.refusals())}, b ${JSON.stringify(b.m.refusals())})`);
    assert.ok(took >= HOLD_MS - 100, `met after ${took} ms: the proxy did not hold the dial back`);
    for (const x of [a, b]) {
      const r = x.m.refusals();
      assert.equal(r.unreachable ?? 0, 0, `an identity expired while its dial was under way: ${JSON.stringify(r)}`);
      assert.equal(r.cooldown ?? 0, 0, `heartbeats refused as cooldown: ${JSON.stringify(r)}`);
    }
  } finally {
    for (const a of agents) { await a.m.stop(); await a.node.stop(); }
    await cm.stop(); await c.stop();
    for (const p of proxies) { for (const s of p.sockets) s.destroy(); p.server.close(); }
  }
});

test('MemberTable: a connection that opens during a cooldown ends it; a dial under way holds the pending identity', () => {
  const C = '12D3KooWLfE1wAPUBuwK9Tmn6zxS4aZ2c1GcCQNyv1Ge8fNbL6Fz';
  const t = new MemberTable(ID_A, { deadAfterMs: 1000, maxMembers: 8, confirmWithinMs: 2000, cooldownMs: 10_000 });
  t.setSelf(hb(ID_A), 0);
  assert.equal(t.observe(hb(C), 0, false), 'pending');
  // Still being dialed at 2.5 s: kept; the dial failed by 3 s: dropped and cooled down.
  assert.deepEqual(t.expirePending(2500, (id) => id === C), []);
  assert.deepEqual(t.expirePending(3000, () => false), [C]);
  assert.equal(t.admission(hb(C, { seq: 2 }), 3100), 'cooldown');
  assert.equal(t.reachable(ID_A), false);
  // Then it connects (it dialed us, or a slow dial of ours completed): reachable, a new identity again.
  assert.equal(t.reachable(C), true);
  assert.equal(t.admission(hb(C, { seq: 3 }), 3200), 'new');
  assert.equal(t.observe(hb(C, { seq: 3 }), 3200, true), 'new');
});
