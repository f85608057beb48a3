// End-to-end crawls of the synthetic web by one in-process agent: coverage, no duplicate fetches, politeness, robots, WARC output,
// and hostile input that must not crash the agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, checkPoliteness } from '../bench/web/index.js';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { verifyWarc, readWarc } from '../src/warc/reader.js';
import { tempDir } from './helpers.js';

const MIN_DELAY = 250;

// 50 hosts, so that every kind of robots.txt of the 'mixed' web is among them (each host's is its own, whatever its
// size), and 20 pages each: 763 allowed reachable pages, with every case the assertions count (13 pages answering
// 500, 69 redirects, 25 not found, 231 disallowed). 40 pages a host (1,508 pages) asserted the same, twice the
// crawl's CPU and politeness time (docs/performance.md "Test suite").
test('50 hosts × 20 pages: every allowed reachable page fetched exactly once, politely, WARC verified', async () => {
  const web = await startSyntheticWeb({
    seed: 7, hosts: 50, pagesPerHost: 20, outLinks: 8, crossHostShare: 0.2, pageBytes: { min: 2000, max: 6000 },
    robots: 'mixed', variantShare: 0.15, errorMix: { notFound: 0.04, redirect: 0.05, serverError: 0.02 },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: MIN_DELAY, delayFactor: 0,
      concurrency: 50, resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
      sitemaps: { enabled: false }, // this test checks link discovery and robots exactly; sitemaps have their own test
      // 500s are retried (docs/politeness.md "Retries of one URL"); shorter waits than the defaults keep the test quick:
      // the 503 robots.txt (Retry-After: 5) is asked 4 times, which the default backoff (5, 10, 20 s) and the
      // Retry-After would stretch to half a minute.
      politeness: { retryBaseMs: 50, pauseBaseMs: 300, backoffBaseMs: 50, retryAfterMaxMs: 500 },
    });
    const summary = await agent.done;
    const expected = web.reachable();
    const log = web.requests();
    // robots.txt and the targets of redirecting robots.txt files are not pages.
    const pageRequests = log.filter((r) => !r.path.startsWith('/robots'));
    const fetched = pageRequests.map((r) => r.url ?? `${r.host}${r.path}`);
    const counts = new Map<string, number>();
    for (const u of fetched) counts.set(u, (counts.get(u) ?? 0) + 1);
    // A 500 is transient: fetched once and retried maxRetries (3) times, then recorded as failed.
    const errored = new Set(pageRequests.filter((r) => r.status === 500).map((r) => r.url ?? `${r.host}${r.path}`));
    assert.ok(errored.size > 0, 'the error mix does serve 500s');
    for (const u of errored) assert.equal(counts.get(u), 4, `${u}: 1 fetch + 3 retries`);
    const twice = [...counts].filter(([u, n]) => n > 1 && !errored.has(u));
    assert.deepEqual(twice, [], 'no other URL is fetched twice');
    const pol = summary.politeness as { retries: number; retriesExhausted: number; failures: Record<string, number> };
    assert.equal(pol.retries, errored.size * 3);
    assert.equal(pol.retriesExhausted, errored.size);
    assert.equal(pol.failures['http-500'], errored.size);
    const missing = [...expected.reachableAllowed].filter((u) => !counts.has(u));
    const extra = fetched.filter((u) => !expected.reachableAllowed.has(u));
    assert.deepEqual(missing, [], 'every allowed reachable page is fetched');
    assert.deepEqual(extra, [], 'nothing outside the allowed reachable set is fetched');
    for (const u of expected.disallowed) assert.ok(!counts.has(u), `disallowed ${u} must not be fetched`);
    // Politeness, counted between request starts, over every request including robots.txt.
    const violations = checkPoliteness(log, MIN_DELAY, { toleranceMs: 15 });
    assert.deepEqual(violations.slice(0, 5), [], 'no host is hit twice within the delay, nor concurrently');
    assert.ok((summary.robotsBlocked as number) > 0, 'the mixed robots.txt files do block something');

    const warcDir = join(dir, 'warc');
    const files = readdirSync(warcDir).filter((f) => f.endsWith('.warc.gz'));
    assert.ok(files.length >= 1);
    let responses = 0;
    const uris = new Set<string>();
    for (const f of files) {
      const v = await verifyWarc(join(warcDir, f));
      assert.deepEqual(v.digestErrors, [], `${f}: digests verify`);
      responses += v.responses;
      for await (const rec of readWarc(join(warcDir, f), { block: true })) {
        if (rec.type === 'response') uris.add(rec.headers['WARC-Target-URI']!);
        if (rec.type === 'warcinfo') {
          assert.match(Buffer.from(rec.block!).toString(), /^isPartOf: default\r$/m);
          continue;
        }
        assert.ok(rec.headers['WARC-Record-ID'] && rec.headers['WARC-Date']);
        // Heads as they crossed the socket (docs/warc.md "Faithful records"): undici writes `host:` in lower case.
        assert.equal(rec.headers['WARC-Protocol'], 'http/1.1');
        if (rec.type === 'request') assert.match(Buffer.from(rec.block!).toString('latin1'), /^GET \S+ HTTP\/1\.1\r\nhost: [^\r]+\r\nconnection: keep-alive\r\n/);
      }
    }
    // One response per request the server answered (pages and robots.txt alike).
    assert.equal(responses, log.length, 'one response record per fetch');
    for (const u of expected.reachableAllowed) assert.ok(uris.has(u), `WARC holds ${u}`);
  } finally {
    await web.close();
  }
});

test('hostile input (never-ending body, gzip bomb, malformed HTML, binary as HTML, redirect loops, endless calendar) is bounded and counted', async () => {
  const web = await startSyntheticWeb({
    seed: 3, hosts: 3, pagesPerHost: 5, traps: { gzipBombBytes: 256 * 1024 * 1024, trickleMs: 50 },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 16,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
      fetch: { totalTimeoutMs: 1500, maxBodyBytes: 1024 * 1024 },
      scope: { patternBudget: 25 },
    });
    const summary = await agent.done;
    assert.equal(summary.failure, undefined, 'the agent did not fail');
    assert.ok((summary.truncated as number) >= 2, 'the endless body and the bomb are kept truncated');
    const errors = summary.errors as Record<string, number>;
    assert.ok((errors['truncated-time'] ?? 0) >= 1, 'the never-ending body is cut by the total timeout');
    assert.ok((errors['truncated-length'] ?? 0) >= 1, 'the gzip bomb is cut at the body cap');
    const log = web.requests();
    const calendar = log.filter((r) => (r.url ?? '').startsWith(web.trapUrls.calendar!.split('/cal/')[0]!) && r.path.startsWith('/cal/'));
    assert.ok(calendar.length > 0 && calendar.length <= 30, `endless calendar cut off (${calendar.length} fetched)`);
    const counts = new Map<string, number>();
    for (const r of log) {
      const u = r.url ?? `${r.host}${r.path}`;
      counts.set(u, (counts.get(u) ?? 0) + 1);
    }
    assert.deepEqual([...counts].filter(([, n]) => n > 1), [], 'redirect loops do not cause refetches');
    // Every ordinary page still got crawled.
    for (const u of web.reachable().reachableAllowed) assert.ok(counts.has(u), `ordinary page ${u} fetched`);
  } finally {
    await web.close();
  }
});

test('every closed WARC gets a CDXJ index, and warc get returns the very bytes that were served', async () => {
  const web = await startSyntheticWeb({ seed: 5, hosts: 3, pagesPerHost: 6 });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
    });
    await agent.done;
    const warcDir = join(dir, 'warc');
    const names = readdirSync(warcDir);
    for (const f of names.filter((n) => n.endsWith('.warc.gz'))) assert.ok(names.includes(`${f}.cdxj`), `${f} is indexed`);
    const { getStoredResponse } = await import('../src/warc/lookup.js');
    const { request } = await import('undici');
    for (const url of [...web.reachable().reachableAllowed].slice(0, 5)) {
      const stored = await getStoredResponse(warcDir, url);
      assert.ok(stored, `${url} found through the index`);
      const u = new URL(url);
      const live = await request(`http://127.0.0.1:${web.port}${u.pathname}`, { headers: { host: u.host } });
      const served = Buffer.from(await live.body.arrayBuffer());
      assert.equal(stored.status, 200);
      assert.ok(Buffer.from(stored.payload).equals(served), `${url}: stored bytes equal served bytes`);
    }
  } finally {
    await web.close();
  }
});

test('Sitemaps 0.90: found through robots.txt and /sitemap.xml; pages only listed there are crawled, politely and within robots', async () => {
  const web = await startSyntheticWeb({ seed: 9, hosts: 8, pagesPerHost: 15, outLinks: 2, crossHostShare: 0, robots: 'mixed', pageBytes: { min: 1000, max: 2000 } });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 50, delayFactor: 0,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
      // The 503 robots.txt (Retry-After: 5, honoured up to 0.5 s here) is asked twice.
      politeness: { retryBaseMs: 50, backoffBaseMs: 50, maxRetries: 1, retryAfterMaxMs: 500 },
    });
    const summary = await agent.done;
    const expected = web.reachable({ viaSitemaps: true });
    const linksOnly = web.reachable();
    assert.ok(expected.reachableAllowed.size > linksOnly.reachableAllowed.size, 'the sitemaps list pages no link reaches');
    const pages = web.requests().filter((r) => !r.path.startsWith('/robots') && !r.path.startsWith('/sitemap'));
    const counts = new Map<string, number>();
    for (const r of pages) counts.set(r.url!, (counts.get(r.url!) ?? 0) + 1);
    assert.deepEqual([...expected.reachableAllowed].filter((u) => !counts.has(u)), [], 'every page reachable through links or sitemaps');
    assert.deepEqual([...counts.keys()].filter((u) => !expected.reachableAllowed.has(u)), [], 'nothing else (robots obeyed for sitemap URLs too)');
    assert.deepEqual([...counts].filter(([, n]) => n > 1), [], 'nothing twice');
    const sm = summary.sitemaps as Record<string, number>;
    assert.ok(sm.fetched >= 1 && sm.urls > 0, JSON.stringify(sm));
    assert.deepEqual(checkPoliteness(web.requests(), 50, { toleranceMs: 10 }).slice(0, 3), []);
  } finally {
    await web.close();
  }
});

test('Sitemaps 0.90 cross submits: a sitemap on another host may list a host\'s URLs only when that host\'s robots.txt names it', async () => {
  let names: string[] = [];
  const xml = (urls: string[]) => `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${u}</loc></url>`).join('')}</urlset>`;
  const web = await startSyntheticWeb({
    hosts: 2, pagesPerHost: 1,
    intercept: (req) => {
      const [shop, maps] = names.map((n) => web.url(n, '').replace(/\/$/, ''));
      const text = (body: string, type = 'text/plain') => ({ status: 200, headers: { 'content-type': type }, body });
      if (req.hostIndex === 0 && req.path === '/robots.txt') return text(`User-agent: *\nDisallow:\nSitemap: ${maps}/maps/shop.xml\n`);
      if (req.hostIndex === 1 && req.path === '/robots.txt') return text(`User-agent: *\nDisallow:\nSitemap: ${maps}/maps/own.xml\n`);
      // Named by the shop's robots.txt only: may list the shop's URLs and its own directory, not the rest of its host.
      if (req.hostIndex === 1 && req.path === '/maps/shop.xml') return text(xml([`${shop}/granted`, `${maps}/maps/page`, `${maps}/outside`]), 'application/xml');
      // Named by its own host's robots.txt (grants that whole host), not by the shop's: the shop's URL is out of scope.
      if (req.hostIndex === 1 && req.path === '/maps/own.xml') return text(xml([`${shop}/stolen`, `${maps}/elsewhere`]), 'application/xml');
      return text('<p>no links</p>', 'text/html');
    },
  });
  names = [web.hostName(0), web.hostName(1)];
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
    });
    const summary = await agent.done;
    const paths = (i: number) => web.requests().filter((r) => r.host === names[i] && !r.path.startsWith('/robots')).map((r) => r.path).sort();
    assert.deepEqual(paths(0), ['/', '/granted'], 'the granted URL is crawled, the ungranted one is not');
    assert.deepEqual(paths(1), ['/', '/elsewhere', '/maps/own.xml', '/maps/page', '/maps/shop.xml'], 'a sitemap lists its own directory, or the hosts whose robots.txt names it');
    const sm = summary.sitemaps as Record<string, number>;
    assert.equal(sm.rejected, 2, JSON.stringify(sm));
  } finally {
    await web.close();
  }
});

test('RFC 9309 §2.3.1.4: while robots.txt is unreachable nothing is fetched; its URLs wait for the retries, then follow the rules it serves, or fail', async () => {
  const robotsAsked = [0, 0];
  const web = await startSyntheticWeb({
    hosts: 2, pagesPerHost: 1,
    intercept: (req) => {
      const i = req.hostIndex;
      if (req.path === '/robots.txt') {
        // Host 0 recovers on the third request; host 1 never does.
        const n = ++robotsAsked[i]!;
        if (i === 1 || n <= 2) return { status: 503, headers: { 'content-type': 'text/plain' }, body: 'busy' };
        return { status: 200, headers: { 'content-type': 'text/plain' }, body: 'User-agent: *\nDisallow: /private\n' };
      }
      return { status: 200, headers: { 'content-type': 'text/html' }, body: '<a href="/a">a</a> <a href="/private">p</a>' };
    },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0, sitemaps: { enabled: false },
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', politeness: { retryBaseMs: 100, backoffBaseMs: 100, maxRetries: 3 },
    });
    const summary = await agent.done;
    const paths = (i: number) => web.requests().filter((r) => r.host === web.hostName(i) && r.path !== '/robots.txt').map((r) => r.path).sort();
    assert.deepEqual(paths(0), ['/', '/a'], 'the recovered host is crawled by the rules it then served');
    assert.equal(robotsAsked[0], 3);
    assert.deepEqual(paths(1), [], 'nothing is fetched from a host whose robots.txt stays unreachable');
    assert.equal(robotsAsked[1], 4, 'asked once, then retried 3 times');
    const rejected = summary.rejected as Record<string, number>;
    assert.equal(rejected['robots-unreachable'], 1, 'its URL is then recorded as failed, with the reason');
  } finally {
    await web.close();
  }
});

test('hostile input: a 10 MiB robots.txt, a sitemap index that points to itself, a sitemap of 100,000 URLs are bounded and counted', async () => {
  const big = 'User-agent: *\n' + 'Disallow: /nothing-here-' + 'x'.repeat(60) + '\n'.repeat(1);
  const robots10M = Buffer.from(big.repeat(Math.ceil((10 << 20) / big.length)) + 'User-agent: *\nDisallow: /late\n');
  const index = (self: string) => `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${self}</loc></sitemap><sitemap><loc>${self.replace('index.xml', 'big.xml')}</loc></sitemap></sitemapindex>`;
  let bigUrls = '';
  const web = await startSyntheticWeb({
    hosts: 1, pagesPerHost: 1,
    intercept: (req) => {
      const origin = `http://${req.headers.host}`;
      if (req.path === '/robots.txt') return { status: 200, headers: { 'content-type': 'text/plain' }, body: Buffer.concat([Buffer.from(`Sitemap: ${origin}/index.xml\n`), robots10M]) };
      if (req.path === '/index.xml') return { status: 200, headers: { 'content-type': 'application/xml' }, body: index(`${origin}/index.xml`) };
      if (req.path === '/big.xml') {
        if (!bigUrls) bigUrls = Array.from({ length: 100_000 }, (_, i) => `<url><loc>${origin}/u/${i}</loc></url>`).join('');
        return { status: 200, headers: { 'content-type': 'application/xml' }, body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${bigUrls}</urlset>` };
      }
      if (req.path === '/late') return { status: 200, headers: { 'content-type': 'text/html' }, body: 'late' };
      return { status: 200, headers: { 'content-type': 'text/html' }, body: '<a href="/late">late</a>' };
    },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: [web.url(web.hostName(0), '/')], untilIdle: false, maxPages: 40, minDelayMs: 0, delayFactor: 0,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', fetch: { maxBodyBytes: 12 << 20 },
    });
    const summary = await agent.done;
    assert.equal(summary.failure, undefined, 'the agent keeps going');
    const sm = summary.sitemaps as Record<string, number>;
    const log = web.requests();
    assert.equal(log.filter((r) => r.path === '/index.xml').length, 1, 'a self-referencing index is fetched once');
    assert.equal(log.filter((r) => r.path === '/big.xml').length, 1);
    assert.equal(sm.truncated >= 1, true, 'the 100,000-URL sitemap is cut at 50,000 and counted');
    assert.ok(sm.rejected >= 50_000, `over-limit entries counted (${sm.rejected})`);
    // The 10 MiB robots.txt is parsed up to its limit (RFC 9309 §2.5): the rule after 10 MiB is not seen.
    assert.ok(log.some((r) => r.path === '/late'), 'a rule beyond the parse limit does not apply');
  } finally {
    await web.close();
  }
});

test('Sitemaps 0.90 <priority> is kept for scheduling: within a host, URLs listed with priority 1.0 are fetched before those with 0.0', async () => {
  const entry = (origin: string, path: string, p: string) => `<url><loc>${origin}${path}</loc><priority>${p}</priority></url>`;
  const web = await startSyntheticWeb({
    hosts: 1, pagesPerHost: 1,
    intercept: (req) => {
      const origin = `http://${req.headers.host}`;
      if (req.path === '/robots.txt') return { status: 200, headers: { 'content-type': 'text/plain' }, body: `User-agent: *\nAllow: /\nSitemap: ${origin}/sm.xml\n` };
      if (req.path === '/sm.xml') {
        // Listed low first: FIFO order alone would fetch the low ones first.
        const urls = [0, 1, 2, 3].map((i) => entry(origin, `/low${i}`, '0.0')).join('') + [0, 1, 2, 3].map((i) => entry(origin, `/high${i}`, '1.0')).join('');
        return { status: 200, headers: { 'content-type': 'application/xml' }, body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>` };
      }
      return { status: 200, headers: { 'content-type': 'text/html' }, body: '<p>no links</p>' };
    },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: [web.url(web.hostName(0), '/')], untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 1,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
    });
    await agent.done;
    const order = web.requests().map((r) => r.path).filter((p) => /^\/(low|high)\d$/.test(p));
    assert.equal(order.length, 8);
    assert.deepEqual(order.slice(0, 4).sort(), ['/high0', '/high1', '/high2', '/high3'], `fetch order ${order.join(' ')}`);
    assert.deepEqual(order.slice(4), ['/low0', '/low1', '/low2', '/low3'], 'FIFO inside a class');
  } finally {
    await web.close();
  }
});

test('in-link hints (Cho, Garcia-Molina & Page 1998): a queued URL that more pages link to is promoted and fetched ahead of its FIFO place', async () => {
  const web = await startSyntheticWeb({
    hosts: 2, pagesPerHost: 1,
    intercept: (req) => {
      const host = String(req.headers.host);
      const a = web.hostName(0), b = web.hostName(1);
      // Bodies differ (the path is in them): identical ones would be exact duplicates, whose links are not extracted.
      const html = (links: string[]) => ({ status: 200, headers: { 'content-type': 'text/html' }, body: `<p>page ${host}${req.path}</p>${links.map((l) => `<a href="${l}">x</a>`).join('')}` });
      if (req.path === '/robots.txt') return { status: 404, headers: { 'content-type': 'text/plain' }, body: '' };
      // Host A: the root lists /p0 … /p39 in order (one class, FIFO); host B's pages all link to A's last one.
      if (host.startsWith(a) && req.path === '/') return html(Array.from({ length: 40 }, (_, i) => `/p${i}`));
      if (host.startsWith(b) && req.path === '/') return html(Array.from({ length: 8 }, (_, i) => `/b${i}`));
      if (host.startsWith(b)) return html([web.url(a, '/p39')]);
      return html([]);
    },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: [web.url(web.hostName(0), '/'), web.url(web.hostName(1), '/')], untilIdle: true,
      minDelayMs: 0, delayFactor: 0, concurrency: 1, resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
      sitemaps: { enabled: false },
    });
    const summary = await agent.done as { inlinks: { crossings: number; promoted: number }; pages: number };
    const aPages = web.requests().filter((r) => String(r.host).startsWith(web.hostName(0)) && /^\/p\d+$/.test(r.path)).map((r) => r.path);
    assert.equal(aPages.length, 40);
    assert.equal(new Set(aPages).size, 40, 'each page once');
    assert.ok(summary.inlinks.promoted >= 1, `in-links ${JSON.stringify(summary.inlinks)}`);
    // Without the hint /p39 is the 40th of A's pages; 3 in-links (A's root, two of B's pages) promote it.
    const at = aPages.indexOf('/p39');
    assert.ok(at < 12, `/p39 fetched as A's page #${at + 1}: ${aPages.join(' ')}`);
    // The others keep their FIFO order.
    assert.deepEqual(aPages.filter((p) => p !== '/p39'), Array.from({ length: 39 }, (_, i) => `/p${i}`));
  } finally {
    await web.close();
  }
});
