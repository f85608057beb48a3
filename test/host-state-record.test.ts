// The host-state record (src/crawl/host-state.ts): what is worth keeping of a host, restored as it was
// (docs/storage.md "Host state"), and saved only when it changes (src/politeness/control.ts onChange).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { snapshotHost, applyHost, decodeHostState, encodeHostState, HostStates } from '../src/crawl/host-state.js';
import { newHostData } from '../src/crawl/candidate.js';
import { onOutcome, DEFAULT_POLITENESS, newHostPoliteness, politenessConfig } from '../src/politeness/host.js';
import { PolitenessControl } from '../src/politeness/control.js';
import type { RobotsEntry } from '../src/robots/cache.js';
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

test('host state across restarts (injected clock): deadlines hold as absolute times, the level and retries come back as they were and never grow from restarts alone', async () => {
  const dir = tempDir();
  const log = createLogger('silent');
  const cfg = DEFAULT_POLITENESS;
  let now = 1_800_000_000_000;
  // A host that answered 503 three times with Retry-After 40 s, and whose robots.txt was given up on after its retries.
  const d = newHostData();
  for (let i = 0; i < 3; i++) onOutcome(d.polite, { kind: 'unavailable', status: 503, responseMs: 5, retryAfterMs: 40_000 }, now, cfg, () => 0);
  d.robotsFailures = cfg.maxRetries + 1;
  d.robots.set('http://slow.example', { verdict: 'unreachable', expires: now + 600_000 } as RobotsEntry);
  const deadline = d.polite.nextAllowedAt;
  assert.equal(d.polite.backoffLevel, 3);
  assert.ok(deadline >= now + 40_000);
  let store = await openStore(dir);
  const first = new HostStates({ store, log, now: () => now, robotsRetries: cfg.maxRetries });
  first.save('slow.example', d);
  await first.flushed();
  await store.close();
  // Five restarts, 2 s apart, each killed before it contacted the host: nothing about the host changes.
  let restored = newHostData();
  for (let run = 0; run < 5; run++) {
    now += 2000;
    store = await openStore(dir);
    try {
      const states = new HostStates({ store, log, now: () => now, robotsRetries: cfg.maxRetries });
      await states.load();
      restored = newHostData();
      const wait = states.created('slow.example', restored);
      assert.equal(restored.polite.backoffLevel, 3, `run ${run}: the level as it was`);
      assert.equal(restored.robotsFailures, cfg.maxRetries + 1, `run ${run}: the robots.txt retries used as they were`);
      assert.equal(restored.robotsGaveUpUntil, 1_800_000_000_000 + 600_000, `run ${run}: the give-up until its own time`);
      assert.equal(restored.polite.nextAllowedAt, Math.ceil(deadline), `run ${run}: the deadline as an absolute time`);
      // Given up on robots.txt until after the deadline: its turns only record URLs as failed, so they need not wait.
      assert.equal(wait, 0);
      states.save('slow.example', restored); // what a run saves of it without an exchange
      await states.flushed();
    } finally { await store.close(); }
  }
  // The host's own clock still holds every request: a host turn releases it no earlier than this.
  assert.ok(restored.polite.nextAllowedAt >= deadline);

  // Without the give-up the deadline gates the host turn, and ends on time.
  now = 1_900_000_000_000;
  const e = newHostData();
  onOutcome(e.polite, { kind: 'too-many', status: 429, responseMs: 5, retryAfterMs: 30_000 }, now, cfg, () => 0);
  store = await openStore(dir);
  try {
    const a = new HostStates({ store, log, now: () => now, robotsRetries: cfg.maxRetries });
    a.save('ra.example', e);
    await a.flushed();
    now += 10_000; // a restart 10 s later
    const b = new HostStates({ store, log, now: () => now, robotsRetries: cfg.maxRetries });
    await b.load();
    const e2 = newHostData();
    assert.equal(b.created('ra.example', e2), 1_900_000_030_000, 'RFC 9110 §10.2.3: the Retry-After ends when it did');
    assert.equal(b.notBefore('ra.example', now), 1_900_000_030_000);
    assert.equal(b.notBefore('ra.example', 1_900_000_030_000), 0, 'and not later');
    assert.equal(e2.polite.backoffLevel, 1);
    assert.equal(e2.robotsFailures, 0);
    // A record written before robots.txt retries were kept reads as none used.
    const old = JSON.parse(encodeHostState(snapshotHost(e, false, now)!)) as Record<string, unknown>;
    delete old.robotsFailures;
    delete old.robotsUntil;
    assert.equal(decodeHostState(JSON.stringify(old))?.robotsFailures, 0);
  } finally { await store.close(); }
});

test('host state: a parked host restored with URLs queued is not gated (its turns record them as failed, without a request)', async () => {
  const dir = tempDir();
  const log = createLogger('silent');
  const now = 1_800_000_000_000;
  const store = await openStore(dir);
  try {
    const d = newHostData();
    onOutcome(d.polite, { kind: 'dns-permanent', responseMs: 1 }, now, DEFAULT_POLITENESS);
    const a = new HostStates({ store, log, now: () => now });
    a.save('gone.example', d);
    await a.flushed();
    const b = new HostStates({ store, log, now: () => now });
    await b.load();
    const d2 = newHostData();
    b.created('gone.example', d2);
    assert.equal(d2.polite.parked, true);
    assert.equal(b.notBefore('gone.example', now), 0);
  } finally { await store.close(); }
});

test('politeness on-change hook: called when the backoff, a Retry-After, a pause or parking changes, not for an exchange at the floor', () => {
  const control = new PolitenessControl(politenessConfig({ minDelayMs: 100, delayFactor: 0 }), () => 0);
  const changed: string[] = [];
  control.onChange = (host) => changed.push(host);
  const st = newHostPoliteness();
  const ok = { ok: true, status: 200, durationMs: 5, header: () => undefined };
  let now = 1_800_000_000_000;
  control.record('h', st, ok, 0, now);
  assert.deepEqual(changed, [], 'a page at the floor saves nothing');
  control.record('h', st, { ok: true, status: 429, durationMs: 5, header: (n: string) => (n === 'retry-after' ? '20' : undefined) }, 0, now += 1000);
  assert.deepEqual(changed, ['h'], '429: the level rose');
  control.record('h', st, ok, 0, now += 1000);
  assert.equal(changed.length, 2, 'a clean answer at level 1 lowers the level');
  control.record('h', st, { ...ok, header: (n: string) => (n === 'retry-after' ? '30' : undefined) }, 0, now += 1000);
  assert.equal(changed.length, 3, 'a Retry-After on a clean answer is a new deadline');
  control.record('h', st, ok, 0, now += 1000);
  assert.equal(changed.length, 3, 'back at the floor: nothing more');
  for (let i = 0; i < DEFAULT_POLITENESS.errorRunToPause; i++) control.record('h', st, { ok: false, kind: 'timeout', durationMs: 5 }, 0, now += 1000);
  assert.equal(changed.length, 4, 'a run of failures: only the pause that ends it');
  control.record('h', st, { ok: false, kind: 'aborted', durationMs: 5 }, 0, now += 1000);
  assert.equal(changed.length, 4, 'our own abort (a shutdown) is not the host\'s doing');
});
