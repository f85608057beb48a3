// A full disk (docs/storage.md "Write failures"): the data dir lives on a small
// tmpfs the test mounts (root only) and mostly fills with a filler file. The
// crawl runs out of space: the agent must stop cleanly (one plain error line,
// exit code 1, no stack) with nothing acknowledged lost. Then the filler is
// deleted and the same command run again: the crawl completes, each reachable
// page fetched once outside the in-flight window, every WARC file reads back
// with valid digests and its CDXJ index matches it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { openStore } from '../src/store/db.js';
import { verifyWarc } from '../src/warc/reader.js';
import { buildCdxj, cdxjPathFor } from '../src/warc/cdxj.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { crawlArgs, fetchCounts, inFlightWindow, pageRequests, spawnAgent, tempDir } from './helpers.js';

const CONCURRENCY = 8;
const FS_BYTES = 16 << 20;
/** Space left next to the filler: the first run fills it part way through the crawl. */
const FREE_BYTES = 1536 << 10;

/** Mounts a tmpfs of `bytes` on a new directory; null (with the reason) when that is not possible here. */
function mountTmpfs(bytes: number): { dir: string } | { skip: string } {
  if (process.getuid?.() !== 0) return { skip: 'needs root to mount a small tmpfs for the data dir' };
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-diskfull-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return { skip: `cannot mount a tmpfs here: ${(err as Error).message.split('\n')[0]}` };
  }
  after(() => {
    try { execFileSync('umount', [dir], { stdio: 'pipe' }); } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir };
}

/** Seen states of a completed URL (src/crawl/agent.ts `finish`). */
const COMPLETED = new Set([2, 3, 5]);

async function completedIn(dataDir: string, urls: string[]): Promise<Set<string>> {
  const store = await openStore(dataDir);
  try {
    const keys = urls.map((u) => seenKey(hostKey(new URL(u).hostname), u));
    const states = keys.length ? await store.seen.getMany(keys) : [];
    const done = new Set<string>();
    states.forEach((v, i) => { if (v && COMPLETED.has(v[0]! & 0x0f)) done.add(urls[i]!); });
    return done;
  } finally {
    await store.close();
  }
}

test('disk full: the agent stops with one clear error and exit code 1, loses nothing, and resumes once space is freed', async (t) => {
  const fs = mountTmpfs(FS_BYTES);
  if ('skip' in fs) { t.skip(fs.skip); return; }
  const web = await startSyntheticWeb({
    seed: 41, hosts: 24, pagesPerHost: 40, outLinks: 6, crossHostShare: 0.2, pageBytes: { min: 6000, max: 12000 },
    robots: 'allow', errorMix: { notFound: 0.03, redirect: 0.05, serverError: 0 },
  });
  const dir = tempDir();
  const args = crawlArgs(web, dir, { concurrency: CONCURRENCY, minDelayMs: 20, logLevel: process.env.DISKFULL_LOG ?? 'warn' });
  const dataDir = join(fs.dir, 'data');
  args[args.indexOf('--data-dir') + 1] = dataDir;
  // Small files: rotations (a new file on a full disk) happen during the crawl too.
  args.push('--warc-max-size', String(256 << 10));
  try {
    const expected = web.reachable().reachableAllowed;
    const filler = join(fs.dir, 'filler');
    const { bavail, bsize } = statfsSync(fs.dir);
    writeFileSync(filler, Buffer.alloc(Number(bavail) * Number(bsize) - FREE_BYTES));

    let at = Date.now();
    const first = spawnAgent(args);
    const r1 = await first.closed;
    t.diagnostic(`run 1 took ${Date.now() - at} ms`);
    const run1 = web.requests().length;
    t.diagnostic(`run 1: exit ${r1.code}, ${fetchCounts(web.requests()).size} of ${expected.size} pages fetched; stderr tail: ${first.stderr.slice(-600)}`);
    assert.equal(r1.code, 1, 'exit code 1 on a full disk');
    const lines = first.stderr.split('\n').filter((l) => l.startsWith('ubicrawl: '));
    assert.equal(lines.length, 1, `one plain error line (${first.stderr.slice(-1000)})`);
    assert.match(lines[0]!, /^ubicrawl: stopped: disk full: .*(ENOSPC|no space left)/i);
    assert.doesNotMatch(first.stderr, /^\s+at /m, 'no stack trace');
    assert.doesNotMatch(first.stderr, /Unhandled|uncaught/i);
    const summary1 = JSON.parse(first.stdout) as { failure?: string };
    assert.match(summary1.failure ?? '', /disk full/);
    assert.ok(fetchCounts(web.requests()).size < expected.size, 'the disk filled before the crawl was done');

    // Space back. What run 1 completed is never fetched again; what it fetched and did not complete is its in-flight window.
    unlinkSync(filler);
    const fetched1 = [...fetchCounts(web.requests()).keys()];
    const done = await completedIn(dataDir, fetched1);
    const open = fetched1.filter((u) => !done.has(u));
    t.diagnostic(`run 1 completed ${done.size} pages, left ${open.length} fetched pages queued`);
    assert.ok(open.length <= inFlightWindow(CONCURRENCY), `${open.length} pages fetched and not completed, more than the in-flight window`);

    at = Date.now();
    const second = spawnAgent(args);
    const r2 = await second.closed;
    t.diagnostic(`run 2 took ${Date.now() - at} ms`);
    if (process.env.DISKFULL_LOG) writeFileSync("/tmp/diskfull-run2.log", second.stderr);
    assert.equal(r2.code, 0, second.stderr.slice(-2000));
    const summary2 = JSON.parse(second.stdout) as { queued: number; failure?: string };
    assert.equal(summary2.failure, undefined);
    assert.equal(summary2.queued, 0, 'nothing left queued');

    const log = web.requests();
    const counts = fetchCounts(log);
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page is fetched');
    assert.deepEqual([...counts.keys()].filter((u) => !expected.has(u)), [], 'nothing outside the reachable set is fetched');
    const perRun = [log.slice(0, run1), log.slice(run1)].map((l) => fetchCounts(l));
    perRun.forEach((c, i) => assert.deepEqual([...c].filter(([, n]) => n > 1), [], `run ${i + 1}: no page fetched twice within the run`));
    const again = [...perRun[1]!.keys()].filter((u) => perRun[0]!.has(u));
    assert.deepEqual(again.filter((u) => done.has(u)), [], 'no page run 1 completed is fetched again');
    assert.ok(again.length <= inFlightWindow(CONCURRENCY), `${again.length} pages fetched again, more than the in-flight window`);
    t.diagnostic(`${counts.size} pages, ${pageRequests(log).length} page requests, ${again.length} fetched again after the restart`);

    const warcDir = join(dataDir, 'warc');
    const names = readdirSync(warcDir);
    assert.deepEqual(names.filter((f) => f.endsWith('.open') || f.includes('.tmp-')), [], 'no WARC file left open, no index half written');
    const files = names.filter((f) => f.endsWith('.warc.gz'));
    let responses = 0;
    for (const f of files) {
      const path = join(warcDir, f);
      const v = await verifyWarc(path);
      assert.deepEqual(v.digestErrors, [], `${f} reads back whole with valid digests`);
      responses += v.responses;
      // Its index exists and is the one the file's records give.
      const rebuilt = (await buildCdxj(path)).lines.join('\n') + '\n';
      assert.equal(readFileSync(cdxjPathFor(path), 'utf8'), rebuilt, `${f}.cdxj matches the file`);
    }
    assert.ok(responses >= counts.size, 'a response record for every page');
  } finally {
    await web.close();
  }
});
