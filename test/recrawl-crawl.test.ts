// Recrawl (docs/recrawl.md): a crawl with recrawl on, over a simulated week
// of the synthetic web (1 simulated hour = 100 ms), where some pages change
// every simulated hour and the others never. Checked against the web's request
// log and the WARC files as the project's reader reads them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, checkPoliteness } from '../bench/web/index.js';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { readWarc, verifyWarc } from '../src/warc/reader.js';
import { openStore } from '../src/store/db.js';
import { decodeRecrawlState } from '../src/recrawl/schedule.js';
import { tempDir } from './helpers.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SPEEDUP = 36_000; // 1 simulated hour = 100 ms
const WEEK_REAL_MS = (7 * DAY) / SPEEDUP; // 16.8 s
const MIN_DELAY = 10;

/** Pages /p/1, /p/4 of every host change every simulated hour; the others never. */
function isFast(path: string): boolean {
  const m = /\/p\/(\d+)$/.exec(path);
  return m !== null && Number(m[1]) % 3 === 1;
}

test('recrawl: over a simulated week, fast-changing pages are fetched several times more often than static ones; static ones are mostly 304s, stored as WARC/1.1 §6.7.3 server-not-modified revisit records', async (t) => {
  const web = await startSyntheticWeb({
    seed: 21, hosts: 4, pagesPerHost: 6, outLinks: 3, crossHostShare: 0, pageBytes: { min: 1500, max: 3000 },
    changeEveryMs: (_host, path) => (isFast(path) ? HOUR / SPEEDUP : undefined),
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), minDelayMs: MIN_DELAY, delayFactor: 0, concurrency: 8,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
      // Bounds 1 h – 2 d simulated: static pages (sitemap lastmod in 2024) start at the ceiling.
      recrawl: { enabled: true, speedup: SPEEDUP, minIntervalMs: HOUR, maxIntervalMs: 2 * DAY },
      maxDurationMs: WEEK_REAL_MS,
    });
    const summary = await agent.done;
    const log = web.requests().filter((r) => !r.path.startsWith('/robots') && r.path !== '/sitemap.xml');
    const byUrl = new Map<string, { fast: boolean; fetches: number; conditional: number; notModified: number }>();
    for (const r of log) {
      const u = r.url ?? `${r.host}${r.path}`;
      let e = byUrl.get(u);
      if (!e) byUrl.set(u, e = { fast: isFast(r.path), fetches: 0, conditional: 0, notModified: 0 });
      e.fetches++;
      if (r.conditional) e.conditional++;
      if (r.status === 304) e.notModified++;
    }
    const fast = [...byUrl.values()].filter((e) => e.fast);
    const slow = [...byUrl.values()].filter((e) => !e.fast);
    assert.equal(fast.length, 8, 'every fast page was found (links and sitemaps)');
    assert.equal(slow.length, 16);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const fastMean = mean(fast.map((e) => e.fetches));
    const slowMean = mean(slow.map((e) => e.fetches));
    const detail = JSON.stringify({ fastMean, slowMean, recrawl: summary.recrawl });
    t.diagnostic(detail);
    assert.ok(fastMean >= 4 * slowMean, `fast pages fetched several times more often: ${detail}`);
    assert.ok(fastMean >= 20, `fast pages revisited many times in a simulated week: ${detail}`);
    // Static pages: every fetch after the first is conditional, and (nearly) all are answered 304.
    const slowRevisits = slow.reduce((n, e) => n + e.fetches - 1, 0);
    const slow304 = slow.reduce((n, e) => n + e.notModified, 0);
    assert.ok(slowRevisits >= slow.length, `static pages are revisited too: ${detail}`);
    assert.equal(slow.reduce((n, e) => n + e.conditional, 0), slowRevisits, 'RFC 9110 §13.1: every revisit is a conditional GET');
    assert.ok(slow304 >= 0.9 * slowRevisits, `static pages mostly answered 304: ${slow304}/${slowRevisits}`);
    // Fast pages: a new version each time, so mostly 200s even though the requests are conditional.
    const fast304 = fast.reduce((n, e) => n + e.notModified, 0);
    assert.ok(fast304 < 0.2 * fast.reduce((n, e) => n + e.fetches, 0), 'changing pages are mostly 200s');
    // Politeness holds for revisits as for any fetch.
    assert.deepEqual(checkPoliteness(web.requests(), MIN_DELAY, { toleranceMs: 5 }).slice(0, 3), []);

    // WARC: one server-not-modified revisit record per 304, pointing at the capture it confirms.
    const warcDir = join(dir, 'warc');
    const responses = new Map<string, { date: string; digest: string }[]>();
    const revisits: Record<string, string>[] = [];
    for (const f of readdirSync(warcDir).filter((x) => x.endsWith('.warc.gz'))) {
      const v = await verifyWarc(join(warcDir, f));
      assert.deepEqual(v.digestErrors, [], `${f}: digests verify`);
      for await (const rec of readWarc(join(warcDir, f))) {
        if (rec.type === 'response') {
          const u = rec.headers['WARC-Target-URI']!;
          const l = responses.get(u) ?? [];
          l.push({ date: rec.headers['WARC-Date']!, digest: rec.headers['WARC-Payload-Digest']! });
          responses.set(u, l);
        } else if (rec.type === 'revisit') {
          assert.match(rec.httpStatusLine ?? '', /^HTTP\/1\.1 304/);
          revisits.push(rec.headers);
        }
      }
    }
    const all304 = log.filter((r) => r.status === 304).length;
    assert.equal(revisits.length, all304, 'one revisit record per 304');
    for (const h of revisits) {
      assert.equal(h['WARC-Profile'], 'http://netpreserve.org/warc/1.1/revisit/server-not-modified');
      const uri = h['WARC-Target-URI']!;
      assert.equal(h['WARC-Refers-To-Target-URI'], uri);
      const orig = (responses.get(uri) ?? []).find((r) => r.date === h['WARC-Refers-To-Date']);
      assert.ok(orig, `${uri}: WARC-Refers-To-Date names a stored response`);
      assert.equal(h['WARC-Payload-Digest'], orig.digest, 'the revisit repeats the original payload digest');
    }

    // Storage: every fetched page has a recrawl state with validators and a due time.
    const store = await openStore(dir);
    try {
      let states = 0;
      for await (const [, v] of store.recrawl.iterator()) {
        const s = decodeRecrawlState(v);
        assert.ok(s && s.etag && s.nextDueAt > s.fetchedAt);
        states++;
      }
      assert.equal(states, 24);
      assert.equal((await store.recrawlDue.keys().all()).length, 24, 'one due entry per URL');
      assert.equal((await store.recrawlHints.keys().all()).length, 0, 'sitemap hints are consumed by the first fetch');
    } finally {
      await store.close();
    }
  } finally {
    await web.close();
  }
});

test('--recrawl with --until-idle: exits when nothing is due within the horizon; the next start revisits what came due, conditionally', async () => {
  const web = await startSyntheticWeb({ seed: 5, hosts: 2, pagesPerHost: 4, outLinks: 3, crossHostShare: 0 });
  const dir = tempDir();
  const opts = {
    dataDir: dir, seeds: web.roots(), minDelayMs: MIN_DELAY, delayFactor: 0, concurrency: 4, untilIdle: true,
    resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
    // Every interval is one simulated hour (4 s at speedup 900: the first pass, 8 pages, must end within it, even on a
    // loaded machine); horizon 0: exit as soon as nothing is due now.
    recrawl: { enabled: true, speedup: 900, minIntervalMs: HOUR, maxIntervalMs: HOUR, horizonMs: 0 },
    maxDurationMs: 30_000, // a safety net only
  };
  try {
    const first = await (await startAgent(opts)).done;
    const pages = web.requests().filter((r) => !r.path.startsWith('/robots') && r.path !== '/sitemap.xml');
    assert.equal(pages.length, 8, 'one pass, then the agent exits by itself: nothing is due yet');
    assert.equal((first.recrawl as Record<string, number>).revisits, 0);
    const firstRequests = web.requests().length;
    // Past one simulated hour after the last fetch: everything is due.
    const lastFetch = Math.max(...pages.map((r) => r.start));
    await new Promise((r) => setTimeout(r, Math.max(0, lastFetch + HOUR / 900 + 500 - Date.now())));
    const second = await (await startAgent({ ...opts, seeds: [] })).done;
    const again = web.requests().slice(firstRequests).filter((r) => !r.path.startsWith('/robots') && r.path !== '/sitemap.xml');
    assert.ok(again.length >= 8, `every page revisited: ${again.length}`);
    assert.ok(again.every((r) => r.conditional && r.status === 304), 'static pages: conditional GETs, all 304');
    assert.ok(((second.recrawl as Record<string, number>).notModified) >= 8);
  } finally {
    await web.close();
  }
});
