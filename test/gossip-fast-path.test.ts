// Gossipsub's per-message cost (src/mesh/gossip-fast-path.ts, docs/mesh.md "Identity and the node"): the same
// signatures from a cached key, a fast message id equal to StrictSign's, no gossip mesh, and a member reached
// through another one still heard (gossip) and still checked.
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

test('no gossip mesh: each message reaches each peer once and directly; a peer we are not connected to is heard through gossip', async () => {
  const nodes: MeshNode[] = [];
  try {
    for (let i = 0; i < 3; i++) nodes.push(await createMeshNode({ dataDir: tempDir(), gossip: { heartbeatInterval: 200 } }));
    const [a, b, c] = nodes as [MeshNode, MeshNode, MeshNode];
    // a – b – c: c is connected to b only.
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
    // Subscriptions exchanged: b knows both peers are in the topic.
    await until('subscriptions', () => b.libp2p.services.pubsub.getSubscribers(topic).length === 2);
    // Let a few gossipsub heartbeats pass: no peer is grafted into a mesh.
    await new Promise((r) => setTimeout(r, 700));
    const meshPeers = (n: MeshNode) => (n.libp2p.services.pubsub as unknown as { getMeshPeers(t: string): string[] }).getMeshPeers(topic);
    for (const n of nodes) assert.deepEqual(meshPeers(n), [], 'no gossip mesh');
    const sent = await a.libp2p.services.pubsub.publish(topic, new TextEncoder().encode('from a'));
    assert.deepEqual(sent.recipients.map(String), [b.id], 'published to the connected peer directly');
    await until('b hears a', () => got[1]!.length === 1);
    // c is not connected to a: it learns of the message from b's IHAVE and fetches it (IWANT), signed by a.
    await until('c hears a through gossip', () => got[2]!.length === 1, 5000);
    assert.deepEqual(got[2], [{ from: a.id, data: 'from a' }]);
    // Nothing is delivered twice, and b relayed nothing back to a.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got[1]!.length, 1);
    assert.equal(got[2]!.length, 1);
    assert.equal(got[0]!.length, 0);
  } finally {
    for (const n of nodes) await n.stop().catch(() => {});
  }
});
