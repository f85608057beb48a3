// A host's turn (src/crawl/host-turn.ts) built alone: a real store on a temp
// dir, a real frontier, fetcher, robots cache and politeness, a loopback web
// server; the agent's side (settle, process, ownership) recorded by the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openStore, type Store } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { defaultConfig, parseResolveRule } from '../src/config.js';
import { settledValue } from '../src/seen/state.js';
import { Frontier, type HostState, type QueuedUrl } from '../src/frontier/frontier.js';
import { Fetcher, type FetchOutcome } from '../src/fetch/fetcher.js';
import { HostResolver } from '../src/fetch/dns.js';
import { AddressPolicy } from '../src/fetch/address.js';
import { RobotsCache } from '../src/robots/cache.js';
import { newHostPoliteness, politenessConfig, type PolitenessConfig } from '../src/politeness/host.js';
import { PolitenessControl } from '../src/politeness/control.js';
import { SideClocks } from '../src/politeness/side-clocks.js';
import { createMetrics } from '../src/api/metrics.js';
import { RecentErrors } from '../src/api/history.js';
import { CrawlStats } from '../src/crawl/stats.js';
import { HostTurn } from '../src/crawl/host-turn.js';
import type { HostData } from '../src/crawl/agent.js';
import type { FetchRecord } from '../src/crawl/records.js';
import { silentLogger } from '../src/util/log.js';
import { tempDir } from './helpers.js';

const HOST = 'turn.web.test';

interface Rig {
  store: Store;
  frontier: Frontier<HostData>;
  turns: HostTurn;
  settled: { url: string; failure?: string }[];
  processed: { url: string; status: number | null }[];
  handedOn: number;
  requests: string[];
  port: number;
  /** Every origin's port: `port` first, then the second origin's. */
  ports: number[];
  gateUntil: number;
  owned: boolean;
  inMesh: boolean;
  /** Runs while a turn reads the seen-set (a turn's await before its request): the ring may change meanwhile. */
  duringSeenRead?: () => void;
  close(): Promise<void>;
}

function hostData(): HostData {
  return {
    robots: new Map(), polite: newHostPoliteness(), dnsCheckAt: 0, pages: 0, budgetUsed: 0, errors: {}, recent: [],
    policy: { minDelayMs: null, pageBudget: null }, pendingAcks: 0, checkSeen: false, robotsFailures: 0,
  };
}

interface RigOptions {
  /** Answers a request the rig's own way (robots.txt included); false: the default answer. */
  answer?(req: IncomingMessage, res: ServerResponse): boolean;
  /** Politeness settings over the rig's (no floor). */
  politeness?: Partial<PolitenessConfig>;
  /** A second origin of HOST (another port, the same answers): its requests are logged as `:<port><path>`. */
  secondOrigin?: boolean;
}

async function rig(opts: RigOptions = {}): Promise<Rig> {
  const requests: string[] = [];
  const serve = (label: () => string) => (req: IncomingMessage, res: ServerResponse) => {
    requests.push(label() + (req.url ?? ''));
    if (opts.answer?.(req, res)) return;
    if (req.url === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('User-agent: *\nDisallow: /private\n'); return; }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body>page</body></html>');
  };
  const server: Server = createServer(serve(() => ''));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const servers = [server];
  if (opts.secondOrigin) {
    const other: Server = createServer(serve(() => `:${(other.address() as AddressInfo).port}`));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    servers.push(other);
  }
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  const config = defaultConfig();
  config.minDelayMs = 0;
  config.resolve = ports.map((p) => parseResolveRule(`${HOST}:${p}:127.0.0.1`));
  const store = await openStore(tempDir('ubicrawl-turn-'));
  const frontier = new Frontier<HostData>(store.frontier, store.hosts, store.meta, { maxActiveHosts: 4, headSize: 8, createData: hostData });
  await frontier.recover();
  const fetcher = new Fetcher(config.fetch, config.userAgent, new HostResolver(config.resolve, config.dns), { addresses: new AddressPolicy(config.allowAddress) });
  const r = { store, frontier, settled: [], processed: [], handedOn: 0, requests, port, ports, gateUntil: 0, owned: true, inMesh: false } as unknown as Rig;
  /** What the agent's `finish` does with the frontier: the URL is acknowledged. */
  const done = async (q: QueuedUrl, h: HostState<HostData>) => {
    await store.db.batch([frontier.doneOp(q)]);
    frontier.acknowledged(1, h, q);
    h.data.pendingAcks--;
  };
  const seen = { get: async (k: Buffer) => { r.duringSeenRead?.(); return store.seen.get(k); } } as unknown as Store['seen'];
  r.turns = new HostTurn({
    store: { seen }, frontier, fetcher, robots: new RobotsCache(store.robots, fetcher, config.robots),
    politeness: new PolitenessControl(politenessConfig({ minDelayMs: 0, politeness: opts.politeness })), sideClocks: new SideClocks(), recrawl: undefined,
    stats: new CrawlStats(), metrics: createMetrics(), recentErrors: new RecentErrors(), log: silentLogger, token: 'ubicrawl', maxPagesPerHost: 0,
    inMesh: () => r.inMesh,
    owns: () => r.owned,
    handOn: () => { r.handedOn++; },
    notBefore: () => r.gateUntil,
    running: () => true,
    settle: async (q, h, record: FetchRecord) => { r.settled.push({ url: record.url, failure: record.failure }); await done(q, h); },
    writeWarc: async () => undefined,
    process: async (q, h, out: FetchOutcome) => { r.processed.push({ url: q.url, status: out.ok ? out.status : null }); await done(q, h); },
    background: (job) => { void job(); },
    discoverSitemaps: async () => {},
  });
  r.close = async () => {
    await fetcher.close();
    await store.close();
    for (const s of servers) await new Promise((res) => s.close(res));
  };
  return r;
}

async function queue(r: Rig, paths: string[], port = r.port): Promise<string[]> {
  const urls = paths.map((p) => `http://${HOST}:${port}${p}`);
  const items = urls.map((url) => ({ host: HOST, hostKey: hostKey(HOST), url, depth: 0, hops: 0 }));
  await r.store.db.batch(r.frontier.enqueueOps(items));
  r.frontier.committed(items);
  return urls;
}

/** The agent's scheduling loop in small: ready hosts get their turn, bounded in turns and time. */
async function pump(r: Rig, until: () => boolean, maxTurns = 50, ms = 5000): Promise<number> {
  const end = Date.now() + ms;
  let turns = 0;
  while (!until() && turns < maxTurns && Date.now() < end) {
    const h = r.frontier.nextReady(Date.now());
    if (!h) { await new Promise((res) => setTimeout(res, 5)); continue; }
    turns++;
    await r.turns.turn(h);
  }
  return turns;
}

test('host turn: robots.txt is the first request; a disallowed page is settled without a request, an allowed one fetched and handed to processing', async () => {
  const r = await rig();
  try {
    const [open, closed] = await queue(r, ['/open', '/private']);
    await pump(r, () => r.processed.length + r.settled.length >= 2);
    assert.equal(r.requests[0], '/robots.txt', 'robots.txt before any page (RFC 9309 §2.3.1)');
    assert.deepEqual(r.requests, ['/robots.txt', '/open'], 'one request per turn; the disallowed page is never requested');
    assert.deepEqual(r.processed, [{ url: open, status: 200 }]);
    assert.deepEqual(r.settled, [{ url: closed, failure: 'robots' }]);
    assert.equal(r.frontier.queued, 0);
  } finally { await r.close(); }
});

test('host turn: a host we no longer own is paused and handed on; a gated host waits for the gate; no request either way', async () => {
  const r = await rig();
  try {
    await queue(r, ['/a']);
    r.owned = false;
    await pump(r, () => r.handedOn > 0);
    assert.equal(r.handedOn, 1);
    assert.equal(r.frontier.host(HOST)?.paused, true, 'paused until the handoff moves it');
    r.frontier.setPaused(r.frontier.host(HOST)!, false);
    r.owned = true;
    r.gateUntil = Date.now() + 60_000;
    const turns = await pump(r, () => false, 1, 1000);
    assert.equal(turns, 1);
    assert.ok((r.frontier.nextWake() ?? 0) >= r.gateUntil - 1000, 'released until the gate opens');
    assert.equal(r.frontier.nextReady(Date.now()), undefined);
    assert.deepEqual(r.requests, [], 'nothing was requested');
    assert.equal(r.frontier.queued, 1, 'the URL stays queued');
  } finally { await r.close(); }
});

test('host turn: in a mesh, a URL another agent settled meanwhile is settled here without a request', async () => {
  const r = await rig();
  try {
    r.inMesh = true;
    const [url] = await queue(r, ['/elsewhere']);
    await r.store.seen.put(seenKey(hostKey(HOST), url!), settledValue('settled-elsewhere'));
    await pump(r, () => r.settled.length > 0);
    assert.deepEqual(r.settled, [{ url, failure: 'settled-elsewhere' }]);
    assert.deepEqual(r.requests, []);
  } finally { await r.close(); }
});

// A turn checks ownership and the handoff gate when it begins, then awaits (the seen read, on a loaded machine
// a while): a ring that changed meanwhile (a member we declared dead heard again) must stop its request.
test('host turn: a host that changes hands while its turn waits gets no request (robots.txt or page); its URL stays queued and goes with the host', async () => {
  const r = await rig();
  try {
    r.inMesh = true;
    const [a, b] = await queue(r, ['/a', '/b']);
    r.duringSeenRead = () => { r.owned = false; };
    await pump(r, () => r.handedOn > 0);
    assert.deepEqual(r.requests, [], 'no robots.txt request for a host no longer ours');
    assert.equal(r.handedOn, 1, 'handed on');
    assert.equal(r.frontier.host(HOST)?.paused, true, 'paused until the handoff moves it');
    assert.equal(r.frontier.queued, 2, 'nothing lost');
    // Ours again: robots.txt and the first page, then the page path's own check.
    r.duringSeenRead = undefined;
    r.owned = true;
    r.frontier.setPaused(r.frontier.host(HOST)!, false);
    await pump(r, () => r.processed.length >= 1);
    assert.deepEqual(r.processed, [{ url: a, status: 200 }]);
    r.duringSeenRead = () => { r.owned = false; };
    await pump(r, () => r.handedOn > 1);
    assert.deepEqual(r.requests, ['/robots.txt', '/a'], 'the second page is not requested once the host is not ours');
    assert.equal(r.frontier.queued, 1, 'it stays queued');
    r.duringSeenRead = undefined;
    r.owned = true;
    r.frontier.setPaused(r.frontier.host(HOST)!, false);
    await pump(r, () => r.processed.length >= 2);
    assert.deepEqual(r.processed.map((p) => p.url), [a, b], 'fetched once it is ours again, once');
    assert.deepEqual(r.requests, ['/robots.txt', '/a', '/b']);
    assert.deepEqual(r.settled, []);
  } finally { await r.close(); }
});

test('host turn: a handoff gate that closes while the turn waits holds the request until it opens', async () => {
  const r = await rig();
  try {
    r.inMesh = true;
    await queue(r, ['/a']);
    r.duringSeenRead = () => { r.gateUntil = Date.now() + 60_000; };
    const turns = await pump(r, () => false, 1, 1000);
    assert.equal(turns, 1);
    assert.deepEqual(r.requests, [], 'nothing was requested');
    assert.ok((r.frontier.nextWake() ?? 0) >= r.gateUntil - 1000, 'released until the gate opens');
    assert.equal(r.frontier.queued, 1, 'the URL stays queued');
    assert.equal(r.handedOn, 0, 'still ours: not handed on');
  } finally { await r.close(); }
});

// RFC 9309 §2.3.1.4 after the retries: robots.txt kept unreachable means "disallow all", so the host's URLs are
// recorded as failed without a request. None of them may wait for the host's clock, which its last 503 set (here
// an hour, its Retry-After): an `--until-idle` run would end with them queued (docs/politeness.md "Ending a run").
test('host turn: robots.txt given up on after its retries: every URL of the origin settles at once, those read from disk and those queued later too; a request to another origin still waits for the host\'s clock', async () => {
  let robotsAsked = 0;
  const r = await rig({
    secondOrigin: true,
    // Short backoffs and robots.txt retries; the last 503 asks for an hour.
    politeness: { backoffBaseMs: 5, retryBaseMs: 5, maxRetries: 3 },
    answer: (req, res) => {
      if (req.url !== '/robots.txt') return false;
      const last = ++robotsAsked >= 4;
      res.writeHead(503, { 'content-type': 'text/plain', ...(last ? { 'retry-after': '3600' } : {}) });
      res.end('busy');
      return true;
    },
  });
  try {
    // More URLs than the host's head holds (8): the rest are read from disk after the robots.txt verdict.
    const first = await queue(r, Array.from({ length: 20 }, (_, i) => `/p/${i}`));
    await pump(r, () => r.settled.length >= first.length, 200, 10_000);
    assert.deepEqual(r.requests, ['/robots.txt', '/robots.txt', '/robots.txt', '/robots.txt'], 'robots.txt asked 1 + 3 times, no page');
    const h = r.frontier.host(HOST)!;
    assert.ok(h.data.polite.nextAllowedAt > Date.now() + 3_000_000, 'the last 503 asked for an hour');
    assert.deepEqual(r.settled.map((s) => s.url).sort(), [...first].sort(), 'every URL settled, none left waiting for the hour');
    assert.ok(r.settled.every((s) => s.failure === 'robots-unreachable'));
    assert.equal(r.frontier.queued, 0);
    // A URL of the origin queued later (a link found on another host): settled without waiting either.
    const [late] = await queue(r, ['/late']);
    await pump(r, () => r.settled.length > first.length, 10, 2000);
    assert.deepEqual(r.settled.slice(first.length), [{ url: late, failure: 'robots-unreachable' }]);
    // Another origin of the host needs its own robots.txt: a request, which the host's clock holds.
    const [other] = await queue(r, ['/q'], r.ports[1]);
    const turns = await pump(r, () => false, 3, 500);
    assert.ok(turns <= 1, `${turns} turns: the host waits for its clock`);
    assert.equal(r.requests.length, 4, `no request before the host's clock allows it: ${r.requests.join(', ')}`);
    assert.equal(r.frontier.queued, 1, `${other} stays queued`);
    assert.ok((r.frontier.nextWake() ?? 0) >= h.data.polite.nextAllowedAt, 'released until the host\'s clock');
  } finally { await r.close(); }
});
