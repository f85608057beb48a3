import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { xxh64 } from '../src/hash/xxhash.js';
import { HostRing, DEFAULT_REPLICAS, hostPoint, agentPoint, ringHostName, pointCount } from '../src/assign/ring.js';

const hosts = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `host${from + i}.example`);
const agents = (n: number, tag = 'a'): string[] => Array.from({ length: n }, (_, i) => `12D3KooW${tag}${i.toString(36)}peer`);

function owners(ring: HostRing, hs: string[]): string[] {
  return hs.map((h) => ring.ownerOf(h)!);
}

function loads(ring: HostRing, hs: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const id of ring.members()) m.set(id, 0);
  for (const h of hs) { const o = ring.ownerOf(h)!; m.set(o, m.get(o)! + 1); }
  return m;
}

test('host ownership: host point = xxhash64 of the lower-cased host name, port excluded', () => {
  assert.equal(hostPoint('Example.COM'), xxh64('example.com'));
  assert.equal(hostPoint('example.com:8080'), xxh64('example.com'));
  assert.equal(ringHostName('[2001:DB8::1]:443'), '[2001:db8::1]');
  assert.equal(ringHostName('[::1]'), '[::1]');
  assert.equal(ringHostName('2001:db8::1'), '2001:db8::1'); // unbracketed IPv6 kept whole
  const ring = new HostRing({ replicas: 16 });
  ring.add('a'); ring.add('b'); ring.add('c');
  for (const h of hosts(500)) {
    assert.equal(ring.ownerOf(h.toUpperCase() + ':81'), ring.ownerOf(h));
  }
});

test('host ownership: agent points derive from the identifier alone; owner = first point clockwise, wrapping', () => {
  const ring = new HostRing({ replicas: 8 });
  ring.add('agent-x', 1.5);
  const pts = ring.pointsOf('agent-x');
  assert.equal(pts.length, 12);
  for (let i = 0; i < pts.length; i++) assert.equal(pts[i], xxh64(`agent-x#${i}`));
  assert.equal(agentPoint('agent-x', 3), xxh64('agent-x#3'));
  // Points of a non-member are computable too (capacity 1 by default).
  assert.deepEqual([...new HostRing({ replicas: 8 }).pointsOf('agent-x', 1.5)], [...pts]);
  // Brute-force owner: smallest point ≥ p, else the smallest point overall.
  ring.add('agent-y'); ring.add('agent-z', 0.5);
  const all: Array<[bigint, string]> = [];
  for (const id of ring.members()) for (const p of ring.pointsOf(id)) all.push([p, id]);
  all.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const brute = (p: bigint): string => (all.find(([q]) => q >= p) ?? all[0])[1];
  for (const h of hosts(2000)) assert.equal(ring.ownerOf(h), brute(hostPoint(h)));
  // Exactly on a point, just past it, and past the last point (wraps to the first).
  for (const [p, id] of all.slice(0, 5)) {
    assert.equal(ring.ownerOfPoint(p), id);
  }
  assert.equal(ring.ownerOfPoint(all[all.length - 1][0] + 1n), all[0][1]);
  assert.equal(ring.ownerOfPoint((1n << 64n) - 1n), brute((1n << 64n) - 1n));
  assert.equal(ring.ownerOfPoint(0n), all[0][1]);
});

test('pointCount rounds replicas × capacity, at least one point for any positive capacity', () => {
  assert.equal(pointCount(100, 1), 100);
  assert.equal(pointCount(100, 0.333), 33);
  assert.equal(pointCount(100, 0.001), 1);
  assert.equal(pointCount(100, 0), 0);
  assert.equal(pointCount(100, 2.5), 250);
});

test('UbiCrawler §4: deterministic — rings built in different insertion orders agree on every host', () => {
  const ids = agents(40);
  const a = new HostRing({ replicas: 256 });
  const b = new HostRing({ replicas: 256 });
  ids.forEach((id, i) => a.add(id, 1 + (i % 3)));
  [...ids].reverse().forEach((id) => b.add(id, 1 + (ids.indexOf(id) % 3)));
  // c gets there by a detour: extra members added then removed, capacities changed back.
  const c = new HostRing({ replicas: 256 });
  for (const id of agents(10, 'tmp')) c.add(id);
  for (const id of [...ids].sort()) c.add(id, 7);
  for (const id of agents(10, 'tmp')) c.remove(id);
  ids.forEach((id, i) => c.add(id, 1 + (i % 3)));
  // d changes one member at a time with a lookup in between (the O(N)
  // incremental join/leave path), including a leave, a re-join and a re-weight.
  const d = new HostRing({ replicas: 256 });
  ids.forEach((id, i) => { d.add(id, 1 + (i % 3)); d.ownerOf('x.example'); });
  d.remove(ids[5]); d.ownerOf('x.example');
  d.add('12D3KooWextra'); d.ownerOf('x.example');
  d.add(ids[5], 1 + (5 % 3)); d.ownerOf('x.example');
  d.add(ids[6], 9); d.ownerOf('x.example');
  d.remove('12D3KooWextra'); d.ownerOf('x.example');
  d.add(ids[6], 1 + (6 % 3));
  const hs = hosts(100000);
  const oa = owners(a, hs);
  assert.deepEqual(owners(b, hs), oa);
  assert.deepEqual(owners(c, hs), oa);
  assert.deepEqual(owners(d, hs), oa);
  assert.deepEqual(a.members(), [...ids].sort());
});

test('UbiCrawler §4: deterministic across processes (a child process computes the same owners)', () => {
  const ids = agents(20);
  const ring = new HostRing();
  for (const id of ids) ring.add(id);
  const hs = hosts(2000);
  const here = owners(ring, hs).join(',');
  const mod = fileURLToPath(new URL('../src/assign/ring.js', import.meta.url));
  const script = `
    const { HostRing } = await import(${JSON.stringify(mod)});
    const r = new HostRing();
    for (const id of ${JSON.stringify([...ids].reverse())}) r.add(id);
    const out = [];
    for (let i = 0; i < 2000; i++) out.push(r.ownerOf('host' + i + '.example'));
    process.stdout.write(out.join(','));`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout, here);
});

test(`balance: max/mean ≤ 1.10 with 100 equal agents over 1 M hosts (replicas = ${DEFAULT_REPLICAS})`, () => {
  const ring = new HostRing();
  for (const id of agents(100)) ring.add(id);
  const n = 1_000_000;
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const o = ring.ownerOf(`host${i}.example`)!;
    counts.set(o, (counts.get(o) ?? 0) + 1);
  }
  assert.equal(counts.size, 100);
  const max = Math.max(...counts.values());
  const ratio = max / (n / 100);
  assert.ok(ratio <= 1.10, `max/mean = ${ratio.toFixed(3)}`);
  // The ring's own arc shares (expected loads, no sampling noise) agree.
  const shares = [...ring.shares().values()];
  assert.ok(Math.abs(shares.reduce((a, b) => a + b, 0) - 1) < 1e-9);
  assert.ok(Math.max(...shares) * 100 <= 1.10, `max arc share × 100 = ${(Math.max(...shares) * 100).toFixed(3)}`);
});

test('Karger et al. 1997 monotonicity (UbiCrawler "contravariance"): a join moves hosts only to the newcomer', () => {
  const ring = new HostRing();
  for (const id of agents(20)) ring.add(id);
  const hs = hosts(200000);
  const before = owners(ring, hs);
  ring.add('12D3KooWnewcomer');
  const after = owners(ring, hs);
  let moved = 0;
  for (let i = 0; i < hs.length; i++) {
    if (after[i] !== before[i]) { moved++; assert.equal(after[i], '12D3KooWnewcomer'); }
  }
  // About 1/21 of the hosts move.
  assert.ok(Math.abs(moved / hs.length - 1 / 21) < 0.01, `moved ${moved / hs.length}`);
});

test('Karger et al. 1997 monotonicity: a leave moves only the leaver\'s hosts', () => {
  const ring = new HostRing();
  const ids = agents(20);
  for (const id of ids) ring.add(id);
  const hs = hosts(200000);
  const before = owners(ring, hs);
  const leaver = ids[7];
  assert.equal(ring.remove(leaver), true);
  assert.equal(ring.remove(leaver), false);
  assert.equal(ring.has(leaver), false);
  const after = owners(ring, hs);
  let moved = 0;
  for (let i = 0; i < hs.length; i++) {
    if (after[i] !== before[i]) { moved++; assert.equal(before[i], leaver); }
    else assert.notEqual(after[i], leaver);
  }
  assert.equal(moved, before.filter((o) => o === leaver).length);
  // And a capacity change moves hosts only to or from that agent.
  ring.add(ids[3], 2);
  const grown = owners(ring, hs);
  for (let i = 0; i < hs.length; i++) if (grown[i] !== after[i]) assert.equal(grown[i], ids[3]);
});

test('UbiCrawler §4: capacity-proportional — capacity 2 gets ≈ 2× the hosts, capacity 0.5 ≈ half', () => {
  const ring = new HostRing();
  const ids = agents(20);
  ids.forEach((id, i) => ring.add(id, i === 0 ? 2 : i === 1 ? 0.5 : 1));
  const l = loads(ring, hosts(300000));
  const unit = [...l.entries()].filter(([id]) => id !== ids[0] && id !== ids[1]).map(([, v]) => v);
  const mean = unit.reduce((a, b) => a + b, 0) / unit.length;
  const r2 = l.get(ids[0])! / mean, rhalf = l.get(ids[1])! / mean;
  assert.ok(Math.abs(r2 - 2) < 0.15, `capacity 2 → ${r2.toFixed(3)}× the mean`);
  assert.ok(Math.abs(rhalf - 0.5) < 0.06, `capacity 0.5 → ${rhalf.toFixed(3)}× the mean`);
  assert.equal(ring.capacityOf(ids[0]), 2);
});

test('nextOwnersOf: the owner first, then distinct successors clockwise; bounded by the member count', () => {
  const ring = new HostRing({ replicas: 64 });
  const ids = agents(6);
  for (const id of ids) ring.add(id);
  for (const h of hosts(300)) {
    const next = ring.nextOwnersOf(h, 3);
    assert.equal(next.length, 3);
    assert.equal(next[0], ring.ownerOf(h));
    assert.equal(new Set(next).size, 3);
    // The second is who owns the host once the first leaves (replicated handoff).
    const without = new HostRing({ replicas: 64 });
    for (const id of ids) if (id !== next[0]) without.add(id);
    assert.equal(without.ownerOf(h), next[1]);
  }
  assert.equal(ring.nextOwnersOf('x.example', 100).length, 6);
  assert.deepEqual(ring.nextOwnersOf('x.example', 0), []);
  // The bound follows joins and leaves (applied incrementally or rebuilt).
  ring.remove(ids[0]!);
  assert.deepEqual(new Set(ring.nextOwnersOf('x.example', 100)), new Set(ids.slice(1)));
  ring.add('late', 0);
  ring.add(ids[0]!);
  assert.equal(ring.nextOwnersOf('x.example', 100).length, 6, 'a capacity-0 member is never a successor');
});

test('edge cases: empty ring, capacity 0 member owns nothing, clamping, bad input', () => {
  const ring = new HostRing({ replicas: 32, maxCapacity: 4 });
  assert.equal(ring.ownerOf('a.example'), undefined);
  assert.deepEqual(ring.nextOwnersOf('a.example', 2), []);
  ring.add('idle', 0);
  assert.equal(ring.ownerOf('a.example'), undefined);
  assert.equal(ring.has('idle'), true);
  ring.add('big', 1000);
  assert.equal(ring.capacityOf('big'), 4);
  assert.equal(ring.pointTotal, 128);
  assert.equal(ring.ownerOf('a.example'), 'big');
  assert.deepEqual(ring.nextOwnersOf('a.example', 2), ['big']);
  assert.deepEqual(ring.members(), ['big', 'idle']);
  assert.throws(() => ring.add('', 1), TypeError);
  assert.throws(() => ring.add('x', -1), RangeError);
  assert.throws(() => ring.add('x', Number.NaN), RangeError);
  assert.throws(() => new HostRing({ replicas: 0 }), RangeError);
  assert.equal(ring.size, 2);
});
