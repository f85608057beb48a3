// Helpers for the multi-process mesh tests: agent processes on loopback over
// one synthetic web. Each agent has its own User-Agent comment so the web's
// request log tells which agent fetched what (the product token stays `ubicrawl`).
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { fetchCounts, spawnAgent, tempDir } from './helpers.js';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { seenStateOf } from '../src/seen/state.js';
import { decodeSegment, parseOutboxKey } from '../src/mesh/wire.js';

export const MIN_DELAY = 150;
export const CONCURRENCY = 16;
/**
 * Membership timing of the test agents (docs/mesh.md "Table rules"): a heartbeat every 500 ms, and a member
 * silent for 4 s (with no connection to us; 16 s whatever its connections) is declared dead. The suite runs
 * four files at once on 2 cores, where an agent's event loop or its gossip can lag by seconds: a live member
 * declared dead moves its hosts and has pages fetched twice, which these tests assert never happens. A
 * SIGKILLed agent's connections close at once, so a takeover still comes 4–4.5 s after a kill (the tests that
 * kill wait on events, bounded). The product default is 1000 / 5000 ms (src/config.ts).
 */
export const HEARTBEAT_MS = 500;
export const DEAD_AFTER_MS = 4000;
/** The same as `join` flags (a later flag of a test's own wins). */
export const MESH_TIMING = ['--heartbeat', String(HEARTBEAT_MS), '--dead-after', String(DEAD_AFTER_MS)];

export interface AgentExit { code: number | null; signal: string | null; out: string; err: string }
export interface AgentProc {
  name: string;
  proc: ChildProcess;
  done: Promise<AgentExit>;
  /** Its stderr so far (its log, info level unless MESH_LOG says otherwise). */
  log: () => string;
}

/** An agent process on the web; links only (no sitemaps) unless `opts.sitemaps`. */
export function startAgentProcess(web: SyntheticWeb, dir: string, name: string, extra: string[], opts: { sitemaps?: boolean } = {}): AgentProc {
  const args = ['join', '--data-dir', join(dir, name), '--until-idle', '--min-delay', String(MIN_DELAY), '--delay-factor', '0',
    '--concurrency', String(CONCURRENCY), '--progress', 'off',
    // Info: the start-up lines name the ports it listens on (listeningOn), since tests give port 0 to run beside other files.
    '--log-level', process.env.MESH_LOG ?? 'info', ...(opts.sitemaps ? [] : ['--no-sitemaps']),
    ...MESH_TIMING,
    '--user-agent', `ubicrawl/0.1 (${name})`, ...web.resolveArgs.flatMap((r) => ['--resolve', r]), ...extra];
  const run = spawnAgent(args);
  // A test that fails before the agents end (a timed-out wait) still leaves their logs so far.
  const keepPartial = () => { if (process.env.MESH_LOG_DIR) writeFileSync(join(process.env.MESH_LOG_DIR, `${name}.${run.proc.pid}.partial.log`), run.stderr + run.stdout); };
  process.once('exit', keepPartial);
  const done = run.closed.then(({ code, signal }) => {
    process.off('exit', keepPartial);
    // MESH_LOG=info MESH_LOG_DIR=… keeps each agent's log for a post-mortem.
    if (process.env.MESH_LOG_DIR) writeFileSync(join(process.env.MESH_LOG_DIR, `${name}.${run.proc.pid}.log`), run.stderr + run.stdout);
    return { code, signal, out: run.stdout, err: run.stderr };
  });
  return { name, proc: run.proc, done, log: () => run.stderr };
}

/**
 * The loopback ports an agent listens on, read from its start-up log (`mesh node started`, and `API listening`
 * when it serves the API): agents are given port 0 (`/ip4/127.0.0.1/tcp/0`, `127.0.0.1:0`) so that test files
 * can run side by side without picking the same port.
 */
export async function listeningOn(agent: AgentProc, opts: { api?: boolean } = {}): Promise<{ mesh: number; api: number }> {
  let mesh = 0;
  let api = 0;
  const scan = () => {
    for (const line of agent.log().split('\n')) {
      if (!mesh && line.includes('"mesh node started"')) mesh = Number(/\/ip4\/127\.0\.0\.1\/tcp\/(\d+)/.exec(line)?.[1] ?? 0);
      if (!api && line.includes('"API listening"')) api = Number(/"api":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(line)?.[1] ?? 0);
    }
    return mesh > 0 && (api > 0 || !opts.api);
  };
  // A joiner serves its API once it has joined (docs/mesh.md "Admission"): seconds on a loaded machine.
  const deadline = Date.now() + 60_000;
  while (!scan()) {
    if (agent.proc.exitCode !== null || agent.proc.signalCode !== null) throw new Error(`${agent.name} exited before listening: ${agent.log().slice(-1000)}`);
    if (Date.now() > deadline) throw new Error(`${agent.name} never said where it listens (log level info?): ${agent.log().slice(-1000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { mesh, api };
}

/**
 * The membership story of each agent from its log (ring changes, deaths, members back, handoff gates), the
 * last `max` lines each: what a failure message about pages fetched twice needs to be read without a rerun.
 */
export function membershipEvents(agents: readonly AgentProc[], max = 12): string {
  const wanted = /"msg":"(membership changed|members declared dead|members back after we declared them dead|handoff gate|hosts handed over|member [^"]*: left out of our ring)"/;
  return agents.map((a) => {
    const lines = a.log().split('\n').filter((l) => wanted.test(l)).slice(-max);
    return `${a.name}:\n${lines.map((l) => `  ${l.length > 300 ? `${l.slice(0, 300)}…` : l}`).join('\n') || '  (none)'}`;
  }).join('\n');
}

export function agentOf(userAgent: string | null | undefined): string {
  return /\((a\d+)\)/.exec(userAgent ?? '')?.[1] ?? '?';
}

/** Page requests (robots.txt and /sitemap* excluded) per canonical URL. */
export function pageCounts(web: SyntheticWeb): Map<string, number> {
  return fetchCounts(web.requests());
}

export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Polls an agent's API until it sees `n` active members. */
export async function waitMembers(apiPort: number, n: number): Promise<void> {
  // A bound, not a target: a joiner is active once every member has handed over (docs/mesh.md "Admission"),
  // which takes seconds beside other test files on a loaded machine.
  const deadline = Date.now() + 60_000;
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

/** POST /seeds to the agent on `apiPort`, whose data dir (holding its API token) is `dataDir`. */
export async function seedThroughApi(apiPort: number, urls: string[], dataDir: string): Promise<void> {
  const token = readFileSync(join(dataDir, 'api.token'), 'utf8').trim();
  const res = await fetch(`http://127.0.0.1:${apiPort}/seeds`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ urls }) });
  assert.equal(res.status, 200, await res.text());
}

export async function meshWeb(hosts: number, pages: number) {
  const web = await startSyntheticWeb({ seed: hosts, hosts, pagesPerHost: pages, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 1500, max: 3000 } });
  const dir = tempDir();
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  return { web, dir, seeds, expected: web.reachable().reachableAllowed };
}

/**
 * Per-host chains: page k of every host links only to page k+1 (`/` → `/p/1` → … → `/p/<pages−1>`). The
 * roots are the seeds, so the rest of a chain is known only to whoever queued its next page: a lost queue
 * shows as pages never fetched. Each page names its host: identical bytes on two hosts would be archived as a
 * revisit, whose links are not followed.
 */
export async function chainWeb(hosts: number, pages: number) {
  const web = await startSyntheticWeb({
    seed: 7, hosts, pagesPerHost: pages, outLinks: 0, pageBytes: 600, sitemap: false,
    intercept: (req) => {
      if (req.hostIndex < 0 || req.path === '/robots.txt') return null;
      const k = req.path === '/' ? 0 : Number(/^\/p\/(\d+)$/.exec(req.path)?.[1] ?? -1);
      if (k < 0 || k >= pages) return null;
      const next = k + 1 < pages ? `<a href="/p/${k + 1}">next</a>` : '';
      return { status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body><p>${req.host}, page ${k}</p>${next}</body></html>` };
    },
  });
  const dir = tempDir();
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  const expected = new Set<string>();
  for (let i = 0; i < hosts; i++) for (let k = 0; k < pages; k++) expected.add(web.url(i, k === 0 ? '/' : `/p/${k}`));
  return { web, dir, seeds, expected };
}

/** Who fetched a URL, and when (for failure messages). */
export function whoFetched(web: SyntheticWeb, url: string): string {
  return web.requests().filter((r) => r.url === url).map((r) => `${agentOf(r.userAgent)}@${Math.round(r.start)}`).join(' ');
}

/**
 * What a killed agent's store says about its in-flight window (read after the
 * kill, before any restart): the pages it had settled itself (seen state 2 or
 * 3, by seen key in hex), and the URLs whose replica seen entries were still
 * queued, i.e. not yet acknowledged by the hosts' next owners
 * (src/mesh/outbox.ts in the `replicas` sublevel).
 */
export async function victimState(dataDir: string): Promise<{ settled: Set<string>; unreplicated: Set<string> }> {
  const store = await openStore(dataDir);
  try {
    const settled = new Set<string>();
    for await (const [k, v] of store.seen.iterator()) {
      const state = seenStateOf(v);
      if (state === 'fetched' || state === 'failed') settled.add(Buffer.from(k).toString('hex'));
    }
    const unreplicated = new Set<string>();
    for await (const [k, v] of store.replicas.iterator()) {
      if (!parseOutboxKey(k)) continue; // the counters
      for (const it of decodeSegment(v) ?? []) unreplicated.add(it.url);
    }
    return { settled, unreplicated };
  } finally {
    await store.close();
  }
}

/** The seen key of a page URL, in hex (src/store/keys.ts). */
export function seenKeyHex(url: string): string {
  return seenKey(hostKey(new URL(url).hostname), url).toString('hex');
}

/**
 * `n` agents a0…a(n−1) with `extra` arguments: a0 starts the mesh, the others join through it; every one
 * listens and serves its API on a port of its own choosing (listeningOn). Not yet seeded nor waited for.
 */
export async function startMeshAgents(web: SyntheticWeb, dir: string, n: number, extra: string[] = [], opts: { sitemaps?: boolean } = {}): Promise<{ agents: AgentProc[]; port: number; apis: number[] }> {
  const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', ...extra], opts);
  const first = await listeningOn(a0, { api: true });
  const agents = [a0];
  for (let i = 1; i < n; i++) agents.push(startAgentProcess(web, dir, `a${i}`, ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${first.mesh}`, '--api', '127.0.0.1:0', ...extra], opts));
  const apis = [first.api];
  for (const a of agents.slice(1)) apis.push((await listeningOn(a, { api: true })).api);
  return { agents, port: first.mesh, apis };
}
