// The host-state record (src/crawl/host-state.ts): what is worth keeping of a host, restored as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { snapshotHost, applyHost, decodeHostState, encodeHostState, HostStates } from '../src/crawl/host-state.js';
import { newHostData } from '../src/crawl/candidate.js';
import { onOutcome, DEFAULT_POLITENESS } from '../src/politeness/host.js';
import { openStore } from '../src/store/db.js';
import { tempDir } from './helpers.js';
import { createLogger } from '../src/util/log.js';

test('host state: a host at its floor has no record; a Retry-After, a backoff, a pause or an override has one, restored as it was', () => {
  const now = 1_800_000_000_000;
  const d = newHostData();
  onOutcome(d.polite, { kind: 'ok', status: 200, responseMs: 10 }, now, DEFAULT_POLITENESS);
  assert.equal(snapshotHost(d, false, now), null, 'nothing to keep');
  // RFC 9110 §10.2.3: a 429 with Retry-After 30 s.
  onOutcome(d.polite, { kind: 'too-many', status: 429, responseMs: 10, retryAfterMs: 30_000 }, now, DEFAULT_POLITENESS, () => 0);
  const s = snapshotHost(d, true, now + 1000)!;
  assert.equal(s.backoff, 1);
  assert.ok(s.notBefore >= now + 30_000, 'not before the Retry-After ends');
  assert.equal(s.operatorPaused, true);
  const back = decodeHostState(encodeHostState(s));
  assert.deepEqual(back, s, 'the JSON form round-trips');
  const fresh = newHostData();
  const until = applyHost(fresh, back!);
  assert.equal(until, s.notBefore);
  assert.equal(fresh.polite.backoffLevel, 1);
  assert.equal(fresh.operatorPaused, true);
  assert.ok(fresh.polite.nextAllowedAt >= now + 30_000);
  assert.equal(snapshotHost(fresh, true, now + 1000)!.notBefore, s.notBefore, 'the new owner would hand on the same wait');
});

test('host state: malformed records are refused, never half-applied', () => {
  for (const bad of ['', 'null', '[]', '{"backoff":-1}', '{"backoff":1,"notBefore":0,"pausedUntil":0,"pauses":0,"parked":"no","operatorPaused":false,"minDelayMs":null,"pageBudget":null}',
    '{"backoff":1e9,"notBefore":0,"pausedUntil":0,"pauses":0,"parked":false,"operatorPaused":false,"minDelayMs":null,"pageBudget":null}']) {
    assert.equal(decodeHostState(bad), null, bad);
  }
});

test('host state: saved to the store, restored when the frontier next sees the host, with its wait for the host turn', async () => {
  const dir = tempDir();
  const log = createLogger('silent');
  let now = 1_800_000_000_000;
  const store = await openStore(dir);
  const a = new HostStates({ store, log, now: () => now });
  const d = newHostData();
  onOutcome(d.polite, { kind: 'too-many', status: 429, responseMs: 5, retryAfterMs: 20_000 }, now, DEFAULT_POLITENESS, () => 0);
  a.save('slow.example', d);
  await a.flushed();
  await store.close();
  const again = await openStore(dir);
  try {
    const b = new HostStates({ store: again, log, now: () => now });
    await b.load();
    const d2 = newHostData();
    now += 5000;
    assert.ok(b.created('slow.example', d2) >= now + 15_000 - 1);
    assert.ok(b.notBefore('slow.example', now) > now, 'the host turn waits');
    assert.equal(b.notBefore('other.example', now), 0);
    assert.equal(b.notBefore('slow.example', now + 20_000), 0, 'and not after the wait');
  } finally { await again.close(); }
});
