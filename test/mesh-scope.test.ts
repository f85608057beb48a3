// The default scope across a mesh (docs/scope.md "In a mesh"): a seed given to
// one agent keeps the whole mesh in the seed's registrable domain, although
// the other agents were never told the seed: each applies the scope where it
// finds a link, by the unit of the page it found it on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createServer, connect, type AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { HostRing } from '../src/assign/ring.js';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { tempDir } from './helpers.js';
import { agentOf, listeningOn, pageCounts, startAgentProcess, startMeshAgents, waitFor, waitMembers, seedThroughApi } from './mesh-agents.js';

/** Each page of the web (all hosts in web.test) also links to hosts of other registrable domains, served by the same server. */
async function webWithOutsideLinks(): Promise<SyntheticWeb> {
  let port = 0;
  const outside = (k: number) => `http://x${k}.elsewhere${k}.test:${port}/`;
  const web: SyntheticWeb = await startSyntheticWeb({
    seed: 21, hosts: 9, pagesPerHost: 5, outLinks: 4, crossHostShare: 0.5, pageBytes: { min: 500, max: 900 }, sitemap: false,
    intercept: (req) => {
      if (req.path === '/robots.txt') return null;
      const k = req.path.length % 3;
      if (req.hostIndex < 0) {
        // A page outside the seed's domain, linking back in and further out.
        return { status: 200, headers: { 'content-type': 'text/html' }, body: `<a href="${web.url(0, '/')}">in</a><a href="${outside(k + 1)}">out</a>` };
      }
      const info = web.describe(`http://${req.host}:${port}${req.path}`);
      if (!info || info.status !== 200) return null;
      const links = info.links.map((l) => `<a href="${l.url}">l</a>`).join('');
      return { status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body>${links}<a href="${outside(k)}">elsewhere</a></body></html>` };
    },
  });
  port = web.port;
  return web;
}

test('3 agents, the seed given to one that does not own its host: only the seed\'s registrable domain is fetched, all of it, by its owners', async () => {
  const web = await webWithOutsideLinks();
  const dir = tempDir();
  try {
    // The outside hosts resolve to the web as well: nothing but the scope keeps the agents away from them.
    const resolveOutside = ['--resolve', `*.test:${web.port}:127.0.0.1`];
    const { agents: [a0, a1, a2], apis } = await startMeshAgents(web, dir, 3, resolveOutside);
    for (const p of apis) await waitMembers(p, 3);
    // A host a2 does not own (a2 answers 404 for an unknown host of its own).
    let seedHost = -1;
    for (let i = 0; i < web.hostCount && seedHost < 0; i++) {
      const res = await fetch(`http://127.0.0.1:${apis[2]!}/hosts/${web.hostName(i)}`);
      if (res.status === 200 && !((await res.json()) as { local: boolean }).local) seedHost = i;
    }
    assert.ok(seedHost >= 0, 'a host a2 does not own');
    const seed = web.url(seedHost, '/');
    await seedThroughApi(apis[2]!, [seed], join(dir, 'a2'));
    const results = await Promise.all([a0.done, a1.done, a2.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));

    const outsideRequests = web.requests().filter((r) => !r.host.endsWith('.web.test'));
    assert.deepEqual(outsideRequests.slice(0, 5).map((r) => `${r.host}${r.path}`), [], 'no request outside web.test, robots.txt included');
    const counts = pageCounts(web);
    const expected = web.reachable({ seeds: [seed] }).reachableAllowed;
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every page of the domain reachable from the seed');
    const fetchers = new Set(web.requests().map((r) => agentOf(r.userAgent)));
    assert.ok(fetchers.size >= 2, `hosts of the domain fetched by several agents (${[...fetchers].join(' ')})`);
  } finally {
    await web.close();
  }
});

test('--max-depth 2 on a chain of pages that crosses hosts owned by different agents stops exactly at depth 2', async () => {
  let port = 0;
  // The chain: /c/k on host chain[k] links to /c/k+1 on host chain[k+1]; chosen once the owners are known.
  const chain: string[] = [];
  const web: SyntheticWeb = await startSyntheticWeb({
    seed: 22, hosts: 9, pagesPerHost: 2, sitemap: false,
    intercept: (req) => {
      const m = /^\/c\/(\d+)$/.exec(req.path);
      if (!m) return null;
      const next = Number(m[1]) + 1;
      const link = next < chain.length ? `<a href="http://${chain[next]}:${port}/c/${next}">next</a>` : '';
      return { status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body>${link}</body></html>` };
    },
  });
  port = web.port;
  const dir = tempDir();
  try {
    const depth = ['--max-depth', '2'];
    const { agents: [a0, a1, a2], apis } = await startMeshAgents(web, dir, 3, depth);
    for (const p of apis) await waitMembers(p, 3);
    // Who owns each host: the owner answers 404 for a host of its own it knows nothing about.
    const ownerOf = async (host: string): Promise<number> => {
      for (let i = 0; i < 3; i++) if ((await fetch(`http://127.0.0.1:${apis[i]!}/hosts/${host}`)).status === 404) return i;
      return -1;
    };
    const owners = new Map<string, number>();
    for (let i = 0; i < web.hostCount; i++) owners.set(web.hostName(i), await ownerOf(web.hostName(i)));
    // Each hop to a host of another agent: the owner with the most hosts left (other than the last hop's) goes
    // next, the longest alternation (taken in host order, owners 0 0 0 0 2 2 2 1 1 gave a chain of 3).
    const left = [...owners.keys()];
    while (chain.length < 4) {
      const last = chain.length > 0 ? owners.get(chain[chain.length - 1]!) : undefined;
      const counts = new Map<number, number>();
      for (const h of left) if (owners.get(h) !== last) counts.set(owners.get(h)!, (counts.get(owners.get(h)!) ?? 0) + 1);
      const next = [...counts].sort((a, b) => b[1] - a[1])[0];
      if (!next) break;
      chain.push(left.splice(left.findIndex((h) => owners.get(h) === next[0]), 1)[0]!);
    }
    assert.equal(chain.length, 4, `a chain across agents (owners ${JSON.stringify([...owners])})`);
    await seedThroughApi(apis[2]!, [`http://${chain[0]}:${port}/c/0`], join(dir, 'a2'));
    const results = await Promise.all([a0.done, a1.done, a2.done]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const pages = web.requests().filter((r) => r.path.startsWith('/c/'));
    assert.deepEqual(pages.map((r) => `${r.host}${r.path}`).sort(), [0, 1, 2].map((k) => `${chain[k]}/c/${k}`).sort(), 'the seed and two hops, nothing deeper');
    assert.deepEqual(web.requests().filter((r) => r.host === chain[3]).map((r) => r.path), [], 'not even robots.txt of the host at depth 3');
    assert.ok(new Set(pages.map((r) => agentOf(r.userAgent))).size >= 2, 'fetched by different agents');
  } finally {
    await web.close();
  }
});

test('the scope is the mesh\'s policy: the first agent\'s --scope web is in force on joiners started without it; a seed given to a joiner fetches the outside hosts too', async () => {
  const web = await webWithOutsideLinks();
  const dir = tempDir();
  try {
    const resolveOutside = ['--resolve', `*.test:${web.port}:127.0.0.1`];
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--scope', 'web', ...resolveOutside]);
    const first = await listeningOn(a0, { api: true });
    const joiners = [1, 2].map((i) => startAgentProcess(web, dir, `a${i}`, ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${first.mesh}`, '--api', '127.0.0.1:0', ...resolveOutside]));
    const apis = [first.api];
    for (const a of joiners) apis.push((await listeningOn(a, { api: true })).api);
    for (const p of apis) await waitMembers(p, 3);
    const scopeOf = async (api: number) => ((await (await fetch(`http://127.0.0.1:${api}/policy`)).json()) as { scope: { mode: string } }).scope.mode;
    assert.deepEqual(await Promise.all(apis.map(scopeOf)), ['web', 'web', 'web'], 'every agent holds the first agent\'s scope');
    await seedThroughApi(apis[2]!, [web.url(0, '/')], join(dir, 'a2'));
    const results = await Promise.all([a0.done, ...joiners.map((a) => a.done)]);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const outside = new Set(web.requests().filter((r) => !r.host.endsWith('.web.test') && r.path === '/').map((r) => r.host));
    // The pages of web.test link to x1 (their paths' lengths), x1's page to x2, x2's to itself.
    assert.deepEqual([...outside].sort(), ['x1.elsewhere1.test', 'x2.elsewhere2.test'], 'the outside hosts, as --scope web says');
    const counts = pageCounts(web);
    const expected = web.reachable({ seeds: [web.url(0, '/')] }).reachableAllowed;
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every page of web.test reachable from the seed');
    assert.ok(joiners.every((a) => a.log().includes('the mesh\'s crawl scope is in force')), 'each joiner says whose scope it crawls with');
  } finally {
    await web.close();
  }
});

/**
 * A peer key (libp2p protobuf, as `<data-dir>/peer-key` holds it) for a joiner that owns at least `min` of `hosts` that
 * `counts` once it is in the ring of the agents whose data dirs are `members` (capacity 1 each, no zones: docs/mesh.md
 * "Membership"). A fresh key owns each host with a chance of 1 in 4 beside 3 members, so none of 9 in about 1 run
 * in 13 (measured: 31 of 400 random key sets): the join then moves no host, and nothing shows that moved URLs keep
 * their depth.
 */
async function joinerKeyOwning(members: string[], hosts: string[], min: number, counts: (host: string) => boolean): Promise<{ key: Uint8Array; owned: string[] }> {
  // Two copies of @libp2p/interface's key types in node_modules: the keys are the same objects (src/mesh/node.ts casts too).
  const idOf = (key: unknown) => peerIdFromPrivateKey(key as Parameters<typeof peerIdFromPrivateKey>[0]).toString();
  const ids = members.map((d) => idOf(privateKeyFromProtobuf(readFileSync(join(d, 'peer-key')))));
  for (let tries = 0; tries < 1000; tries++) {
    const key = await generateKeyPair('Ed25519');
    const id = idOf(key);
    const ring = new HostRing();
    for (const m of [...ids, id]) ring.add(m, 1);
    const owned = hosts.filter((h) => ring.ownerOf(h) === id);
    if (owned.filter(counts).length >= min) return { key: privateKeyToProtobuf(key), owned };
  }
  throw new Error(`no key in 1000 owns ${min} of ${hosts.length} hosts`);
}

test('--max-depth 2 holds when a join moves hosts mid-crawl: URLs handed to the joiner keep their depth', async () => {
  let port = 0;
  let hosts: string[] = [];
  // robots.txt of the hosts other than the seed's is held until every host is paused: the first request to a host is
  // its robots.txt, so none of their URLs at depth 1 is fetched before the pause, however slow the pause requests.
  const robots = { status: 200, headers: { 'content-type': 'text/plain' }, body: 'User-agent: *\nCrawl-delay: 2\n' };
  let releaseRobots = () => {};
  const robotsHeld = new Promise<typeof robots>((r) => { releaseRobots = () => r(robots); });
  let holding = true;
  // /c/0 on h0 links to /c/1 on every host; /c/k on host i links to /c/k+1 on host i+1.
  const web: SyntheticWeb = await startSyntheticWeb({
    seed: 23, hosts: 9, pagesPerHost: 2, sitemap: false,
    intercept: (req) => {
      if (req.path === '/robots.txt') return holding && req.host !== hosts[0] ? robotsHeld : robots;
      const m = /^\/c\/(\d+)$/.exec(req.path);
      if (!m) return null;
      const k = Number(m[1]);
      const i = hosts.indexOf(req.host);
      const next = k === 0 ? hosts : [hosts[(i + 1) % hosts.length]!];
      const links = k >= 3 ? '' : next.map((h) => `<a href="http://${h}:${port}/c/${k + 1}">next</a>`).join('');
      return { status: 200, headers: { 'content-type': 'text/html' }, body: `<html><body>${links}</body></html>` };
    },
  });
  port = web.port;
  hosts = Array.from({ length: web.hostCount }, (_, i) => web.hostName(i));
  const dir = tempDir();
  // The joiner reaches the mesh through this gate: closed (connections dropped, the joiner retries) until the URLs at
  // depth 1 are queued and their hosts paused, so the join moves hosts that hold queued URLs, however slow the machine.
  let open = false;
  let meshPort = 0;
  const gate = createServer((socket) => {
    if (!open) { socket.destroy(); return; }
    const upstream = connect(meshPort, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    const close = () => { socket.destroy(); upstream.destroy(); };
    socket.on('error', close); upstream.on('error', close); socket.on('close', close); upstream.on('close', close);
  });
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', r));
  try {
    const { agents, port: p0, apis } = await startMeshAgents(web, dir, 3, ['--max-depth', '2']);
    meshPort = p0;
    for (const p of apis) await waitMembers(p, 3);
    // The joiner's identity is picked so that it owns hosts by the ring of 4 (two besides the seed's, whose URL at
    // depth 1 is not held back): it has hosts with queued URLs to take over.
    const joinerKey = await joinerKeyOwning([0, 1, 2].map((i) => join(dir, `a${i}`)), hosts, 2, (h) => h !== hosts[0]);
    mkdirSync(join(dir, 'a3'), { recursive: true });
    writeFileSync(join(dir, 'a3', 'peer-key'), joinerKey.key, { mode: 0o600 });
    const a3 = startAgentProcess(web, dir, 'a3', ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${(gate.address() as AddressInfo).port}`, '--api', '127.0.0.1:0', '--max-depth', '2']);
    agents.push(a3);
    await waitFor(() => a3.log().includes('waiting for seed peer'), 120_000, 'the joiner loaded and knocking');
    const tokens = agents.map((a) => readFileSync(join(dir, a.name, 'api.token'), 'utf8').trim());
    const control = async (i: number, host: string, action: 'pause' | 'resume') =>
      (await fetch(`http://127.0.0.1:${apis[i]!}/hosts/${host}/${action}`, { method: 'POST', headers: { authorization: `Bearer ${tokens[i]!}` } })).status;
    await seedThroughApi(apis[0]!, [`http://${hosts[0]}:${port}/c/0`], join(dir, 'a0'));
    await waitFor(() => web.requests().some((r) => r.path === '/c/0'), 60_000, 'the seed fetched: depth-1 URLs queued on every host');
    // Each host paused on its owner, with its URL at depth 1 queued (held there by its robots.txt, see above).
    const paused = new Map<string, number>();
    for (const deadline = Date.now() + 30_000; paused.size < hosts.length && Date.now() < deadline;) {
      for (const h of hosts) for (let i = 0; i < 3 && !paused.has(h); i++) if (await control(i, h, 'pause') === 200) paused.set(h, i);
    }
    const tPaused = Date.now();
    assert.equal(paused.size, hosts.length, 'every host paused on its owner');
    holding = false;
    releaseRobots();
    open = true;
    apis.push((await listeningOn(a3, { api: true })).api);
    for (const p of apis) await waitMembers(p, 4);
    // Resumed where each host is now: on its old owner, or taken over by the joiner with its queue (not paused there).
    const resumed = new Map<string, number>();
    for (const deadline = Date.now() + 60_000; resumed.size < hosts.length && Date.now() < deadline;) {
      for (const h of hosts) for (let i = 0; i < 4 && !resumed.has(h); i++) if (await control(i, h, 'resume') === 200) resumed.set(h, i);
      await new Promise((r) => setTimeout(r, 100));
    }
    const tResumed = Date.now();
    assert.equal(resumed.size, hosts.length, 'every host resumed where it is owned');
    const results = await Promise.all(agents.map((a) => a.done));
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    // Who held each host when, and who requested what when (ms after the first request), should this fail.
    const t0 = web.requests()[0]?.start ?? 0;
    const at = (t: number) => `${Math.round(t - t0)} ms`;
    const story = `; the joiner owns ${joinerKey.owned.join(' ')}; paused by ${at(tPaused)} on ${[...paused].map(([h, i]) => `${h} a${i}`).join(', ')}; `
      + `resumed by ${at(tResumed)} on ${[...resumed].map(([h, i]) => `${h} a${i}`).join(', ')}; `
      + `requests: ${web.requests().map((r) => `${at(r.start)} ${agentOf(r.userAgent)} ${r.host}${r.path}`).join(', ')}`;
    const pages = web.requests().filter((r) => r.path.startsWith('/c/'));
    const expected = [`${hosts[0]}/c/0`, ...hosts.map((h) => `${h}/c/1`), ...hosts.map((h) => `${h}/c/2`)].sort();
    assert.deepEqual(pages.map((r) => `${r.host}${r.path}`).sort(), expected, `the seed and two hops, each once, nothing at depth 3${story}`);
    const byJoiner = pages.filter((r) => agentOf(r.userAgent) === 'a3').map((r) => `${r.host}${r.path}`);
    assert.ok(byJoiner.some((u) => u.endsWith('/c/1')), `the joiner took hosts over with their queued URLs (it fetched: ${byJoiner.join(' ')})${story}`);
    process.stderr.write(`# fetched by the joiner: ${byJoiner.join(' ')} (it owns ${joinerKey.owned.join(' ')})\n`);
  } finally {
    releaseRobots();
    gate.close();
    await web.close();
  }
});
