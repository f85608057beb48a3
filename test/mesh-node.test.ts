// The libp2p node: persistent identity, dialing by host:port, private networks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from './helpers.js';
import {
  createMeshNode, parsePeerSpec, writeSwarmKeyFile, generateSwarmKey, checkSwarmKey, type MeshNode,
} from '../src/mesh/node.js';

function portOf(n: MeshNode): number {
  const a = n.addrs()[0]!;
  return Number(a.split('/')[4]);
}

test('docs/mesh.md "Identity and the node": the agent identifier (PeerId) persists in the data dir; incarnation grows per start', async () => {
  const dir = tempDir();
  const a = await createMeshNode({ dataDir: dir });
  const id = a.id;
  assert.equal(a.incarnation, 1);
  await a.stop();
  const b = await createMeshNode({ dataDir: dir });
  try {
    assert.equal(b.id, id);
    assert.equal(b.incarnation, 2);
    assert.match(b.addrs()[0]!, new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${id}$`));
  } finally {
    await b.stop();
  }
  const other = await createMeshNode({ dataDir: tempDir() });
  try {
    assert.notEqual(other.id, id);
  } finally {
    await other.stop();
  }
});

test('parsePeerSpec: multiaddrs, host:port, [v6]:port; anything else is null', () => {
  assert.equal(parsePeerSpec('127.0.0.1:4001')?.toString(), '/ip4/127.0.0.1/tcp/4001');
  assert.equal(parsePeerSpec('[::1]:4001')?.toString(), '/ip6/::1/tcp/4001');
  assert.equal(parsePeerSpec('agent1.example:4001')?.toString(), '/dns/agent1.example/tcp/4001');
  assert.equal(parsePeerSpec('/ip4/10.0.0.1/tcp/9')?.toString(), '/ip4/10.0.0.1/tcp/9');
  for (const bad of ['http://example.com/', 'example.com', '1.2.3.4:0', '1.2.3.4:70000', '300.1.1.1:80', '/not/a/multiaddr', '', 'a b:1']) {
    assert.equal(parsePeerSpec(bad), null, bad);
  }
});

test('dialPeer: host:port and a multiaddr without /p2p/ learn the remote PeerId from the Noise handshake', async () => {
  const a = await createMeshNode({ dataDir: tempDir() });
  const b = await createMeshNode({ dataDir: tempDir() });
  try {
    assert.equal(await b.dialPeer(`127.0.0.1:${portOf(a)}`), a.id);
    assert.ok(b.isConnected(a.id));
    assert.equal(await b.dialPeer(`/ip4/127.0.0.1/tcp/${portOf(a)}`), a.id);
    assert.equal(await b.dialPeer(a.addrs()[0]!), a.id);
    await assert.rejects(b.dialPeer('nonsense'), /not a peer address/);
    await assert.rejects(a.dialPeer(`127.0.0.1:${portOf(a)}`));
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('pnet: only holders of the swarm key connect (libp2p private network)', async () => {
  const dir = tempDir();
  const keyFile = join(dir, 'swarm.key');
  const key = writeSwarmKeyFile(keyFile);
  assert.match(Buffer.from(readFileSync(keyFile)).toString(), /^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}$/);
  assert.equal(key.length, 95);
  const a = await createMeshNode({ dataDir: join(dir, 'a'), swarmKeyFile: keyFile });
  const b = await createMeshNode({ dataDir: join(dir, 'b'), swarmKeyFile: keyFile });
  const open = await createMeshNode({ dataDir: join(dir, 'c'), dialTimeoutMs: 1500 });
  const other = await createMeshNode({ dataDir: join(dir, 'd'), swarmKey: generateSwarmKey(), dialTimeoutMs: 1500 });
  try {
    assert.equal(await b.dialPeer(`127.0.0.1:${portOf(a)}`), a.id);
    await assert.rejects(open.dialPeer(`127.0.0.1:${portOf(a)}`));
    await assert.rejects(other.dialPeer(a.addrs()[0]!));
    await assert.rejects(a.dialPeer(open.addrs()[0]!));
    assert.ok(!a.isConnected(open.id) && !a.isConnected(other.id));
    assert.ok(!open.isConnected(a.id) && !other.isConnected(a.id));
  } finally {
    await Promise.all([a.stop(), b.stop(), open.stop(), other.stop()]);
  }
});

test('swarm key files are checked up front with one clear error', async () => {
  assert.doesNotThrow(() => checkSwarmKey(generateSwarmKey()));
  assert.throws(() => checkSwarmKey(Buffer.from('/key/swarm/psk/1.0.0/\n/base16/\nabc')), /invalid swarm key/);
  const dir = tempDir();
  const bad = join(dir, 'bad.key');
  writeFileSync(bad, 'hello');
  await assert.rejects(createMeshNode({ dataDir: join(dir, 'x'), swarmKeyFile: bad }), /invalid swarm key/);
  await assert.rejects(createMeshNode({ dataDir: join(dir, 'y'), swarmKeyFile: join(dir, 'missing') }), /cannot read the swarm key/);
});
