// Tests of the synthetic web (bench/web): the server that later tests,
// benchmarks and the demo crawl. Loopback only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import zlib from 'node:zlib';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Parser } from 'htmlparser2';
import {
  startSyntheticWeb, checkPoliteness, checkPolitenessPerIp, computeReachable, WebGraph, RobotsOracle, canonicalTarget,
  buildGzipBomb,
  type SyntheticWeb, type RequestRecord,
} from '../bench/web/index.js';
import { Renderer } from '../bench/web/content.js';
import { crc32Combine } from '../bench/web/traps.js';
import { xxh64 } from '../src/hash/xxhash.js';

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** GET `url` from the web, connecting to the address its host is served on (what --resolve does). */
function get(web: SyntheticWeb, url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Got> {
  const u = new URL(url);
  const i = web.graph.hostIndex(u.hostname);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: i >= 0 ? web.hostAddress(i) : web.address, port: web.port, path: u.pathname + u.search, method,
      headers: { host: u.host, ...headers }, agent,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Every href of a[href] with its rel, in document order (htmlparser2, as the crawler will). */
function hrefs(html: string): { href: string; rel: string }[] {
  const out: { href: string; rel: string }[] = [];
  const p = new Parser({
    onopentag(name, attrs) {
      if (name === 'a' && attrs.href !== undefined) out.push({ href: attrs.href, rel: attrs.rel ?? '' });
    },
  }, { decodeEntities: true });
  p.write(html);
  p.end();
  return out;
}

/** What a normalising crawler would make of a link: WHATWG resolution, fragment dropped, RFC 3986 §6 + tracking params. */
function canonical(href: string, base: string): string | null {
  let u: URL;
  try {
    u = new URL(href, base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:') return null;
  return `${u.protocol}//${u.host}${canonicalTarget(u.pathname + u.search)}`;
}

/**
 * A small real crawler over HTTP: follows links and redirects as new URLs,
 * fetches robots.txt per host when `obey`, never fetches a URL twice. Its
 * result must equal the oracle's, which proves the rendered HTML, the
 * redirects and the robots files say what the oracle models.
 */
async function miniCrawl(web: SyntheticWeb, obey: boolean, agentToken = 'ubicrawl'): Promise<{ fetched: Set<string>; disallowed: Set<string> }> {
  const fetched = new Set<string>();
  const disallowed = new Set<string>();
  const seen = new Set<string>();
  const queue: string[] = [];
  const robots = new Map<string, RobotsOracle | 'all' | 'none'>();
  const push = (u: string | null): void => {
    if (u === null || seen.has(u)) return;
    const host = new URL(u).hostname;
    if (web.graph.hostIndex(host) < 0) return; // traps and foreign hosts are out of scope here
    seen.add(u);
    queue.push(u);
  };
  for (const r of web.roots()) push(r);
  while (queue.length) {
    const url = queue.shift()!;
    const u = new URL(url);
    if (obey) {
      let rules = robots.get(u.host);
      if (rules === undefined) {
        let at = `${u.origin}/robots.txt`;
        rules = 'all';
        for (let hops = 0; hops <= 5; hops++) {
          const r = await get(web, at);
          if (r.status >= 200 && r.status < 300) { rules = RobotsOracle.parse(r.body); break; }
          if (r.status >= 300 && r.status < 400 && r.headers.location) { at = new URL(r.headers.location, at).href; continue; }
          rules = r.status >= 500 ? 'none' : 'all';
          break;
        }
        robots.set(u.host, rules);
      }
      const path = u.pathname + u.search;
      const ok = rules === 'all' || (rules !== 'none' && rules.isAllowed(path, agentToken));
      if (!ok) { disallowed.add(url); continue; }
    }
    const r = await get(web, url);
    fetched.add(url);
    if (r.status >= 300 && r.status < 400) {
      push(canonical(r.headers.location!, url));
    } else if (r.status === 200 && String(r.headers['content-type']).startsWith('text/html')) {
      for (const h of hrefs(r.body.toString('utf8'))) push(canonical(h.href, url));
    }
  }
  return { fetched, disallowed };
}

function sorted(s: Iterable<string>): string[] {
  return [...s].sort();
}

// --- determinism ---------------------------------------------------------

test('determinism: same seed gives the same graph and byte-identical pages; another seed does not', () => {
  const opts = { seed: 42, hosts: 6, pagesPerHost: 30, errorMix: { notFound: 0.1, redirect: 0.1 }, nearDupShare: 0.1, exactDupShare: 0.1, variantShare: 0.3, sections: 3 };
  const a = new WebGraph(opts, 8080);
  const b = new WebGraph(opts, 8080);
  const c = new WebGraph({ ...opts, seed: 43 }, 8080);
  const ra = new Renderer(a);
  const rb = new Renderer(b);
  let differs = false;
  for (let i = 0; i < 6; i++) {
    for (let k = 0; k < 30; k++) {
      assert.equal(a.kind(i, k), b.kind(i, k));
      assert.equal(a.pagePath(i, k), b.pagePath(i, k));
      assert.deepEqual(a.links(i, k), b.links(i, k));
      assert.deepEqual(a.describe(a.pageUrl(i, k)), b.describe(b.pageUrl(i, k)));
      assert.ok(ra.renderArticle(i, k, 0, false, k).equals(rb.renderArticle(i, k, 0, false, k)));
      if (JSON.stringify(a.links(i, k)) !== JSON.stringify(c.links(i, k))) differs = true;
    }
  }
  assert.ok(differs, 'seed 43 must give another graph');
  assert.deepEqual(a.duplicates(), b.duplicates());
});

test('determinism: link targets do not move when only variant/nofollow shares change', () => {
  const a = new WebGraph({ seed: 7, hosts: 4, pagesPerHost: 20 }, 8080);
  const b = new WebGraph({ seed: 7, hosts: 4, pagesPerHost: 20, variantShare: 0.5, nofollowShare: 0.5 }, 8080);
  for (let i = 0; i < 4; i++) {
    for (let k = 0; k < 20; k++) {
      assert.deepEqual(a.links(i, k).map((l) => [l.host, l.page]), b.links(i, k).map((l) => [l.host, l.page]));
    }
  }
});

test('pagesPerHost may vary per host; every link and redirect target is an existing page', () => {
  const g = new WebGraph({ hosts: 5, pagesPerHost: (i) => 3 + i * 10, crossHostShare: 0.5, errorMix: { redirect: 0.3 } }, 8080);
  assert.equal(g.totalPages(), 3 + 13 + 23 + 33 + 43);
  for (let i = 0; i < 5; i++) {
    for (let k = 0; k < g.pages(i); k++) {
      for (const l of g.links(i, k)) assert.ok(l.page < g.pages(l.host));
      const t = g.redirect(i, k).target;
      if (t) assert.ok(t.page < g.pages(t.host));
    }
  }
  const r = computeReachable(g);
  for (const u of r.reachable) assert.notEqual(g.describe(u), null);
  assert.ok(r.reachable.size > 80);
});

test('determinism: two servers with the same seed serve the same pages (modulo port)', async () => {
  const w1 = await startSyntheticWeb({ seed: 'abc', hosts: 3, pagesPerHost: 8 });
  const w2 = await startSyntheticWeb({ seed: 'abc', hosts: 3, pagesPerHost: 8 });
  try {
    for (let i = 0; i < 3; i++) {
      for (let k = 0; k < 8; k++) {
        const p = w1.graph.pagePath(i, k);
        const [x, y] = await Promise.all([get(w1, w1.url(i, p)), get(w2, w2.url(i, p))]);
        assert.equal(x.status, y.status);
        assert.equal(x.body.toString().replaceAll(`:${w1.port}`, ':PORT'), y.body.toString().replaceAll(`:${w2.port}`, ':PORT'));
      }
    }
  } finally {
    await Promise.all([w1.close(), w2.close()]);
  }
});

// --- hosts, pages, robots, sitemaps ----------------------------------------

test('routing: the Host header picks the site; port, case and a trailing dot do not matter; unknown hosts get 404', async () => {
  const web = await startSyntheticWeb({ hosts: 3, pagesPerHost: 5 });
  try {
    assert.equal(web.resolveArg, `*.web.test:${web.port}:127.0.0.1`);
    assert.deepEqual(web.roots(), [0, 1, 2].map((i) => `http://h${i}.web.test:${web.port}/`));
    const r0 = await get(web, web.url(0));
    const r1 = await get(web, web.url(1));
    assert.equal(r0.status, 200);
    assert.equal(r0.headers['content-type'], 'text/html; charset=utf-8');
    assert.notEqual(r0.body.toString(), r1.body.toString());
    assert.ok(r0.body.length >= 10240 * 0.9 && r0.body.length <= 30720 * 1.2, `page size ${r0.body.length}`);
    const shouted = await get(web, web.url(0), { host: `H0.WEB.TEST.:${web.port}` });
    assert.ok(shouted.body.equals(r0.body));
    const unknown = await get(web, web.url(0), { host: 'h99.web.test' });
    assert.equal(unknown.status, 404);
    const head = await get(web, web.url(1), {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(Number(head.headers['content-length']), r1.body.length);
    assert.equal((await get(web, web.url(1, '/p/99'))).status, 404);
    assert.equal((await get(web, web.url(1, '/p/03'))).status, 404, 'leading zero is another URL');
  } finally {
    await web.close();
  }
});

test('robots.txt and sitemap.xml: default allows all and points at a sitemap listing every page of the host', async () => {
  const web = await startSyntheticWeb({ hosts: 2, pagesPerHost: 12, sections: 2 });
  try {
    const robots = await get(web, web.url(1, '/robots.txt'));
    assert.equal(robots.status, 200);
    assert.match(robots.headers['content-type'] ?? '', /^text\/plain/);
    const text = robots.body.toString();
    assert.match(text, /^User-agent: \*\nDisallow:\n/);
    const rules = RobotsOracle.parse(text);
    assert.deepEqual(rules.sitemaps, [web.url(1, '/sitemap.xml')]);
    const sm = await get(web, rules.sitemaps[0]);
    assert.equal(sm.status, 200);
    const locs = [...sm.body.toString().matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]);
    assert.deepEqual(locs, Array.from({ length: 12 }, (_, k) => web.graph.pageUrl(1, k)));
    assert.ok(locs.some((l) => /\/s\d\/p\/\d+$/.test(l)), 'sections give some deeper paths');
  } finally {
    await web.close();
  }
});

test('robots.txt: mixed rotation serves 404, 503 with Retry-After, and a 301 to a same-host file (RFC 9309 §2.3.1)', async () => {
  const web = await startSyntheticWeb({ hosts: 10, pagesPerHost: 20, robots: 'mixed' });
  try {
    assert.equal((await get(web, web.url(4, '/robots.txt'))).status, 404);
    const busy = await get(web, web.url(5, '/robots.txt'));
    assert.equal(busy.status, 503);
    assert.equal(busy.headers['retry-after'], '5');
    const moved = await get(web, web.url(6, '/robots.txt'));
    assert.equal(moved.status, 301);
    assert.equal(moved.headers.location, '/robots-real.txt');
    const real = await get(web, web.url(6, '/robots-real.txt'));
    assert.equal(real.status, 200);
    assert.match(real.body.toString(), /Disallow: \/p\/4/);
    const custom = await startSyntheticWeb({ hosts: 2, pagesPerHost: 3, robots: (h, i) => (i === 1 ? 'User-agent: *\nDisallow: /\n' : undefined) });
    try {
      assert.equal((await get(custom, custom.url(1, '/robots.txt'))).body.toString(), 'User-agent: *\nDisallow: /\n');
      assert.match((await get(custom, custom.url(0, '/robots.txt'))).body.toString(), /^User-agent: \*\nDisallow:\n/);
      const r = custom.reachable();
      assert.ok(r.disallowed.has(custom.url(1)));
      assert.ok(![...r.reachableAllowed].some((u) => u.startsWith(custom.origin(1))));
    } finally {
      await custom.close();
    }
  } finally {
    await web.close();
  }
});

// --- error mix --------------------------------------------------------------

test('error mix: shares hold per host; 404, 500, 429 + Retry-After and 301/302 chains of 1–3 hops are served as described', async () => {
  const mix = { notFound: 0.1, redirect: 0.15, serverError: 0.05, tooMany: 0.05 };
  const web = await startSyntheticWeb({ hosts: 20, pagesPerHost: 41, errorMix: mix, retryAfterSec: 7 });
  try {
    const counts = { notFound: 0, redirect: 0, serverError: 0, tooMany: 0 };
    for (let i = 0; i < 20; i++) {
      const perHost = { notFound: 0, redirect: 0, serverError: 0, tooMany: 0 };
      for (let k = 0; k < 41; k++) {
        const kind = web.describe(web.graph.pageUrl(i, k))!.kind;
        if (kind in perHost) perHost[kind as keyof typeof perHost]++;
      }
      for (const key of Object.keys(perHost) as (keyof typeof perHost)[]) {
        // Stochastic rounding: each host gets floor or ceil of share × 40.
        const want = mix[key] * 40;
        assert.ok(Math.abs(perHost[key] - want) < 1, `${key} on host ${i}: ${perHost[key]} vs ${want}`);
        counts[key] += perHost[key];
      }
    }
    for (const key of Object.keys(counts) as (keyof typeof counts)[]) {
      assert.ok(Math.abs(counts[key] - mix[key] * 800) <= 20, `${key}: ${counts[key]} of 800`);
    }
    assert.equal(web.describe(web.url(3))!.status, 200, 'roots are never errors');
    // Serve every page of a few hosts and compare with describe().
    const chainLengths = new Set<number>();
    const codes = new Set<number>();
    let relative = 0;
    for (let i = 0; i < 4; i++) {
      for (let k = 0; k < 41; k++) {
        const url = web.graph.pageUrl(i, k);
        const d = web.describe(url)!;
        const r = await get(web, url);
        assert.equal(r.status, d.status, url);
        if (d.kind === 'tooMany') assert.equal(r.headers['retry-after'], '7');
        if (d.kind === 'redirect') {
          let at = url;
          let hops = 0;
          let res = r;
          while (res.status >= 300 && res.status < 400) {
            codes.add(res.status);
            if (res.headers.location!.startsWith('/')) relative++;
            at = new URL(res.headers.location!, at).href;
            hops++;
            res = await get(web, at);
          }
          chainLengths.add(hops);
          assert.ok(hops >= 1 && hops <= 3 || web.describe(at) !== null);
          assert.ok([200, 404, 500, 429].includes(res.status));
        }
      }
    }
    assert.ok(chainLengths.has(1) && chainLengths.has(2), `chain lengths seen: ${[...chainLengths]}`);
    assert.deepEqual(sorted([...codes].map(String)), ['301', '302']);
    assert.ok(relative > 0, 'intermediate hops use relative Location references');
  } finally {
    await web.close();
  }
});

test('429 pages can recover after N answers (tooManyRecoverAfter), for retry tests', async () => {
  const web = await startSyntheticWeb({ hosts: 1, pagesPerHost: 30, errorMix: { tooMany: 0.2 }, tooManyRecoverAfter: 2 });
  try {
    const k = Array.from({ length: 30 }, (_, j) => j).find((j) => web.describe(web.graph.pageUrl(0, j))!.kind === 'tooMany')!;
    const url = web.graph.pageUrl(0, k);
    assert.equal((await get(web, url)).status, 429);
    assert.equal((await get(web, url)).status, 429);
    const third = await get(web, url);
    assert.equal(third.status, 200);
    assert.equal(hrefs(third.body.toString()).length, 1 + web.graph.cfg.outLinks);
  } finally {
    await web.close();
  }
});

// --- conditional GET and change --------------------------------------------

test('RFC 9110 §13.1: ETag/Last-Modified on every page, 304 on If-None-Match or If-Modified-Since', async () => {
  const web = await startSyntheticWeb({ hosts: 1, pagesPerHost: 3 });
  try {
    const url = web.url(0, '/p/1');
    const first = await get(web, url);
    const etag = first.headers.etag!;
    const lm = first.headers['last-modified']!;
    assert.match(etag, /^"[0-9a-f]+-0"$/);
    assert.ok(!Number.isNaN(Date.parse(lm)));
    const inm = await get(web, url, { 'if-none-match': etag });
    assert.equal(inm.status, 304);
    assert.deepEqual(web.requests().map((r) => r.conditional), [false, true]);
    assert.equal(inm.body.length, 0);
    assert.equal(inm.headers.etag, etag);
    assert.equal((await get(web, url, { 'if-none-match': `"x", W/${etag}` })).status, 304, 'weak comparison, lists');
    assert.equal((await get(web, url, { 'if-modified-since': lm })).status, 304);
    assert.equal((await get(web, url, { 'if-modified-since': 'Mon, 01 Jan 2024 00:00:00 GMT' })).status, 200);
    // §13.1.3: If-Modified-Since is ignored when If-None-Match is present.
    assert.equal((await get(web, url, { 'if-none-match': '"other"', 'if-modified-since': lm })).status, 200);
  } finally {
    await web.close();
  }
});

for (const cacheBytes of [0, 64 * 1024]) test(`changeEveryMs: content version follows the clock; new ETag and body, old validators get 200, links stay (cache ${cacheBytes})`, async () => {
  let now = 1_000_000;
  const web = await startSyntheticWeb({
    hosts: 1, pagesPerHost: 4, clock: () => now, cacheBytes,
    changeEveryMs: (host, path) => (path === '/p/1' ? 1000 : undefined),
  });
  try {
    const fast = web.url(0, '/p/1');
    const slow = web.url(0, '/p/2');
    const a = await get(web, fast);
    const s0 = await get(web, slow);
    now += 999;
    assert.equal((await get(web, fast, { 'if-none-match': a.headers.etag! })).status, 304);
    now += 1;
    const b = await get(web, fast, { 'if-none-match': a.headers.etag! });
    assert.equal(b.status, 200);
    assert.notEqual(b.headers.etag, a.headers.etag);
    assert.match(b.headers.etag!, /-1"$/);
    assert.ok(!b.body.equals(a.body));
    assert.deepEqual(hrefs(b.body.toString()), hrefs(a.body.toString()));
    assert.ok(Date.parse(b.headers['last-modified']!) > Date.parse(a.headers['last-modified']!));
    assert.ok((await get(web, fast)).body.equals(b.body), 'same version, same bytes (cached or re-rendered)');
    now += 5000;
    const s1 = await get(web, slow, { 'if-none-match': s0.headers.etag! });
    assert.equal(s1.status, 304, 'pages without a change rate never change');
    assert.ok((await get(web, slow)).body.equals(s0.body));
    const sm = (await get(web, web.url(0, '/sitemap.xml'))).body.toString();
    assert.match(sm, /\/p\/1<\/loc><changefreq>hourly<\/changefreq>/);
  } finally {
    await web.close();
  }
});

// --- request log ------------------------------------------------------------

test('request log: host, path, method, addresses, times, status, bytes, canonical url; requestsFor and clearLog', async () => {
  const web = await startSyntheticWeb({ hosts: 2, pagesPerHost: 6, latencyMs: (host) => (host === 'h1.web.test' ? 30 : 0) });
  try {
    const r = await get(web, web.url(1, '/p/3?utm_source=x&utm_medium=y'), { 'user-agent': 'ubicrawl/0.1 (agent-a)' });
    await get(web, web.url(0, '/p/./2'), {}, 'HEAD');
    await get(web, web.url(0, '/nope'));
    const log = web.requests();
    assert.equal(log.length, 3);
    const [a, b, c] = log;
    assert.equal(a.host, 'h1.web.test');
    assert.equal(a.path, '/p/3?utm_source=x&utm_medium=y');
    assert.equal(a.method, 'GET');
    assert.equal(a.clientAddress, '127.0.0.1');
    assert.equal(a.localAddress, '127.0.0.1');
    assert.equal(a.localPort, web.port);
    assert.equal(a.status, 200);
    assert.equal(a.bytes, r.body.length);
    assert.equal(a.aborted, false);
    assert.equal(a.url, web.url(1, '/p/3'), 'tracking parameters dropped');
    assert.ok(a.end - a.start >= 25, `latency applied: ${a.end - a.start}`);
    assert.equal(a.userAgent, 'ubicrawl/0.1 (agent-a)');
    assert.equal(a.conditional, false);
    assert.ok(Math.abs(a.start - Date.now()) < 10_000, 'epoch-based ms');
    assert.equal(b.method, 'HEAD');
    assert.equal(b.url, web.url(0, '/p/2'));
    assert.equal(b.bytes, 0);
    assert.ok(b.start >= a.end);
    assert.equal(c.status, 404);
    assert.deepEqual(web.requestsFor(0), [b, c]);
    assert.deepEqual(web.requestsFor('H1.web.test'), [a]);
    web.clearLog();
    assert.equal(web.requests().length, 0);
    assert.equal(log.length, 3, 'an earlier snapshot is not mutated');
  } finally {
    await web.close();
  }
});

// --- URL variants and duplicates --------------------------------------------

test('RFC 3986 §6.2: link variants collapse to the canonical URL and the server answers them like the page', async () => {
  const web = await startSyntheticWeb({ hosts: 3, pagesPerHost: 20, variantShare: 1, sections: 2 });
  try {
    const seenKinds = new Set<string>();
    for (let k = 0; k < 20; k++) {
      const url = web.graph.pageUrl(0, k);
      const html = (await get(web, url)).body.toString();
      const links = hrefs(html).slice(1); // the nav link to / is plain
      const model = web.graph.links(0, k);
      assert.equal(links.length, model.length);
      for (let j = 0; j < model.length; j++) {
        seenKinds.add(model[j].variant!);
        assert.equal(canonical(links[j].href, url), web.graph.linkUrl(model[j]), links[j].href);
      }
    }
    assert.deepEqual(sorted(seenKinds), ['case', 'defaultPort', 'dot', 'fragment', 'pct', 'tracking']);
    // A crawler that does not normalise still gets the page, and the log says which page it was.
    const plain = await get(web, web.url(1, '/p/5'));
    web.clearLog();
    const pct = await get(web, web.url(1, '/%70/5'));
    assert.ok(pct.body.equals(plain.body));
    assert.equal(web.requests()[0].url, web.url(1, '/p/5'));
  } finally {
    await web.close();
  }
});

/** Visible text: text nodes outside script/style. */
function visibleText(html: string): string {
  let skip = 0;
  const parts: string[] = [];
  const p = new Parser({
    onopentag(n) { if (n === 'script' || n === 'style') skip++; },
    onclosetag(n) { if (n === 'script' || n === 'style') skip--; },
    ontext(t) { if (skip === 0) parts.push(t); },
  }, { decodeEntities: true });
  p.write(html);
  p.end();
  return parts.join(' ');
}

/** Plain 64-bit SimHash over word 3-shingles (Charikar 2002), only to check the planted pairs. */
function simhash(text: string): bigint {
  const words = text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const v = new Array<number>(64).fill(0);
  for (let i = 0; i + 2 < words.length; i++) {
    const h = xxh64(words[i] + ' ' + words[i + 1] + ' ' + words[i + 2]);
    for (let b = 0; b < 64; b++) v[b] += (h >> BigInt(b)) & 1n ? 1 : -1;
  }
  let out = 0n;
  for (let b = 0; b < 64; b++) if (v[b] > 0) out |= 1n << BigInt(b);
  return out;
}

function hamming(a: bigint, b: bigint): number {
  let x = a ^ b;
  let n = 0;
  while (x) { n += Number(x & 1n); x >>= 1n; }
  return n;
}

test('duplicates: exact ones are byte-identical; near ones share the article (same visible text, other bytes), distinct pages are far apart', async () => {
  const web = await startSyntheticWeb({ seed: 5, hosts: 4, pagesPerHost: 30, nearDupShare: 0.1, exactDupShare: 0.1 });
  try {
    const d = web.duplicates();
    assert.ok(d.exact.length >= 8 && d.near.length >= 8, `${d.exact.length} exact, ${d.near.length} near`);
    for (const { url, of } of d.exact) {
      const [a, b] = await Promise.all([get(web, url), get(web, of)]);
      assert.ok(a.body.equals(b.body), `${url} = ${of}`);
      assert.equal(web.describe(url)!.kind, 'exactDup');
    }
    const distances: number[] = [];
    for (const { url, of } of d.near) {
      const [a, b] = await Promise.all([get(web, url), get(web, of)]);
      assert.ok(!a.body.equals(b.body));
      assert.deepEqual(hrefs(a.body.toString()), hrefs(b.body.toString()), 'same article, same links');
      distances.push(hamming(simhash(visibleText(a.body.toString())), simhash(visibleText(b.body.toString()))));
    }
    assert.deepEqual(new Set(distances), new Set([0]), 'visible text identical by default');
    // Distinct ordinary pages are nowhere near.
    const plain: bigint[] = [];
    for (let k = 0; k < 30 && plain.length < 10; k++) {
      if (web.describe(web.graph.pageUrl(2, k))!.kind === 'page') {
        plain.push(simhash(visibleText((await get(web, web.graph.pageUrl(2, k))).body.toString())));
      }
    }
    for (let x = 0; x < plain.length; x++) for (let y = x + 1; y < plain.length; y++) assert.ok(hamming(plain[x], plain[y]) > 10);
  } finally {
    await web.close();
  }
});

test('duplicates: nearDupChangedWords makes the ad block differ by that many visible words', async () => {
  const web = await startSyntheticWeb({ seed: 5, hosts: 2, pagesPerHost: 30, nearDupShare: 0.2, nearDupChangedWords: 2 });
  try {
    const { near } = web.duplicates();
    assert.ok(near.length > 0);
    const distances: number[] = [];
    for (const { url, of } of near) {
      const [a, b] = await Promise.all([get(web, url), get(web, of)]);
      const ta = visibleText(a.body.toString()).split(/\s+/).filter(Boolean);
      const tb = visibleText(b.body.toString()).split(/\s+/).filter(Boolean);
      assert.equal(ta.length, tb.length);
      const diff = ta.filter((w, j) => w !== tb[j]).length;
      assert.ok(diff >= 1 && diff <= 2, `${diff} words differ`);
      distances.push(hamming(simhash(ta.join(' ')), simhash(tb.join(' '))));
    }
    assert.ok(distances.some((d) => d > 0) && Math.max(...distances) < 16, `distances ${distances}`);
  } finally {
    await web.close();
  }
});

// --- reachability -----------------------------------------------------------

test('reachable: hand-checkable cases (no links, explicit seeds, a disallowed root)', async () => {
  const web = await startSyntheticWeb({ hosts: 3, pagesPerHost: 5, outLinks: 0, robots: (h, i) => (i === 2 ? 'User-agent: *\nDisallow: /\n' : undefined) });
  try {
    const r = web.reachable();
    assert.deepEqual(sorted(r.reachable), sorted(web.roots()));
    assert.deepEqual(sorted(r.reachableAllowed), sorted([web.url(0), web.url(1)]));
    assert.deepEqual(sorted(r.disallowed), [web.url(2)]);
    assert.deepEqual(sorted(r.hostsTouched), ['h0.web.test', 'h1.web.test', 'h2.web.test']);
    const s = web.reachable({ seeds: [web.url(1, '/p/3'), web.url(1, '/p/./3#x')] });
    assert.deepEqual(sorted(s.reachable), [web.url(1, '/'), web.url(1, '/p/3')], 'nav link to / and the seed once');
    const viaSitemaps = web.reachable({ viaSitemaps: true });
    assert.equal(viaSitemaps.reachableAllowed.size, 10, 'sitemaps of hosts 0 and 1 list all their pages');
  } finally {
    await web.close();
  }
});

test('reachable equals what a real link-following crawler fetches over HTTP, with and without robots.txt', async () => {
  const web = await startSyntheticWeb({
    seed: 11, hosts: 10, pagesPerHost: 25, outLinks: 4, crossHostShare: 0.3, sections: 2, robots: 'mixed',
    errorMix: { notFound: 0.08, redirect: 0.15, serverError: 0.05, tooMany: 0.05 },
    variantShare: 0.3, nearDupShare: 0.05, exactDupShare: 0.05, pageBytes: { min: 2000, max: 4000 },
  });
  try {
    const r = web.reachable();
    const free = await miniCrawl(web, false);
    assert.deepEqual(sorted(free.fetched), sorted(r.reachable));
    const obeying = await miniCrawl(web, true);
    assert.deepEqual(sorted(obeying.fetched), sorted(r.reachableAllowed));
    assert.deepEqual(sorted(obeying.disallowed), sorted(r.disallowed));
    // The mix makes this a meaningful check.
    assert.ok(r.redirects.size > 5 && r.errors.size > 5, `${r.redirects.size} redirects, ${r.errors.size} errors`);
    assert.ok(r.disallowed.size > 10 && r.reachableAllowed.size < r.reachable.size);
    assert.ok(![...r.reachableAllowed].some((u) => u.startsWith(web.origin(5))), 'robots.txt 503 → nothing on host 5');
    assert.ok([...r.reachableAllowed].some((u) => u.startsWith(web.origin(4))), 'robots.txt 404 → host 4 open');
    for (const u of r.reachable) assert.equal(r.status.get(u), web.describe(u)!.status);
  } finally {
    await web.close();
  }
});

test('reachable: rel=nofollow links are skipped only when asked', async () => {
  const web = await startSyntheticWeb({ seed: 3, hosts: 3, pagesPerHost: 30, outLinks: 3, nofollowShare: 0.5 });
  try {
    const all = web.reachable();
    const nf = web.reachable({ obeyNofollow: true });
    assert.ok(nf.reachable.size < all.reachable.size);
    const html = (await get(web, web.url(0))).body.toString();
    const model = web.graph.links(0, 0);
    assert.deepEqual(hrefs(html).slice(1).map((h) => h.rel === 'nofollow'), model.map((l) => l.nofollow));
  } finally {
    await web.close();
  }
});

// --- robots oracle (independent RFC 9309 matcher) -----------------------------

test('RFC 9309 §2.2.1: groups for the product token are merged and replace *; matching is case-insensitive', () => {
  const r = RobotsOracle.parse('User-agent: *\nDisallow: /\n\nUser-agent: UbiCrawl/1.0\nDisallow: /a\n\nuser-agent: ubicrawl\nDisallow: /b\n');
  assert.equal(r.isAllowed('/a1', 'ubicrawl'), false);
  assert.equal(r.isAllowed('/b1', 'UBICRAWL'), false);
  assert.equal(r.isAllowed('/c', 'ubicrawl'), true);
  assert.equal(r.isAllowed('/c', 'otherbot'), false);
  const shared = RobotsOracle.parse('User-agent: a\nUser-agent: ubicrawl\nDisallow: /x\n');
  assert.equal(shared.isAllowed('/x', 'ubicrawl'), false);
});

test('RFC 9309 §2.2.2: longest match wins, allow on a tie, empty Disallow matches nothing, /robots.txt always allowed', () => {
  const r = RobotsOracle.parse('User-agent: *\nDisallow: /p\nAllow: /p/1\nDisallow: /q/\nAllow: /q/\nDisallow:\nDisallow: /robots.txt\n');
  assert.equal(r.isAllowed('/p/2', 'x'), false);
  assert.equal(r.isAllowed('/p/1', 'x'), true);
  assert.equal(r.isAllowed('/q/z', 'x'), true);
  assert.equal(r.isAllowed('/other', 'x'), true);
  assert.equal(r.isAllowed('/robots.txt', 'x'), true);
});

test('RFC 9309 §2.2.3: * and $ special characters', () => {
  const r = RobotsOracle.parse('User-agent: *\nDisallow: /*3$\nAllow: /p/13$\nDisallow: /a*b*c\n');
  assert.equal(r.isAllowed('/p/3', 'x'), false);
  assert.equal(r.isAllowed('/p/13', 'x'), true);
  assert.equal(r.isAllowed('/p/33', 'x'), false);
  assert.equal(r.isAllowed('/p/30', 'x'), true);
  assert.equal(r.isAllowed('/axxbyyc', 'x'), false);
  assert.equal(r.isAllowed('/axxcb', 'x'), true);
});

test('RFC 9309 §2.2.2: percent-encoding normalised on both sides; BOM, CRLF and comments tolerated', () => {
  const r = RobotsOracle.parse('\ufeffUser-agent: * # all\r\nDisallow: /%70/7\r\nDisallow: /caf%c3%a9\r\nDisallow: /%2F\r\n');
  assert.equal(r.isAllowed('/p/7', 'x'), false);
  assert.equal(r.isAllowed('/%70/71', 'x'), false);
  assert.equal(r.isAllowed('/café', 'x'), false);
  assert.equal(r.isAllowed('/%2f', 'x'), false, 'hex case normalised, reserved kept encoded');
  assert.equal(r.isAllowed('//', 'x'), true, '%2F is not a slash');
});

// --- politeness checker -------------------------------------------------------

function rec(host: string, start: number, end: number, ip = '127.0.0.1'): RequestRecord {
  return {
    host, path: '/', method: 'GET', clientAddress: '127.0.0.1', clientPort: 1, localAddress: ip, localPort: 80,
    start, end, status: 200, bytes: 1, aborted: false, url: null, userAgent: '', conditional: false,
  };
}

test('checkPoliteness: finds a planted too-close pair and an overlap, and nothing in a polite log', () => {
  const polite = [rec('a', 0, 5), rec('b', 1, 6), rec('a', 1000, 1003), rec('b', 1001, 1010), rec('a', 2000, 2001)];
  assert.deepEqual(checkPoliteness(polite, 1000), []);
  const planted = [...polite, rec('a', 2500, 2501)];
  const v = checkPoliteness(planted, 1000);
  assert.equal(v.length, 1);
  assert.equal(v[0].kind, 'tooClose');
  assert.equal(v[0].key, 'a');
  assert.equal(v[0].gapMs, 500);
  const overlap = checkPoliteness([rec('a', 0, 100), rec('a', 50, 60)], 0);
  assert.deepEqual(overlap.map((x) => x.kind), ['concurrent']);
  // Measured from the previous end (Mercator-style) the polite log is too close.
  assert.ok(checkPoliteness(polite, 1000, { measure: 'end' }).length > 0);
  assert.deepEqual(checkPoliteness(planted, 1000, { filter: (r) => r.start !== 2500 }), []);
  assert.deepEqual(checkPoliteness(planted, 1000, { toleranceMs: 500 }), []);
});

test('checkPolitenessPerIp: hosts sharing an address share the rule', () => {
  const log = [rec('a', 0, 5, '127.0.0.1'), rec('b', 100, 105, '127.0.0.1'), rec('c', 100, 105, '127.0.0.2')];
  assert.deepEqual(checkPoliteness(log, 1000), []);
  const v = checkPolitenessPerIp(log, 1000);
  assert.equal(v.length, 1);
  assert.equal(v[0].key, '127.0.0.1');
});

test('several loopback addresses: host i lives on addresses[i % n]; the log and the per-IP checker see it', async () => {
  const web = await startSyntheticWeb({ hosts: 4, pagesPerHost: 3, addresses: ['127.0.0.1', '127.0.0.2'], enforceAddress: true });
  try {
    assert.deepEqual(web.resolveArgs, [
      `h0.web.test:${web.port}:127.0.0.1`, `h1.web.test:${web.port}:127.0.0.2`,
      `h2.web.test:${web.port}:127.0.0.1`, `h3.web.test:${web.port}:127.0.0.2`, `*.web.test:${web.port}:127.0.0.1`,
    ]);
    await Promise.all([get(web, web.url(0)), get(web, web.url(2)), get(web, web.url(1))]);
    const log = web.requests();
    assert.deepEqual(sorted(log.map((r) => `${r.host}@${r.localAddress}`)),
      ['h0.web.test@127.0.0.1', 'h1.web.test@127.0.0.2', 'h2.web.test@127.0.0.1']);
    assert.equal(checkPoliteness(log, 1000).length, 0);
    const perIp = checkPolitenessPerIp(log, 1000);
    assert.equal(perIp.length >= 1, true);
    assert.ok(perIp.every((v) => v.key === '127.0.0.1'));
    // Asking for host 1 on the wrong address is refused.
    const wrong = await new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: web.port, path: '/', headers: { host: `h1.web.test:${web.port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    assert.equal(wrong, 421);
  } finally {
    await web.close();
  }
});

test('checkPoliteness on a live log: concurrent requests to one host are caught', async () => {
  const web = await startSyntheticWeb({ hosts: 2, pagesPerHost: 4, latencyMs: 40 });
  try {
    await Promise.all([get(web, web.url(0, '/p/1')), get(web, web.url(0, '/p/2')), get(web, web.url(1))]);
    const v = checkPoliteness(web.requests(), 10);
    assert.ok(v.some((x) => x.kind === 'concurrent' && x.key === 'h0.web.test'));
    assert.ok(v.every((x) => x.key === 'h0.web.test'));
  } finally {
    await web.close();
  }
});

// --- traps --------------------------------------------------------------------

test('traps: calendar never ends, loops loop, non-HTML types, malformed HTML; linked from the root of h0', async () => {
  const web = await startSyntheticWeb({ hosts: 2, pagesPerHost: 3, traps: { gzipBombBytes: 1 << 20 } });
  try {
    const t = web.trapUrls;
    const rootLinks = hrefs((await get(web, web.url(0))).body.toString()).map((h) => h.href);
    for (const u of Object.values(t)) assert.ok(rootLinks.includes(u!), `root links ${u}`);
    assert.deepEqual(sorted(web.reachable().traps), sorted(Object.values(t) as string[]));
    let day = t.calendar!;
    for (let n = 0; n < 40; n++) {
      const r = await get(web, day);
      assert.equal(r.status, 200);
      day = new URL(hrefs(r.body.toString())[0].href, day).href;
    }
    assert.equal(day, t.calendar!.replace('2024/01/01', '2024/02/10'));
    let page = t.pager!;
    const sids = new Set<string>();
    let shop = t.sessionIds!;
    for (let n = 0; n < 20; n++) {
      page = new URL(hrefs((await get(web, page)).body.toString())[0].href, page).href;
      shop = new URL(hrefs((await get(web, shop)).body.toString())[0].href, shop).href;
      sids.add(shop);
    }
    assert.equal(page, t.pager!.replace('page=1', 'page=21'));
    assert.equal(sids.size, 20, 'a new session id every time');
    const loopA = await get(web, t.redirectLoop!);
    const loopB = await get(web, new URL(loopA.headers.location!, t.redirectLoop!).href);
    assert.equal(new URL(loopB.headers.location!, t.redirectLoop!).href, t.redirectLoop);
    assert.equal((await get(web, t.selfRedirect!)).headers.location, '/self');
    assert.equal((await get(web, t.endlessRedirects!)).headers.location, '/chain/2');
    assert.equal((await get(web, t.pdf!)).headers['content-type'], 'application/pdf');
    const png = await get(web, t.image!);
    assert.equal(png.headers['content-type'], 'image/png');
    assert.equal(png.body.subarray(1, 4).toString(), 'PNG');
    const garbage = await get(web, t.binaryAsHtml!);
    assert.match(garbage.headers['content-type']!, /^text\/html/);
    assert.equal(garbage.body.length, 65536);
    const bad = await get(web, t.malformedHtml!);
    assert.equal(bad.status, 200);
    assert.ok(hrefs(bad.body.toString('latin1')).length > 3, 'a lenient parser still finds links');
    assert.equal((await get(web, web.origin('trap-loop.web.test') + '/robots.txt')).status, 200);
  } finally {
    await web.close();
  }
});

test('traps: the gzip bomb is a valid gzip member that inflates to the configured size (RFC 1952 CRC and ISIZE)', async () => {
  const size = 48 * 1024 * 1024 + 12345;
  const bomb = buildGzipBomb(size);
  assert.ok(bomb.length < size / 900, `ratio ${size / bomb.length}`);
  const out = zlib.gunzipSync(bomb, { maxOutputLength: size + 1 });
  assert.equal(out.length, size);
  assert.ok(out.every((b) => b === 0));
  assert.equal(crc32Combine(zlib.crc32('ab'), zlib.crc32('cd'), 2), zlib.crc32('abcd'));
  const web = await startSyntheticWeb({ hosts: 1, pagesPerHost: 1, traps: { gzipBombBytes: 4 << 20 } });
  try {
    const r = await get(web, web.trapUrls.gzipBomb!);
    assert.equal(r.headers['content-encoding'], 'gzip');
    assert.equal(zlib.gunzipSync(r.body).length, 4 << 20);
  } finally {
    await web.close();
  }
});

test('traps: /slow-forever keeps sending until the client gives up; close() ends it', async () => {
  const web = await startSyntheticWeb({ hosts: 1, pagesPerHost: 1, traps: { trickleMs: 10 } });
  try {
    const u = new URL(web.trapUrls.slowForever!);
    const got = await new Promise<number>((resolve, reject) => {
      const req = http.get({ host: web.address, port: web.port, path: u.pathname, headers: { host: u.host } }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
          if (n > 200) {
            req.destroy();
            resolve(n);
          }
        });
      });
      req.on('error', (e) => (e.message === 'socket hang up' ? undefined : reject(e)));
    });
    assert.ok(got > 200);
    const rec = web.requests().find((r) => r.path === '/slow-forever')!;
    for (let n = 0; n < 200 && !rec.aborted; n++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(rec.aborted, true);
    assert.ok(rec.end > rec.start);
    // An open trickle does not keep close() waiting.
    const pending = new Promise<void>((resolve) => {
      http.get({ host: web.address, port: web.port, path: u.pathname, headers: { host: u.host } }, (res) => {
        res.on('data', () => {});
        res.on('close', () => resolve());
        res.on('error', () => resolve());
      }).on('error', () => resolve());
    });
    await new Promise((r) => setTimeout(r, 30));
    await web.close();
    await pending;
  } finally {
    await web.close();
  }
});

// --- intercept, safety, CLI ---------------------------------------------------------

test('intercept answers instead of the site, and only loopback addresses are accepted', async () => {
  const web = await startSyntheticWeb({
    hosts: 2, pagesPerHost: 2,
    intercept: (r) => (r.hostIndex === 1 ? { status: 503, headers: { 'retry-after': '3' }, body: 'busy' } : null),
  });
  try {
    const r = await get(web, web.url(1));
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '3');
    assert.equal(r.body.toString(), 'busy');
    assert.equal((await get(web, web.url(0))).status, 200);
    assert.equal(web.requests()[0].status, 503);
  } finally {
    await web.close();
  }
  await assert.rejects(startSyntheticWeb({ addresses: ['0.0.0.0'] }), /loopback only/);
  const throwing = await startSyntheticWeb({ hosts: 1, pagesPerHost: 1, intercept: () => { throw new Error('boom'); } });
  try {
    const r = await get(throwing, throwing.url(0));
    assert.equal(r.status, 500, 'a throwing hook answers 500, the server lives on');
    assert.match(r.body.toString(), /boom/);
  } finally {
    await throwing.close();
  }
});

test('intercept may answer with a promise: the request is held, in flight in the log, until it settles', async () => {
  let release = () => {};
  const held = new Promise<{ status: number; body: string }>((r) => { release = () => r({ status: 200, body: 'late' }); });
  const web = await startSyntheticWeb({ hosts: 1, pagesPerHost: 1, intercept: (r) => (r.path === '/held' ? held : null) });
  try {
    const answer = get(web, `${web.url(0)}held`);
    await new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 5000;
      const poll = () => (web.requests().length > 0 ? resolve() : Date.now() > deadline ? reject(new Error('never arrived')) : setTimeout(poll, 10));
      poll();
    });
    assert.equal(web.requests()[0]!.end, 0, 'in flight while held');
    release();
    const r = await answer;
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'late');
  } finally {
    await web.close();
  }
});

test('CLI: prints the resolve argument and the roots, serves, stops on SIGTERM', async () => {
  const cli = fileURLToPath(new URL('../bench/web/cli.js', import.meta.url));
  const child = spawn(process.execPath, [cli, '--json', '--hosts', '3', '--pages', '4'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line: string = await new Promise((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (c) => reject(new Error(`exited ${c}`)));
    });
    const info = JSON.parse(line) as { port: number; resolve: string[]; roots: string[] };
    assert.deepEqual(info.resolve, [`*.web.test:${info.port}:127.0.0.1`]);
    assert.equal(info.roots.length, 3);
    const status = await new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: info.port, path: '/', headers: { host: new URL(info.roots[2]).host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    assert.equal(status, 200);
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  }
});

test.after(() => agent.destroy());
