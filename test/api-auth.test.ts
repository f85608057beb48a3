// The API's bearer token and the agent's startup checks (docs/operations.md "API
// security", docs/cli.md "Exit codes"): changes always take the token, on
// loopback too; the agent makes <data-dir>/api.token (0600) and the CLI finds it
// there; every startup error is one line, exit 2, with nothing started.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { startApiServer, type ApiServer } from '../src/api/server.js';
import { apiTokenPath, ensureTokenFile, readTokenFileIfPresent } from '../src/api/token.js';
import { localAgentToken, runSeed } from '../src/api/client.js';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { MemoryBackend } from './api-fixture.js';
import { BIN, spawnAgent, tempDir, waitUntil, type AgentProcess } from './helpers.js';

class Sink { text = ''; write(s: string) { this.text += s; return true; } }

const TOKEN = 'beef'.repeat(10);

async function send(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, json, headers: res.headers };
}

const seedBody = JSON.stringify({ urls: ['http://a.example/'] });
const jsonType = { 'content-type': 'application/json' };

describe('changes take the token, reads on loopback stay open', () => {
  let backend: MemoryBackend;
  let server: ApiServer;
  before(async () => {
    const file = join(tempDir(), 'api.token');
    writeFileSync(file, TOKEN + '\n', { mode: 0o600 });
    backend = new MemoryBackend();
    server = await startApiServer({ listen: '127.0.0.1:0', tokenFile: file, openReads: true, backend });
  });
  after(() => server.close());

  test('RFC 6750 §3: every mutating route without the token, or with a wrong one, is 401 on loopback; nothing changes', async () => {
    assert.equal(server.authRequired, false, 'reads are open');
    const mutations: Array<[string, string, string | undefined]> = [
      ['POST', '/seeds', seedBody], ['POST', '/hosts/www.example.com/pause', undefined], ['POST', '/hosts/www.example.com/resume', undefined],
      ['PUT', '/hosts/www.example.com/policy', '{"minDelayMs":5}'], ['POST', '/leave', undefined],
    ];
    for (const [method, path, body] of mutations) {
      for (const auth of [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Basic ${TOKEN}` }] as Array<Record<string, string>>) {
        const r = await send(server.url, method, path, { ...jsonType, ...auth }, body);
        assert.equal(r.status, 401, `${method} ${path} ${JSON.stringify(auth)}`);
        assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="ubicrawl"');
        assert.match(r.json.error, /bearer token/);
      }
    }
    assert.deepEqual(backend.seeded, []);
    assert.equal(backend.leaveCalls, 0);
    assert.equal(backend.hosts.get('www.example.com')?.politeness?.paused, false);
    assert.equal((await send(server.url, 'GET', '/status')).status, 200, 'reads answer without the token');
    assert.equal((await send(server.url, 'GET', '/metrics')).status, 200);
    assert.equal((await send(server.url, 'GET', '/hosts/www.example.com')).status, 200);
  });

  test('with the token the same requests work', async () => {
    const auth = { ...jsonType, authorization: `Bearer ${TOKEN}` };
    const r = await send(server.url, 'POST', '/seeds', auth, seedBody);
    assert.equal(r.status, 200);
    assert.deepEqual(backend.seeded, ['http://a.example/']);
    assert.equal((await send(server.url, 'POST', '/hosts/www.example.com/pause', auth)).json.paused, true);
    assert.equal((await send(server.url, 'POST', '/leave', auth)).status, 202);
    assert.equal(backend.leaveCalls, 1);
  });
});

test('a server without any token answers reads and refuses every change', async () => {
  const backend = new MemoryBackend();
  const server = await startApiServer({ listen: '127.0.0.1:0', backend });
  try {
    assert.equal((await send(server.url, 'GET', '/status')).status, 200);
    const r = await send(server.url, 'POST', '/seeds', jsonType, seedBody);
    assert.equal(r.status, 401);
    assert.match(r.json.error, /no bearer token configured/);
    assert.deepEqual(backend.seeded, []);
  } finally {
    await server.close();
  }
});

test('a server bound before its backend answers 503 until the backend is attached', async () => {
  const server = await startApiServer({ listen: '127.0.0.1:0' });
  try {
    const early = await send(server.url, 'GET', '/status');
    assert.equal(early.status, 503);
    assert.match(early.json.error, /starting/);
    server.attach(new MemoryBackend());
    assert.equal((await send(server.url, 'GET', '/status')).status, 200);
  } finally {
    await server.close();
  }
});

test('ensureTokenFile: a new random token in a 0600 file, reused afterwards; no temporary file left', () => {
  const dir = tempDir();
  const file = apiTokenPath(dir);
  assert.equal(readTokenFileIfPresent(file), undefined);
  const a = ensureTokenFile(file);
  assert.match(a, /^[0-9a-f]{64}$/);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(ensureTokenFile(file), a, 'reused');
  assert.notEqual(ensureTokenFile(apiTokenPath(tempDir())), a, 'random');
  assert.deepEqual(readdirSync(dir), ['api.token']);
});

test('the local agent token goes only to a loopback API address', () => {
  const dir = tempDir();
  const token = ensureTokenFile(apiTokenPath(dir));
  for (const api of ['127.0.0.1:7070', 'localhost:7070', '7070', ':7070', 'http://[::1]:7070']) assert.equal(localAgentToken(api, dir), token, api);
  for (const api of ['10.1.2.3:7070', 'agent.example:7070', 'http://192.0.2.7:7070']) assert.equal(localAgentToken(api, dir), undefined, api);
  assert.equal(localAgentToken('127.0.0.1:7070', tempDir()), undefined, 'no token file');
});

test('ubicrawl seed finds the token in --data-dir; without it the agent answers 401 and the message says how', async () => {
  const dir = tempDir();
  const file = apiTokenPath(dir);
  ensureTokenFile(file);
  const backend = new MemoryBackend();
  const server = await startApiServer({ listen: '127.0.0.1:0', tokenFile: file, openReads: true, backend });
  try {
    const out = new Sink();
    assert.equal(await runSeed(['http://a.example/'], { api: server.url, dataDir: dir, stdout: out, stderr: new Sink() }), 0);
    assert.match(out.text, /^accepted 1 URL/);
    const err = new Sink();
    assert.equal(await runSeed(['http://b.example/'], { api: server.url, dataDir: tempDir(), stdout: new Sink(), stderr: err }), 1);
    assert.match(err.text, /bearer token.*--data-dir/);
    assert.deepEqual(backend.seeded, ['http://a.example/']);
  } finally {
    await server.close();
  }
});

// ---- whole agents through the CLI ----

function joinArgs(web: SyntheticWeb, dataDir: string, extra: string[]): string[] {
  return ['join', '--data-dir', dataDir, '--min-delay', '50', '--delay-factor', '0', '--progress', 'off', '--log-level', 'info',
    '--listen', '/ip4/127.0.0.1/tcp/0', '--no-sitemaps', '--seed', web.roots()[0]!, ...web.resolveArgs.flatMap((r) => ['--resolve', r]), ...extra];
}

async function apiOf(run: AgentProcess): Promise<string> {
  const re = /"api":"http:\/\/(127\.0\.0\.1:\d+)"/;
  const up = await waitUntil(() => re.test(run.stderr) || run.proc.exitCode !== null, 30_000);
  const m = re.exec(run.stderr);
  assert.ok(up && m, `API up (stderr: ${run.stderr.slice(-1000)})`);
  return m[1]!;
}

/** `ubicrawl …`, asynchronously (the web is served from this process). */
function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const run = spawnAgent(args);
  return run.closed.then(({ code }) => ({ code, out: run.stdout, err: run.stderr }));
}

test('an agent with --api writes <data-dir>/api.token (0600), requires it for changes, keeps it across restarts; `ubicrawl seed --data-dir` just works', async () => {
  const web = await startSyntheticWeb({ seed: 41, hosts: 3, pagesPerHost: 4, outLinks: 2, crossHostShare: 0, pageBytes: 500 });
  const dir = tempDir();
  const data = join(dir, 'data');
  try {
    const agent = spawnAgent(joinArgs(web, data, ['--api', '127.0.0.1:0']));
    const api = await apiOf(agent);
    const file = join(data, 'api.token');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const token = readFileSync(file, 'utf8').trim();
    const base = `http://${api}`;
    const body = JSON.stringify({ urls: [web.roots()[1]] });
    assert.equal((await send(base, 'POST', '/seeds', jsonType, body)).status, 401, 'no token on loopback: refused');
    assert.equal((await send(base, 'GET', '/status')).status, 200, 'reads stay open');
    assert.equal((await send(base, 'POST', '/seeds', { ...jsonType, authorization: `Bearer ${token}` }, body)).status, 200);
    // The CLI finds the token by the data dir.
    const seeded = await cli(['seed', '--api', api, '--data-dir', data, web.roots()[2]!]);
    assert.equal(seeded.code, 0, seeded.err);
    assert.match(seeded.out, /^accepted 1 URL/);
    const refused = await cli(['seed', '--api', api, '--data-dir', join(dir, 'elsewhere'), web.roots()[2]!]);
    assert.equal(refused.code, 1);
    assert.match(refused.err, /bearer token/);
    // A second agent on the same data dir: the store is taken, a startup error.
    const twin = await cli(joinArgs(web, data, ['--api', '127.0.0.1:0']));
    assert.equal(twin.code, 2, twin.err);
    assert.equal(twin.err.trim().split('\n').length, 1, twin.err);
    assert.match(twin.err, /cannot open the store/);
    assert.ok(await waitUntil(() => web.roots().every((r) => web.requests().some((q) => q.url === r)), 20_000), 'all three seeds crawled');
    const left = await cli(['leave', '--api', api, '--data-dir', data, '--wait']);
    assert.equal(left.code, 0, left.err);
    assert.equal((await agent.closed).code, 0);
    // Restarted: the same token.
    const again = spawnAgent(joinArgs(web, data, ['--api', '127.0.0.1:0']));
    const api2 = await apiOf(again);
    assert.equal(readFileSync(file, 'utf8').trim(), token);
    const left2 = await cli(['leave', '--api', api2, '--data-dir', data, '--wait']);
    assert.equal(left2.code, 0, left2.err);
    assert.equal((await again.closed).code, 0);
  } finally {
    await web.close();
  }
});

test('every startup error is one line on stderr, exit 2, before anything starts', async () => {
  const web = await startSyntheticWeb({ seed: 42, hosts: 2, pagesPerHost: 3, outLinks: 2, pageBytes: 500 });
  const dir = tempDir();
  const busy: Server = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  const busyPort = (busy.address() as { port: number }).port;
  const aFile = join(dir, 'a-file');
  writeFileSync(aFile, 'not a directory\n');
  const badKey = join(dir, 'bad.key');
  writeFileSync(badKey, 'not a swarm key\n');
  const cases: Array<{ name: string; data: string; extra: string[]; re: RegExp }> = [
    { name: 'bad option value', data: join(dir, 'd1'), extra: ['--concurrency', 'lots'], re: /--concurrency must be a whole number/ },
    { name: 'API beyond loopback without a token', data: join(dir, 'd2'), extra: ['--api', '0.0.0.0:7070'], re: /refusing to serve the API on 0\.0\.0\.0/ },
    { name: 'bad API address', data: join(dir, 'd3'), extra: ['--api', 'nowhere'], re: /invalid API listen address/ },
    { name: 'missing API token file', data: join(dir, 'd4'), extra: ['--api', '127.0.0.1:0', '--api-token-file', join(dir, 'absent')], re: /cannot read the API token file .*ENOENT/ },
    { name: 'API port in use', data: join(dir, 'd5'), extra: ['--api', `127.0.0.1:${busyPort}`], re: /address in use/ },
    { name: 'data dir is a file', data: aFile, extra: [], re: /not a directory/ },
    { name: 'data dir under a file', data: join(aFile, 'sub'), extra: [], re: /cannot use the data dir .*ENOTDIR/ },
    { name: 'unreadable swarm key', data: join(dir, 'd6'), extra: ['--swarm-key', join(dir, 'no.key')], re: /cannot read the swarm key .*ENOENT/ },
    { name: 'malformed swarm key', data: join(dir, 'd7'), extra: ['--swarm-key', badKey], re: /invalid swarm key/ },
    { name: 'bad mesh listen address', data: join(dir, 'd8'), extra: ['--listen', '/nonsense/1'], re: /invalid --listen address/ },
  ];
  try {
    const runs = cases.map(async (c) => ({ c, r: await cli(joinArgs(web, c.data, c.extra)) }));
    for (const { c, r } of await Promise.all(runs)) {
      assert.equal(r.code, 2, `${c.name}: exit 2 (stderr: ${r.err})`);
      const lines = r.err.trim().split('\n');
      assert.equal(lines.length, 1, `${c.name}: one line (${r.err})`);
      assert.match(lines[0]!, c.re, c.name);
      assert.equal(r.out, '', `${c.name}: no summary`);
      // Nothing started: no store, no peer key, no WARC directory (the API's own token may have been made).
      if (existsSync(c.data) && statSync(c.data).isDirectory()) {
        assert.deepEqual(readdirSync(c.data).filter((f) => f !== 'api.token'), [], `${c.name}: nothing in the data dir`);
      }
    }
    assert.deepEqual(web.requests(), [], 'no request reached the web');
  } finally {
    busy.close();
    await web.close();
  }
});

test('a data dir that is not writable is a startup error (as root: checked as user nobody, since root writes anywhere)', async () => {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  const readOnly = join(dir, 'read-only');
  mkdirSync(readOnly, { mode: 0o500 });
  const asRoot = process.getuid?.() === 0;
  const proc = spawn(process.execPath, [BIN, 'join', '--data-dir', readOnly, '--progress', 'off'], {
    stdio: ['ignore', 'pipe', 'pipe'], ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
  });
  let err = '';
  proc.stderr.on('data', (d: Buffer) => { err += d; });
  const code = await new Promise<number | null>((r) => proc.once('close', r));
  assert.equal(code, 2, err);
  assert.equal(err, `ubicrawl: the data dir ${readOnly} is not writable: EACCES\n`);
  assert.deepEqual(readdirSync(readOnly), []);
});

test('--help of the client commands documents --data-dir', () => {
  const r = spawnSync(process.execPath, [BIN, 'seed', '--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /--data-dir <dir>/);
});
