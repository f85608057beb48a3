import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RobotsTxt, productToken, formatExplain, DEFAULT_MAX_BYTES } from '../src/robots/index.js';
import { normalizeOctets, pathAndQuery } from '../src/robots/normalize.js';

const ok = (body: string | Uint8Array, ua: string, url: string): boolean => RobotsTxt.parse(body).isAllowed(url, ua);

// ---------------------------------------------------------------------------
// §5 examples

const RFC_5_1 = [
  'User-Agent: *',
  'Disallow: *.gif$',
  'Disallow: /example/',
  'Allow: /publications/',
  '',
  'User-Agent: foobot',
  'Disallow:/',
  'Allow:/example/page.html',
  'Allow:/example/allowed.gif',
  '',
  'User-Agent: barbot',
  'User-Agent: bazbot',
  'Disallow: /example/page.html',
  '',
  'User-Agent: quxbot',
  '',
].join('\n');

test('RFC 9309 §5.1: the "*" group applies to agents with no group of their own', () => {
  const r = RobotsTxt.parse(RFC_5_1);
  assert.equal(r.isAllowed('https://www.example.com/publications/paper.html', 'otherbot'), true);
  assert.equal(r.isAllowed('https://www.example.com/example/', 'otherbot'), false);
  assert.equal(r.isAllowed('https://www.example.com/example/page.html', 'otherbot'), false);
  assert.equal(r.isAllowed('https://www.example.com/image.gif', 'otherbot'), false);
  assert.equal(r.isAllowed('https://www.example.com/deep/dir/image.gif', 'otherbot'), false);
  assert.equal(r.isAllowed('https://www.example.com/image.gif?x=1', 'otherbot'), true); // "$" anchors
  assert.equal(r.isAllowed('https://www.example.com/image.gifs', 'otherbot'), true);
  assert.equal(r.isAllowed('https://www.example.com/', 'otherbot'), true);
  // Longer allow (/publications/, 14 octets) beats "*.gif$" (6 octets).
  assert.equal(r.isAllowed('https://www.example.com/publications/fig.gif', 'otherbot'), true);
});

test('RFC 9309 §5.1: foobot may fetch only /example/page.html and /example/allowed.gif', () => {
  const r = RobotsTxt.parse(RFC_5_1);
  assert.equal(r.isAllowed('/example/page.html', 'foobot'), true);
  assert.equal(r.isAllowed('/example/allowed.gif', 'foobot'), true);
  assert.equal(r.isAllowed('/', 'foobot'), false);
  assert.equal(r.isAllowed('/example/other.html', 'foobot'), false);
  assert.equal(r.isAllowed('/publications/', 'foobot'), false);
  assert.equal(r.isAllowed('/example/page.html', 'FooBot/2.1 (+https://foo.example)'), true);
});

test('RFC 9309 §5.1: barbot and bazbot share one group; "*" does not apply to them', () => {
  const r = RobotsTxt.parse(RFC_5_1);
  for (const ua of ['barbot', 'bazbot', 'BazBot']) {
    assert.equal(r.isAllowed('/example/page.html', ua), false);
    assert.equal(r.isAllowed('/example/other.html', ua), true); // "*"'s /example/ not used
    assert.equal(r.isAllowed('/image.gif', ua), true); // "*"'s *.gif$ not used
  }
});

test('RFC 9309 §5.1: quxbot, an empty group at the end of the file, may fetch everything', () => {
  const r = RobotsTxt.parse(RFC_5_1);
  assert.equal(r.isAllowed('/example/page.html', 'quxbot'), true);
  assert.equal(r.isAllowed('/image.gif', 'quxbot'), true);
  assert.deepEqual(r.explain('/image.gif', 'quxbot'), { allowed: true, rule: null, group: 'quxbot' });
});

test('RFC 9309 §5.2: longest match: /example/page/disallowed.gif is disallowed', () => {
  const body = 'User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n';
  assert.equal(ok(body, 'foobot', 'https://example.com/example/page/disallowed.gif'), false);
  assert.equal(ok(body, 'foobot', 'https://example.com/example/page/allowed.gif'), true);
  assert.equal(ok(body, 'foobot', 'https://example.com/example/page/'), true);
});

// ---------------------------------------------------------------------------
// §2.2.1 user-agent lines and groups

test('RFC 9309 §2.2.1: productToken takes the leading [a-zA-Z_-]+ of a User-Agent string', () => {
  assert.equal(productToken('ubicrawl/0.1 (+https://x)'), 'ubicrawl');
  assert.equal(productToken('UbiCrawl'), 'UbiCrawl');
  assert.equal(productToken('Foo_Bar-baz/2'), 'Foo_Bar-baz');
  assert.equal(productToken('  ExampleBot 1.0'), 'ExampleBot');
  assert.equal(productToken('ExampleBot2'), 'ExampleBot');
  assert.equal(productToken(''), '');
  assert.equal(productToken('*'), '');
  assert.equal(productToken('ツbot'), '');
});

test('RFC 9309 §2.2.1: user-agent matching is case-insensitive both ways', () => {
  for (const line of ['User-Agent: FOOBOT', 'user-agent: foobot', 'User-Agent: FoObOt']) {
    const body = `${line}\nAllow: /x/\nDisallow: /\n`;
    for (const ua of ['FooBot', 'foobot', 'FOOBOT/1.0']) {
      assert.equal(ok(body, ua, '/x/y'), true);
      assert.equal(ok(body, ua, '/a/b'), false);
    }
  }
});

test('RFC 9309 §2.2.1: a user-agent value is matched on its product token (version and words after it ignored)', () => {
  const body = 'User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n';
  assert.equal(ok(body, 'Foo', '/x/y'), true);
  assert.equal(ok(body, 'Bar', '/x/y'), false); // only "Foo" is named; Bar falls to "*"
  assert.equal(ok('User-agent: FooBot/1.2\nDisallow: /\n', 'foobot', '/a'), false);
});

test('RFC 9309 §2.2.1: a token is matched whole, never as a substring either way', () => {
  const body = 'User-agent: bot\nDisallow: /\n\nUser-agent: ubicrawlerx\nDisallow: /\n';
  assert.equal(ok(body, 'ubicrawl', '/a'), true);
  assert.equal(ok(body, 'mybot', '/a'), true);
  assert.equal(ok(body, 'bot', '/a'), false);
});

test('RFC 9309 §2.2.1: all groups naming the token are merged (the RFC table example)', () => {
  const body = 'user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n';
  const r = RobotsTxt.parse(body);
  for (const p of ['/foo', '/bar', '/baz/x']) assert.equal(r.isAllowed(p, 'ExampleBot'), false, p);
  assert.equal(r.isAllowed('/qux', 'ExampleBot'), true);
});

test('RFC 9309 §2.2.1: merged groups are ranked together: the longest rule across groups wins', () => {
  const body = 'User-agent: a\nDisallow: /shop/\n\nUser-agent: b\nDisallow: /\n\nUser-agent: a\nAllow: /shop/public/\n';
  const r = RobotsTxt.parse(body);
  assert.equal(r.isAllowed('/shop/public/item', 'a'), true);
  assert.equal(r.isAllowed('/shop/private', 'a'), false);
  assert.equal(r.isAllowed('/other', 'a'), true);
  assert.deepEqual(r.explain('/shop/public/item', 'a').rule, { kind: 'allow', pattern: '/shop/public/', line: 8 });
});

test('RFC 9309 §2.2.1: with no matching group the "*" group is obeyed (the RFC table example)', () => {
  const body = 'user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n';
  const r = RobotsTxt.parse(body);
  assert.equal(r.isAllowed('/foo', 'ExampleBot'), false);
  assert.equal(r.isAllowed('/bar', 'ExampleBot'), false);
  assert.equal(r.isAllowed('/baz', 'ExampleBot'), true);
  assert.equal(r.explain('/foo', 'ExampleBot').group, '*');
});

test('RFC 9309 §2.2.1: a group naming the token replaces "*" entirely, even where it has no rule', () => {
  const body = 'User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n';
  assert.equal(ok(body, 'FooBot', '/x/page'), true);
  assert.equal(ok(body, 'FooBot', '/y/page'), false);
  // A named group whose only line is an empty Disallow still replaces "*".
  assert.equal(ok('User-agent: *\nDisallow: /\n\nUser-agent: FooBot\nDisallow:\n', 'FooBot', '/a'), true);
  // The order of the groups in the file does not matter.
  assert.equal(ok('User-agent: FooBot\nDisallow:\n\nUser-agent: *\nDisallow: /\n', 'FooBot', '/a'), true);
});

test('RFC 9309 §2.2.1: several "*" groups are merged too', () => {
  const body = 'User-agent: *\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /b\nAllow: /a/ok\n';
  const r = RobotsTxt.parse(body);
  assert.equal(r.isAllowed('/a', 'ubicrawl'), false);
  assert.equal(r.isAllowed('/b', 'ubicrawl'), false);
  assert.equal(r.isAllowed('/a/ok', 'ubicrawl'), true);
  assert.equal(r.isAllowed('/c', 'ubicrawl'), true);
});

test('RFC 9309 §2.2.1: no matching group and no "*" group, or no groups at all: no rules apply', () => {
  const body = 'user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n';
  assert.equal(ok(body, 'QuxBot', '/x/y'), true);
  assert.deepEqual(RobotsTxt.parse(body).explain('/x/y', 'QuxBot'), { allowed: true, rule: null, group: '(none)' });
  assert.equal(ok('', 'FooBot', '/'), true);
  assert.equal(ok('# only a comment\n\n', 'FooBot', '/'), true);
  assert.equal(ok('Disallow: /\n', 'FooBot', '/'), true); // a rule outside any group
});

test('RFC 9309 §2.2.1: "*" followed by blanks and more text is still the global agent; "*bot" is not', () => {
  assert.equal(ok('User-agent: * # everyone\nDisallow: /\n', 'x', '/a'), false);
  assert.equal(ok('User-agent: * extra words\nDisallow: /\n', 'x', '/a'), false);
  assert.equal(ok('User-agent: *bot\nDisallow: /\n', 'x', '/a'), true);
});

test('RFC 9309 §2.2.1: an empty or non-token user agent never matches a specific group', () => {
  const body = 'User-agent: FooBot\nDisallow: /\n';
  assert.equal(ok(body, '', '/'), true);
  assert.equal(ok(body, '*', '/'), true);
  assert.equal(ok('User-agent: *\nDisallow: /\n', '', '/'), false); // but "*" does apply
});

test('RFC 9309 §2.1: consecutive user-agent lines (blank lines between included) form one group', () => {
  const body = [
    'allow: /foo/bar/', '', 'user-agent: FooBot', 'disallow: /', 'allow: /x/', 'user-agent: BarBot',
    'disallow: /', 'allow: /y/', '', '', 'allow: /w/', 'user-agent: BazBot', '', 'user-agent: FooBot',
    'allow: /z/', 'disallow: /',
  ].join('\n');
  const r = RobotsTxt.parse(body);
  assert.equal(r.isAllowed('http://foo.bar/x/b', 'FooBot'), true);
  assert.equal(r.isAllowed('http://foo.bar/z/d', 'FooBot'), true);
  assert.equal(r.isAllowed('http://foo.bar/y/c', 'FooBot'), false);
  assert.equal(r.isAllowed('http://foo.bar/y/c', 'BarBot'), true);
  assert.equal(r.isAllowed('http://foo.bar/w/a', 'BarBot'), true); // "allow: /w/" still in BarBot's group
  assert.equal(r.isAllowed('http://foo.bar/z/d', 'BarBot'), false);
  assert.equal(r.isAllowed('http://foo.bar/z/d', 'BazBot'), true); // BazBot joins the last FooBot group
  // The rule before the first user-agent line is ignored (§2.2.2).
  for (const ua of ['FooBot', 'BarBot', 'BazBot']) assert.equal(r.isAllowed('http://foo.bar/foo/bar/', ua), false);
});

test('RFC 9309 §2.2.2: rules before the first user-agent line are ignored and counted', () => {
  const r = RobotsTxt.parse('Disallow: /private\nAllow: /x\nUser-agent: *\nDisallow: /tmp\n');
  assert.equal(r.isAllowed('/private', 'x'), true);
  assert.equal(r.isAllowed('/tmp/a', 'x'), false);
  assert.equal(r.invalidLines, 2);
});

test('RFC 9309 §2.2.4: Sitemap and unknown records do not end a group', () => {
  const a = 'User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n';
  assert.equal(ok(a, 'FooBot', 'http://foo.bar/'), false);
  assert.equal(ok(a, 'BarBot', 'http://foo.bar/'), false);
  const b = 'User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n';
  assert.equal(ok(b, 'FooBot', 'http://foo.bar/'), false);
  assert.equal(ok(b, 'BarBot', 'http://foo.bar/'), false);
  const c = 'User-agent: a\nCrawl-delay: 3\nUser-agent: b\nDisallow: /x\n';
  assert.equal(ok(c, 'a', '/x'), false);
  assert.equal(RobotsTxt.parse(c).crawlDelay('a'), 3);
  assert.equal(RobotsTxt.parse(c).crawlDelay('b'), 3);
});

// ---------------------------------------------------------------------------
// §2.2.2 allow / disallow

test('RFC 9309 §2.2.2: longest match wins, allow on a tie (reference-parser cases)', () => {
  const url = 'http://foo.bar/x/page.html';
  assert.equal(ok('user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n', 'FooBot', url), false);
  assert.equal(ok('user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n', 'FooBot', url), true);
  assert.equal(ok('user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n', 'FooBot', 'http://foo.bar/x/'), false);
  assert.equal(ok('user-agent: FooBot\ndisallow: \nallow: \n', 'FooBot', url), true);
  assert.equal(ok('user-agent: FooBot\ndisallow: /\nallow: /\n', 'FooBot', url), true);
  assert.equal(ok('user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n', 'FooBot', url), true);
  assert.equal(ok('user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/page.html\n', 'FooBot', url), true);
  const ab = 'user-agent: FooBot\ndisallow: /x\nallow: /x/\n';
  assert.equal(ok(ab, 'FooBot', 'http://foo.bar/x'), false);
  assert.equal(ok(ab, 'FooBot', 'http://foo.bar/x/'), true);
  const w = 'user-agent: FooBot\nallow: /page\ndisallow: /*.html\n';
  assert.equal(ok(w, 'FooBot', 'http://foo.bar/page.html'), false);
  assert.equal(ok(w, 'FooBot', 'http://foo.bar/page'), true);
});

test('RFC 9309 §2.2.2: "most octets" counts the pattern, wildcards included, not the matched text', () => {
  // "/x/page." (8 octets) beats "/*.html" (7) even though "/*.html" spans more of the path.
  const body = 'user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n';
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/x/page.html'), true);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/x/y.html'), false);
  // "/$" (2 octets) beats "/" (1).
  const root = 'user-agent: FooBot\nallow: /$\ndisallow: /\n';
  assert.equal(ok(root, 'FooBot', 'http://example.com/'), true);
  assert.equal(ok(root, 'FooBot', 'http://example.com/page.html'), false);
  // Percent-normalised length: "/%7Ea" is "/~a", 3 octets, and ties with the 3-octet disallow.
  assert.equal(ok('user-agent: a\ndisallow: /~a\nallow: /%7Ea\n', 'a', '/~a/b'), true);
});

test('RFC 9309 §2.2.2: order of precedence examples (allow shorter than disallow, equal, wildcard)', () => {
  assert.equal(ok('user-agent: FooBot\nallow: /p\ndisallow: /\n', 'FooBot', 'http://example.com/page'), true);
  assert.equal(ok('user-agent: FooBot\nallow: /folder\ndisallow: /folder\n', 'FooBot', 'http://example.com/folder/page'), true);
  assert.equal(ok('user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n', 'FooBot', 'http://example.com/page.htm'), false);
});

test('RFC 9309 §2.2.2: matching is case-sensitive and starts at the first octet of the path', () => {
  assert.equal(ok('user-agent: FooBot\ndisallow: /x/\n', 'FooBot', 'http://foo.bar/x/y'), false);
  assert.equal(ok('user-agent: FooBot\ndisallow: /X/\n', 'FooBot', 'http://foo.bar/x/y'), true);
  const fish = 'user-agent: FooBot\ndisallow: /\nallow: /fish\n';
  assert.equal(ok(fish, 'FooBot', 'http://foo.bar/fish.html?id=anything'), true);
  assert.equal(ok(fish, 'FooBot', 'http://foo.bar/Fish.asp'), false);
  assert.equal(ok(fish, 'FooBot', 'http://foo.bar/catfish'), false);
  assert.equal(ok(fish, 'FooBot', 'http://foo.bar/?id=fish'), false);
});

test('RFC 9309 §2.2.2: an empty Disallow (or Allow) matches nothing', () => {
  assert.equal(ok('User-agent: *\nDisallow:\n', 'x', '/anything'), true);
  assert.equal(ok('User-agent: *\nDisallow:   # comment\n', 'x', '/anything'), true);
  assert.equal(ok('User-agent: *\nAllow:\nDisallow: /\n', 'x', '/a'), false);
  assert.equal(RobotsTxt.parse('User-agent: *\nDisallow:\n').invalidLines, 0);
});

test('RFC 9309 §2.2.2: the path is compared with its query; the fragment is not part of it', () => {
  const body = 'User-agent: *\nDisallow: /search?q=\nDisallow: /*?sessionid\n';
  assert.equal(ok(body, 'x', 'https://h/search?q=cats'), false);
  assert.equal(ok(body, 'x', 'https://h/search?lang=en&q=cats'), true);
  assert.equal(ok(body, 'x', 'https://h/search#?q='), true);
  assert.equal(ok(body, 'x', 'https://h/a/b?sessionid=1'), false);
  assert.equal(ok('User-agent: *\nDisallow: /a#b\n', 'x', 'https://h/a#frag'), false); // "#b" is a comment
  const q = 'User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n';
  assert.equal(ok(q, 'FooBot', 'http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par'), true);
});

test('RFC 9309 §2.2.2: isAllowed takes a full URL, a scheme-relative URL, a path, or a path with query', () => {
  const r = RobotsTxt.parse('User-agent: *\nDisallow: /private\nDisallow: /*?print\n');
  assert.equal(r.isAllowed('https://user:pw@example.com:8443/private/x', 'a'), false);
  assert.equal(r.isAllowed('//example.com/private', 'a'), false);
  assert.equal(r.isAllowed('/private', 'a'), false);
  assert.equal(r.isAllowed('/page?print=1', 'a'), false);
  assert.equal(r.isAllowed('https://example.com?print', 'a'), false);
  assert.equal(r.isAllowed('https://example.com', 'a'), true);
  assert.equal(r.isAllowed('/public', 'a'), true);
  assert.equal(pathAndQuery('http://www.example.com/a/b?c=d&e=f#fragment'), '/a/b?c=d&e=f');
  assert.equal(pathAndQuery('http://www.example.com'), '/');
  assert.equal(pathAndQuery('example.com/a;b#c'), '/a;b');
  assert.equal(pathAndQuery('//a/b/c'), '/b/c');
  assert.equal(pathAndQuery('?x=1'), '/?x=1');
  assert.equal(pathAndQuery(''), '/');
  assert.equal(pathAndQuery('http://h/a/b?c=http://d.e/'), '/a/b?c=http://d.e/');
});

test('RFC 9309 §2.2.2: /robots.txt is implicitly allowed', () => {
  const r = RobotsTxt.parse('User-agent: *\nDisallow: /\n');
  assert.equal(r.isAllowed('https://example.com/robots.txt', 'x'), true);
  assert.equal(r.isAllowed('/robots.txt', 'x'), true);
  assert.equal(r.isAllowed('/robots.txt?x=1', 'x'), true);
  assert.equal(r.isAllowed('/robots.txt.bak', 'x'), false);
  assert.equal(r.isAllowed('/dir/robots.txt', 'x'), false);
  assert.equal(RobotsTxt.disallowAll().isAllowed('https://h/robots.txt', 'x'), true);
  assert.deepEqual(r.explain('/robots.txt', 'x'), { allowed: true, rule: null, group: '(robots.txt)' });
});

// ---------------------------------------------------------------------------
// §2.2.2 percent-encoding

test('RFC 9309 §2.2.2: percent-encoding table, row 1: /foo/bar?baz=quz as is', () => {
  const body = 'User-agent: *\nDisallow: /\nAllow: /foo/bar?baz=quz\n';
  assert.equal(ok(body, 'x', '/foo/bar?baz=quz'), true);
});

test('RFC 9309 §2.2.2: percent-encoding table, row 2: encoded reserved characters stay encoded', () => {
  // "https%3A%2F%2Ffoo.bar" is matched as that encoded text, never decoded.
  const body = 'User-agent: *\nDisallow: /\nAllow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n';
  assert.equal(ok(body, 'x', 'https://example.com/foo/bar?baz=https%3A%2F%2Ffoo.bar'), true);
  assert.equal(ok(body, 'x', 'https://example.com/foo/bar?baz=https%3a%2f%2ffoo.bar'), true); // hex case
  // %2F is not "/" (RFC 3986 §2.2: encoding a reserved character changes meaning).
  const slash = 'User-agent: *\nDisallow: /a/b\n';
  assert.equal(ok(slash, 'x', '/a%2Fb'), true);
  assert.equal(ok('User-agent: *\nDisallow: /a%2fb\n', 'x', '/a%2Fb'), false);
  assert.equal(ok('User-agent: *\nDisallow: /a%2Fb\n', 'x', '/a/b'), true);
});

test('RFC 9309 §2.2.2: percent-encoding table, rows 3-4: non-ASCII octets are compared percent-encoded', () => {
  for (const pattern of ['/foo/bar/ツ', '/foo/bar/%E3%83%84', '/foo/bar/%e3%83%84']) {
    const body = `User-agent: FooBot\nDisallow: /\nAllow: ${pattern}\n`;
    assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/%E3%83%84'), true, pattern);
    assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/ツ'), true, pattern); // URL side encoded too
    assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/%e3%83%84'), true, pattern);
    assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/x'), false, pattern);
  }
  // Raw bytes in the body work the same as text.
  const bytes = new TextEncoder().encode('User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n');
  assert.equal(ok(bytes, 'FooBot', '/foo/bar/%E3%83%84'), true);
  assert.equal(normalizeOctets('/Sanjosé', false, false), '/Sanjos%C3%A9');
  assert.equal(normalizeOctets('/😀', false, false), '/%F0%9F%98%80');
});

test('RFC 9309 §2.2.2: percent-encoding table, row 5: encoded unreserved characters equal their plain form', () => {
  const body = 'User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n';
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/baz'), true);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/%62%61%7A'), true);
  const plain = 'User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/baz\n';
  assert.equal(ok(plain, 'FooBot', 'http://foo.bar/foo/bar/%62%61%7a'), true);
  // "~" is unreserved: %7E and ~ are one octet (the 1996 draft's /~mak example).
  const mak = 'User-agent: *\nAllow: /~mak\nDisallow: /\n';
  assert.equal(ok(mak, 'x', 'http://www.fict.org/%7Emak/mak.html'), true);
  assert.equal(ok(mak, 'x', 'http://www.fict.org/%7Ejim/jim.html'), false);
});

test('RFC 9309 §2.2.2: normalisation: upper-case hex, bare "%", octets not allowed raw in a URI', () => {
  assert.equal(normalizeOctets('/a%2fb%3a', false, false), '/a%2Fb%3A');
  assert.equal(normalizeOctets('/100%', false, false), '/100%25');
  assert.equal(normalizeOctets('/%zz', false, false), '/%25zz');
  assert.equal(normalizeOctets('/a b|c"d', false, false), '/a%20b%7Cc%22d');
  assert.equal(normalizeOctets('/%41%2D%7e', false, false), '/A-~');
  assert.equal(normalizeOctets('/plain/path?q=1&r=2', false, false), '/plain/path?q=1&r=2');
  assert.equal(ok('User-agent: *\nDisallow: /a b\n', 'x', '/a%20b'), false);
  assert.equal(ok('User-agent: *\nDisallow: /100%\n', 'x', '/100%25'), false);
});

// ---------------------------------------------------------------------------
// §2.2.3 special characters

test('RFC 9309 §2.2.3: "*" matches any run of octets, "/" included', () => {
  const body = 'User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n';
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/quz'), false);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/quz'), true);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo//quz'), true);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bax/quz'), true);
  const php = 'user-agent: FooBot\ndisallow: /\nallow: /*.php\n';
  for (const p of ['/filename.php', '/folder/filename.php', '/folder/filename.php?parameters', '//folder/any.php.file.html', '/filename.php/', '/index?f=filename.php/']) {
    assert.equal(ok(php, 'FooBot', p), true, p);
  }
  for (const p of ['/php/', '/index?php', '/windows.PHP']) assert.equal(ok(php, 'FooBot', p), false, p);
  const fishphp = 'user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n';
  assert.equal(ok(fishphp, 'FooBot', '/fishheads/catfish.php?parameters'), true);
  assert.equal(ok(fishphp, 'FooBot', '/Fish.PHP'), false);
  // "/fish*" behaves as "/fish".
  const fishstar = 'user-agent: FooBot\ndisallow: /\nallow: /fish*\n';
  assert.equal(ok(fishstar, 'FooBot', '/fish'), true);
  assert.equal(ok(fishstar, 'FooBot', '/fishheads/yummy.html'), true);
  assert.equal(ok(fishstar, 'FooBot', '/catfish'), false);
});

test('RFC 9309 §2.2.3: "$" at the end anchors the pattern at the end of the path', () => {
  const body = 'User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n';
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar'), false);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/qux'), true);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/'), true);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar/baz'), true);
  const php = 'user-agent: FooBot\ndisallow: /\nallow: /*.php$\n';
  assert.equal(ok(php, 'FooBot', '/filename.php'), true);
  assert.equal(ok(php, 'FooBot', '/folder/filename.php'), true);
  for (const p of ['/filename.php?parameters', '/filename.php/', '/filename.php5', '/php/', '/filename?php', '/aaaphpaaa', '//windows.PHP']) {
    assert.equal(ok(php, 'FooBot', p), false, p);
  }
  // "*$" at the end matches everything; "$" alone after "*" too.
  assert.equal(ok('user-agent: a\ndisallow: /x*$\n', 'a', '/x/y'), false);
});

test('RFC 9309 §2.2.3: a "$" that is not last is an ordinary character (Google reads it the same way)', () => {
  const body = 'User-agent: *\nDisallow: /a$b\n';
  assert.equal(ok(body, 'x', '/a$b'), false);
  assert.equal(ok(body, 'x', '/a%24b/c'), false);
  assert.equal(ok(body, 'x', '/ab'), true);
  assert.equal(ok(body, 'x', '/a'), true);
  // "/a$$": literal "$" then end anchor.
  const two = 'User-agent: *\nDisallow: /a$$\n';
  assert.equal(ok(two, 'x', '/a$'), false);
  assert.equal(ok(two, 'x', '/a$x'), true);
});

test('RFC 9309 §2.2.3: "%2A" and "%24" in a pattern match a literal "*" and "$" in the URI', () => {
  const body = 'User-agent: FooBot\nDisallow: /path/file-with-a-%2A.html\nDisallow: /path/foo-%24\nAllow: /\n';
  assert.equal(ok(body, 'FooBot', 'https://www.example.com/path/file-with-a-*.html'), false);
  assert.equal(ok(body, 'FooBot', 'https://www.example.com/path/file-with-a-%2A.html'), false);
  assert.equal(ok(body, 'FooBot', 'https://www.example.com/path/file-with-a-x.html'), true);
  assert.equal(ok(body, 'FooBot', 'https://www.example.com/path/foo-$'), false);
  assert.equal(ok(body, 'FooBot', 'https://www.example.com/path/foo-%24'), false);
  assert.equal(ok(body, 'FooBot', 'https://www.example.com/path/foo-'), true);
});

test('RFC 9309 §2.2.3: "#" starts a comment, on its own line or after a rule', () => {
  const body = 'User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n';
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/bar'), true);
  assert.equal(ok(body, 'FooBot', 'http://foo.bar/foo/quz'), false);
  assert.equal(ok('User-agent: *\nallow: / # comment in line\ndisallow: /x\n', 'a', '/'), true);
  assert.equal(RobotsTxt.parse(body).invalidLines, 0);
});

// ---------------------------------------------------------------------------
// §2.2 syntax

test('RFC 9309 §2.2: keys are case-insensitive', () => {
  for (const body of ['USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n', 'uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n']) {
    assert.equal(ok(body, 'FooBot', 'http://foo.bar/x/y'), true);
    assert.equal(ok(body, 'FooBot', 'http://foo.bar/a/b'), false);
  }
});

test('RFC 9309 §2.2: blanks around key, colon and value are optional (WS = SP / HTAB)', () => {
  for (const line of ['Disallow:/a', 'Disallow : /a', '  Disallow\t:\t/a  ', '\tDisallow:   /a\t# c']) {
    assert.equal(ok(`User-agent:*\n${line}\n`, 'x', '/a'), false, JSON.stringify(line));
  }
});

test('RFC 9309 §2.2: a missing colon is tolerated when the line has exactly two words (as Google does)', () => {
  assert.equal(ok('user-agent FooBot\ndisallow /\n', 'FooBot', 'http://foo.bar/x/y'), false);
  assert.equal(ok('foo: FooBot\nbar: /\n', 'FooBot', 'http://foo.bar/x/y'), true);
  const r = RobotsTxt.parse('user-agent: *\ndisallow / extra\n');
  assert.equal(r.isAllowed('/', 'x'), true);
  assert.equal(r.invalidLines, 1);
});

test('RFC 9309 §2.2.4: common misspellings of the keys are accepted as whole words', () => {
  for (const key of ['dissallow', 'dissalow', 'disalow', 'diasllow', 'disallaw']) {
    assert.equal(ok(`user-agent: *\n${key}: /x\n`, 'a', '/x'), false, key);
  }
  assert.equal(ok('useragent: foo\ndisallow: /x\n', 'foo', '/x'), false);
  assert.equal(ok('user agent: foo\ndisallow: /x\n', 'foo', '/x'), false);
  // Not prefixes: "disallowed" is an unknown record, skipped and counted.
  const r = RobotsTxt.parse('user-agent: *\ndisallowed: /x\n');
  assert.equal(r.isAllowed('/x', 'a'), true);
  assert.equal(r.invalidLines, 1);
});

test('RFC 9309 §2.2: CR, LF and CRLF line endings, mixed, and no final newline', () => {
  for (const nl of ['\n', '\r', '\r\n']) {
    const body = ['User-Agent: foo', 'Allow: /some/path', 'User-Agent: bar', '', '', 'Disallow: /'].join(nl);
    const r = RobotsTxt.parse(body);
    assert.equal(r.isAllowed('/x', 'bar'), false);
    assert.equal(r.isAllowed('/some/path', 'foo'), true);
    assert.equal(r.isAllowed('/x', 'foo'), true); // the Allow line closed foo's group
    assert.equal(r.explain('/x', 'bar').rule?.line, 6, JSON.stringify(nl));
  }
  const mixed = 'User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /';
  assert.equal(RobotsTxt.parse(mixed).explain('/x', 'bar').rule?.line, 6);
  const crcrlf = 'User-agent: a\r\r\nDisallow: /x\r\n';
  assert.equal(RobotsTxt.parse(crcrlf).explain('/x', 'a').rule?.line, 3);
});

test('RFC 9309 §2.2: a UTF-8 byte order mark (or its leading part) at the start is skipped', () => {
  const tail = new TextEncoder().encode('User-Agent: foo\nDisallow: /AnyValue\n');
  const cat = (head: number[]) => new Uint8Array([...head, ...tail]);
  for (const bom of [[0xef, 0xbb, 0xbf], [0xef, 0xbb], [0xef]]) {
    const r = RobotsTxt.parse(cat(bom));
    assert.equal(r.isAllowed('/AnyValue', 'foo'), false, JSON.stringify(bom));
    assert.equal(r.invalidLines, 0);
  }
  assert.equal(ok('\uFEFFUser-Agent: foo\nDisallow: /AnyValue\n', 'foo', '/AnyValue'), false);
  // A broken BOM spoils the first line only.
  const broken = RobotsTxt.parse(cat([0xef, 0x11, 0xbf]));
  assert.equal(broken.isAllowed('/AnyValue', 'foo'), true);
  assert.equal(broken.invalidLines, 2); // the garbled user-agent line, then the orphan rule
  // A BOM in the middle of the file is just garbage on that line.
  const mid = new Uint8Array([...new TextEncoder().encode('User-Agent: foo\n'), 0xef, 0xbb, 0xbf, ...new TextEncoder().encode('Disallow: /AnyValue\n')]);
  assert.equal(RobotsTxt.parse(mid).isAllowed('/AnyValue', 'foo'), true);
});

test('RFC 9309 §2.3.1.5: unparseable lines are skipped and counted; the rest still applies', () => {
  const body = 'User-agent: *\nthis line is nonsense\n:no key\nDisallow: /a\nHost: example.com\nDisallow: relative/path\nDisallow: /b\n';
  const r = RobotsTxt.parse(body);
  assert.equal(r.isAllowed('/a', 'x'), false);
  assert.equal(r.isAllowed('/b', 'x'), false);
  assert.equal(r.isAllowed('/relative/path', 'x'), true);
  assert.equal(r.invalidLines, 4);
});

// ---------------------------------------------------------------------------
// §2.2.4 other records: Sitemap, Crawl-delay

test('RFC 9309 §2.2.4: Sitemap lines are collected wherever they appear, in order, deduplicated', () => {
  const body = 'Sitemap: https://h/a.xml\nUser-agent: *\nDisallow: /x\nsitemap:https://h/b.xml\nSite-map: https://h/a.xml\n\nUser-agent: foo\nSITEMAP: https://h/c.xml # c\n';
  const r = RobotsTxt.parse(body);
  assert.deepEqual(r.sitemaps, ['https://h/a.xml', 'https://h/b.xml', 'https://h/c.xml']);
  assert.equal(r.isAllowed('/x', 'bar'), false);
  assert.throws(() => (r.sitemaps as string[]).push('x')); // frozen
  assert.deepEqual(RobotsTxt.parse('Sitemap: https://h/ü.xml\n').sitemaps, ['https://h/ü.xml']);
});

test('Crawl-delay (non-standard): per group, decimals allowed, the largest of merged groups, invalid skipped', () => {
  const body = [
    'User-agent: *', 'Crawl-delay: 2', 'Disallow: /x', '',
    'User-agent: ubicrawl', 'Crawl-delay: 0.5', 'Disallow: /y', '',
    'User-agent: ubicrawl', 'Crawl-delay: 1.25', 'Allow: /public', '',
    'User-agent: other', 'Crawl-delay: soon', 'Crawl-delay: -1', 'Disallow: /z', '',
    'User-agent: nodelay', 'Disallow: /',
  ].join('\n');
  const r = RobotsTxt.parse(body);
  assert.equal(r.crawlDelay('ubicrawl/0.1 (+https://x)'), 1.25);
  assert.equal(r.crawlDelay('unknown'), 2);
  assert.equal(r.crawlDelay('other'), undefined);
  assert.equal(r.crawlDelay('nodelay'), undefined); // "*"'s delay does not apply to a named group
  assert.equal(r.invalidLines, 2);
  assert.equal(r.isAllowed('/y', 'ubicrawl'), false);
  assert.equal(RobotsTxt.parse('User-agent: *\nCrawl-delay: .5\n').crawlDelay('a'), 0.5);
  assert.equal(RobotsTxt.parse('User-agent: *\nCrawl-delay: 10.\n').crawlDelay('a'), 10);
  assert.equal(RobotsTxt.parse('Crawl-delay: 5\nUser-agent: *\n').crawlDelay('a'), undefined);
  assert.equal(RobotsTxt.parse('User-agent: *\nCrawl-delay: 1e3\n').crawlDelay('a'), undefined);
});

test('RFC 9309 §2.2.4: a group holding only Crawl-delay runs on into the next user-agent line (as in Google\'s parser)', () => {
  // Crawl-delay is not a rule, so it cannot close a group: Yandex and "*" form one group here.
  const body = 'User-agent: Yandex\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /private\n';
  const r = RobotsTxt.parse(body);
  assert.equal(r.isAllowed('/private', 'Yandex'), false);
  assert.equal(r.isAllowed('/private', 'ubicrawl'), false);
  assert.equal(r.crawlDelay('Yandex'), 5);
  assert.equal(r.crawlDelay('ubicrawl'), 5);
});

// ---------------------------------------------------------------------------
// explain / formatExplain

test('explain names the deciding rule, its line and the group; formatExplain renders it', () => {
  const body = '# header\nUser-agent: *\nDisallow: /\n\nUser-agent: ubicrawl\nAllow: /pa*\nDisallow: /private\n';
  const r = RobotsTxt.parse(body);
  const a = r.explain('/path', 'ubicrawl/0.1');
  assert.deepEqual(a, { allowed: true, rule: { kind: 'allow', pattern: '/pa*', line: 6 }, group: 'ubicrawl' });
  assert.equal(formatExplain('/path', a), 'allowed     /path  (allow: /pa* line 6, group ubicrawl)');
  const d = r.explain('https://h/private/x', 'ubicrawl');
  assert.equal(formatExplain('https://h/private/x', d), 'disallowed  https://h/private/x  (disallow: /private line 7, group ubicrawl)');
  assert.equal(formatExplain('/other', r.explain('/other', 'ubicrawl')), 'allowed     /other  (no matching rule, group ubicrawl)');
  assert.equal(formatExplain('/x', r.explain('/x', 'someone')), 'disallowed  /x  (disallow: / line 3, group *)');
  assert.equal(formatExplain('/x', RobotsTxt.allowAll().explain('/x', 'a')), 'allowed     /x  (no matching group)');
  assert.equal(formatExplain('/robots.txt', r.explain('/robots.txt', 'a')), 'allowed     /robots.txt  (/robots.txt is always allowed)');
  // The pattern is shown as written, even when it was normalised for matching.
  assert.equal(RobotsTxt.parse('User-agent: *\nDisallow: /caf%c3%a9/ü\n').explain('/caf%C3%A9/%C3%BC', 'a').rule?.pattern, '/caf%c3%a9/ü');
});

test('explain and isAllowed agree', () => {
  const r = RobotsTxt.parse(RFC_5_1);
  for (const ua of ['foobot', 'barbot', 'quxbot', 'x']) {
    for (const p of ['/', '/a.gif', '/example/page.html', '/example/allowed.gif', '/publications/x.gif', '/robots.txt']) {
      assert.equal(r.explain(p, ua).allowed, r.isAllowed(p, ua), `${ua} ${p}`);
    }
  }
});

// ---------------------------------------------------------------------------
// allowAll / disallowAll / serialisation

test('RFC 9309 §2.3.1.3-4: allowAll (unavailable) and disallowAll (unreachable)', () => {
  assert.equal(RobotsTxt.allowAll().isAllowed('/anything', 'x'), true);
  assert.equal(RobotsTxt.allowAll().crawlDelay('x'), undefined);
  const d = RobotsTxt.disallowAll();
  assert.equal(d.isAllowed('/', 'x'), false);
  assert.equal(d.isAllowed('https://h/a?b', 'ubicrawl'), false);
  assert.equal(d.isAllowed('https://h/robots.txt', 'ubicrawl'), true);
  assert.deepEqual(d.sitemaps, []);
});

test('RFC 9309 §2.4: toJSON/fromJSON round-trips through JSON for caching', () => {
  const body = RFC_5_1 + '\nSitemap: https://h/s.xml\nUser-agent: slow\nCrawl-delay: 3\nDisallow: /café\nDisallow: /a$b\n';
  const a = RobotsTxt.parse(body);
  const b = RobotsTxt.fromJSON(JSON.parse(JSON.stringify(a)));
  assert.ok(b);
  assert.deepEqual(b.toJSON(), a.toJSON());
  for (const ua of ['foobot', 'barbot', 'quxbot', 'x', 'slow']) {
    for (const p of ['/', '/a.gif', '/example/page.html', '/example/allowed.gif', '/publications/x.gif', '/café', '/a$b', '/a']) {
      assert.deepEqual(b.explain(p, ua), a.explain(p, ua), `${ua} ${p}`);
    }
  }
  assert.equal(b.crawlDelay('slow'), 3);
  assert.deepEqual(b.sitemaps, ['https://h/s.xml']);
  assert.equal(b.bytesParsed, a.bytesParsed);
  assert.equal(b.invalidLines, a.invalidLines);
  assert.equal(RobotsTxt.fromJSON(JSON.parse(JSON.stringify(RobotsTxt.disallowAll())))?.isAllowed('/', 'x'), false);
});

test('fromJSON rejects data that is not a serialised RobotsTxt, without throwing', () => {
  for (const bad of [null, undefined, 42, 'x', {}, { v: 2, groups: [], sitemaps: [] }, { v: 1, groups: [{ agents: [1], rules: [] }], sitemaps: [] },
    { v: 1, groups: [{ agents: ['*'], rules: [[0, 5, 1]] }], sitemaps: [] }, { v: 1, groups: 'no', sitemaps: [] }]) {
    assert.equal(RobotsTxt.fromJSON(bad), null, JSON.stringify(bad));
  }
});

// ---------------------------------------------------------------------------
// §2.5 limits and §3 hostile input

test('RFC 9309 §2.5: at least 500 KiB is parsed by default', () => {
  assert.equal(DEFAULT_MAX_BYTES, 512000);
  const filler = '# ' + 'x'.repeat(98) + '\n'; // 101 octets
  let body = 'User-agent: *\n' + filler.repeat(5000); // ~505,000 octets, still under 500 KiB
  body += 'Disallow: /late\n';
  const r = RobotsTxt.parse(body);
  assert.ok(Buffer.byteLength(body) < DEFAULT_MAX_BYTES);
  assert.equal(r.truncated, false);
  assert.equal(r.isAllowed('/late', 'x'), false);
  assert.equal(r.bytesParsed, Buffer.byteLength(body));
});

test('RFC 9309 §2.5: beyond the limit parsing stops at the last complete line and sets truncated', () => {
  const body = 'User-agent: *\nDisallow: /a\nDisallow: /bbbbbbbb\nDisallow: /c\n';
  const cut = body.indexOf('/bbbb') + 3; // mid-line
  const r = RobotsTxt.parse(body, { maxBytes: cut });
  assert.equal(r.truncated, true);
  assert.equal(r.isAllowed('/a', 'x'), false);
  assert.equal(r.isAllowed('/bb', 'x'), true); // the partial line is not parsed as "/b"
  assert.equal(r.isAllowed('/c', 'x'), true);
  assert.equal(r.bytesParsed, body.indexOf('Disallow: /bbbb'));
  // The limit falling exactly on a line end keeps that line.
  const exact = RobotsTxt.parse(body, { maxBytes: body.indexOf('\nDisallow: /c') });
  assert.equal(exact.isAllowed('/bbbbbbbb', 'x'), false);
  assert.equal(exact.truncated, true);
  // Same with raw bytes and multi-byte characters near the cut.
  const bytes = new TextEncoder().encode('User-agent: *\nDisallow: /é\nDisallow: /ééé\n');
  const rb = RobotsTxt.parse(bytes, { maxBytes: bytes.length - 3 });
  assert.equal(rb.isAllowed('/%C3%A9', 'x'), false);
  assert.equal(rb.isAllowed('/%C3%A9%C3%A9', 'x'), false); // matched by "/é" only
  assert.equal(rb.explain('/%C3%A9%C3%A9%C3%A9', 'x').rule?.pattern, '/é');
});

test('RFC 9309 §3: a 10 MiB body is bounded by the limit and parsed quickly', () => {
  const line = 'Disallow: /' + 'a'.repeat(88) + '\n';
  const big = 'User-agent: *\n' + line.repeat(Math.ceil((10 * 1024 * 1024) / line.length));
  const t0 = performance.now();
  const r = RobotsTxt.parse(big);
  const ms = performance.now() - t0;
  assert.equal(r.truncated, true);
  assert.ok(r.bytesParsed <= DEFAULT_MAX_BYTES);
  assert.ok(r.bytesParsed > DEFAULT_MAX_BYTES - line.length);
  // A bound for a blow-up, not a speed goal (bench/ measures speed): parsing stops at the limit, ≈ 20 ms here.
  assert.ok(ms < 5000, `parse took ${ms} ms`);
  const bytes = Buffer.from(big);
  const rb = RobotsTxt.parse(bytes);
  assert.equal(rb.bytesParsed, r.bytesParsed);
  assert.equal(rb.isAllowed('/' + 'a'.repeat(88), 'x'), false);
});

test('RFC 9309 §3: binary garbage does not throw and yields a usable object', () => {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff;
  for (let k = 0; k < 20; k++) {
    const junk = new Uint8Array(20000);
    for (let i = 0; i < junk.length; i++) junk[i] = rnd();
    const r = RobotsTxt.parse(junk);
    assert.equal(typeof r.isAllowed('/x', 'ubicrawl'), 'boolean');
    assert.equal(typeof r.explain('/x', 'ubicrawl').allowed, 'boolean');
    assert.ok(RobotsTxt.fromJSON(JSON.parse(JSON.stringify(r))));
  }
  // Wrong types at runtime never throw either.
  assert.equal(RobotsTxt.parse(undefined as unknown as string).isAllowed('/', 'x'), true);
  assert.equal(RobotsTxt.parse('User-agent: *\nDisallow: /\n').isAllowed(undefined as unknown as string, 'x'), false);
  assert.equal(RobotsTxt.parse('User-agent: *\nDisallow: /\n', { maxBytes: NaN }).isAllowed('/', 'x'), false);
  // Lone surrogates in a string URL are encoded as U+FFFD.
  assert.equal(normalizeOctets('/\uD800x', false, false), '/%EF%BF%BDx');
});

test('RFC 9309 §3: many wildcards against a long path stay linear (no backtracking blow-up)', () => {
  const r = RobotsTxt.parse('User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b\nDisallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*c$\n');
  const path = '/' + 'a'.repeat(2000);
  // Linear: 200 matches take 35-160 ms (Node 20 and 24, loaded CI machine). Backtracking over 20 wildcards
  // and 2,000 characters would take hours: the bound tells the two apart without being a speed goal (a wall-clock
  // bound of 500 ms for 1,000 matches failed on Node 24 beside other files: 782 ms).
  const t0 = performance.now();
  for (let i = 0; i < 200; i++) assert.equal(r.isAllowed(path, 'x'), true);
  const ms = performance.now() - t0;
  assert.ok(ms < 5000, `200 matches took ${ms} ms`);
  assert.equal(r.isAllowed(path + 'b', 'x'), false);
  assert.equal(r.isAllowed(path + 'c', 'x'), false);
  assert.equal(r.isAllowed(path + 'cd', 'x'), true);
});

test('matching is cheap: 100 rules, 100k lookups at a few CPU-microseconds each', () => {
  const lines = ['User-agent: *'];
  for (let i = 0; i < 100; i++) lines.push(`Disallow: /section${i}/*.pdf$`, `Allow: /section${i}/public/`);
  const r = RobotsTxt.parse(lines.join('\n'));
  const urls = Array.from({ length: 100 }, (_, i) => `https://example.com/section${i}/doc/file${i}.html?x=${i}`);
  const t0 = performance.now();
  let allowed = 0;
  for (let k = 0; k < 1000; k++) for (const u of urls) if (r.isAllowed(u, 'ubicrawl/0.1')) allowed++;
  const perCallUs = ((performance.now() - t0) * 1000) / 100000;
  assert.equal(allowed, 100000);
  // 4-6 µs a call on the loaded CI machine; a scan of every rule per lookup would be an order of magnitude more.
  assert.ok(perCallUs < 40, `${perCallUs.toFixed(2)} µs per call`);
});

/** Independent reference: textbook DP glob match over normalised octets (RFC 9309 §2.2.2-2.2.3). */
function refMatch(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$');
  const p = anchored ? pattern.slice(0, -1) : pattern;
  // can[j] = p[0..i) matches path[0..j)
  let can = new Array<boolean>(path.length + 1).fill(false);
  can[0] = true;
  for (let i = 0; i < p.length; i++) {
    const next = new Array<boolean>(path.length + 1).fill(false);
    if (p[i] === '*') {
      let any = false;
      for (let j = 0; j <= path.length; j++) { any = any || can[j]; next[j] = any; }
    } else {
      for (let j = 0; j < path.length; j++) if (can[j] && path[j] === p[i]) next[j + 1] = true;
    }
    can = next;
  }
  return anchored ? can[path.length] : can.some(Boolean);
}

function refAllowed(rules: Array<{ allow: boolean; pattern: string }>, url: string): boolean {
  const path = normalizeOctets(url, false, false);
  if (path === '/robots.txt') return true;
  let best: { allow: boolean; len: number } | null = null;
  for (const r of rules) {
    const norm = normalizeOctets(r.pattern, true, false);
    if (!refMatch(norm, path)) continue;
    if (!best || norm.length > best.len || (norm.length === best.len && r.allow && !best.allow)) best = { allow: r.allow, len: norm.length };
  }
  return best === null || best.allow;
}

test('RFC 9309 §2.2.2: compiled matcher and rule index agree with a reference DP matcher on random files', () => {
  let seed = 99;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
  const patAtoms = ['a', 'b', '/', '*', '*', '?', '=', '%61', '%2F', '$', '~', '%7e', 'é'];
  const pathAtoms = ['a', 'b', '/', '?', '=', '%61', '%2F', '$', '*', '~', 'é', '%C3%A9'];
  for (let round = 0; round < 300; round++) {
    const count = 1 + rnd(round % 2 === 0 ? 6 : 40); // both the linear scan and the trie
    const rules: Array<{ allow: boolean; pattern: string }> = [];
    for (let i = 0; i < count; i++) {
      let pat = rnd(5) === 0 ? '*' : '/';
      for (let k = rnd(7); k > 0; k--) pat += patAtoms[rnd(patAtoms.length)];
      if (rnd(4) === 0) pat += '$';
      rules.push({ allow: rnd(2) === 0, pattern: pat });
    }
    const body = 'User-agent: *\n' + rules.map((r) => `${r.allow ? 'Allow' : 'Disallow'}: ${r.pattern}`).join('\n');
    const robots = RobotsTxt.parse(body);
    for (let t = 0; t < 40; t++) {
      let path = '/';
      for (let k = rnd(9); k > 0; k--) path += pathAtoms[rnd(pathAtoms.length)];
      assert.equal(robots.isAllowed(path, 'bot'), refAllowed(rules, path), `${JSON.stringify(body)} ${path}`);
      assert.equal(robots.explain(path, 'bot').allowed, robots.isAllowed(path, 'bot'));
    }
  }
});
