// The link graph (docs/graph.md): outlinks in Heritrix's metadata-record form, the
// per-agent edge files, and `graph export` reproducing a known web's graph exactly
// across a 3-agent mesh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync, appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import type { InterceptResponse } from '../bench/web/types.js';
import { startMeshAgents, waitMembers, seedThroughApi } from './mesh-agents.js';
import { tempDir } from './helpers.js';
import { pageOutlinks, linkContext, redirectOutlink, outlinkFields, parseOutlinkValue } from '../src/graph/outlinks.js';
import { edgeLine, parseEdgeLine, readEdgeFile } from '../src/graph/edges.js';
import { exportGraph, numberGraph, hostGraph } from '../src/graph/export.js';
import { extractPage } from '../src/parse/html.js';
import { warcioRecordsVerified } from './warcio-verify.js';


test('outlinks: normalised, once each, Heritrix hop types and contexts', () => {
  const page = 'http://example.com/dir/';
  const html = `<a href="a.html">a</a><a href="A.html#x" rel="next  Prev">a2</a><a href="a.html#y">dup</a>
    <link rel="author" href="/me"><link rel=canonical href="/dir/"><iframe src="/frame"></iframe><area href="/ar">
    <meta http-equiv="refresh" content="0; url=/moved"><a href="HTTP://Example.COM:80/%7Efoo">x</a>`;
  const links = extractPage(Buffer.from(html), { url: page, contentType: 'text/html', robotsToken: 'ubicrawl' }).links;
  const out = pageOutlinks(page, links);
  assert.deepEqual(out.map((o) => `${o.url} ${o.hop} ${o.context}`), [
    'http://example.com/dir/a.html L a/@href',
    "http://example.com/dir/A.html L a[rel='next Prev']/@href",
    "http://example.com/me L link[rel='author']/@href",
    'http://example.com/frame E iframe/@src',
    'http://example.com/ar L area/@href',
    'http://example.com/moved R meta',
    'http://example.com/~foo L a/@href',
  ]);
  assert.equal(linkContext({ tag: 'canonical', rel: 'canonical' }), "link[rel='canonical']/@href");
  assert.deepEqual(redirectOutlink('http://example.com/r', '/t?q=1'), { url: 'http://example.com/t?q=1', hop: 'R', context: 'Location:' });
  assert.equal(redirectOutlink('http://example.com/r', '/r'), null);
  const fields = outlinkFields(out);
  assert.equal(fields[1]![0], 'outlink');
  assert.deepEqual(parseOutlinkValue(fields[1]![1]), out[1]);
});

test('edge lines round-trip; a torn last gzip member loses only its own lines', () => {
  const outs = [{ url: 'http://a.test/x', hop: 'L' as const, context: '' }, { url: 'http://b.test/', hop: 'R' as const, context: '' }];
  const line = edgeLine('http://a.test/', outs);
  assert.equal(line, 'http://a.test/\tLhttp://a.test/x Rhttp://b.test/\n');
  assert.deepEqual(parseEdgeLine(line.slice(0, -1)), { source: 'http://a.test/', targets: [{ hop: 'L', url: 'http://a.test/x' }, { hop: 'R', url: 'http://b.test/' }] });
  assert.deepEqual(parseEdgeLine('http://leaf.test/\t'), { source: 'http://leaf.test/', targets: [] });
  const dir = tempDir();
  const f = join(dir, 'x.edges.gz');
  writeFileSync(f, gzipSync('http://a.test/\tLhttp://b.test/\n'));
  const torn = gzipSync('http://c.test/\tLhttp://d.test/\nhttp://e.test/\tLhttp://f.test/\n');
  appendFileSync(f, torn.subarray(0, torn.length - 12));
  const lines = readEdgeFile(f);
  assert.equal(lines[0], 'http://a.test/\tLhttp://b.test/');
  assert.ok(lines.length >= 1 && lines.length <= 3);
  for (const l of lines) assert.ok(parseEdgeLine(l), l);
});

test('numbering: sorted names, increasing successor ids; host graph without loops', () => {
  const g = new Map([['http://b.test/1', new Set(['http://a.test/', 'http://b.test/2'])], ['http://a.test/', new Set(['http://b.test/1'])]]);
  const n = numberGraph(g);
  assert.deepEqual(n.names, ['http://a.test/', 'http://b.test/1', 'http://b.test/2']);
  assert.deepEqual(n.successors.map((s) => [...s]), [[1], [0, 2], []]);
  assert.equal(n.arcs, 3);
  const h = numberGraph(hostGraph(g), false);
  assert.deepEqual(h.names, ['a.test', 'b.test']);
  assert.deepEqual(h.successors.map((s) => [...s]), [[1], [0]]);
});

// ---------------------------------------------------------------------------------------------
// A web whose graph the test knows: H hosts, pages '/', '/p1'…'/p3', '/leaf' and a redirect '/r'.

const H = 8;
const K = 4;
const pathOf = (k: number) => (k === 0 ? '/' : `/p${k}`);

interface Known { html: (h: number, k: number) => string; arcs: () => Map<string, Set<string>>; urls: (h: number, p: string) => string }

function knownWeb(port: () => number): Known {
  const url = (h: number, p: string) => `http://h${h}.web.test:${port()}${p}`;
  const html = (h: number, k: number) => `<!doctype html><html><head><title>h${h} page ${k}</title>
    <link rel="author" href="/leaf"><link rel="stylesheet" href="/style.css"></head><body>
    <p>Host ${h}, page ${k}: words for the text of this page.</p>
    <a href="${pathOf((k + 1) % K)}">next here</a>
    <a href="${url((h + 1) % H, pathOf(k))}" rel="next">same page, next host</a>
    <a href="${pathOf((k + 1) % K)}#frag">again</a>
    <iframe src="/r"></iframe>
    <a href="/private/x${k}">excluded by the crawl's filter, still an outlink</a>
    <a href="mailto:someone@example.org">mail</a>
    </body></html>`;
  // Built when asked: the port is known once the web is up.
  const arcs = () => {
  const arcs = new Map<string, Set<string>>();
  for (let h = 0; h < H; h++) {
    for (let k = 0; k < K; k++) {
      arcs.set(url(h, pathOf(k)), new Set([url(h, '/leaf'), url(h, pathOf((k + 1) % K)), url((h + 1) % H, pathOf(k)), url(h, '/r'), url(h, `/private/x${k}`)]));
    }
    arcs.set(url(h, '/leaf'), new Set());
    arcs.set(url(h, '/r'), new Set([url((h + 2) % H, '/p1')]));
  }
  return arcs;
  };
  return { html, arcs, urls: url };
}

async function startKnownWeb(): Promise<{ web: SyntheticWeb; known: Known }> {
  let port = 0;
  const known = knownWeb(() => port);
  const web = await startSyntheticWeb({
    seed: 7, hosts: H, pagesPerHost: 1,
    intercept: (req): InterceptResponse => {
      const h = req.hostIndex;
      if (h < 0) return { status: 404 };
      if (req.path === '/robots.txt') return { status: 200, headers: { 'content-type': 'text/plain' }, body: 'User-agent: *\nAllow: /\n' };
      if (req.path === '/r') return { status: 301, headers: { location: known.urls((h + 2) % H, '/p1') } };
      if (req.path === '/leaf') return { status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body><p>leaf of host ${h}</p></body></html>` };
      for (let k = 0; k < K; k++) if (req.path === pathOf(k)) return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: known.html(h, k) };
      return { status: 404, headers: { 'content-type': 'text/plain' }, body: 'no' };
    },
  });
  port = web.port;
  return { web, known };
}

function readLines(path: string): string[] {
  const t = readFileSync(path, 'utf8');
  assert.ok(t.endsWith('\n'), `${path} ends with a newline`);
  return t.slice(0, -1).split('\n');
}

test('3-agent mesh: graph export reproduces the known link graph exactly; WARC metadata records carry the outlinks', async () => {
  const { web, known } = await startKnownWeb();
  const dir = tempDir();
  try {
    const extra = ['--exclude', '/private/'];
    const { agents: [a0, a1, a2], apis } = await startMeshAgents(web, dir, 3, extra);
    for (const p of apis) await waitMembers(p, 3);
    await seedThroughApi(apis[0]!, [known.urls(0, '/')], join(dir, 'a0'));
    const results = await Promise.all([a0!.done, a1!.done, a2!.done]);
    const arcs = known.arcs();
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    assert.ok(!web.requests().some((r) => r.path.startsWith('/private/')), 'the filter kept the crawl off /private/');

    // Each agent that fetched pages wrote its own edge file (one owning no host of this small web has none).
    const agentsWithEdges = ['a0', 'a1', 'a2'].filter((a) => { try { return readdirSync(join(dir, a, 'graph')).some((f) => f.endsWith('.edges.gz')); } catch { return false; } });
    assert.ok(agentsWithEdges.length >= 2, `the graph is merged from several agents' files (${agentsWithEdges.join(', ')})`);

    const out = join(dir, 'export', 'g');
    const r = await exportGraph([join(dir, 'a0'), join(dir, 'a1'), join(dir, 'a2')], out);
    assert.equal(r.badLines, 0);
    const names = readLines(`${out}.urls`);
    const expectedNodes = new Set<string>();
    for (const [s, ts] of arcs) { expectedNodes.add(s); for (const t of ts) expectedNodes.add(t); }
    const nameSet = new Set(names);
    assert.deepEqual({ missing: [...expectedNodes].filter((n) => !nameSet.has(n)), extra: names.filter((n) => !expectedNodes.has(n)) }, { missing: [], extra: [] });
    assert.deepEqual(names, [...expectedNodes].sort(), 'node list: every URL once, sorted');
    const g = readLines(`${out}.graph-txt`);
    assert.equal(Number(g[0]), names.length);
    assert.equal(g.length, names.length + 1);
    const got = new Set<string>();
    for (let i = 0; i < names.length; i++) {
      const succ = g[i + 1] === '' ? [] : g[i + 1]!.split(' ').map(Number);
      for (let j = 1; j < succ.length; j++) assert.ok(succ[j - 1]! < succ[j]!, `line ${i + 1}: increasing successors`);
      for (const s of succ) got.add(`${names[i]} ${names[s]}`);
    }
    const want = new Set<string>();
    for (const [s, ts] of arcs) for (const t of ts) want.add(`${s} ${t}`);
    assert.deepEqual([...got].filter((a) => !want.has(a)), [], 'no extra arc');
    assert.deepEqual([...want].filter((a) => !got.has(a)), [], 'every arc');
    assert.equal(r.arcs, want.size);

    // Host graph: h → h+1 (links), h → h+2 (redirects), never a loop.
    const hostNames = readLines(`${out}-host.hosts`);
    assert.deepEqual(hostNames, Array.from({ length: H }, (_, h) => `h${h}.web.test`));
    const hg = readLines(`${out}-host.graph-txt`);
    assert.equal(hg[0], String(H));
    for (let h = 0; h < H; h++) assert.equal(hg[h + 1], [(h + 1) % H, (h + 2) % H].sort((a, b) => a - b).join(' '));

    // WARC: every record's digests verify with warcio.js; each page's metadata record lists its outlinks
    // Heritrix-style and is concurrent to its response.
    let metadata = 0;
    for (const a of ['a0', 'a1', 'a2']) {
      const wdir = join(dir, a, 'warc');
      const responses = new Map<string, string>();
      const outlinksOf = new Map<string, { fields: string[]; concurrentTo: string }>();
      for (const f of readdirSync(wdir).filter((n) => n.endsWith('.warc.gz'))) {
        for (const rec of await warcioRecordsVerified(join(wdir, f))) {
          const uri = rec.headers['WARC-Target-URI']!;
          if (rec.type === 'response') responses.set(uri, rec.headers['WARC-Record-ID']!);
          if (rec.type === 'metadata' && rec.block.toString('utf8').startsWith('outlink: ')) {
            assert.equal(rec.headers['Content-Type'], 'application/warc-fields');
            assert.equal(rec.headers['WARC-Protocol'], 'http/1.1');
            outlinksOf.set(uri, { fields: rec.block.toString('utf8').split('\r\n').filter(Boolean), concurrentTo: rec.headers['WARC-Concurrent-To']! });
          }
        }
      }
      for (const [uri, md] of outlinksOf) {
        metadata++;
        assert.equal(md.concurrentTo, responses.get(uri), `${uri}: WARC-Concurrent-To names its response`);
        const targets = md.fields.map((l) => parseOutlinkValue(l.replace(/^outlink: /, ''))!);
        assert.deepEqual(new Set(targets.map((t) => t.url)), arcs.get(uri), `${uri}: outlink fields`);
        const h = Number(/h(\d+)\./.exec(uri)![1]);
        if (uri.endsWith('/r')) assert.deepEqual(md.fields, [`outlink: ${known.urls((h + 2) % H, '/p1')} R Location:`]);
        else {
          assert.ok(md.fields.includes(`outlink: ${known.urls(h, '/r')} E iframe/@src`), md.fields.join('|'));
          assert.ok(md.fields.includes(`outlink: ${known.urls(h, '/leaf')} L link[rel='author']/@href`));
          assert.ok(md.fields.some((f) => f.endsWith(" L a[rel='next']/@href")));
        }
      }
    }
    assert.equal(metadata, [...arcs.values()].filter((s) => s.size > 0).length, 'one metadata record per page with outlinks');
  } finally {
    await web.close();
  }
});
