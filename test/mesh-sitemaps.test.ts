// Sitemaps 0.90 "Sitemaps & Cross Submits" across a mesh: host X's robots.txt
// names a sitemap on host Y, so that sitemap may list X's URLs. X's owner reads
// the robots.txt, Y's owner fetches the sitemap: the grant must travel with the
// sitemap URL (wire GRANT_FLAG) for X's URLs in it to be crawled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { tempDir } from './helpers.js';
import { agentOf, pageCounts, startMeshAgents, waitMembers, seedThroughApi } from './mesh-agents.js';

test('Sitemaps 0.90 cross submits in a mesh: a grant learnt by one agent is honoured by the agent that fetches the sitemap', async () => {
  const HOSTS = 16;
  const xml = (urls: string[]) => `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${u}</loc></url>`).join('')}</urlset>`;
  const origin = (i: number) => web.url(web.hostName(i), '').replace(/\/$/, '');
  const web = await startSyntheticWeb({
    hosts: HOSTS, pagesPerHost: 1,
    intercept: (req) => {
      const i = req.hostIndex;
      const text = (body: string, type = 'text/plain') => ({ status: 200, headers: { 'content-type': type }, body });
      // Host i's robots.txt names a sitemap on the next host, which lists host i's /granted (and, ungranted, the host after).
      if (req.path === '/robots.txt') return text(`User-agent: *\nDisallow:\nSitemap: ${origin((i + 1) % HOSTS)}/maps/for-${i}.xml\n`);
      const m = /^\/maps\/for-(\d+)\.xml$/.exec(req.path);
      if (m) {
        const k = Number(m[1]);
        return text(xml([`${origin(k)}/granted`, `${origin((k + 2) % HOSTS)}/stolen`]), 'application/xml');
      }
      return text('<p>no links</p>', 'text/html');
    },
  });
  const dir = tempDir();
  try {
    const { agents: [a0, a1], apis } = await startMeshAgents(web, dir, 2, [], { sitemaps: true });
    for (const p of apis) await waitMembers(p, 2);
    await seedThroughApi(apis[0]!, web.roots(), join(dir, 'a0'));
    const results = await Promise.all([a0.done, a1.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));

    const counts = pageCounts(web);
    const granted = Array.from({ length: HOSTS }, (_, i) => `${origin(i)}/granted`);
    assert.deepEqual(granted.filter((u) => counts.get(u) !== 1), [], 'every granted URL fetched, once');
    assert.deepEqual([...counts.keys()].filter((u) => u.endsWith('/stolen')), [], 'a sitemap lists no other host without its grant');
    // The point of the test: pairs whose robots.txt reader and sitemap fetcher were different agents.
    const by = (host: number, path: string) => agentOf(web.requests().find((r) => r.host === web.hostName(host) && r.path === path)?.userAgent);
    const crossed = Array.from({ length: HOSTS }, (_, i) => i).filter((i) => by(i, '/robots.txt') !== by((i + 1) % HOSTS, `/maps/for-${i}.xml`));
    assert.ok(crossed.length >= 1, 'some grants crossed agents');
  } finally {
    await web.close();
  }
});
