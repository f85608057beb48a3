// Ending a run with hosts the operator paused (docs/politeness.md "Ending a run"): a pause has no end to wait for,
// and it survives a restart (docs/storage.md "Host state"), so `--until-idle` must not wait for it forever. The
// run ends once nothing else is left and --idle-grace has passed, names the paused host as deferred work kept for
// the next run, and leaves its URLs queued; the next run, with the pause restored, ends the same way without
// contacting the host. A real agent (the CLI bundle) on a loopback synthetic web.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { tempDir } from './helpers.js';
import { startAgentProcess, listeningOn } from './mesh-agents.js';
import { openStore } from '../src/store/db.js';
import { hostKey } from '../src/store/keys.js';
import type { CrawlSummary } from '../src/crawl/summary.js';

const GRACE_MS = 2000;

async function queuedOn(dataDir: string, host: string): Promise<number> {
  const store = await openStore(dataDir);
  try {
    const hk = hostKey(host);
    let n = 0;
    for await (const k of store.frontier.keys()) if (k.subarray(0, hk.length).equals(hk)) n++;
    return n;
  } finally { await store.close(); }
}

test('--until-idle with only an operator-paused host left: the run ends after the idle grace, the summary names the host, its URLs stay queued; the next run (pause restored) ends too', async () => {
  // h0 answers slowly (its pages take seconds), so that it still has URLs queued when the pause comes.
  const web = await startSyntheticWeb({
    seed: 9, hosts: 3, pagesPerHost: 12, outLinks: 3, crossHostShare: 0, pageBytes: 600, sitemap: false,
    latencyMs: (_host, _path, i) => (i === 0 ? 400 : 0),
  });
  const dir = tempDir();
  const dataDir = join(dir, 'a0');
  const paused = web.hostName(0);
  try {
    const seeds = join(dir, 'seeds.txt');
    writeFileSync(seeds, web.roots().join('\n') + '\n');
    const grace = ['--idle-grace', `${GRACE_MS / 1000}s`];
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--seed', seeds, ...grace]);
    const { api } = await listeningOn(a0, { api: true });
    const token = readFileSync(join(dataDir, 'api.token'), 'utf8').trim();
    // The host is known once the seeds are queued (just after the API comes up).
    let pausedAt = 0;
    for (let i = 0; i < 300 && !pausedAt; i++) {
      const res = await fetch(`http://127.0.0.1:${api}/hosts/${paused}/pause`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      if (res.status === 200) pausedAt = Date.now();
      else await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(pausedAt > 0, 'the pause was accepted');
    const r1 = await a0.done;
    assert.equal(r1.code, 0, r1.err.slice(-2000));
    const summary = JSON.parse(r1.out) as CrawlSummary;
    const others = [...web.reachable().reachableAllowed].filter((u) => new URL(u).hostname !== paused);
    const fetched = new Set(web.requests().filter((r) => r.status === 200 && r.url).map((r) => r.url!));
    assert.deepEqual(others.filter((u) => !fetched.has(u)), [], 'the hosts not paused crawled to the end');
    const entry = summary.deferred?.list.find((d) => d.host === paused);
    assert.ok(entry, `the summary names the paused host as deferred work: ${JSON.stringify(summary.deferred)}`);
    assert.equal(entry.reason, 'operator-paused');
    assert.equal(entry.nextAttempt, null, 'no time of its own: until the operator resumes it');
    assert.ok(entry.urls > 0 && summary.queued === entry.urls, `its URLs, and only they, stay queued (${entry.urls} of ${summary.queued})`);
    assert.match(r1.err, new RegExp(`deferred work kept for the next run .*${paused.replaceAll('.', '\\.')}: paused by the operator`));
    // In-flight at the pause at most: one request (the host is held while it fetches).
    const after = web.requests().filter((r) => r.host === paused && r.start > pausedAt && r.url);
    assert.ok(after.length <= 1, `${after.length} requests to the paused host after its pause`);
    // Ended after the grace, not at once, and not long after it (a heartbeat round and the shutdown).
    const lastOther = Math.max(...web.requests().filter((r) => r.host !== paused).map((r) => r.start));
    const stopped = (JSON.parse(r1.err.split('\n').find((l) => l.includes('"msg":"agent stopped"'))!) as { time: number }).time;
    assert.ok(stopped - lastOther >= GRACE_MS, `ended ${stopped - lastOther} ms after the last other request: the grace holds the run`);
    assert.ok(stopped - lastOther < GRACE_MS + 10_000, `ended ${stopped - lastOther} ms after the last other request`);
    assert.equal(await queuedOn(dataDir, paused), entry.urls, 'its URLs are in the frontier on disk');

    // The next run restores the pause: it ends the same way, without contacting the host.
    const before = web.requests().length;
    const again = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', ...grace]);
    const r2 = await again.done;
    assert.equal(r2.code, 0, r2.err.slice(-2000));
    const s2 = JSON.parse(r2.out) as CrawlSummary;
    assert.equal(s2.deferred?.list[0]?.host, paused);
    assert.equal(s2.deferred?.list[0]?.reason, 'operator-paused');
    assert.equal(s2.queued, entry.urls);
    assert.deepEqual(web.requests().slice(before).filter((r) => r.host === paused).map((r) => r.path), [], 'the paused host not contacted');
    assert.equal(await queuedOn(dataDir, paused), entry.urls);
  } finally {
    await web.close();
  }
});
