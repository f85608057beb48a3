// Politeness on every path (docs/politeness.md "Redirects"): robots.txt
// redirects — to the same host and to another host — sitemaps that redirect,
// and pages all wait for the clock of the host they go to. Mercator's rule
// (next allowed = end of the answer + k × its duration) is checked on the
// server's own request log of a slow host. Only lower bounds are asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { tempDir } from './helpers.js';

interface Served { host: string; path: string; start: number; end: number; status: number }

/** Client and server clocks differ by a little (one machine, two event loops). */
const TOL = 15;

/** A loopback server for two hosts (by Host header) that answers every request after `latencyMs`. */
async function startSlowWeb(latencyMs: number, routes: (host: string, path: string, origin: (h: string) => string) => { status: number; headers?: Record<string, string>; body?: string }) {
  const log: Served[] = [];
  const server = http.createServer({ keepAlive: true }, (req, res) => {
    const rec: Served = { host: (req.headers.host ?? '').replace(/:\d+$/, ''), path: req.url ?? '/', start: performance.timeOrigin + performance.now(), end: 0, status: 0 };
    log.push(rec);
    setTimeout(() => {
      const r = routes(rec.host, rec.path, origin);
      const body = Buffer.from(r.body ?? '');
      rec.status = r.status;
      res.on('finish', () => { rec.end = performance.timeOrigin + performance.now(); });
      res.writeHead(r.status, { 'content-length': body.length, ...r.headers });
      res.end(body);
    }, latencyMs);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const origin = (h: string) => `http://${h}:${port}`;
  return {
    log, port, origin,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const html = (links: string[]) => ({ status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body>${links.map((l) => `<a href="${l}">x</a>`).join('')}</body></html>` });
const moved = (to: string, status = 301) => ({ status, headers: { location: to } });

test('Mercator k × answer time holds for robots.txt redirects (same host and cross-host), sitemap redirects and pages of a slow host', async () => {
  const LATENCY = 120, K = 3;
  const A = 'a.paths.test', B = 'b.paths.test';
  const web = await startSlowWeb(LATENCY, (host, path, origin) => {
    if (host === A) {
      switch (path) {
        // RFC 9309 §2.3.1.2: two redirects before the file.
        case '/robots.txt': return moved('/robots-1.txt');
        case '/robots-1.txt': return moved('/robots-2.txt', 302);
        case '/robots-2.txt': return { status: 200, headers: { 'content-type': 'text/plain' }, body: `User-agent: *\nAllow: /\nSitemap: ${origin(A)}/old-sitemap.xml\n` };
        case '/old-sitemap.xml': return moved('/sitemap.xml');
        case '/sitemap.xml': return { status: 200, headers: { 'content-type': 'application/xml' }, body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${origin(A)}/only-in-sitemap</loc></url></urlset>` };
        case '/': return html(['/p1', '/p2', `${origin(B)}/`]);
        case '/p2': return moved('/p3');
        default: return html([]);
      }
    }
    if (host === B) {
      // Cross-host: B's robots.txt is A's file, so that request must wait for A's clock.
      if (path === '/robots.txt') return moved(`${origin(A)}/robots-2.txt`);
      if (path === '/') return html(['/q1']);
      return html([]);
    }
    return { status: 404 };
  });
  try {
    const agent = await startAgent({
      dataDir: tempDir(), seeds: [`${web.origin(A)}/`, `${web.origin(B)}/`], untilIdle: true, minDelayMs: 20, delayFactor: K, concurrency: 4,
      resolve: [parseResolveRule(`*.paths.test:${web.port}:127.0.0.1`)], logLevel: 'silent',
    });
    await agent.done;
    for (const host of [A, B]) {
      const rs = web.log.filter((r) => r.host === host).sort((a, b) => a.start - b.start);
      for (let i = 1; i < rs.length; i++) {
        const prev = rs[i - 1]!, cur = rs[i]!;
        assert.ok(prev.end > 0 && cur.start >= prev.end, `${host}: ${cur.path} started while ${prev.path} was in flight`);
        const took = prev.end - prev.start;
        const gap = cur.start - prev.end;
        assert.ok(took >= LATENCY - 1, `${host}${prev.path} was slow (${took.toFixed(0)} ms)`);
        // The client measured at least the server's time, so it waits at least k × that.
        assert.ok(gap >= K * took - TOL, `${host}: ${cur.path} came ${gap.toFixed(0)} ms after ${prev.path} ended (answer took ${took.toFixed(0)} ms, want ≥ ${(K * took).toFixed(0)})`);
      }
    }
    const paths = (h: string) => web.log.filter((r) => r.host === h).map((r) => r.path);
    // Everything was fetched: the chain, the redirected sitemap (as a sitemap: its URL was read), the pages.
    for (const p of ['/robots.txt', '/robots-1.txt', '/robots-2.txt', '/old-sitemap.xml', '/sitemap.xml', '/', '/p1', '/p2', '/p3', '/only-in-sitemap']) {
      assert.ok(paths(A).includes(p), `${A}${p} fetched`);
    }
    assert.equal(paths(A).filter((p) => p === '/robots-2.txt').length, 2, "A's robots.txt file, once for A and once by B's redirect");
    for (const p of ['/robots.txt', '/', '/q1']) assert.ok(paths(B).includes(p), `${B}${p} fetched`);
  } finally {
    await web.close();
  }
});

test('RFC 9309 §2.3.1.2: a robots.txt redirect chain to a host outside the frontier waits for that host\'s clock at every hop; past 5 redirects robots.txt is unavailable (allow all)', async () => {
  const LATENCY = 100, K = 3;
  const C = 'c.paths.test', D = 'd.paths.test';
  const web = await startSlowWeb(LATENCY, (host, path, origin) => {
    if (host === C) {
      if (path === '/robots.txt') return moved(`${origin(D)}/hop-1`);
      if (path === '/') return html(['/private']);
      return html([]);
    }
    // D is never crawled itself: only the redirect chain goes there, each hop to the next, six redirects in all.
    const n = Number(/^\/hop-(\d+)$/.exec(path)?.[1] ?? NaN);
    return n >= 1 ? moved(`/hop-${n + 1}`) : { status: 404 };
  });
  try {
    const agent = await startAgent({
      dataDir: tempDir(), seeds: [`${web.origin(C)}/`], untilIdle: true, minDelayMs: 20, delayFactor: K, concurrency: 2,
      resolve: [parseResolveRule(`*.paths.test:${web.port}:127.0.0.1`)], logLevel: 'silent', sitemaps: { enabled: false },
    });
    await agent.done;
    const onD = web.log.filter((r) => r.host === D).sort((a, b) => a.start - b.start);
    assert.deepEqual(onD.map((r) => r.path), ['/hop-1', '/hop-2', '/hop-3', '/hop-4', '/hop-5'], 'five hops after robots.txt itself, then no more');
    for (let i = 1; i < onD.length; i++) {
      const prev = onD[i - 1]!, cur = onD[i]!;
      const took = prev.end - prev.start;
      const gap = cur.start - prev.end;
      assert.ok(gap >= K * took - TOL, `${D}: ${cur.path} came ${gap.toFixed(0)} ms after ${prev.path} ended (answer took ${took.toFixed(0)} ms)`);
    }
    // Unavailable: everything allowed, so C's pages are fetched.
    assert.ok(web.log.some((r) => r.host === C && r.path === '/private'), 'allow all after too many redirects');
  } finally {
    await web.close();
  }
});

test('Crawl-delay holds from the robots.txt exchange that states it: the first page waits for it too', async () => {
  const DELAY_S = 1;
  const E = 'e.paths.test';
  const web = await startSlowWeb(5, (host, path) => {
    if (path === '/robots.txt') return { status: 200, headers: { 'content-type': 'text/plain' }, body: `User-agent: *\nCrawl-delay: ${DELAY_S}\n` };
    return path === '/' ? html(['/p1']) : html([]);
  });
  try {
    const agent = await startAgent({
      dataDir: tempDir(), seeds: [`${web.origin(E)}/`], untilIdle: true, minDelayMs: 20, delayFactor: 0, concurrency: 2,
      resolve: [parseResolveRule(`*.paths.test:${web.port}:127.0.0.1`)], logLevel: 'silent', sitemaps: { enabled: false },
    });
    await agent.done;
    const rs = web.log.filter((r) => r.host === E).sort((a, b) => a.start - b.start);
    assert.deepEqual(rs.map((r) => r.path), ['/robots.txt', '/', '/p1']);
    for (let i = 1; i < rs.length; i++) {
      const gap = rs[i]!.start - rs[i - 1]!.end;
      assert.ok(gap >= DELAY_S * 1000 - TOL, `${rs[i]!.path} came ${gap.toFixed(0)} ms after ${rs[i - 1]!.path} ended (Crawl-delay: ${DELAY_S})`);
    }
  } finally {
    await web.close();
  }
});
