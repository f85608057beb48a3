// Suspicion before takeover across a partition (docs/mesh.md "Suspicion
// before takeover"): two agents in two zones behind the WAN emulator
// (bench/wan), cut apart mid-crawl for longer than --dead-after but shorter
// than --dead-after + --takeover-grace, then healed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startSyntheticWeb, checkPoliteness } from '../bench/web/index.js';
import { WanRelay } from '../bench/wan/relay.js';
import type { StatusResponse } from '../src/api/backend.js';
import { tempDir, freePort } from './helpers.js';
import { startAgentProcess, agentOf, pageCounts, waitFor, listeningOn, waitMembers, seedThroughApi, whoFetched, type AgentProc, membershipEvents } from './mesh-agents.js';


const DELAY = 300;
const DEAD_AFTER_MS = 2000;
// 7 s keeps the file short; the acceptance case cuts for 60 s: PARTITION_CUT_S=60 (the grace grows with it, and the
// web too, so that the crawl outlasts the cut).
const CUT_MS = Number(process.env.PARTITION_CUT_S ?? 7) * 1000;
const GRACE_S = Math.max(45, Math.ceil(CUT_MS / 1000) + 30);
const PAGES_PER_HOST = CUT_MS > 7000 ? Math.ceil(40 * CUT_MS / 7000) : 30;

test('a partition shorter than dead-after + takeover grace moves no host: each side sees the other suspect, nobody is taken over, every page once', async (t) => {
  const web = await startSyntheticWeb({ seed: 51, hosts: 12, pagesPerHost: PAGES_PER_HOST, outLinks: 4, crossHostShare: 0.3, pageBytes: { min: 600, max: 1200 } });
  const dir = tempDir();
  const zones: Record<string, string> = { a0: 'eu', a1: 'us' };
  const ports = { a0: await freePort(), a1: await freePort() };
  const relay = await WanRelay.start({
    agents: (['a0', 'a1'] as const).map((name, i) => ({ name, zone: zones[name]!, source: `127.0.0.${61 + i}`, target: `127.0.0.1:${ports[name]}` })),
    links: [{ from: '*', to: '*', crossZone: true, latency: '30ms', jitter: '2ms' }],
  });
  const procs: AgentProc[] = [];
  const phases: string[] = [];
  const t0 = Date.now();
  const phase = (what: string) => phases.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  try {
    const start = (name: 'a0' | 'a1', extra: string[] = []) => {
      const r = relay.addressOf(name);
      const a = startAgentProcess(web, dir, name, [
        '--listen', `/ip4/127.0.0.1/tcp/${ports[name]}`, '--announce', r.multiaddr, '--source-address', `127.0.0.${61 + procs.length}`,
        '--api', '127.0.0.1:0', '--min-delay', String(DELAY), '--zone', zones[name]!,
        '--heartbeat', '500', '--dead-after', String(DEAD_AFTER_MS), '--takeover-grace', `${GRACE_S}s`, ...extra,
      ]);
      procs.push(a);
      return a;
    };
    const a0 = start('a0');
    const api0 = (await listeningOn(a0, { api: true })).api;
    const first = relay.addressOf('a0');
    const a1 = start('a1', ['--seed', `${first.host}:${first.port}`]);
    const api1 = (await listeningOn(a1, { api: true })).api;
    for (const api of [api0, api1]) await waitMembers(api, 2);
    phase('mesh');
    await seedThroughApi(api0, web.roots(), join(dir, 'a0'));
    const expected = web.reachable().reachableAllowed;
    await waitFor(() => pageCounts(web).size >= expected.size * 0.15 && new Set(web.requests().map((r) => agentOf(r.userAgent))).size === 2, 60_000, 'both agents crawling');

    phase('cut');
    relay.partition('eu', 'us', { mode: 'hold', reset: true });
    const cutAt = Date.now();
    // Each side finds the other silent (past --dead-after) and holds it suspect, not dead.
    const stateOf = async (api: number) => ((await (await fetch(`http://127.0.0.1:${api}/status`)).json()) as StatusResponse).mesh.members.find((m) => !m.self)?.state;
    const suspected = new Set<number>();
    const deadline = cutAt + CUT_MS;
    while (Date.now() < deadline) {
      for (const api of [api0, api1]) if ((await stateOf(api).catch(() => undefined)) === 'suspect') suspected.add(api);
      await new Promise((r) => setTimeout(r, 200));
    }
    relay.heal();
    phase('heal');
    assert.deepEqual([...suspected].sort(), [api0, api1].sort(), 'each side held the other suspect during the cut');
    const results = await Promise.all(procs.map((p) => p.done));
    phase('end');
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    for (const p of procs) assert.doesNotMatch(p.log(), /members declared dead/, `${p.name} took nobody over`);
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    assert.deepEqual(twice.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], `no page fetched twice (${twice.length} were)\n${membershipEvents(procs)}`);
    const agentsPerHost = new Map<string, Set<string>>();
    for (const r of web.requests()) {
      if (!agentsPerHost.has(r.host)) agentsPerHost.set(r.host, new Set());
      agentsPerHost.get(r.host)!.add(agentOf(r.userAgent));
    }
    assert.deepEqual([...agentsPerHost].filter(([, s]) => s.size > 1).map(([h, s]) => `${h}: ${[...s]}`), [], 'each host crawled by one agent, before, during and after the cut');
    assert.deepEqual(checkPoliteness(web.requests(), DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held');
    const during = web.requests().filter((r) => r.start >= cutAt && r.start < cutAt + CUT_MS).length;
    t.diagnostic(`${during} requests during the ${CUT_MS / 1000} s cut (each side kept crawling its own hosts)`);
    assert.ok(during > 0, 'the crawl went on during the cut');
  } finally {
    t.diagnostic(phases.join(', '));
    for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
    await relay.close();
    await web.close();
  }
});
