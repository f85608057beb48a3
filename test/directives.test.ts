// HTML and header directives in a real crawl (docs/standards.md): meta robots,
// X-Robots-Tag, rel=nofollow, rel=canonical, meta refresh, charset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSyntheticWeb } from '../bench/web/index.js';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { tempDir } from './helpers.js';

const page = (body: string, head = '') => `<!doctype html><html><head>${head}</head><body>${body}</body></html>`;

test('directives: noindex stored but flagged, nofollow (meta, header, rel) not followed, canonical and refresh followed', async () => {
  const pages: Record<string, { headers?: Record<string, string>; body: string | Uint8Array }> = {
    '/': { body: page('<a href="/noindex">a</a> <a href="/meta-nofollow">b</a> <a href="/header-nofollow">c</a> <a rel="nofollow" href="/rel-nofollow-target">d</a> <a href="/with-canonical">e</a> <a href="/refresh">f</a> <a href="/latin1">g</a> <a href="/other-token">h</a>') },
    '/noindex': { body: page('<a href="/from-noindex">x</a>', '<meta name="robots" content="noindex">') },
    '/meta-nofollow': { body: page('<a href="/never-1">x</a>', '<meta name="ROBOTS" content="nofollow">') },
    '/header-nofollow': { headers: { 'x-robots-tag': 'nofollow' }, body: page('<a href="/never-2">x</a>') },
    '/other-token': { body: page('<a href="/never-3">x</a>', '<meta name="ubicrawl" content="none">') },
    '/with-canonical': { body: page('text', '<link rel="canonical" href="/canonical-target">') },
    '/refresh': { body: page('moved', '<meta http-equiv="refresh" content="0; url=/refresh-target">') },
    // windows-1252 page: the link path holds é (0xE9), which must come out as %C3%A9 (UTF-8) in the URL.
    '/latin1': { headers: { 'content-type': 'text/html; charset=windows-1252' }, body: Buffer.concat([Buffer.from('<a href="/caf'), Buffer.from([0xe9]), Buffer.from('">x</a>')]) },
  };
  for (const p of ['/from-noindex', '/canonical-target', '/refresh-target', '/caf%C3%A9']) pages[p] = { body: page('leaf') };
  const web = await startSyntheticWeb({
    hosts: 1, pagesPerHost: 1,
    intercept: (req) => {
      if (req.path === '/robots.txt') return { status: 404 };
      const p = pages[req.path];
      if (!p) return { status: 404, body: 'no' };
      return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8', ...p.headers }, body: p.body };
    },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: [web.url(web.hostName(0), '/')], untilIdle: true, minDelayMs: 0, delayFactor: 0,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent',
    });
    const summary = await agent.done;
    const fetched = new Set(web.requests().map((r) => r.path));
    for (const p of ['/noindex', '/from-noindex', '/with-canonical', '/canonical-target', '/refresh', '/refresh-target', '/caf%C3%A9']) {
      assert.ok(fetched.has(p), `${p} fetched`);
    }
    for (const p of ['/never-1', '/never-2', '/never-3', '/rel-nofollow-target']) assert.ok(!fetched.has(p), `${p} not followed`);
    const d = summary.directives as Record<string, number>;
    assert.equal(d.noindex, 2, 'noindex and "none" flagged');
    assert.equal(d.nofollowPages, 3);
    assert.equal(d.canonicals, 1);
    assert.equal(d.metaRefreshes, 1);
    assert.equal((summary.rejected as Record<string, number>)['rel-nofollow'], 1);
  } finally {
    await web.close();
  }
});
