// The agent HTTP API (docs/operations.md): every route, validation, limits, the
// security rules, /metrics as valid Prometheus text, and the CLI client.
// The backend is an in-memory fixture (test/api-fixture.ts); servers listen on 127.0.0.1 only.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { createHash } from 'node:crypto';
import { writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import {
  startApiServer, parseListen, isLoopbackHost, assertListenAllowed, canonicalHost, type ApiServer, MAX_SEED_URLS,
} from '../src/api/server.js';
import { ApiError, type StatusResponse, type UrlReport, type HostReport } from '../src/api/backend.js';
import { Ring, ThroughputHistory, RecentErrors } from '../src/api/history.js';
import { createMetrics } from '../src/api/metrics.js';
import { apiRequest, apiBaseUrl, runStatus, runSeed, runLeave, runInspect, ApiRequestError } from '../src/api/client.js';
import { MemoryBackend, SELF, PEER_B, FETCHED_URL, WARC_FILE } from './api-fixture.js';
import { parseExposition, ExpositionError } from './promtext.js';
import { tempDir } from './helpers.js';

interface Reply { status: number; headers: IncomingHttpHeaders; text: string; json: any }

/** One request over node:http (full control of headers, Host included). */
function call(base: string, method: string, path: string, opts: { body?: string | Buffer; headers?: Record<string, string>; chunks?: Buffer[] } = {}): Promise<Reply> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method, path, headers: opts.headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (opts.chunks) { for (const c of opts.chunks) req.write(c); req.end(); } else req.end(opts.body);
  });
}

// Mutating routes always need the bearer token, on loopback too: the servers below have this one.
const TEST_TOKEN = 'feed'.repeat(10);
const auth = { authorization: `Bearer ${TEST_TOKEN}` };
const jsonHeaders = { 'content-type': 'application/json', ...auth };
const TOKEN_FILE = join(tempDir(), 'token');
writeFileSync(TOKEN_FILE, TEST_TOKEN + '\n', { mode: 0o600 });

class Sink { text = ''; write(s: string) { this.text += s; return true; } }

describe('API server on loopback, reads open (changes take the token)', () => {
  let backend: MemoryBackend;
  let server: ApiServer;
  before(async () => {
    backend = new MemoryBackend();
    server = await startApiServer({ listen: '127.0.0.1:0', tokenFile: TOKEN_FILE, openReads: true, backend });
  });
  after(() => server.close());

  test('GET /status answers this agent, the mesh, and the dashboard series', async () => {
    const r = await call(server.url, 'GET', '/status');
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^application\/json; charset=utf-8$/);
    assert.equal(r.headers['cache-control'], 'no-store');
    const s = r.json as StatusResponse;
    assert.equal(s.agent.id, SELF);
    assert.equal(s.agent.state, 'active');
    assert.equal(s.agent.counters.fetched, backend.fetched);
    assert.ok(s.agent.counters.pagesPerSecond > 0);
    assert.deepEqual(s.mesh.members.map((m) => m.self), [true, false, false]);
    assert.ok(Math.abs(s.mesh.members.reduce((a, m) => a + m.share, 0) - 1) < 1e-9);
    assert.equal(s.throughput.length, 61);
    assert.equal(s.topHosts.length, 3);
    assert.equal(s.recentErrors[0].kind, 'dns', 'most recent error first');
    assert.ok(Math.abs(s.now - Date.now()) < 5000);
  });

  test('/status?hosts=&errors= bound the lists; bad counts are 400', async () => {
    const s = (await call(server.url, 'GET', '/status?hosts=1&errors=1')).json as StatusResponse;
    assert.equal(s.topHosts.length, 1);
    assert.equal(s.recentErrors.length, 1);
    for (const q of ['hosts=abc', 'errors=-1', 'hosts=101', 'hosts=1e2']) {
      const r = await call(server.url, 'GET', `/status?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(typeof r.json.error, 'string');
    }
  });

  test('RFC 9110 §9.3.2: HEAD /status has the headers of GET and no body', async () => {
    const r = await call(server.url, 'HEAD', '/status');
    assert.equal(r.status, 200);
    assert.equal(r.text, '');
    assert.ok(Number(r.headers['content-length']) > 0);
  });

  test('GET /hosts/:host reports owner, robots, politeness, queue, last fetches, errors', async () => {
    const r = await call(server.url, 'GET', '/hosts/www.example.com');
    assert.equal(r.status, 200);
    const h = r.json as HostReport;
    assert.equal(h.owner, SELF);
    assert.equal(h.robots?.state, 'parsed');
    assert.equal(h.robots?.crawlDelaySeconds, 2);
    assert.equal(h.politeness?.delayMs, 2000);
    assert.equal(h.queue.depth, 17);
    assert.equal(h.lastFetches[0].url, FETCHED_URL);
    assert.deepEqual(h.errors, { timeout: 1 });
  });

  test('host names are canonicalised (case, percent-encoding, IDNA) before the backend sees them', async () => {
    assert.equal((await call(server.url, 'GET', '/hosts/WWW.Example.COM')).status, 200);
    assert.equal((await call(server.url, 'GET', '/hosts/www%2Eexample%2Ecom')).status, 200);
    assert.equal(canonicalHost('B%C3%BCcher.example'), 'xn--bcher-kva.example');
    assert.equal(canonicalHost('[::1]'), '[::1]');
    assert.equal(canonicalHost('192.168.000.001'), '192.168.0.1');
  });

  test('an unknown host is 404, a malformed one 400, both with a JSON message', async () => {
    const r = await call(server.url, 'GET', '/hosts/unknown.example.net');
    assert.equal(r.status, 404);
    assert.match(r.json.error, /unknown\.example\.net/);
    for (const bad of ['www.example.com%3A80', 'user%40www.example.com', '%zz', 'a%2Fb', 'exa%20mple.com', 'http%3A%2F%2Fx']) {
      const b = await call(server.url, 'GET', `/hosts/${bad}`);
      assert.equal(b.status, 400, bad);
      assert.equal(typeof b.json.error, 'string', bad);
    }
  });

  test('GET /urls?url= names the owner, digest, simhash, WARC file and offset', async () => {
    const r = await call(server.url, 'GET', `/urls?url=${encodeURIComponent(FETCHED_URL)}`);
    assert.equal(r.status, 200);
    const u = r.json as UrlReport;
    assert.equal(u.owner, SELF);
    assert.equal(u.state, 'fetched');
    assert.deepEqual(u.fetched?.warc, { filename: WARC_FILE, offset: 12345, length: 6789 });
    assert.equal(u.fetched?.simhash, '0f1e2d3c4b5a6978');
    // The backend normalises: another spelling of the same URL finds the same record.
    const r2 = await call(server.url, 'GET', `/urls?url=${encodeURIComponent('HTTP://WWW.EXAMPLE.COM:80/articles/./one.html#top')}`);
    assert.equal((r2.json as UrlReport).fetched?.warc?.offset, 12345);
  });

  test('/urls rejects a missing, repeated, relative, non-http, over-long or uncrawlable url with 400', async () => {
    const cases = ['/urls', '/urls?url=', '/urls?url=a&url=b', '/urls?url=%2Fpath', `/urls?url=${encodeURIComponent('ftp://x.example/')}`,
      `/urls?url=${encodeURIComponent('http://x.example/' + 'a'.repeat(9000))}`, `/urls?url=${encodeURIComponent('http:///x')}`];
    for (const path of cases) {
      const r = await call(server.url, 'GET', path);
      assert.equal(r.status, 400, path.slice(0, 60));
      assert.equal(typeof r.json.error, 'string');
    }
  });

  test('POST /seeds routes URLs to their owners and lists rejections', async () => {
    const urls = ['http://a.example/', 'https://b.example/x', 'http://c.example/y', 'http:///broken'];
    const r = await call(server.url, 'POST', '/seeds', { body: JSON.stringify({ urls }), headers: jsonHeaders });
    assert.equal(r.status, 200);
    assert.equal(r.json.accepted, 3);
    assert.deepEqual(r.json.rejected, [{ url: 'http:///broken', reason: 'invalid-url' }]);
    assert.equal(Object.values(r.json.routed as Record<string, number>).reduce((a, b) => a + b, 0), 3);
    assert.ok(backend.seeded.includes('http://a.example/'));
  });

  test('POST /seeds validates its body (shape, types, sizes, unknown fields)', async () => {
    const bad: Array<[unknown, RegExp]> = [
      [[], /JSON object/], [null, /JSON object/], ['x', /JSON object/], [{}, /urls/], [{ urls: [] }, /urls/],
      [{ urls: 'http://a.example/' }, /urls/], [{ urls: ['http://a.example/', 5] }, /urls\[1\]/], [{ urls: [''] }, /urls\[0\]/],
      [{ urls: ['http://a.example/'], extra: 1 }, /unknown field "extra"/],
      [{ urls: Array.from({ length: MAX_SEED_URLS + 1 }, (_, i) => `http://h${i}.example/`) }, /at most/],
    ];
    for (const [body, re] of bad) {
      const r = await call(server.url, 'POST', '/seeds', { body: JSON.stringify(body), headers: jsonHeaders });
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 50));
      assert.match(r.json.error, re);
    }
  });

  test('RFC 8259: malformed JSON, invalid UTF-8 and an empty body are 400; a non-JSON Content-Type is 415', async () => {
    for (const body of ['{"urls": [', '{urls: []}', '', Buffer.from([0x7b, 0xff, 0x7d])]) {
      const r = await call(server.url, 'POST', '/seeds', { body, headers: jsonHeaders });
      assert.equal(r.status, 400, String(body));
      assert.match(r.json.error, /malformed JSON/);
    }
    const r = await call(server.url, 'POST', '/seeds', { body: 'urls=http://a.example/', headers: { 'content-type': 'application/x-www-form-urlencoded', ...auth } });
    assert.equal(r.status, 415);
    const none = await call(server.url, 'POST', '/seeds', { body: '{"urls":["http://a.example/"]}', headers: auth });
    assert.equal(none.status, 415);
    const charset = await call(server.url, 'POST', '/seeds', { body: '{"urls":["http://a.example/"]}', headers: { 'content-type': 'application/json; charset=utf-8', ...auth } });
    assert.equal(charset.status, 200);
  });

  test('RFC 9110 §15.5.14: a body over 1 MiB is 413, declared or streamed, and the server goes on', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 0x20);
    const declared = await call(server.url, 'POST', '/seeds', { body: big, headers: jsonHeaders });
    assert.equal(declared.status, 413);
    assert.match(declared.json.error, /larger than 1048576/);
    const chunked = await call(server.url, 'POST', '/seeds', { chunks: Array.from({ length: 32 }, () => Buffer.alloc(64 * 1024, 0x20)), headers: jsonHeaders });
    assert.equal(chunked.status, 413);
    const put = await call(server.url, 'PUT', '/hosts/www.example.com/policy', { body: big, headers: jsonHeaders });
    assert.equal(put.status, 413);
    // global fetch (undici) sees the answer too
    const f = await fetch(`${server.url}/seeds`, { method: 'POST', body: big, headers: jsonHeaders });
    assert.equal(f.status, 413);
    assert.equal((await call(server.url, 'GET', '/status')).status, 200);
  });

  test('pause, resume and policy change a host and answer its new state', async () => {
    let r = await call(server.url, 'POST', '/hosts/www.example.com/pause', { headers: auth });
    assert.equal(r.status, 200);
    assert.equal(r.json.paused, true);
    assert.equal(backend.hosts.get('www.example.com')?.politeness?.paused, true);
    r = await call(server.url, 'POST', '/hosts/WWW.EXAMPLE.COM/resume', { headers: auth });
    assert.equal(r.json.paused, false);
    r = await call(server.url, 'PUT', '/hosts/www.example.com/policy', { body: JSON.stringify({ minDelayMs: 5000, pageBudget: 100 }), headers: jsonHeaders });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.policy, { minDelayMs: 5000, pageBudget: 100 });
    r = await call(server.url, 'PUT', '/hosts/www.example.com/policy', { body: JSON.stringify({ minDelayMs: null }), headers: jsonHeaders });
    assert.deepEqual(r.json.policy, { minDelayMs: null, pageBudget: 100 });
  });

  test('PUT /hosts/:host/policy validates every field', async () => {
    for (const body of [{}, { minDelayMs: -1 }, { minDelayMs: 1.5 }, { minDelayMs: '100' }, { pageBudget: 1e12 }, { minDelayMs: 10, other: 1 }, { minDelayMs: 86_400_001 }]) {
      const r = await call(server.url, 'PUT', '/hosts/www.example.com/policy', { body: JSON.stringify(body), headers: jsonHeaders });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(typeof r.json.error, 'string');
    }
  });

  test('a backend ApiError keeps its status; any other failure is a 500 without detail', async () => {
    const r = await call(server.url, 'POST', '/hosts/docs.example.org/pause', { headers: auth });
    assert.equal(r.status, 409);
    assert.match(r.json.error, /owned by/);
    backend.failNext = new Error('secret internal detail');
    const f = await call(server.url, 'GET', '/hosts/www.example.com');
    assert.equal(f.status, 500);
    assert.doesNotMatch(f.text, /secret/);
  });

  test('unknown routes are 404, wrong methods 405 with Allow (RFC 9110 §15.5.6)', async () => {
    for (const path of ['/nope', '/status/', '/hosts', '/hosts/a/b/c', '/hosts/a.example/stop', '/metrics.json']) {
      const r = await call(server.url, 'GET', path);
      assert.equal(r.status, 404, path);
      assert.match(r.json.error, /no such endpoint/);
    }
    const cases: Array<[string, string, string]> = [
      ['DELETE', '/status', 'GET, HEAD'], ['GET', '/seeds', 'POST'], ['GET', '/leave', 'POST'],
      ['POST', '/hosts/a.example', 'GET, HEAD'], ['GET', '/hosts/a.example/pause', 'POST'], ['POST', '/hosts/a.example/policy', 'PUT'],
      ['PUT', '/metrics', 'GET, HEAD'], ['OPTIONS', '/', 'GET, HEAD'],
    ];
    for (const [m, path, allow] of cases) {
      const r = await call(server.url, m, path);
      assert.equal(r.status, 405, `${m} ${path}`);
      assert.equal(r.headers.allow, allow);
      assert.equal(typeof r.json.error, 'string');
    }
  });

  test('RFC 9112 §3.2: a request target that is not origin-form is 400', async () => {
    const u = new URL(server.url);
    const text = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(u.port), u.hostname, () => s.end('GET http://127.0.0.1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
      let buf = '';
      s.on('data', (c) => { buf += c.toString('latin1'); });
      s.on('end', () => resolve(buf));
      s.on('error', reject);
    });
    assert.match(text, /^HTTP\/1\.1 400 /);
  });

  test('POST /leave answers 202 and starts the leave', async () => {
    const r = await call(server.url, 'POST', '/leave', { headers: auth });
    assert.equal(r.status, 202);
    assert.deepEqual(r.json, { state: 'leaving' });
    assert.equal(backend.leaveCalls, 1);
    backend.state = 'active';
  });

  test('GET /metrics is valid Prometheus text exposition 0.0.4 with every metric docs/operations.md lists', async () => {
    const r = await call(server.url, 'GET', '/metrics');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    const fams = parseExposition(r.text);
    const expect: Record<string, string> = {
      ubicrawl_pages_total: 'counter', ubicrawl_response_bytes_total: 'counter', ubicrawl_fetch_duration_seconds: 'histogram',
      ubicrawl_fetch_errors_total: 'counter', ubicrawl_frontier_urls: 'gauge', ubicrawl_frontier_active_hosts: 'gauge',
      ubicrawl_robots_cache_oldest_age_seconds: 'gauge', ubicrawl_dedup_hits_total: 'counter', ubicrawl_urls_forwarded_total: 'counter',
      ubicrawl_urls_received_total: 'counter', ubicrawl_outbox_urls: 'gauge', ubicrawl_mesh_members: 'gauge',
      nodejs_eventloop_lag_seconds: 'gauge', process_resident_memory_bytes: 'gauge', ubicrawl_agent_info: 'gauge',
    };
    for (const [name, type] of Object.entries(expect)) {
      assert.equal(fams.get(name)?.type, type, name);
      assert.ok(fams.get(name)?.help, `${name} has HELP`);
    }
    const all = [...fams.values()].flatMap((f) => f.samples);
    const v = (name: string, labels: Record<string, string> = {}) =>
      all.filter((s) => s.name === name).find((s) => Object.entries(labels).every(([k, x]) => s.labels[k] === x) && (Object.keys(labels).length || !Object.keys(s.labels).length))?.value;
    assert.equal(v('ubicrawl_pages_total', { outcome: '2xx' }), 1);
    assert.equal(v('ubicrawl_pages_total', { outcome: '4xx' }), 1);
    assert.equal(v('ubicrawl_pages_total', { outcome: 'error' }), 2);
    assert.equal(v('ubicrawl_response_bytes_total'), 5420);
    assert.equal(v('ubicrawl_fetch_duration_seconds_count'), 4);
    assert.equal(v('ubicrawl_dedup_hits_total', { kind: 'near' }), 1);
    assert.equal(v('ubicrawl_urls_forwarded_total', { peer: PEER_B }), 12);
    assert.equal(v('ubicrawl_outbox_urls', { peer: PEER_B }), 3);
    assert.equal(v('ubicrawl_mesh_members', { state: 'active' }), 3);
    assert.equal(v('ubicrawl_frontier_urls'), 250, 'set by the scrape hook');
    assert.equal(v('ubicrawl_agent_info', { agent: SELF }), 1);
    // Label escaping survives the round trip.
    assert.equal(v('ubicrawl_urls_rejected_total', { reason: 'odd "reason" \\ with\nnewline' }), 1);
  });

  test('GET / serves the dashboard with a CSP that allows exactly its inline style and script', async () => {
    const r = await call(server.url, 'GET', '/');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(r.text, /<title>ubicrawl agent<\/title>/);
    // Self-contained: nothing loaded from elsewhere (the only href is the empty data: icon, which stops the favicon request).
    assert.deepEqual(r.text.match(/\s(?:src|href)\s*=\s*"[^"]*"/gi), [' href="data:,"']);
    assert.doesNotMatch(r.text, /@import|url\(/i);
    const csp = String(r.headers['content-security-policy']);
    const hash = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;
    const script = /<script>([\s\S]*?)<\/script>/.exec(r.text)![1];
    const style = /<style>([\s\S]*?)<\/style>/.exec(r.text)![1];
    assert.ok(csp.includes(`script-src ${hash(script)}`));
    assert.ok(csp.includes(`style-src ${hash(style)}`));
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
  });

  test('DNS rebinding: without a token, a Host header that is not loopback is 403', async () => {
    const bad = await call(server.url, 'GET', '/status', { headers: { host: 'attacker.example:7070' } });
    assert.equal(bad.status, 403);
    for (const host of ['localhost:1', '127.0.0.1', '[::1]:9']) {
      assert.equal((await call(server.url, 'GET', '/status', { headers: { host } })).status, 200, host);
    }
  });

  test('CSRF: a request whose Origin is not the API itself is 403', async () => {
    const u = new URL(server.url);
    const r = await call(server.url, 'POST', '/leave', { headers: { origin: 'http://attacker.example' } });
    assert.equal(r.status, 403);
    assert.equal(backend.leaveCalls, 1, 'leave not started');
    const nul = await call(server.url, 'POST', '/hosts/www.example.com/pause', { headers: { origin: 'null' } });
    assert.equal(nul.status, 403);
    const same = await call(server.url, 'GET', '/status', { headers: { origin: `http://${u.host}` } });
    assert.equal(same.status, 200);
  });
});

describe('API security: listen address and bearer token', () => {
  test('a non-loopback listen without a token file is refused with a clear error', async () => {
    for (const listen of ['0.0.0.0:0', '[::]:0', '192.0.2.1:7070', 'example.com:7070']) {
      await assert.rejects(startApiServer({ listen, backend: new MemoryBackend() }), /not a loopback address, without a bearer token/, listen);
    }
    assert.doesNotThrow(() => assertListenAllowed('0.0.0.0', true));
    assert.doesNotThrow(() => assertListenAllowed('127.0.0.2', false));
    assert.throws(() => assertListenAllowed('10.0.0.1', false), /token/);
  });

  test('a missing, short or multi-word token file is refused', async () => {
    const dir = tempDir();
    const short = join(dir, 'short');
    writeFileSync(short, 'abc\n');
    const spaced = join(dir, 'spaced');
    writeFileSync(spaced, 'abcdefghijklmnop qrstuvwxyz\n');
    await assert.rejects(startApiServer({ listen: '127.0.0.1:0', tokenFile: join(dir, 'absent'), backend: new MemoryBackend() }), /cannot read the API token file .*ENOENT/);
    await assert.rejects(startApiServer({ listen: '127.0.0.1:0', tokenFile: short, backend: new MemoryBackend() }), /too short/);
    await assert.rejects(startApiServer({ listen: '127.0.0.1:0', tokenFile: spaced, backend: new MemoryBackend() }), /one line/);
  });

  test('RFC 6750 §3: with a token, requests without it or with a wrong one are 401; the right one passes', async () => {
    const dir = tempDir();
    const file = join(dir, 'token');
    const token = 'c0ffee'.repeat(8);
    writeFileSync(file, token + '\n');
    chmodSync(file, 0o600);
    const backend = new MemoryBackend();
    const server = await startApiServer({ listen: '127.0.0.1:0', tokenFile: file, backend });
    try {
      assert.equal(server.authRequired, true);
      for (const [path, method] of [['/status', 'GET'], ['/metrics', 'GET'], ['/leave', 'POST'], ['/nope', 'GET'], ['/hosts/www.example.com', 'GET']]) {
        const r = await call(server.url, method, path);
        assert.equal(r.status, 401, path);
        assert.equal(r.headers['www-authenticate'], 'Bearer realm="ubicrawl"');
        assert.match(r.json.error, /bearer token/);
      }
      for (const auth of [`Bearer ${token}x`, `Bearer ${token.slice(1)}`, `Basic ${token}`, token, 'Bearer', `Bearer ${token} extra`]) {
        assert.equal((await call(server.url, 'GET', '/status', { headers: { authorization: auth } })).status, 401, auth);
      }
      assert.equal(backend.leaveCalls, 0);
      const ok = await call(server.url, 'GET', '/status', { headers: { authorization: `Bearer ${token}` } });
      assert.equal(ok.status, 200);
      assert.equal((await call(server.url, 'GET', '/metrics', { headers: { authorization: `bearer  ${token}` } })).status, 200);
      // With a token the Host check is off (the token is the guard), and the dashboard shell is public: it holds no data.
      assert.equal((await call(server.url, 'GET', '/status', { headers: { authorization: `Bearer ${token}`, host: 'agent1.example:7070' } })).status, 200);
      assert.equal((await call(server.url, 'GET', '/')).status, 200);
      // The CLI client sends it.
      const out = new Sink();
      assert.equal(await runStatus({ api: server.url, tokenFile: file, json: true, stdout: out, stderr: new Sink() }), 0);
      assert.equal(JSON.parse(out.text).agent.id, SELF);
      const err = new Sink();
      assert.equal(await runStatus({ api: server.url, stdout: new Sink(), stderr: err }), 1);
      assert.match(err.text, /--token-file/);
    } finally {
      await server.close();
    }
  });
});

describe('listen addresses', () => {
  test('parseListen accepts HOST:PORT, [IPv6]:PORT, :PORT and PORT; rejects the rest', () => {
    assert.deepEqual(parseListen('127.0.0.1:7070'), { host: '127.0.0.1', port: 7070 });
    assert.deepEqual(parseListen('[::1]:80'), { host: '::1', port: 80 });
    assert.deepEqual(parseListen(':9000'), { host: '127.0.0.1', port: 9000 });
    assert.deepEqual(parseListen('9000'), { host: '127.0.0.1', port: 9000 });
    assert.deepEqual(parseListen('localhost:0'), { host: 'localhost', port: 0 });
    for (const bad of ['', 'host', '::1:80', '[zz]:80', '127.0.0.1:65536', '127.0.0.1:-1', 'a b:80', '127.0.0.1:']) {
      assert.throws(() => parseListen(bad), /invalid API listen address/, bad);
    }
  });

  test('RFC 1122 §3.2.1.3 / RFC 4291 §2.5.3 / RFC 6761 §6.3: what counts as loopback', () => {
    for (const h of ['127.0.0.1', '127.255.0.9', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST', 'api.localhost']) assert.equal(isLoopbackHost(h), true, h);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'example.com', 'localhost.example.com', '::2', '::ffff:10.0.0.1', '']) assert.equal(isLoopbackHost(h), false, h);
  });

  test('startApiServer reports a busy port clearly', async () => {
    const a = await startApiServer({ listen: '127.0.0.1:0', backend: new MemoryBackend() });
    try {
      await assert.rejects(startApiServer({ listen: `127.0.0.1:${a.port}`, backend: new MemoryBackend() }), /address in use/);
    } finally {
      await a.close();
    }
  });
});

describe('CLI client', () => {
  let backend: MemoryBackend;
  let server: ApiServer;
  before(async () => {
    backend = new MemoryBackend();
    server = await startApiServer({ listen: '127.0.0.1:0', tokenFile: TOKEN_FILE, openReads: true, backend });
  });
  after(() => server.close());

  test('apiBaseUrl accepts the forms --api takes', () => {
    assert.equal(apiBaseUrl('127.0.0.1:7070'), 'http://127.0.0.1:7070');
    assert.equal(apiBaseUrl(':7070'), 'http://127.0.0.1:7070');
    assert.equal(apiBaseUrl('7070'), 'http://127.0.0.1:7070');
    assert.equal(apiBaseUrl('http://[::1]:7070/'), 'http://[::1]:7070');
    assert.equal(apiBaseUrl(), 'http://127.0.0.1:7070');
  });

  test('apiRequest returns JSON and throws ApiRequestError with the server message', async () => {
    const s = await apiRequest<StatusResponse>(server.url, 'GET', '/status');
    assert.equal(s.agent.id, SELF);
    await assert.rejects(apiRequest(server.url, 'GET', '/hosts/nothing.example'), (e: unknown) => e instanceof ApiRequestError && e.status === 404 && /nothing\.example/.test(e.message));
  });

  test('ubicrawl status: human-readable agent and mesh; --json is the raw answer', async () => {
    const out = new Sink();
    assert.equal(await runStatus({ api: server.url, stdout: out, stderr: new Sink() }), 0);
    assert.match(out.text, new RegExp(`^agent ${SELF}  active  up 1h 2m`));
    assert.match(out.text, /fetched\s+1,000 pages \([\d.]+\/s\), 117\.7 MiB/);
    assert.match(out.text, /mesh: 3 members \(crawl test-crawl\)/);
    assert.match(out.text, /12D3KooW…AAAAAAAA \*\s+active\s+1\s+34\.0%/);
    assert.match(out.text, /www\.example\.com\s+31\s+17\s+1/);
    assert.match(out.text, /errors\s+timeout 1, dns 1/);
    const js = new Sink();
    assert.equal(await runStatus({ api: server.url, json: true, stdout: js }), 0);
    assert.equal((JSON.parse(js.text) as StatusResponse).mesh.members.length, 3);
  });

  test('ubicrawl seed: prints the routing; exit 1 if some were rejected, 2 for none given', async () => {
    const out = new Sink();
    assert.equal(await runSeed(['http://a.example/', 'http://b.example/'], { api: server.url, token: TEST_TOKEN, stdout: out }), 0);
    assert.match(out.text, /^accepted 2 URLs: /);
    const out2 = new Sink();
    assert.equal(await runSeed(['http://a.example/', 'http:///bad'], { api: server.url, token: TEST_TOKEN, stdout: out2 }), 1);
    assert.match(out2.text, /rejected 1:\n  http:\/\/\/bad: invalid-url/);
    const err = new Sink();
    assert.equal(await runSeed([], { api: server.url, stderr: err }), 2);
  });

  test('ubicrawl inspect <url> names the owner, its WARC file and offset; <host> shows robots and politeness', async () => {
    const out = new Sink();
    assert.equal(await runInspect(FETCHED_URL, { api: server.url, stdout: out }), 0);
    assert.match(out.text, new RegExp(`owner\\s+${SELF} \\(this agent\\)`));
    assert.match(out.text, new RegExp(`warc\\s+${WARC_FILE.replace(/\./g, '\\.')}  offset 12345  length 6789`));
    assert.match(out.text, /fetched\s+2025-01-01T00:00:05\.000Z  HTTP 200/);
    const host = new Sink();
    assert.equal(await runInspect('WWW.example.com', { api: server.url, stdout: host }), 0);
    assert.match(host.text, /robots\.txt\s+parsed \(HTTP 200\)/);
    assert.match(host.text, /Disallow: \/private\//);
    assert.match(host.text, /politeness\s+delay 2000 ms/);
    const js = new Sink();
    assert.equal(await runInspect('www.example.com/articles/one.html', { api: server.url, json: true, stdout: js }), 0);
    assert.equal((JSON.parse(js.text) as UrlReport).fetched?.warc?.filename, WARC_FILE);
  });

  test('ubicrawl inspect: unknown host exits 1, bad input exits 2, one line on stderr each', async () => {
    const e1 = new Sink();
    assert.equal(await runInspect('nothing.example', { api: server.url, stdout: new Sink(), stderr: e1 }), 1);
    assert.match(e1.text, /^ubicrawl: nothing is known about host nothing\.example\n$/);
    const e2 = new Sink();
    assert.equal(await runInspect('ftp://x.example/', { api: server.url, stdout: new Sink(), stderr: e2 }), 2);
    assert.match(e2.text, /^ubicrawl: url: only http and https/);
  });

  test('ubicrawl leave: asks the agent to leave; --wait returns once its API is gone', async () => {
    const out = new Sink();
    assert.equal(await runLeave({ api: server.url, token: TEST_TOKEN, stdout: out }), 0);
    assert.match(out.text, /leaving/);
    const b2 = new MemoryBackend();
    const s2 = await startApiServer({ listen: '127.0.0.1:0', tokenFile: TOKEN_FILE, openReads: true, backend: b2 });
    b2.leave = async () => { b2.leaveCalls++; setTimeout(() => void s2.close(), 300); };
    const out2 = new Sink();
    assert.equal(await runLeave({ api: s2.url, token: TEST_TOKEN, wait: true, stdout: out2 }), 0);
    assert.equal(b2.leaveCalls, 1);
    assert.match(out2.text, /has left/);
  });

  test('an unreachable API exits 1 with one clear line', async () => {
    const a = await startApiServer({ listen: '127.0.0.1:0', backend: new MemoryBackend() });
    const url = a.url;
    await a.close();
    const err = new Sink();
    assert.equal(await runStatus({ api: url, stderr: err }), 1);
    assert.match(err.text, /^ubicrawl: cannot reach the agent API at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
    assert.equal(err.text.split('\n').length, 2);
  });
});

describe('metrics and history helpers', () => {
  test('createMetrics: a throwing scrape hook is counted and does not break the scrape', async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.beforeScrape(() => { throw new Error('boom'); });
    m.pageFetched(200, 10, 5);
    m.pageFetched(999, 10, 5);
    const fams = parseExposition(await m.render());
    assert.equal(m.hookErrors, 1);
    assert.equal(fams.get('ubicrawl_pages_total')!.samples.find((s) => s.labels.outcome === 'other')?.value, 1);
    assert.equal(fams.get('process_resident_memory_bytes'), undefined);
  });

  test('createMetrics: removePeer drops a departed peer\'s series', async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.urlsForwarded('p1', 3);
    m.setOutboxDepth('p1', 2);
    m.urlsForwarded('p2', 1);
    m.removePeer('p1');
    const text = await m.render();
    assert.doesNotMatch(text, /peer="p1"/);
    assert.match(text, /ubicrawl_urls_forwarded_total\{peer="p2"\} 1/);
  });

  test('the exposition parser itself rejects what the format forbids', () => {
    const bad = [
      'a 1', // no final newline
      'a{b="c} 1\n', 'a{b="\\x"} 1\n', 'a{__x="1"} 1\n', 'a 1x\n', '1a 1\n', 'a 1 1.5\n', 'a{b="1",b="2"} 1\n',
      '# TYPE a counter\n# TYPE a counter\na 1\n', 'a 1\n# TYPE a counter\n', 'a 1\nb 1\na{x="1"} 2\n', 'a 1\na 2\n',
      '# TYPE c counter\nc -1\n', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', '# TYPE x foo\n', '# HELP a bad \\t escape\n',
    ];
    for (const t of bad) assert.throws(() => parseExposition(t), ExpositionError, JSON.stringify(t));
    const ok = parseExposition('# HELP a doc \\\\ \\n\n# TYPE a gauge\na{x="\\"\\\\\\n"} NaN 1700000000000\n# a comment\nb +Inf\n');
    assert.equal(ok.get('a')!.help, 'doc \\ \n');
    assert.equal(ok.get('a')!.samples[0].labels.x, '"\\\n');
    assert.equal(ok.get('b')!.samples[0].value, Infinity);
  });

  test('Ring keeps the last N; ThroughputHistory.rate uses the window; RecentErrors trims messages', () => {
    const r = new Ring<number>(3);
    for (let i = 1; i <= 5; i++) r.push(i);
    assert.deepEqual(r.toArray(), [3, 4, 5]);
    assert.deepEqual(r.latest(2), [5, 4]);
    assert.equal(r.last(), 5);
    assert.throws(() => new Ring(0), RangeError);
    const h = new ThroughputHistory(100);
    assert.equal(h.rate(), 0);
    for (let t = 0; t <= 30; t++) h.sample(t * 1000, t < 20 ? t * 2 : 40 + (t - 20) * 10);
    assert.equal(h.rate(10_000), 10);
    assert.equal(h.rate(10_000, 31_000, 160), (160 - 50) / 10);
    const e = new RecentErrors(2);
    e.record('a', 'x'.repeat(1000));
    e.record('b', 'm', 'http://u.example/', 'u.example', 5);
    e.record('c', 'm');
    assert.deepEqual(e.latest(5).map((x) => x.kind), ['c', 'b']);
    assert.equal(e.latest(5)[1].at, 5);
    const e2 = new RecentErrors(1);
    e2.record('a', 'x'.repeat(1000));
    assert.equal(e2.latest(1)[0].message.length, 301);
  });

  test('ApiError carries its status', () => {
    const e = new ApiError(409, 'conflict');
    assert.equal(e.status, 409);
    assert.ok(e instanceof Error);
  });
});
