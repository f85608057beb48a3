// The node's connections (docs/mesh.md "Connections").
//
// A peer that runs late: libp2p's connection monitor pings every connection and,
// at its default, aborted one whose ping was unanswered for 5 s — with every stream on it (URL batches in
// flight, gossip). On a loaded machine an agent's event loop (or the relay's) is that late now and then, and
// the mesh lost a connection about once a second; a batch whose ack took longer than a connection lived was
// never acknowledged. A peer in a process of its own here stops answering for 6.5 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers.js';
import { createMeshNode } from '../src/mesh/node.js';

const FIXTURE = fileURLToPath(new URL('./busy-peer-fixture.js', import.meta.url));
const POLYFILL = fileURLToPath(new URL('../src/polyfill.js', import.meta.url));

test('a connection survives a peer that does not answer for 6.5 s (pinged every 0.5 s)', async () => {
  const child = spawn(process.execPath, ['--import', POLYFILL, FIXTURE, tempDir()], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const next = () => new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('the busy peer said nothing for 20 s')), 20_000);
    lines.once('line', (l) => { clearTimeout(t); resolve(l); });
  });
  const a = await createMeshNode({ dataDir: tempDir(), pingIntervalMs: 500 });
  try {
    const addr = await next();
    const peer = await a.dialPeer(addr);
    let closed = 0;
    a.libp2p.addEventListener('connection:close', () => { closed++; });
    // A ping goes out within 0.5 s of the block and waits for the rest of it.
    const done = next();
    child.stdin!.write('block 6500\n');
    assert.equal(await done, 'done');
    await new Promise((r) => setTimeout(r, 1000)); // the pings waiting are answered now
    assert.equal(closed, 0, 'the connection was aborted while the peer was busy');
    assert.ok(a.isConnected(peer));
  } finally {
    child.stdin!.end();
    await new Promise((r) => { child.once('exit', r); setTimeout(() => { child.kill('SIGKILL'); r(undefined); }, 5000).unref(); });
    await a.stop();
  }
});

// All members dial a joiner in the same heartbeat round, and they may share one address (several agents on one
// machine or behind one NAT, and every agent behind the soak's WAN relay): libp2p's default of 5 new inbound
// connections per second from one address reset the others in their handshake.
test('twelve members on one address connect to a joiner at once', async () => {
  const joiner = await createMeshNode({ dataDir: tempDir() });
  const members = await Promise.all(Array.from({ length: 12 }, () => createMeshNode({ dataDir: tempDir() })));
  try {
    const addr = joiner.addrs()[0]!;
    const dials = await Promise.allSettled(members.map((m) => m.dialPeer(addr)));
    const failed = dials.filter((d) => d.status === 'rejected').map((d) => String((d as PromiseRejectedResult).reason));
    assert.deepEqual(failed, [], 'dials refused by the joiner');
  } finally {
    await Promise.all([joiner, ...members].map((n) => n.stop()));
  }
});
