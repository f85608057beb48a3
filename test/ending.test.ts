// Ending a run (docs/politeness.md "Ending a run"): `--until-idle` does not sit
// waiting on deferred work (a robots.txt answering 503), keeps it for the next
// run, and a run whose only seed host does not resolve ends at once with one
// line and exit code 1. Whole CLI runs against loopback servers and a loopback
// DNS responder (test/helpers-dns.ts): nothing leaves the machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { spawnAgent, tempDir } from './helpers.js';
import { startDnsServer } from './helpers-dns.js';
import type { CrawlSummary } from '../src/crawl/summary.js';
import { startSyntheticWeb } from '../bench/web/index.js';
import { startMeshAgents, seedThroughApi, waitMembers } from './mesh-agents.js';
import { DeferredWork, deferral, describeDeferred, type DeferredFrontier } from '../src/crawl/deferred.js';
import { newHostData, type HostData } from '../src/crawl/candidate.js';
import type { HostState } from '../src/frontier/frontier.js';
import type { RobotsEntry } from '../src/robots/cache.js';

interface Hit { host: string; path: string; at: number }

/** One server for several host names (by Host header): a.test links to b.test, whose robots.txt answers 503. */
async function startSites(): Promise<{ port: number; hits: Hit[]; close(): Promise<void> }> {
  const hits: Hit[] = [];
  let port = 0;
  const server: Server = createServer((req, res) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    const path = req.url ?? '/';
    hits.push({ host, path, at: Date.now() });
    if (path === '/robots.txt') {
      if (host === 'b.test') { res.writeHead(503, { 'content-type': 'text/plain' }); res.end('busy'); return; }
      res.writeHead(404); res.end(); return;
    }
    if (host === 'a.test') {
      const n = Number(/^\/p(\d+)$/.exec(path)?.[1] ?? 0);
      const links = n < 4 ? `<a href="/p${n + 1}">next</a>` : '';
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<html><body><p>page ${n}</p>${links}<a href="http://b.test:${port}/x">b</a></body></html>`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body>b</body></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  return { port, hits, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

/**
 * How long the agent ran, from its 'agent started' log line to 'agent stopped' (info level): the process's own
 * start (node, libp2p) takes seconds on a loaded machine and is not what these tests measure.
 */
function agentRunMs(stderr: string): number {
  const at = (msg: string) => {
    for (const line of stderr.split('\n')) {
      if (!line.startsWith('{')) continue;
      const j = JSON.parse(line) as { msg?: string; time?: number };
      if (j.msg === msg) return j.time!;
    }
    throw new Error(`no '${msg}' line in: ${stderr.slice(0, 2000)}`);
  };
  return at('agent stopped') - at('agent started');
}

function stoppedTime(stderr: string): number {
  const line = stderr.split('\n').find((l) => l.startsWith('{') && (JSON.parse(l) as { msg?: string }).msg === 'agent stopped');
  assert.ok(line, stderr);
  return (JSON.parse(line) as { time: number }).time;
}

function joinArgs(dataDir: string, extra: string[]): string[] {
  return ['join', '--data-dir', dataDir, '--until-idle', '--progress', 'off', '--log-level', 'info', '--listen', '/ip4/127.0.0.1/tcp/0',
    '--min-delay', '50', '--delay-factor', '0', '--no-sitemaps', ...extra];
}

test('a host whose robots.txt answers 503 throughout: the run ends within --idle-grace of its last page, says so, and the next run tries the host again', async () => {
  const sites = await startSites();
  const dir = tempDir();
  const graceMs = 2000;
  const args = joinArgs(join(dir, 'data'), [
    '--seed', `http://a.test:${sites.port}/`, '--idle-grace', '2s', '--allow-host', 'b.test',
    '--resolve', `a.test:${sites.port}:127.0.0.1`, '--resolve', `b.test:${sites.port}:127.0.0.1`,
  ]);
  try {
    const first = spawnAgent(args);
    const r1 = await first.closed;
    const exitedAt = Date.now();
    assert.equal(r1.code, 0, first.stderr);
    const pagesA = sites.hits.filter((h) => h.host === 'a.test' && h.path !== '/robots.txt');
    assert.equal(pagesA.length, 5, 'every page of a.test fetched');
    const robotsB = () => sites.hits.filter((h) => h.host === 'b.test' && h.path === '/robots.txt').length;
    assert.equal(robotsB(), 1, 'b.test robots.txt asked once (its retry is not due within the grace)');
    assert.equal(sites.hits.filter((h) => h.host === 'b.test' && h.path !== '/robots.txt').length, 0, 'no page of b.test fetched');
    // Ended within the grace of its last page (plus a heartbeat round and the shutdown).
    const lastPage = Math.max(...pagesA.map((h) => h.at));
    const stoppedAt = stoppedTime(first.stderr);
    assert.ok(stoppedAt <= exitedAt);
    // Its last page, then one idle heartbeat round (1 s) and the shutdown: well within the grace plus a round.
    assert.ok(stoppedAt - lastPage < graceMs + 1500, `ended ${stoppedAt - lastPage} ms after its last page`);
    const summary = JSON.parse(first.stdout) as CrawlSummary;
    assert.equal(summary.deferred?.hosts, 1);
    assert.equal(summary.deferred?.urls, 1);
    assert.equal(summary.deferred?.list[0]?.host, 'b.test');
    assert.equal(summary.deferred?.list[0]?.reason, 'robots-retry');
    assert.ok(Date.parse(summary.deferred!.list[0]!.nextAttempt!) > lastPage + graceMs, 'next attempt later than the grace');
    assert.equal(summary.nothingFetched, undefined);
    assert.match(first.stderr, /deferred work kept for the next run \(--until-idle: none of it due within --idle-grace 2s\): 1 host, 1 URL \(b\.test: robots\.txt unreachable/);

    // Second run, same data dir, once the retry is due (the host's robots.txt wait is kept across restarts, and a
    // run that starts earlier, with nothing due within its grace, ends at once): the deferred URL is still queued,
    // so b.test is asked again.
    const due = Date.parse(summary.deferred!.list[0]!.nextAttempt!);
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    const second = spawnAgent(args);
    const r2 = await second.closed;
    assert.equal(r2.code, 0, second.stderr);
    assert.equal(robotsB(), 2, 'b.test robots.txt asked again by the second run');
    const s2 = JSON.parse(second.stdout) as CrawlSummary;
    assert.equal(s2.deferred?.list[0]?.host, 'b.test');
    assert.equal(s2.nothingFetched, undefined, 'deferred work is not a failure');
  } finally {
    await sites.close();
  }
});

// A Crawl-delay is the host's ordinary pace, not deferred work: `--until-idle` used to end a run whose only host
// waited longer than --idle-grace between two requests, with its URLs queued and nothing said (0 pages, exit 0).
test('a host whose Crawl-delay is longer than --idle-grace: the run waits for it and fetches every page', async () => {
  const hits: Hit[] = [];
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.push({ host: 'c.test', path, at: Date.now() });
    if (path === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('User-agent: *\nCrawl-delay: 2\nDisallow:\n'); return; }
    const n = Number(/^\/p(\d+)$/.exec(path)?.[1] ?? 0);
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<html><body><p>page ${n}</p>${n < 2 ? `<a href="/p${n + 1}">next</a>` : ''}</body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const dir = tempDir();
  try {
    const run = spawnAgent(joinArgs(join(dir, 'data'), ['--seed', `http://c.test:${port}/`, '--idle-grace', '500ms', '--resolve', `c.test:${port}:127.0.0.1`]));
    const r = await run.closed;
    assert.equal(r.code, 0, run.stderr.slice(-2000));
    const summary = JSON.parse(run.stdout) as CrawlSummary;
    assert.deepEqual(hits.map((h) => h.path), ['/robots.txt', '/', '/p1', '/p2'], 'robots.txt and every page');
    const gaps = hits.slice(1).map((h, i) => h.at - hits[i]!.at);
    assert.ok(gaps.every((g) => g >= 1900), `requests ${gaps.join(', ')} ms apart: the Crawl-delay of 2 s holds`);
    assert.equal(summary.queued, 0, 'nothing left queued');
    assert.equal(summary.deferred, undefined, 'nothing deferred');
  } finally {
    await new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
  }
});

test('the only seed host does not resolve: the run ends within seconds, one line names the host and the reason, exit code 1', async () => {
  const dns = await startDnsServer({}); // NXDOMAIN for every name
  const dir = tempDir();
  const run = spawnAgent(joinArgs(join(dir, 'data'), ['--seed', 'http://nowhere.test/', '--dns-server', dns.server]));
  const { code } = await run.closed;
  assert.equal(code, 1, run.stderr);
  // Start of the crawl to its end: the DNS answer, the park, one idle heartbeat round (1 s).
  const tookMs = agentRunMs(run.stderr);
  assert.ok(tookMs < 5000, `ran ${tookMs} ms`);
  assert.ok(dns.count('nowhere.test') >= 1, 'the name was asked (of the loopback responder)');
  const lines = run.stderr.split('\n').filter((l) => l.startsWith('ubicrawl: '));
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0]!, /^ubicrawl: no page fetched: nowhere\.test: does not resolve/);
  const summary = JSON.parse(run.stdout) as CrawlSummary;
  assert.equal(summary.pages, 0);
  assert.equal(summary.nothingFetched?.failures[0]?.host, 'nowhere.test');
  assert.equal(summary.nothingFetched?.failures[0]?.seed, true);
});

test('a run with nothing left to do ends at once, exit code 0', async () => {
  const sites = await startSites();
  const dir = tempDir();
  const args = joinArgs(join(dir, 'data'), ['--seed', `http://a.test:${sites.port}/p4`, '--resolve', `a.test:${sites.port}:127.0.0.1`, '--exclude', 'b\\.test']);
  try {
    const first = spawnAgent(args);
    assert.equal((await first.closed).code, 0, first.stderr);
    const second = spawnAgent(args);
    const { code } = await second.closed;
    assert.equal(code, 0, second.stderr);
    const summary = JSON.parse(second.stdout) as CrawlSummary;
    assert.equal(summary.pages, 0);
    assert.equal(summary.nothingFetched, undefined);
    // One idle heartbeat round (1 s) and the shutdown: seconds, not minutes.
    const ranMs = agentRunMs(second.stderr);
    assert.ok(ranMs < 4000, `ran ${ranMs} ms`);
  } finally {
    await sites.close();
  }
});

test('in a mesh: the seed, given to the agent that does not own its host, does not resolve: both agents end within seconds; the owner names the host and the reason and exits 1', async () => {
  const dns = await startDnsServer({});
  const web = await startSyntheticWeb({ seed: 3, hosts: 1, pagesPerHost: 1 });
  const dir = tempDir();
  try {
    const { agents, apis } = await startMeshAgents(web, dir, 2, ['--dns-server', dns.server]);
    for (const p of apis) await waitMembers(p, 2);
    // Who owns the name, by a0's view (the ring is shared): a0 answers 404 for an unknown host of its own,
    // `local: false` for another's. The seed goes to the other agent.
    const host = 'nowhere.test';
    const res = await fetch(`http://127.0.0.1:${apis[0]!}/hosts/${host}`);
    const a0Owns = res.status === 404 || (res.status === 200 && ((await res.json()) as { local: boolean }).local);
    const giver = a0Owns ? 1 : 0;
    await seedThroughApi(apis[giver]!, [`http://${host}/`], join(dir, `a${giver}`));
    const [r0, r1] = await Promise.all(agents.map((a) => a.done));
    const byGiver = giver === 0 ? r0! : r1!;
    const byOwner = giver === 0 ? r1! : r0!;
    assert.equal(byOwner.code, 1, byOwner.err.slice(-2000));
    assert.match(byOwner.err, new RegExp(`^ubicrawl: no page fetched: ${host.replace('.', '\\.')}: does not resolve`, 'm'));
    assert.equal(byGiver.code, 0, byGiver.err.slice(-2000));
    assert.match(byGiver.err, new RegExp(`^ubicrawl: no page fetched: seed host ${host.replace('.', '\\.')} is crawled by agent \\S+`, 'm'));
    for (const r of [r0!, r1!]) {
      const ms = agentRunMs(r.err);
      // Seconds: the mesh needs its idle rounds (heartbeat 250 ms here) once the name failed.
      assert.ok(ms < 60_000, `ran ${ms} ms`);
    }
    assert.ok(dns.count(host) >= 1, 'the owner asked the loopback responder');
  } finally {
    await web.close();
  }
});

test('deferred work: why a host waits, the bounded report, and the --until-idle rule over the frontier counters', () => {
  const now = 1_000_000;
  const host = (name: string, queued: number, set: (d: HostData, h: { nextAllowed: number }) => void) => {
    const h = { name, queued, inFlight: false, nextAllowed: 0, data: newHostData() } as unknown as HostState<HostData>;
    set(h.data, h);
    return h;
  };
  const robots = host('r.test', 3, (d, h) => {
    h.nextAllowed = now + 5000;
    d.robots.set('http://r.test', { verdict: 'unreachable', expires: now + 20_000 } as RobotsEntry);
  });
  const backoff = host('b.test', 2, (d, h) => { h.nextAllowed = now + 8000; d.polite.nextAllowedAt = now + 8000; d.polite.reason = 'backoff'; });
  const floor = host('f.test', 4, (d, h) => { h.nextAllowed = now + 500; d.polite.reason = 'floor'; });
  const due = host('d.test', 1, () => {});
  const parked = host('p.test', 1, (d) => { d.polite.parked = true; d.polite.nextAllowedAt = Infinity; });
  assert.deepEqual(deferral(robots, now), { reason: 'robots-retry', at: now + 20_000 });
  assert.deepEqual(deferral(backoff, now), { reason: 'backoff', at: now + 8000 });
  assert.equal(deferral(floor, now), undefined, 'the ordinary delay is not deferred work');
  assert.equal(deferral(due, now), undefined);
  assert.equal(deferral(parked, now), undefined, 'a parked host fails its URLs, it keeps none');

  const hosts = [robots, backoff, floor, due, parked];
  const counters = { queued: 5, recovering: false, pendingHosts: 0, loadsRunning: 0, readyHosts: 2, activeHosts: 2, wake: now + 8000 as number | undefined };
  const frontier = {
    get queued() { return counters.queued; }, get recovering() { return counters.recovering; }, get pendingHosts() { return counters.pendingHosts; },
    get loadsRunning() { return counters.loadsRunning; }, get readyHosts() { return counters.readyHosts; }, get activeHosts() { return counters.activeHosts; },
    nextWake: () => counters.wake, allHosts: () => hosts.values(), inMemory: () => [].values(),
  } as unknown as DeferredFrontier;
  const work = new DeferredWork({ frontier, graceMs: 2000 });
  const r = work.report(now, 1);
  assert.deepEqual({ hosts: r.hosts, urls: r.urls }, { hosts: 2, urls: 5 });
  assert.deepEqual(r.list, [{ host: 'b.test', urls: 2, reason: 'backoff', nextAttempt: new Date(now + 8000).toISOString() }], 'soonest first, bounded');
  assert.match(describeDeferred(work.report(now)), /^2 hosts, 5 URLs \(b\.test: backed off after 429\/503, next attempt .*; r\.test: robots\.txt unreachable, retried/);
  assert.equal(work.onlyDeferred(now), true);
  assert.equal(work.onlyDeferred(now + 6500), false, 'due within the grace: the run waits for it');
  counters.readyHosts = 1;
  assert.equal(work.onlyDeferred(now), false, 'a host in flight (e.g. waiting for its DNS answer)');
  counters.readyHosts = 2;
  counters.pendingHosts = 1;
  assert.equal(work.onlyDeferred(now), false, 'a host waiting for a slot has work due now');
  counters.pendingHosts = 0;
  // A host whose ordinary delay (here a Crawl-delay) runs past the grace is crawled slowly, not deferred.
  const slow = host('s.test', 2, (d, h) => { h.nextAllowed = now + 40_000; d.polite.nextAllowedAt = now + 40_000; d.polite.reason = 'crawl-delay'; });
  hosts.push(slow);
  assert.equal(deferral(slow, now), undefined);
  assert.equal(work.onlyDeferred(now), false, 'a host on its ordinary delay past the grace holds the run');
  assert.equal(work.onlyDeferred(now), false, 'still (the host found is checked first)');
  (slow as { queued: number }).queued = 0;
  assert.equal(work.onlyDeferred(now), true, 'its URLs done: only deferred work again');
  counters.queued = 0;
  assert.equal(work.onlyDeferred(now), false, 'nothing queued is plain idle, not deferred');
});
