// Page processing (src/crawl/page.ts) built alone: a fetched response goes to
// the WARC file (a real one, src/crawl/archive.ts), is parsed for links through
// admission, and is handed to completion with its fetch record; completion and
// the failure path are recorded by the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { HostState, QueuedUrl } from '../src/frontier/frontier.js';
import type { FetchResponse } from '../src/fetch/fetcher.js';
import { RecentErrors } from '../src/api/history.js';
import { SitemapGrants } from '../src/sitemap/grants.js';
import { PageProcessor } from '../src/crawl/page.js';
import { Archive } from '../src/crawl/archive.js';
import { Sitemaps } from '../src/crawl/sitemaps.js';
import type { FetchRecord } from '../src/crawl/records.js';
import { newHostData, type Candidate, type HostData } from '../src/crawl/candidate.js';
import { silentLogger } from '../src/util/log.js';
import { pipelineRig, type PipelineRig } from './pipeline-fixtures.js';
import { tempDir } from './helpers.js';

function response(url: string, status: number, headers: [string, string][], body = ''): FetchResponse {
  const b = Buffer.from(body);
  return {
    ok: true, url, status, statusText: 'OK', httpVersion: '1.1', method: 'GET', requestHeaders: [['user-agent', 'ubicrawl']], responseHeaders: headers,
    body: b, rawBody: b, rawBytes: b.length, truncated: false, rawTruncated: false, startedAt: new Date(), durationMs: 3,
    header: (n: string) => headers.find(([k]) => k === n)?.[1],
  };
}

async function rig(tune?: Parameters<typeof pipelineRig>[0]) {
  const r: PipelineRig = await pipelineRig((c) => { c.dataDir = tempDir('ubicrawl-page-'); tune?.(c); });
  const finished: { url: string; links: string[]; record: FetchRecord }[] = [];
  const failed: string[] = [];
  const archive = new Archive({ config: r.config, stats: r.stats, log: silentLogger, onFatal: (e) => r.fatal.push(e) });
  await archive.open('pagetest0000');
  const sitemaps = new Sitemaps({ config: r.config, grants: new SitemapGrants(r.store.meta), admission: r.admission, recrawl: undefined, stats: r.stats, log: silentLogger, route: async () => {} });
  const pages = new PageProcessor({
    config: r.config, admission: r.admission, archive, sitemaps, dedup: undefined, fingerprinter: undefined, recrawl: undefined,
    stats: r.stats, metrics: r.metrics, recentErrors: new RecentErrors(), log: silentLogger, token: 'ubicrawl',
    completion: { finish: async (q: QueuedUrl, _h: HostState<HostData>, links: Candidate[], record: FetchRecord) => { finished.push({ url: q.url, links: links.map((l) => l.url), record }); } },
    linkGraph: () => undefined,
    recordFailure: async (q: QueuedUrl) => { failed.push(q.url); },
  });
  r.admission.asSeed(r.admission.candidate('http://seed.example/', undefined, 0)!);
  const host = { name: 'seed.example', data: newHostData() } as unknown as HostState<HostData>;
  const queued = (url: string, depth = 0): QueuedUrl => ({ url, depth, kind: 'page', hops: 0 }) as unknown as QueuedUrl;
  return { r, pages, archive, finished, failed, host, queued };
}

test('page: an HTML page is archived (response + request), its in-scope links go to completion with the record', async () => {
  const { r, pages, archive, finished, host, queued } = await rig();
  try {
    const html = '<html><body><a href="/a">a</a> <a href="http://other.example/">x</a> <a href="b#frag">b</a></body></html>';
    await pages.process(queued('http://seed.example/'), host, response('http://seed.example/', 200, [['content-type', 'text/html']], html));
    assert.equal(finished.length, 1);
    assert.deepEqual(finished[0]!.links, ['http://seed.example/a', 'http://seed.example/b']);
    assert.equal(finished[0]!.record.status, 200);
    assert.ok(finished[0]!.record.warc?.filename.endsWith('.warc.gz'), 'the record names its WARC record');
    assert.equal(r.stats.warcRecords, 2);
    assert.equal(r.stats.rejected['out-of-scope'], 1);
    assert.equal(host.data.pages, 1);
    await archive.close();
    assert.ok(readdirSync(join(r.config.dataDir, 'warc')).some((f) => f.endsWith('.cdxj')), 'the closed file is indexed');
  } finally { await r.close(); }
});

test('page: a redirect\'s target is a link of the page; a failure goes to the failure path; a refused type is parsed but not archived', async () => {
  const { r, pages, archive, finished, failed, host, queued } = await rig((c) => { c.crawlScope.acceptTypes = ['application/pdf']; });
  try {
    await pages.process(queued('http://seed.example/old', 1), host, response('http://seed.example/old', 301, [['location', '/new']]));
    assert.deepEqual(finished[0]!.links, ['http://seed.example/new']);
    assert.equal(r.stats.redirects, 1);
    await pages.process(queued('http://seed.example/gone', 1), host, { ok: false, url: 'http://seed.example/gone', kind: 'reset', message: 'reset', startedAt: new Date(), durationMs: 1 });
    assert.deepEqual(failed, ['http://seed.example/gone']);
    const records = r.stats.warcRecords;
    await pages.process(queued('http://seed.example/page', 1), host, response('http://seed.example/page', 200, [['content-type', 'text/html']], '<a href="/c">c</a>'));
    assert.equal(finished[1]!.record.skipped, 'type-not-accepted');
    assert.deepEqual(finished[1]!.links, ['http://seed.example/c'], 'links are still followed (docs/scope.md)');
    assert.equal(r.stats.warcRecords, records, 'nothing archived');
    await archive.close();
  } finally { await r.close(); }
});
