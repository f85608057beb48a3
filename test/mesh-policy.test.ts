// The crawl policy over real libp2p nodes on loopback: heartbeats carry each
// member's policy summary, the policy topic carries documents, and PolicySync
// (src/policy/sync.ts) brings every member, a late joiner included, to one copy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from './helpers.js';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import { Membership } from '../src/mesh/membership.js';
import { PolicyTopic } from '../src/mesh/policy-topic.js';
import { PolicySync } from '../src/policy/sync.js';
import { activeBlocks, blockTargetOf, emptyPolicy, withBlock, type PolicyScope } from '../src/policy/document.js';
import { decodeHeartbeat, encodeHeartbeat } from '../src/mesh/wire.js';
import { ID_A, hb } from './mesh-fixtures.js';

const SCOPE: PolicyScope = { mode: 'seeds', allowHosts: [], include: [], exclude: [], maxDepth: 0, maxPagesPerHost: 0, acceptTypes: [] };
const quiet = { info: () => {}, warn: () => {} };

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Member { node: MeshNode; m: Membership; sync: PolicySync; topic: PolicyTopic; stored: Uint8Array | undefined }

async function member(seed?: MeshNode): Promise<Member> {
  const node = await createMeshNode({ dataDir: tempDir(), gossip: { heartbeatInterval: 200 } });
  const topic = new PolicyTopic(node, 'test');
  const self: Partial<Member> = { node, topic, stored: undefined };
  const sync = new PolicySync({
    channel: topic, log: quiet, now: Date.now, self: node.id,
    persistence: { load: async () => self.stored, save: async (b) => { self.stored = b; } },
  }, emptyPolicy(SCOPE));
  const m = new Membership({ node, crawlId: 'test', intervalMs: 150, deadAfterMs: 900, ring: { replicas: 64 }, policySummary: () => sync.summary });
  m.on('heartbeat', (info) => sync.heard(info.id, info.policy));
  if (seed) await node.dialPeer(seed.addrs()[0]!);
  sync.start();
  await m.start();
  return Object.assign(self, { m, sync }) as Member;
}

async function shutdown(...ms: Member[]): Promise<void> {
  await Promise.all(ms.map(async (x) => { x.sync.stop(); await x.m.stop(); await x.node.stop(); }));
}

test('heartbeats carry a policy summary; a malformed one is refused', () => {
  const h = hb(ID_A, { policy: '3.0123456789abcdef' });
  assert.deepEqual(decodeHeartbeat(encodeHeartbeat(h)), { ok: true, value: h });
  const without = hb(ID_A);
  assert.deepEqual(decodeHeartbeat(encodeHeartbeat(without)), { ok: true, value: without });
  const bad = JSON.parse(new TextDecoder().decode(encodeHeartbeat(h)));
  for (const policy of ['3', '3.xyz', 7, '1'.repeat(50)]) {
    assert.deepEqual(decodeHeartbeat(new TextEncoder().encode(JSON.stringify({ ...bad, policy }))), { ok: false, reason: 'schema' }, String(policy));
  }
});

test('a block made on one member reaches the others over gossip; a member that joins later gets it from heartbeats', async (t) => {
  const a = await member();
  const b = await member(a.node);
  const all = [a, b];
  t.after(() => shutdown(...all));
  await until('a and b see each other', () => a.m.members().length === 2 && b.m.members().length === 2);
  await b.sync.change((d, _s, now) => withBlock(d, blockTargetOf('takedown.test'), now, 'complaint'));
  await until('a adopts the block', () => activeBlocks(a.sync.current).some((r) => r.value === 'takedown.test'));
  assert.equal(a.sync.summary, b.sync.summary);
  assert.ok(a.stored, 'the adopted policy is stored');

  const c = await member(a.node);
  all.push(c);
  await until('the joiner holds the same policy', () => c.sync.summary === a.sync.summary);
  assert.deepEqual(activeBlocks(c.sync.current).map((r) => [r.value, r.reason]), [['takedown.test', 'complaint']]);
  assert.ok(c.sync.stats.requested + a.sync.stats.published + b.sync.stats.published > 1, 'it came by a repair, not the first publication');
});
