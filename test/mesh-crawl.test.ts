// Several agent processes on loopback crawl one synthetic web as a mesh
// whose membership changes mid-crawl (helpers in mesh-agents.ts). The static
// mesh of three is test/mesh-crawl-static.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkPoliteness } from '../bench/web/index.js';
import { MIN_DELAY, startAgentProcess, agentOf, pageCounts, waitFor, listeningOn, waitMembers, meshWeb, whoFetched, membershipEvents } from './mesh-agents.js';

// docs/mesh.md "Handoff protocol": a host that changes hands is not contacted by its new
// owner before the previous owner's "handoff complete" marker (after its seen entries).
test('a 4th agent joins mid-crawl and ends with about a quarter of the hosts; an agent leaves gracefully mid-crawl: nothing missed, nothing twice', async (t) => {
  // 200 hosts × 12 pages (2,400): the join comes at a sixth of the crawl and is complete at about half of it, the
  // leave once the joiner crawls, past half; with 16 pages a host (3,200) the same phases came at the same shares
  // of the crawl (a3 in at 42 % against 49 % with 10 pages, the leave at 55 % against 78 %, load 12–16), a third
  // more pages to crawl. That the leave fell mid-crawl is asserted below, not assumed (docs/performance.md "Test suite").
  const { web, dir, seeds, expected } = await meshWeb(200, 12);
  const t0 = Date.now();
  const phases: string[] = [];
  const phase = (what: string) => phases.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)}s (${pageCounts(web).size} of ${expected.size} pages)`);
  try {
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0']);
    const { mesh: port } = await listeningOn(a0);
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`]);
    const a2 = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--seed', seeds]);
    // A bound, not a target: the mesh forms in seconds, or half a minute on a loaded machine.
    await waitFor(() => pageCounts(web).size >= expected.size * 0.15, 120_000, 'a sixth of the crawl');
    phase('a3 starts');
    const a3 = startAgentProcess(web, dir, 'a3', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--api', '127.0.0.1:0']);
    const { api: a3Api } = await listeningOn(a3, { api: true });
    await waitMembers(a3Api, 4);
    phase('a3 in');
    // Its share of the ring once it is in: about a quarter (HostRing balance, 2048 points each).
    const st = await (await fetch(`http://127.0.0.1:${a3Api}/status`)).json() as { mesh: { members: Array<{ self: boolean; share: number }> } };
    const share = st.mesh.members.find((m) => m.self)!.share;
    assert.ok(share > 0.18 && share < 0.32, `the 4th agent's share of the ring is about a quarter (${share.toFixed(3)})`);
    // The leave comes once the newcomer crawls, past half of the crawl.
    await waitFor(() => pageCounts(web).size >= expected.size * 0.55 && web.requests().some((r) => agentOf(r.userAgent) === 'a3'), 120_000, 'half of the crawl');
    phase('a1 leaves');
    const leftAt = Date.now();
    a1.proc.kill('SIGTERM'); // graceful leave: hands its hosts over
    void a1.done.then(() => phase('a1 gone'));
    const results = await Promise.all([a0.done, a1.done, a2.done, a3.done]);
    const lastPage = Math.max(...web.requests().map((r) => r.start));
    phases.push(`last page ${((lastPage - t0) / 1000).toFixed(1)}s`);
    phase('end');
    t.diagnostic(`join/leave phases: ${phases.join(', ')}`);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const counts = pageCounts(web);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    const twice = [...counts].filter(([, n]) => n > 1).map(([u]) => u);
    assert.deepEqual(twice.slice(0, 4).map((u) => `${u} ${whoFetched(web, u)}`), [], `no page fetched twice (${twice.length} were)\n${membershipEvents([a0, a1, a2, a3])}`);
    // The newcomer's share of the hosts crawled once it was in (about a quarter, a third once a1 left).
    const a3Reqs = web.requests().filter((r) => agentOf(r.userAgent) === 'a3');
    const since = Math.min(...a3Reqs.map((r) => r.start));
    const a3Hosts = new Set(a3Reqs.map((r) => r.host));
    const activeHosts = new Set(web.requests().filter((r) => r.start >= since).map((r) => r.host));
    t.diagnostic(`join/leave: ring share of the 4th agent ${share.toFixed(3)}; it crawled ${a3Hosts.size} of the ${activeHosts.size} hosts crawled after it joined`);
    // Mid-crawl: hosts a1 had crawled were crawled on by the others after it left (it handed them over).
    const a1Hosts = new Set(web.requests().filter((r) => agentOf(r.userAgent) === 'a1').map((r) => r.host));
    const takenOver = new Set(web.requests().filter((r) => r.start > leftAt && a1Hosts.has(r.host) && agentOf(r.userAgent) !== 'a1' && !r.path.startsWith('/robots')).map((r) => r.host));
    t.diagnostic(`after the leave, ${takenOver.size} of a1's ${a1Hosts.size} hosts were crawled on by the others`);
    assert.ok(takenOver.size > 0, 'the leave fell mid-crawl: the others crawled on hosts a1 had crawled');
    assert.ok(a3Hosts.size >= activeHosts.size * 0.18, `the 4th agent took over a fair share of the hosts (${a3Hosts.size} of ${activeHosts.size})`);
    assert.deepEqual(checkPoliteness(web.requests(), MIN_DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held through handoffs');
  } finally {
    await web.close();
  }
});
