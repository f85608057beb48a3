// Gossipsub's per-message cost (src/mesh/gossip-fast-path.ts, docs/mesh.md "Identity and the node"): the same
// signatures from a cached key, a fast message id equal to StrictSign's, and delivery through a relay and in a
// full mesh, once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { Libp2pOptions } from 'libp2p';
import type { Message } from '@libp2p/interface';
import { tempDir } from './helpers.js';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import { cachedSigningKey, strictSignFastMsgId } from '../src/mesh/gossip-fast-path.js';

type PrivateKey = NonNullable<Libp2pOptions['privateKey']>;

async function until(what: string, cond: () => boolean, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('cachedSigningKey: the same Ed25519 signatures, key bytes and peer id as the key it wraps', async () => {
  const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  const fast = cachedSigningKey(key);
  assert.equal(fast.type, 'Ed25519');
  assert.deepEqual(fast.raw, key.raw);
  assert.ok(fast.equals(key));
  assert.equal(peerIdFromPrivateKey(fast).toString(), peerIdFromPrivateKey(key).toString());
  for (let i = 0; i < 20; i++) {
    const data = randomBytes(1 + i * 37);
    const sig = await fast.sign(data);
    assert.deepEqual(new Uint8Array(sig), new Uint8Array(await key.sign(data)));
    assert.equal(await key.publicKey.verify(data, sig), true);
  }
  // Uint8ArrayList-like input (what libp2p passes in places): signed as its bytes.
  const data = randomBytes(64);
  assert.deepEqual(new Uint8Array(await fast.sign({ subarray: () => data } as unknown as Uint8Array)), new Uint8Array(await key.sign(data)));
  const aborted = AbortSignal.abort();
  assert.throws(() => fast.sign(data, { signal: aborted }));
});

test('strictSignFastMsgId: author and sequence number, unambiguous', () => {
  const from = randomBytes(38);
  const seqno = randomBytes(8);
  const id = strictSignFastMsgId({ from, seqno });
  assert.equal(strictSignFastMsgId({ from: Uint8Array.from(from), seqno: Uint8Array.from(seqno) }), id);
  const other = Uint8Array.from(seqno);
  other[7] ^= 1;
  assert.notEqual(strictSignFastMsgId({ from, seqno: other }), id);
  const otherFrom = Uint8Array.from(from);
  otherFrom[0] ^= 1;
  assert.notEqual(strictSignFastMsgId({ from: otherFrom, seqno }), id);
  // Bytes moved from one field to the other make another id.
  assert.notEqual(strictSignFastMsgId({ from: Uint8Array.of(1, 2), seqno: Uint8Array.of(3) }), strictSignFastMsgId({ from: Uint8Array.of(1), seqno: Uint8Array.of(2, 3) }));
  // A view into a larger buffer reads only its own bytes.
  const big = new Uint8Array(100);
  big.set(from, 10);
  assert.equal(strictSignFastMsgId({ from: big.subarray(10, 48), seqno }), id);
  assert.equal(typeof strictSignFastMsgId({}), 'string');
});

test('with the fast message id, a heartbeat relayed by a member reaches a peer its author is not connected to, once; copies are dropped', async () => {
  const nodes: MeshNode[] = [];
  try {
    for (let i = 0; i < 3; i++) nodes.push(await createMeshNode({ dataDir: tempDir(), gossip: { heartbeatInterval: 200 } }));
    const [a, b, c] = nodes as [MeshNode, MeshNode, MeshNode];
    // a – b – c: c is connected to b only, so a's messages reach c relayed by b (gossipsub's mesh).
    await a.dialPeer(b.addrs()[0]!);
    await c.dialPeer(b.addrs()[0]!);
    const topic = 'fast-path-test';
    const got = nodes.map(() => [] as Array<{ from: string; data: string }>);
    nodes.forEach((n, i) => {
      n.libp2p.services.pubsub.subscribe(topic);
      n.libp2p.services.pubsub.addEventListener('message', (e: CustomEvent<Message>) => {
        const m = e.detail;
        if (m.topic === topic && m.type === 'signed') got[i]!.push({ from: m.from.toString(), data: new TextDecoder().decode(m.data) });
      });
    });
    const meshPeers = (n: MeshNode) => (n.libp2p.services.pubsub as unknown as { getMeshPeers(t: string): string[] }).getMeshPeers(topic);
    await until('b grafted both', () => meshPeers(b).length === 2);
    await a.libp2p.services.pubsub.publish(topic, new TextEncoder().encode('from a'));
    await until('c hears a through b', () => got[2]!.length === 1, 5000);
    assert.deepEqual(got[2], [{ from: a.id, data: 'from a' }]);
    // Now a triangle: every message reaches each peer twice (from its author, relayed by the third) and is delivered once.
    await a.dialPeer(c.addrs()[0]!);
    await until('a and c grafted each other', () => meshPeers(a).includes(c.id) && meshPeers(c).includes(a.id));
    for (let k = 0; k < 5; k++) for (const n of nodes) await n.libp2p.services.pubsub.publish(topic, new TextEncoder().encode(`${k}`));
    await until('every message delivered', () => got.every((g) => g.filter((m) => m.data !== 'from a').length === 10));
    await new Promise((r) => setTimeout(r, 500));
    for (const [i, g] of got.entries()) {
      const keys = g.filter((m) => m.data !== 'from a').map((m) => `${m.from} ${m.data}`);
      assert.equal(new Set(keys).size, keys.length, `node ${i}: nothing delivered twice`);
      assert.equal(keys.length, 10, `node ${i}: the other two nodes' 5 messages each`);
    }
  } finally {
    for (const n of nodes) await n.stop().catch(() => {});
  }
});
