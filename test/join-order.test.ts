// Joining in any order (docs/mesh.md "Joining in any order"): a joiner whose
// seed peer is not up yet keeps trying with backoff, crawling nothing, and
// joins once it is; three agents started in reverse order form one mesh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { joinBackoffMs, joinThroughPeers, JoinError } from '../src/mesh/join.js';
import type { MeshLogger } from '../src/mesh/node.js';
import { spawnAgent, tempDir, waitUntil } from './helpers.js';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { startAgentProcess, pageCounts, meshWeb, waitFor, whoFetched, agentOf, waitMembers, seedThroughApi, listeningOn, membershipEvents } from './mesh-agents.js';

/** A logger that keeps the messages. */
function recorder(): MeshLogger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (_o: object, msg?: string) => { lines.push(msg ?? ''); };
  return { lines, debug: keep, info: keep, warn: keep, error: keep };
}

const FAST = { backoff: { firstMs: 20, maxMs: 50 }, pollMs: 5, listenMs: 0 };

test('join backoff doubles from 0.5 s up to 5 s', () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 40].map((n) => joinBackoffMs(n)), [500, 1000, 2000, 4000, 5000, 5000, 5000, 5000]);
});

test('joinThroughPeers retries a seed peer that is not up yet, then waits for a heartbeat', async () => {
  const log = recorder();
  let dials = 0;
  let connectedAt = 0;
  await joinThroughPeers({
    ...FAST, peers: ['127.0.0.1:4001'], timeoutMs: 5000, log,
    dial: async () => { if (++dials < 3) throw new Error('connect ECONNREFUSED 127.0.0.1:4001'); connectedAt = Date.now(); return 'peer-a'; },
    isConnected: (id) => id === 'peer-a' && connectedAt > 0,
    heardMember: () => connectedAt > 0 && Date.now() - connectedAt > 30,
  });
  assert.equal(dials, 3);
  assert.match(log.lines[0]!, /^waiting for seed peer 127\.0\.0\.1:4001, attempt 1, next in 0\.0 s/);
  assert.match(log.lines[1]!, /attempt 2/);
  assert.ok(log.lines.some((l) => /reached seed peer 127\.0\.0\.1:4001/.test(l)));
});

test('a seed peer not reached while joining (in a mesh through another) is tried on in the background until reached', async () => {
  const log = recorder();
  const connected = new Set<string>();
  let lateDials = 0;
  const stop = new AbortController();
  await joinThroughPeers({
    ...FAST, peers: ['127.0.0.1:4001', '127.0.0.1:4002'], timeoutMs: 5000, log, signal: stop.signal,
    dial: async (p) => {
      if (p.endsWith('4002') && ++lateDials < 4) throw new Error('connect ECONNREFUSED 127.0.0.1:4002');
      connected.add(p);
      return p;
    },
    isConnected: (id) => connected.has(id),
    heardMember: () => connected.has('127.0.0.1:4001'),
  });
  assert.ok(!connected.has('127.0.0.1:4002'), 'joined before the late peer is up');
  assert.ok(await waitUntil(() => connected.has('127.0.0.1:4002'), 2000), 'the late seed peer is reached in the background');
  assert.ok(log.lines.some((l) => /^seed peer 127\.0\.0\.1:4002 not reached yet \(in a mesh through another\), attempt \d/.test(l)));
  stop.abort();
});

test('a peer that answers but fails the handshake gets a hint', async () => {
  await assert.rejects(joinThroughPeers({ ...FAST, peers: ['127.0.0.1:4001'], timeoutMs: 100, dial: async () => { throw new Error('unexpected end of input'); }, isConnected: () => false, heardMember: () => false }),
    /unexpected end of input \(it answered, but the connection failed: the same --swarm-key on both\?\)/);
});

test('joinThroughPeers gives up after the join timeout, at once on a hopeless spec; skips itself', async () => {
  const never = { isConnected: () => false, heardMember: () => false };
  await assert.rejects(joinThroughPeers({ ...FAST, ...never, peers: ['127.0.0.1:4001'], timeoutMs: 150, dial: async () => { throw new Error('connect ECONNREFUSED'); } }),
    (err: Error) => err instanceof JoinError && /cannot reach peer 127\.0\.0\.1:4001: connect ECONNREFUSED \(gave up after 0 s, --join-timeout\)/.test(err.message));
  await assert.rejects(joinThroughPeers({ ...FAST, peers: ['127.0.0.1:4001'], timeoutMs: 150, dial: async () => 'peer-a', isConnected: () => true, heardMember: () => false }),
    /reached 127\.0\.0\.1:4001 but heard no member's heartbeat .* same --crawl-id/);
  const t0 = Date.now();
  await assert.rejects(joinThroughPeers({ ...FAST, ...never, peers: ['http://example.invalid/'], timeoutMs: 60_000, dial: async () => 'x' }), /not a peer address/);
  const self = Object.assign(new Error('127.0.0.1:4001 is this agent itself'), { name: 'SelfDialError' });
  assert.ok(Date.now() - t0 < 1000, 'no retries for what cannot work');
  // Our own address among the seed peers (one peers file for every machine) is skipped; only ourselves: we start the mesh.
  await joinThroughPeers({ ...FAST, ...never, peers: ['127.0.0.1:4001'], timeoutMs: 60_000, dial: async () => { throw self; } });
  assert.ok(Date.now() - t0 < 1000, 'no wait when we are the only seed peer');
});

test('ubicrawl join with an unreachable seed peer says it is waiting, then exits 1 after --join-timeout', async () => {
  const dir = tempDir();
  // Port 1 on loopback: nothing listens there (a privileged port no test binds).
  const run = spawnAgent(['join', '--data-dir', dir, '--listen', '/ip4/127.0.0.1/tcp/0', '--seed', '127.0.0.1:1', '--join-timeout', '1500ms', '--progress', 'off', '--log-level', 'warn']);
  const { code } = await run.closed;
  assert.equal(code, 1);
  assert.match(run.stderr, /waiting for seed peer 127\.0\.0\.1:1, attempt 1, next in 0\.5 s \(crawling nothing meanwhile\)/);
  assert.match(run.stderr, /ubicrawl: cannot reach peer 127\.0\.0\.1:1: .*ECONNREFUSED.* --join-timeout/);
});

const PORT = 31_000 + (process.pid % 350) * 2; // 31–31.7 k, and 32–32.7 k for the chain: below the ephemeral range (32768+)
/** How long the joiners wait for the first member. The scenario is 20 s; 5 s shows the same (several failed attempts each). */
const FIRST_MEMBER_DELAY_MS = Number(process.env.JOIN_ORDER_DELAY_MS ?? 5000);

test(`three agents started in reverse order (the first member ${FIRST_MEMBER_DELAY_MS / 1000} s after the joiners) form one mesh and crawl every page once`, async () => {
  const { web, dir, seeds, expected } = await meshWeb(60, 4);
  try {
    const seedPeer = `127.0.0.1:${PORT}`;
    // The joiners first: a2 also holds the crawl's seed URLs.
    const a2 = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', seedPeer, '--seed', seeds]);
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', seedPeer]);
    const stderrOf = new Map<string, string>([['a1', ''], ['a2', '']]);
    for (const a of [a1, a2]) a.proc.stderr?.on('data', (d: Buffer) => stderrOf.set(a.name, stderrOf.get(a.name)! + String(d)));
    const waiting = /waiting for seed peer 127\.0\.0\.1:\d+, attempt (\d+), next in [\d.]+ s/;
    await waitFor(() => [...stderrOf.values()].every((e) => waiting.test(e)), 30_000, 'both joiners to say they are waiting');
    await new Promise((r) => setTimeout(r, FIRST_MEMBER_DELAY_MS));
    assert.equal(web.requests().length, 0, 'the joiners crawl nothing while they wait');
    for (const [name, err] of stderrOf) {
      const attempts = [...err.matchAll(new RegExp(waiting, 'g'))].map((m) => Number(m[1]));
      assert.ok(attempts.length >= 2, `${name} kept trying (${attempts.join(',')})`);
    }
    const firstStarted = performance.timeOrigin + performance.now();
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', `/ip4/127.0.0.1/tcp/${PORT}`]);
    const results = await Promise.all([a0.done, a1.done, a2.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const reqs = web.requests();
    assert.ok(reqs.every((r) => r.start >= firstStarted), 'nothing fetched before the first member was up');
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    assert.deepEqual(twice.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], `no page fetched twice (${twice.length} were)\n${membershipEvents([a0, a1, a2])}`);
    const agents = new Set(reqs.map((r) => agentOf(r.userAgent)));
    assert.deepEqual([...agents].sort(), ['a0', 'a1', 'a2'], 'one mesh: every agent crawled its share');
    process.stdout.write(`# reverse order: first member ${FIRST_MEMBER_DELAY_MS} ms after the joiners; first request ${(reqs[0]!.start - firstStarted).toFixed(0)} ms after it started; ${counts.size} pages\n`);
  } finally {
    await web.close();
  }
});

test('a chain started backwards (a2 seeds a1, a1 seeds a0, a0 last): a2 and a1 meet first, a1 finds a0 in the background, one mesh crawls', async () => {
  const { web, dir, expected } = await meshWeb(60, 4);
  try {
    const [p0, p1, api0] = [PORT + 1000, PORT + 1001, PORT + 1002];
    const a2 = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${p1}`]);
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', `/ip4/127.0.0.1/tcp/${p1}`, '--seed', `127.0.0.1:${p0}`]);
    let err1 = '';
    a1.proc.stderr?.on('data', (d: Buffer) => { err1 += String(d); });
    await waitFor(() => /waiting for seed peer/.test(err1), 30_000, 'a1 to wait for a0');
    // a2 and a1 meet first: each has joined (through the other) and crawls, while a0 is not up yet.
    await waitFor(() => [a1, a2].every((a) => a.log().includes('"msg":"agent started"')), 60_000, 'a2 and a1 to meet');
    // a0 has no seed peers: nobody would ever dial it if a1 stopped trying once a2 reached it.
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', `/ip4/127.0.0.1/tcp/${p0}`, '--api', `127.0.0.1:${api0}`]);
    await waitMembers(api0, 3);
    await seedThroughApi(api0, web.roots(), join(dir, 'a0'));
    const results = await Promise.all([a0.done, a1.done, a2.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    assert.deepEqual(twice.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], `no page fetched twice (${twice.length} were)\n${membershipEvents([a0, a1, a2])}`);
    assert.deepEqual([...new Set(web.requests().map((r) => agentOf(r.userAgent)))].sort(), ['a0', 'a1', 'a2'], 'one mesh: every agent crawled its share');
  } finally {
    await web.close();
  }
});

test('a member done before the joiners counted it in waits for them: a small web, every agent given the seeds, no page fetched twice', async () => {
  // Joiners listen for the mesh 2.5 heartbeats before they count anyone in (src/mesh/join.ts). A first member
  // that crawls the whole web meanwhile and ends takes its seen-set with it, and the joiners, given the same
  // seeds, crawl everything again (src/crawl/idle-members.ts `awaitedJoiner`). Heartbeats of 2 s
  // make that window 5 s, which the first member's crawl of 80 pages fits in (at 1 s it did in 1 run of 3).
  const { web, dir, seeds, expected } = await meshWeb(16, 5);
  try {
    const timing = ['--heartbeat', '2000', '--dead-after', '10000', '--min-delay', '0'];
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', ...timing]);
    const first = await listeningOn(a0, { api: true });
    const joiners = ['a1', 'a2'].map((n) => startAgentProcess(web, dir, n,
      ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${first.mesh}`, '--seed', seeds, '--join-timeout', '60s', ...timing]));
    // Its introductions to the joiners (its marker, sent on a member's first heartbeat): it heard both, and they
    // are still listening for the mesh.
    const introduced = () => new Set(a0.log().split('\n').filter((l) => l.includes('"msg":"handoff markers sent"')).flatMap((l) => (JSON.parse(l) as { to: string[] }).to)).size;
    await waitFor(() => introduced() >= 2, 60_000, 'the first member to hear both joiners');
    const roots = readFileSync(seeds, 'utf8').trim().split('\n');
    await seedThroughApi(first.api, roots, join(dir, 'a0'));
    const results = await Promise.all([a0, ...joiners].map((a) => a.done));
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    assert.deepEqual(twice.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], `no page fetched twice (${twice.length} were)\n${membershipEvents([a0, ...joiners])}`);
  } finally {
    await web.close();
  }
});
