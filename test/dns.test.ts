import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { HostResolver, DnsError, isPermanentDnsError, type HostResolverOptions } from '../src/fetch/dns.js';
import { Fetcher } from '../src/fetch/fetcher.js';
import { AddressPolicy } from '../src/fetch/address.js';
import { defaultConfig } from '../src/config.js';
import { startDnsServer, type TestDnsServer } from './helpers-dns.js';

function clock(start = 1_700_000_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

function resolverFor(srv: TestDnsServer, opts: HostResolverOptions = {}, rules = [] as ConstructorParameters<typeof HostResolver>[0]): HostResolver {
  const r = new HostResolver(rules, { servers: [srv.server], queryTimeoutMs: 3000, tries: 1, ...opts });
  return r;
}

async function rejection(p: Promise<unknown>): Promise<DnsError> {
  try { await p; } catch (e) { assert.ok(e instanceof DnsError, `expected a DnsError, got ${String(e)}`); return e; }
  assert.fail('expected the resolution to fail');
}

test('RFC 1035 §3.2.1: an answer is cached for its TTL — a second ask sends no query', async () => {
  const srv = await startDnsServer({ 'a.test': { a: ['10.0.0.1'], ttl: 60 } });
  const c = clock();
  const r = resolverFor(srv, { now: c.now });
  assert.deepEqual(await r.resolve('a.test', 80), { address: '10.0.0.1', family: 4 });
  c.t += 59_000;
  assert.deepEqual(await r.resolve('A.TEST', 443), { address: '10.0.0.1', family: 4 });
  assert.equal(srv.count('a.test'), 1);
  assert.equal(r.stats.cacheHits, 1);
});

test('RFC 1035 §3.2.1: an expired answer is fetched again', async () => {
  const srv = await startDnsServer({ 'e.test': { a: ['10.0.0.2'], ttl: 2 } });
  const c = clock();
  const r = resolverFor(srv, { now: c.now, minTtlMs: 0 });
  await r.resolve('e.test', 80);
  c.t += 1999;
  await r.resolve('e.test', 80);
  assert.equal(srv.count('e.test', 'A'), 1);
  c.t += 2;
  srv.names.get('e.test')!.a = ['10.0.0.3'];
  assert.equal((await r.resolve('e.test', 80)).address, '10.0.0.3');
  assert.equal(srv.count('e.test', 'A'), 2);
});

test('TTL clamping: a TTL below minTtlMs is raised, one above maxTtlMs lowered', async () => {
  const srv = await startDnsServer({ 'short.test': { a: ['10.0.0.4'], ttl: 1 }, 'long.test': { a: ['10.0.0.5'], ttl: 86_400 } });
  const c = clock();
  const r = resolverFor(srv, { now: c.now, minTtlMs: 30_000, maxTtlMs: 60_000 });
  await r.resolve('short.test', 80);
  await r.resolve('long.test', 80);
  c.t += 29_000;
  await r.resolve('short.test', 80);
  assert.equal(srv.count('short.test'), 1, 'TTL 1 s kept for the 30 s floor');
  c.t += 31_001; // 60.001 s after the first answers
  await r.resolve('short.test', 80);
  await r.resolve('long.test', 80);
  assert.equal(srv.count('short.test'), 2);
  assert.equal(srv.count('long.test'), 2, 'TTL 1 day cut to the 60 s ceiling');
});

test('RFC 2308 §5: NXDOMAIN is permanent and negatively cached for negativeTtlMs', async () => {
  const srv = await startDnsServer({});
  const c = clock();
  const r = resolverFor(srv, { now: c.now, negativeTtlMs: 10_000 });
  const e1 = await rejection(r.resolve('nope.test', 80));
  assert.equal(e1.code, 'ENOTFOUND');
  assert.equal(e1.permanent, true);
  assert.equal(isPermanentDnsError(e1), true);
  c.t += 9_999;
  const e2 = await rejection(r.resolve('nope.test', 80));
  assert.equal(e2.code, 'ENOTFOUND');
  assert.equal(srv.count('nope.test'), 1, 'the second ask is answered from the negative cache');
  assert.equal(r.failure('nope.test')?.permanent, true);
  c.t += 2;
  srv.names.set('nope.test', { a: ['10.0.0.6'] });
  assert.equal((await r.resolve('nope.test', 80)).address, '10.0.0.6');
  assert.equal(srv.count('nope.test'), 2);
  assert.equal(r.failure('nope.test'), undefined);
});

test('RFC 2308 §2.2: NODATA (no A, no AAAA) is permanent and negatively cached; family 0 falls back to AAAA', async () => {
  const srv = await startDnsServer({ 'v6only.test': { aaaa: ['fd00::1'] }, 'empty.test': {} });
  const r = resolverFor(srv);
  assert.deepEqual(await r.resolve('v6only.test', 80), { address: 'fd00::1', family: 6 });
  const e = await rejection(r.resolve('empty.test', 80));
  assert.equal(e.code, 'ENODATA');
  assert.equal(e.permanent, true);
  await rejection(r.resolve('empty.test', 80));
  assert.equal(srv.count('empty.test', 'A'), 1);
  assert.equal(srv.count('empty.test', 'AAAA'), 1);
  const r4 = resolverFor(srv, { family: 4 });
  assert.equal((await rejection(r4.resolve('v6only.test', 80))).code, 'ENODATA');
});

test('SERVFAIL is transient, remembered only for errorTtlMs; a timeout is transient', async () => {
  const srv = await startDnsServer({ 'broken.test': { a: ['10.0.0.7'], servfail: true }, 'silent.test': { a: ['10.0.0.8'], drop: true } });
  const c = clock();
  const r = resolverFor(srv, { now: c.now, errorTtlMs: 5000, queryTimeoutMs: 300 });
  const e = await rejection(r.resolve('broken.test', 80));
  assert.equal(e.code, 'ESERVFAIL');
  assert.equal(e.permanent, false);
  await rejection(r.resolve('broken.test', 80));
  assert.equal(srv.count('broken.test'), 1);
  c.t += 5001;
  srv.names.get('broken.test')!.servfail = false;
  assert.equal((await r.resolve('broken.test', 80)).address, '10.0.0.7');
  const t = await rejection(r.resolve('silent.test', 80));
  assert.equal(t.code, 'ETIMEOUT');
  assert.equal(t.permanent, false);
  assert.equal(isPermanentDnsError(t), false);
  assert.equal(r.stats.timeouts, 1);
});

test('coalescing: fifty concurrent asks for one name send one query', async () => {
  const srv = await startDnsServer({ 'busy.test': { a: ['10.0.0.9'], delayMs: 100 } });
  const r = resolverFor(srv);
  const all = await Promise.all(Array.from({ length: 50 }, () => r.resolve('busy.test', 80)));
  for (const a of all) assert.equal(a.address, '10.0.0.9');
  assert.equal(srv.count('busy.test'), 1);
  assert.equal(r.stats.coalesced, 49);
  // Failures are shared the same way.
  const fails = await Promise.allSettled(Array.from({ length: 10 }, () => r.resolve('gone.test', 80)));
  assert.ok(fails.every((f) => f.status === 'rejected'));
  assert.equal(srv.count('gone.test'), 1);
});

test('a name whose answer takes 2 s does not hold up other names', async () => {
  const names: Record<string, { a: string[]; delayMs?: number }> = { 'slow.test': { a: ['10.1.0.1'], delayMs: 2000 } };
  for (let i = 0; i < 20; i++) names[`h${i}.test`] = { a: [`10.1.1.${i}`] };
  const srv = await startDnsServer(names);
  const r = resolverFor(srv);
  let slowDone = false;
  const slow = r.resolve('slow.test', 80).then((v) => { slowDone = true; return v; });
  // Wait until the slow query has reached the server, so it is really outstanding.
  while (srv.count('slow.test') === 0) await new Promise((res) => setTimeout(res, 5));
  const others = await Promise.all(Array.from({ length: 20 }, (_, i) => r.resolve(`h${i}.test`, 80).then((v) => ({ v, slowDone }))));
  for (const [i, o] of others.entries()) {
    assert.equal(o.v.address, `10.1.1.${i}`);
    assert.equal(o.slowDone, false, `h${i}.test resolved while slow.test was still pending`);
  }
  assert.equal(slowDone, false);
  assert.equal((await slow).address, '10.1.0.1');
});

test('--resolve rules win over DNS; IP literals and localhost (RFC 6761 §6.3) send no query', async () => {
  const srv = await startDnsServer({ 'pinned.test': { a: ['10.0.0.10'] }, 'x.wild.test': { a: ['10.0.0.11'] } });
  const rules = [
    { host: 'pinned.test', port: 8080, address: '127.0.0.5' },
    { host: '*.wild.test', port: 8080, address: '::1' },
  ];
  const r = resolverFor(srv, {}, rules);
  assert.deepEqual(await r.resolve('pinned.test', 8080), { address: '127.0.0.5', family: 4 });
  assert.deepEqual(await r.resolve('X.Wild.Test', 8080), { address: '::1', family: 6 });
  assert.deepEqual(await r.resolve('127.0.0.3', 80), { address: '127.0.0.3', family: 4 });
  assert.deepEqual(await r.resolve('[::1]', 80), { address: '::1', family: 6 });
  assert.deepEqual(await r.resolve('localhost', 80), { address: '127.0.0.1', family: 4 });
  assert.deepEqual(await r.resolve('app.localhost', 80), { address: '127.0.0.1', family: 4 });
  assert.equal(srv.log.length, 0);
  r.prefetch('pinned.test', 8080);
  r.prefetch('pinned.test'); // no port: rules for 80/443 do not apply, so this one is asked
  // A rule for another port does not apply (curl semantics).
  assert.equal((await r.resolve('pinned.test', 80)).address, '10.0.0.10');
  assert.equal(srv.count('pinned.test'), 1);
});

test('prefetch: warms the cache; a fresh answer is not asked again; one about to expire is refreshed while still served', async () => {
  const srv = await startDnsServer({ 'p.test': { a: ['10.0.0.12'], ttl: 60 } });
  const c = clock();
  const r = resolverFor(srv, { now: c.now, prefetchWindowMs: 10_000 });
  r.prefetch('p.test');
  while (!r.peek('p.test')) await new Promise((res) => setTimeout(res, 5));
  assert.equal((await r.resolve('p.test', 80)).address, '10.0.0.12');
  r.prefetch('p.test');
  assert.equal(srv.count('p.test'), 1);
  c.t += 55_000; // 5 s left: inside the window
  srv.names.get('p.test')!.a = ['10.0.0.13'];
  r.prefetch('p.test');
  assert.equal((await r.resolve('p.test', 80)).address, '10.0.0.12', 'the cached answer is served during the refresh');
  while (r.peek('p.test')?.address !== '10.0.0.13') await new Promise((res) => setTimeout(res, 5));
  assert.equal(srv.count('p.test'), 2);
  // A transient failure during a refresh keeps the still-valid answer.
  c.t += 55_000;
  srv.names.get('p.test')!.servfail = true;
  r.prefetch('p.test');
  while (srv.count('p.test') < 3) await new Promise((res) => setTimeout(res, 5));
  await new Promise((res) => setTimeout(res, 20));
  assert.equal((await r.resolve('p.test', 80)).address, '10.0.0.13');
});

test('RFC 1035 §2.3.4: impossible names fail permanently without a query', async () => {
  const srv = await startDnsServer({});
  const r = resolverFor(srv);
  assert.equal((await rejection(r.resolve('a..b', 80))).code, 'EBADNAME');
  assert.equal((await rejection(r.resolve(`${'x'.repeat(64)}.test`, 80))).permanent, true);
  assert.equal(srv.log.length, 0);
});

test('the cache is bounded: the oldest entry goes first', async () => {
  const srv = await startDnsServer({ 'c1.test': { a: ['10.0.1.1'] }, 'c2.test': { a: ['10.0.1.2'] }, 'c3.test': { a: ['10.0.1.3'] } });
  const r = resolverFor(srv, { maxEntries: 2 });
  await r.resolve('c1.test', 80);
  await r.resolve('c2.test', 80);
  await r.resolve('c3.test', 80);
  assert.equal(r.size, 2);
  assert.equal(r.peek('c1.test'), undefined);
  assert.ok(r.peek('c3.test'));
});

test('the fetcher connects through the resolver (a name served by the test DNS server)', async () => {
  const srv = await startDnsServer({ 'site.test': { a: ['127.0.0.1'] } });
  const http = createServer((_req, res) => { res.end('hello'); });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const port = (http.address() as { port: number }).port;
  const cfg = defaultConfig();
  const f = new Fetcher(cfg.fetch, cfg.userAgent, resolverFor(srv), { addresses: new AddressPolicy(['127.0.0.0/8']) }); // the name resolves to loopback
  try {
    const out = await f.fetch(`http://site.test:${port}/`);
    assert.ok(out.ok);
    assert.equal(out.status, 200);
    assert.equal(out.ip, '127.0.0.1');
    const bad = await f.fetch(`http://missing.test:${port}/`);
    assert.equal(bad.ok, false);
    assert.equal(!bad.ok && bad.kind, 'dns');
    assert.equal(f.resolver.failure('missing.test')?.permanent, true, 'the agent can tell NXDOMAIN from a transient failure');
  } finally {
    await f.close();
    http.close();
  }
});
