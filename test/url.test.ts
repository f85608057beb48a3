import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  normalizeUrl, normalizeUrlOrReason, hostOf, removeDotSegments,
  DEFAULT_NORMALIZE_OPTIONS, type NormalizeOptions,
} from '../src/url/normalize.js';
import { TRACKING_PARAMS } from '../src/url/tracking.js';
import { normalizeUrlsForCli, splitInputLines, INVALID_LINE_PREFIX } from '../src/url/cli.js';

const BASE = 'http://a/b/c/d;p?q';
// Lets the "g:h" example through; everything else in §5.4 is http.
const WITH_G: Partial<NormalizeOptions> = { schemes: ['http', 'g'] };

/** RFC 3986 resolves; we then normalise: fragment dropped, and "http://g" gets its "/" (§6.2.3). */
function expectedNormal(resolved: string): string {
  const noFrag = resolved.replace(/#.*$/, '');
  return noFrag === 'http://g' ? 'http://g/' : noFrag;
}

// ---------------------------------------------------------------------------
// §5.4 reference resolution examples, every one of them

const NORMAL_EXAMPLES: Array<[string, string]> = [
  ['g:h', 'g:h'], ['g', 'http://a/b/c/g'], ['./g', 'http://a/b/c/g'], ['g/', 'http://a/b/c/g/'],
  ['/g', 'http://a/g'], ['//g', 'http://g'], ['?y', 'http://a/b/c/d;p?y'], ['g?y', 'http://a/b/c/g?y'],
  ['#s', 'http://a/b/c/d;p?q#s'], ['g#s', 'http://a/b/c/g#s'], ['g?y#s', 'http://a/b/c/g?y#s'],
  [';x', 'http://a/b/c/;x'], ['g;x', 'http://a/b/c/g;x'], ['g;x?y#s', 'http://a/b/c/g;x?y#s'],
  ['', 'http://a/b/c/d;p?q'], ['.', 'http://a/b/c/'], ['./', 'http://a/b/c/'], ['..', 'http://a/b/'],
  ['../', 'http://a/b/'], ['../g', 'http://a/b/g'], ['../..', 'http://a/'], ['../../', 'http://a/'],
  ['../../g', 'http://a/g'],
];

for (const [ref, resolved] of NORMAL_EXAMPLES) {
  test(`RFC 3986 §5.4.1 normal example: "${ref}" → ${resolved}`, () => {
    assert.equal(normalizeUrl(ref, BASE, WITH_G), expectedNormal(resolved));
  });
}

const ABNORMAL_EXAMPLES: Array<[string, string]> = [
  ['../../../g', 'http://a/g'], ['../../../../g', 'http://a/g'],
  ['/./g', 'http://a/g'], ['/../g', 'http://a/g'], ['g.', 'http://a/b/c/g.'], ['.g', 'http://a/b/c/.g'],
  ['g..', 'http://a/b/c/g..'], ['..g', 'http://a/b/c/..g'],
  ['./../g', 'http://a/b/g'], ['./g/.', 'http://a/b/c/g/'], ['g/./h', 'http://a/b/c/g/h'],
  ['g/../h', 'http://a/b/c/h'], ['g;x=1/./y', 'http://a/b/c/g;x=1/y'], ['g;x=1/../y', 'http://a/b/c/y'],
  ['g?y/./x', 'http://a/b/c/g?y/./x'], ['g?y/../x', 'http://a/b/c/g?y/../x'],
  ['g#s/./x', 'http://a/b/c/g#s/./x'], ['g#s/../x', 'http://a/b/c/g#s/../x'],
  // §5.4.2 allows both: "http:g" for strict parsers, "http://a/b/c/g" for
  // backward compatibility (§5.2.2, "if not strict"). We are non-strict, as
  // browsers are; strict would yield an http URI with no host, which
  // RFC 9110 §4.2.1 requires a recipient to reject.
  ['http:g', 'http://a/b/c/g'],
];

for (const [ref, resolved] of ABNORMAL_EXAMPLES) {
  test(`RFC 3986 §5.4.2 abnormal example: "${ref}" → ${resolved}`, () => {
    assert.equal(normalizeUrl(ref, BASE, WITH_G), expectedNormal(resolved));
  });
}

test('RFC 3986 §5.4.1: "g:h" is an absolute URI of another scheme, refused by the default scheme list', () => {
  assert.equal(normalizeUrl('g:h', BASE), null);
  assert.deepEqual(normalizeUrlOrReason('g:h', BASE), { reason: 'scheme' });
});

test('RFC 3986 §5.2.4: remove_dot_segments on the RFC\'s own walk-throughs', () => {
  assert.equal(removeDotSegments('/a/b/c/./../../g'), '/a/g');
  assert.equal(removeDotSegments('mid/content=5/../6'), 'mid/6');
  assert.equal(removeDotSegments('/..'), '/');
  assert.equal(removeDotSegments('/.'), '/');
  assert.equal(removeDotSegments('../a'), 'a');
  assert.equal(removeDotSegments('./a/..'), '/');
  assert.equal(removeDotSegments('..'), '');
  assert.equal(removeDotSegments('.'), '');
  assert.equal(removeDotSegments('a/..'), '/');
  assert.equal(removeDotSegments('/a//../b'), '/a/b');
  assert.equal(removeDotSegments('/a/b/'), '/a/b/');
  assert.equal(removeDotSegments(''), '');
});

test('RFC 3986 §5.2.3: merge with a base that has an authority and an empty path', () => {
  assert.equal(normalizeUrl('g', 'http://a'), 'http://a/g');
  assert.equal(normalizeUrl('?x', 'http://a'), 'http://a/?x');
  assert.equal(normalizeUrl('', 'http://a'), 'http://a/');
});

// ---------------------------------------------------------------------------
// §6.2.2 syntax-based normalisation

test('RFC 3986 §6.2.2.1: scheme and host are lower-cased, nothing else is', () => {
  assert.equal(normalizeUrl('HTTP://www.EXAMPLE.com/Path/FILE.html?Q=V'), 'http://www.example.com/Path/FILE.html?Q=V');
  assert.equal(normalizeUrl('hTTpS://Example.ORG'), 'https://example.org/');
});

test('RFC 3986 §6.2.2.1: hex digits of percent-encodings are upper-cased', () => {
  assert.equal(normalizeUrl('http://a/%c3%a9t%c3%a9?q=%e2%82%ac'), 'http://a/%C3%A9t%C3%A9?q=%E2%82%AC');
  assert.equal(normalizeUrl('http://a/x%2fy%3fz%3Bw'), 'http://a/x%2Fy%3Fz%3Bw');
});

test('RFC 3986 §6.2.2.2: percent-encoded unreserved characters are decoded (ALPHA DIGIT - . _ ~)', () => {
  assert.equal(normalizeUrl('http://example.com/%7Esmith/home.html'), 'http://example.com/~smith/home.html');
  assert.equal(normalizeUrl('http://a/%41%62%30%2D%2e%5F%7e'), 'http://a/Ab0-._~');
  assert.equal(normalizeUrl('http://a/?%61=%31'), 'http://a/?a=1');
  assert.equal(normalizeUrl('http://%75ser@a/'), 'http://user@a/');
});

test('RFC 3986 §2.2 / §6.2.2.2: reserved and other octets stay encoded (%2F %3F %23 %25 %26 %3D %2B %20 …)', () => {
  const kept = ['%2F', '%3F', '%23', '%25', '%26', '%3D', '%2B', '%20', '%3A', '%40', '%21', '%24', '%27',
    '%28', '%29', '%2A', '%2C', '%3B', '%5B', '%5D', '%C3%A9', '%00', '%7F', '%FF'];
  for (const k of kept) {
    assert.equal(normalizeUrl(`http://a/x${k}y?q${k}v`), `http://a/x${k}y?q${k}v`, k);
    assert.equal(normalizeUrl(`http://a/x${k.toLowerCase()}y`), `http://a/x${k}y`, k);
  }
  // The classic mistake: decoding %2F turns one segment into two.
  assert.equal(normalizeUrl('http://a/b%2F..%2Fc'), 'http://a/b%2F..%2Fc');
});

test('RFC 3986 §2.2: a raw reserved character and its percent-encoding are different URIs', () => {
  // WHATWG would serialise both of these queries as "%27".
  assert.equal(normalizeUrl("http://a/?q='x'"), "http://a/?q='x'");
  assert.equal(normalizeUrl('http://a/?q=%27x%27'), 'http://a/?q=%27x%27');
  assert.notEqual(normalizeUrl("http://a/?q='x'"), normalizeUrl('http://a/?q=%27x%27'));
  assert.equal(normalizeUrl("http://a/p!$&'()*+,;=:@x"), "http://a/p!$&'()*+,;=:@x");
});

test('RFC 3986 §2.1, §2.4: a "%" that does not start a triplet is encoded as %25 (output is a valid URI)', () => {
  assert.equal(normalizeUrl('http://a/100%'), 'http://a/100%25');
  assert.equal(normalizeUrl('http://a/%zz?%4'), 'http://a/%25zz?%254');
  assert.equal(normalizeUrl('http://a/%u00e9'), 'http://a/%25u00e9');
});

test('RFC 3986 §2.5 / RFC 3987 §3.1: characters a URI may not contain raw are percent-encoded (UTF-8)', () => {
  assert.equal(normalizeUrl('http://a/über café?q=naïve'), 'http://a/%C3%BCber%20caf%C3%A9?q=na%C3%AFve');
  assert.equal(normalizeUrl('http://a/a|b^c`d{e}f"g<h>i[j]'), 'http://a/a%7Cb%5Ec%60d%7Be%7Df%22g%3Ch%3Ei%5Bj%5D');
  assert.equal(normalizeUrl('http://a/?x=[1]&y={2}|'), 'http://a/?x=%5B1%5D&y=%7B2%7D%7C');
  assert.equal(normalizeUrl('http://a/😀'), 'http://a/%F0%9F%98%80');
  assert.equal(normalizeUrl('http://a/\ud800x'), 'http://a/%EF%BF%BDx', 'lone surrogate → U+FFFD');
  assert.equal(normalizeUrl('http://a/\u0001x'), 'http://a/%01x');
});

test('RFC 3986 §6.2.2.3: dot segments are removed from absolute URIs too', () => {
  assert.equal(normalizeUrl('http://a/b/c/./../../g'), 'http://a/g');
  assert.equal(normalizeUrl('http://a/../../x'), 'http://a/x');
  assert.equal(normalizeUrl('http://a/x/.'), 'http://a/x/');
  assert.equal(normalizeUrl('http://a/x/..?q'), 'http://a/?q');
  // %2E is "." (§2.3), so it counts as a dot segment once decoded.
  assert.equal(normalizeUrl('http://a/b/%2E%2e/c'), 'http://a/c');
  assert.equal(normalizeUrl('http://a/b/.%2E/c/%2e'), 'http://a/c/');
});

test('RFC 3986 §3.3: empty segments are significant and kept', () => {
  assert.equal(normalizeUrl('http://a//b//c/'), 'http://a//b//c/');
});

// ---------------------------------------------------------------------------
// §6.2.3 scheme-based normalisation

test('RFC 3986 §6.2.3: the four equivalent forms of http://example.com/', () => {
  for (const u of ['http://example.com', 'http://example.com/', 'http://example.com:/', 'http://example.com:80/']) {
    assert.equal(normalizeUrl(u), 'http://example.com/', u);
  }
});

test('RFC 3986 §6.2.3: default ports are dropped per scheme, other ports kept (leading zeros dropped)', () => {
  assert.equal(normalizeUrl('https://a:443/x'), 'https://a/x');
  assert.equal(normalizeUrl('http://a:443/x'), 'http://a:443/x');
  assert.equal(normalizeUrl('https://a:80/x'), 'https://a:80/x');
  assert.equal(normalizeUrl('http://a:0080/'), 'http://a/');
  assert.equal(normalizeUrl('http://a:08080/'), 'http://a:8080/');
  assert.equal(normalizeUrl('http://a:65535/'), 'http://a:65535/');
  assert.equal(normalizeUrl('http://a:65536/'), null);
  assert.deepEqual(normalizeUrlOrReason('http://a:8o/'), { reason: 'port' });
});

test('RFC 3986 §6.2.3: an empty query is not the same as no query, and is kept', () => {
  assert.equal(normalizeUrl('http://a/?'), 'http://a/?');
  assert.equal(normalizeUrl('http://a/x?#f'), 'http://a/x?');
  assert.equal(normalizeUrl('http://a/?', undefined, { removeEmptyQuery: true }), 'http://a/');
});

test('RFC 3986 §3.5: the fragment is dropped', () => {
  assert.equal(normalizeUrl('http://a/b#frag'), 'http://a/b');
  assert.equal(normalizeUrl('http://a/b?q#f?g'), 'http://a/b?q');
  assert.equal(normalizeUrl('http://a/b#'), 'http://a/b');
  assert.equal(normalizeUrl('#top', 'http://a/b'), 'http://a/b');
});

// ---------------------------------------------------------------------------
// Authority

test('RFC 3986 §3.2.2: IDN hosts become their IDNA (punycode) form; percent-encoded UTF-8 hosts too', () => {
  assert.equal(normalizeUrl('http://Bücher.example/x'), 'http://xn--bcher-kva.example/x');
  assert.equal(normalizeUrl('http://b%C3%BCcher.example/'), 'http://xn--bcher-kva.example/');
  assert.equal(normalizeUrl('http://例え.テスト/'), 'http://xn--r8jz45g.xn--zckzah/');
  assert.equal(normalizeUrl('http://xn--bcher-kva.example/'), 'http://xn--bcher-kva.example/');
  assert.equal(normalizeUrl('http://ex%61mple.com/'), 'http://example.com/');
});

test('RFC 3986 §3.2.2: invalid hosts are refused', () => {
  for (const u of ['http://xn--a/', 'http://a b/', 'http://a<b/', 'http://[::1/', 'http://[::1]x/', 'http://[zz::1]/',
    'http:///x', 'http://', 'http://:80/', 'http://u@/']) {
    const r = normalizeUrlOrReason(u);
    assert.equal(typeof r, 'object', u);
  }
});

test('RFC 3986 §3.2.2: IP literals; IPv6 in RFC 5952 text form, IPv4 number forms as browsers read them', () => {
  assert.equal(normalizeUrl('http://[2001:DB8:0:0:0:0:0:1]:80/'), 'http://[2001:db8::1]/');
  assert.equal(normalizeUrl('http://[::FFFF:127.0.0.1]:8080/x'), 'http://[::ffff:7f00:1]:8080/x');
  assert.equal(normalizeUrl('http://127.0.0.1/'), 'http://127.0.0.1/');
  assert.equal(normalizeUrl('http://0x7F.1/'), 'http://127.0.0.1/');
  assert.equal(normalizeUrl('http://2130706433/'), 'http://127.0.0.1/');
  assert.equal(normalizeUrl('http://1.2.3.4.5/'), null);
});

test('RFC 3986 §3.2.1: userinfo is kept (percent-normalised), an empty one dropped', () => {
  assert.equal(normalizeUrl('http://User:P%61ss@A.com/'), 'http://User:Pass@a.com/');
  assert.equal(normalizeUrl('http://us er@a/'), 'http://us%20er@a/');
  assert.equal(normalizeUrl('http://@a/'), 'http://a/');
  assert.equal(normalizeUrl('http://:@a/'), 'http://a/');
  assert.equal(normalizeUrl('http://a@b@c/'), 'http://a%40b@c/');
});

test('RFC 9110 §4.2.1: an http URI without a host is invalid', () => {
  assert.deepEqual(normalizeUrlOrReason('http:/a'), { reason: 'host' });
  assert.deepEqual(normalizeUrlOrReason('http:a'), { reason: 'host' });
  assert.deepEqual(normalizeUrlOrReason('http:///a'), { reason: 'host' });
  // With a same-scheme base, "http:/g" is a relative reference (§5.2.2, non-strict).
  assert.equal(normalizeUrl('http:/g', BASE), 'http://a/g');
});

// ---------------------------------------------------------------------------
// Input handling, schemes, failures

test('WHATWG URL §4.4 input cleanup: surrounding whitespace/C0 trimmed, tab and newlines removed', () => {
  assert.equal(normalizeUrl('  \t http://a/b c \n'), 'http://a/b%20c');
  assert.equal(normalizeUrl('http://a/b\n/c\t?d\re'), 'http://a/b/c?de');
  assert.equal(normalizeUrl('\u0000http://a/\u001f'), 'http://a/');
  assert.equal(normalizeUrl(' ../x ', 'http://a/b/c'), 'http://a/x');
});

test('WHATWG URL: "\\" is "/" before the query in http(s), kept (encoded) in the query', () => {
  assert.equal(normalizeUrl('http:\\\\a\\b\\c?d\\e'), 'http://a/b/c?d%5Ce');
  assert.equal(normalizeUrl('\\\\h\\x', 'https://a/'), 'https://h/x');
  assert.equal(normalizeUrl('..\\g', 'http://a/b/c/d'), 'http://a/b/g');
  assert.equal(normalizeUrl('http:\\\\a\\b'), 'http://a/b');
  assert.equal(normalizeUrl('http://a\\b'), 'http://a/b');
});

test('schemes: only http and https by default; the option widens or narrows it', () => {
  for (const u of ['mailto:a@b.c', 'javascript:void(0)', 'data:text/plain,x', 'ftp://a/x', 'tel:+1', 'about:blank']) {
    assert.deepEqual(normalizeUrlOrReason(u), { reason: 'scheme' }, u);
  }
  assert.equal(normalizeUrl('FTP://A:21/x', undefined, { schemes: ['ftp'] }), 'ftp://a/x');
  assert.equal(normalizeUrl('https://a/', undefined, { schemes: ['http'] }), null);
  assert.equal(normalizeUrl('HTTPS://a/', undefined, { schemes: ['HTTPS'] }), 'https://a/');
});

test('RFC 3986 §3.1 / §4.2: a relative reference without a base, or with an unusable base, is refused', () => {
  assert.deepEqual(normalizeUrlOrReason('/x'), { reason: 'relative' });
  assert.deepEqual(normalizeUrlOrReason('//a/x'), { reason: 'relative' });
  assert.deepEqual(normalizeUrlOrReason('example.com/x'), { reason: 'relative' });
  assert.deepEqual(normalizeUrlOrReason('x', '/relative/base'), { reason: 'base' });
  assert.deepEqual(normalizeUrlOrReason(''), { reason: 'empty' });
  assert.deepEqual(normalizeUrlOrReason('   '), { reason: 'empty' });
  assert.deepEqual(normalizeUrlOrReason(undefined as unknown as string), { reason: 'type' });
  assert.deepEqual(normalizeUrlOrReason(42 as unknown as string), { reason: 'type' });
  // An absolute reference ignores a bad base only if the base is not given at all.
  assert.equal(normalizeUrl('http://a/x', ''), 'http://a/x');
});

test('a scheme-like prefix that is not a valid scheme makes a relative reference (RFC 3986 §3.1, §4.2)', () => {
  assert.equal(normalizeUrl('a b:c', 'http://h/d/'), 'http://h/d/a%20b:c');
  assert.equal(normalizeUrl('1http://x', 'http://h/d/'), 'http://h/d/1http://x');
});

test('never throws, on anything', () => {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 0x1000000;
  const alphabet = 'aZ09:/?#[]@!$&\'()*+,;=%-._~ \\\t\n<>"{}|^`\u00e9\ud83d\ude00\ud800\u0000';
  for (let i = 0; i < 5000; i++) {
    let s = rnd() < 0.5 ? 'http://' : '';
    const len = Math.floor(rnd() * 40);
    for (let j = 0; j < len; j++) s += alphabet[Math.floor(rnd() * alphabet.length)];
    const base = rnd() < 0.5 ? 'http://h/p/q' : undefined;
    const r = normalizeUrl(s, base);
    assert.ok(r === null || typeof r === 'string');
  }
  for (const bad of [null, undefined, 1, {}, [], Symbol('x')]) {
    assert.equal(normalizeUrl(bad as unknown as string), null);
    assert.equal(normalizeUrl('x', bad as unknown as string), null);
  }
});

test('RFC 3986 §6.1: the normal form is a fixed point and a valid URI', () => {
  const uriChars = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]*$/;
  const inputs = [
    'HTTP://Ex.com:80/%7efoo/./bar/../baz%2f?q=%3d%41&utm_source=x#f', 'http://a/über?ü=1', 'http://a/%zz%',
    'http://[::1]:8080/a b', 'https://xn--bcher-kva.example', 'http://a/?', 'http://a/a%2e%2E/b',
  ];
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 0x1000000;
  const alphabet = 'aZ09:/?[]@!$&\'()*+,;=%-._~ <>"{}|^`é';
  for (let i = 0; i < 2000; i++) {
    let s = 'http://h/';
    const len = Math.floor(rnd() * 30);
    for (let j = 0; j < len; j++) s += alphabet[Math.floor(rnd() * alphabet.length)];
    inputs.push(s);
  }
  for (const u of inputs) {
    const n1 = normalizeUrl(u);
    if (n1 === null) continue;
    assert.equal(normalizeUrl(n1), n1, u);
    assert.match(n1, uriChars, u);
    assert.doesNotMatch(n1, /%(?![0-9A-F]{2})/, u);
  }
});

test('differential: same octets as WHATWG URL wherever both accept the input (RFC 3986 §6.1 equivalence)', () => {
  // Percent-decoding both outputs octet by octet removes the differences that
  // are pure encoding choices (hex case, unreserved decoding, what gets
  // encoded); what is left must be identical: same host, same path after dot
  // removal, same query.
  const octets = (u: string) => u.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  let seed = 4242;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 0x1000000;
  const alphabet = ['a', 'B', '0', '/', '/', '.', '..', './', '../', '?', '#', '&', '=', '%', '%2e', '%2E%2e', '%41', '%7e',
    '%2F', '%3f', '%zz', ' ', '\\', "'", '"', '<', '|', '^', '[', ']', '{', '`', '~', 'é', '\u4e2d', ';', ':', '@', '+', '\t'];
  const pick = () => alphabet[Math.floor(rnd() * alphabet.length)];
  const hosts = ['h.example', 'H.Example', 'xn--bcher-kva.example', 'bücher.example', '127.0.0.1', '[::1]', 'h.example:8080', 'h.example:80'];
  let compared = 0;
  for (let i = 0; i < 4000; i++) {
    let ref = '';
    const len = Math.floor(rnd() * 12);
    for (let j = 0; j < len; j++) ref += pick();
    const host = hosts[Math.floor(rnd() * hosts.length)];
    const absolute = rnd() < 0.5;
    const input = absolute ? `http://${host}/${ref}` : ref;
    const base = `https://${host}/p/q/r?s`;
    const ours = normalizeUrl(input, absolute ? undefined : base, { stripTrackingParams: false });
    let theirs: string | null = null;
    try { theirs = new URL(input, absolute ? undefined : base).href.replace(/#.*$/, ''); } catch { /* refused */ }
    if (ours === null || theirs === null) continue;
    compared++;
    assert.equal(octets(ours), octets(theirs), `input ${JSON.stringify(input)}: ${ours} vs ${theirs}`);
  }
  assert.ok(compared > 3000, String(compared));
});

test('the normal form resolves, in a browser-compatible parser, to the same resource', () => {
  for (const u of ['http://a/~x/y?z=1', 'http://xn--bcher-kva.example/p', 'https://a:8443/%C3%A9?q=%27']) {
    assert.equal(new URL(normalizeUrl(u) as string).href, u);
  }
});

// ---------------------------------------------------------------------------
// Crawler rules

test('tracking parameters (utm_*, gclid, fbclid, …) are dropped by default; "?" goes if nothing is left', () => {
  assert.equal(normalizeUrl('http://a/p?utm_source=news&id=7&utm_medium=email&fbclid=XYZ'), 'http://a/p?id=7');
  assert.equal(normalizeUrl('http://a/p?gclid=1&msclkid=2'), 'http://a/p');
  assert.equal(normalizeUrl('http://a/p?utm_campaign'), 'http://a/p');
  assert.equal(normalizeUrl('http://a/p?id=1&_ga=2.1&mc_eid=9&yclid=3&dclid=4'), 'http://a/p?id=1');
  assert.equal(normalizeUrl('http://a/p?utm%5Fsource=x&k'), 'http://a/p?k', 'matched after §6.2.2.2 decoding');
  assert.equal(normalizeUrl('http://a/p?k=1&&utm_id=2'), 'http://a/p?k=1&', 'other parameters kept verbatim');
});

test('tracking parameters: names are matched exactly (case-sensitive), values never', () => {
  assert.equal(normalizeUrl('http://a/p?UTM_SOURCE=x'), 'http://a/p?UTM_SOURCE=x');
  assert.equal(normalizeUrl('http://a/p?ref=utm_source'), 'http://a/p?ref=utm_source');
  assert.equal(normalizeUrl('http://a/p?xutm_source=1&gclidx=2'), 'http://a/p?xutm_source=1&gclidx=2');
});

test('tracking parameters: switched off, or a custom list', () => {
  assert.equal(normalizeUrl('http://a/p?utm_source=x', undefined, { stripTrackingParams: false }), 'http://a/p?utm_source=x');
  assert.equal(normalizeUrl('http://a/p?sid=1&utm_source=x&k=2', undefined, { trackingParams: ['sid', 'k*'] }),
    'http://a/p?utm_source=x');
  assert.ok(TRACKING_PARAMS.includes('utm_*') && TRACKING_PARAMS.includes('gclid') && TRACKING_PARAMS.includes('fbclid'));
  assert.ok(Object.isFrozen(TRACKING_PARAMS) && Object.isFrozen(DEFAULT_NORMALIZE_OPTIONS));
});

test('lossy rules are off by default', () => {
  const u = 'http://www.a.com/dir/index.html?b=2&a=1';
  assert.equal(normalizeUrl(u), u);
  assert.equal(normalizeUrl('http://a/dir/'), 'http://a/dir/');
});

test('lossy opt-in: sortQuery sorts by name, stable for repeated names', () => {
  assert.equal(normalizeUrl('http://a/?b=2&a=1&c&a=0', undefined, { sortQuery: true }), 'http://a/?a=1&a=0&b=2&c');
});

test('lossy opt-in: removeTrailingSlash, removeIndexFiles, stripWww', () => {
  assert.equal(normalizeUrl('http://a/x/y/', undefined, { removeTrailingSlash: true }), 'http://a/x/y');
  assert.equal(normalizeUrl('http://a/', undefined, { removeTrailingSlash: true }), 'http://a/');
  assert.equal(normalizeUrl('http://a/d/Index.HTML?x', undefined, { removeIndexFiles: true }), 'http://a/d/?x');
  assert.equal(normalizeUrl('http://a/d/index.html.bak', undefined, { removeIndexFiles: true }), 'http://a/d/index.html.bak');
  assert.equal(normalizeUrl('http://a/d/default.aspx', undefined, { removeIndexFiles: true, removeTrailingSlash: true }), 'http://a/d');
  assert.equal(normalizeUrl('http://WWW.a.com/', undefined, { stripWww: true }), 'http://a.com/');
  assert.equal(normalizeUrl('http://www.com/', undefined, { stripWww: true }), 'http://www.com/');
  assert.equal(normalizeUrl('http://www2.a.com/', undefined, { stripWww: true }), 'http://www2.a.com/');
});

test('hostOf: lower-case host name without port or userinfo', () => {
  assert.equal(hostOf('http://a.example:8080/x'), 'a.example');
  assert.equal(hostOf('https://u:p@b.example/x?y=@z'), 'b.example');
  assert.equal(hostOf('http://[::1]:80/'), '[::1]');
  assert.equal(hostOf('http://c.example?q'), 'c.example');
  assert.equal(hostOf('mailto:x@y'), '');
  assert.equal(hostOf(normalizeUrl('HTTP://WWW.Example.COM:81/') as string), 'www.example.com');
});

test('CLI core: one line per input, invalid inputs marked with their reason', () => {
  const r = normalizeUrlsForCli(['HTTP://A/%7e', 'mailto:x@y', 'not a url', '../x'], { base: 'http://h/a/b' });
  assert.deepEqual(r.lines, [
    'http://a/~',
    INVALID_LINE_PREFIX + 'scheme\t"mailto:x@y"',
    'http://h/a/not%20a%20url',
    'http://h/x',
  ]);
  assert.equal(r.invalid, 1);
  assert.deepEqual(r.reasons, { scheme: 1 });
  const r2 = normalizeUrlsForCli(['/x', 'http://a/?utm_source=1'], { stripTrackingParams: false });
  assert.deepEqual(r2.lines, [INVALID_LINE_PREFIX + 'relative\t"/x"', 'http://a/?utm_source=1']);
  assert.deepEqual(splitInputLines('http://a/\r\n\r\n  \nhttp://b/\n'), ['http://a/', 'http://b/']);
});

test('hostile input: a very long URL is handled in linear time', () => {
  const long = 'http://a/' + 'x/./../'.repeat(100_000) + '?' + 'a&'.repeat(100_000) + 'utm_source=1';
  const t0 = process.hrtime.bigint();
  const r = normalizeUrl(long);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.ok(r !== null && r.startsWith('http://a/?a&a&'));
  assert.ok(ms < 2000, `took ${ms} ms`);
});
