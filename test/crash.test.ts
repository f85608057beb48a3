// Crash safety of the whole agent (docs/storage.md "What a SIGKILL can cost"): `ubicrawl join
// --until-idle` crawls the synthetic web and is SIGKILLed at seeded random
// points, several times, each time restarted on the same data dir. What a kill
// may cost is written down in docs/storage.md ("What a SIGKILL can cost"): the
// pages in flight are fetched again, nothing else. Reproduce a failure with
// UBICRAWL_CRASH_SEED=<seed printed in the test name>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { readdirSync, writeFileSync } from 'node:fs';
import { decodeEntry } from '../src/frontier/frontier.js';
import { openStore } from '../src/store/db.js';
import { verifyWarc } from '../src/warc/reader.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { crawlArgs, fetchCounts, inFlightWindow, pageRequests, seededRandom, spawnAgent, tempDir, waitUntil } from './helpers.js';

const SEED = Number(process.env.UBICRAWL_CRASH_SEED ?? 20261126);
const KILLS = 4;
const CONCURRENCY = 8;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Seen-set states of a completed URL (src/crawl/agent.ts `finish`): 2 fetched, 3 failed or not fetched, 5 settled elsewhere. */
const COMPLETED = new Set([2, 3, 5]);

/** The URLs still in the frontier on disk, with their kind (for a failure message). */
async function queuedOnDisk(dataDir: string): Promise<string[]> {
  const store = await openStore(dataDir);
  try {
    const out: string[] = [];
    for await (const [k, v] of store.frontier.iterator({ limit: 20 })) {
      const host = await store.hosts.get(Buffer.from(k).subarray(0, 8));
      const e = decodeEntry(Buffer.from(v), host === undefined ? undefined : Buffer.from(host).toString('latin1'));
      out.push(e ? `${e.kind} ${e.url}` : `undecodable entry ${Buffer.from(k).toString('hex')}`);
    }
    return out;
  } finally {
    await store.close();
  }
}

/**
 * Opens the killed agent's store (it must open cleanly) and returns which of
 * `urls` it had completed: the fetch acknowledged, the frontier entry deleted.
 */
async function completedIn(dataDir: string, urls: string[]): Promise<{ done: Set<string>; queued: number }> {
  const store = await openStore(dataDir);
  try {
    const keys = urls.map((u) => seenKey(hostKey(new URL(u).hostname), u));
    const states = keys.length ? await store.seen.getMany(keys) : [];
    const done = new Set<string>();
    states.forEach((v, i) => { if (v && COMPLETED.has(v[0]! & 0x0f)) done.add(urls[i]!); });
    let queued = 0;
    for await (const _ of store.frontier.keys()) queued++;
    return { done, queued };
  } finally {
    await store.close();
  }
}

test(`crash safety: SIGKILL at ${KILLS} random points of a crawl (seed ${SEED}), restart on the same data dir each time: store opens, every reachable page fetched, none twice outside the in-flight window`, async (t) => {
  const web = await startSyntheticWeb({
    seed: 23, hosts: 30, pagesPerHost: 40, outLinks: 6, crossHostShare: 0.2, pageBytes: { min: 2000, max: 4000 },
    // 5xx pages are retried on purpose (src/politeness/control.ts): the checks below tell retries from refetches.
    robots: 'mixed', errorMix: { notFound: 0.03, redirect: 0.05, serverError: 0.02 },
  });
  const dir = tempDir();
  // Sitemaps on: their URLs are queued as their own kind (frontier entry byte 2) and must survive the kills too.
  const args = crawlArgs(web, dir, { concurrency: CONCURRENCY, minDelayMs: 20, sitemaps: true, logLevel: 'info' });
  try {
    const expected = web.reachable({ viaSitemaps: true }).reachableAllowed;
    const rnd = seededRandom(SEED);
    // Kill points: a share of the expected pages fetched, then a random delay so the kill lands in any phase
    // (fetching, parsing, writing a WARC record, a DRUM round, a frontier load).
    const shares = Array.from({ length: KILLS }, () => 0.05 + rnd() * 0.85).sort((a, b) => a - b);
    const delays = shares.map(() => Math.floor(rnd() * 60));
    const plan = shares.map((s, i) => `${Math.ceil(s * expected.size)} pages + ${delays[i]} ms`).join(', ');
    t.diagnostic(`seed ${SEED}, ${expected.size} reachable pages; kills after ${plan}`);

    const distinct = () => fetchCounts(web.requests()).size;
    /** [first, end) of each run in the request log. */
    const runs: [number, number][] = [];
    /** Per kill: the pages fetched so far that the store had not completed (in flight when killed). */
    const inFlightAtKill: Set<string>[] = [];
    /** Runs that completed a page, so wrote a response record: each left a WARC file. A run killed before its
     * first record leaves none (src/warc/writer.ts recoverWarcFile deletes a file with only its warcinfo). */
    let recordingRuns = 0;
    let completedBefore = 0;
    for (let k = 0; k < KILLS; k++) {
      const first = web.requests().length;
      const run = spawnAgent(args);
      let exited = false;
      void run.closed.then(() => { exited = true; });
      const target = Math.ceil(shares[k]! * expected.size);
      // Killed once this run has fetched a page (so it opened the store and recovered) and the crawl got to the point.
      const reached = await waitUntil(() => exited || (pageRequests(web.requests().slice(first)).length > 0 && distinct() >= target), 60_000);
      await sleep(delays[k]!);
      assert.ok(!exited, `run ${k} ended on its own before its kill (stderr: ${run.stderr.slice(-500)})`);
      assert.ok(reached, `run ${k} did not reach ${target} pages within 60 s`);
      run.proc.kill('SIGKILL');
      const { signal } = await run.closed;
      assert.equal(signal, 'SIGKILL');
      assert.match(run.stderr, /"msg":"agent started"/, `run ${k}: the store opened and the agent started`);
      assert.doesNotMatch(run.stderr, /"level":(50|60)/, `run ${k}: no error logged (${run.stderr.slice(-500)})`);
      runs.push([first, web.requests().length]);
      // The store the kill left behind opens cleanly; what it completed must never be fetched again.
      const fetchedSoFar = [...fetchCounts(web.requests()).keys()];
      const { done, queued } = await completedIn(join(dir, 'data'), fetchedSoFar);
      const open = new Set(fetchedSoFar.filter((u) => !done.has(u)));
      if (done.size > completedBefore) recordingRuns++;
      completedBefore = done.size;
      inFlightAtKill.push(open);
      // Pages an earlier kill left open and this run did not reach yet stay open; the window bounds this run's own.
      // A page whose every answer in this run was a 5xx or 429 waits for a retry: queued work, not in flight.
      const answered = new Map<string, boolean>();
      for (const r of web.requests().slice(first)) if (r.url) answered.set(r.url, (answered.get(r.url) ?? false) || !(r.status >= 500 || r.status === 429));
      const own = [...answered].filter(([u, clean]) => clean && open.has(u)).length;
      const retrying = [...answered].filter(([u, clean]) => !clean && open.has(u)).length;
      t.diagnostic(`kill ${k}: ${fetchedSoFar.length} pages fetched, ${open.size} of them not completed (${own} from this run, ${retrying} more waiting for a retry), ${queued} URLs queued on disk`);
      assert.ok(own <= inFlightWindow(CONCURRENCY), `kill ${k}: ${own} pages fetched by this run not completed, more than the in-flight window ${inFlightWindow(CONCURRENCY)}`);
    }
    // The last run finishes the crawl.
    const first = web.requests().length;
    // Politeness state survives the restarts unchanged (docs/storage.md "Host state"): a host whose robots.txt keeps
    // failing gets its retries once in the whole crawl, not once per run, so its backoff stays within the idle grace
    // while it waits for them (level 3 at most: 10-20 s). After the last one (level 4: 20-40 s) nothing waits: its
    // URLs, those found later included, fail without a request (docs/politeness.md "Ending a run").
    const last = spawnAgent(args);
    const { code } = await last.closed;
    assert.equal(code, 0, last.stderr.slice(-2000));
    assert.match(last.stderr, /"msg":"agent started"/);
    runs.push([first, web.requests().length]);
    const summary = JSON.parse(last.stdout) as { pages: number; queued: number; failure?: string; deferred?: unknown };
    assert.equal(summary.failure, undefined);
    if (summary.queued !== 0) {
      // Kept for a post-mortem: the last run's logs (UBICRAWL_CRASH_LOG names the file).
      if (process.env.UBICRAWL_CRASH_LOG) writeFileSync(process.env.UBICRAWL_CRASH_LOG, last.stderr + '\n' + last.stdout);
      const left = await queuedOnDisk(join(dir, 'data'));
      assert.fail(`nothing left queued: ${summary.queued} queued; deferred ${JSON.stringify(summary.deferred)}; on disk: ${left.join(', ')}; stderr: ${last.stderr.slice(-3000)}`);
    }

    const log = web.requests();
    const counts = fetchCounts(log);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page is fetched');
    assert.deepEqual([...counts.keys()].filter((u) => !expected.has(u)), [], 'nothing outside the reachable set is fetched');
    // No page twice inside one run (retries of a 5xx aside); a page fetched again in run j was in flight at the kill that ended run j − 1.
    const perRun = runs.map(([a, b]) => fetchCounts(log.slice(a, b).filter((r) => !(r.status >= 500 || r.status === 429))));
    perRun.forEach((c, i) => assert.deepEqual([...c].filter(([, n]) => n > 1), [], `run ${i}: no page fetched twice within the run`));
    const before = new Set<string>();
    const again: number[] = [];
    for (let j = 0; j < perRun.length; j++) {
      const refetched = j === 0 ? [] : [...perRun[j]!.keys()].filter((u) => before.has(u));
      const wrong = refetched.filter((u) => !inFlightAtKill[j - 1]!.has(u));
      assert.deepEqual(wrong, [], `run ${j} fetched again pages the store had completed before kill ${j - 1}`);
      if (j > 0) again.push(refetched.length);
      for (const u of perRun[j]!.keys()) before.add(u);
    }
    t.diagnostic(`${counts.size} pages, ${pageRequests(log).length} page requests; fetched again after each kill: ${again.join(', ')} (window ${inFlightWindow(CONCURRENCY)})`);

    // WARC files cut by a kill were repaired at the next start (src/warc/writer.ts recoverWarcFile): every file reads back whole.
    const warcDir = join(dir, 'data', 'warc');
    assert.deepEqual(readdirSync(warcDir).filter((f) => f.endsWith('.open')), [], 'no WARC file left open');
    const files = readdirSync(warcDir).filter((f) => f.endsWith('.warc.gz'));
    // The last run completed the crawl's remaining pages: it wrote records too.
    assert.ok(files.length >= recordingRuns + 1, `one WARC file per run that wrote a record at least (${files.length} files, ${recordingRuns + 1} such runs)`);
    let responses = 0;
    for (const f of files) {
      const v = await verifyWarc(join(warcDir, f));
      assert.deepEqual(v.digestErrors, [], `${f} reads back with valid digests`);
      responses += v.responses;
    }
    assert.ok(responses >= counts.size, 'a response record for every page');

    // And the store opens cleanly once more, with nothing queued.
    const store = await openStore(join(dir, 'data'));
    try {
      assert.equal((await store.frontier.keys({ limit: 10 }).all()).length, 0, 'the frontier is empty');
    } finally {
      await store.close();
    }
  } finally {
    await web.close();
  }
});
