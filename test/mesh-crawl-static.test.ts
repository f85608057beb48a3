// Three agent processes on loopback crawl one synthetic web as a static mesh
// (helpers in mesh-agents.ts): every agent is in every ring before the seeds,
// so no host changes hands. The join and the leave mid-crawl are in
// test/mesh-crawl.test.ts; this case was split from it so that it runs among the
// other mesh files rather than alone (scripts/test.js SENSITIVE), as
// test/join-order.test.ts's static meshes do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { checkPoliteness } from '../bench/web/index.js';
import { MIN_DELAY, agentOf, pageCounts, startMeshAgents, waitMembers, seedThroughApi, meshWeb } from './mesh-agents.js';

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
