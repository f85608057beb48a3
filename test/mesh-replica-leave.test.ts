// A graceful leaver passes on the standby replicas it holds for other owners
// (docs/mesh.md "Replicated frontier", "A holder that leaves"). Four agents on
// a web of per-host chains (only the queue knows a chain's next page): the
// holder of one owner's replicas leaves gracefully mid-crawl while that owner
// cannot re-send its queue to its new successor (stopped, as an owner whose
// ring-change pass lags under load: 16 s in the mesh soak, docs/performance.md
// "Mesh soak"), and the owner is then SIGKILLed for good. Every page is still
// fetched, none twice outside the owner's in-flight window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkPoliteness } from '../bench/web/index.js';
import { ZonedRing } from '../src/assign/zones.js';
import { hostOf } from '../src/url/normalize.js';
import { DEFAULT_MESH_ADMISSION } from '../src/config.js';
import { MIN_DELAY, agentOf, chainWeb, pageCounts, seedThroughApi, startMeshAgents, waitFor, whoFetched, membershipEvents, type AgentProc } from './mesh-agents.js';

/** How long before the owner stopped a page it fetched may lack its replica seen entry at its successor. */
const IN_FLIGHT_MS = 3000;

/** An agent's peer id, from its start-up line. */
function peerIdOf(a: AgentProc): string {
  const id = /"id":"([1-9A-Za-z]+)"[^\n]*"mesh node started"/.exec(a.log())?.[1];
  assert.ok(id, `${a.name}: no peer id in its log`);
  return id;
}

/** Whether `name` is leaving in the view of the agent serving its API on `api`. */
async function seesLeaving(api: number, id: string): Promise<boolean> {
  try {
    const st = await (await fetch(`http://127.0.0.1:${api}/status`)).json() as { mesh: { members: Array<{ id: string; state: string }> } };
    return st.mesh.members.some((m) => id.endsWith(m.id) && m.state === 'leaving');
  } catch { return false; }
}

test('replicated frontier: the holder of an owner\'s replicas leaves gracefully, the owner is SIGKILLed before it re-sent its queue: nothing lost', async (t) => {
  const pages = 16;
  const { web, dir, expected } = await chainWeb(16, pages);
  let agents: AgentProc[] = [];
  try {
    const started = await startMeshAgents(web, dir, 4);
    agents = started.agents;
    const ids = agents.map(peerIdOf);
    // The ring every agent will have once all four are in (capacity 1 each, no zones: src/assign/zones.ts).
    const ring = new ZonedRing({ maxCapacity: DEFAULT_MESH_ADMISSION.maxCapacity });
    for (const id of ids) ring.add(id, 1);
    const owner = agents[1]!;
    const ownerHosts = [...new Set([...expected].map(hostOf))].filter((h) => ring.ownerOf(h) === ids[1]);
    // The holder: the agent next after the owner for most of the owner's hosts (replicas 1, the default).
    const bySucc = new Map<string, string[]>();
    for (const h of ownerHosts) { const s = ring.nextOwnersOf(h, 2)[1]!; bySucc.set(s, [...(bySucc.get(s) ?? []), h]); }
    const [holderId, atRisk] = [...bySucc].sort((x, y) => y[1].length - x[1].length)[0]!;
    const holder = agents[ids.indexOf(holderId)]!;
    const survivors = agents.filter((a) => a !== owner && a !== holder);
    t.diagnostic(`owner ${owner.name} (${ownerHosts.length} hosts), holder ${holder.name} of ${atRisk.length} of them; survivors ${survivors.map((a) => a.name).join(' ')}`);

    // Seeded at the owner: its own roots are known to nobody else (another seeding agent would send them
    // again when the owner dies, URLs it acknowledged last, and the chains would start over from their roots).
    await seedThroughApi(started.apis[1]!, web.roots(), `${dir}/a1`);
    // Mid-crawl: the owner has fetched a few pages of a chain the holder holds the queue of, and not its end.
    const byOwnerOn = (h: string) => web.requests().filter((r) => r.host === h && r.url && !r.url.endsWith('/robots.txt') && agentOf(r.userAgent) === owner.name).length;
    await waitFor(() => atRisk.some((h) => byOwnerOn(h) >= 4 && byOwnerOn(h) < pages - 6), 60_000, 'the owner mid-way through a chain the holder holds');

    // The owner cannot re-send its queue to its new successor: stopped (a lagging ring-change pass), then killed.
    const stoppedAt = Date.now();
    owner.proc.kill('SIGSTOP');
    holder.proc.kill('SIGTERM');
    // Shortly after the holder announced its leave (a survivor sees it leaving), the owner is gone for good.
    const api = started.apis[agents.indexOf(survivors[0]!)]!;
    for (const deadline = Date.now() + 30_000; !await seesLeaving(api, holderId);) {
      assert.ok(Date.now() < deadline, 'a survivor never saw the holder leave');
      await new Promise((r) => setTimeout(r, 50));
    }
    owner.proc.kill('SIGKILL');

    const results = await Promise.all(survivors.map((a) => a.done));
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const left = await holder.done;
    assert.equal(left.signal, null, 'the holder left gracefully');
    assert.equal((await owner.done).signal, 'SIGKILL');

    const counts = pageCounts(web);
    const missed = [...expected].filter((u) => !counts.has(u));
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    const passed = /"passedOnQueued": (\d+)/.exec(left.err + left.out)?.[1] ?? '?';
    const promoted = results.map((r) => /"replicatedFrontier": \{[^}]*?"promoted": (\d+)/.exec(r.err + r.out)?.[1] ?? '?');
    t.diagnostic(`${expected.size} pages, ${counts.size} fetched, ${missed.length} missed (${missed.filter((u) => atRisk.includes(hostOf(u))).length} on the holder's hosts of the owner); ` +
      `${twice.length} fetched twice; the holder passed on ${passed} queued URLs; promoted per survivor: ${promoted.join(' ')}`);
    // Who crawled the holder's hosts of the owner after the owner stopped (the chains only its queue and the holder's replicas knew).
    const after = atRisk.map((h) => `${h}: ${[...new Set(web.requests().filter((r) => r.host === h && r.url && r.start > stoppedAt).map((r) => agentOf(r.userAgent)))].join('+') || 'nobody'}`);
    t.diagnostic(`after the stop: ${after.join('; ')}`);
    assert.deepEqual(missed.slice(0, 5).map((u) => `${u} ${whoFetched(web, u)}`), [], `every page reachable from the seeds is fetched\n${membershipEvents(agents)}`);
    // Only the owner's in-flight window is fetched twice (docs/mesh.md "Crashes"): a page it requested first,
    // shortly before it stopped (its replica seen entry not yet acknowledged; a generous bound for a loaded machine).
    const outside = twice.filter((u) => {
      const rs = web.requests().filter((r) => r.url === u).sort((x, y) => x.start - y.start);
      return rs.length > 2 || agentOf(rs[0]!.userAgent) !== owner.name || rs[0]!.start > stoppedAt + 100 || rs[0]!.start < stoppedAt - IN_FLIGHT_MS;
    });
    assert.deepEqual(outside.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], 'pages fetched twice are the owner\'s in-flight window only');
    assert.deepEqual(checkPoliteness(web.requests(), MIN_DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held');
  } finally {
    for (const a of agents) {
      if (a.proc.exitCode === null && a.proc.signalCode === null) { a.proc.kill('SIGCONT'); a.proc.kill('SIGKILL'); }
    }
    await web.close();
  }
});
