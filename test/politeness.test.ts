import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  onOutcome, newHostPoliteness, shouldRetry, retryDelayMs, backoffMs, kindOfStatus, kindOfFailure, unpark, describeHost,
  politenessConfig, IpClock, DEFAULT_POLITENESS, type PolitenessConfig, type Outcome,
} from '../src/politeness/host.js';
import { parseRetryAfter } from '../src/politeness/delay.js';
import { seededRandom } from './helpers.js';

const T0 = 1_700_000_000_000;
const noJitter = () => 0;
const cfg = (over: Partial<PolitenessConfig> = {}): PolitenessConfig => ({ ...DEFAULT_POLITENESS, ...over });
const ok = (responseMs = 50): Outcome => ({ kind: 'ok', status: 200, responseMs });

test('Mercator (Heydon & Najork 1999): next allowed = max(floor, Crawl-delay, k × response time)', () => {
  const s = newHostPoliteness();
  let d = onOutcome(s, ok(50), T0, cfg(), noJitter);
  assert.equal(d.nextAllowedAt, T0 + 1000);
  assert.equal(d.reason, 'floor');
  d = onOutcome(s, ok(500), T0, cfg(), noJitter);
  assert.equal(d.nextAllowedAt, T0 + 5000, 'k = 10: a 500 ms response means 5 s');
  assert.equal(d.reason, 'response-time');
  s.crawlDelayMs = 8000;
  d = onOutcome(s, ok(500), T0, cfg(), noJitter);
  assert.equal(d.nextAllowedAt, T0 + 8000);
  assert.equal(d.reason, 'crawl-delay');
  s.crawlDelayMs = 86_400_000; // absurd Crawl-delay: capped at maxDelayMs
  d = onOutcome(s, ok(50), T0, cfg(), noJitter);
  assert.equal(d.nextAllowedAt, T0 + DEFAULT_POLITENESS.maxDelayMs);
  assert.equal(d.retry, false);
});

test('a host whose latency rises to 500 ms is fetched at most every 5 s, and returns to the floor when fast again', () => {
  const s = newHostPoliteness();
  let now = T0;
  const starts: number[] = [];
  const latency = (i: number) => (i >= 5 && i < 15 ? 500 : 20);
  for (let i = 0; i < 25; i++) {
    starts.push(now);
    const end = now + latency(i);
    now = onOutcome(s, ok(latency(i)), end, cfg(), noJitter).nextAllowedAt;
  }
  for (let i = 6; i < 16; i++) assert.ok(starts[i]! - starts[i - 1]! >= 5000, `gap ${i}`);
  for (let i = 17; i < 25; i++) assert.equal(starts[i]! - starts[i - 1]!, 1020, `back to the 1 s floor (+ 20 ms exchange) at ${i}`);
});

test('RFC 9110 §10.2.3: Retry-After is honoured exactly (never jittered), capped at retryAfterMaxMs', () => {
  const s = newHostPoliteness();
  // Worst-case jitter (rand → 1) halves the backoff; Retry-After still holds.
  const d = onOutcome(s, { kind: 'too-many', status: 429, responseMs: 10, retryAfterMs: 5000 }, T0, cfg({ backoffBaseMs: 1000 }), () => 0.999);
  assert.equal(d.nextAllowedAt, T0 + 5000);
  assert.equal(d.reason, 'retry-after');
  // The HTTP-date form, through delay.ts.
  assert.equal(parseRetryAfter(new Date(T0 + 7000).toUTCString(), T0), 7000);
  assert.equal(parseRetryAfter('120', T0), 120_000);
  const s2 = newHostPoliteness();
  const d2 = onOutcome(s2, { kind: 'unavailable', status: 503, responseMs: 10, retryAfterMs: 10 * 86_400_000 }, T0, cfg(), noJitter);
  assert.equal(d2.nextAllowedAt, T0 + DEFAULT_POLITENESS.retryAfterMaxMs);
  // On a 200 it is still the server's wish.
  const s3 = newHostPoliteness();
  assert.equal(onOutcome(s3, { ...ok(), retryAfterMs: 3000 }, T0, cfg(), noJitter).nextAllowedAt, T0 + 3000);
});

test('RFC 6585 §4: repeated 429 backs off exponentially, capped at backoffMaxMs', () => {
  const s = newHostPoliteness();
  const c = cfg({ backoffBaseMs: 5000, backoffMaxMs: 60_000 });
  const delays: number[] = [];
  for (let i = 0; i < 7; i++) delays.push(onOutcome(s, { kind: 'too-many', status: 429, responseMs: 10 }, T0, c, noJitter).nextAllowedAt - T0);
  assert.deepEqual(delays, [5000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
  assert.equal(s.errorRun, 0, '429 is not a failure run: the server is healthy, it asks for less');
  assert.equal(s.pauses, 0);
  assert.equal(s.backoffLevel, 5, 'the level stops where the cap is reached, so decay is quick');
  assert.equal(backoffMs(0, c), 0);
});

test('RFC 6585 §4: backoff jitter stays in [d × (1 − jitter), d] and differs between agents', () => {
  const c = cfg({ backoffBaseMs: 10_000, backoffJitter: 0.5 });
  const runs = [1, 2].map((seed) => {
    const rand = seededRandom(seed);
    const out: number[] = [];
    for (let i = 0; i < 50; i++) {
      const s = newHostPoliteness();
      out.push(onOutcome(s, { kind: 'too-many', status: 429, responseMs: 0 }, T0, c, rand).nextAllowedAt - T0);
    }
    return out;
  });
  for (const r of runs) for (const d of r) assert.ok(d >= 5000 && d <= 10_000, String(d));
  assert.notDeepEqual(runs[0], runs[1]);
  assert.ok(new Set(runs[0]).size > 10, 'spread, not one value');
  const a = seededRandom(42);
  const b = seededRandom(42);
  assert.equal(a(), b(), 'seeded: reproducible');
});

test('RFC 9110 §15.6.4: 503 backs off like 429 and counts toward the failure run', () => {
  const s = newHostPoliteness();
  const d = onOutcome(s, { kind: 'unavailable', status: 503, responseMs: 10 }, T0, cfg(), noJitter);
  assert.equal(d.nextAllowedAt, T0 + 5000);
  assert.equal(d.reason, 'backoff');
  assert.equal(s.errorRun, 1);
  assert.equal(d.retry, true);
});

test('backoff decays: each clean response steps one level down until the floor', () => {
  const s = newHostPoliteness();
  const c = cfg();
  for (let i = 0; i < 3; i++) onOutcome(s, { kind: 'too-many', status: 429, responseMs: 10 }, T0, c, noJitter);
  const delays = [];
  for (let i = 0; i < 4; i++) delays.push(onOutcome(s, ok(20), T0, c, noJitter).nextAllowedAt - T0);
  assert.deepEqual(delays, [10_000, 5000, 1000, 1000]);
  // A 404 is a clean answer too (the server is fine).
  for (let i = 0; i < 2; i++) onOutcome(s, { kind: 'too-many', status: 429, responseMs: 10 }, T0, c, noJitter);
  onOutcome(s, { kind: 'client-error', status: 404, responseMs: 10 }, T0, c, noJitter);
  assert.equal(s.backoffLevel, 1);
});

test('a run of 5 failures pauses the host; the next request is a probe; pauses grow', () => {
  const s = newHostPoliteness();
  const c = cfg();
  let now = T0;
  const fail = (kind: Outcome['kind'] = 'server-error') => onOutcome(s, { kind, status: kind === 'server-error' ? 500 : undefined, responseMs: 30 }, now, c, noJitter);
  for (let i = 0; i < 4; i++) {
    const d = fail(i % 2 ? 'timeout' : 'server-error');
    assert.equal(d.paused, false);
    assert.equal(d.nextAllowedAt, now + 1000);
  }
  let d = fail('network');
  assert.equal(d.paused, true);
  assert.equal(d.reason, 'pause');
  assert.equal(d.nextAllowedAt, now + 60_000);
  assert.equal(s.probing, true);
  // The probe fails: paused again at once, for twice as long.
  now = d.nextAllowedAt;
  d = fail();
  assert.equal(d.paused, true);
  assert.equal(d.nextAllowedAt, now + 120_000);
  assert.equal(s.pauses, 2);
  // The probe succeeds: the run and the pauses are forgotten.
  now = d.nextAllowedAt;
  d = onOutcome(s, ok(), now, c, noJitter);
  assert.equal(d.nextAllowedAt, now + 1000);
  assert.equal(s.pauses, 0);
  assert.equal(s.probing, false);
  // And it takes a full run again to pause.
  for (let i = 0; i < 4; i++) assert.equal(fail().paused, false);
  assert.equal(fail().paused, true);
  assert.equal(s.pausesTotal, 3);
});

test('a host that keeps failing is parked, not retried forever', () => {
  const s = newHostPoliteness();
  const c = cfg({ errorRunToPause: 2, maxPauses: 3, pauseBaseMs: 1000 });
  let now = T0;
  let parkedAt = -1;
  const pauses: number[] = [];
  for (let i = 0; i < 20 && parkedAt < 0; i++) {
    const d = onOutcome(s, { kind: 'timeout', responseMs: 15_000, attempt: 0 }, now, c, noJitter);
    if (d.paused) pauses.push(d.nextAllowedAt - now);
    if (d.park) { parkedAt = i; assert.equal(d.retry, false); assert.equal(d.nextAllowedAt, Infinity); }
    else now = d.nextAllowedAt;
  }
  assert.deepEqual(pauses.length, 3);
  assert.equal(parkedAt, 4, 'two failures, then three failing probes, then the fourth probe fails');
  assert.equal(s.parked, true);
  assert.match(s.parkReason!, /3 pauses/);
  // Later outcomes (e.g. a robots fetch already in flight) do not un-park it.
  const d = onOutcome(s, ok(), now, c, noJitter);
  assert.equal(d.nextAllowedAt, Infinity);
  assert.equal(describeHost(s, now).parked, true);
  unpark(s, now);
  assert.equal(s.parked, false);
  assert.equal(s.probing, true);
});

test('a permanent DNS failure (NXDOMAIN) parks the host at once', () => {
  const s = newHostPoliteness();
  const d = onOutcome(s, { kind: 'dns-permanent', responseMs: 3 }, T0, cfg(), noJitter);
  assert.equal(d.park, true);
  assert.equal(d.retry, false);
  assert.equal(s.parkReason, 'dns-permanent');
});

test('retries: transient failures (reset, timeout, 5xx, 429) up to maxRetries with growing delays; permanent ones never', () => {
  for (const k of ['too-many', 'unavailable', 'server-error', 'timeout', 'network'] as const) {
    assert.equal(shouldRetry(k, 0), true, k);
    assert.equal(shouldRetry(k, 2), true, k);
    assert.equal(shouldRetry(k, 3), false, `${k}: three retries, then recorded as failed`);
  }
  for (const k of ['ok', 'redirect', 'client-error', 'dns-permanent'] as const) assert.equal(shouldRetry(k, 0), false, k);
  assert.equal(shouldRetry('timeout', 4, { maxRetries: 5 }), true);
  const c = cfg({ retryBaseMs: 1000, backoffMaxMs: 5000 });
  assert.deepEqual([0, 1, 2, 3, 4].map((a) => retryDelayMs(a, c, noJitter)), [1000, 2000, 4000, 5000, 5000]);
  const s = newHostPoliteness();
  const d = onOutcome(s, { kind: 'server-error', status: 500, responseMs: 10, attempt: 1 }, T0, c, noJitter);
  assert.equal(d.retry, true);
  assert.equal(d.retryAt, T0 + 2000);
  assert.ok(d.retryAt! >= d.nextAllowedAt);
  const d2 = onOutcome(s, { kind: 'server-error', status: 500, responseMs: 10, attempt: 3 }, T0, c, noJitter);
  assert.equal(d2.retry, false);
  assert.equal(d2.retryAt, undefined);
  const d3 = onOutcome(s, { kind: 'client-error', status: 404, responseMs: 10 }, T0, c, noJitter);
  assert.equal(d3.retry, false);
});

test('RFC 9110 §15: status classes map to outcomes (408 §15.5.9 transient; 501 §15.6.2 and 505 §15.6.6 permanent)', () => {
  assert.equal(kindOfStatus(200), 'ok');
  assert.equal(kindOfStatus(304), 'ok');
  assert.equal(kindOfStatus(301), 'redirect');
  assert.equal(kindOfStatus(404), 'client-error');
  assert.equal(kindOfStatus(410), 'client-error');
  assert.equal(kindOfStatus(429), 'too-many');
  assert.equal(kindOfStatus(503), 'unavailable');
  assert.equal(kindOfStatus(500), 'server-error');
  assert.equal(kindOfStatus(502), 'server-error');
  assert.equal(kindOfStatus(408), 'timeout');
  assert.equal(kindOfStatus(501), 'client-error');
  assert.equal(kindOfFailure('dns', true), 'dns-permanent');
  assert.equal(kindOfFailure('dns', false), 'network');
  assert.equal(kindOfFailure('reset'), 'network');
  assert.equal(kindOfFailure('timeout'), 'timeout');
  assert.equal(kindOfFailure('aborted'), undefined);
});

test('politenessConfig: top-level delays and a politeness section over the defaults', () => {
  const c = politenessConfig({ minDelayMs: 200, delayFactor: 5, politeness: { maxRetries: 1, perIp: true } });
  assert.equal(c.minDelayMs, 200);
  assert.equal(c.ipMinDelayMs, 200);
  assert.equal(c.delayFactor, 5);
  assert.equal(c.maxRetries, 1);
  assert.equal(c.perIp, true);
  assert.equal(c.errorRunToPause, 5);
});

test('IpClock: one request per IP at a time; the next waits for the released time', () => {
  const clock = new IpClock(1000);
  assert.equal(clock.reserve('10.0.0.1', T0), T0, 'granted');
  assert.ok(clock.reserve('10.0.0.1', T0 + 10) > T0 + 10, 'busy: not granted');
  assert.equal(clock.reserve('10.0.0.2', T0 + 10), T0 + 10, 'another IP is independent');
  clock.release('10.0.0.1', T0 + 1500);
  assert.equal(clock.busy('10.0.0.1'), false);
  assert.equal(clock.reserve('10.0.0.1', T0 + 1000), T0 + 1500);
  assert.equal(clock.reserve('10.0.0.1', T0 + 1500), T0 + 1500);
  clock.release('10.0.0.1', T0 + 100); // a shorter release never moves the clock back
  assert.equal(clock.nextAllowed('10.0.0.1'), T0 + 1500);
  clock.release('10.0.0.2', T0 + 20);
  clock.prune(T0 + 2000);
  assert.equal(clock.size, 0);
});

test('hosts sharing an IP never get concurrent or too-close requests (simulated scheduler)', () => {
  const c = cfg({ minDelayMs: 1000, ipMinDelayMs: 500 });
  const clock = new IpClock(c.ipMinDelayMs);
  const rand = seededRandom(7);
  // Six hosts on two IPs, each wanting a request as soon as its own clock allows.
  const hosts = Array.from({ length: 6 }, (_, i) => ({ ip: i < 4 ? '127.0.0.1' : '127.0.0.2', state: newHostPoliteness(), readyAt: T0 }));
  const log: { ip: string; start: number; end: number }[] = [];
  const events: { at: number; run: () => void }[] = [];
  const schedule = (at: number, run: () => void) => { events.push({ at, run }); events.sort((a, b) => a.at - b.at); };
  const tryHost = (h: (typeof hosts)[number], now: number) => {
    const t = clock.reserve(h.ip, now);
    if (t > now) { schedule(t, () => tryHost(h, t)); return; }
    const dur = 20 + Math.floor(rand() * 200);
    const end = now + dur;
    log.push({ ip: h.ip, start: now, end });
    schedule(end, () => {
      const d = onOutcome(h.state, ok(dur), end, c, rand);
      clock.release(h.ip, d.ipNextAllowedAt);
      if (log.length < 400) schedule(d.nextAllowedAt, () => tryHost(h, d.nextAllowedAt));
    });
  };
  for (const h of hosts) schedule(T0, () => tryHost(h, T0));
  while (events.length) events.shift()!.run();
  for (const ip of ['127.0.0.1', '127.0.0.2']) {
    const mine = log.filter((l) => l.ip === ip).sort((a, b) => a.start - b.start);
    assert.ok(mine.length > 50);
    for (let i = 1; i < mine.length; i++) {
      const prev = mine[i - 1]!;
      assert.ok(mine[i]!.start >= prev.end, 'never concurrent');
      const gap = Math.max(c.ipMinDelayMs, c.delayFactor * (prev.end - prev.start));
      assert.ok(mine[i]!.start - prev.end >= gap, `gap ${mine[i]!.start - prev.end} < ${gap}`);
    }
  }
});
