// Partitions across zones behind the WAN emulator (bench/wan), beyond
// test/partition-wan.test.ts's short cut (docs/mesh.md "Suspicion before
// takeover", "Partitions longer than the window"):
// - a cut longer than --dead-after + --takeover-grace: each side takes the
//   other's hosts over; at the heal the two sides reconcile (each hands the
//   other's hosts back with what it fetched and queued, and waits for the
//   other's handoff before crawling its own again): nothing lost, nothing
//   fetched again after the heal, no host requested by two agents at once
//   after it;
// - a cut within the window during which one agent of the far zone is
//   SIGKILLed for good: its hosts go to its zone's survivor once the grace is
//   over, nothing is lost, no host is requested by two agents at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startSyntheticWeb, checkPoliteness, type SyntheticWeb } from '../bench/web/index.js';
import { WanRelay } from '../bench/wan/relay.js';
import { tempDir, freePort } from './helpers.js';
import { startAgentProcess, agentOf, pageCounts, waitFor, listeningOn, waitMembers, seedThroughApi, whoFetched, type AgentProc } from './mesh-agents.js';

const DELAY = 400;
const DEAD_AFTER_MS = 2000;
/** A request of a host turn begun before the agent noticed a ring change can still go out this much later (a loaded machine). */
const DISPATCH_SLACK_MS = 1000;

/** Agents behind the relay, one zone each as given, 30 ms apart; the first starts the mesh, the seeds go to it. */
async function wanMesh(web: SyntheticWeb, zones: Record<string, string>, extra: string[]) {
  const dir = tempDir();
  const names = Object.keys(zones);
  const ports: Record<string, number> = {};
  for (const n of names) ports[n] = await freePort();
  const relay = await WanRelay.start({
    agents: names.map((name, i) => ({ name, zone: zones[name]!, source: `127.0.0.${71 + i}`, target: `127.0.0.1:${ports[name]}` })),
    links: [{ from: '*', to: '*', crossZone: true, latency: '30ms', jitter: '2ms' }, { from: '*', to: '*', latency: '1ms' }],
  });
  const procs: AgentProc[] = [];
  const apis: number[] = [];
  try {
    const start = (name: string, i: number) => {
      const r = relay.addressOf(name);
      const first = relay.addressOf(names[0]!);
      return startAgentProcess(web, dir, name, [
        '--listen', `/ip4/127.0.0.1/tcp/${ports[name]}`, '--announce', r.multiaddr, '--source-address', `127.0.0.${71 + i}`,
        '--api', '127.0.0.1:0', '--min-delay', String(DELAY), '--zone', zones[name]!,
        '--heartbeat', '500', '--dead-after', String(DEAD_AFTER_MS), ...(i > 0 ? ['--seed', `${first.host}:${first.port}`] : []), ...extra,
      ]);
    };
    // The first starts the mesh; the others join it together (agent start-up is most of a mesh test's time).
    procs.push(start(names[0]!, 0));
    apis.push((await listeningOn(procs[0]!, { api: true })).api);
    procs.push(...names.slice(1).map((n, i) => start(n, i + 1)));
    for (const p of procs.slice(1)) apis.push((await listeningOn(p, { api: true })).api);
    for (const api of apis) await waitMembers(api, names.length);
    await seedThroughApi(apis[0]!, web.roots(), join(dir, names[0]!));
  } catch (err) {
    for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
    await relay.close();
    throw err;
  }
  return { relay, procs, apis, dir };
}

/** Times (ms, from the agent's log) of its log lines with this message. */
function logTimes(p: AgentProc, msg: string): number[] {
  const out: number[] = [];
  for (const line of p.log().split('\n')) {
    if (!line.includes(`"msg":"${msg}"`)) continue;
    const t = /"time":(\d+)/.exec(line)?.[1];
    if (t) out.push(Number(t));
  }
  return out;
}

const alive = (p: AgentProc) => p.proc.exitCode === null && p.proc.signalCode === null;

test('a partition longer than dead-after + takeover grace: both sides take over, and at the heal they reconcile: nothing lost, nothing fetched again after it, no host requested by two agents at once after it', async (t) => {
  const web = await startSyntheticWeb({ seed: 53, hosts: 16, pagesPerHost: 40, outLinks: 4, crossHostShare: 0.3, pageBytes: { min: 600, max: 1200 } });
  const GRACE_MS = 3000;
  const CUT_MS = 11_000; // past dead-after + grace + one more dead-after (promotion of the other side's queue)
  const phases: string[] = [];
  const t0 = Date.now();
  const phase = (what: string) => phases.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  const { relay, procs } = await wanMesh(web, { a0: 'eu', a1: 'us' }, ['--takeover-grace', `${GRACE_MS}ms`]);
  try {
    phase('mesh');
    const expected = web.reachable().reachableAllowed;
    await waitFor(() => pageCounts(web).size >= expected.size * 0.15 && new Set(web.requests().map((r) => agentOf(r.userAgent))).size === 2, 60_000, 'both agents crawling');
    phase('cut');
    relay.partition('eu', 'us', { mode: 'hold', reset: true });
    const cutAt = Date.now();
    await waitFor(() => procs.every((p) => logTimes(p, 'members declared dead').length > 0), CUT_MS + 10_000, 'each side declares the other dead');
    const remaining = cutAt + CUT_MS - Date.now();
    if (remaining > 0) await new Promise((r) => setTimeout(r, remaining));
    relay.heal();
    const healAt = Date.now();
    phase('heal');
    // Each side sees the other back and takes its handoff (docs/mesh.md "Partitions longer than the window").
    await waitFor(() => procs.every((p) => logTimes(p, 'members back after we declared them dead').some((x) => x >= healAt - 50)), 30_000, 'each side sees the other back');
    // Both sides noticed the heal (and their gates hold their hosts for the other's handoff); a request of a host
    // turn begun before that still goes out (the gate is asked at the start of a turn): a second of slack.
    const noticedAt = Math.max(...procs.map((p) => Math.min(...logTimes(p, 'members back after we declared them dead').filter((x) => x >= healAt - 50))));
    const reconciledAt = noticedAt + DISPATCH_SLACK_MS;
    phase('both back');
    const results = await Promise.all(procs.map((p) => p.done));
    phase('end');
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));

    const reqs = web.requests();
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)).slice(0, 5), [], 'every reachable page fetched');
    // Both sides crawled the other's hosts during the cut: proof that this was a takeover, not a suspicion.
    const hostsOfBoth = new Set<string>();
    const by = new Map<string, Set<string>>();
    for (const r of reqs) {
      if (r.start < cutAt || r.start > healAt || !r.url) continue;
      if (!by.has(r.host)) by.set(r.host, new Set());
      by.get(r.host)!.add(agentOf(r.userAgent));
    }
    for (const [h, s] of by) if (s.size > 1) hostsOfBoth.add(h);
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    // Pages fetched twice: once by each side while both owned the host (before both saw each other back).
    const outside = twice.filter((u) => {
      const rs = reqs.filter((r) => r.url === u).sort((x, y) => x.start - y.start);
      return rs.length > 2 || agentOf(rs[0]!.userAgent) === agentOf(rs[1]!.userAgent) || rs[1]!.start < cutAt || rs[1]!.start > reconciledAt;
    });
    t.diagnostic(`${expected.size} pages; cut ${((healAt - cutAt) / 1000).toFixed(1)} s; ${hostsOfBoth.size} hosts crawled by both sides during the cut; ` +
      `${twice.length} pages fetched twice (both sides, during the cut); both noticed the heal ${noticedAt - healAt} ms after it`);
    assert.ok(hostsOfBoth.size > 0, 'each side took the other\'s hosts over during the cut');
    assert.deepEqual(outside.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], 'after the heal nothing is fetched again: pages fetched twice were fetched by both sides during the cut');
    // After both saw each other back: one agent per host at a time, and the per-host delay.
    const after = reqs.filter((r) => r.end === 0 || r.end >= reconciledAt);
    assert.deepEqual(checkPoliteness(after, DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'after the heal, no host requested by two agents at once; per-host delay held');
    const before = reqs.filter((r) => r.start < cutAt);
    assert.deepEqual(checkPoliteness(before, DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'before the cut too');
  } finally {
    t.diagnostic(phases.join(', '));
    for (const p of procs) if (alive(p)) p.proc.kill('SIGKILL');
    await relay.close();
    await web.close();
  }
});

test('an agent of the far zone SIGKILLed for good during a partition shorter than the window: its zone\'s survivor takes its hosts once the grace is over; nothing lost, no host requested by two agents at once', async (t) => {
  // 8 s keeps the file short; the acceptance case cuts for 60 s: PARTITION_CUT_S=60 (grace and web grow with it).
  const CUT_MS = Number(process.env.PARTITION_CUT_S ?? 8) * 1000;
  const GRACE_MS = Math.max(10_000, CUT_MS + 4000); // dead-after + grace > the cut: nobody is taken over for the cut itself
  const web = await startSyntheticWeb({ seed: 57, hosts: 18, pagesPerHost: Math.max(30, Math.ceil(30 * CUT_MS / 8000)), outLinks: 4, crossHostShare: 0.3, pageBytes: { min: 600, max: 1200 } });
  const phases: string[] = [];
  const t0 = Date.now();
  const phase = (what: string) => phases.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  const { relay, procs } = await wanMesh(web, { a0: 'eu', a1: 'us', a2: 'us' }, ['--takeover-grace', `${GRACE_MS}ms`]);
  const victim = procs[2]!;
  try {
    phase('mesh');
    const expected = web.reachable().reachableAllowed;
    const byVictim = () => web.requests().filter((r) => agentOf(r.userAgent) === victim.name && r.url).length;
    await waitFor(() => pageCounts(web).size >= expected.size * 0.15 && byVictim() >= 10 && new Set(web.requests().map((r) => agentOf(r.userAgent))).size === 3, 60_000, 'all three crawling');
    phase('cut');
    relay.partition('eu', 'us', { mode: 'hold', reset: true });
    const cutAt = Date.now();
    await new Promise((r) => setTimeout(r, 1000));
    const killedAt = Date.now();
    victim.proc.kill('SIGKILL');
    phase('kill');
    const remaining = cutAt + CUT_MS - Date.now();
    if (remaining > 0) await new Promise((r) => setTimeout(r, remaining));
    relay.heal();
    const healAt = Date.now();
    phase('heal');
    const survivors = procs.filter((p) => p !== victim);
    const results = await Promise.all(survivors.map((p) => p.done));
    phase('end');
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    assert.equal((await victim.done).signal, 'SIGKILL');
    const victimId = /"id":"(12D3Koo\w+)"[^\n]*"mesh node started"/.exec(victim.log())?.[1];
    // The survivors declared the victim dead, and only it: the cut itself moved no host.
    for (const p of survivors) {
      const dead = p.log().split('\n').filter((l) => l.includes('"members declared dead"'));
      assert.ok(dead.length > 0 && dead.every((l) => victimId && l.includes(victimId) && (l.match(/12D3Koo/g) ?? []).length === 1), `${p.name} declared the victim dead, nobody else: ${dead.join('\n').slice(0, 600)}`);
      const deadAt = logTimes(p, 'members declared dead')[0]!;
      // (Silent to a0 from the cut on, to a1 from the kill on; a heartbeat interval of slack.)
      assert.ok(deadAt - cutAt >= DEAD_AFTER_MS + GRACE_MS - 600, `${p.name} took it over only after the grace (${deadAt - cutAt} ms after the cut)`);
    }
    const reqs = web.requests();
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)).slice(0, 5).map((u) => `${u} ${whoFetched(web, u)}`), [], 'every reachable page fetched, the victim\'s queue too');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    // Only the victim's in-flight window (docs/mesh.md "Crashes") is fetched twice.
    const outside = twice.filter((u) => {
      const rs = reqs.filter((r) => r.url === u).sort((x, y) => x.start - y.start);
      return rs.length > 2 || agentOf(rs[0]!.userAgent) !== victim.name || rs[0]!.start > killedAt + 100;
    });
    const victimHosts = new Set(reqs.filter((r) => agentOf(r.userAgent) === victim.name).map((r) => r.host));
    const takenOver = reqs.filter((r) => r.start > killedAt && victimHosts.has(r.host) && r.url).length;
    t.diagnostic(`${expected.size} pages, ${twice.length} fetched twice (victim's in-flight window); after the kill ${takenOver} pages of the victim's ${victimHosts.size} hosts fetched by the survivors; heal ${healAt - cutAt} ms after the cut`);
    assert.ok(takenOver > 0, 'the survivors crawled on where the victim left off');
    assert.deepEqual(outside.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], 'pages fetched twice are the victim\'s in-flight window only');
    assert.deepEqual(checkPoliteness(reqs, DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'no host requested by two agents at once, before, during or after the cut; per-host delay held');
  } finally {
    t.diagnostic(phases.join(', '));
    for (const p of procs) if (alive(p)) p.proc.kill('SIGKILL');
    await relay.close();
    await web.close();
  }
});
