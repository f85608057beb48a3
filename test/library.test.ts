// The package's public API (src/index.ts), imported as a user would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ubicrawl from '../src/index.js';

test('library: the public API is exported and works', () => {
  const r = ubicrawl.RobotsTxt.parse('User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: http://h/s.xml\n');
  assert.equal(r.isAllowed('http://h/private/x', 'ubicrawl/0.1'), false);
  assert.equal(r.isAllowed('http://h/public', 'ubicrawl/0.1'), true);
  assert.equal(r.crawlDelay('ubicrawl'), 2);
  assert.deepEqual(r.sitemaps, ['http://h/s.xml']);
  assert.equal(ubicrawl.normalizeUrl('HTTP://Example.com:80/a/../b?utm_source=x#f'), 'http://example.com/b');
  assert.equal(ubicrawl.normalizeUrl('not a url'), null);
  assert.equal(typeof ubicrawl.simhash64('some text here'), 'bigint');
  assert.equal(ubicrawl.hamming64(0n, 7n), 3);
  const sm = ubicrawl.parseSitemap('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://h/a</loc></url></urlset>', 'http://h/sitemap.xml');
  assert.deepEqual(sm.urls.map((u) => u.loc), ['http://h/a']);
  const ring = new ubicrawl.HostRing();
  ring.add('agent-a'); ring.add('agent-b');
  assert.ok(['agent-a', 'agent-b'].includes(ring.ownerOf('example.com')!));
  assert.equal(typeof ubicrawl.startAgent, 'function');
});
