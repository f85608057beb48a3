// Against the synthetic web's request log (docs/politeness.md): adaptive
// politeness as real crawls see it (Retry-After, Mercator's k × response time,
// the per-IP clock, slow and missing DNS names, failing hosts parked).
// Only lower bounds on spacing are asserted (the machine is shared).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSyntheticWeb, checkPoliteness, checkPolitenessPerIp, type RequestRecord } from '../bench/web/index.js';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { startDnsServer } from './helpers-dns.js';
import { tempDir } from './helpers.js';

/** Client and server clocks differ by a little; the rules are kept from the client's side. */
const TOL = 15;
const isPage = (r: RequestRecord) => !r.path.startsWith('/robots') && !r.path.startsWith('/sitemap');

test('RFC 9110 §10.2.3: a host answering 429 with Retry-After: 5 is not contacted again for 5 s', async () => {
  let served429: RequestRecord | undefined;
  const web = await startSyntheticWeb({
    seed: 11, hosts: 2, pagesPerHost: 4, outLinks: 3, crossHostShare: 0, pageBytes: { min: 500, max: 800 }, sitemap: false,
    intercept: (req) => {
      if (req.hostIndex === 0 && req.path === '/' && !served429) {
        served429 = {} as RequestRecord; // the first root request only
        return { status: 429, headers: { 'retry-after': '5', 'content-type': 'text/html' }, body: 'slow down' };
      }
      return null;
    },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 100, delayFactor: 0, concurrency: 4,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', sitemaps: { enabled: false },
      // Small backoff and retry delays: what holds the host back here must be the Retry-After alone.
      politeness: { backoffBaseMs: 50, retryBaseMs: 50 },
    });
    const summary = await agent.done;
    const h0 = web.requestsFor(web.hostName(0)).slice().sort((a, b) => a.start - b.start);
    const i429 = h0.findIndex((r) => r.status === 429);
    assert.ok(i429 >= 0, 'the 429 was served');
    const tooMany = h0[i429]!;
    const next = h0[i429 + 1];
    assert.ok(next, 'the host was contacted again afterwards');
    const gap = next.start - tooMany.end;
    assert.ok(gap >= 5000 - TOL, `next request ${gap.toFixed(0)} ms after the 429 (Retry-After: 5)`);
    // The 429'd URL is retried and fetched; the host is crawled to the end.
    assert.ok(h0.some((r, i) => i > i429 && r.path === '/' && r.status === 200), 'the root is fetched on retry');
    assert.equal(h0.filter((r) => isPage(r) && r.status === 200).length, 4, 'every page of the host');
    // The other host is not held up by it.
    const h1 = web.requestsFor(web.hostName(1)).filter(isPage);
    assert.ok(h1.filter((r) => r.start < tooMany.end + 5000).length >= 3, 'the other host is crawled meanwhile');
    const pol = summary.politeness as Record<string, number>;
    assert.equal(pol.backoffs, 1);
    assert.equal(pol.retries, 1);
  } finally {
    await web.close();
  }
});

test('Mercator (k = 10): a host whose latency rises to 500 ms is fetched no more often than every 5 s; fast again, the spacing returns to the floor; one kept-alive connection', async () => {
  const FLOOR = 300;
  const slowFrom = 2, slowTo = 5; // the 3rd to 5th page requests of host 0 take 500 ms
  let n = 0;
  const web = await startSyntheticWeb({
    seed: 12, hosts: 1, pagesPerHost: 10, outLinks: 9, crossHostShare: 0, pageBytes: { min: 500, max: 800 }, sitemap: false,
    latencyMs: (_host, path) => {
      if (path.startsWith('/robots')) return 0;
      const i = n++;
      return i >= slowFrom && i < slowTo ? 500 : 0;
    },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: FLOOR, delayFactor: 10, concurrency: 2,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', sitemaps: { enabled: false },
    });
    await agent.done;
    const pages = web.requests().filter(isPage).sort((a, b) => a.start - b.start);
    assert.equal(pages.length, 10, 'every page fetched once');
    // Requests are answered slowly in arrival order: the 3rd to the 5th page request.
    const isSlow = (i: number) => i >= slowFrom && i < slowTo;
    for (let i = slowFrom; i < slowTo; i++) assert.ok(pages[i]!.end - pages[i]!.start >= 490, `request ${i} was slow`);
    for (let i = 1; i < pages.length; i++) {
      const prev = pages[i - 1]!, cur = pages[i]!;
      const gap = cur.start - prev.end;
      // 10 × the client-measured response time, which includes the server's ≥ 500 ms.
      if (isSlow(i - 1)) assert.ok(gap >= 5000 - TOL - 10, `after a 500 ms answer: ${gap.toFixed(0)} ms, want ≥ 5000`);
      else assert.ok(gap >= FLOOR - TOL, `floor: ${gap.toFixed(0)} ms`);
    }
    // Keep-alive, one connection per host (undici Agent, connections: 1): every request, robots.txt included, on one socket.
    assert.equal(new Set(web.requests().map((r) => r.clientPort)).size, 1, 'one connection, reused');
    // Fast again: Mercator looks at the last response only, so the gap is back at the floor, far below 5 s.
    const after = pages.slice(slowTo + 1);
    assert.ok(after.length >= 3);
    for (let i = 1; i < after.length; i++) {
      const gap = after[i]!.start - after[i - 1]!.end;
      assert.ok(gap < 2500, `back near the ${FLOOR} ms floor (gap ${gap.toFixed(0)} ms)`);
    }
  } finally {
    await web.close();
  }
});

test('per-IP limit (docs/politeness.md): hosts sharing a loopback address never get concurrent or too-close requests', async () => {
  const IP_DELAY = 150;
  const make = () => startSyntheticWeb({
    seed: 13, hosts: 6, pagesPerHost: 6, outLinks: 3, crossHostShare: 0.2, pageBytes: { min: 500, max: 800 }, sitemap: false,
    addresses: ['127.0.0.2', '127.0.0.3'], enforceAddress: true,
  });
  const crawl = async (perIp: boolean) => {
    const web = await make();
    try {
      const agent = await startAgent({
        dataDir: tempDir(), seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 8,
        resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', sitemaps: { enabled: false },
        politeness: perIp ? { perIp: true, ipMinDelayMs: IP_DELAY } : {},
      });
      const summary = await agent.done;
      return { log: web.requests().slice(), summary, reachable: web.reachable().reachableAllowed.size };
    } finally {
      await web.close();
    }
  };
  const on = await crawl(true);
  assert.equal(on.log.filter(isPage).length, on.reachable, 'every reachable page crawled');
  assert.deepEqual(new Set(on.log.map((r) => r.localAddress)), new Set(['127.0.0.2', '127.0.0.3']));
  assert.equal(on.log.filter((r) => r.status === 421).length, 0, 'each host on its own address');
  // From the end of one exchange with an IP to the start of the next one, whatever the host.
  const v = checkPolitenessPerIp(on.log, IP_DELAY, { measure: 'end', toleranceMs: TOL });
  assert.deepEqual(v.slice(0, 3), [], 'no concurrent or too-close requests per IP');
  assert.ok((on.summary.politeness as Record<string, number>).ipWaits > 0, 'the IP clock did hold hosts back');
  // The same crawl without the per-IP limit does send them close together: the check has teeth.
  const off = await crawl(false);
  assert.ok(checkPolitenessPerIp(off.log, IP_DELAY, { measure: 'end' }).length > 0, 'without the limit, hosts on one IP overlap');
});

test('DNS: a name whose DNS answer takes 3 s does not slow the other hosts; NXDOMAIN parks its host at once', async () => {
  const web = await startSyntheticWeb({ seed: 14, hosts: 5, pagesPerHost: 6, outLinks: 3, crossHostShare: 0, pageBytes: { min: 500, max: 800 }, sitemap: false });
  const names: Record<string, { a: string[]; delayMs?: number }> = {};
  for (let i = 0; i < 5; i++) names[web.hostName(i)] = { a: ['127.0.0.1'], ...(i === 0 ? { delayMs: 3000 } : {}) };
  const dns = await startDnsServer(names);
  const dir = tempDir();
  try {
    const gone = web.url('gone.web.test', '/');
    const agent = await startAgent({
      dataDir: dir, seeds: [...web.roots(), gone, gone + 'a'], untilIdle: true, minDelayMs: 50, delayFactor: 0,
      // One fetch slot: if waiting for the slow name held it, every other host would stall for 3 s.
      concurrency: 1,
      logLevel: 'silent', sitemaps: { enabled: false },
      // One try with room for the 3 s answer (by default c-ares would retransmit at 2.5 s and give up at 5 s).
      dns: { servers: [dns.server], queryTimeoutMs: 8000, tries: 1 },
      allowAddress: ['127.0.0.0/8'], // the test DNS server answers loopback, no --resolve rule
    });
    const summary = await agent.done;
    const slowName = web.hostName(0);
    const asked = dns.log.find((q) => q.name === slowName);
    assert.ok(asked, 'the slow name was asked');
    const log = web.requests();
    const slowHost = log.filter((r) => r.host === slowName).sort((a, b) => a.start - b.start);
    const reachable = [...web.reachable().reachableAllowed];
    assert.equal(slowHost.filter(isPage).length, reachable.filter((u) => new URL(u).hostname === slowName).length, 'the slow host is crawled in the end');
    assert.ok(slowHost[0]!.start >= asked.at + 3000 - TOL, 'its first request waited for the answer');
    const others = log.filter((r) => r.host !== slowName);
    const meanwhile = others.filter((r) => r.start >= asked.at && r.start < asked.at + 3000);
    assert.ok(meanwhile.length >= 10, `other hosts were fetched while the slow name resolved (${meanwhile.length} requests)`);
    assert.equal(others.filter(isPage).length, reachable.filter((u) => new URL(u).hostname !== slowName).length, 'every page of the other hosts');
    assert.deepEqual(checkPoliteness(log, 50, { toleranceMs: TOL }).slice(0, 3), []);
    // NXDOMAIN: the host is parked at once, its URLs recorded as failed and never retried.
    assert.equal(dns.count('gone.web.test', 'A'), 1, 'NXDOMAIN is asked once (negatively cached)');
    const pol = summary.politeness as { parkedHosts: number; retries: number; failures: Record<string, number>; parked: { host: string; reason: string }[] };
    assert.equal(pol.parkedHosts, 1);
    assert.deepEqual(pol.parked, [{ host: 'gone.web.test', reason: 'dns-permanent' }]);
    assert.equal(pol.retries, 0);
    assert.equal(pol.failures.parked, 2, 'both queued URLs of the parked host');
  } finally {
    await dns.close();
    await web.close();
  }
});

test('RFC 9110 §15.6.4: a host answering only 503 is backed off, paused, probed and parked; its URLs are recorded as failed; the API shows why', async () => {
  const web = await startSyntheticWeb({
    seed: 15, hosts: 2, pagesPerHost: 8, outLinks: 7, crossHostShare: 0, pageBytes: { min: 500, max: 800 }, sitemap: false,
    intercept: (req) => (req.hostIndex === 0 && req.path !== '/' && !req.path.startsWith('/robots')
      ? { status: 503, headers: { 'content-type': 'text/html' }, body: 'down for maintenance' } : null),
  });
  const dir = tempDir();
  // Scaled down: 3 failures pause the host for 500 ms, then 1 s; the probe after the second pause parks it.
  const politeness = { backoffBaseMs: 100, backoffMaxMs: 400, errorRunToPause: 3, pauseBaseMs: 500, maxPauses: 2, retryBaseMs: 50, maxRetries: 2 };
  const agent = await startAgent({
    dataDir: dir, seeds: web.roots(), minDelayMs: 50, delayFactor: 0, concurrency: 4,
    resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', sitemaps: { enabled: false }, api: { listen: '127.0.0.1:0' }, politeness,
  });
  const host = web.hostName(0);
  try {
    type View = { politeness: { adaptive?: { parked: boolean; reason: string; parkReason?: string; unavailable: number; pausesTotal: number } } | null; errors: Record<string, number> };
    let view: View | undefined;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      view = await (await fetch(`${agent.apiUrl}/hosts/${host}`)).json() as View;
      if (view.politeness?.adaptive?.parked) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const a = view?.politeness?.adaptive;
    assert.ok(a?.parked, `the host is parked (${JSON.stringify(a)})`);
    assert.equal(a.reason, 'parked');
    assert.match(a.parkReason ?? '', /2 pauses in a row, last 503/);
    assert.equal(a.pausesTotal, 2);
    const parkedAt = Date.now();
    await new Promise((r) => setTimeout(r, 1000));
    const reqs = web.requestsFor(host).filter(isPage).sort((x, y) => x.start - y.start);
    assert.ok(reqs.every((r) => r.start < parkedAt), 'never contacted again once parked');
    const failures = reqs.filter((r) => r.status === 503);
    // 3 failures → pause 1; its probe fails → pause 2; its probe fails → parked.
    assert.equal(failures.length, 5, `five 503s in all (${failures.map((r) => r.path).join(' ')})`);
    const gaps = failures.slice(1).map((r, i) => r.start - failures[i]!.end);
    // Backoff (level n: 100 × 2^(n−1), capped at 400, jittered down to half) and the floor hold between failures…
    for (const g of gaps) assert.ok(g >= 50 - TOL, `gap ${g.toFixed(0)} ms`);
    // …and each probe waits out its pause.
    assert.ok(gaps[2]! >= 500 - TOL, `first pause ${gaps[2]!.toFixed(0)} ms`);
    assert.ok(gaps[3]! >= 1000 - TOL, `second pause ${gaps[3]!.toFixed(0)} ms`);
    // The other host is unaffected.
    const other = web.requestsFor(web.hostName(1)).filter(isPage);
    assert.ok(other.every((r) => r.status === 200) && other.length > 0);
  } finally {
    const summary = await agent.stop();
    await web.close();
    const pol = summary.politeness as { parkedHosts: number; pauses: number; probes: number; backoffs: number; failures: Record<string, number> };
    assert.equal(pol.parkedHosts, 1);
    assert.equal(pol.pauses, 2);
    assert.equal(pol.probes, 2);
    assert.equal(pol.backoffs, 5);
    const queuedOfHost = web.reachable().reachableAllowed.size; // an upper bound; the exact split depends on timing
    assert.ok((pol.failures.parked ?? 0) >= 1 && (pol.failures.parked ?? 0) < queuedOfHost, JSON.stringify(pol.failures));
  }
});
