// Zones across a WAN (docs/mesh.md "Zones"): agents in three zones behind the
// WAN emulator (bench/wan), 60 ms between zones, 1 ms inside.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, checkPoliteness, type SyntheticWeb } from '../bench/web/index.js';
import { WanRelay } from '../bench/wan/relay.js';
import { ZonedRing, parseZoneRule } from '../src/assign/zones.js';
import type { StatusResponse } from '../src/api/backend.js';
import { formatStatus } from '../src/api/client.js';
import { tempDir, freePort } from './helpers.js';
import { MIN_DELAY, startAgentProcess, agentOf, pageCounts, waitFor, listeningOn, seedThroughApi, whoFetched, type AgentProc, membershipEvents } from './mesh-agents.js';


/** Polls an agent's API until it counts `n` active members: bounded at 120 s (seven agent processes start here on a shared 2-core machine). */
async function waitActive(api: number, n: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const active = await status(api).then((st) => st.mesh.members.filter((m) => m.state === 'active').length, () => 0);
    if (active >= n) return;
    if (Date.now() > deadline) throw new Error(`agent on API port ${api} never saw ${n} active members`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function status(api: number): Promise<StatusResponse> {
  return await (await fetch(`http://127.0.0.1:${api}/status`)).json() as StatusResponse;
}

const ZONE_OF_AGENT: Record<string, string> = { a0: 'eu', a1: 'eu', a2: 'us', a3: 'us', a4: 'ap', a5: 'ap' };
const RULE = '.de=eu';
// Each host is a chain long enough (pages × the delay) that the join and the leave fall mid-crawl.
const DELAY = 300;
// Heartbeats every 500 ms, dead after 5 s: the helper's 250 ms / 1.5 s are loopback figures; across 60 ms
// links on a loaded machine a member's first dial and heartbeats take seconds.
const WAN_TIMING = ['--heartbeat', '500', '--dead-after', '5000'];

test('3 zones × 2 agents behind the WAN emulator: every page once, each host crawled in its zone only through a join and a leave inside a zone; a .de rule keeps those hosts in eu', async (t) => {
  const web = await startSyntheticWeb({ seed: 41, hosts: 24, pagesPerHost: 24, outLinks: 4, crossHostShare: 0.3, pageBytes: { min: 600, max: 1200 } });
  const de = await startSyntheticWeb({ seed: 42, hosts: 8, pagesPerHost: 24, outLinks: 4, crossHostShare: 0.3, pageBytes: { min: 600, max: 1200 }, hostSuffix: 'web.de' });
  const dir = tempDir();
  const names = Object.keys(ZONE_OF_AGENT);
  const ports = new Map<string, number>();
  for (const n of names) ports.set(n, await freePort());
  const relay = await WanRelay.start({
    agents: names.map((name, i) => ({ name, zone: ZONE_OF_AGENT[name]!, source: `127.0.0.${41 + i}`, target: `127.0.0.1:${ports.get(name)}` })),
    links: [
      { from: '*', to: '*', latency: '1ms' },
      { from: '*', to: '*', crossZone: true, latency: '60ms', jitter: '2ms' },
    ],
  });
  const procs: AgentProc[] = [];
  const t0 = Date.now();
  const phases: string[] = [];
  const phase = (what: string) => phases.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  try {
    const start = (name: string, extra: string[] = []): AgentProc => {
      const i = names.indexOf(name);
      const r = relay.addressOf(name);
      const a = startAgentProcess(web, dir, name, [
        '--listen', `/ip4/127.0.0.1/tcp/${ports.get(name)}`, '--announce', r.multiaddr, '--source-address', `127.0.0.${41 + i}`,
        '--api', '127.0.0.1:0', '--min-delay', String(DELAY), ...WAN_TIMING, '--zone', ZONE_OF_AGENT[name]!, '--zone-rule', RULE,
        ...de.resolveArgs.flatMap((x) => ['--resolve', x]), ...extra,
      ]);
      procs.push(a);
      return a;
    };
    const first = relay.addressOf('a0');
    const joinVia = ['--seed', `${first.host}:${first.port}`];
    const a0 = start('a0');
    const apis = new Map<string, number>([['a0', (await listeningOn(a0, { api: true })).api]]);
    // Every zone present, and every agent seeing all five, before the seeds: hosts then change hands only by the join and the leave below.
    for (const n of ['a2', 'a3', 'a4', 'a5']) start(n, joinVia);
    for (const a of procs.slice(1)) apis.set(a.name, (await listeningOn(a, { api: true })).api);
    for (const api of apis.values()) await waitActive(api, 5);
    phase('mesh of five');
    const seeds = [...web.roots(), ...de.roots()];
    await seedThroughApi(apis.get('a0')!, seeds, join(dir, 'a0'));
    const expected = new Set([...web.reachable().reachableAllowed, ...de.reachable().reachableAllowed]);

    // A join inside eu as the crawl starts: it is in every ring a few seconds later, while hosts are queued.
    phase('seeded, join');
    const a1 = start('a1', joinVia);
    apis.set('a1', (await listeningOn(a1, { api: true })).api);
    await waitActive(apis.get('a1')!, 6);
    phase('joined');
    const st = await status(apis.get('a1')!);
    t.diagnostic(`zones seen by a1: ${JSON.stringify(st.mesh.zones)}`);
    const zones = new Map((st.mesh.zones ?? []).map((z) => [z.zone, z]));
    assert.deepEqual([...zones.keys()], ['ap', 'eu', 'us'], '/status lists the three zones');
    assert.equal(zones.get('eu')!.members, 2);
    for (const z of zones.values()) assert.ok(Math.abs(z.share - 1 / 3) < 1e-9, `zone ${z.zone} owns a third of the hosts (equal weights)`);
    const self = st.mesh.members.find((m) => m.self)!;
    assert.equal(self.zone, 'eu');
    assert.match(formatStatus(st), /zones:\n.*ZONE.*\n\s+ap .*\n\s+eu \* +2 /, '`ubicrawl status` shows the zones');
    // A leave inside us, once the newcomer crawls.
    await waitFor(() => web.requests().concat(de.requests()).some((r) => agentOf(r.userAgent) === 'a1'), 60_000, 'the joiner crawling');
    const a3 = procs.find((p) => p.name === 'a3')!;
    const beforeLeave = await status(apis.get('a0')!);
    phase('leave');
    a3.proc.kill('SIGTERM'); // graceful leave: hands its hosts over

    const results = await Promise.all(procs.map((p) => p.done));
    phase('end');
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const counts = new Map([...pageCounts(web), ...pageCounts(de)]);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    assert.deepEqual(twice.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)} ${whoFetched(de, u)}`), [], `no page fetched twice (${twice.length} were)\n${membershipEvents(procs)}`);

    // Each host's zone, as every agent computes it (three zones, equal weights, the rule).
    const ring = new ZonedRing({}, [parseZoneRule(RULE)]);
    for (const n of names) ring.add(n, 1, ZONE_OF_AGENT[n]);
    const zonesPerHost = new Map<string, Set<string>>();
    const agentsPerZone = new Map<string, Set<string>>();
    const check = (w: SyntheticWeb) => {
      for (const r of w.requests()) {
        const z = ZONE_OF_AGENT[agentOf(r.userAgent)] ?? '?';
        if (!zonesPerHost.has(r.host)) zonesPerHost.set(r.host, new Set());
        zonesPerHost.get(r.host)!.add(z);
        if (!agentsPerZone.has(z)) agentsPerZone.set(z, new Set());
        agentsPerZone.get(z)!.add(agentOf(r.userAgent));
      }
    };
    check(web);
    check(de);
    const wrong = [...zonesPerHost].filter(([h, zs]) => zs.size !== 1 || !zs.has(ring.zoneOf(h)!));
    assert.deepEqual(wrong.slice(0, 5).map(([h, zs]) => `${h} (${ring.zoneOf(h)}): ${[...zs].join(',')}`), [], 'every host crawled from its zone only');
    const deHosts = [...zonesPerHost].filter(([h]) => h.endsWith('.web.de'));
    assert.equal(deHosts.length, 8);
    for (const [h, zs] of deHosts) assert.deepEqual([...zs], ['eu'], `${h}: the rule sends it to eu`);
    for (const z of ['eu', 'us', 'ap']) assert.ok(zonesPerHost.size > 0 && [...zonesPerHost.values()].some((zs) => zs.has(z)), `zone ${z} crawled`);
    assert.ok(agentsPerZone.get('eu')!.has('a1'), 'the joiner crawled hosts of its zone');
    assert.deepEqual(checkPoliteness([...web.requests(), ...de.requests()], DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held through the join and the leave');

    // Cross-zone traffic: a0 (eu) forwarded URLs to the other zones, in fewer, larger batches.
    const traffic = new Map((beforeLeave.mesh.zones ?? []).map((z) => [z.zone, z.forwarded]));
    t.diagnostic(`a0 forwarded by zone before the leave: ${JSON.stringify(Object.fromEntries(traffic))}; relay ${JSON.stringify(Object.fromEntries(Object.entries(relay.status().links).map(([k, v]) => [k, v.bytes])))}`);
    assert.ok((traffic.get('us') ?? 0) > 0 && (traffic.get('ap') ?? 0) > 0, 'a0 forwarded URLs to the other zones');
    void MIN_DELAY;
  } finally {
    t.diagnostic(phases.join(', '));
    for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
    await relay.close();
    await web.close();
    await de.close();
  }
});
