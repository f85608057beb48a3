// Issue 5 acceptance: several agent processes on loopback crawl one synthetic
// web as a mesh. Each agent has its own User-Agent comment so the web's request
// log tells which agent fetched what (the product token stays `ubicrawl`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb, checkPoliteness, type SyntheticWeb } from '../bench/web/index.js';
import { generateSwarmKey } from '../src/mesh/index.js';
import { tempDir } from './helpers.js';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'ubicrawl.js');
const MIN_DELAY = 150;

interface Agent { name: string; proc: ChildProcess; done: Promise<{ code: number | null; signal: string | null; out: string; err: string }> }

function startAgentProcess(web: SyntheticWeb, dir: string, name: string, extra: string[]): Agent {
  const args = ['join', '--data-dir', join(dir, name), '--until-idle', '--min-delay', String(MIN_DELAY), '--delay-factor', '0',
    '--concurrency', '16', '--progress', 'off', '--log-level', process.env.MESH_LOG ?? 'warn', '--no-sitemaps', '--heartbeat', '250', '--dead-after', '1500',
    '--user-agent', `ubicrawl/0.1 (${name})`, ...web.resolveArgs.flatMap((r) => ['--resolve', r]), ...extra];
  const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d; });
  proc.stderr!.on('data', (d: Buffer) => { err += d; });
  const done = new Promise<{ code: number | null; signal: string | null; out: string; err: string }>((resolve) => {
    proc.once('close', (code, signal) => {
      // MESH_LOG=info MESH_LOG_DIR=… keeps each agent's log for a post-mortem.
      if (process.env.MESH_LOG_DIR) writeFileSync(join(process.env.MESH_LOG_DIR, `${name}.${proc.pid}.log`), err + out);
      resolve({ code, signal, out, err });
    });
  });
  return { name, proc, done };
}

function agentOf(userAgent: string | null | undefined): string {
  return /\((a\d+)\)/.exec(userAgent ?? '')?.[1] ?? '?';
}

function pageCounts(web: SyntheticWeb): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of web.requests()) {
    if (r.path.startsWith('/robots')) continue;
    const u = r.url ?? `${r.host}${r.path}`;
    counts.set(u, (counts.get(u) ?? 0) + 1);
  }
  return counts;
}

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port (the first agent is up). */
async function waitPort(port: number): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls an agent's API until it sees `n` active members. */
async function waitMembers(apiPort: number, n: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${apiPort}/status`);
      const st = await res.json() as { mesh: { members: Array<{ state: string }> } };
      if (st.mesh.members.filter((m) => m.state === 'active').length >= n) return;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error(`agent on API port ${apiPort} never saw ${n} members`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function seedThroughApi(apiPort: number, urls: string[]): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${apiPort}/seeds`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ urls }) });
  assert.equal(res.status, 200, await res.text());
}

async function meshWeb(hosts: number, pages: number) {
  const web = await startSyntheticWeb({ seed: hosts, hosts, pagesPerHost: pages, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 1500, max: 3000 } });
  const dir = tempDir();
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  return { web, dir, seeds, expected: web.reachable().reachableAllowed };
}

const PORT0 = 46_000 + (process.pid % 1000) * 3;

test('3 agents crawl a 300-host web: every page once, each host by one agent, per-host delay held across the mesh', async () => {
  const { web, dir, seeds, expected } = await meshWeb(300, 4);
  try {
    // All three agents first; seeds once every agent sees the whole mesh, so no host changes hands.
    const api = PORT0 + 500;
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', `/ip4/127.0.0.1/tcp/${PORT0}`, '--api', `127.0.0.1:${api}`]);
    await waitPort(PORT0);
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${PORT0}`, '--api', `127.0.0.1:${api + 1}`]);
    const a2 = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${PORT0}`, '--api', `127.0.0.1:${api + 2}`]);
    for (const p of [api, api + 1, api + 2]) await waitMembers(p, 3);
    await seedThroughApi(api + 2, web.roots());
    void seeds;
    const results = await Promise.all([a0.done, a1.done, a2.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    assert.deepEqual([...counts].filter(([, n]) => n > 1), [], 'no page fetched twice across the mesh');
    const agentsPerHost = new Map<string, Set<string>>();
    const hostsPerAgent = new Map<string, Set<string>>();
    for (const r of web.requests()) {
      const a = agentOf(r.userAgent);
      if (!agentsPerHost.has(r.host)) agentsPerHost.set(r.host, new Set());
      agentsPerHost.get(r.host)!.add(a);
      if (!hostsPerAgent.has(a)) hostsPerAgent.set(a, new Set());
      hostsPerAgent.get(a)!.add(r.host);
    }
    const shared = [...agentsPerHost].filter(([, s]) => s.size > 1);
    assert.deepEqual(shared.slice(0, 5).map(([h, s]) => `${h}: ${[...s].join(',')}`), [], 'each host is fetched by exactly one agent');
    for (const a of ['a0', 'a1', 'a2']) {
      const n = hostsPerAgent.get(a)?.size ?? 0;
      assert.ok(n > 50, `${a} owns a fair share of the hosts (${n} of 300)`);
    }
    assert.deepEqual(checkPoliteness(web.requests(), MIN_DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held across the mesh');
  } finally {
    await web.close();
  }
});

// docs/mesh.md "Handoff protocol": a host that changes hands is not contacted by its new
// owner before the previous owner's "handoff complete" marker (after its seen entries).
test('a 4th agent joins mid-crawl and ends with about a quarter of the hosts; an agent leaves gracefully mid-crawl: nothing missed, nothing twice', async () => {
  const { web, dir, seeds, expected } = await meshWeb(200, 12);
  try {
    const port = PORT0 + 1;
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', `/ip4/127.0.0.1/tcp/${port}`]);
    await waitPort(port);
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`]);
    const a2 = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--seed', seeds]);
    await waitFor(() => pageCounts(web).size >= expected.size * 0.25, 60_000, 'a quarter of the crawl');
    const a3 = startAgentProcess(web, dir, 'a3', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`]);
    await waitFor(() => pageCounts(web).size >= expected.size * 0.55, 60_000, 'half of the crawl');
    a1.proc.kill('SIGTERM'); // graceful leave: hands its hosts over
    const results = await Promise.all([a0.done, a1.done, a2.done, a3.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    const who = (u: string) => web.requests().filter((r) => r.url === u).map((r) => `${agentOf(r.userAgent)}@${Math.round(r.start)}`).join(' ');
    assert.deepEqual(twice.slice(0, 4).map((u) => `${u} ${who(u)}`), [], 'no page fetched twice');
    // The newcomer's share: the hosts it fetched after joining (about a quarter, a third once a1 left).
    const a3Hosts = new Set(web.requests().filter((r) => agentOf(r.userAgent) === 'a3').map((r) => r.host));
    assert.ok(a3Hosts.size >= 200 * 0.15, `the 4th agent took over a fair share of hosts (${a3Hosts.size} of 200)`);
    assert.deepEqual(checkPoliteness(web.requests(), MIN_DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held through handoffs');
  } finally {
    await web.close();
  }
});

test('an agent without the swarm key cannot join a private mesh', async () => {
  const dir = tempDir();
  const key = join(dir, 'swarm.key');
  writeFileSync(key, generateSwarmKey());
  const other = join(dir, 'other.key');
  writeFileSync(other, generateSwarmKey());
  const web = await startSyntheticWeb({ hosts: 1, pagesPerHost: 1 });
  try {
    const port = PORT0 + 2;
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', `/ip4/127.0.0.1/tcp/${port}`, '--swarm-key', key]);
    await waitPort(port);
    const stranger = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--swarm-key', other]);
    const keyless = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`]);
    const [s, k] = await Promise.all([stranger.done, keyless.done]);
    assert.equal(s.code, 1, 'a wrong key is refused');
    assert.match(s.err, /cannot reach peer/);
    assert.equal(k.code, 1, 'no key is refused');
    a0.proc.kill('SIGTERM');
    assert.equal((await a0.done).code, 0);
  } finally {
    await web.close();
  }
});
