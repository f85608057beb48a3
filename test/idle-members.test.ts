import { test } from 'node:test';
import assert from 'node:assert/strict';
import { awaitedJoiner, ignoredForIdle, joinerWaitMs, type IdleMemberFacts } from '../src/crawl/idle-members.js';

const timing = { heartbeatMs: 200, deadAfterMs: 1000 };
/** dead-after + 2 heartbeats: how long a member must have been heard before the idle check waits for it. */
const YOUTH_MS = 1400;
const member = (over: Partial<IdleMemberFacts>): IdleMemberFacts => ({ excluded: false, vouched: false, heardForMs: 0, joiningForMs: 0, silentForMs: 0, ...over });

test('idle members: a vouched member always counts, an excluded one never does', () => {
  assert.equal(ignoredForIdle(member({ vouched: true, heardForMs: 0 }), timing), false, 'a restarted agent holds a frontier');
  assert.equal(ignoredForIdle(member({ vouched: true, heardForMs: 0, joiningForMs: 60_000 }), timing), false);
  assert.equal(ignoredForIdle(member({ vouched: true, excluded: true, heardForMs: 60_000 }), timing), true);
});

test('idle members: an unvouched member counts once heard for dead-after + 2 heartbeats, until it joins too long', () => {
  assert.equal(ignoredForIdle(member({ heardForMs: YOUTH_MS - 1 }), timing), true);
  assert.equal(ignoredForIdle(member({ heardForMs: YOUTH_MS }), timing), false);
  assert.equal(ignoredForIdle(member({ heardForMs: 4000, joiningForMs: 20 * 200 + 1000 }), timing), false);
  assert.equal(ignoredForIdle(member({ heardForMs: 4000, joiningForMs: 20 * 200 + 1001 }), timing), true, 'never finishes joining');
  assert.equal(ignoredForIdle(member({ heardForMs: 4000, joiningForMs: undefined }), timing), false, 'not tracked yet: counts');
});

test('idle members: an identity heard for a second, then silent until declared dead, is never counted', () => {
  // Heartbeats every 200 ms for 1 s, then silence; declared dead dead-after later (swept each heartbeat).
  // Measured by the clock since it appeared, it would count from 1.4 s until its death at about 2.2 s, and a
  // new identity every second would keep changing the idle signature, so the crawl, done, never ends.
  const lastHeartbeatAt = 1000;
  const declaredDeadAt = lastHeartbeatAt + timing.deadAfterMs + timing.heartbeatMs;
  for (let now = 0; now <= declaredDeadAt; now += 50) {
    const heardForMs = Math.min(now, lastHeartbeatAt);
    assert.equal(ignoredForIdle(member({ heardForMs, joiningForMs: now }), timing), true, `counted at ${now} ms`);
  }
  // The same identity speaking on past the youth period counts, as any member would.
  assert.equal(ignoredForIdle(member({ heardForMs: YOUTH_MS, joiningForMs: YOUTH_MS }), timing), false);
});

test('idle members: the end waits for a young joiner still heard, not for a silent one, a vouched one or one joining too long', () => {
  // A joiner listening for the mesh (heard, not vouched yet): the end waits, though the idle rounds ignore it.
  assert.equal(awaitedJoiner(member({ heardForMs: 600, silentForMs: 100 }), timing), true);
  assert.equal(ignoredForIdle(member({ heardForMs: 600, silentForMs: 100 }), timing), true);
  assert.equal(awaitedJoiner(member({ heardForMs: 600, silentForMs: 2 * 200 }), timing), true);
  // Silent for more than two heartbeats (a one-second identity gone): not waited for.
  assert.equal(awaitedJoiner(member({ heardForMs: 600, silentForMs: 2 * 200 + 1 }), timing), false);
  // Past its youth it counts in the idle rounds instead; vouched, excluded or joining too long: never waited for.
  assert.equal(awaitedJoiner(member({ heardForMs: YOUTH_MS }), timing), false);
  assert.equal(awaitedJoiner(member({ heardForMs: 600, vouched: true }), timing), false);
  assert.equal(awaitedJoiner(member({ heardForMs: 600, excluded: true }), timing), false);
  assert.equal(awaitedJoiner(member({ heardForMs: 600, joiningForMs: 20 * 200 + 1001 }), timing), false);
  // The wait is bounded per idle period: a youth and two heartbeats.
  assert.equal(joinerWaitMs(timing), 1000 + 4 * 200);
});
