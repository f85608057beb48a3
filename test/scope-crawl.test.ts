// Crawl scope (docs/scope.md): a seeded crawl stays in the seeds' registrable
// domains unless told otherwise; --allow-host, --include/--exclude,
// --max-depth, --max-pages-per-host and --accept-type each against the
// synthetic web on loopback. Hosts are h<i>.test, so every host is a
// registrable domain of its own (the Public Suffix List's default rule).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, type SyntheticWeb, type SyntheticWebOptions } from '../bench/web/index.js';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule, type AgentOptions } from '../src/config.js';
import { readWarc } from '../src/warc/reader.js';
import { openStore } from '../src/store/db.js';
import { decodeFetchRecord } from '../src/crawl/records.js';
import { pageRequests, spawnAgent, tempDir } from './helpers.js';

const MIN_DELAY = 20;

function scopeWeb(extra: Partial<SyntheticWebOptions> = {}): Promise<SyntheticWeb> {
  return startSyntheticWeb({
    seed: 15, hosts: 6, pagesPerHost: 12, outLinks: 6, crossHostShare: 0.5, pageBytes: { min: 600, max: 1200 }, hostSuffix: 'test', ...extra,
  });
}

/** Pages reachable from `start` by links that stay on hosts `keep` accepts, with their link depth (what the server says: describe()). */
function reachableWithin(web: SyntheticWeb, start: string, keep: (host: string) => boolean, maxDepth = Infinity, keepUrl: (url: string) => boolean = () => true): Map<string, number> {
  const depth = new Map<string, number>([[start, 0]]);
  const queue = [start];
  while (queue.length) {
    const u = queue.shift()!;
    const d = depth.get(u)!;
    if (d >= maxDepth) continue;
    const info = web.describe(u);
    for (const l of info?.links ?? []) {
      if (depth.has(l.url) || !keep(new URL(l.url).hostname) || !keepUrl(l.url)) continue;
      depth.set(l.url, d + 1);
      queue.push(l.url);
    }
  }
  return depth;
}

const hostsRequested = (web: SyntheticWeb): Set<string> => new Set(web.requests().map((r) => r.host));
const pagesFetched = (web: SyntheticWeb): string[] => pageRequests(web.requests()).map((r) => r.url!);

async function crawl(web: SyntheticWeb, seeds: string[], opts: AgentOptions = {}): Promise<{ summary: Record<string, unknown>; dir: string }> {
  const dir = tempDir();
  const agent = await startAgent({
    dataDir: dir, seeds, untilIdle: true, minDelayMs: MIN_DELAY, delayFactor: 0, concurrency: 8, logLevel: 'silent',
    resolve: web.resolveArgs.map(parseResolveRule), sitemaps: { enabled: false }, ...opts,
  });
  return { summary: await agent.done, dir };
}

function joinArgs(web: SyntheticWeb, dir: string, extra: string[]): string[] {
  return ['join', '--data-dir', join(dir, 'data'), '--until-idle', '--min-delay', String(MIN_DELAY), '--delay-factor', '0', '--concurrency', '8',
    '--progress', 'off', '--log-level', 'warn', '--heartbeat', '250', '--listen', '/ip4/127.0.0.1/tcp/0', ...web.resolveArgs.flatMap((r) => ['--resolve', r]), ...extra];
}

test('join --seed <one host>: only that host is fetched (robots.txt included), no request to any other; --scope web fetches the rest', async () => {
  const web = await scopeWeb();
  try {
    const h0 = web.hostName(0);
    const outLinks = reachableWithin(web, web.url(0, '/'), (h) => h === h0);
    const external = [...outLinks.keys()].flatMap((u) => web.describe(u)!.links.map((l) => new URL(l.url).hostname)).filter((h) => h !== h0);
    assert.ok(new Set(external).size >= 3, 'the host links out to several others');

    // The default scope, as a new user runs it (sitemaps on).
    const dir = tempDir();
    const run = spawnAgent(joinArgs(web, dir, ['--seed', web.url(0, '/')]));
    const { code } = await run.closed;
    assert.equal(code, 0, run.stderr.slice(-2000));
    assert.deepEqual([...hostsRequested(web)], [h0], 'no request to any other host, not even its robots.txt');
    const fetched = new Set(pagesFetched(web));
    assert.deepEqual([...outLinks.keys()].filter((u) => !fetched.has(u)), [], 'every page of the host reachable from the seed');
    assert.equal(web.requestsFor(0).filter((r) => r.path === '/robots.txt').length, 1, 'its robots.txt, once');
    const summary = JSON.parse(run.stdout) as { rejected: Record<string, number>; scope: { mode: string } };
    assert.ok(summary.rejected['out-of-scope']! > 0, 'links out of scope are counted');
    assert.equal(summary.scope.mode, 'seeds');

    // --scope web: every host reachable from the seed.
    web.clearLog();
    const dir2 = tempDir();
    const run2 = spawnAgent(joinArgs(web, dir2, ['--seed', web.url(0, '/'), '--scope', 'web', '--no-sitemaps']));
    const r2 = await run2.closed;
    assert.equal(r2.code, 0, run2.stderr.slice(-2000));
    const expected = web.reachable({ seeds: [web.url(0, '/')] }).reachableAllowed;
    const all = new Set(pagesFetched(web));
    assert.deepEqual([...expected].filter((u) => !all.has(u)), [], 'every page reachable from the seed');
    assert.ok(hostsRequested(web).size > 3, `other hosts too (${[...hostsRequested(web)].join(' ')})`);
  } finally {
    await web.close();
  }
});

test('--scope host / domain / seeds on hosts sharing a registrable domain; --allow-host adds a host, not its links', async () => {
  // h<i>.site.test: one registrable domain (site.test) for every host.
  const web = await scopeWeb({ hostSuffix: 'site.test' });
  try {
    const h0 = web.hostName(0);
    await crawl(web, [web.url(0, '/')], { crawlScope: { mode: 'host' } });
    assert.deepEqual([...hostsRequested(web)], [h0], 'host: the seed host only');
    web.clearLog();
    await crawl(web, [web.url(0, '/')], { crawlScope: { mode: 'domain' } });
    assert.deepEqual([...hostsRequested(web)], [h0], 'domain: the seed host and names under it (none here)');
    web.clearLog();
    await crawl(web, [web.url(0, '/')], { crawlScope: { mode: 'seeds' } });
    const expected = web.reachable({ seeds: [web.url(0, '/')] }).reachableAllowed;
    const fetched = new Set(pagesFetched(web));
    assert.deepEqual([...expected].filter((u) => !fetched.has(u)), [], 'seeds: the whole registrable domain');
    assert.ok(hostsRequested(web).size > 2);
  } finally {
    await web.close();
  }
  const web2 = await scopeWeb();
  try {
    const [h0, h1] = [web2.hostName(0), web2.hostName(1)];
    // h1 must be linked from h0's part of the web for the test to mean anything.
    const fromH0 = reachableWithin(web2, web2.url(0, '/'), (h) => h === h0 || h === h1);
    assert.ok([...fromH0.keys()].some((u) => new URL(u).hostname === h1), 'h0 links to h1');
    await crawl(web2, [web2.url(0, '/')], { crawlScope: { allowHosts: [h1] } });
    assert.deepEqual([...hostsRequested(web2)].sort(), [h0, h1].sort(), 'the seed host and the allowed host, nothing they link to');
    const fetched = new Set(pagesFetched(web2));
    assert.deepEqual([...fromH0.keys()].filter((u) => !fetched.has(u)), [], 'every page of both reachable from the seed');
  } finally {
    await web2.close();
  }
});

test('a seed added through the API (POST /seeds) widens the scope by its domain', async () => {
  const web = await scopeWeb();
  const dir = tempDir();
  try {
    const [h0, h1] = [web.hostName(0), web.hostName(1)];
    const agent = await startAgent({
      dataDir: dir, seeds: [web.url(0, '/')], untilIdle: true, minDelayMs: MIN_DELAY, delayFactor: 0, concurrency: 8, logLevel: 'silent',
      resolve: web.resolveArgs.map(parseResolveRule), sitemaps: { enabled: false }, api: { listen: '127.0.0.1:0' },
    });
    const token = readFileSync(join(dir, 'api.token'), 'utf8').trim();
    const res = await fetch(`${agent.apiUrl}/seeds`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ urls: [web.url(1, '/')] }),
    });
    assert.equal(res.status, 200, await res.text());
    await agent.done;
    assert.deepEqual([...hostsRequested(web)].sort(), [h0, h1].sort(), 'both seeds\' hosts, no other');
    const both = (h: string) => h === h0 || h === h1;
    const expected = new Set([...reachableWithin(web, web.url(0, '/'), both).keys(), ...reachableWithin(web, web.url(1, '/'), both).keys()]);
    const fetched = new Set(pagesFetched(web));
    assert.deepEqual([...expected].filter((u) => !fetched.has(u)), [], 'every page of both reachable from either seed');
  } finally {
    await web.close();
  }
});

test('--include and --exclude match the normalised URL; the seed is fetched whatever they say', async () => {
  const web = await scopeWeb({ sections: 2 });
  try {
    const h0 = web.hostName(0);
    const root = web.url(0, '/');
    const first = await crawl(web, [root], { crawlScope: { include: ['/s1/'] } });
    assert.ok((first.summary.rejected as Record<string, number>)['url-not-included']! > 0);
    const inc = pagesFetched(web);
    assert.ok(inc.includes(root), 'the seed');
    assert.ok(inc.length > 1, 'some /s1/ pages');
    assert.deepEqual(inc.filter((u) => u !== root && !u.includes('/s1/')), [], 'nothing else');
    // Pages of /s1/ on the seed's host, reachable from the seed through /s1/ pages only.
    const viaS1 = reachableWithin(web, root, (h) => h === h0, Infinity, (u) => u.includes('/s1/'));
    assert.deepEqual([...viaS1.keys()].filter((u) => !inc.includes(u)), [], 'every /s1/ page reachable through /s1/ pages');

    web.clearLog();
    const { summary } = await crawl(web, [root], { crawlScope: { exclude: ['/s0/', '^http://h0\\.test:\\d+/p/'] } });
    const exc = pagesFetched(web);
    assert.ok(exc.length > 1);
    assert.deepEqual(exc.filter((u) => u !== root && !u.includes('/s1/')), [], 'excluded: /s0/ and /p/');
    assert.ok((summary.rejected as Record<string, number>)['url-excluded']! > 0);
  } finally {
    await web.close();
  }
});

test('--max-depth 1 and 2 stop exactly at that many link hops from the seed', async () => {
  const web = await scopeWeb({ pagesPerHost: 40, outLinks: 3, crossHostShare: 0.3 });
  try {
    const root = web.url(0, '/');
    for (const maxDepth of [1, 2]) {
      web.clearLog();
      // --scope web: the depth limit alone stops the crawl, across hosts.
      const { summary } = await crawl(web, [root], { crawlScope: { mode: 'web', maxDepth } });
      const expected = reachableWithin(web, root, () => true, maxDepth);
      const fetched = pagesFetched(web);
      assert.deepEqual(fetched.filter((u) => !expected.has(u)), [], `depth ${maxDepth}: nothing deeper`);
      assert.deepEqual([...expected.keys()].filter((u) => !fetched.includes(u)), [], `depth ${maxDepth}: everything up to it`);
      assert.ok((summary.rejected as Record<string, number>)['max-depth']! > 0);
      assert.ok(expected.size < reachableWithin(web, root, () => true).size, 'the limit does cut the web');
    }
  } finally {
    await web.close();
  }
});

test('--max-pages-per-host: no host gets more requests than its budget; the rest are recorded as host-page-budget', async () => {
  const web = await scopeWeb();
  try {
    const { summary } = await crawl(web, web.roots(), { crawlScope: { maxPagesPerHost: 5 } });
    const perHost = new Map<string, number>();
    for (const r of pageRequests(web.requests())) perHost.set(r.host, (perHost.get(r.host) ?? 0) + 1);
    assert.equal(perHost.size, 6);
    for (const [h, n] of perHost) assert.equal(n, 5, `${h}: ${n} requests`);
    assert.ok((summary.rejected as Record<string, number>)['host-page-budget']! > 0);
  } finally {
    await web.close();
  }
});

test('--accept-type: other types are fetched and parsed for links but not stored, recorded as skipped and counted', async () => {
  const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
  let imagePath = '';
  const web = await scopeWeb({
    // One page the seed links to answers with an image.
    intercept: (req) => (req.host === 'h0.test' && req.path === imagePath ? { status: 200, headers: { 'content-type': 'image/png' }, body: PNG } : null),
  });
  try {
    const h0 = web.hostName(0);
    const root = web.url(0, '/');
    const image = web.describe(root)!.links.map((l) => l.url).find((u) => new URL(u).hostname === h0 && u !== root)!;
    imagePath = new URL(image).pathname;
    const { summary, dir } = await crawl(web, [root], { crawlScope: { acceptTypes: ['image/png'] } });
    const fetched = pagesFetched(web);
    assert.ok(fetched.includes(image));
    // The image has no links: pages reachable only through it are not expected.
    const viaHtml = reachableWithin(web, root, (h) => h === h0, Infinity, (u) => u !== image);
    assert.deepEqual([...viaHtml.keys()].filter((u) => !fetched.includes(u)), [], 'HTML pages still fetched and their links followed');
    const stored: string[] = [];
    for (const f of readdirSync(join(dir, 'warc')).filter((n) => n.endsWith('.warc.gz'))) {
      for await (const rec of readWarc(join(dir, 'warc', f))) if (rec.type === 'response') stored.push(rec.headers['WARC-Target-URI']!);
    }
    const storedPages = stored.filter((u) => !u.endsWith('/robots.txt'));
    assert.deepEqual(storedPages, [image], 'only the accepted type is stored');
    const skipped = (summary.skipped as Record<string, number>)['type-not-accepted'];
    assert.equal(skipped, fetched.length - 1, 'every other response is counted as skipped');
    const store = await openStore(dir);
    try {
      let records = 0;
      for await (const [, v] of store.fetches.iterator()) {
        const r = decodeFetchRecord(v)!;
        if (r.url === image) assert.equal(r.skipped, undefined);
        else if (r.status === 200) { assert.equal(r.skipped, 'type-not-accepted'); assert.equal(r.warc, undefined); records++; }
      }
      assert.ok(records > 0);
    } finally {
      await store.close();
    }
  } finally {
    await web.close();
  }
});

test('a bad --scope, --include or --accept-type is a usage error: one line, exit code 2', async () => {
  const dir = tempDir();
  for (const [args, says] of [
    [['--scope', 'everything'], /--scope/],
    [['--include', '(unclosed'], /--include: not a regular expression: \(unclosed/],
    [['--accept-type', 'html'], /--accept-type expects a media type/],
  ] as const) {
    const run = spawnAgent(['join', '--data-dir', join(dir, 'data'), '--listen', '/ip4/127.0.0.1/tcp/0', ...args]);
    const { code } = await run.closed;
    assert.equal(code, 2, run.stderr);
    assert.match(run.stderr, says);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
  }
});
