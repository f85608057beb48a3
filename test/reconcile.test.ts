// Healing a partition (docs/mesh.md "Partitions longer than the window"): the
// members back after we declared them dead, the rings of their side under
// which their seen entries for our hosts are taken, and the gate that waits
// for their handoff.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ZonedRing } from '../src/assign/zones.js';
import { HandoffGate, ringIdOf } from '../src/crawl/handoff.js';
import { RecentRings } from '../src/crawl/recent-rings.js';
import { PartitionReturns } from '../src/crawl/reconcile.js';

const A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const C = '12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';
const HOSTS = Array.from({ length: 300 }, (_, i) => `h${i}.example`);

function ring(...ids: string[]): ZonedRing {
  const r = new ZonedRing({}, []);
  for (const id of ids) r.add(id, 1, id === A ? 'eu' : 'us', 1);
  return r;
}

test('PartitionReturns: a member back after its death brings the rings of its side; one never declared dead brings none', () => {
  const p = new PartitionReturns({ keepMs: 60_000 });
  const r = ring(A, B, C);
  assert.deepEqual(p.changed({ added: [B, C], dead: [] }, r, 0), { returned: [], cutOff: [], rings: [] });
  // The cut: A declares B and C dead; then C is SIGKILLed on the other side and never comes back.
  r.remove(B); r.remove(C);
  assert.deepEqual(p.changed({ added: [], dead: [B, C] }, r, 1000).returned, []);
  r.add(B, 1, 'us', 1);
  const back = p.changed({ added: [B], dead: [] }, r, 5000);
  assert.deepEqual(back.returned, [B]);
  assert.deepEqual(back.cutOff, [B], 'no incarnations known: a return is taken for a cut');
  assert.deepEqual(back.rings.map((x) => x.members().sort()), [[B], [B, C].sort()], 'B alone, and B with C (its side before C died there)');
  // Under B's side, B owned hosts that are A's in every ring A had: its seen entries for them are taken.
  const rr = new RecentRings();
  rr.push(ring(A, B, C)); rr.push(ring(A)); rr.push(ring(A, B));
  const ours = HOSTS.filter((h) => ring(A, B).ownerOf(h) === A);
  assert.ok(ours.length > 0);
  assert.ok(ours.every((h) => !rr.owned(B, h)), 'without the rings of its side, B never owned A\'s hosts');
  for (const x of back.rings) rr.push(x);
  assert.ok(ours.every((h) => rr.owned(B, h)), 'with them, it did');
  // Back once: a later return (no new death) brings nothing.
  assert.deepEqual(p.changed({ added: [B], dead: [] }, r, 6000), { returned: [], cutOff: [], rings: [] });
  // A death forgotten after keepMs: back later, it is like any newcomer.
  r.remove(B);
  p.changed({ added: [], dead: [B] }, r, 10_000);
  r.add(B, 1, 'us', 1);
  assert.deepEqual(p.changed({ added: [B], dead: [] }, r, 80_000).returned, []);
});

test('PartitionReturns: a member back in the same incarnation was cut off; one back in a higher incarnation restarted and is not waited for', () => {
  const p = new PartitionReturns({ keepMs: 60_000 });
  const inc = new Map([[A, 1], [B, 7], [C, 9]]);
  const r = ring(A, B, C);
  p.changed({ added: [B, C], dead: [] }, r, 0, (id) => inc.get(id));
  r.remove(B); r.remove(C);
  p.changed({ added: [], dead: [B, C] }, r, 1000, (id) => inc.get(id));
  inc.set(C, 10); // C was SIGKILLed and started again; B was only cut off
  r.add(B, 1, 'us', 1); r.add(C, 1, 'us', 1);
  const back = p.changed({ added: [B, C], dead: [] }, r, 5000, (id) => inc.get(id));
  assert.deepEqual(back.returned.sort(), [B, C].sort());
  assert.deepEqual(back.cutOff, [B]);
});

test('gate: forgetMarker makes a member back from a long partition a newcomer, waited for until its handoff marker', () => {
  const g = new HandoffGate(A, { timeoutMs: 5000, floorMs: 0 });
  const r = ring(A, B);
  g.ringChanged(r, [B], [], 0);
  g.heard(B, 1);
  g.marker(B, ringIdOf(r), 10);
  r.remove(B);
  g.gone(B, 100);
  g.ringChanged(r, [], [], 100);
  r.add(B, 1, 'us', 1);
  g.forgetMarker(B); // before the ring change that brings it back (src/crawl/ownership.ts)
  g.ringChanged(r, [B], [B], 200);
  assert.deepEqual(g.waitingFor(), [B]);
  assert.ok(HOSTS.every((h) => g.notBefore(h, 200) > 0), 'every host we own waits for what it crawled meanwhile');
  g.marker(B, ringIdOf(r), 300);
  assert.deepEqual(g.waitingFor(), []);
  assert.ok(HOSTS.every((h) => g.notBefore(h, 300) === 0));
});
