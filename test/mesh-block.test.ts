// A takedown across a mesh (docs/scope.md "Block list"): `ubicrawl block` on
// one agent during a 3-agent crawl stops every agent's requests to the host
// within a few seconds (the web's request log, with its timestamps), its owner
// drops its queued URLs, and an agent that joins afterwards holds the same
// policy and refuses the host too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { spawnAgent, tempDir } from './helpers.js';
import { agentOf, listeningOn, seedThroughApi, startAgentProcess, startMeshAgents, waitFor, waitMembers } from './mesh-agents.js';
import { readFileSync } from 'node:fs';
import type { PolicyReport } from '../src/api/backend.js';

/** Propagation (a gossip message, a few heartbeats at most) plus the fetch in flight at the block. */
const STOPPED_WITHIN_MS = 3_000;

test('ubicrawl block on one agent during a 3-agent crawl: within seconds no agent requests the host, its queue is gone, a later joiner honours it', async () => {
  const web = await startSyntheticWeb({ seed: 41, hosts: 8, pagesPerHost: 80, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 500, max: 1000 }, sitemap: false });
  const dir = tempDir();
  try {
    const { agents, port, apis } = await startMeshAgents(web, dir, 3);
    for (const p of apis) await waitMembers(p, 3);
    await seedThroughApi(apis[0]!, web.roots(), join(dir, 'a0'));
    const hostInfo = async (api: number, host: string) => {
      const res = await fetch(`http://127.0.0.1:${api}/hosts/${host}`);
      return res.status === 200 ? await res.json() as { local: boolean; queue: { depth: number } } : null;
    };
    // A host a0 does not own, being crawled with URLs queued: the block is made away from its owner.
    let target = '';
    let owner = -1;
    await waitFor(() => web.requests().filter((r) => r.path.startsWith('/p/')).length > 20, 30_000, 'the crawl under way');
    for (let tries = 0; !target && tries < 100; tries++) {
      for (let i = 0; i < web.hostCount && !target; i++) {
        const host = web.hostName(i);
        for (let a = 1; a < 3; a++) {
          const info = await hostInfo(apis[a]!, host);
          if (info?.local && info.queue.depth >= 5) { target = host; owner = a; break; }
        }
      }
      if (!target) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(target, 'a host owned by a1 or a2 with URLs queued');
    const onTarget = () => web.requests().filter((r) => r.host === target);

    const cli = spawnAgent(['block', target, '--reason', 'takedown 42', '--api', `127.0.0.1:${apis[0]!}`, '--data-dir', join(dir, 'a0')]);
    const { code } = await cli.closed;
    const blockedAt = Date.now();
    assert.equal(code, 0, cli.stderr);
    assert.match(cli.stdout, /takedown 42/);

    // Its owner drops the queue once its policy has the block.
    const deadline = Date.now() + STOPPED_WITHIN_MS + 5_000;
    let depth = Infinity;
    while (Date.now() < deadline) {
      depth = (await hostInfo(apis[owner]!, target))?.queue.depth ?? 0;
      if (depth === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(depth, 0, `no URL of ${target} queued on its owner a${owner}`);

    // An agent joins afterwards, while the others still crawl.
    const a3 = startAgentProcess(web, dir, 'a3', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, '--api', '127.0.0.1:0']);
    agents.push(a3);
    const api3 = (await listeningOn(a3, { api: true })).api;
    const policyOf = async (api: number) => (await (await fetch(`http://127.0.0.1:${api}/policy`)).json()) as PolicyReport;
    const p0 = await policyOf(apis[0]!);
    let p3 = await policyOf(api3);
    for (let i = 0; i < 50 && p3.summary !== p0.summary; i++) { await new Promise((r) => setTimeout(r, 100)); p3 = await policyOf(api3); }
    assert.equal(p3.summary, p0.summary, 'the joiner holds the policy in force');
    assert.deepEqual(p3.blocks.map((b) => [b.kind, b.value, b.reason]), [['domain', target, 'takedown 42']]);
    const token3 = readFileSync(join(dir, 'a3', 'api.token'), 'utf8').trim();
    const seeded = await (await fetch(`http://127.0.0.1:${api3}/seeds`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token3}` }, body: JSON.stringify({ urls: [`http://${target}:${web.port}/`] }),
    })).json() as { rejected: Array<{ reason: string }> };
    assert.deepEqual(seeded.rejected.map((r) => r.reason), ['blocked by the crawl policy']);
    // Every member announces the same policy (GET /policy, from heartbeats).
    let members: PolicyReport['members'] = [];
    for (let i = 0; i < 100; i++) {
      members = (await policyOf(apis[0]!)).members;
      if (members.length === 4 && members.every((m) => m.same)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(members.map((m) => m.same), [true, true, true, true], JSON.stringify(members));

    // Watched a while longer: the crawl goes on elsewhere, nothing reaches the blocked host.
    const watchUntil = Math.max(Date.now() + 1_000, blockedAt + STOPPED_WITHIN_MS + 2_000);
    while (Date.now() < watchUntil) await new Promise((r) => setTimeout(r, 100));
    const after = onTarget().filter((r) => r.start > blockedAt);
    const last = after.length ? Math.max(...after.map((r) => r.start)) - blockedAt : 0;
    assert.ok(last <= STOPPED_WITHIN_MS, `requests to ${target} after the block: ${after.map((r) => `${agentOf(r.userAgent)} +${Math.round(r.start - blockedAt)}ms ${r.path}`).join(', ')}`);
    assert.ok(web.requests().some((r) => r.start > blockedAt + STOPPED_WITHIN_MS && r.host !== target), 'the crawl went on meanwhile');
    assert.deepEqual(onTarget().filter((r) => agentOf(r.userAgent) === 'a3').map((r) => r.path), [], 'nothing from the joiner');
    process.stderr.write(`# blocked ${target} (owner a${owner}); requests after the block: ${after.length}, the last +${Math.round(last)} ms\n`);
    for (const a of agents) a.proc.kill('SIGKILL');
    await Promise.all(agents.map((a) => a.done));
  } finally {
    await web.close();
  }
});
