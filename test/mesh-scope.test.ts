// The default scope across a mesh (docs/scope.md "In a mesh"): a seed given to
// one agent keeps the whole mesh in the seed's registrable domain, although
// the other agents were never told the seed: each applies the scope where it
// finds a link, by the unit of the page it found it on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { tempDir } from './helpers.js';
import { agentOf, pageCounts, startMeshAgents, waitMembers, seedThroughApi } from './mesh-agents.js';

/** Each page of the web (all hosts in web.test) also links to hosts of other registrable domains, served by the same server. */
async function webWithOutsideLinks(): Promise<SyntheticWeb> {
  let port = 0;
  const outside = (k: number) => `http://x${k}.elsewhere${k}.test:${port}/`;
  const web: SyntheticWeb = await startSyntheticWeb({
    seed: 21, hosts: 9, pagesPerHost: 5, outLinks: 4, crossHostShare: 0.5, pageBytes: { min: 500, max: 900 }, sitemap: false,
    intercept: (req) => {
      if (req.path === '/robots.txt') return null;
      const k = req.path.length % 3;
      if (req.hostIndex < 0) {
        // A page outside the seed's domain, linking back in and further out.
        return { status: 200, headers: { 'content-type': 'text/html' }, body: `<a href="${web.url(0, '/')}">in</a><a href="${outside(k + 1)}">out</a>` };
      }
      const info = web.describe(`http://${req.host}:${port}${req.path}`);
      if (!info || info.status !== 200) return null;
      const links = info.links.map((l) => `<a href="${l.url}">l</a>`).join('');
      return { status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body>${links}<a href="${outside(k)}">elsewhere</a></body></html>` };
    },
  });
  port = web.port;
  return web;
}

test('3 agents, the seed given to one that does not own its host: only the seed\'s registrable domain is fetched, all of it, by its owners', async () => {
  const web = await webWithOutsideLinks();
  const dir = tempDir();
  try {
    // The outside hosts resolve to the web as well: nothing but the scope keeps the agents away from them.
    const resolveOutside = ['--resolve', `*.test:${web.port}:127.0.0.1`];
    const { agents: [a0, a1, a2], apis } = await startMeshAgents(web, dir, 3, resolveOutside);
    for (const p of apis) await waitMembers(p, 3);
    // A host a2 does not own (a2 answers 404 for an unknown host of its own).
    let seedHost = -1;
    for (let i = 0; i < web.hostCount && seedHost < 0; i++) {
      const res = await fetch(`http://127.0.0.1:${apis[2]!}/hosts/${web.hostName(i)}`);
      if (res.status === 200 && !((await res.json()) as { local: boolean }).local) seedHost = i;
    }
    assert.ok(seedHost >= 0, 'a host a2 does not own');
    const seed = web.url(seedHost, '/');
    await seedThroughApi(apis[2]!, [seed], join(dir, 'a2'));
    const results = await Promise.all([a0.done, a1.done, a2.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));

    const outsideRequests = web.requests().filter((r) => !r.host.endsWith('.web.test'));
    assert.deepEqual(outsideRequests.slice(0, 5).map((r) => `${r.host}${r.path}`), [], 'no request outside web.test, robots.txt included');
    const counts = pageCounts(web);
    const expected = web.reachable({ seeds: [seed] }).reachableAllowed;
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every page of the domain reachable from the seed');
    const fetchers = new Set(web.requests().map((r) => agentOf(r.userAgent)));
    assert.ok(fetchers.size >= 2, `hosts of the domain fetched by several agents (${[...fetchers].join(' ')})`);
  } finally {
    await web.close();
  }
});

test('--max-depth 2 on a chain of pages that crosses hosts owned by different agents stops exactly at depth 2', async () => {
  let port = 0;
  // The chain: /c/k on host chain[k] links to /c/k+1 on host chain[k+1]; chosen once the owners are known.
  const chain: string[] = [];
  const web: SyntheticWeb = await startSyntheticWeb({
    seed: 22, hosts: 9, pagesPerHost: 2, sitemap: false,
    intercept: (req) => {
      const m = /^\/c\/(\d+)$/.exec(req.path);
      if (!m) return null;
      const next = Number(m[1]) + 1;
      const link = next < chain.length ? `<a href="http://${chain[next]}:${port}/c/${next}">next</a>` : '';
      return { status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body>${link}</body></html>` };
    },
  });
  port = web.port;
  const dir = tempDir();
  try {
    const depth = ['--max-depth', '2'];
    const { agents: [a0, a1, a2], apis } = await startMeshAgents(web, dir, 3, depth);
    for (const p of apis) await waitMembers(p, 3);
    // Who owns each host: the owner answers 404 for a host of its own it knows nothing about.
    const ownerOf = async (host: string): Promise<number> => {
      for (let i = 0; i < 3; i++) if ((await fetch(`http://127.0.0.1:${apis[i]!}/hosts/${host}`)).status === 404) return i;
      return -1;
    };
    const owners = new Map<string, number>();
    for (let i = 0; i < web.hostCount; i++) owners.set(web.hostName(i), await ownerOf(web.hostName(i)));
    // Each hop to a host of another agent.
    for (const h of owners.keys()) if (chain.length < 4 && (chain.length === 0 || owners.get(h) !== owners.get(chain[chain.length - 1]!))) chain.push(h);
    assert.equal(chain.length, 4, `a chain across agents (owners ${JSON.stringify([...owners])})`);
    await seedThroughApi(apis[2]!, [`http://${chain[0]}:${port}/c/0`], join(dir, 'a2'));
    const results = await Promise.all([a0.done, a1.done, a2.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const pages = web.requests().filter((r) => r.path.startsWith('/c/'));
    assert.deepEqual(pages.map((r) => `${r.host}${r.path}`).sort(), [0, 1, 2].map((k) => `${chain[k]}/c/${k}`).sort(), 'the seed and two hops, nothing deeper');
    assert.deepEqual(web.requests().filter((r) => r.host === chain[3]).map((r) => r.path), [], 'not even robots.txt of the host at depth 3');
    assert.ok(new Set(pages.map((r) => agentOf(r.userAgent))).size >= 2, 'fetched by different agents');
  } finally {
    await web.close();
  }
});
