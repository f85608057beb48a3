// The crawl policy in force on an agent (src/crawl/policy-gate.ts,
// src/policy/in-force.ts; docs/scope.md "Block list"): the block list read by
// admission and the host turn, a block through the API and the CLI during a
// crawl, the queue of a blocked host dropped, the policy kept over a restart,
// `--blocklist FILE` at start, and the pure parts (file parsing, which rules
// cover hosts, the founder's options scope).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { startAgent, type AgentHandle } from '../src/crawl/agent.js';
import { parseResolveRule, type AgentOptions } from '../src/config.js';
import { runBlock, runPolicy } from '../src/api/client.js';
import type { PolicyReport } from '../src/api/backend.js';
import { blockTargetOf, emptyPolicy, mergePolicies, withBlock, withOptionsScope, withoutBlock, type PolicyScope } from '../src/policy/document.js';
import { PolicyInForce, newHostBlocks, parseBlocklist } from '../src/policy/in-force.js';
import { tempDir, waitUntil } from './helpers.js';

const SCOPE: PolicyScope = { mode: 'seeds', allowHosts: [], include: [], exclude: [], maxDepth: 0, maxPagesPerHost: 0, acceptTypes: [] };

test('block list files: one rule a line, # comments, blank lines; a bad line is one error naming file and line', () => {
  const text = '# takedowns\n\nexample.org   # ticket 12\n=www.example.net\nhttps://example.com/private/*\n';
  assert.deepEqual(parseBlocklist(text, 'f.txt'), [
    { kind: 'domain', value: 'example.org' }, { kind: 'host', value: 'www.example.net' }, { kind: 'url', value: 'https://example.com/private/*' },
  ]);
  assert.throws(() => parseBlocklist('ok.test\nnot a host\n', 'f.txt'), /^Error: f\.txt:2: not a host name, domain or http\(s\) URL pattern: not a host$/);
  assert.throws(() => parseBlocklist('ftp://x.test/*', 'f.txt'), /f\.txt:1: only http and https/);
});

test('policy in force: blocks compiled, seed units in scope, new host rules found; a founder\'s options scope wins over rev-0 scopes', () => {
  let doc = withBlock(emptyPolicy(SCOPE), blockTargetOf('b.test'), 1);
  doc = { ...doc, seedUnits: ['a.test'] };
  const p = new PolicyInForce(doc, ['c.test']);
  assert.equal(p.blocked('http://x.b.test/', 'x.b.test'), true);
  assert.equal(p.blocked('http://a.test/', 'a.test'), false);
  assert.equal(p.crawlScope.hostInScope('www.a.test'), true, 'a seed unit of the document');
  assert.equal(p.crawlScope.hostInScope('c.test'), true, 'a local seed unit');
  assert.equal(p.crawlScope.hostInScope('d.test'), false);
  assert.equal(p.seedUnitOf('www.a.test'), 'a.test');

  const more = withBlock(withBlock(doc, blockTargetOf('http://e.test/*'), 2), blockTargetOf('=f.test'), 3);
  assert.deepEqual(newHostBlocks(doc, more), [{ kind: 'host', value: 'f.test' }], 'URL patterns do not cover a host');
  assert.deepEqual(newHostBlocks(more, withoutBlock(more, blockTargetOf('=f.test'), 4)), []);

  // Every agent starts from its options at version 0; the first agent of the crawl sets its own at a version.
  const joiner = emptyPolicy({ ...SCOPE, mode: 'web' });
  const founder = withOptionsScope(emptyPolicy({ ...SCOPE, mode: 'host' }), { ...SCOPE, mode: 'host' }, 'peerA', 5);
  assert.equal(founder.scopeRev, 1);
  assert.equal(mergePolicies(joiner, founder).scope.mode, 'host');
  assert.equal(mergePolicies(founder, joiner).scope.mode, 'host');
  assert.equal(withOptionsScope(founder, { ...SCOPE, mode: 'host' }, 'peerA', 6), founder, 'already set: no new version');
  assert.equal(withOptionsScope(founder, { ...SCOPE, mode: 'seeds' }, 'peerA', 6).scope.mode, 'seeds', 'a restart with other options sets them');
});

const MIN_DELAY = 60;

function web3(pagesPerHost: number): Promise<SyntheticWeb> {
  return startSyntheticWeb({ seed: 33, hosts: 3, pagesPerHost, outLinks: 5, crossHostShare: 0.3, pageBytes: { min: 500, max: 900 }, hostSuffix: 'test', sitemap: false });
}

function agentOpts(web: SyntheticWeb, dir: string, extra: AgentOptions = {}): AgentOptions {
  return {
    dataDir: dir, seeds: web.roots(), minDelayMs: MIN_DELAY, delayFactor: 0, concurrency: 6, logLevel: 'silent',
    resolve: web.resolveArgs.map(parseResolveRule), sitemaps: { enabled: false }, api: { listen: '127.0.0.1:0' }, ...extra,
  };
}

async function api<T>(agent: AgentHandle, dir: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
  const token = readFileSync(join(dir, 'api.token'), 'utf8').trim();
  const res = await fetch(`${agent.apiUrl}${path}`, {
    method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() as T };
}

function capture(): { out: string[]; stream: { write(s: string): boolean } } {
  const out: string[] = [];
  return { out, stream: { write: (s: string) => { out.push(s); return true; } } };
}

test('ubicrawl block during a crawl: the host\'s queue goes, no request starts after the one in flight, GET /policy shows it, a restart keeps it; unblock lets it in again', async () => {
  const web = await web3(40);
  const dir = tempDir();
  try {
    const h1 = web.hostName(1);
    const onH1 = () => web.requests().filter((r) => r.host === h1);
    let agent = await startAgent(agentOpts(web, dir));
    assert.ok(await waitUntil(() => onH1().length >= 4, 20_000), 'the crawl reached h1');

    const queuedBefore = await api<{ queue: { depth: number } }>(agent, dir, 'GET', `/hosts/${h1}`);
    assert.ok(queuedBefore.json.queue.depth > 0, `URLs of h1 queued before the block (${queuedBefore.json.queue.depth})`);
    const err = capture();
    assert.equal(await runBlock('block', ['not a host'], { api: agent.apiUrl, dataDir: dir, stderr: err.stream }), 2, 'a bad target is a usage error');
    assert.match(err.out.join(''), /not a host name/);
    const out = capture();
    const blockedAt = Date.now();
    assert.equal(await runBlock('block', [h1], { api: agent.apiUrl, dataDir: dir, reason: 'ticket 7', stdout: out.stream }), 0);
    assert.match(out.out.join(''), new RegExp(`domain +${h1.replace(/\./g, '\\.')} +\\(ticket 7\\)`));

    // Dropped once the turn in flight ended (bounded by the fetch, a few ms here).
    const host = await api<{ queue: { depth: number } }>(agent, dir, 'GET', `/hosts/${h1}`);
    const deadline = Date.now() + 5_000;
    let depth = host.status === 200 ? host.json.queue.depth : 0;
    while (depth > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      const h = await api<{ queue: { depth: number } }>(agent, dir, 'GET', `/hosts/${h1}`);
      depth = h.status === 200 ? h.json.queue.depth : 0;
    }
    assert.equal(depth, 0, 'no URL of the blocked host is queued');
    const late = onH1().filter((r) => r.start > blockedAt + 1_000);
    assert.deepEqual(late.map((r) => r.path), [], 'no request to the blocked host after the one in flight');

    const pol = await api<PolicyReport>(agent, dir, 'GET', '/policy');
    assert.equal(pol.status, 200);
    assert.deepEqual(pol.json.blocks.map((b) => [b.kind, b.value, b.reason]), [['domain', h1, 'ticket 7']]);
    assert.deepEqual(pol.json.members.map((m) => [m.self, m.same]), [[true, true]]);
    const seeded = await api<{ rejected: Array<{ reason: string }> }>(agent, dir, 'POST', '/seeds', { urls: [web.url(1, '/p/1')] });
    assert.deepEqual(seeded.json.rejected.map((r) => r.reason), ['blocked by the crawl policy']);
    const summary = await agent.stop();
    assert.ok(((summary.rejected as Record<string, number>)['blocked-by-policy'] ?? 0) > 0, 'dropped and refused URLs are counted');

    // A restart with the same data dir (and the same seeds) keeps the block.
    const before = onH1().length;
    agent = await startAgent(agentOpts(web, dir));
    const restarted = Date.now();
    assert.ok(await waitUntil(() => web.requests().some((r) => r.start > restarted && r.host !== h1), 10_000), 'the restarted agent crawls');
    assert.equal(onH1().length, before, 'no request to the blocked host after the restart');
    const shown = capture();
    assert.equal(await runPolicy({ api: agent.apiUrl, dataDir: dir, stdout: shown.stream }), 0);
    assert.match(shown.out.join(''), new RegExp(`blocked: \\n  domain +${h1.replace(/\./g, '\\.')}`));

    // Unblocked: a seed of the host is taken and fetched again.
    assert.equal(await runBlock('unblock', [h1], { api: agent.apiUrl, dataDir: dir, stdout: capture().stream }), 0);
    const again = await api<{ accepted: number }>(agent, dir, 'POST', '/seeds', { urls: [web.url(1, '/p/1')] });
    assert.equal(again.json.accepted, 1);
    assert.ok(await waitUntil(() => onH1().length > before, 10_000), 'the host is fetched again');
    await agent.stop();
  } finally {
    await web.close();
  }
});

test('--blocklist FILE: its rules are in force from the start (robots.txt included); a bad line stops the start with one line', async () => {
  const web = await web3(8);
  const dir = tempDir();
  try {
    const [h0, h1] = [web.hostName(0), web.hostName(1)];
    const bad = join(dir, 'bad.txt');
    writeFileSync(bad, `${h1}\nnot a host\n`);
    await assert.rejects(startAgent(agentOpts(web, join(dir, 'x'), { blocklistFile: bad, untilIdle: true })), (err: Error) => {
      assert.equal(err.name, 'StartupError');
      assert.equal(err.message, `--blocklist ${bad}:2: not a host name, domain or http(s) URL pattern: not a host`);
      return true;
    });
    const file = join(dir, 'blocks.txt');
    writeFileSync(file, `# takedowns\n${h1}  # complaint\nhttp://${h0}:${web.port}/p/1*\n`);
    const agent = await startAgent(agentOpts(web, join(dir, 'data'), { blocklistFile: file, untilIdle: true }));
    await agent.done;
    assert.deepEqual(web.requests().filter((r) => r.host === h1).map((r) => r.path), [], 'nothing of the blocked domain, not even robots.txt');
    assert.deepEqual(web.requests().filter((r) => r.host === h0 && r.path.startsWith('/p/1')).map((r) => r.path), [], 'nothing the URL pattern covers');
    assert.ok(web.requests().some((r) => r.host === h0 && r.path.startsWith('/p/')), 'the rest of the host is crawled');
  } finally {
    await web.close();
  }
});
