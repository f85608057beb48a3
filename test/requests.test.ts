// Requests (docs/requests.md): the operator's header fields, a proxy (undici's
// ProxyAgent; --proxy or HTTP_PROXY/HTTPS_PROXY/NO_PROXY) that the address guard
// cannot be walked around with, and the per-host cookie jar — each against
// servers and a proxy of the test's own on loopback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Fetcher } from '../src/fetch/fetcher.js';
import { HostResolver } from '../src/fetch/dns.js';
import { AddressPolicy } from '../src/fetch/address.js';
import { HeaderError, mergeHeaderFields, parseHeaderField, parseHeaderFields } from '../src/fetch/headers.js';
import { proxyFor, proxyPlan, redactProxy } from '../src/fetch/proxy.js';
import { withoutField } from '../src/fetch/wire.js';
import { defaultConfig, parseResolveRule, type AgentOptions } from '../src/config.js';
import { startAgent } from '../src/crawl/agent.js';
import { readWarc, verifyWarc, type WarcEntry } from '../src/warc/reader.js';
import { startProxy } from './proxy-fixture.js';
import { linking, startSite, type Site } from './site-fixture.js';
import { runCli, tempDir } from './helpers.js';

// ---------------------------------------------------------------- pure parts

test('--header: a token name and a field value; hop-by-hop, framing and fetcher-owned fields refused in one line', () => {
  assert.deepEqual(parseHeaderField('X-Crawl-Contact:  ops@example.org '), ['X-Crawl-Contact', 'ops@example.org']);
  assert.deepEqual(parseHeaderField('Accept-Language: de, en;q=0.5'), ['Accept-Language', 'de, en;q=0.5']);
  assert.deepEqual(parseHeaderField('X-Empty:'), ['X-Empty', '']);
  for (const [spec, why] of [
    ['no colon here', /expects 'Name: value'/],
    ['Bad Name: x', /not a valid field name/],
    ['X-Sp : x', /not a valid field name/],
    [': x', /not a valid field name/],
    ['X-Evil: a\r\nHost: b', /CR, LF, NUL/],
    ['X-Nul: a\0b', /CR, LF, NUL/],
    ['X-Emoji: \u{1F600}', /beyond Latin-1/],
    ['Host: other.test', /Host/],
    ['content-length: 0', /no body/],
    ['Connection: close', /hop-by-hop/],
    ['Transfer-Encoding: chunked', /no body/],
    ['Proxy-Authorization: Basic x', /--proxy URL/],
    ['User-Agent: me', /--user-agent/],
    ['If-None-Match: "x"', /recrawl/],
  ] as const) {
    assert.throws(() => parseHeaderField(spec), (e: Error) => e instanceof HeaderError && why.test(e.message) && !e.message.includes('\n'), spec);
  }
  assert.throws(() => parseHeaderFields(['X-A: 1', 'x-a: 2']), /given twice/);
  // An operator's field replaces a default of the same name, in its place.
  assert.deepEqual(mergeHeaderFields([['User-Agent', 'u'], ['Accept', '*/*']], [['X-A', '1'], ['accept', 'text/html']], [['If-None-Match', '"e"']]),
    [['User-Agent', 'u'], ['accept', 'text/html'], ['X-A', '1'], ['If-None-Match', '"e"']]);
});

test('proxy plan: --proxy for every target, else the environment as undici reads it; NO_PROXY by host, suffix and port', () => {
  const none = { noProxy: [], proxyFromEnv: true };
  assert.equal(proxyPlan(none, {}), undefined);
  assert.equal(proxyPlan({ ...none, proxyFromEnv: false }, { HTTP_PROXY: 'http://p:1' }), undefined, 'the environment ignored when asked');
  const env = proxyPlan(none, { HTTP_PROXY: 'http://upper:1', http_proxy: 'http://lower:2', NO_PROXY: 'direct.test, .internal.test,*.star.test, port.test:8080, [::1]' })!;
  assert.equal(env.http!.url.host, 'lower:2', 'lower case first');
  assert.equal(env.http!.from, 'env http_proxy');
  assert.equal(env.https, env.http, 'HTTP_PROXY also serves https:// without HTTPS_PROXY');
  const via = (u: string) => proxyFor(env, new URL(u))?.url.host;
  assert.equal(via('http://site.test/'), 'lower:2');
  assert.equal(via('http://direct.test/'), undefined);
  assert.equal(via('http://a.direct.test/'), undefined, 'names under an entry too');
  assert.equal(via('http://notdirect.test/'), 'lower:2');
  assert.equal(via('http://internal.test/'), undefined);
  assert.equal(via('https://x.star.test/'), undefined);
  assert.equal(via('http://port.test:8080/'), undefined);
  assert.equal(via('http://port.test:8081/'), 'lower:2', 'the port must match');
  assert.equal(via('http://[::1]:9/'), undefined);
  const split = proxyPlan(none, { HTTPS_PROXY: 'https://tls:3' })!;
  assert.equal(proxyFor(split, new URL('http://a.test/')), undefined, 'HTTPS_PROXY alone does not serve http://');
  assert.equal(proxyFor(split, new URL('https://a.test/'))?.url.href, 'https://tls:3/');
  const setting = proxyPlan({ proxy: 'user:pw@127.0.0.1:3128', noProxy: ['skip.test'], proxyFromEnv: true }, { HTTP_PROXY: 'http://ignored:1', NO_PROXY: 'env.test' })!;
  assert.equal(setting.http!.url.href, 'http://user:pw@127.0.0.1:3128/', 'host:port means http://');
  assert.deepEqual(setting.noProxyFrom, ['setting', 'env NO_PROXY']);
  assert.equal(proxyFor(setting, new URL('http://env.test/')), undefined, 'NO_PROXY applies to --proxy too, as with curl');
  assert.equal(redactProxy(setting.http!.url), 'http://user:***@127.0.0.1:3128');
  assert.equal(proxyFor(proxyPlan(none, { HTTP_PROXY: 'http://p:1', NO_PROXY: '*' }), new URL('http://a.test/')), undefined);
  for (const bad of ['socks5://p:1', 'http://p:1/path', 'http://']) assert.throws(() => proxyPlan({ ...none, proxy: bad }, {}), /--proxy/, bad);
  assert.throws(() => proxyPlan(none, { HTTPS_PROXY: 'ftp://p' }), /HTTPS_PROXY: only http/);
  assert.equal(withoutField(Buffer.from('GET http://a/ HTTP/1.1\r\nhost: a\r\nproxy-authorization: Basic x\r\nX-A: 1\r\n\r\n'), 'Proxy-Authorization').toString(),
    'GET http://a/ HTTP/1.1\r\nhost: a\r\nX-A: 1\r\n\r\n');
});

// ---------------------------------------------------------------- the fetcher through a proxy

test('through a proxy: http:// in absolute-form, the captured head as sent less the proxy credentials, and the guard still classifies the target', async () => {
  const site = await startSite({ '/p': { body: 'hello', headers: { 'set-cookie': 'k=v' } } });
  const proxy = await startProxy();
  const cfg = defaultConfig();
  const plan = proxyPlan({ proxy: `http://crawler:s3cret@127.0.0.1:${proxy.port}`, noProxy: [], proxyFromEnv: false });
  const rules = [parseResolveRule(`site.test:${site.port}:127.0.0.1`)];
  const fetcher = new Fetcher(cfg.fetch, 'ubicrawl-test/1', new HostResolver(rules), { proxy: plan!, headers: [['X-Run', '7']] });
  const open = new Fetcher(cfg.fetch, 'ubicrawl-test/1', new HostResolver([]), { proxy: plan!, addresses: new AddressPolicy(['127.0.0.1/32']) });
  try {
    const out = await fetcher.fetch(`http://site.test:${site.port}/p`);
    assert.ok(out.ok, !out.ok ? out.message : '');
    assert.equal(out.status, 200);
    assert.equal(out.body.toString(), 'hello');
    assert.deepEqual(proxy.relayed.map((r) => [r.method, r.target]), [['GET', `http://site.test:${site.port}/p`]]);
    assert.equal(proxy.relayed[0]!.headers['proxy-authorization'], `Basic ${Buffer.from('crawler:s3cret').toString('base64')}`, 'the proxy got the credentials');
    assert.equal(proxy.relayed[0]!.headers['x-run'], '7');
    assert.equal(site.requests[0]!.headers.host, `site.test:${site.port}`);
    const head = out.wire!.requestHead.toString('latin1');
    assert.match(head, new RegExp(`^GET http://site\\.test:${site.port}/p HTTP/1\\.1\\r\\n`), 'the request line as sent: absolute-form');
    assert.ok(!/proxy-authorization/i.test(head), 'no proxy credentials in what is archived');
    assert.match(head, /\r\nX-Run: 7\r\n/i);
    assert.ok(head.endsWith('\r\n\r\n'));
    assert.match(out.wire!.responseHead.toString('latin1'), /^HTTP\/1\.1 200 OK\r\n/);
    assert.equal(out.ip, undefined, 'the address contacted was the proxy\'s');

    // The target is an internal address: refused before anything is sent, whatever the proxy would do.
    const before = proxy.relayed.length;
    const refused = await fetcher.fetch(`http://127.0.0.1:${site.port}/p`);
    assert.ok(!refused.ok && refused.kind === 'blocked-address', 'a loopback target through a proxy is refused');
    assert.equal(proxy.relayed.length, before, 'the proxy was not asked');
    // --allow-address opens it, as without a proxy.
    const allowed = await open.fetch(`http://127.0.0.1:${site.port}/p`);
    assert.ok(allowed.ok && allowed.status === 200);
    assert.equal(proxy.relayed.at(-1)!.target, `http://127.0.0.1:${site.port}/p`);
  } finally {
    await fetcher.close();
    await open.close();
    await proxy.close();
    await site.close();
  }
});

test('concurrent fetches to several origins through one proxy: one connection each, every capture its own exchange', async () => {
  const sites = await Promise.all([0, 1, 2].map((i) => startSite({ '/x': { status: 200 + i, body: `site ${i}`, headers: { 'x-site': String(i) } } })));
  const proxy = await startProxy();
  const rules = sites.map((s, i) => parseResolveRule(`s${i}.test:${s.port}:127.0.0.1`));
  const fetcher = new Fetcher(defaultConfig().fetch, 'ubicrawl-test/1', new HostResolver(rules), {
    proxy: proxyPlan({ proxy: proxy.url, noProxy: [], proxyFromEnv: false })!,
  });
  try {
    for (let round = 0; round < 3; round++) {
      const outs = await Promise.all(sites.map((s, i) => fetcher.fetch(`http://s${i}.test:${s.port}/x`)));
      outs.forEach((out, i) => {
        assert.ok(out.ok && out.wire, `site ${i}`);
        assert.equal(out.status, 200 + i);
        assert.equal(out.body.toString(), `site ${i}`);
        assert.ok(out.wire.requestHead.toString('latin1').startsWith(`GET http://s${i}.test:${sites[i]!.port}/x HTTP/1.1\r\n`), `site ${i}: its own request`);
        assert.match(out.wire.responseHead.toString('latin1'), new RegExp(`^HTTP/1\\.1 ${200 + i} [^\\r]*\\r\\n[\\s\\S]*x-site: ${i}\\r\\n`), `site ${i}: its own response`);
      });
    }
    assert.equal(proxy.relayed.length, 9);
    assert.equal(proxy.connections, 3, 'one kept-alive connection per target origin');
  } finally {
    await fetcher.close();
    await proxy.close();
    for (const s of sites) await s.close();
  }
});

function selfSignedCert(dir: string): { key: Buffer; cert: Buffer } | null {
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=site.test', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { stdio: 'ignore', timeout: 10_000 });
    return { key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) };
  } catch {
    return null;
  }
}

test('https:// through a proxy: a CONNECT tunnel to the target, TLS inside it, the heads captured as the target saw them', async (t) => {
  const pem = selfSignedCert(tempDir());
  if (!pem) { t.skip('openssl not available'); return; }
  const seen: string[] = [];
  const server = createHttpsServer({ key: pem.key, cert: pem.cert }, (req, res) => { seen.push(`${req.method} ${req.url} ${req.headers['x-run']}`); res.writeHead(200, { 'content-type': 'text/plain' }).end('secret page'); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const proxy = await startProxy();
  const cfg = defaultConfig();
  const fetcher = new Fetcher(cfg.fetch, 'ubicrawl-test/1', new HostResolver([parseResolveRule(`site.test:${port}:127.0.0.1`)]), {
    proxy: proxyPlan({ proxy: `http://u:pw@127.0.0.1:${proxy.port}`, noProxy: [], proxyFromEnv: false })!,
    headers: [['X-Run', 'tls']],
    // The certificate is self-signed: this test trusts it (the crawler does not).
    tunnelTls: { rejectUnauthorized: false },
  });
  try {
    const out = await fetcher.fetch(`https://site.test:${port}/page`);
    assert.ok(out.ok, !out.ok ? out.message : '');
    assert.equal(out.body.toString(), 'secret page');
    assert.deepEqual(proxy.relayed.map((r) => [r.method, r.target]), [['CONNECT', `site.test:${port}`]], 'the proxy saw only the tunnel');
    assert.equal(proxy.relayed[0]!.headers['proxy-authorization'], `Basic ${Buffer.from('u:pw').toString('base64')}`);
    assert.deepEqual(seen, ['GET /page tls']);
    assert.ok(out.wire, 'captured inside the tunnel');
    assert.match(out.wire.requestHead.toString('latin1'), /^GET \/page HTTP\/1\.1\r\n/, 'origin-form inside the tunnel');
    assert.ok(!/proxy-authorization/i.test(out.wire.requestHead.toString('latin1')));
    assert.equal(out.wire.protocols[0], 'http/1.1');
    assert.match(out.wire.protocols[1] ?? '', /^tls\/1\.[23]$/);
  } finally {
    await fetcher.close();
    await proxy.close();
    server.close();
  }
});

test('a proxy that refuses (407, or a tunnel it will not open) fails the fetch as a connection failure', async () => {
  const refusing = createHttpServer((_req, res) => res.writeHead(407, { 'proxy-authenticate': 'Basic realm="p"' }).end());
  refusing.on('connect', (_req, socket) => socket.end('HTTP/1.1 403 Forbidden\r\n\r\n'));
  await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
  const port = (refusing.address() as AddressInfo).port;
  const cfg = defaultConfig();
  const fetcher = new Fetcher(cfg.fetch, 'ubicrawl-test/1', new HostResolver([parseResolveRule('*:80:127.0.0.1'), parseResolveRule('*:443:127.0.0.1')]), {
    proxy: proxyPlan({ proxy: `127.0.0.1:${port}`, noProxy: [], proxyFromEnv: false })!,
  });
  try {
    const plain = await fetcher.fetch('http://site.test/');
    assert.ok(!plain.ok && plain.kind === 'connect', JSON.stringify(plain));
    const tls = await fetcher.fetch('https://site.test/');
    assert.ok(!tls.ok && tls.kind === 'connect', JSON.stringify(tls));
  } finally {
    await fetcher.close();
    refusing.closeAllConnections();
    refusing.close();
  }
});

// ---------------------------------------------------------------- crawls

async function crawl(site: Site, extra: AgentOptions, host = 'site.test'): Promise<{ summary: Record<string, unknown>; dir: string }> {
  const dir = tempDir();
  const agent = await startAgent({
    dataDir: dir, seeds: [`http://${host}:${site.port}/`], untilIdle: true, minDelayMs: 10, delayFactor: 0, logLevel: 'silent',
    resolve: [parseResolveRule(`${host}:${site.port}:127.0.0.1`)], sitemaps: { enabled: false }, ...extra,
  });
  return { summary: await agent.done, dir };
}

async function warcRecords(dir: string): Promise<WarcEntry[]> {
  const out: WarcEntry[] = [];
  for (const f of readdirSync(join(dir, 'warc')).filter((n) => n.endsWith('.warc.gz'))) {
    for await (const rec of readWarc(join(dir, 'warc', f), { block: true })) out.push(rec);
  }
  return out;
}

const pagesOf = (site: Site) => site.requests.map((r) => r.path).filter((p) => p !== '/robots.txt').sort();

test('crawl with --header: every request carries the fields (robots.txt too), an Accept of the operator\'s replaces the default', async () => {
  const site = await startSite({ '/': linking('/a', '/b'), '/a': linking(), '/b': linking() });
  try {
    const { summary } = await crawl(site, { requests: { headers: ['X-Crawl-Run: 42', 'Accept: text/html'] } });
    assert.equal(summary.pages, 3);
    assert.deepEqual(summary.requests, { headers: ['X-Crawl-Run', 'Accept'] }, 'the summary names the fields, not their values');
    assert.deepEqual(pagesOf(site), ['/', '/a', '/b']);
    assert.ok(site.requests.some((r) => r.path === '/robots.txt'));
    for (const r of site.requests) {
      assert.equal(r.headers['x-crawl-run'], '42', r.path);
      assert.equal(r.headers.accept, 'text/html', r.path);
      assert.match(String(r.headers['user-agent']), /^ubicrawl\//);
    }
  } finally {
    await site.close();
  }
});

test('crawl through --proxy: every request goes through it; the WARC request records hold the absolute-form heads, no credentials, no IP', async () => {
  const site = await startSite({ '/': linking('/a', '/b'), '/a': linking('/b'), '/b': linking() });
  const proxy = await startProxy();
  try {
    const { summary, dir } = await crawl(site, { requests: { proxy: `http://u:pw@127.0.0.1:${proxy.port}`, proxyFromEnv: false } });
    assert.equal(summary.pages, 3);
    const used = { url: `http://u:***@127.0.0.1:${proxy.port}`, from: 'setting' };
    assert.deepEqual(summary.requests, { proxy: { http: used, https: used, noProxy: [], proxied: 4 } });
    const origin = `http://site.test:${site.port}`;
    assert.deepEqual(proxy.relayed.map((r) => r.target).sort(), site.requests.map((r) => origin + r.path).sort(), 'all the site saw came through the proxy');
    assert.ok(proxy.relayed.some((r) => r.target === `${origin}/robots.txt`));
    const records = await warcRecords(dir);
    const requests = records.filter((r) => r.type === 'request');
    assert.equal(requests.length, 4, 'robots.txt and three pages');
    for (const r of requests) {
      const block = Buffer.from(r.block!).toString('latin1');
      assert.ok(block.startsWith(`GET ${r.headers['WARC-Target-URI']} HTTP/1.1\r\n`), block.split('\r\n')[0]);
      assert.ok(!/proxy-authorization/i.test(block));
      assert.equal(r.headers['WARC-IP-Address'], undefined);
    }
    const responses = records.filter((r) => r.type === 'response');
    assert.equal(responses.length, 4);
    for (const r of responses) {
      const path = new URL(r.headers['WARC-Target-URI']!).pathname;
      if (path !== '/robots.txt') assert.match(Buffer.from(r.payload!).toString(), /<!doctype html>/, `${path}: the body as the site sent it`);
      assert.equal(r.headers['WARC-IP-Address'], undefined);
    }
    for (const f of readdirSync(join(dir, 'warc')).filter((n) => n.endsWith('.warc.gz'))) {
      const v = await verifyWarc(join(dir, 'warc', f));
      assert.deepEqual(v.digestErrors, [], 'block and payload digests verify');
      assert.ok(v.digestsOk >= 16);
    }
  } finally {
    await proxy.close();
    await site.close();
  }
});

test('through a proxy the guard still refuses an internal target: nothing reaches the proxy', async () => {
  const site = await startSite({ '/': linking() });
  const proxy = await startProxy();
  try {
    const dir = tempDir();
    const agent = await startAgent({
      dataDir: dir, seeds: [`http://127.0.0.1:${site.port}/`], untilIdle: true, minDelayMs: 10, delayFactor: 0, logLevel: 'silent', sitemaps: { enabled: false },
      requests: { proxy: proxy.url, proxyFromEnv: false },
    });
    const summary = await agent.done;
    assert.equal(summary.pages, 0);
    assert.deepEqual(proxy.relayed, []);
    assert.deepEqual(site.requests, []);
  } finally {
    await proxy.close();
    await site.close();
  }
});

test('cookies: a server that sets one and requires it on the next page; off by default, nothing is sent', async () => {
  const pages = {
    '/': { ...linking('/members'), headers: { 'set-cookie': ['sid=s3cret; Path=/; HttpOnly', 'pref=dark; Max-Age=3600'] } },
    '/members': (req: { headers: { cookie?: string } }) => (/(^|; )sid=s3cret(;|$)/.test(req.headers.cookie ?? '') ? linking('/inner') : { status: 403, body: 'log in' }),
    '/inner': linking(),
  };
  const on = await startSite(pages);
  const off = await startSite(pages);
  try {
    const withJar = await crawl(on, { requests: { cookies: true } });
    assert.deepEqual(pagesOf(on), ['/', '/inner', '/members']);
    assert.equal(withJar.summary.pages, 3);
    assert.deepEqual(withJar.summary.requests, { cookies: { stored: 2, ignored: 0, evicted: 0, kept: 2 } });
    const members = on.requests.find((r) => r.path === '/members')!;
    assert.equal(members.headers.cookie, 'sid=s3cret; pref=dark');
    assert.equal(on.requests.find((r) => r.path === '/robots.txt')!.headers.cookie, undefined, 'robots.txt came first: nothing to send yet');

    await crawl(off, {});
    assert.deepEqual(pagesOf(off), ['/', '/members'], 'without --cookies the members page refuses and links nowhere');
    for (const r of off.requests) assert.equal(r.headers.cookie, undefined);
  } finally {
    await on.close();
    await off.close();
  }
});

// ---------------------------------------------------------------- the environment, through the command line

test('join honours HTTP_PROXY and NO_PROXY: the proxied host goes through the proxy, the NO_PROXY host directly', async () => {
  const viaProxy = await startSite({ '/': linking('/a'), '/a': linking() });
  const direct = await startSite({ '/': linking('/b'), '/b': linking() });
  const proxy = await startProxy();
  try {
    const dir = tempDir();
    const run = await runCli([
      'join', '--seed', `http://site.test:${viaProxy.port}/`, '--seed', `http://direct.test:${direct.port}/`,
      '--resolve', `site.test:${viaProxy.port}:127.0.0.1`, '--resolve', `direct.test:${direct.port}:127.0.0.1`,
      '--data-dir', join(dir, 'data'), '--until-idle', '--min-delay', '10', '--delay-factor', '0', '--no-sitemaps',
      '--progress', 'off', '--log-level', 'warn', '--listen', '/ip4/127.0.0.1/tcp/0',
    ], { HTTP_PROXY: proxy.url, NO_PROXY: 'localhost,direct.test' });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /requests go through a proxy from the environment/, 'said at start');
    const summary = JSON.parse(run.stdout) as { requests: { proxy: { http: { from: string }; noProxy: string[]; proxied: number } } };
    assert.equal(summary.requests.proxy.http.from, 'env HTTP_PROXY');
    assert.deepEqual(summary.requests.proxy.noProxy, ['localhost', 'direct.test']);
    assert.equal(summary.requests.proxy.proxied, 3);
    assert.deepEqual(pagesOf(viaProxy), ['/', '/a']);
    assert.deepEqual(pagesOf(direct), ['/', '/b']);
    const targets = proxy.relayed.map((r) => r.target).sort();
    assert.deepEqual(targets, [`http://site.test:${viaProxy.port}/`, `http://site.test:${viaProxy.port}/a`, `http://site.test:${viaProxy.port}/robots.txt`]);
  } finally {
    await proxy.close();
    await viaProxy.close();
    await direct.close();
  }
});

test('a bad proxy in the environment or a bad --header stops join with one line, exit code 2', async () => {
  const dir = tempDir();
  const base = ['join', '--seed', 'http://site.test/', '--data-dir', join(dir, 'data'), '--progress', 'off', '--listen', '/ip4/127.0.0.1/tcp/0'];
  const env = await runCli(base, { HTTPS_PROXY: 'socks5://127.0.0.1:1080' });
  assert.equal(env.code, 2);
  assert.match(env.stderr, /^ubicrawl: HTTPS_PROXY: only http:\/\/ and https:\/\/ proxies are supported/);
  assert.equal(env.stderr.trim().split('\n').length, 1, env.stderr);
  for (const [arg, why] of [['Connection: close', /hop-by-hop/], ['Bad Name: x', /not a valid field name/], ['Host: x', /Host/]] as const) {
    const r = await runCli([...base, '--header', arg], {});
    assert.equal(r.code, 2, arg);
    assert.match(r.stderr, why);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
