// The API with real agents (docs/operations.md): three agent processes with their APIs,
// every endpoint answering, `inspect` naming owner and WARC location, `warc get`
// returning the served bytes; and pausing a host stopping its fetches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb } from '../bench/web/index.js';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { tempDir } from './helpers.js';
import { MESH_TIMING, listeningOn, type AgentExit, type AgentProc } from './mesh-agents.js';
import { readFileSync } from 'node:fs';

/** The bearer header of the agent whose data dir is `dataDir` (changes through the API take its token). */
const authOf = (dataDir: string) => ({ authorization: `Bearer ${readFileSync(join(dataDir, 'api.token'), 'utf8').trim()}` });

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'ubicrawl.js');

function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { encoding: 'utf8', maxBuffer: 16 << 20 }, (e, out, err) => {
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, out, err });
    });
  });
}

async function json<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, init);
  assert.ok(res.ok, `${url}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as T;
}

async function until(cond: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Status { agent: { id: string; counters: { fetched: number; queued: number } }; mesh: { members: Array<{ id: string; share: number; state: string }> } }

test('three agents: every endpoint answers; inspect names owner and WARC location; warc get returns the served bytes', async () => {
  const web = await startSyntheticWeb({ seed: 4, hosts: 30, pagesPerHost: 3, pageBytes: { min: 1000, max: 2000 } });
  const dir = tempDir();
  // Every agent listens and serves its API on a port of its own choosing, read from its info log (listeningOn),
  // so that this file can run beside others; warnings and errors still reach the test's stderr.
  const start = (i: number, peerPort?: number): AgentProc => {
    const proc = spawn(process.execPath, [BIN, 'join', '--data-dir', join(dir, `a${i}`), '--api', '127.0.0.1:0',
      '--listen', '/ip4/127.0.0.1/tcp/0', ...(peerPort ? ['--seed', `127.0.0.1:${peerPort}`] : []),
      '--min-delay', '50', '--delay-factor', '0', ...MESH_TIMING, '--progress', 'off', '--log-level', 'info', '--no-sitemaps',
      ...web.resolveArgs.flatMap((r) => ['--resolve', r])], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    let shown = 0; // log up to here is split into lines already
    proc.stderr!.on('data', (d: Buffer) => {
      log += d;
      const end = log.lastIndexOf('\n') + 1;
      for (const line of log.slice(shown, end).split('\n')) if (/"level":[4-6]0/.test(line)) process.stderr.write(line + '\n');
      shown = Math.max(shown, end);
    });
    const done = new Promise<AgentExit>((r) => proc.once('close', (code, signal) => r({ code, signal, out: '', err: log })));
    return { name: `a${i}`, proc, done, log: () => log };
  };
  // The first agent starts the mesh; the others join once its node is up.
  const agents = [start(0)];
  const procs = agents.map((a) => a.proc);
  try {
    const first = await listeningOn(agents[0]!, { api: true });
    agents.push(start(1, first.mesh), start(2, first.mesh));
    procs.push(agents[1]!.proc, agents[2]!.proc);
    const apis = [`127.0.0.1:${first.api}`];
    for (const a of agents.slice(1)) apis.push(`127.0.0.1:${(await listeningOn(a, { api: true })).api}`);
    const exited = agents.map((a) => a.done.then((r) => r.code));
    const base = apis.map((a) => `http://${a}`);
    for (const b of base) {
      await until(async () => {
        // A joiner owns hosts once it has finished joining (docs/mesh.md "Admission"): its state is then active.
        try { return (await json<Status>(`${b}/status`)).mesh.members.filter((m) => m.state === 'active').length === 3; } catch { return false; }
      }, 30_000, 'three active members everywhere');
    }
    const seeded = await json<{ accepted: number; routed: Record<string, number> }>(`${base[0]}/seeds`, {
      method: 'POST', headers: { 'content-type': 'application/json', ...authOf(join(dir, 'a0')) }, body: JSON.stringify({ urls: web.roots() }),
    });
    assert.equal(seeded.accepted, 30);
    assert.ok(Object.keys(seeded.routed).length >= 2, 'seeds routed to several owners');
    const expected = web.reachable().reachableAllowed;
    await until(() => new Set(web.requests().filter((r) => !r.path.startsWith('/robots')).map((r) => r.url)).size >= expected.size, 60_000, 'crawl done');

    const statuses = await Promise.all(base.map((b) => json<Status>(`${b}/status`)));
    const ids = statuses.map((s) => s.agent.id);
    for (const s of statuses) {
      assert.deepEqual(s.mesh.members.map((m) => m.id).sort(), [...ids].sort(), 'every agent sees the same members');
      const share = s.mesh.members.reduce((x, m) => x + m.share, 0);
      assert.ok(Math.abs(share - 1) < 1e-6, 'shares add up to 1');
    }
    const url = [...expected][0]!;
    const host = new URL(url).hostname;
    // Any agent names the owner; the owner knows the fetch and its WARC location.
    type Report = { owner: string; local: boolean; state: string; fetched: { warc: { filename: string; offset: number } | null } | null };
    const report = () => Promise.all(base.map((b) => json<Report>(`${b}/urls?url=${encodeURIComponent(url)}`)));
    // The server logs a request when it starts; the owner records the fetch once the page is
    // processed and durable, a moment later: wait for that before reading the reports.
    await until(async () => (await report()).some((r) => r.local && r.state !== 'queued'), 30_000, 'the fetch recorded');
    const reports = await report();
    const owners = new Set(reports.map((r) => r.owner));
    assert.equal(owners.size, 1, 'all agents agree on the owner');
    const ownerIndex = reports.findIndex((r) => r.local);
    assert.ok(ownerIndex >= 0);
    assert.equal(reports[ownerIndex]!.state, 'fetched');
    assert.ok(reports[ownerIndex]!.fetched?.warc?.filename.endsWith('.warc.gz'));
    const hostReport = await json<{ owner: string; queue: { depth: number }; lastFetches: unknown[] }>(`${base[ownerIndex]}/hosts/${host}`);
    assert.ok(hostReport.lastFetches.length > 0);
    const inspect = await cli(['inspect', url, '--api', apis[ownerIndex]!]);
    assert.equal(inspect.code, 0, inspect.err);
    assert.match(inspect.out, new RegExp(reports[ownerIndex]!.fetched!.warc!.filename.replace(/[.]/g, '\\.')));
    assert.match(inspect.out, /offset \d+/);
    assert.match(inspect.out, /this agent/);
    const status = await cli(['status', '--api', apis[1]!]);
    assert.equal(status.code, 0, status.err);
    assert.match(status.out, /mesh: 3 members/);
    const metrics = await fetch(`${base[2]}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /^ubicrawl_pages_total\{/m);
    // warc get from the owner's data dir: the very bytes the server sent.
    const got = await cli(['warc', 'get', '--dir', join(dir, `a${ownerIndex}`, 'warc'), url]);
    assert.equal(got.code, 0, got.err);
    const u = new URL(url);
    const { request } = await import('undici'); // fetch() may not set Host; undici.request may
    const live = await request(`http://127.0.0.1:${web.port}${u.pathname}`, { headers: { host: u.host } });
    assert.equal(got.out, await live.body.text());
    for (const [i, b] of base.entries()) {
      const res = await fetch(`${b}/leave`, { method: 'POST', headers: authOf(join(dir, `a${i}`)) });
      assert.equal(res.status, 202);
    }
    const codes = await Promise.all(exited);
    assert.deepEqual(codes, [0, 0, 0]);
  } finally {
    for (const p of procs) p.kill('SIGKILL');
    await web.close();
  }
});

test('pausing a host stops fetches to it within one politeness interval; resuming restarts them', async () => {
  const web = await startSyntheticWeb({ seed: 6, hosts: 2, pagesPerHost: 60, outLinks: 4, crossHostShare: 0, pageBytes: { min: 500, max: 800 } });
  const dir = tempDir();
  const delay = 200;
  const agent = await startAgent({
    dataDir: dir, seeds: web.roots(), minDelayMs: delay, delayFactor: 0, resolve: web.resolveArgs.map(parseResolveRule),
    logLevel: 'silent', api: { listen: '127.0.0.1:0' }, sitemaps: { enabled: false },
  });
  try {
    const host = web.hostName(0);
    const hits = () => web.requests().filter((r) => r.host === host);
    await until(() => hits().length >= 5, 20_000, 'some fetches');
    const paused = await json<{ paused: boolean }>(`${agent.apiUrl}/hosts/${host}/pause`, { method: 'POST', headers: authOf(dir) });
    assert.equal(paused.paused, true);
    const at = Date.now();
    await new Promise((r) => setTimeout(r, 1500));
    const late = hits().filter((r) => r.start > at + delay + 50);
    assert.deepEqual(late.map((r) => r.path), [], 'no fetch after one politeness interval');
    const other = web.requests().filter((r) => r.host === web.hostName(1) && r.start > at);
    assert.ok(other.length > 0, 'other hosts keep being crawled');
    const before = hits().length;
    await json(`${agent.apiUrl}/hosts/${host}/resume`, { method: 'POST', headers: authOf(dir) });
    await until(() => hits().length > before, 5_000, 'fetches resume');
  } finally {
    await agent.stop();
    await web.close();
  }
});
