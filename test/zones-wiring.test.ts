// Zones wired into the agent (docs/mesh.md "Zones"): heartbeats carry the
// zone, the membership ring follows it, the handoff rings remember it, the
// options set it, and batches to another zone are formed otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { HostRing } from '../src/assign/ring.js';
import { ZonedRing, copyRing, parseZoneRule, zoneRulesDigest } from '../src/assign/zones.js';
import { syncRing } from '../src/mesh/membership.js';
import { decodeHeartbeat, encodeHeartbeat } from '../src/mesh/wire.js';
import { ringIdOf } from '../src/crawl/handoff.js';
import { RecentRings } from '../src/crawl/recent-rings.js';
import { ZoneView } from '../src/crawl/zone-view.js';
import { buildProgram } from '../src/cli/main.js';
import { toAgentOptions } from '../src/cli/options.js';
import { resolveConfig } from '../src/config.js';
import { createMeshNode } from '../src/mesh/node.js';
import { Outbox, type OutboxDb } from '../src/mesh/outbox.js';
import { UrlExchange } from '../src/mesh/exchange.js';
import type { MemberInfo } from '../src/mesh/index.js';
import { AgentMetrics } from '../src/api/metrics.js';
import { tempDir } from './helpers.js';
import { ID_A, ID_B, hb } from './mesh-fixtures.js';

const ID_C = '12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo';
const hosts = (n: number) => Array.from({ length: n }, (_, i) => `h${i}.example${i % 13}.test`);

test('heartbeats carry the zone, its weight and the rules digest only when set; bad values are refused', () => {
  const plain = hb(ID_A);
  const bytes = encodeHeartbeat(plain);
  assert.doesNotMatch(Buffer.from(bytes).toString(), /zone/, 'no zone anywhere: the heartbeat is as before');
  const d0 = decodeHeartbeat(bytes);
  assert.ok(d0.ok);
  assert.equal(d0.value.zone, undefined);
  const digest = zoneRulesDigest([parseZoneRule('.de=eu')])!;
  assert.match(digest, /^[0-9a-f]{16}$/);
  const zoned = { ...plain, zone: 'eu', zoneWeight: 3, zoneRules: digest };
  const d1 = decodeHeartbeat(encodeHeartbeat(zoned));
  assert.ok(d1.ok);
  assert.equal(d1.value.zone, 'eu');
  assert.equal(d1.value.zoneWeight, 3);
  assert.equal(d1.value.zoneRules, digest);
  const raw = (o: Record<string, unknown>) => decodeHeartbeat(new TextEncoder().encode(JSON.stringify({ ...JSON.parse(Buffer.from(bytes).toString()), ...o })));
  for (const bad of [{ zone: 'EU!' }, { zone: '' }, { zone: 'x'.repeat(40) }, { zoneWeight: 0 }, { zoneWeight: 1e9 }, { zoneWeight: 'big' }, { zoneRules: 'nothex' }]) {
    const d = raw(bad);
    assert.ok(!d.ok && d.reason === 'schema', JSON.stringify(bad));
  }
  assert.equal(zoneRulesDigest([]), undefined);
  assert.notEqual(zoneRulesDigest([parseZoneRule('.de=eu'), parseZoneRule('.jp=ap')]), zoneRulesDigest([parseZoneRule('.de=eu')]));
});

test('syncRing puts members in their zones; a zone or weight change is applied as a change, not a join', () => {
  const ring = new ZonedRing({ replicas: 64 });
  const zones = new Map([[ID_A, { zone: 'eu', weight: 1 }], [ID_B, { zone: 'us', weight: 1 }]]);
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 1], [ID_B, 1]]), (id) => zones.get(id)!), { added: [ID_A, ID_B], removed: [], changed: true });
  assert.equal(ring.memberZone(ID_A), 'eu');
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 1], [ID_B, 1]]), (id) => zones.get(id)!), { added: [], removed: [], changed: false });
  zones.set(ID_B, { zone: 'us', weight: 2 });
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 1], [ID_B, 1]]), (id) => zones.get(id)!), { added: [], removed: [], changed: true });
  assert.equal(ring.zoneWeights().get('us'), 2);
  zones.set(ID_B, { zone: 'eu', weight: 1 });
  assert.deepEqual(syncRing(ring, new Map([[ID_A, 1], [ID_B, 1]]), (id) => zones.get(id)!), { added: [], removed: [], changed: true });
  assert.deepEqual(ring.zoneMembers(), new Map([['eu', [ID_A, ID_B].sort()]]));
});

test('handoff rings: the ring id is unchanged without zones and names the zones with them; recent rings keep zones and rules across a restart', () => {
  const plain = new HostRing({ replicas: 64 });
  const zonedDefault = new ZonedRing({ replicas: 64 });
  for (const id of [ID_A, ID_B]) { plain.add(id, 1); zonedDefault.add(id, 1); }
  assert.equal(ringIdOf(zonedDefault), ringIdOf(plain), 'no zone: the same ring id as before zones');
  const rules = [parseZoneRule('.de=eu')];
  const zoned = new ZonedRing({ replicas: 64 }, rules);
  zoned.add(ID_A, 1, 'eu');
  zoned.add(ID_B, 1, 'us');
  zoned.add(ID_C, 1, 'us');
  assert.notEqual(ringIdOf(zoned), ringIdOf(plain));
  const copy = copyRing(zoned);
  assert.equal(ringIdOf(copy), ringIdOf(zoned));
  for (const h of [...hosts(500), 'shop.example.de']) assert.equal(copy.ownerOf(h), zoned.ownerOf(h));
  assert.equal(copy.ownerOf('shop.example.de'), ID_A, 'the copy applies the rules');

  const recent = new RecentRings();
  recent.push(zoned);
  const saved = JSON.parse(JSON.stringify(recent.toJSON()));
  const plainRecent = new RecentRings();
  plainRecent.push(plain);
  assert.deepEqual(plainRecent.toJSON(), [[[ID_A, 1], [ID_B, 1]].sort((a, b) => (a[0]! < b[0]! ? -1 : 1))], 'no zone: the saved form is as before');
  const restored = new RecentRings();
  restored.restore(saved, { replicas: 64, rules });
  for (const h of [...hosts(300), 'shop.example.de']) {
    const owner = zoned.ownerOf(h)!;
    assert.ok(restored.owned(owner, h), `${h}: ${owner} owned it under the restored ring`);
    for (const other of [ID_A, ID_B, ID_C]) if (other !== owner) assert.ok(!restored.owned(other, h), `${h}: ${other} did not`);
  }
});

test('the successor inside the zone: nextOwnersInZone never leaves it; nextOwnersOf goes on to the other zones', () => {
  const r = new ZonedRing({ replicas: 128 });
  r.add('eu-1', 1, 'eu');
  r.add('eu-2', 1, 'eu');
  r.add('us-1', 1, 'us');
  for (const h of hosts(400)) {
    const zone = r.zoneOf(h)!;
    const inZone = r.nextOwnersInZone(h, 3);
    assert.equal(inZone[0], r.ownerOf(h));
    for (const id of inZone) assert.equal(r.memberZone(id), zone);
    assert.equal(inZone.length, zone === 'eu' ? 2 : 1);
    const all = r.nextOwnersOf(h, 3);
    assert.deepEqual(all.slice(0, inZone.length), inZone);
    assert.equal(all.length, 3);
  }
});

test('ZoneView: members, owners, shares and forwarded URLs per zone; batches to another zone follow the cross-zone policy', () => {
  const ring = new ZonedRing({ replicas: 64 });
  ring.add(ID_A, 1, 'eu');
  ring.add(ID_B, 1, 'us');
  const digest = zoneRulesDigest([parseZoneRule('.de=eu')]);
  const members: MemberInfo[] = [
    { ...hb(ID_A), zone: 'eu', zoneRules: digest, self: true, lastHeard: 0 },
    { ...hb(ID_B), zone: 'us', zoneRules: digest, self: false, lastHeard: 0 },
    { ...hb(ID_C), zone: 'us', self: false, lastHeard: 0 }, // joining (not in the ring), and without our rules
  ];
  const byId = new Map(members.map((m) => [m.id, m]));
  const cross = { lingerMs: 500, maxUrls: 2000, maxBytes: 1 << 20 };
  const v = new ZoneView({ zone: 'eu', rulesDigest: digest, crossZone: cross }, (id) => byId.get(id));
  assert.equal(v.batchPolicy(ID_A), undefined);
  assert.deepEqual(v.batchPolicy(ID_B), cross);
  assert.equal(v.newRulesMismatch(byId.get(ID_B)!), false, 'same rules');
  assert.equal(v.newRulesMismatch(byId.get(ID_C)!), true, 'other rules: reported once');
  assert.equal(v.newRulesMismatch(byId.get(ID_C)!), false);
  assert.equal(v.newRulesMismatch({ id: ID_C, zoneRules: 'ffffffffffffffff' }), true, 'another list again: reported again');
  v.noteForwarded(ID_B, 7);
  v.noteForwarded(ID_C, 3);
  v.noteForwarded(ID_A, 2);
  assert.equal(v.crossZoneForwarded, 10);
  byId.delete(ID_C); // gone: its last known zone still counts
  v.noteForwarded(ID_C, 1);
  assert.deepEqual(v.report(ring, members), [
    { zone: 'eu', members: 1, owners: 1, share: 0.5, self: true, forwarded: 2, rulesMismatch: 0 },
    { zone: 'us', members: 2, owners: 1, share: 0.5, self: false, forwarded: 11, rulesMismatch: 1 },
  ]);
});

test('options: --zone, --zone-weight, --zone-rule (repeatable, checked), --cross-zone-linger; none given = no zone', () => {
  const parse = (args: string[]) => {
    const program = buildProgram();
    const j = program.commands.find((c) => c.name() === 'join')!;
    j.action(() => {});
    program.exitOverride();
    j.exitOverride();
    j.configureOutput({ writeErr: () => {} });
    program.parse(['join', ...args], { from: 'user' });
    return resolveConfig(toAgentOptions(j.opts())).mesh;
  };
  const none = parse([]);
  assert.equal(none.zone, '');
  assert.equal(none.zoneWeight, 1);
  assert.deepEqual(none.zoneRules, []);
  assert.equal(none.crossZoneLingerMs, 500);
  const m = parse(['--zone', 'EU-West', '--zone-weight', '2.5', '--zone-rule', '.de=eu-west', '--zone-rule', '10.0.0.0/8=eu-west', '--cross-zone-linger', '1s']);
  assert.equal(m.zone, 'eu-west');
  assert.equal(m.zoneWeight, 2.5);
  assert.deepEqual(m.zoneRules, ['.de=eu-west', '10.0.0.0/8=eu-west']);
  assert.equal(m.crossZoneLingerMs, 1000);
  for (const bad of [['--zone', 'a b'], ['--zone-rule', '.de'], ['--zone-rule', '10.0.0.0/99=eu'], ['--zone-weight', '0']]) {
    assert.throws(() => parse(bad), (err: Error & { code?: string }) => err.code === 'commander.invalidArgument', bad.join(' '));
  }
});

type Db = ClassicLevel<Buffer, Buffer>;
const enc = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

test('per-destination batches: a member of another zone gets fewer, larger batches (above the default 500 URLs)', async () => {
  const near = await createMeshNode({ dataDir: tempDir() });
  const far = await createMeshNode({ dataDir: tempDir() });
  const sDir = tempDir();
  const sNode = await createMeshNode({ dataDir: sDir });
  const db: Db = new ClassicLevel<Buffer, Buffer>(join(sDir, 'db'), enc);
  await db.open();
  const outbox = await Outbox.open({ db: db.sublevel<Buffer, Buffer>('outbox', enc) as unknown as OutboxDb });
  const batches = new Map<string, number[]>([[near.id, []], [far.id, []]]);
  const receivers = [near, far].map((n) => new UrlExchange({ node: n, accept: async (its) => { batches.get(n.id)!.push(its.length); } }));
  const sender = new UrlExchange({
    node: sNode, outbox, accept: async () => {},
    batchPolicy: (peer) => (peer === far.id ? { lingerMs: 1500, maxUrls: 2000, maxBytes: 1 << 20 } : undefined),
  });
  try {
    for (const r of receivers) await r.start();
    await sender.start();
    await sNode.dialPeer(near.addrs()[0]!);
    await sNode.dialPeer(far.addrs()[0]!);
    const items = (tag: string) => Array.from({ length: 1500 }, (_, i) => ({ url: `https://h${i % 97}.example.test/${tag}/${i}`, depth: 1, hops: 0 }));
    await Promise.all([outbox.enqueue(near.id, items('near')), outbox.enqueue(far.id, items('far'))]);
    const deadline = Date.now() + 20_000;
    const total = (id: string) => batches.get(id)!.reduce((a, b) => a + b, 0);
    while ((total(near.id) < 1500 || total(far.id) < 1500) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(total(near.id), 1500);
    assert.equal(total(far.id), 1500);
    assert.ok(Math.max(...batches.get(near.id)!) <= 500, `inside the zone: at most 500 a batch (${batches.get(near.id)})`);
    assert.ok(Math.max(...batches.get(far.id)!) > 500, `to another zone: larger batches (${batches.get(far.id)})`);
    assert.ok(batches.get(far.id)!.length < batches.get(near.id)!.length, 'and fewer');
  } finally {
    await sender.stop(500);
    for (const r of receivers) await r.stop(500);
    await outbox.close();
    for (const n of [sNode, near, far]) await n.stop();
    await db.close();
  }
});

test('/metrics: members, host share and forwarded URLs per zone; the forwarded counter advances by the difference', async () => {
  const m = new AgentMetrics({ defaultMetrics: false });
  m.setZones([{ zone: 'eu', members: 2, share: 0.5, forwarded: 10 }, { zone: 'us', members: 1, share: 0.5, forwarded: 4 }]);
  m.setZones([{ zone: 'eu', members: 2, share: 0.5, forwarded: 12 }, { zone: 'us', members: 1, share: 0.5, forwarded: 4 }]);
  const text = await m.render();
  assert.match(text, /ubicrawl_zone_members\{zone="eu"\} 2/);
  assert.match(text, /ubicrawl_zone_host_share\{zone="us"\} 0.5/);
  assert.match(text, /ubicrawl_zone_urls_forwarded_total\{zone="eu"\} 12/);
  assert.match(text, /ubicrawl_zone_urls_forwarded_total\{zone="us"\} 4/);
  // Many zones (named by heartbeats): bounded labels.
  m.setZones(Array.from({ length: 100 }, (_, i) => ({ zone: `z${i}`, members: 1, share: 0.01, forwarded: 0 })));
  const zones = new Set([...(await m.render()).matchAll(/ubicrawl_zone_members\{zone="([^"]*)"\}/g)].map((x) => x[1]));
  assert.ok(zones.size <= 32 && zones.has('other'), `${zones.size} zone labels`);
});
