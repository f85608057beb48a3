// Zone-aware ownership (src/assign/zones.ts): zone by rule, then weighted
// rendezvous over zones, then the consistent-hash ring inside the zone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { ZonedRing, parseZoneRule, zoneByHash, zoneByRules } from '../src/assign/zones.js';

const RING = { replicas: 256 };
const hosts = (n: number, tld = 'test'): string[] => Array.from({ length: n }, (_, i) => `h${i}.example${i % 97}.${tld}`);
const ids = (zone: string, n: number): string[] => Array.from({ length: n }, (_, i) => `agent-${zone}-${i}`);

test('one zone (no --zone anywhere): every host has exactly HostRing\'s owner', () => {
  const plain = new HostRing(RING);
  const zoned = new ZonedRing(RING);
  for (const [i, id] of ids('x', 7).entries()) { plain.add(id, 1 + (i % 3)); zoned.add(id, 1 + (i % 3)); }
  for (const h of hosts(5000)) assert.equal(zoned.ownerOf(h), plain.ownerOf(h));
  assert.deepEqual(zoned.nextOwnersOf('a.test', 3), plain.nextOwnersOf('a.test', 3));
});

test('joins and leaves inside a zone never move a host across zones, and move hosts only among that zone\'s members', () => {
  const r = new ZonedRing(RING);
  for (const z of ['eu', 'us', 'ap']) for (const id of ids(z, 2)) r.add(id, 1, z);
  const hs = hosts(20_000);
  const before = hs.map((h) => [r.zoneOf(h), r.ownerOf(h)] as const);
  r.add('agent-eu-new', 2, 'eu');
  r.remove('agent-us-1');
  let moved = 0;
  hs.forEach((h, i) => {
    const [zone, owner] = before[i]!;
    assert.equal(r.zoneOf(h), zone, h);
    const now = r.ownerOf(h)!;
    if (now !== owner) {
      moved++;
      assert.equal(r.memberZone(now), zone);
      assert.ok(now === 'agent-eu-new' || owner === 'agent-us-1', `${h}: ${owner} → ${now} is not caused by the join or the leave`);
    }
  });
  assert.ok(moved > 0);
});

test('zone shares follow the declared zone weights; a new zone takes hosts only into itself', () => {
  const r = new ZonedRing(RING);
  for (const id of ids('eu', 3)) r.add(id, 1, 'eu', 3);
  for (const id of ids('us', 1)) r.add(id, 1, 'us', 1);
  const hs = hosts(40_000);
  const count = (zone: string): number => hs.filter((h) => r.zoneOf(h) === zone).length / hs.length;
  assert.ok(Math.abs(count('eu') - 0.75) < 0.015, `eu share ${count('eu')}`);
  const before = hs.map((h) => r.zoneOf(h));
  r.add('agent-ap-0', 1, 'ap', 2);
  hs.forEach((h, i) => { const z = r.zoneOf(h); assert.ok(z === before[i] || z === 'ap', `${h} moved ${before[i]} → ${z}`); });
  assert.ok(Math.abs(count('ap') - 2 / 6) < 0.015, `ap share ${count('ap')}`);
  const shares = r.shares();
  let sum = 0;
  for (const v of shares.values()) sum += v;
  assert.ok(Math.abs(sum - 1) < 1e-9);
  // Removing a zone's last member moves only its hosts.
  const withAp = hs.map((h) => r.zoneOf(h));
  r.remove('agent-ap-0');
  hs.forEach((h, i) => { if (withAp[i] !== 'ap') assert.equal(r.zoneOf(h), withAp[i]); });
});

test('zone rules: longest suffix wins, CIDR for IP literals, a rule for a zone without members falls back to the hash', () => {
  const rules = ['.de=eu', 'example.de=us', '127.0.0.0/8=ap', '::1/128=ap'].map(parseZoneRule);
  assert.equal(zoneByRules('shop.de', rules), 'eu');
  assert.equal(zoneByRules('www.example.de', rules), 'us');
  assert.equal(zoneByRules('example.de', rules), 'us');
  assert.equal(zoneByRules('notexample.de', rules), 'eu');
  assert.equal(zoneByRules('de.com', rules), null);
  assert.equal(zoneByRules('127.0.4.5', rules), 'ap');
  assert.equal(zoneByRules('[::1]', rules), 'ap');
  assert.equal(zoneByRules('10.0.0.1', rules), null);
  const r = new ZonedRing(RING, rules);
  r.add('e1', 1, 'eu');
  r.add('u1', 1, 'us');
  for (const h of hosts(2000, 'de')) assert.equal(r.ownerOf(h), h.includes('.example.de') ? 'u1' : 'e1');
  // No agent in ap: IP hosts go by the hash, and the hash spreads them over eu and us.
  const ipZones = new Set(Array.from({ length: 200 }, (_, i) => r.zoneOf(`127.0.${i}.1`)));
  assert.deepEqual([...ipZones].sort(), ['eu', 'us']);
  assert.throws(() => parseZoneRule('.de'), /SUFFIX=ZONE/);
  assert.throws(() => parseZoneRule('.de=EU space'), /bad zone name/);
  assert.throws(() => parseZoneRule('10.0.0.0/40=eu'), /bad CIDR/);
});

test('rendezvous: deterministic, independent of insertion order; next owners stay in the zone first', () => {
  const w = new Map([['a', 1], ['b', 2], ['c', 1]]);
  const w2 = new Map([['c', 1], ['a', 1], ['b', 2]]);
  for (const h of hosts(500)) assert.equal(zoneByHash(h, w), zoneByHash(h, w2));
  const r1 = new ZonedRing(RING);
  const r2 = new ZonedRing(RING);
  const members: [string, string][] = [['a1', 'a'], ['a2', 'a'], ['b1', 'b'], ['c1', 'c']];
  for (const [id, z] of members) r1.add(id, 1, z);
  for (const [id, z] of [...members].reverse()) r2.add(id, 1, z);
  for (const h of hosts(2000)) assert.equal(r1.ownerOf(h), r2.ownerOf(h));
  const h = hosts(50).find((x) => r1.zoneOf(x) === 'a')!;
  const next = r1.nextOwnersOf(h, 4);
  assert.deepEqual(next.slice(0, 2).sort(), ['a1', 'a2']);
  assert.deepEqual(next.slice(2).sort(), ['b1', 'c1']);
  // A member that changes zone leaves its old one.
  r1.add('a2', 1, 'b');
  assert.deepEqual(r1.zoneMembers().get('a'), ['a1']);
  assert.deepEqual(r1.zoneMembers().get('b'), ['a2', 'b1']);
});
