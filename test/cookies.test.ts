// The per-host cookie jar (src/fetch/cookies.ts): RFC 6265 §5 parsing, storage
// and retrieval, host-only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CookieJar, defaultPath, domainMatches, parseCookieDate, parseSetCookie, pathMatches } from '../src/fetch/cookies.js';

const T0 = Date.UTC(2026, 0, 1);
const url = (u: string) => new URL(u);

test('Set-Cookie parsing (RFC 6265 §5.2): name=value, attributes case-insensitive, bad ones ignored', () => {
  assert.deepEqual(parseSetCookie('sid=abc'), { name: 'sid', value: 'abc', secure: false, httpOnly: false });
  const c = parseSetCookie(' a = b c ; PATH=/x; Domain=.Example.ORG; max-age=60; SECURE; HttpOnly; SameSite=Lax; Expires=Wed, 09 Jun 2027 10:18:14 GMT');
  assert.deepEqual(c, {
    name: 'a', value: 'b c', path: '/x', domain: 'example.org', maxAge: 60, expires: Date.UTC(2027, 5, 9, 10, 18, 14), secure: true, httpOnly: true,
  });
  assert.equal(parseSetCookie('novalue'), null, 'no = : ignored');
  assert.equal(parseSetCookie('=x'), null, 'empty name: ignored');
  assert.equal(parseSetCookie('a=b\x01'), null, 'control character');
  assert.equal(parseSetCookie('a=1; Path=relative')!.path, undefined, 'a path not starting with / is the default-path');
  assert.equal(parseSetCookie('a=1; Max-Age=1e3')!.maxAge, undefined, 'Max-Age must be digits');
  assert.equal(parseSetCookie('a=1; Domain=')!.domain, undefined);
  assert.equal(parseSetCookie('a=1; Expires=never')!.expires, undefined);
});

test('cookie dates (§5.1.1): the formats servers send, two-digit years, impossible dates refused', () => {
  assert.equal(parseCookieDate('Sun, 06 Nov 1994 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37));
  assert.equal(parseCookieDate('Sunday, 06-Nov-94 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37));
  assert.equal(parseCookieDate('Sun Nov  6 08:49:37 1994'), Date.UTC(1994, 10, 6, 8, 49, 37));
  assert.equal(parseCookieDate('06 Nov 30 08:49:37'), Date.UTC(2030, 10, 6, 8, 49, 37));
  assert.equal(parseCookieDate('30 Feb 2027 00:00:00'), undefined);
  assert.equal(parseCookieDate('06 Nov 1994'), undefined, 'no time');
  assert.equal(parseCookieDate('06 Nov 1500 00:00:00'), undefined, 'before 1601');
});

test('domain and path matching (§5.1.3, §5.1.4)', () => {
  assert.ok(domainMatches('www.example.org', 'example.org'));
  assert.ok(domainMatches('example.org', 'example.org'));
  assert.ok(!domainMatches('badexample.org', 'example.org'));
  assert.ok(!domainMatches('1.2.3.4', '2.3.4'), 'not for IP addresses');
  assert.equal(defaultPath('/a/b/c'), '/a/b');
  assert.equal(defaultPath('/a'), '/');
  assert.equal(defaultPath(''), '/');
  assert.ok(pathMatches('/a/b', '/a'));
  assert.ok(pathMatches('/a/', '/a/'));
  assert.ok(pathMatches('/a', '/a'));
  assert.ok(!pathMatches('/ab', '/a'));
  assert.ok(!pathMatches('/', '/a'));
});

test('the jar sends a host its own cookies back, by path, Secure only over https, longest path first', () => {
  const jar = new CookieJar();
  jar.store(url('https://site.test/shop/cart'), ['sid=1', 'root=r; Path=/', 'deep=d; Path=/shop/cart', 'sec=s; Secure; Path=/'], T0);
  assert.equal(jar.header(url('https://site.test/shop/cart/item'), T0 + 1), 'deep=d; sid=1; root=r; sec=s');
  assert.equal(jar.header(url('http://site.test/shop/x'), T0 + 1), 'sid=1; root=r', 'default-path /shop; no Secure cookie over http');
  assert.equal(jar.header(url('http://site.test/'), T0 + 1), 'root=r');
  assert.equal(jar.header(url('http://other.test/'), T0 + 1), undefined, 'another host gets nothing');
  assert.equal(jar.header(url('http://www.site.test/'), T0 + 1), undefined, 'host-only: not even a name under it');
});

test('host-only scope: a Domain attribute is checked, then the cookie stays with the host that set it', () => {
  const jar = new CookieJar();
  jar.store(url('http://www.example.org/'), ['ok=1; Domain=example.org', 'foreign=1; Domain=other.org', 'suffix=1; Domain=org', 'gh=1; Domain=github.io'], T0);
  assert.deepEqual(jar.cookiesOf('www.example.org').map((c) => c.name), ['ok']);
  assert.equal(jar.counts.ignored, 3);
  assert.equal(jar.header(url('http://example.org/'), T0), undefined);
  // A host may set a Domain equal to itself even when that is a public suffix's registrable part.
  jar.store(url('http://alice.github.io/'), ['me=1; Domain=alice.github.io'], T0);
  assert.equal(jar.header(url('http://alice.github.io/'), T0), 'me=1');
});

test('expiry: Max-Age wins over Expires, a past date removes, session cookies stay', () => {
  const jar = new CookieJar();
  const u = url('http://site.test/');
  jar.store(u, ['a=1; Max-Age=10; Expires=Thu, 01 Jan 2099 00:00:00 GMT', 'b=2; Expires=Thu, 01 Jan 2099 00:00:00 GMT', 'c=3'], T0);
  assert.equal(jar.header(u, T0 + 5_000), 'a=1; b=2; c=3');
  assert.equal(jar.header(u, T0 + 10_001), 'b=2; c=3', 'a expired after 10 s');
  jar.store(u, ['b=x; Max-Age=0', 'c=y; Expires=Thu, 01 Jan 1970 00:00:01 GMT'], T0 + 20_000);
  assert.equal(jar.header(u, T0 + 20_001), undefined, 'removed by an expiry in the past');
  assert.equal(jar.size, 0);
});

test('replacement keeps the creation time; the limits evict least recently used cookies and hosts', () => {
  const order = new CookieJar();
  const s = url('http://order.test/');
  order.store(s, ['x=1'], T0);
  order.store(s, ['y=2'], T0 + 1);
  order.store(s, ['x=3'], T0 + 2);
  assert.equal(order.header(s, T0 + 3), 'x=3; y=2', 'same name and path: replaced, creation time kept (§5.3 step 11), earlier creation first (§5.4)');

  const jar = new CookieJar({ maxPerHost: 3, maxHosts: 2, maxCookieBytes: 20 });
  const u = url('http://site.test/');
  jar.store(u, ['a=1', 'b=2; Path=/b'], T0);
  assert.equal(jar.header(u, T0 + 20), 'a=1', 'a is used, b is not');
  jar.store(u, ['c=3', 'd=4'], T0 + 30);
  assert.deepEqual(jar.cookiesOf('site.test').map((c) => c.name).sort(), ['a', 'c', 'd'], 'b was least recently used');
  assert.equal(jar.counts.evicted, 1);
  jar.store(u, ['big=' + 'x'.repeat(20)], T0 + 40);
  assert.equal(jar.counts.ignored, 1, 'over the size limit');
  jar.store(url('http://two.test/'), ['x=1'], T0 + 50);
  jar.store(url('http://three.test/'), ['y=1'], T0 + 60);
  assert.equal(jar.cookiesOf('site.test').length, 0, 'the least recently used host was dropped');
  assert.equal(jar.header(url('http://three.test/'), T0 + 70), 'y=1');
});
