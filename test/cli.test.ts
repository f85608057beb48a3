// The command line as an operator uses it: real child processes of bin/ubicrawl.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb } from '../bench/web/index.js';
import { tempDir } from './helpers.js';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'ubicrawl.js');

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
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  const concurrency = 8;
  const args = ['join', '--seed', seeds, '--data-dir', join(dir, 'data'), '--until-idle', '--min-delay', '20', '--delay-factor', '0',
    '--concurrency', String(concurrency), '--progress', 'off', '--log-level', 'warn', '--no-sitemaps',
    ...web.resolveArgs.flatMap((r) => ['--resolve', r])];
  try {
    const expected = web.reachable().reachableAllowed;
    // First run: killed once about half the pages have been requested.
    const first = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    const killedAt = await new Promise<number>((resolve, reject) => {
      const deadline = Date.now() + 60_000;
      const timer = setInterval(() => {
        const n = web.requests().filter((r) => r.path !== '/robots.txt').length;
        if (n >= expected.size / 2) { clearInterval(timer); first.kill('SIGKILL'); resolve(n); }
        else if (Date.now() > deadline) { clearInterval(timer); first.kill('SIGKILL'); reject(new Error('first run too slow')); }
      }, 5);
    });
    await new Promise((r) => first.once('exit', r));
    assert.ok(killedAt < expected.size, 'killed before the end');
    // Second run: same data dir, same seeds (already seen: not re-queued). Async: the web serves from this process.
    const second = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    second.stdout.on('data', (d: Buffer) => { stdout += d; });
    second.stderr.on('data', (d: Buffer) => { stderr += d; });
    const code = await new Promise<number | null>((r) => second.once('close', r));
    assert.equal(code, 0, stderr);
    assert.ok(stdout.trim().startsWith('{'), `summary on stdout (stdout: ${stdout.slice(0, 200)} stderr: ${stderr.slice(0, 500)})`);
    const summary = JSON.parse(stdout) as { pages: number };
    const pages = web.requests().filter((r) => r.path !== '/robots.txt');
    const counts = new Map<string, number>();
    for (const r of pages) counts.set(r.url!, (counts.get(r.url!) ?? 0) + 1);
    for (const u of expected) assert.ok(counts.has(u), `${u} fetched`);
    const dup = [...counts].filter(([, n]) => n > 1);
    // In flight = being fetched (≤ concurrency) or fetched but not yet acknowledged (≤ 4 × concurrency, see docs/storage.md).
    assert.ok(dup.length <= 5 * concurrency, `only in-flight pages may be fetched twice (got ${dup.length}: ${dup.slice(0, 5).join(' ')})`);
    assert.equal(summary.pages + killedAt - dup.length >= expected.size, true);
    // robots.txt comes from the store after the restart, not from the host again (one fetch per host).
    const robots = web.requests().filter((r) => r.path === '/robots.txt');
    assert.ok(robots.length <= web.hostCount + concurrency, `robots.txt fetched ${robots.length} times for ${web.hostCount} hosts`);
  } finally {
    await web.close();
  }
});
