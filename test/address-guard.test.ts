// No internal fetches by default (docs/operations.md "Internal addresses").
//
// Only loopback is ever dialled here. The private, link-local, CGNAT and IPv6
// ranges are checked through the fetcher's connect hook, which records what
// would be dialled and refuses anything that is not loopback; the crawl tests
// listen on loopback targets (127.0.0.1, 127.0.0.2, 127.0.0.3, ::1) and assert
// that no connection arrives unless the range is allowed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildConnector } from 'undici';
import { Fetcher, type FetchOutcome } from '../src/fetch/fetcher.js';
import { HostResolver } from '../src/fetch/dns.js';
import { AddressPolicy, classifyAddress } from '../src/fetch/address.js';
import { defaultConfig, parseResolveRule } from '../src/config.js';
import { startAgent } from '../src/crawl/agent.js';
import { openStore } from '../src/store/db.js';
import { decodeFetchRecord, type FetchRecord } from '../src/crawl/records.js';
import { kindOfFailure } from '../src/politeness/host.js';
import { startDnsServer } from './helpers-dns.js';
import { BIN, tempDir } from './helpers.js';

/** A connect hook that records every address the fetcher would dial and dials only loopback. */
function recordingDial() {
  const dialled: string[] = [];
  const real = buildConnector({ timeout: 5000 });
  const dial: buildConnector.connector = (opts, cb) => {
    dialled.push(opts.hostname);
    if (classifyAddress(opts.hostname).range !== 'loopback') {
      cb(new Error(`test hook: not dialling ${opts.hostname}`), null);
      return;
    }
    real(opts, cb);
  };
  return { dialled, dial };
}

interface Target { server: Server; port: number; connections: number; paths: string[] }

/** An HTTP server on a loopback address that counts connections and requested paths. */
async function listenOn(host: string, handler?: (path: string, hostHeader: string, res: import('node:http').ServerResponse) => boolean): Promise<Target> {
  const t: Target = { server: createServer(), port: 0, connections: 0, paths: [] };
  t.server.on('connection', () => { t.connections++; });
  t.server.on('request', (req, res) => {
    const path = req.url ?? '/';
    t.paths.push(path);
    if (handler?.(path, req.headers.host ?? '', res)) return;
    if (path === '/robots.txt' || path === '/sitemap.xml') { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body>${path}</body></html>`);
  });
  t.server.listen(0, host);
  await once(t.server, 'listening');
  t.port = (t.server.address() as { port: number }).port;
  return t;
}

function close(...ts: Target[]): Promise<unknown> {
  return Promise.all(ts.map((t) => new Promise((r) => { t.server.closeAllConnections(); t.server.close(r); })));
}

function blocked(out: FetchOutcome): string {
  assert.equal(out.ok, false, `${out.url} must not be fetched`);
  assert.equal(!out.ok && out.kind, 'blocked-address', `${out.url}: ${!out.ok ? out.message : ''}`);
  return !out.ok ? out.message : '';
}

test('the connect path refuses private, link-local, CGNAT, unique-local and mapped/NAT64 targets after DNS, without dialling', async () => {
  const dns = await startDnsServer({
    'private.test': { a: ['10.0.0.1'] }, 'meta.test': { a: ['169.254.169.254'] }, 'cgnat.test': { a: ['100.64.0.1'] },
    'ula.test': { aaaa: ['fd00::1'] }, 'll6.test': { aaaa: ['fe80::1'] }, 'mapped.test': { aaaa: ['::ffff:a00:1'] },
    'nat64.test': { aaaa: ['64:ff9b::a9fe:a9fe'] }, 'loop.test': { a: ['127.0.0.1'] },
  });
  const cfg = defaultConfig();
  const hook = recordingDial();
  const f = new Fetcher(cfg.fetch, cfg.userAgent, new HostResolver([], { servers: [dns.server], tries: 1 }), { dial: hook.dial });
  try {
    const cases: Array<[string, RegExp]> = [
      ['http://private.test/', /10\.0\.0\.1 is private/], ['http://meta.test/latest/meta-data/', /169\.254\.169\.254 is link-local/],
      ['http://cgnat.test/', /100\.64\.0\.1 is cgnat/], ['http://ula.test/', /fd00::1 is unique-local/],
      ['http://ll6.test/', /fe80::1 is link-local/], ['http://mapped.test/', /ipv4-mapped 10\.0\.0\.1, private/],
      ['http://nat64.test/', /nat64 169\.254\.169\.254, link-local/], ['http://loop.test:9/', /127\.0\.0\.1 is loopback/],
      // Literals, in the notations a URL canonicalises
      ['http://10.0.0.1/', /private/], ['http://0xa9fea9fe/', /169\.254\.169\.254 is link-local/], ['http://[fd00::1]/', /unique-local/],
      ['http://[::ffff:169.254.169.254]/', /link-local/], ['http://100.64.0.1:8080/', /cgnat/], ['http://[fe80::1]/', /link-local/],
      ['http://3232235777/', /192\.168\.1\.1 is private/], ['http://[::1]:9/', /loopback/], ['http://0/', /0\.0\.0\.0 is unspecified/],
    ];
    for (const [url, why] of cases) assert.match(blocked(await f.fetch(url)), why, url);
    assert.deepEqual(hook.dialled, [], 'nothing was dialled');
    assert.ok(dns.count('private.test') > 0, 'the name was resolved first: the check is on the answer');
  } finally {
    await f.close();
  }
  // An allowed range reaches the dialler (the hook records it and does not dial).
  const open = recordingDial();
  const g = new Fetcher(cfg.fetch, cfg.userAgent, new HostResolver([], { servers: [dns.server], tries: 1 }), {
    dial: open.dial, addresses: new AddressPolicy(['10.0.0.0/8', 'fd00::/8']),
  });
  try {
    const a = await g.fetch('http://private.test/');
    const b = await g.fetch('http://[fd00::1]/');
    const c = await g.fetch('http://meta.test/');
    assert.equal(!a.ok && a.kind !== 'blocked-address', true);
    assert.equal(!b.ok && b.kind !== 'blocked-address', true);
    blocked(c);
    assert.deepEqual(open.dialled, ['10.0.0.1', 'fd00::1']);
  } finally {
    await g.close();
  }
});

test('a --resolve rule allows its own target only; a name that rebinds to a refused address is caught at connect', async () => {
  const site = await listenOn('127.0.0.1', (_p, _h, res) => { res.writeHead(200, { connection: 'close' }).end('hi'); return true; });
  const dns = await startDnsServer({ 'rebind.test': { a: ['127.0.0.1'], ttl: 1 } });
  const cfg = defaultConfig();
  const hook = recordingDial();
  const clock = { t: 1_700_000_000_000 };
  const rules = [parseResolveRule(`pinned.test:${site.port}:127.0.0.1`), parseResolveRule('inside.test:80:10.0.0.1')];
  const f = new Fetcher(cfg.fetch, cfg.userAgent, new HostResolver(rules, { servers: [dns.server], tries: 1, now: () => clock.t }), {
    dial: hook.dial, addresses: new AddressPolicy(['127.0.0.1/32']),
  });
  try {
    // The rule's own connection goes through; the same address by literal or localhost does not (nothing allows 127.0.0.2).
    const noRule = new Fetcher(cfg.fetch, cfg.userAgent, new HostResolver(rules), { dial: hook.dial });
    try {
      const ok = await noRule.fetch(`http://pinned.test:${site.port}/`);
      assert.equal(ok.ok && ok.status, 200);
      blocked(await noRule.fetch(`http://127.0.0.1:${site.port}/`));
      blocked(await noRule.fetch(`http://localhost:${site.port}/`));
      const inside = await noRule.fetch('http://inside.test/');
      assert.equal(!inside.ok && inside.kind !== 'blocked-address', true, 'an operator rule to 10.0.0.1 reaches the dialler');
    } finally {
      await noRule.close();
    }
    assert.deepEqual(hook.dialled, ['127.0.0.1', '10.0.0.1']);
    // DNS rebinding: the first answer is allowed, the next one (after the TTL) is not.
    hook.dialled.length = 0;
    const first = await f.fetch(`http://rebind.test:${site.port}/`);
    assert.equal(first.ok && first.status, 200);
    dns.names.set('rebind.test', { a: ['127.0.0.2'], ttl: 1 });
    clock.t += 3_600_000;
    assert.match(blocked(await f.fetch(`http://rebind.test:${site.port}/`)), /127\.0\.0\.2 is loopback/);
    assert.deepEqual(hook.dialled, ['127.0.0.1'], 'the rebound address was never dialled');
    assert.equal(dns.count('rebind.test', 'A'), 2, 'the second connection asked DNS again');
  } finally {
    await f.close();
    await close(site);
  }
});

/** The synthetic web of the crawl tests: a seed site whose links and redirects point inward in every notation. */
async function inwardWeb() {
  const t1 = await listenOn('127.0.0.1');
  const t2 = await listenOn('127.0.0.2');
  const t3 = await listenOn('127.0.0.3');
  const t6 = await listenOn('::1');
  const targets: Record<string, string> = {
    ip: `http://127.0.0.2:${t2.port}/ip`,
    localhost: `http://localhost:${t1.port}/localhost`,
    v6: `http://[::1]:${t6.port}/v6`,
    decimal: `http://2130706433:${t1.port}/decimal`,
    hex: `http://0x7f.0.0.1:${t1.port}/hex`,
    short: `http://127.1:${t1.port}/short`,
    octal: `http://0177.0.0.1:${t1.port}/octal`,
    dns: `http://inward.test:${t3.port}/dns`, // a name whose DNS answer is loopback
  };
  const seed = await listenOn('127.0.0.1', (path, host, res) => {
    const name = host.split(':')[0];
    if (name === 'r.test' && path === '/robots.txt') {
      // robots.txt redirects inward: the fetcher's connect path must refuse the hop.
      res.writeHead(302, { location: `http://127.0.0.2:${t2.port}/robots.txt` }).end();
      return true;
    }
    if (name === 'seed.test' && path === '/') {
      const links = [...Object.values(targets), ...Object.keys(targets).map((k) => `/r/${k}`), `http://r.test:${seedPort()}/`];
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body>${links.map((l) => `<a href="${l}">x</a>`).join('')}</body></html>`);
      return true;
    }
    const m = /^\/r\/(\w+)$/.exec(path);
    if (name === 'seed.test' && m && targets[m[1]!]) {
      res.writeHead(302, { location: `${targets[m[1]!]}-redirect` }).end();
      return true;
    }
    return false;
  });
  const seedPort = () => seed.port;
  const dns = await startDnsServer({ 'inward.test': { a: ['127.0.0.3'] } });
  const canonical = (u: string) => new URL(u).href;
  const inward = [...Object.values(targets), ...Object.values(targets).map((u) => `${u}-redirect`)].map(canonical);
  return {
    seed, t1, t2, t3, t6, dns, inward,
    options: (dir: string) => ({
      dataDir: dir, seeds: [`http://seed.test:${seed.port}/`], untilIdle: true, minDelayMs: 10, delayFactor: 0, logLevel: 'silent',
      resolve: [parseResolveRule(`seed.test:${seed.port}:127.0.0.1`), parseResolveRule(`r.test:${seed.port}:127.0.0.1`)],
      dns: { servers: [dns.server], tries: 1 }, sitemaps: { enabled: false }, politeness: { maxRetries: 0 },
      // The links lead to other hosts on purpose: follow every link (docs/scope.md).
      crawlScope: { mode: 'web' as const },
    }),
    close: () => close(seed, t1, t2, t3, t6),
  };
}

async function fetchRecords(dir: string): Promise<Map<string, FetchRecord>> {
  const store = await openStore(dir);
  try {
    const out = new Map<string, FetchRecord>();
    for await (const [, v] of store.fetches.iterator()) {
      const r = decodeFetchRecord(Buffer.from(v));
      if (r) out.set(r.url, r);
    }
    return out;
  } finally {
    await store.close();
  }
}

test('a crawl whose pages link and redirect inward in every notation opens no connection there; the URLs are recorded as blocked-address', async () => {
  const web = await inwardWeb();
  const dir = tempDir();
  try {
    const agent = await startAgent(web.options(dir));
    const summary = await agent.done as { errors: Record<string, number>; politeness: { pauses: number; parkedHosts: number; failures: Record<string, number> } };
    for (const t of [web.t1, web.t2, web.t3, web.t6]) assert.equal(t.connections, 0, `no connection to port ${t.port} (${t.paths.join(', ')})`);
    const records = await fetchRecords(dir);
    assert.equal(records.get(`http://seed.test:${web.seed.port}/`)?.status, 200, 'the seed itself was fetched (its --resolve rule allows it)');
    for (const u of web.inward) assert.equal(records.get(u)?.failure, 'blocked-address', `${u} recorded as blocked-address`);
    assert.equal(summary.errors['blocked-address'], web.inward.length, 'each refused URL counted once as a blocked-address failure');
    // Eight refused URLs on 127.0.0.1:port, more than a run of failures that pauses a host: none is the host's fault.
    assert.equal(summary.politeness.pauses, 0);
    assert.equal(summary.politeness.parkedHosts, 0);
    assert.equal(summary.politeness.failures['blocked-address'], web.inward.length);
    assert.equal(kindOfFailure('blocked-address'), undefined, 'politeness never sees a refused address as the host\'s failure');
    // r.test's robots.txt redirected to 127.0.0.2: the hop was refused (so robots.txt is unreachable and its page waits).
    assert.equal(records.get(`http://r.test:${web.seed.port}/`)?.failure, 'robots-unreachable');
    assert.ok(web.dns.count('inward.test') > 0, 'the inward name was resolved, then refused on its answer');
  } finally {
    await web.close();
  }
});

test('with --allow-address 127.0.0.0/8 and ::1/128 the same inward links are fetched', async () => {
  const web = await inwardWeb();
  const dir = tempDir();
  try {
    const agent = await startAgent({ ...web.options(dir), allowAddress: ['127.0.0.0/8', '::1/128'] });
    const summary = await agent.done as { errors: Record<string, number> };
    const records = await fetchRecords(dir);
    for (const u of web.inward) assert.equal(records.get(u)?.status, 200, `${u} fetched`);
    const paths = (t: Target) => new Set(t.paths);
    for (const p of ['/localhost', '/decimal', '/hex', '/short', '/octal', '/localhost-redirect', '/decimal-redirect']) assert.ok(paths(web.t1).has(p), p);
    assert.ok(paths(web.t2).has('/ip') && paths(web.t2).has('/ip-redirect') && paths(web.t2).has('/robots.txt'));
    assert.ok(paths(web.t6).has('/v6') && paths(web.t3).has('/dns'));
    assert.equal(records.get(`http://r.test:${web.seed.port}/`)?.status, 200, 'the robots.txt redirect inward was followed');
    assert.equal(summary.errors['blocked-address'] ?? 0, 0);
  } finally {
    await web.close();
  }
});

test('POST /seeds refuses internal addresses with a 400 that says why; a mixed batch keeps the good URLs', async () => {
  const site = await listenOn('127.0.0.1');
  const dir = tempDir();
  const tokenFile = join(dir, 'token');
  const token = 'a'.repeat(64);
  writeFileSync(tokenFile, token, { mode: 0o600 });
  await assert.rejects(startAgent({ dataDir: join(dir, 'bad'), allowAddress: ['10.0.0.0/99'] }), /--allow-address prefix length/);
  const agent = await startAgent({
    dataDir: join(dir, 'data'), logLevel: 'silent', minDelayMs: 10, sitemaps: { enabled: false },
    resolve: [parseResolveRule(`good.test:${site.port}:127.0.0.1`)], api: { listen: '127.0.0.1:0', tokenFile },
  });
  const post = async (urls: string[]) => {
    const res = await fetch(`${agent.apiUrl}/seeds`, {
      method: 'POST', body: JSON.stringify({ urls }), headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });
    return { status: res.status, json: await res.json() as { error?: string; accepted: number; rejected: Array<{ url: string; reason: string; detail?: string }> } };
  };
  try {
    const all = await post(['http://2130706433:1/x', 'http://[::1]:1/', 'http://localhost:1/', 'http://10.0.0.1/', 'http://[fd00::1]/']);
    assert.equal(all.status, 400);
    assert.match(all.json.error!, /blocked-address/);
    assert.match(all.json.error!, /127\.0\.0\.1 is loopback/);
    assert.deepEqual(all.json.rejected.map((r) => r.reason), Array(5).fill('blocked-address'));
    assert.match(all.json.rejected[3]!.detail!, /10\.0\.0\.1 is private/);
    assert.match(all.json.rejected[4]!.detail!, /fd00::1 is unique-local/);
    const mixed = await post([`http://good.test:${site.port}/`, 'http://169.254.169.254/latest/meta-data/']);
    assert.equal(mixed.status, 200);
    assert.equal(mixed.json.accepted, 1);
    assert.equal(mixed.json.rejected[0]!.reason, 'blocked-address');
    assert.match(mixed.json.rejected[0]!.detail!, /link-local/);
  } finally {
    await agent.stop();
    await close(site);
  }
});

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '', stderr = '';
  p.stdout.on('data', (d) => { stdout += d; });
  p.stderr.on('data', (d) => { stderr += d; });
  const timer = setTimeout(() => p.kill('SIGKILL'), 30_000);
  return new Promise((resolve) => p.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); }));
}

test('robots check applies the same guard: loopback refused unless allowed or pinned by --resolve', async () => {
  const site = await listenOn('127.0.0.1', (path, _h, res) => {
    if (path !== '/robots.txt') return false;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private\n');
    return true;
  });
  try {
    const refused = await runCli(['robots', 'check', `http://127.0.0.1:${site.port}/robots.txt`, '/private']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /blocked-address: 127\.0\.0\.1 is loopback/);
    assert.equal(site.connections, 0);
    const allowed = await runCli(['robots', 'check', '--allow-address', '127.0.0.0/8', `http://127.0.0.1:${site.port}/robots.txt`, '/private']);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, /disallowed/i);
    const pinned = await runCli(['robots', 'check', '--resolve', `robots.test:${site.port}:127.0.0.1`, `http://robots.test:${site.port}/robots.txt`, '/private']);
    assert.equal(pinned.code, 0, pinned.stderr);
    const bad = await runCli(['robots', 'check', '--allow-address', '10.0.0.0/40', `http://127.0.0.1:${site.port}/robots.txt`, '/x']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /prefix length/);
    const badJoin = await runCli(['join', '--allow-address', 'intranet', '--data-dir', join(tempDir(), 'd')]);
    assert.equal(badJoin.code, 2);
    assert.match(badJoin.stderr, /--allow-address expects an address range/);
  } finally {
    await close(site);
  }
});
