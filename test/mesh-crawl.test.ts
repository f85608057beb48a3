// Several agent processes on loopback crawl one synthetic
// web as a mesh (helpers in mesh-agents.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { checkPoliteness } from '../bench/web/index.js';
import { MIN_DELAY, startAgentProcess, agentOf, pageCounts, waitFor, listeningOn, startMeshAgents, waitMembers, seedThroughApi, meshWeb, whoFetched, membershipEvents } from './mesh-agents.js';

test('3 agents crawl a 300-host web: every page once, each host by one agent, per-host delay held across the mesh', async () => {
  const { web, dir, seeds, expected } = await meshWeb(300, 2);
  try {
    // All three agents first; seeds once every agent sees the whole mesh, so no host changes hands.
    const { agents: [a0, a1, a2], apis } = await startMeshAgents(web, dir, 3);
    for (const p of apis) await waitMembers(p, 3);
    await seedThroughApi(apis[2]!, web.roots(), join(dir, 'a2'));
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
test('a 4th agent joins mid-crawl and ends with about a quarter of the hosts; an agent leaves gracefully mid-crawl: nothing missed, nothing twice', async (t) => {
  const { web, dir, seeds, expected } = await meshWeb(200, 16);
  try {
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0']);
    const { mesh: port } = await listeningOn(a0);
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`]);
    const a2 = startAgentProcess(web, dir, 'a2', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--seed', seeds]);
    // A bound, not a target: the mesh forms in seconds, or half a minute on a loaded machine.
    await waitFor(() => pageCounts(web).size >= expected.size * 0.15, 120_000, 'a sixth of the crawl');
    const a3 = startAgentProcess(web, dir, 'a3', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--api', '127.0.0.1:0']);
    const { api: a3Api } = await listeningOn(a3, { api: true });
    await waitMembers(a3Api, 4);
    // Its share of the ring once it is in: about a quarter (HostRing balance, 2048 points each).
    const st = await (await fetch(`http://127.0.0.1:${a3Api}/status`)).json() as { mesh: { members: Array<{ self: boolean; share: number }> } };
    const share = st.mesh.members.find((m) => m.self)!.share;
    assert.ok(share > 0.18 && share < 0.32, `the 4th agent's share of the ring is about a quarter (${share.toFixed(3)})`);
    // The leave comes once the newcomer crawls, past half of the crawl.
    await waitFor(() => pageCounts(web).size >= expected.size * 0.55 && web.requests().some((r) => agentOf(r.userAgent) === 'a3'), 120_000, 'half of the crawl');
    a1.proc.kill('SIGTERM'); // graceful leave: hands its hosts over
    const results = await Promise.all([a0.done, a1.done, a2.done, a3.done]);
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
    assert.ok(a3Hosts.size >= activeHosts.size * 0.18, `the 4th agent took over a fair share of the hosts (${a3Hosts.size} of ${activeHosts.size})`);
    assert.deepEqual(checkPoliteness(web.requests(), MIN_DELAY, { toleranceMs: 15 }).slice(0, 5), [], 'per-host delay held through handoffs');
  } finally {
    await web.close();
  }
});
