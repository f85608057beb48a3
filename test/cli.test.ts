// The command line as an operator uses it: real child processes of bin/ubicrawl.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { BIN, crawlArgs, fetchCounts, inFlightWindow, pageRequests, spawnAgent, tempDir, waitUntil } from './helpers.js';

function run(args: string[], input?: string) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', input, timeout: 60_000 });
}

test('--help lists the commands and exits 0', () => {
  const r = run(['--help']);
  assert.equal(r.status, 0);
  for (const c of ['join', 'robots', 'url', 'simhash']) assert.match(r.stdout, new RegExp(`\\b${c}\\b`));
  const j = run(['join', '--help']);
  assert.equal(j.status, 0);
  for (const o of ['--seed', '--data-dir', '--user-agent', '--min-delay', '--concurrency', '--max-pages', '--until-idle', '--summary', '--resolve']) {
    assert.ok(j.stdout.includes(o), `join --help documents ${o}`);
  }
});

test('usage errors exit 2 with one clear line on stderr', () => {
  for (const args of [
    ['join', '--seed', 'not a url or peer'],
    ['join', '--seed', 'ftp://example.com/'],
    ['join', '--resolve', 'garbage'],
    ['join', '--concurrency', 'lots'],
    ['no-such-command'],
  ]) {
    const r = run(args);
    assert.equal(r.status, 2, `${args.join(' ')} → exit 2 (stderr: ${r.stderr})`);
    const lines = r.stderr.trim().split('\n').filter((l) => l && !l.startsWith('(Did you mean'));
    assert.equal(lines.length, 1, `one line for ${args.join(' ')}: ${r.stderr}`);
  }
});

test('url normalize and robots check answer as documented', () => {
  const n = run(['url', 'normalize', 'HTTP://Example.COM:80/a/%7euser/./b/../c?utm_source=x#frag']);
  assert.equal(n.status, 0);
  assert.equal(n.stdout.trim(), 'http://example.com/a/~user/c');
  const dir = tempDir();
  const robots = join(dir, 'robots.txt');
  writeFileSync(robots, 'User-agent: *\nDisallow: /\n\nUser-agent: ubicrawl\nAllow: /pub\nDisallow: /\n');
  const r = run(['robots', 'check', robots, '--agent', 'ubicrawl', '/pub/x', '/private']);
  assert.equal(r.status, 0);
  const [a, b] = r.stdout.trim().split('\n');
  assert.match(a!, /^allowed\b.*line 5/);
  assert.match(b!, /^disallowed\b.*line 6/);
});

test('SIGKILL mid-crawl, restart with the same data dir: the crawl completes, nothing refetched but the in-flight pages', async () => {
  const web = await startSyntheticWeb({ seed: 11, hosts: 20, pagesPerHost: 30, pageBytes: { min: 2000, max: 4000 } });
  const dir = tempDir();
  const concurrency = 8;
  const args = crawlArgs(web, dir, { concurrency, minDelayMs: 20 });
  try {
    const expected = web.reachable().reachableAllowed;
    const pagesSoFar = () => pageRequests(web.requests()).length;
    // First run: killed once about half the pages have been requested.
    const first = spawnAgent(args, false);
    const reached = await waitUntil(() => pagesSoFar() >= expected.size / 2, 60_000);
    first.proc.kill('SIGKILL');
    await first.closed;
    assert.ok(reached, 'first run too slow');
    const killedAt = pagesSoFar();
    assert.ok(killedAt < expected.size, 'killed before the end');
    // Second run: same data dir, same seeds (already seen: not re-queued).
    const second = spawnAgent(args);
    const { code } = await second.closed;
    assert.equal(code, 0, second.stderr);
    assert.ok(second.stdout.trim().startsWith('{'), `summary on stdout (stdout: ${second.stdout.slice(0, 200)} stderr: ${second.stderr.slice(0, 500)})`);
    const summary = JSON.parse(second.stdout) as { pages: number };
    const counts = fetchCounts(web.requests());
    for (const u of expected) assert.ok(counts.has(u), `${u} fetched`);
    const dup = [...counts].filter(([, n]) => n > 1);
    assert.ok(dup.length <= inFlightWindow(concurrency), `only in-flight pages may be fetched twice (got ${dup.length}: ${dup.slice(0, 5).join(' ')})`);
    assert.equal(summary.pages + killedAt - dup.length >= expected.size, true);
    // robots.txt comes from the store after the restart, not from the host again (one fetch per host).
    const robots = web.requests().filter((r) => r.path === '/robots.txt');
    assert.ok(robots.length <= web.hostCount + concurrency, `robots.txt fetched ${robots.length} times for ${web.hostCount} hosts`);
  } finally {
    await web.close();
  }
});
