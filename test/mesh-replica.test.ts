// The replicated frontier (docs/mesh.md "Replicated frontier"): one of four
// agents is SIGKILLed for good mid-crawl; its hosts' queued URLs were held by
// their next owners on the ring, who promote them when it leaves their rings,
// so every page reachable from the seeds is fetched — on a densely linked web,
// and on a web of per-host chains (each page links only to the next), where
// the victim's queue alone held the rest of each of its chains.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkPoliteness, type SyntheticWeb } from '../bench/web/index.js';
import { MIN_DELAY, startAgentProcess, listeningOn, agentOf, pageCounts, waitFor, meshWeb, chainWeb, whoFetched, type AgentProc } from './mesh-agents.js';

/** Four agents, replicas on (the default); a0 starts the mesh, a3 is given the seeds. */
async function fourAgents(web: SyntheticWeb, dir: string, seeds: string, extra: string[]): Promise<AgentProc[]> {
  const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', ...extra]);
  const { mesh: port } = await listeningOn(a0);
  const join = ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, ...extra];
  const rest = [1, 2].map((i) => startAgentProcess(web, dir, `a${i}`, join));
  // The seeds come once the others could have joined: the kill must find a mesh of four.
  await Promise.all(rest.map((a) => listeningOn(a)));
  const a3 = startAgentProcess(web, dir, 'a3', [...join, '--seed', seeds]);
  return [a0, ...rest, a3];
}

async function killOneForGood(t: { diagnostic(s: string): void }, name: string, made: { web: SyntheticWeb; dir: string; seeds: string; expected: Set<string> }, extra: string[], victimShare: number) {
  const { web, dir, seeds, expected } = made;
  let agents: AgentProc[] = [];
  try {
    agents = await fourAgents(web, dir, seeds, extra);
    const victim = agents[1]!;
    const byVictim = () => web.requests().filter((r) => agentOf(r.userAgent) === victim.name && r.url).length;
    // Mid-crawl: all four crawl, and the victim has done a fair part of its share (its queue holds the rest).
    await waitFor(() => pageCounts(web).size >= expected.size * 0.25 && byVictim() >= expected.size * victimShare
      && agents.every((a) => web.requests().some((r) => agentOf(r.userAgent) === a.name)), 240_000, 'a quarter of the crawl, by all four');
    const killedAt = Date.now();
    const victimBefore = byVictim();
    victim.proc.kill('SIGKILL');
    const survivors = agents.filter((a) => a !== victim);
    const results = await Promise.all(survivors.map((a) => a.done));
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    assert.equal((await victim.done).signal, 'SIGKILL');
    if (process.env.MESH_LOG_DIR) writeFileSync(join(process.env.MESH_LOG_DIR, `requests-${name}.json`), JSON.stringify({ killedAt, requests: web.requests() }));

    const counts = pageCounts(web);
    const missed = [...expected].filter((u) => !counts.has(u));
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    const victimHosts = new Set(web.requests().filter((r) => agentOf(r.userAgent) === victim.name).map((r) => r.host));
    const afterKillOnVictimHosts = web.requests().filter((r) => r.start > killedAt && victimHosts.has(r.host) && r.url && agentOf(r.userAgent) !== victim.name);
    // The survivors' end summaries: queued URLs of the victim's hosts they promoted into their frontiers.
    const promoted = results.map((r) => /"replicatedFrontier": \{[^}]*?"promoted": (\d+)/.exec(r.err + r.out)?.[1] ?? '?');
    t.diagnostic(`${name}: ${expected.size} pages, ${counts.size} fetched, ${missed.length} missed; the victim had requested ${victimBefore} pages on ${victimHosts.size} hosts; ` +
      `after the kill the survivors fetched ${afterKillOnVictimHosts.length} pages of its hosts; ${twice.length} fetched twice; promoted per survivor: ${promoted.join(' ')}`);
    assert.deepEqual(missed.slice(0, 5).map((u) => `${u} ${whoFetched(web, u)}`), [], 'every page reachable from the seeds is fetched');
    assert.ok(afterKillOnVictimHosts.length > 0, 'the survivors crawled on where the victim left off');
    assert.ok(promoted.some((p) => Number(p) > 0), 'the victim\'s queued URLs were promoted from the survivors\' replicas');
    // Only the victim's in-flight window is fetched twice (docs/mesh.md "Crashes"): a page first requested by it.
    const outside = twice.filter((u) => {
      const rs = web.requests().filter((r) => r.url === u).sort((x, y) => x.start - y.start);
      return rs.length > 2 || agentOf(rs[0]!.userAgent) !== victim.name || rs[0]!.start > killedAt + 100;
    });
    assert.deepEqual(outside.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], 'pages fetched twice are the victim\'s in-flight window only');
    assert.deepEqual(checkPoliteness(web.requests(), MIN_DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held through the crash');
  } finally {
    for (const a of agents) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
    await web.close();
  }
}

test('replicated frontier, per-host chains: one of four agents SIGKILLed for good mid-crawl, nothing lost (its queue alone held the rest of its chains)', async (t) => {
  await killOneForGood(t, 'chains', await chainWeb(48, 12), [], 0.05);
});

test('replicated frontier, dense web: one of four agents SIGKILLed for good mid-crawl, every page reachable from the seeds is fetched', async (t) => {
  await killOneForGood(t, 'dense', await meshWeb(100, 6), [], 0.05);
});
