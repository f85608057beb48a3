// The handoff gate (src/crawl/handoff.ts) and the marker's wire form
// (src/mesh/wire.ts): docs/mesh.md "Handoff protocol".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { HandoffGate, ringIdOf, snapshotRing } from '../src/crawl/handoff.js';
import { RecentRings } from '../src/crawl/recent-rings.js';
import { encodeHandoffMarker, decodeHandoffMarker, isHandoffMarker, isWireItem, REPLICA_SEEN_HOPS, SEEN_ONLY_FLAG, HOPS_MASK } from '../src/mesh/index.js';

const A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const C = '12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';
const HOSTS = Array.from({ length: 400 }, (_, i) => `h${i}.example`);

function ring(...ids: string[]): HostRing {
  const r = new HostRing({ replicas: 64 });
  for (const id of ids) r.add(id);
  return r;
}

test('handoff marker: a wire item of its own kind, round-trips its ring id, rejects look-alikes', () => {
  const m = encodeHandoffMarker(0xfedcba9876543210n);
  assert.ok(isWireItem(m), 'travels through the outbox and the exchange like any item');
  assert.ok(isHandoffMarker(m));
  assert.equal(decodeHandoffMarker(m), 0xfedcba9876543210n);
  assert.equal(decodeHandoffMarker(encodeHandoffMarker(0n)), 0n);
  assert.equal(decodeHandoffMarker({ ...m, url: m.url.slice(0, -1) + 'g' }), null, 'bad hex');
  assert.equal(decodeHandoffMarker({ ...m, url: m.url + '0' }), null, 'bad length');
  assert.equal(decodeHandoffMarker({ ...m, depth: 1 }), null);
  assert.equal(decodeHandoffMarker({ url: 'http://a.example/', depth: 0, hops: 0 }), null);
  assert.notEqual(REPLICA_SEEN_HOPS, m.hops, 'a replica seen entry is not a marker');
  assert.equal(REPLICA_SEEN_HOPS & SEEN_ONLY_FLAG, SEEN_ONLY_FLAG);
  assert.equal(REPLICA_SEEN_HOPS & HOPS_MASK, HOPS_MASK, 'past any hop limit: never passed on');
});

test('ring id: equal for equal views (any insertion order), different when a member or a capacity differs', () => {
  const r1 = ring(A, B, C);
  const r2 = ring(C, A, B);
  assert.equal(ringIdOf(r1), ringIdOf(r2));
  assert.notEqual(ringIdOf(r1), ringIdOf(ring(A, B)));
  const r3 = ring(A, B);
  r3.add(C, 2);
  assert.notEqual(ringIdOf(r1), ringIdOf(r3));
  const snap = snapshotRing(r1);
  r1.remove(C);
  assert.equal(ringIdOf(snap), ringIdOf(r2), 'a snapshot does not follow the live ring');
});

test('gate: hosts gained on a leave wait for the live peers\' markers for the new ring; other hosts do not wait', () => {
  const g = new HandoffGate(A, { timeoutMs: 10_000, floorMs: 100 });
  const r = ring(A, B, C);
  g.ringChanged(r, [B, C], [], 0);
  for (const h of HOSTS) assert.equal(g.notBefore(h, 0), 0, 'nothing moved yet');
  const before = snapshotRing(r);
  r.remove(C); // C leaves gracefully: its hosts go to A and B
  g.ringChanged(r, [B, C], [], 1000);
  const gained = HOSTS.filter((h) => before.ownerOf(h) === C && r.ownerOf(h) === A);
  const kept = HOSTS.filter((h) => before.ownerOf(h) === A);
  assert.ok(gained.length > 20 && kept.length > 20);
  for (const h of gained) assert.ok(g.notBefore(h, 1000) > 1000, `${h} waits`);
  for (const h of kept) assert.equal(g.notBefore(h, 1000), 0, `${h} was ours already`);
  g.marker(C, ringIdOf(ring(A)), 1100); // a marker for another ring does not count
  assert.ok(g.notBefore(gained[0]!, 1100) > 1100);
  g.marker(C, ringIdOf(r), 1200);
  assert.deepEqual(g.waitingFor(), [B]);
  g.marker(B, ringIdOf(r), 1300);
  assert.deepEqual(g.waitingFor(), []);
  // Cleared at 1300: the politeness floor (100 ms) still holds the gained hosts, not the kept ones.
  assert.equal(g.notBefore(gained[0]!, 1350), 1400);
  assert.equal(g.notBefore(kept[0]!, 1350), 0);
  assert.equal(g.notBefore(gained[0]!, 1400), 0);
});

test('gate: a member that appears holds every host we own until its marker (joiner, restarted agent)', () => {
  const g = new HandoffGate(A, { timeoutMs: 10_000, floorMs: 0 });
  const r = ring(A, B);
  g.ringChanged(r, [B], [], 0);
  r.add(C);
  g.ringChanged(r, [B, C], [C], 10);
  const ours = HOSTS.filter((h) => r.ownerOf(h) === A);
  for (const h of ours) assert.ok(g.notBefore(h, 10) > 10);
  g.marker(C, ringIdOf(r), 20);
  g.marker(B, ringIdOf(r), 20);
  for (const h of ours) assert.equal(g.notBefore(h, 20), 0);
});

test('gate: a marker for a ring we reach later counts once we reach it; a dead peer is not waited for; a lost marker times out', () => {
  const g = new HandoffGate('', { timeoutMs: 5000, floorMs: 0 });
  g.marker(B, ringIdOf(ring(A, B, C)), 0); // arrives while we start, before we know our id
  g.setSelf(A);
  const r = ring(A);
  g.ringChanged(r, [B, C], [B, C], 0);
  const h = HOSTS[0]!;
  assert.ok(g.notBefore(h, 0) > 0);
  r.add(B); r.add(C);
  g.ringChanged(r, [B, C], [B, C], 100);
  assert.deepEqual(g.waitingFor(), [C], 'B\'s early marker was for this ring');
  g.gone(C, 200); // declared dead: take over at once
  assert.deepEqual(g.waitingFor(), []);
  const g2 = new HandoffGate(A, { timeoutMs: 5000, floorMs: 0 });
  g2.ringChanged(ring(A, B), [B], [B], 0);
  const mine = HOSTS.find((x) => ring(A, B).ownerOf(x) === A)!;
  assert.ok(g2.notBefore(mine, 4999) > 4999);
  assert.equal(g2.notBefore(mine, 5000), 0, 'timeout fallback');
  assert.equal(g2.stats.timedOut, 1);
  g2.ringChanged(ring(A, B, C), [B, C], [C], 6000);
  g2.prune((id) => id !== C, 6001);
  assert.deepEqual(g2.waitingFor(), [B], 'a member that vanished is not waited for (B, alive, still is)');
});

test('gate: a leaver\'s marker holds for later rings; markers are due once per peer and ring, again after a restart', () => {
  const g = new HandoffGate(A, { timeoutMs: 10_000, floorMs: 0 });
  const r = ring(A, B, C);
  g.ringChanged(r, [B, C], [], 0);
  r.remove(C);
  g.ringChanged(r, [B, C], [], 10);
  g.marker(C, ringIdOf(r), 20, true);
  r.add('12D3KooWDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD');
  g.ringChanged(r, [B, C, '12D3KooWDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD'], ['12D3KooWDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD'], 30);
  assert.ok(!g.waitingFor().includes(C), 'the leaver is not waited for again');
  assert.deepEqual(g.markersDue(r.members()).sort(), [B, '12D3KooWDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD'].sort());
  for (const p of r.members()) g.markerSent(p, g.ringId);
  assert.deepEqual(g.markersDue(r.members()), []);
  assert.equal(g.heard(B, 1), false, 'first heartbeat');
  assert.equal(g.heard(B, 1), false);
  assert.equal(g.heard(B, 2), true, 'restarted');
  assert.deepEqual(g.markersDue(r.members()), [B]);
});

test('handoff gate: a marker from a peer we do not know yet survives a prune and counts once our ring catches up', () => {
  const gate = new HandoffGate(C, { timeoutMs: 60_000, floorMs: 0, recheckMs: 10 });
  gate.ringChanged(ring(A, C), [A], [A], 0);
  gate.marker(A, ringIdOf(ring(A, C)), 1);
  // B, already in the 3-member ring, sends its marker before our membership view has B in it.
  gate.marker(B, ringIdOf(ring(A, B, C)), 2);
  gate.prune((id) => id === A || id === C, 3);
  gate.ringChanged(ring(A, B, C), [A, B], [B], 4);
  gate.marker(A, ringIdOf(ring(A, B, C)), 5);
  assert.deepEqual(gate.waitingFor(), [], 'B is not waited for: its marker for this ring is in');
  for (const h of HOSTS) assert.equal(gate.notBefore(h, 6), 0, `${h} may be contacted`);
  // A stale marker from a peer that is long gone is forgotten.
  gate.prune((id) => id === A || id === C, 61_000);
  gate.ringChanged(ring(A, C), [A], [], 61_001);
  gate.ringChanged(ring(A, B, C), [A, B], [B], 61_002);
  assert.ok(gate.waitingFor().includes(B), 'after the timeout a forgotten marker no longer counts');
});

test('gate: a joiner contacts no host until a member is in its ring, then waits for that member\'s marker for its own ring; the hold is bounded', () => {
  const g = new HandoffGate(A, { timeoutMs: 10_000, floorMs: 100 });
  const r = ring(A);
  g.ringChanged(r, [], [], 0);
  g.holdUntilJoined(5000);
  assert.ok(g.joining);
  for (const h of HOSTS.slice(0, 20)) assert.ok(g.notBefore(h, 100) > 100, 'alone in our own ring: we own every host, and touch none');
  // B's first marker (for a ring without us) lets it into our ring; it clears nothing.
  g.marker(B, ringIdOf(ring(B, C)), 200);
  r.add(B);
  g.ringChanged(r, [B], [B], 200);
  assert.equal(g.joining, false, 'the hold ends with the first member');
  assert.ok(HOSTS.every((h) => g.notBefore(h, 300) > 300), 'every host waits for the newcomer gate');
  g.marker(B, ringIdOf(ring(A, B, C)), 300);
  assert.ok(HOSTS.every((h) => g.notBefore(h, 300) > 300), 'a marker for a ring we have not reached does not clear');
  r.add(C);
  g.ringChanged(r, [B, C], [C], 400);
  assert.equal(g.startingUp, true, 'still starting up until the gates clear');
  g.marker(C, ringIdOf(r), 450);
  assert.ok(HOSTS.every((h) => g.notBefore(h, 600) === 0), 'both markers match our ring: every host is free');
  assert.equal(g.startingUp, false);

  const lone = new HandoffGate(A, { timeoutMs: 10_000, floorMs: 100 });
  lone.ringChanged(ring(A), [], [], 0);
  lone.holdUntilJoined(5000);
  assert.ok(lone.notBefore(HOSTS[0]!, 4999) > 4999);
  assert.equal(lone.notBefore(HOSTS[0]!, 5000), 0, 'no member ever came: the hold gives up');
  assert.equal(lone.stats.timedOut, 1);
});

test('recent rings: who may send seen entries for a host; the ring without us counts; kept across a restart', () => {
  const rr = new RecentRings();
  const r = ring(A, B, C);
  rr.push(r);
  const aHosts = HOSTS.filter((h) => r.ownerOf(h) === A);
  const bHosts = HOSTS.filter((h) => r.ownerOf(h) === B);
  for (const h of bHosts) assert.ok(rr.owned(B, h, A), 'its owner');
  for (const h of bHosts) assert.equal(rr.owned(C, h, A), false, 'not its owner');
  // Our hosts: whoever takes them when we are gone (crash, or before we joined) owned them too.
  const without = ring(B, C);
  for (const h of aHosts) {
    const heir = without.ownerOf(h)!;
    assert.ok(rr.owned(heir, h, A), 'the owner without us (while we start up)');
    assert.equal(rr.owned(heir, h), false, 'not once we are up: only a forger would claim it');
    assert.equal(rr.owned(heir === B ? C : B, h, A), false, 'the other one did not');
  }
  // While we start up, a peer hands our hosts over before its marker lets it into our ring: the ring of
  // every member we have heard of (ours included) vouches for it.
  const early = new RecentRings();
  early.push(ring(A));
  const heard = ring(A, B, C);
  const cHosts = HOSTS.filter((h) => heard.ownerOf(h) === A && without.ownerOf(h) === C);
  assert.ok(cHosts.length > 10);
  for (const h of cHosts) {
    assert.equal(early.owned(C, h, A), false, 'our own ring alone does not know C');
    assert.ok(early.owned(C, h, A, heard), 'the heard ring does');
  }
  const cReplicas = HOSTS.filter((h) => heard.nextOwnersOf(h, 2)[0] === C && heard.nextOwnersOf(h, 2)[1] === A);
  for (const h of cReplicas) assert.ok(early.replicaFor(C, A, h, heard) && !early.replicaFor(C, A, h));
  // A restart reads the history back.
  const back = new RecentRings();
  back.restore(JSON.parse(JSON.stringify(rr.toJSON())), { replicas: 64 });
  for (const h of HOSTS) for (const p of [B, C]) assert.equal(back.owned(p, h, A), rr.owned(p, h, A));
  const junk = new RecentRings();
  junk.restore({ not: 'rings' });
  junk.restore([[['x', -1]], 'y', [[5, 1]]]);
  assert.equal(junk.owned(B, HOSTS[0]!, A), false, 'malformed history is ignored');
});

test('gate: a member declared dead by mistake comes back with its last marker still good; a restart needs a new one', () => {
  const g = new HandoffGate(A, { timeoutMs: 5000, floorMs: 0 });
  const r = ring(A, B);
  g.ringChanged(r, [B], [], 0);
  g.heard(B, 1);
  g.marker(B, ringIdOf(r), 10);
  r.remove(B);
  g.gone(B, 100); // silent for dead-after: we take over its hosts
  g.ringChanged(r, [], [], 100);
  r.add(B); // its next heartbeat: alive all along, same incarnation
  g.ringChanged(r, [B], [B], 200);
  assert.equal(g.heard(B, 1), false);
  assert.deepEqual(g.waitingFor(), [], 'its marker for this ring came before the mistake');
  assert.ok(HOSTS.every((h) => g.notBefore(h, 200) === 0));
  // A restart is another matter: what it held is unknown until its new marker.
  assert.equal(g.heard(B, 2), true);
  r.remove(B);
  g.ringChanged(r, [], [], 300);
  r.add(B);
  g.ringChanged(r, [B], [B], 400);
  assert.deepEqual(g.waitingFor(), [B]);
});

test('gate: markers that came while we started put members in our ring already: no hold', () => {
  const g = new HandoffGate(A, { timeoutMs: 5000, floorMs: 0 });
  const r = ring(A, B);
  g.marker(B, ringIdOf(r), 0);
  g.ringChanged(r, [B], [B], 0);
  g.holdUntilJoined(5000);
  assert.equal(g.joining, false);
  assert.ok(HOSTS.every((h) => g.notBefore(h, 10) === 0), 'B\'s marker is for our ring: nothing to wait for');
  assert.equal(g.startingUp, false, 'and start-up is over');
});

test('gate: start-up ends once nothing holds us; a newcomer gate opened later does not bring it back', () => {
  const g = new HandoffGate(A, { timeoutMs: 5000, floorMs: 0 });
  const r = ring(A);
  g.ringChanged(r, [], [], 0);
  assert.equal(g.startingUp, false, 'alone and not joining: no start-up at all');
  r.add(B);
  g.ringChanged(r, [B], [B], 100); // B vouched: its newcomer gate waits for its marker for our ring
  assert.deepEqual(g.waitingFor(), [B]);
  assert.equal(g.startingUp, false, 'an agent that is up never accepts the claims only start-up allows');
});

test('gate: a joiner\'s start-up lasts until every member it knew at the start has sent a marker for its ring (or the deadline)', () => {
  const g = new HandoffGate(A, { timeoutMs: 5000, floorMs: 0 });
  const r = ring(A);
  g.ringChanged(r, [], [], 0);
  g.holdUntilJoined(5000, [B, C]);
  r.add(B);
  g.marker(B, ringIdOf(ring(A, B)), 100);
  g.ringChanged(r, [B], [B], 100);
  assert.ok(HOSTS.every((h) => g.notBefore(h, 150) === 0), 'B handed over: no gate holds a host');
  assert.equal(g.startingUp, true, 'but C, known at the start, has not handed us our hosts yet');
  r.add(C);
  g.ringChanged(r, [B, C], [C], 200);
  g.marker(B, ringIdOf(r), 250);
  g.marker(C, ringIdOf(r), 260);
  g.sweep(300);
  assert.equal(g.startingUp, false);
  const late = new HandoffGate(A, { timeoutMs: 5000, floorMs: 0 });
  late.ringChanged(ring(A, B), [B], [], 0);
  late.holdUntilJoined(1000, [C]);
  late.sweep(999);
  assert.equal(late.startingUp, true);
  late.sweep(1000);
  assert.equal(late.startingUp, false, 'a member that never hands over ends it at the deadline');
});

// Under load the previous owner's pass (it waits for its in-flight fetches, then queues host by host)
// outlasted the fallback: the new owner took the hosts before their seen entries came and fetched
// pages a second time (the join/leave test of test/mesh-crawl.test.ts, a CPU burner beside it).
test('gate: a peer still handing data over is waited for past the fallback time; once it goes quiet the fallback holds, bounded in total', () => {
  const g = new HandoffGate(A, { timeoutMs: 65_000, floorMs: 0, maxWaitMs: 200_000 });
  const r = ring(A, B, C);
  g.ringChanged(r, [B, C], [], 0);
  const before = snapshotRing(r);
  r.remove(C); // C leaves: its hosts come to A and B
  g.ringChanged(r, [B, C], [], 1000);
  g.marker(B, ringIdOf(r), 1000);
  const gained = HOSTS.find((h) => before.ownerOf(h) === C && r.ownerOf(h) === A)!;
  assert.ok(g.notBefore(gained, 1000) > 1000, 'waits for C');
  // C's seen entries keep arriving, every 20 s, for 100 s: its pass is slow, not lost.
  for (let t = 1000; t <= 101_000; t += 20_000) {
    g.progress(C, t);
    assert.ok(g.notBefore(gained, t + 1) > t + 1, `still waiting for C at ${t + 1} ms (the fallback alone gave up at 66,000 ms)`);
  }
  assert.equal(g.stats.timedOut, 0);
  // C goes quiet after 101 s: the fallback counts from its last handoff data.
  assert.ok(g.notBefore(gained, 165_999) > 165_999);
  assert.equal(g.notBefore(gained, 166_000), 0, 'gave up a fallback time after C\'s last data');
  assert.equal(g.stats.timedOut, 1);
  // Bounded: data that never ends cannot hold a gate longer than maxWaitMs.
  const g2 = new HandoffGate(A, { timeoutMs: 65_000, floorMs: 0, maxWaitMs: 200_000 });
  g2.ringChanged(ring(A, B), [B], [B], 0);
  const mine = HOSTS.find((x) => ring(A, B).ownerOf(x) === A)!;
  for (let t = 0; t < 300_000; t += 10_000) g2.progress(B, t);
  assert.ok(g2.notBefore(mine, 199_999) > 199_999);
  assert.equal(g2.notBefore(mine, 200_000), 0, 'maxWaitMs bounds the wait');
  // Data from a peer no gate waits for moves no deadline.
  const g3 = new HandoffGate(A, { timeoutMs: 65_000, floorMs: 0 });
  g3.ringChanged(ring(A, B), [B], [B], 0);
  g3.progress(C, 60_000);
  assert.equal(g3.notBefore(mine, 65_000), 0);
});

test('recent rings: a seen entry passed on by the member that had a host we gained before it was ours (the previous owner had not counted us in)', () => {
  const rr = new RecentRings();
  const full = ring(A, B, C);
  rr.push(full);
  const left = ring(A, B); // C left: its hosts went to A and B
  rr.push(left);
  const gained = HOSTS.filter((h) => full.ownerOf(h) === C && left.ownerOf(h) === A && left.nextOwnersOf(h, 2)[1] === B);
  const always = HOSTS.filter((h) => full.ownerOf(h) === A && left.nextOwnersOf(h, 2)[1] === B);
  assert.ok(gained.length > 5 && always.length > 5);
  for (const h of gained) assert.equal(rr.passedOn(B, h, A), true, `${h}: B had it in the ring without us`);
  for (const h of always) assert.equal(rr.passedOn(B, h, A), false, `${h}: ours all along, B may not hide its pages`);
  for (const h of gained) assert.equal(rr.passedOn(C, h, A), false, `${h}: C is not our next owner in any ring where the host is ours`);
});

test('recent rings: rings of our start-up are not a history of holding a host (a member that joined with us passes on what an earlier member held)', () => {
  // A and B join a mesh of C at about the same time. C, counting B in first, hands B hosts that are A's in the
  // ring of three; B passes them on to A. In every ring A recorded, A owned them — its solo ring before it
  // joined, then {A, C}: only the start-up flag says A did not hold them.
  const three = ring(A, B, C);
  const hosts = HOSTS.filter((h) => three.ownerOf(h) === A && three.nextOwnersOf(h, 2)[1] === B && ring(A, C).ownerOf(h) === A);
  assert.ok(hosts.length > 3);
  const joiner = new RecentRings();
  joiner.push(ring(A), true);
  joiner.push(ring(A, C), true);
  joiner.push(three, false);
  for (const h of hosts) assert.equal(joiner.passedOn(B, h, A), true, `${h}: gained when A joined`);
  // C, the mesh before us, had them (its ring without us): it may pass them on too; a stranger to our rings may not.
  for (const h of hosts) assert.equal(joiner.passedOn(C, h, A), true, `${h}: C held it before we joined`);
  for (const h of hosts) assert.equal(joiner.passedOn('12D3KooWDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD', h, A), false, `${h}: not our next owner in any ring`);
  // The same rings, not recorded at start-up (a member of the mesh all along): B may not hide A's pages.
  const member = new RecentRings();
  for (const r of [ring(A), ring(A, C), three]) member.push(r);
  for (const h of hosts) assert.equal(member.passedOn(B, h, A), false, `${h}: ours all along`);
});
