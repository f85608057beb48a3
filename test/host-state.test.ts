// Everything about a host moves with it, and stays across a restart
// (docs/mesh.md "Everything about a host moves with it", docs/storage.md "Host
// state"): a host that answered 429 with Retry-After is not contacted before
// that time by its new owner after a join moved it, nor by its agent after a
// restart; a pause set through the API holds on the new owner and after a
// restart; recrawl schedule entries reach the new owner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { tempDir } from './helpers.js';
import { startAgentProcess, listeningOn, agentOf, waitFor, waitMembers, type AgentProc } from './mesh-agents.js';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';

/** Retry-After of every host's first page answer (RFC 9110 §10.2.3: delay-seconds). */
const RETRY_AFTER_S = 12;

/**
 * Hosts (the first `slowHosts`) whose page requests get 429 + Retry-After until `moved()` (the join or the
 * restart under test has happened; then they are served); when each got its last 429 (server clock, epoch ms).
 * Answering 429 until then keeps the test from racing its own join or restart on a loaded machine: a Retry-After
 * that ran out before the hosts moved would leave nothing for their new owner to honour.
 */
async function webWith429(hosts: number, pages: number, slowHosts = hosts): Promise<{ web: SyntheticWeb; told: Map<string, number>; moved(): void }> {
  const told = new Map<string, number>();
  let served = false;
  const web = await startSyntheticWeb({
    seed: 5, hosts, pagesPerHost: pages, outLinks: 3, crossHostShare: 0, pageBytes: 800, sitemap: false,
    intercept: (req) => {
      if (req.hostIndex < 0 || req.hostIndex >= slowHosts || req.path === '/robots.txt' || (served && told.has(req.host))) return null;
      told.set(req.host, Date.now());
      return { status: 429, headers: { 'retry-after': String(RETRY_AFTER_S), 'content-type': 'text/plain' }, body: 'slow down' };
    },
  });
  return { web, told, moved: () => { served = true; } };
}

function token(dataDir: string): string { return readFileSync(join(dataDir, 'api.token'), 'utf8').trim(); }

async function api(port: number, dataDir: string, method: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { authorization: `Bearer ${token(dataDir)}` } });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

/** Page requests (robots.txt aside) to `host` by `agent` (any agent without it). */
function pageRequests(web: SyntheticWeb, host: string, agent?: string) {
  return web.requests().filter((r) => r.host === host && r.url && !r.path.startsWith('/robots') && (agent === undefined || agentOf(r.userAgent) === agent));
}

test('a join moves hosts with their state: a host told 429 + Retry-After is not contacted by its new owner before that time; a paused host stays paused there; its recrawl entries come along', async (t) => {
  // Hosts 0–15 answer 429 first; 16–23 are crawled by a0 before the join (their recrawl entries are to move).
  const { web, told, moved } = await webWith429(24, 4, 16);
  const dir = tempDir();
  const agents: AgentProc[] = [];
  try {
    const seeds = join(dir, 'seeds.txt');
    writeFileSync(seeds, web.roots().join('\n') + '\n');
    // A paused host holds an --until-idle run only for --idle-grace once nothing else is left (docs/politeness.md
    // "Ending a run"): long enough here for the test's resume to come first on a loaded machine.
    const recrawl = ['--recrawl', '--recrawl-min', '1h', '--recrawl-max', '2h', '--idle-grace', '3m'];
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--seed', seeds, ...recrawl]);
    agents.push(a0);
    const p0 = await listeningOn(a0, { api: true });
    // Every host has had its 429 (a0 alone owns them all).
    const done = Array.from({ length: 8 }, (_, i) => web.hostName(16 + i));
    const doneUrls = [...web.reachable().reachableAllowed].filter((u) => done.includes(new URL(u).hostname));
    await waitFor(() => told.size === 16 && doneUrls.every((u) => web.requests().some((r) => r.url === u && r.status === 200)), 60_000, 'a 429 for every slow host, the others crawled');
    const hosts = [...told.keys()].sort();
    const paused = hosts.slice(0, 8);
    // When each pause was in force (the API answers once it is): a request in flight then may still arrive.
    const pausedAt = new Map<string, number>();
    for (const h of paused) {
      assert.equal((await api(p0.api, join(dir, 'a0'), 'POST', `/hosts/${h}/pause`)).status, 200);
      pausedAt.set(h, Date.now());
    }
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--seed', `127.0.0.1:${p0.mesh}`, ...recrawl]);
    agents.push(a1);
    const p1 = await listeningOn(a1, { api: true });
    await waitMembers(p0.api, 2);
    await waitMembers(p1.api, 2);
    moved();
    // The hosts that are not paused get crawled to the end (after their Retry-After).
    const free = hosts.filter((h) => !paused.includes(h));
    const expectedFree = [...web.reachable().reachableAllowed].filter((u) => free.includes(new URL(u).hostname));
    await waitFor(() => expectedFree.every((u) => web.requests().some((r) => r.url === u && r.status === 200)), 180_000, 'the hosts not paused crawled');
    // Who owns each paused host now, and what its owner says of it.
    const owners = new Map<string, string>();
    for (const h of paused) {
      for (const [name, port] of [['a0', p0.api], ['a1', p1.api]] as const) {
        const r = await api(port, join(dir, name), 'GET', `/hosts/${h}`);
        if (r.status === 200 && r.body.local === true) {
          owners.set(h, name);
          assert.equal((r.body.politeness as { paused: boolean } | null)?.paused, true, `${h} is still paused on its owner ${name}`);
        }
      }
    }
    const movedPaused = paused.filter((h) => owners.get(h) === 'a1');
    // Hosts a0 crawled before the join: who owns them now (a0 names the owner of a host it no longer holds).
    for (const h of done) {
      const r = await api(p0.api, join(dir, 'a0'), 'GET', `/hosts/${h}`);
      owners.set(h, r.status === 200 && r.body.local === false ? 'a1' : 'a0');
    }
    const resumedAt = Date.now();
    for (const h of paused) {
      const name = owners.get(h) ?? 'a0';
      await api(name === 'a1' ? p1.api : p0.api, join(dir, name), 'POST', `/hosts/${h}/resume`);
    }
    const results = await Promise.all(agents.map((a) => a.done));
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));

    const movedFree = free.filter((h) => pageRequests(web, h, 'a1').length > 0);
    t.diagnostic(`${movedFree.length} of ${free.length} hosts told to wait moved to a1; ${movedPaused.length} of ${paused.length} paused hosts moved`);
    assert.ok(movedFree.length > 0 && movedPaused.length > 0, 'the join moved hosts of both kinds');
    // RFC 9110 §10.2.3: not before Retry-After seconds after the 429, whoever owns the host by then.
    const early = free.flatMap((h) => pageRequests(web, h).filter((r) => r.start < told.get(h)! + RETRY_AFTER_S * 1000 - 20 && r.status !== 429)
      .map((r) => `${h}${r.path} by ${agentOf(r.userAgent)} ${Math.round(told.get(h)! + RETRY_AFTER_S * 1000 - r.start)} ms early`));
    assert.deepEqual(early.slice(0, 5), [], 'no host contacted before its Retry-After ran out');
    const whilePaused = paused.flatMap((h) => pageRequests(web, h).filter((r) => r.start > pausedAt.get(h)! + 50 && r.start < resumedAt).map((r) => `${h}${r.path} by ${agentOf(r.userAgent)}`));
    assert.deepEqual(whilePaused.slice(0, 5), [], 'no paused host contacted while paused, across the move');
    // Every page is fetched in the end (the paused ones after their resume).
    const fetched = new Set(web.requests().filter((r) => r.status === 200 && r.url).map((r) => r.url!));
    assert.deepEqual([...web.reachable().reachableAllowed].filter((u) => !fetched.has(u)).slice(0, 5), [], 'everything fetched');
    // The recrawl schedule of the pages a0 fetched on hosts that then moved is on a1 now.
    const movedDone = done.filter((h) => owners.get(h) === 'a1');
    const a0Pages = doneUrls.filter((u) => movedDone.includes(new URL(u).hostname));
    assert.ok(a0Pages.length > 0, 'hosts a0 had crawled moved');
    const store = await openStore(join(dir, 'a1'));
    try {
      const have = await store.recrawl.getMany(a0Pages.map((u) => seenKey(hostKey(new URL(u).hostname), u)));
      t.diagnostic(`${a0Pages.length} pages a0 fetched on hosts that moved; ${have.filter(Boolean).length} recrawl entries on a1`);
      assert.deepEqual(a0Pages.filter((_, i) => !have[i]).slice(0, 5), [], 'recrawl entries moved with their hosts');
    } finally { await store.close(); }
  } finally {
    for (const a of agents) if (a.proc.exitCode === null) a.proc.kill('SIGKILL');
    await web.close();
  }
});

test('a restart keeps host state: Retry-After still honoured, a paused host still paused', async (t) => {
  const { web, told, moved } = await webWith429(4, 3);
  const dir = tempDir();
  const dataDir = join(dir, 'a0');
  const procs: AgentProc[] = [];
  try {
    const seeds = join(dir, 'seeds.txt');
    writeFileSync(seeds, web.roots().join('\n') + '\n');
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--seed', seeds, '--idle-grace', '3m']);
    procs.push(a0);
    const p0 = await listeningOn(a0, { api: true });
    await waitFor(() => told.size === 4, 60_000, 'a 429 for every host');
    const hosts = [...told.keys()].sort();
    const pausedHost = hosts[0]!;
    assert.equal((await api(p0.api, dataDir, 'POST', `/hosts/${pausedHost}/pause`)).status, 200);
    a0.proc.kill('SIGTERM');
    await a0.done;
    moved();
    const again = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--idle-grace', '3m']);
    procs.push(again);
    const p1 = await listeningOn(again, { api: true });
    const restartedAt = Date.now();
    // The others are crawled once their Retry-After ran out; the paused one waits.
    const others = hosts.slice(1);
    await waitFor(() => others.every((h) => pageRequests(web, h).some((r) => r.status === 200 && r.start > restartedAt)), 120_000, 'the other hosts crawled after the restart');
    const r = await api(p1.api, dataDir, 'GET', `/hosts/${pausedHost}`);
    assert.equal((r.body.politeness as { paused: boolean } | null)?.paused, true, 'still paused after the restart');
    assert.deepEqual(pageRequests(web, pausedHost).filter((x) => x.start > restartedAt).map((x) => x.path), [], 'the paused host not contacted after the restart');
    const early = others.flatMap((h) => pageRequests(web, h).filter((x) => x.status !== 429 && x.start < told.get(h)! + RETRY_AFTER_S * 1000 - 20).map((x) => `${h}${x.path}`));
    assert.deepEqual(early, [], 'Retry-After honoured across the restart');
    t.diagnostic(`restart ${Math.round(restartedAt - Math.min(...told.values()))} ms after the first 429`);
    await api(p1.api, dataDir, 'POST', `/hosts/${pausedHost}/resume`);
    const res = await again.done;
    assert.equal(res.code, 0, res.err.slice(-2000));
    assert.ok(pageRequests(web, pausedHost).some((x) => x.status === 200), 'crawled once resumed');
  } finally {
    for (const a of procs) if (a.proc.exitCode === null) a.proc.kill('SIGKILL');
    await web.close();
  }
});
