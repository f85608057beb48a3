// Leaving (docs/mesh.md, "Graceful leave"): `POST /leave` and SIGTERM finish within
// seconds, also for a lone agent whose queue cannot move (nobody to hand it
// to): it stops with the queue kept on disk, and the next start resumes it. A
// second SIGTERM always exits at once. Real agent processes through the CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { fetchCounts, spawnAgent, tempDir, waitUntil, type AgentProcess } from './helpers.js';

/** `ubicrawl join` on the web, with its API on a free loopback port; runs until told to leave. */
function joinArgs(web: SyntheticWeb, dataDir: string, extra: string[]): string[] {
  return ['join', '--data-dir', dataDir, '--min-delay', '100', '--delay-factor', '0', '--concurrency', '4',
    '--progress', 'off', '--log-level', 'info', '--listen', '/ip4/127.0.0.1/tcp/0', '--no-sitemaps',
    ...web.resolveArgs.flatMap((r) => ['--resolve', r]), ...extra];
}

/** The API base URL, from the agent's "API listening" log line. */
async function apiOf(run: AgentProcess): Promise<string> {
  const re = /"api":"(http:\/\/127\.0\.0\.1:\d+)"/;
  const up = await waitUntil(() => re.test(run.stderr) || run.proc.exitCode !== null, 30_000);
  const m = re.exec(run.stderr);
  assert.ok(up && m, `API up (stderr: ${run.stderr.slice(-1000)})`);
  return m[1]!;
}

async function api(base: string, method: string, path: string, dataDir: string): Promise<{ status: number; json: any }> {
  const token = readFileSync(join(dataDir, 'api.token'), 'utf8').trim();
  const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, json: await res.json() };
}

/** A lone agent crawling the web's two hosts, both paused through the API once known: URLs queued, nothing in flight. */
async function pausedLoneAgent(web: SyntheticWeb, data: string, seeds: string): Promise<{ run: AgentProcess; base: string }> {
  const run = spawnAgent(joinArgs(web, data, ['--seed', seeds, '--api', '127.0.0.1:0']));
  const base = await apiOf(run);
  const hosts = [web.hostName(0), web.hostName(1)];
  assert.ok(await waitUntil(() => hosts.every((h) => web.requestsFor(h).length >= 3), 20_000), 'both hosts crawled a little');
  for (const h of hosts) assert.equal((await api(base, 'POST', `/hosts/${h}/pause`, data)).json.paused, true);
  const status = await (await fetch(`${base}/status`)).json() as { agent: { counters: { queued: number } } };
  assert.ok(status.agent.counters.queued > 0, 'URLs queued');
  return { run, base };
}

const twoHostWeb = (seed: number) => startSyntheticWeb({ seed, hosts: 2, pagesPerHost: 40, outLinks: 4, crossHostShare: 0, pageBytes: { min: 500, max: 800 } });

test('POST /leave on a lone agent with paused hosts exits within 5 s, keeps the queue, and the next start resumes it', async () => {
  const web = await twoHostWeb(31);
  const dir = tempDir();
  const data = join(dir, 'data');
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  try {
    const { run: first, base } = await pausedLoneAgent(web, data, seeds);
    const t0 = Date.now();
    const left = await api(base, 'POST', '/leave', data);
    assert.equal(left.status, 202);
    const exited = await Promise.race([first.closed, new Promise<null>((r) => setTimeout(() => r(null), 5000).unref())]);
    const ms = Date.now() - t0;
    assert.ok(exited, `exited within 5 s (stderr: ${first.stderr.slice(-1500)})`);
    assert.equal(exited.code, 0, first.stderr.slice(-1500));
    const summary = JSON.parse(first.stdout) as { queued: number; pages: number };
    assert.ok(summary.queued > 0, 'the queue is kept');
    assert.match(first.stderr, /no other member to hand hosts to/);
    const firstRun = fetchCounts(web.requests());
    const expected = web.reachable().reachableAllowed;
    assert.ok(firstRun.size < expected.size, 'work left for the next start');
    // The next start, without seeds: only the kept queue can bring the rest. An operator's pause survives a
    // restart (docs/storage.md "Host state"): the hosts are resumed through the API.
    const second = spawnAgent(joinArgs(web, data, ['--until-idle', '--api', '127.0.0.1:0']));
    const base2 = await apiOf(second);
    for (const h of [web.hostName(0), web.hostName(1)]) assert.equal((await api(base2, 'POST', `/hosts/${h}/resume`, data)).json.paused, false);
    const done = await second.closed;
    assert.equal(done.code, 0, second.stderr.slice(-1500));
    const counts = fetchCounts(web.requests());
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched over both runs');
    assert.deepEqual([...counts].filter(([, n]) => n > 1), [], 'none fetched twice');
    process.stderr.write(`# leave took ${ms} ms with ${summary.queued} URLs queued\n`);
  } finally {
    await web.close();
  }
});

test('SIGTERM, then a second SIGTERM: the agent answers meanwhile and the second one exits at once', async () => {
  // A body that trickles forever (the web's slowForever trap): the first SIGTERM's stop waits for that fetch.
  const web = await startSyntheticWeb({
    seed: 32, hosts: 1, pagesPerHost: 2,
    traps: { slowForever: true, calendar: false, pager: false, gzipBomb: false, malformedHtml: false, nonHtml: false, redirectLoop: false, linkFromRoot: false },
  });
  const dir = tempDir();
  const data = join(dir, 'data');
  try {
    const slow = web.trapUrls.slowForever!;
    const run = spawnAgent(joinArgs(web, data, ['--seed', slow, '--api', '127.0.0.1:0']));
    const base = await apiOf(run);
    assert.ok(await waitUntil(() => web.inFlight() > 0 && web.requests().some((r) => slow.endsWith(r.path)), 20_000), 'the slow fetch in flight');
    run.proc.kill('SIGTERM');
    // Leaving: still answering (the event loop is free), still running (the fetch holds the stop).
    assert.ok(await waitUntil(() => /leaving/.test(run.stderr), 5000), 'the first signal starts the leave');
    const st = await fetch(`${base}/status`, { signal: AbortSignal.timeout(2000) });
    assert.equal(st.status, 200);
    assert.equal(run.proc.exitCode, null, 'the first signal waits for the fetch in flight');
    const t0 = Date.now();
    run.proc.kill('SIGTERM');
    const exited = await Promise.race([run.closed, new Promise<null>((r) => setTimeout(() => r(null), 2000).unref())]);
    assert.ok(exited, 'the second signal exits at once');
    assert.equal(exited.code, 130);
    process.stderr.write(`# second SIGTERM → exit in ${Date.now() - t0} ms\n`);
  } finally {
    await web.close();
  }
});

test('SIGTERM and at once a second SIGTERM on a lone agent with paused hosts: it exits at once', async () => {
  const web = await twoHostWeb(33);
  const dir = tempDir();
  const data = join(dir, 'data');
  const seeds = join(dir, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  try {
    const { run } = await pausedLoneAgent(web, data, seeds);
    const t0 = Date.now();
    run.proc.kill('SIGTERM');
    // Signals sent back to back may merge into one (POSIX does not queue them): the second goes once the first was taken.
    assert.ok(await waitUntil(() => /leaving/.test(run.stderr) || run.proc.exitCode !== null, 5000), 'the first signal was taken');
    run.proc.kill('SIGTERM');
    const exited = await Promise.race([run.closed, new Promise<null>((r) => setTimeout(() => r(null), 2000).unref())]);
    assert.ok(exited, `exited within 2 s (stderr: ${run.stderr.slice(-1000)})`);
    // The first signal's stop may win the race (0) or the second signal's forced exit (130): both are at once.
    assert.ok(exited.code === 0 || exited.code === 130, `exit code ${exited.code}`);
    process.stderr.write(`# two SIGTERMs → exit ${exited.code} in ${Date.now() - t0} ms\n`);
  } finally {
    await web.close();
  }
});
