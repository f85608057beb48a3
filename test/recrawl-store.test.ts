// The recrawl edge (src/recrawl/recrawler.ts) against a real LevelDB: the
// due index, leases, the revisit/discovery budget, sitemap hints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, type Store } from '../src/store/db.js';
import { hostKey, seenKey, dueKey } from '../src/store/keys.js';
import { Recrawler, type RevisitUrl } from '../src/recrawl/recrawler.js';
import { defaultRecrawlSettings, scheduleConfig, type RecrawlSettings } from '../src/recrawl/settings.js';
import {
  decodeRecrawlState, encodeRecrawlState, recordFetch, revisitPriority, encodeHints, decodeHints, seedInterval,
} from '../src/recrawl/schedule.js';
import { QueuedUrl } from '../src/frontier/frontier.js';
import type { BatchOp } from '../src/seen/drum.js';
import { tempDir } from './helpers.js';

const H = 3_600_000;
const D = 24 * H;

function settings(over: Partial<RecrawlSettings> = {}): RecrawlSettings {
  return { ...defaultRecrawlSettings(), enabled: true, scanIntervalMs: 1_000_000, ...over };
}

interface Harness { store: Store; rc: Recrawler; queued: RevisitUrl[]; frontierQueued: { n: number }; owned: Set<string> | null }

async function harness(over: Partial<RecrawlSettings> = {}, now?: () => number): Promise<Harness> {
  const store = await openStore(tempDir());
  const queued: RevisitUrl[] = [];
  const frontierQueued = { n: 0 };
  const h: Harness = { store, rc: undefined as never, queued, frontierQueued, owned: null };
  h.rc = new Recrawler(store, settings(over), {
    enqueue: async (items, ops: BatchOp[]) => { await store.db.batch(ops as never); queued.push(...items); frontierQueued.n += items.length; },
    queued: () => frontierQueued.n,
    owns: (host) => h.owned === null || h.owned.has(host),
    onError: (err) => { throw err; },
    now,
  });
  return h;
}

/** Stores a state due at `dueAt` for url, as a completed fetch would. */
async function plant(store: Store, url: string, dueAt: number, intervalMs = H): Promise<Buffer> {
  const host = new URL(url).hostname;
  const key = seenKey(hostKey(host), url);
  const st = { ...recordFetch(undefined, { fetchedAt: dueAt - intervalMs, etag: '"x"' }), intervalMs, nextDueAt: dueAt };
  const v = Buffer.concat([Buffer.from([2]), Buffer.from(url)]);
  await store.recrawl.put(key, encodeRecrawlState(st));
  await store.recrawlDue.put(dueKey(dueAt, key), v);
  return key;
}

async function scanOnce(rc: Recrawler): Promise<void> {
  (rc as unknown as { kick(): void }).kick();
  while ((rc as unknown as { scanning?: Promise<void> }).scanning) await (rc as unknown as { scanning: Promise<void> }).scanning;
}

function queuedUrl(url: string): QueuedUrl {
  return new QueuedUrl(Buffer.alloc(8), url, 'page', 2, 0, 4, 0);
}

test('due URLs come back from one range scan of the due index, oldest first, with a priority that grows with overdue time', async () => {
  const { store, rc, queued } = await harness();
  const now = Date.now();
  await plant(store, 'http://a.test/late', now - 10 * H, H);
  await plant(store, 'http://b.test/just', now - 1000, H);
  await plant(store, 'http://a.test/future', now + D, H);
  await scanOnce(rc);
  assert.deepEqual(queued.map((q) => q.url), ['http://a.test/late', 'http://b.test/just'], 'only due URLs, oldest first');
  assert.equal(queued[0]!.priority, revisitPriority(now - 10 * H, now, H));
  assert.ok(queued[0]!.priority! > queued[1]!.priority!, 'the longer overdue, the higher the class');
  assert.equal(queued[0]!.priority, 7, 'eight intervals late: the top class');
  assert.equal(queued[0]!.depth, 2);
  // A lease replaces the due entry: not handed out twice, but back after maxInterval if the fetch never completes.
  const keys = (await store.recrawlDue.keys().all()).map((k) => Number(k.readBigUInt64BE(0)));
  assert.equal(keys.length, 3);
  assert.ok(keys.filter((t) => t >= now + rc.cfg.maxIntervalMs - 5).length === 2, 'two leases at now + maxInterval');
  await scanOnce(rc);
  assert.equal(queued.length, 2, 'a second scan hands out nothing more');
  await store.close();
});

test('a completed revisit replaces its lease with the next due time; 304 doubles the interval, 404 drops the URL', async () => {
  const { store, rc } = await harness();
  const now = Date.now();
  const k1 = await plant(store, 'http://a.test/one', now - 1, 4 * H);
  const k2 = await plant(store, 'http://a.test/two', now - 1, 4 * H);
  await scanOnce(rc);
  const q1 = queuedUrl('http://a.test/one');
  const q2 = queuedUrl('http://a.test/two');
  assert.deepEqual(await rc.prepare(q1, k1), [['If-None-Match', '"x"']], 'RFC 9110 §13.1.2: the stored ETag');
  await rc.prepare(q2, k2);
  const at = Date.now();
  await store.db.batch([...rc.outcomeOps(q1, k1, { at, status: 304 }), ...rc.outcomeOps(q2, k2, { at, status: 404 })] as never);
  const s1 = decodeRecrawlState((await store.recrawl.get(k1))!)!;
  assert.equal(s1.intervalMs, 8 * H, 'RFC 9110 §15.4.5: 304 = unchanged, interval doubled');
  assert.equal(await store.recrawl.get(k2), undefined, '404 on a revisit: no more revisits');
  const due = await store.recrawlDue.iterator().all();
  assert.equal(due.length, 1, 'exactly one due entry left');
  assert.equal(Number(due[0]![0].readBigUInt64BE(0)), at + 8 * H);
  assert.equal(rc.summary().waiting, 0);
  await store.close();
});

test('with discovery waiting, revisits get revisitShare of the slots (70/30); alone, all of them', async () => {
  const { store, rc, queued, frontierQueued } = await harness({ revisitShare: 0.7, batchSize: 10_000 });
  const now = Date.now();
  for (let i = 0; i < 200; i++) await plant(store, `http://h${i % 7}.test/p${i}`, now - 1000 - i);
  frontierQueued.n = 1000; // discovery URLs waiting
  const discovery = queuedUrl('http://d.test/x');
  const credit = (n: number) => { for (let i = 0; i < n; i++) rc.outcomeOps(discovery, Buffer.alloc(16, i), { at: now, status: 0 }); };
  credit(30);
  await scanOnce(rc);
  const got = queued.length;
  assert.ok(got >= 68 && got <= 72, `30 discovery fetches buy about 70 revisits, got ${got}`);
  frontierQueued.n = queued.length; // only revisits left in the frontier
  await scanOnce(rc);
  assert.equal(queued.length, 200, 'no discovery waiting: every due URL goes in');
  await store.close();
});

test('a host another agent owns now loses its recrawl state here (no transfer)', async () => {
  const h = await harness();
  const now = Date.now();
  const k = await plant(h.store, 'http://gone.test/a', now - 1);
  await plant(h.store, 'http://kept.test/a', now - 1);
  h.owned = new Set(['kept.test']);
  await scanOnce(h.rc);
  assert.deepEqual(h.queued.map((q) => q.url), ['http://kept.test/a']);
  assert.equal(await h.store.recrawl.get(k), undefined);
  assert.equal(h.rc.stats.dropped, 1);
  await h.store.close();
});

test('sitemaps.org: <changefreq>/<lastmod>/<priority> are kept until the first fetch and seed its interval; a newer <lastmod> makes a known URL due', async () => {
  // The recrawler's clock, stepped by the test (no waiting for the sitemap's <lastmod> to pass).
  let clock = Date.now();
  const { store, rc } = await harness({}, () => clock);
  const url = 'http://s.test/news';
  const key = seenKey(hostKey('s.test'), url);
  rc.noteHint(key, { loc: url, changefreq: 'hourly', priority: 0.8 });
  await rc.flushHints();
  assert.deepEqual(decodeHints(await store.recrawlHints.get(key)), { changefreq: 'hourly', priority: 0.8 });
  const q = queuedUrl(url);
  await rc.prepare(q, key);
  const at = clock;
  await store.db.batch(rc.outcomeOps(q, key, { at, status: 200, digest: new Uint8Array(8), etag: '"n1"' }) as never);
  const st = decodeRecrawlState((await store.recrawl.get(key))!)!;
  assert.equal(st.intervalMs, H, 'hourly → 1 h');
  assert.equal(await store.recrawlHints.get(key), undefined, 'the hint is consumed');
  // A later sitemap says the page was modified after our capture: due now.
  rc.noteHint(key, { loc: url, lastmod: new Date(at + 1000).toISOString() });
  clock += 1100;
  await rc.flushHints();
  const st2 = decodeRecrawlState((await store.recrawl.get(key))!)!;
  assert.ok(st2.nextDueAt <= clock && st2.nextDueAt >= at + 1000);
  const due = await store.recrawlDue.keys().all();
  assert.equal(due.length, 1);
  assert.equal(Number(due[0]!.readBigUInt64BE(0)), st2.nextDueAt, 'the due entry moved with it');
  assert.equal(await store.recrawlHints.get(key), undefined, 'a known URL keeps no hint');
  assert.equal(rc.stats.madeDueBySitemap, 1);
  // Bounded: past maxHints, hints are counted and dropped.
  const small = await harness({ maxHints: 2 });
  for (let i = 0; i < 5; i++) small.rc.noteHint(Buffer.alloc(16, i), { loc: `http://x.test/${i}`, changefreq: 'daily' });
  await small.rc.flushHints();
  assert.equal((await small.store.recrawlHints.keys().all()).length, 2);
  assert.equal(small.rc.stats.hintsDropped, 3);
  await small.store.close();
  await store.close();
});

test('time scale: bounds and <changefreq> periods scale together (1 simulated hour = 100 ms)', () => {
  const cfg = scheduleConfig(settings({ speedup: 36_000 }));
  assert.equal(cfg.minIntervalMs, 100);
  assert.equal(cfg.maxIntervalMs, 72_000);
  assert.equal(seedInterval({ changefreq: 'daily' }, Date.now(), cfg), 2400);
  assert.equal(encodeHints({}), null);
  assert.equal(decodeHints(Buffer.from([8, 0, 0, 0, 0, 0, 0, 0, 0])), undefined, 'unknown flag');
});
