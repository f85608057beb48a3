// Suspicion before takeover (docs/mesh.md "Suspicion before takeover"): a
// member silent past the dead rule is suspect for the takeover grace, and its
// hosts move only once the grace is over; a heartbeat within it clears it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemberTable } from '../src/mesh/membership.js';
import { ID_A, ID_B, hb } from './mesh-fixtures.js';

test('MemberTable: silent past the dead rule = suspect; dead only after the grace without a break; heard again = cleared', () => {
  const t = new MemberTable(ID_A, { deadAfterMs: 1000, maxMembers: 10, suspectGraceMs: 5000 });
  t.setSelf(hb(ID_A), 0);
  assert.equal(t.observe(hb(ID_B, { seq: 1 }), 0), 'new');
  const unconnected = () => false;
  assert.deepEqual(t.sweep(1001, unconnected), []);
  assert.equal(t.isSuspect(ID_B), true, 'silent and unconnected: suspect');
  assert.deepEqual([...t.ringMembers().keys()].sort(), [ID_A, ID_B].sort(), 'a suspect keeps its hosts');
  assert.deepEqual(t.sweep(5000, unconnected), []);
  // A heartbeat within the grace: no longer suspect, and the grace starts over at the next silence.
  assert.equal(t.observe(hb(ID_B, { seq: 2 }), 5500), 'updated');
  assert.deepEqual(t.sweep(5600, unconnected), []);
  assert.equal(t.isSuspect(ID_B), false);
  assert.deepEqual(t.sweep(6501, unconnected), []);
  assert.equal(t.isSuspect(ID_B), true);
  assert.deepEqual(t.sweep(11_500, unconnected), [], 'not yet: 4,999 ms suspect');
  assert.deepEqual(t.sweep(11_501, unconnected), [ID_B], 'the grace is over: dead');
  assert.equal(t.get(ID_B), undefined);
  assert.equal(t.isSuspect(ID_B), false);

  // Silent but connected is not suspect until the longest silence (4 × dead-after by default).
  const c = new MemberTable(ID_A, { deadAfterMs: 1000, maxMembers: 10, suspectGraceMs: 2000 });
  c.setSelf(hb(ID_A), 0);
  c.observe(hb(ID_B), 0);
  assert.deepEqual(c.sweep(3000, () => true), []);
  assert.equal(c.isSuspect(ID_B), false);
  assert.deepEqual(c.sweep(4001, () => true), []);
  assert.equal(c.isSuspect(ID_B), true);
  assert.deepEqual(c.sweep(6001, () => true), [ID_B]);
});

test('MemberTable: without a grace (the default) a silent member is dead at once, as before', () => {
  const t = new MemberTable(ID_A, { deadAfterMs: 1000, maxMembers: 10 });
  t.setSelf(hb(ID_A), 0);
  t.observe(hb(ID_B), 0);
  assert.deepEqual(t.sweep(1001, () => false), [ID_B]);
  assert.equal(t.isSuspect(ID_B), false);
});
