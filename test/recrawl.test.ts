import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  recordFetch, seedInterval, nextFetchAt, applySitemapHint, nextKind, newShare, conditionalHeaders,
  encodeRecrawlState, decodeRecrawlState, parseHttpDate, DEFAULT_RECRAWL, RECRAWL_STATE_MAX_BYTES,
  type RecrawlState, type RecrawlConfig,
} from '../src/recrawl/schedule.js';
import { xxh64 } from '../src/hash/xxhash.js';

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.UTC(2025, 0, 6, 12, 0, 0);
const dig = (s: string) => { const b = Buffer.alloc(8); b.writeBigUInt64BE(xxh64(s)); return new Uint8Array(b); };

test('adaptive interval: halved when the digest changed, doubled when it did not, clamped to [1 h, 30 d]', () => {
  let s = recordFetch(undefined, { fetchedAt: T0, digest: dig('v1') });
  assert.equal(s.intervalMs, D, 'no sitemap hint: initialIntervalMs');
  assert.equal(s.nextDueAt, T0 + D);
  s = recordFetch(s, { fetchedAt: T0 + D, digest: dig('v2') });
  assert.equal(s.intervalMs, D / 2);
  assert.equal(s.changes, 1);
  s = recordFetch(s, { fetchedAt: T0 + 2 * D, digest: dig('v2') });
  assert.equal(s.intervalMs, D);
  assert.equal(s.nextDueAt, T0 + 3 * D);
  assert.equal(nextFetchAt(s, T0 + 2 * D), T0 + 3 * D);
  let t = T0 + 3 * D;
  for (let i = 0; i < 10; i++) { s = recordFetch(s, { fetchedAt: t, digest: dig('v2') }); t = s.nextDueAt; }
  assert.equal(s.intervalMs, 30 * D, 'clamped at maxIntervalMs');
  for (let i = 0; i < 12; i++) { s = recordFetch(s, { fetchedAt: t, digest: dig(`x${i}`) }); t = s.nextDueAt; }
  assert.equal(s.intervalMs, H, 'clamped at minIntervalMs');
  assert.equal(s.fetches, 25);
  const c: RecrawlConfig = { ...DEFAULT_RECRAWL, minIntervalMs: 10 * 60_000, maxIntervalMs: 2 * D };
  let s2 = recordFetch(undefined, { fetchedAt: T0, digest: dig('a') }, c);
  for (let i = 0; i < 5; i++) s2 = recordFetch(s2, { fetchedAt: T0, digest: dig('a') }, c);
  assert.equal(s2.intervalMs, 2 * D, 'configurable bounds');
});

test('RFC 9110 §15.4.5: a 304 counts as unchanged and keeps the stored validators', () => {
  let s = recordFetch(undefined, { fetchedAt: T0, digest: dig('a'), etag: '"abc"', lastModified: 'Sun, 05 Jan 2025 10:00:00 GMT' });
  s = recordFetch(s, { fetchedAt: T0 + D, notModified: true });
  assert.equal(s.intervalMs, 2 * D);
  assert.equal(s.etag, '"abc"');
  assert.equal(s.lastModified, Date.UTC(2025, 0, 5, 10));
  assert.equal(s.capturedAt, T0, 'the capture a revisit record refers to is still the first one');
  assert.equal(s.fetchedAt, T0 + D);
  s = recordFetch(s, { fetchedAt: T0 + 3 * D, notModified: true, etag: '"abd"' });
  assert.equal(s.etag, '"abd"', 'a 304 may update the ETag');
  // A new 200 without validators drops the old ones: they belong to the old representation.
  s = recordFetch(s, { fetchedAt: T0 + 7 * D, digest: dig('b') });
  assert.equal(s.etag, undefined);
  assert.equal(s.lastModified, undefined);
  assert.equal(s.capturedAt, T0 + 7 * D);
  assert.equal(s.intervalMs, 2 * D, 'changed: halved');
});

test('sitemaps.org: <changefreq> and <lastmod> seed the first interval', () => {
  assert.equal(seedInterval({ changefreq: 'hourly' }, T0), H);
  assert.equal(seedInterval({ changefreq: 'always' }, T0), H, 'always → the floor');
  assert.equal(seedInterval({ changefreq: 'daily' }, T0), D);
  assert.equal(seedInterval({ changefreq: 'weekly' }, T0), 7 * D);
  assert.equal(seedInterval({ changefreq: 'yearly' }, T0), 30 * D, 'clamped');
  assert.equal(seedInterval({ changefreq: 'never' }, T0), 30 * D);
  assert.equal(seedInterval({ lastmod: new Date(T0 - 3 * D).toISOString() }, T0), 3 * D, 'age of the page');
  assert.equal(seedInterval({ lastmod: T0 - 10 * 60_000 }, T0), H);
  assert.equal(seedInterval({ changefreq: 'monthly', lastmod: T0 - 2 * D }, T0), 2 * D, 'the shorter wins');
  assert.equal(seedInterval({ lastmod: T0 + D }, T0), D, 'a future lastmod is ignored');
  assert.equal(seedInterval({ lastmod: 'garbage' }, T0), D);
  assert.equal(recordFetch(undefined, { fetchedAt: T0, hints: { changefreq: 'hourly' } }).nextDueAt, T0 + H);
});

test('a sitemap <lastmod> newer than the capture makes the URL due now', () => {
  const s = recordFetch(undefined, { fetchedAt: T0, digest: dig('a') });
  const now = T0 + 2 * H;
  assert.equal(applySitemapHint(s, { lastmod: T0 + H }, now).nextDueAt, now);
  assert.equal(applySitemapHint(s, { lastmod: T0 - H }, now), s, 'older than the capture: nothing to do');
  assert.equal(applySitemapHint(s, { changefreq: 'hourly' }, now), s);
});

test('budget share: 70/30 between revisits and discovery, evenly interleaved; no debt while one side is empty', () => {
  const sh = newShare();
  const picks: string[] = [];
  for (let i = 0; i < 100; i++) picks.push(nextKind(sh, 0.7, true, true)!);
  assert.equal(picks.filter((p) => p === 'revisit').length, 70);
  for (let i = 0; i + 10 <= 100; i += 10) {
    assert.equal(picks.slice(i, i + 10).filter((p) => p === 'revisit').length, 7, 'every window of ten is 7/3');
  }
  // 50 picks with no discovery waiting, then both again: still 70/30 from there on.
  for (let i = 0; i < 50; i++) assert.equal(nextKind(sh, 0.7, true, false), 'revisit');
  const after: string[] = [];
  for (let i = 0; i < 10; i++) after.push(nextKind(sh, 0.7, true, true)!);
  assert.equal(after.filter((p) => p === 'discovery').length, 3);
  assert.equal(nextKind(sh, 0.7, false, true), 'discovery');
  assert.equal(nextKind(sh, 0.7, false, false), null);
  assert.equal(nextKind(newShare(), 0, true, true), 'discovery');
  assert.equal(nextKind(newShare(), 1, true, true), 'revisit');
});

test('RFC 9110 §13.1.2 / §13.1.3: conditional headers from the stored ETag and Last-Modified', () => {
  const s = recordFetch(undefined, { fetchedAt: T0, etag: 'W/"x-1"', lastModified: 'Sunday, 05-Jan-25 10:00:00 GMT' });
  assert.deepEqual(conditionalHeaders(s), [['If-None-Match', 'W/"x-1"'], ['If-Modified-Since', 'Sun, 05 Jan 2025 10:00:00 GMT']]);
  assert.deepEqual(conditionalHeaders({}), []);
  const only = recordFetch(undefined, { fetchedAt: T0, lastModified: 'Sun Jan  5 10:00:00 2025' });
  assert.deepEqual(conditionalHeaders(only), [['If-Modified-Since', 'Sun, 05 Jan 2025 10:00:00 GMT']], 'asctime is GMT (RFC 9110 §5.6.7)');
  // Unusable values are not stored: control characters, over-long tags, future or bad dates.
  const bad = recordFetch(undefined, { fetchedAt: T0, etag: '"a\nb"', lastModified: new Date(T0 + D).toUTCString() });
  assert.deepEqual(conditionalHeaders(bad), []);
  assert.equal(recordFetch(undefined, { fetchedAt: T0, etag: `"${'x'.repeat(300)}"` }).etag, undefined);
  assert.equal(parseHttpDate('not a date'), undefined);
});

test('LevelDB encoding: round trip, versioned, bounded, damage → null', () => {
  const full: RecrawlState = {
    intervalMs: 2 * D, fetchedAt: T0, capturedAt: T0 - D, nextDueAt: T0 + 2 * D,
    etag: `"${'e'.repeat(253)}"`, lastModified: T0 - 5 * D, digest: new Uint8Array(32).fill(7), fetches: 70_000, changes: 3,
  };
  const b = encodeRecrawlState(full);
  assert.equal(b.length, RECRAWL_STATE_MAX_BYTES - 32, 'largest value: 255-byte ETag, 32-byte digest');
  const back = decodeRecrawlState(b)!;
  assert.deepEqual(back, { ...full, fetches: 0xffff });
  const small = recordFetch(undefined, { fetchedAt: T0 + 123, digest: dig('a') });
  const sb = encodeRecrawlState(small);
  assert.equal(sb.length, 30 + 1 + 8);
  const s2 = decodeRecrawlState(sb)!;
  assert.equal(s2.fetchedAt, T0 + 123, 'millisecond precision (time-scaled intervals can be 100 ms)');
  assert.equal(decodeRecrawlState(encodeRecrawlState({ ...small, nextDueAt: T0 + 0.5 }))!.nextDueAt, T0 + 1, 'rounded up: never due early');
  assert.deepEqual(s2.digest, small.digest);
  assert.deepEqual(decodeRecrawlState(encodeRecrawlState({ intervalMs: H, fetchedAt: 0, capturedAt: 0, nextDueAt: 0, fetches: 0, changes: 0 })),
    { intervalMs: H, fetchedAt: 0, capturedAt: 0, nextDueAt: 0, fetches: 0, changes: 0 });
  // Damage.
  assert.equal(decodeRecrawlState(Buffer.from([1, ...sb.subarray(1)])), null, 'unknown version (v1 stored seconds)');
  assert.equal(decodeRecrawlState(sb.subarray(0, sb.length - 1)), null, 'truncated');
  assert.equal(decodeRecrawlState(Buffer.concat([sb, Buffer.from([0])])), null, 'trailing bytes');
  assert.equal(decodeRecrawlState(Buffer.alloc(3)), null);
  const flags = Buffer.from(sb); flags[1] = 0x80;
  assert.equal(decodeRecrawlState(flags), null, 'unknown flag');
  for (let n = 0; n < 500; n++) {
    const junk = Buffer.from(Array.from({ length: n % 80 }, (_, i) => (i * 37 + n * 11) & 0xff));
    decodeRecrawlState(junk); // never throws
  }
});

test('over a simulated week, fast-changing pages are fetched far more often than static ones, which are mostly 304s', () => {
  // Page A changes every 2 h, page B never. The server answers 304 when the ETag matches.
  const changeEvery = { A: 2 * H, B: Infinity } as const;
  const counts = { A: { fetches: 0, notModified: 0 }, B: { fetches: 0, notModified: 0 } };
  for (const page of ['A', 'B'] as const) {
    const version = (t: number) => (changeEvery[page] === Infinity ? 0 : Math.floor((t - T0) / changeEvery[page]));
    let s: RecrawlState | undefined;
    let t = T0;
    while (t < T0 + 7 * D) {
      const v = version(t);
      const etag = `"${page}${v}"`;
      const inm = s ? conditionalHeaders(s).find(([k]) => k === 'If-None-Match')?.[1] : undefined;
      const notModified = inm === etag;
      counts[page].fetches++;
      if (notModified) counts[page].notModified++;
      s = recordFetch(s, notModified ? { fetchedAt: t, notModified: true } : { fetchedAt: t, etag, digest: dig(`${page}${v}`) });
      t = s.nextDueAt;
    }
  }
  assert.ok(counts.A.fetches >= 5 * counts.B.fetches, JSON.stringify(counts));
  assert.ok(counts.B.notModified >= counts.B.fetches - 1, 'static page: every revisit is a 304');
});
