import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { extractPage, setFastTextScan, type ExtractOptions, type PageExtract } from '../src/parse/html.js';
import { request } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSyntheticWeb } from '../bench/web/index.js';
import { determineCharset, decodeBody, extractCharsetFromContent, prescan, getEncoding } from '../src/parse/charset.js';
import { parseMetaRobots, parseXRobotsTag } from '../src/parse/directives.js';
import { parseRefresh } from '../src/parse/refresh.js';
import { parseLinkHeader } from '../src/parse/linkheader.js';
import { parseContentType, sniffHtml } from '../src/parse/mime.js';

const enc = new TextEncoder();
const URL0 = 'https://example.com/dir/page.html?q=1';

function ex(html: string | Uint8Array, o: Partial<ExtractOptions> = {}): PageExtract {
  const body = typeof html === 'string' ? enc.encode(html) : html;
  return extractPage(body, { url: URL0, contentType: 'text/html', robotsToken: 'ubicrawl', ...o });
}
function urls(r: PageExtract): string[] {
  return r.links.map((l) => l.url);
}
function bytes(...parts: (string | number[])[]): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    if (typeof p === 'string') for (const b of enc.encode(p)) out.push(b);
    else out.push(...p);
  }
  return Uint8Array.from(out);
}

// ---------------------------------------------------------------------------------------------
describe('character encoding', () => {
  test('Encoding Standard BOM sniff: a UTF-8 BOM wins over the Content-Type charset', () => {
    const r = ex(bytes([0xef, 0xbb, 0xbf], '<title>caf\u00e9</title>'), { contentType: 'text/html; charset=windows-1252' });
    assert.equal(r.charset, 'utf-8');
    assert.equal(r.title, 'caf\u00e9');
  });

  test('Encoding Standard BOM sniff: UTF-16LE and UTF-16BE documents', () => {
    const s = '<title>\u00fcber</title><a href="/x">x</a>';
    const le = [0xff, 0xfe];
    const be = [0xfe, 0xff];
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      le.push(c & 0xff, c >> 8);
      be.push(c >> 8, c & 0xff);
    }
    for (const [b, name] of [[le, 'utf-16le'], [be, 'utf-16be']] as const) {
      const r = ex(Uint8Array.from(b), { contentType: 'text/html; charset=utf-8' });
      assert.equal(r.charset, name);
      assert.equal(r.title, '\u00fcber');
      assert.deepEqual(urls(r), ['https://example.com/x']);
    }
  });

  test('HTML §13.2.3.2: the transport-layer charset wins over <meta charset>', () => {
    const body = bytes('<meta charset="utf-8"><title>', [0xe9], '</title>');
    const r = ex(body, { contentType: 'text/html; charset=ISO-8859-1' });
    assert.equal(r.charset, 'windows-1252'); // Encoding Standard: iso-8859-1 is a label of windows-1252
    assert.equal(r.title, '\u00e9');
  });

  test('HTML §13.2.3.2 prescan: <meta charset> in the first 1024 bytes (windows-1251, shift_jis)', () => {
    const r1 = ex(bytes('<html><head><meta charset="windows-1251"><title>', [0xcf, 0xf0, 0xe8], '</title>'));
    assert.equal(r1.charset, 'windows-1251');
    assert.equal(r1.title, '\u041f\u0440\u0438');
    const r2 = ex(bytes('<meta charset=Shift_JIS><title>', [0x82, 0xa0], '</title>'));
    assert.equal(r2.charset, 'shift_jis');
    assert.equal(r2.title, '\u3042');
  });

  test('HTML §13.2.3.2 prescan: http-equiv=content-type content=...charset= needs the pragma', () => {
    assert.equal(prescan(enc.encode('<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">')), 'koi8-r');
    // content= without http-equiv=content-type: need pragma is true but got pragma false → ignored
    assert.equal(prescan(enc.encode('<meta content="text/html; charset=koi8-r">')), null);
    // attribute order does not matter
    assert.equal(prescan(enc.encode("<META CONTENT='text/html;charset=iso-8859-2' HTTP-EQUIV=content-type>")), 'iso-8859-2');
  });

  test('HTML §13.2.3.2 prescan: comments and other tags\' attribute values are skipped', () => {
    assert.equal(prescan(enc.encode('<!-- <meta charset="koi8-r"> --><meta charset="windows-1250">')), 'windows-1250');
    assert.equal(prescan(enc.encode('<div title="<meta charset=koi8-r>"></div><meta charset=gbk>')), 'gbk');
    // "<!-->" closes a comment immediately
    assert.equal(prescan(enc.encode('<!--><meta charset="big5">')), 'big5');
    // "<meta" must be followed by whitespace or '/'
    assert.equal(prescan(enc.encode('<metafoo charset="big5">')), null);
    assert.equal(prescan(enc.encode('<meta/charset="big5">')), 'big5');
  });

  test('HTML §13.2.3.2 prescan: only the first 1024 bytes are examined', () => {
    const pad = '<!-- ' + 'x'.repeat(1100) + ' -->';
    assert.equal(prescan(enc.encode(pad + '<meta charset="koi8-r">')), null);
    const r = ex(bytes(pad, '<meta charset="koi8-r"><title>', [0xe9], '</title>'));
    assert.equal(r.charset, 'windows-1252'); // not valid UTF-8 → the windows-1252 default
  });

  test('HTML §13.2.3.2 prescan: a UTF-16 meta declaration means UTF-8; x-user-defined means windows-1252', () => {
    assert.equal(prescan(enc.encode('<meta charset="utf-16">')), 'utf-8');
    assert.equal(prescan(enc.encode('<meta charset="UTF-16BE">')), 'utf-8');
    assert.equal(prescan(enc.encode('<meta charset="x-user-defined">')), 'windows-1252');
  });

  test('Encoding Standard "get an encoding": unknown labels fall through to the next step', () => {
    assert.equal(getEncoding('no-such-charset'), null);
    assert.equal(getEncoding('  UTF8 '), 'utf-8');
    const r = ex(bytes('<meta charset="koi8-r"><title>', [0xc1], '</title>'), { contentType: 'text/html; charset=bogus' });
    assert.equal(r.charset, 'koi8-r');
    const r2 = ex(bytes('<meta charset="bogus"><title>ok</title>'), { contentType: 'text/html; charset=also-bogus' });
    assert.equal(r2.charset, 'utf-8');
    assert.equal(r2.title, 'ok');
  });

  test('HTML §13.2.3.2 step 8 (autodetect): valid UTF-8 is UTF-8, anything else windows-1252', () => {
    assert.equal(ex('<title>na\u00efve \u2014 \u65e5\u672c</title>').title, 'na\u00efve \u2014 \u65e5\u672c');
    const r = ex(bytes('<title>', [0x80, 0x93, 0x94, 0x81], '</title>'));
    assert.equal(r.charset, 'windows-1252');
    // index-windows-1252: 0x80 → €, 0x93/0x94 → curly quotes, 0x81 → U+0081
    assert.equal(r.title, '\u20ac\u201c\u201d\u0081');
  });

  test('Encoding Standard index-windows-1252: all of 0x80–0x9F decode as the index says (works around nodejs/node#60888)', () => {
    const all = Uint8Array.from({ length: 32 }, (_, i) => 0x80 + i);
    const s = decodeBody(all, { encoding: 'windows-1252', source: 'header', bomLength: 0 });
    assert.equal(s.charCodeAt(0), 0x20ac);
    assert.equal(s.charCodeAt(0x92 - 0x80), 0x2019);
    assert.equal(s.charCodeAt(0x9f - 0x80), 0x0178);
    for (const undef of [0x81, 0x8d, 0x8f, 0x90, 0x9d]) assert.equal(s.charCodeAt(undef - 0x80), undef);
  });

  test('HTML "extracting a character encoding from a meta element"', () => {
    assert.equal(extractCharsetFromContent('text/html; charset=utf-8'), 'utf-8');
    assert.equal(extractCharsetFromContent('text/html; CHARSET = "koi8-r" ; x'), 'koi8-r');
    assert.equal(extractCharsetFromContent("text/html; charset='big5'"), 'big5');
    assert.equal(extractCharsetFromContent('text/html; charset="unterminated'), null);
    assert.equal(extractCharsetFromContent('text/html; charsetx; charset=gbk'), 'gbk');
    assert.equal(extractCharsetFromContent('text/html; charset='), null);
    assert.equal(extractCharsetFromContent('text/html'), null);
  });

  test('XML 1.0 §4.3.3: application/xhtml+xml uses the XML declaration, default UTF-8', () => {
    const r = ex(bytes('<?xml version="1.0" encoding="ISO-8859-2"?><html xmlns="http://www.w3.org/1999/xhtml"><title>', [0xb1], '</title></html>'), { contentType: 'application/xhtml+xml' });
    assert.equal(r.isHtml, true);
    assert.equal(r.charset, 'iso-8859-2');
    assert.equal(r.title, '\u0105');
    assert.equal(determineCharset(enc.encode('<html/>'), undefined, true).encoding, 'utf-8');
  });
});

// ---------------------------------------------------------------------------------------------
describe('content type', () => {
  test('non-HTML types are not parsed (application/pdf, image/*, text/plain)', () => {
    const html = '<html><a href="/x">x</a></html>';
    for (const ct of ['application/pdf', 'image/png', 'text/plain', 'application/json', 'text/css']) {
      const r = ex(html, { contentType: ct });
      assert.equal(r.isHtml, false, ct);
      assert.deepEqual(r.links, []);
    }
  });

  test('HTML §16.1: application/xhtml+xml is HTML; parameters and case do not matter', () => {
    assert.equal(ex('<a href="/x">x</a>', { contentType: 'application/xhtml+xml; charset=utf-8' }).isHtml, true);
    assert.equal(ex('<a href="/x">x</a>', { contentType: 'TEXT/HTML ; Charset="UTF-8"' }).isHtml, true);
    assert.deepEqual(parseContentType('Text/HTML; charset="ISO-8859-1"'), { essence: 'text/html', charset: 'ISO-8859-1' });
    assert.deepEqual(parseContentType('text/html;charset=utf-8;foo=bar'), { essence: 'text/html', charset: 'utf-8' });
    assert.deepEqual(parseContentType('garbage'), { essence: '' });
  });

  test('MIME Sniffing §7.1: a missing Content-Type is sniffed with the HTML patterns', () => {
    assert.equal(ex('  \n<!DOCTYPE html><a href="/x">x</a>', { contentType: undefined }).isHtml, true);
    assert.equal(ex('<html><body>', { contentType: undefined }).isHtml, true);
    assert.equal(ex('<P>para', { contentType: '' }).isHtml, true);
    assert.equal(ex('<!-- c --><a href=/x>', { contentType: undefined }).isHtml, true);
    assert.equal(ex('%PDF-1.7 <html>', { contentType: undefined }).isHtml, false);
    assert.equal(ex('<?xml version="1.0"?><rss>', { contentType: undefined }).isHtml, false);
    assert.equal(ex('<htmlx>', { contentType: undefined }).isHtml, false); // needs SP or '>' after the pattern
    assert.equal(sniffHtml(bytes([0xef, 0xbb, 0xbf], '<html>')), true);
    assert.equal(ex('<div>x</div>', { contentType: 'unknown/unknown' }).isHtml, true);
  });

  test('non-HTML responses still carry X-Robots-Tag directives', () => {
    const r = ex('%PDF-1.4', { contentType: 'application/pdf', xRobotsTag: ['noindex, nofollow'] });
    assert.equal(r.isHtml, false);
    assert.equal(r.directives.noindex, true);
    assert.equal(r.directives.nofollow, true);
  });
});

// ---------------------------------------------------------------------------------------------
describe('links', () => {
  test('HTML §4.6: a, area, link, frame, iframe are extracted and resolved against the document URL', () => {
    const r = ex(`<a href="a.html">a</a><map><area href="/area"></map><frameset><frame src="f.html"></frameset>
      <iframe src="//other.example/if"></iframe><link rel="next" href="?page=2">`);
    assert.deepEqual(r.links, [
      { url: 'https://example.com/dir/a.html', tag: 'a', nofollow: false },
      { url: 'https://example.com/area', tag: 'area', nofollow: false },
      { url: 'https://example.com/dir/f.html', tag: 'frame', nofollow: false },
      { url: 'https://other.example/if', tag: 'iframe', nofollow: false },
      { url: 'https://example.com/dir/page.html?page=2', tag: 'link', nofollow: false, rel: 'next' },
    ]);
  });

  test('HTML §4.6.1: an <a> or <area> without href is not a link', () => {
    assert.deepEqual(urls(ex('<a name="top">x</a><a>y</a><area alt="z">')), []);
  });

  test('HTML §2.4.1 "valid URL potentially surrounded by spaces": hrefs are trimmed; URL Standard strips tab/newline', () => {
    const r = ex('<a href="  \n /x.html \t ">x</a><a href="/y\n.html">y</a>');
    assert.deepEqual(urls(r), ['https://example.com/x.html', 'https://example.com/y.html']);
  });

  test('fragments are removed, duplicates merged, links to the page itself dropped', () => {
    const r = ex('<a href="#top">t</a><a href="">self</a><a href="/z#a">1</a><a href="/z#b">2</a><a href="https://EXAMPLE.com/z">3</a><a href="page.html?q=1#x">self</a>');
    assert.deepEqual(urls(r), ['https://example.com/z']);
  });

  test('javascript:, mailto:, data:, tel: and other non-http(s) schemes are ignored and counted', () => {
    const r = ex(`<a href="javascript:void(0)">j</a><a href=" JavaScript:alert(1)">j</a><a href="java\tscript:x">j</a>
      <a href="mailto:a@b.c">m</a><a href="data:text/html,hi">d</a><a href="tel:+123">t</a><a href="ftp://x.example/">f</a>
      <a href="file:///etc/passwd">f</a><a href="http://ok.example/">ok</a>`);
    assert.deepEqual(urls(r), ['http://ok.example/']);
    assert.equal(r.ignoredLinks, 8);
  });

  test('URL Standard: hrefs the parser rejects are ignored and counted as invalidLinks', () => {
    const r = ex('<a href="http://exa mple.com/">1</a><a href="https://[::1">2</a><a href="http://:80/">3</a><a href="/fine">4</a>');
    assert.deepEqual(urls(r), ['https://example.com/fine']);
    assert.equal(r.invalidLinks, 3);
  });

  test('HTML §13.2.5: character references in attribute values are decoded; duplicate attributes keep the first', () => {
    const r = ex('<a href="/s?a=1&amp;b=2&#38;c=3&lt;">x</a><a href="/first" href="/second">y</a><A HREF=/upper>z</A>');
    assert.deepEqual(urls(r), ['https://example.com/s?a=1&b=2&c=3%3C', 'https://example.com/first', 'https://example.com/upper']);
  });

  test('HTML §13.2.5.4 (script data) and comments: markup inside them is not links', () => {
    const r = ex('<script>document.write("<a href=\'/no1\'>")</script><style>a{background:url(/no2)}</style><!-- <a href="/no3"> --><textarea><a href="/no4"></textarea><a href="/yes">y</a>');
    assert.deepEqual(urls(r), ['https://example.com/yes']);
  });

  test('HTML §4.6.7.15 nofollow (and ugc, sponsored): counted, not returned by default', () => {
    const html = '<a rel="nofollow" href="/n1">1</a><a rel="UGC noopener" href="/n2">2</a><a rel="sponsored" href="/n3">3</a><a rel="nofollowx" href="/f1">4</a><a rel="external" href="/f2">5</a>';
    const r = ex(html);
    assert.deepEqual(urls(r), ['https://example.com/f1', 'https://example.com/f2']);
    assert.equal(r.nofollowLinks, 3);
    const all = ex(html, { followNofollowLinks: true });
    assert.deepEqual(all.links.map((l) => [l.url, l.nofollow]), [
      ['https://example.com/n1', true], ['https://example.com/n2', true], ['https://example.com/n3', true],
      ['https://example.com/f1', false], ['https://example.com/f2', false],
    ]);
  });

  test('a URL linked both with and without nofollow is followable', () => {
    const r = ex('<a rel=nofollow href="/x">1</a><a href="/x">2</a>', { followNofollowLinks: true });
    assert.deepEqual(r.links, [{ url: 'https://example.com/x', tag: 'a', nofollow: false }]);
    assert.deepEqual(urls(ex('<a rel=nofollow href="/x">1</a><a href="/x">2</a>')), ['https://example.com/x']);
  });

  test('RFC 8288 §2.1.1 / HTML §4.6.7: <link> rel keywords, case-insensitive; pages kept, resources not', () => {
    const html = `<head><link rel="stylesheet" href="/s.css"><link rel="ICON" href="/i.ico"><link rel="shortcut icon" href="/f.ico">
      <link rel="Alternate" hreflang="de" href="/de/"><link rel="alternate stylesheet" href="/alt.css"><link rel="prev" href="/p1">
      <link rel="preload" href="/font.woff2" as="font"><link rel="manifest" href="/m.json"><link rel="pingback" href="/xmlrpc">
      <link rel="amphtml" href="/amp"><link href="/norel"></head>`;
    assert.deepEqual(urls(ex(html)), ['https://example.com/de/', 'https://example.com/p1', 'https://example.com/amp']);
    const withRes = urls(ex(html, { includeResources: true }));
    assert.equal(withRes.length, 10);
    assert.ok(withRes.includes('https://example.com/s.css'));
  });

  test('each link reports its rel attribute as written (first occurrence of an href); none for frames and refresh', () => {
    const r = ex(`<a href="/p" rel="Author  Me">p</a><a href="/p" rel="next">again</a><a href="/q">q</a><area href="/ar" rel="help">
      <a href="/s" rel="nofollow ugc">s</a><iframe src="/if"></iframe><meta http-equiv="refresh" content="5; url=/r">`, { followNofollowLinks: true });
    assert.deepEqual(r.links, [
      { url: 'https://example.com/p', tag: 'a', nofollow: false, rel: 'Author  Me' },
      { url: 'https://example.com/q', tag: 'a', nofollow: false },
      { url: 'https://example.com/ar', tag: 'area', nofollow: false, rel: 'help' },
      { url: 'https://example.com/s', tag: 'a', nofollow: true, rel: 'nofollow ugc' },
      { url: 'https://example.com/if', tag: 'iframe', nofollow: false },
      { url: 'https://example.com/r', tag: 'refresh', nofollow: false },
    ]);
  });

  test('rel=canonical in <head>: recorded and returned as a canonical link; the first counts', () => {
    const r = ex('<html><head><link rel="canonical" href="/canon?x=1#frag"><link rel=canonical href="/second"></head><body><a href="/a">a</a></body>');
    assert.equal(r.canonical, 'https://example.com/canon?x=1');
    assert.deepEqual(r.links, [
      { url: 'https://example.com/canon?x=1', tag: 'canonical', nofollow: false, rel: 'canonical' },
      { url: 'https://example.com/a', tag: 'a', nofollow: false },
    ]);
  });

  test('rel=canonical outside <head> is ignored (Google: only accepted in the head)', () => {
    assert.equal(ex('<html><head></head><body><link rel="canonical" href="/c"></body>').canonical, undefined);
    // HTML §13.2.6.4.4: a <div> ends the head implicitly, even without </head>
    assert.equal(ex('<div>x</div><link rel="canonical" href="/c">').canonical, undefined);
    assert.equal(ex('<title>t</title><meta charset=utf-8><link rel="canonical" href="/c">').canonical, 'https://example.com/c');
  });

  test('RFC 8288 §3: Link header rel=canonical is used when the document has none', () => {
    const r = ex('<p>x</p>', { linkHeader: ['<https://example.com/a>; rel="preload", </canon>; rel="Canonical"'] });
    assert.equal(r.canonical, 'https://example.com/canon');
    assert.deepEqual(r.links, [{ url: 'https://example.com/canon', tag: 'canonical', nofollow: false, rel: 'canonical' }]);
    const r2 = ex('<head><link rel=canonical href="/in-doc"></head>', { linkHeader: ['</hdr>; rel=canonical'] });
    assert.equal(r2.canonical, 'https://example.com/in-doc');
  });

  test('RFC 8288 §3: Link header parsing (quoted params, first rel wins, anchor skipped, commas in URIs)', () => {
    assert.deepEqual(parseLinkHeader(['</a,b>; rel="next prev"; rel=canonical, <x>;anchor="#foo";rel=canonical, <y>; title="a, \\"b\\""; rel=up']), [
      { target: '/a,b', rels: ['next', 'prev'] },
      { target: 'y', rels: ['up'] },
    ]);
    assert.deepEqual(parseLinkHeader(['garbage, <z>; rel=next', '<unterminated']), [{ target: 'z', rels: ['next'] }]);
  });

  test('maxLinks caps distinct links per page; the rest is counted in linksDropped', () => {
    let html = '';
    for (let i = 0; i < 10; i++) html += `<a href="/p${i}">x</a><a href="/p${i}">dup</a>`;
    const r = ex(html, { maxLinks: 4 });
    assert.deepEqual(urls(r), ['https://example.com/p0', 'https://example.com/p1', 'https://example.com/p2', 'https://example.com/p3']);
    assert.equal(r.linksDropped, 12); // 6 distinct × 2 occurrences seen after the cap
  });

  test('links inside <noscript> are extracted; an <iframe>\'s fallback content is not', () => {
    const r = ex('<noscript><a href="/ns">n</a></noscript><iframe src="/f"><a href="/inside">i</a></iframe>');
    assert.deepEqual(urls(r), ['https://example.com/ns', 'https://example.com/f']);
  });

  test('HTML §13.2.6.5: inside <svg>, <script> is not raw text, and <a href> is a link', () => {
    const r = ex('<svg><a href="/svg-link"><text>t</text></a><script>x</script></svg><a href="/after">a</a>');
    assert.deepEqual(urls(r), ['https://example.com/svg-link', 'https://example.com/after']);
    // inside a foreignObject integration point, <script> is raw text again
    const r2 = ex('<svg><foreignObject><script>"<a href=/no>"</script></foreignObject></svg><a href="/yes">y</a>');
    assert.deepEqual(urls(r2), ['https://example.com/yes']);
  });
});

// ---------------------------------------------------------------------------------------------
describe('<base>', () => {
  test('HTML §4.2.3: the first <base> with an href sets the base URL, for links before it too', () => {
    const r = ex('<a href="before.html">b</a><base target="_blank"><base href="https://cdn.example/root/"><base href="/ignored/"><a href="x/y.html">x</a>');
    assert.equal(r.base, 'https://cdn.example/root/');
    assert.deepEqual(urls(r), ['https://cdn.example/root/before.html', 'https://cdn.example/root/x/y.html']);
  });

  test('HTML §4.2.3: a relative base href is resolved against the document URL', () => {
    const r = ex('<base href="../other/"><a href="p.html">p</a>');
    assert.equal(r.base, 'https://example.com/other/');
    assert.deepEqual(urls(r), ['https://example.com/other/p.html']);
  });

  test('HTML §4.2.3 "frozen base URL": an unparseable base href falls back to the document URL', () => {
    const r = ex('<base href="http://[bad"><a href="p.html">p</a>');
    assert.equal(r.base, URL0);
    assert.deepEqual(urls(r), ['https://example.com/dir/p.html']);
  });

  test('a <base> inside <template> is not in the document', () => {
    assert.equal(ex('<template><base href="https://t.example/"></template><a href="p">p</a>').base, URL0);
  });

  test('the base is applied to meta refresh and canonical too', () => {
    const r = ex('<head><base href="https://b.example/x/"><link rel=canonical href="c"><meta http-equiv=refresh content="0;url=r"></head>');
    assert.equal(r.canonical, 'https://b.example/x/c');
    assert.equal(r.metaRefresh, 'https://b.example/x/r');
  });
});

// ---------------------------------------------------------------------------------------------
describe('meta refresh', () => {
  test('HTML §4.2.5.3 shared declarative refresh steps: the forms of content=', () => {
    assert.deepEqual(parseRefresh('5; url=/next'), { delay: 5, url: '/next' });
    assert.deepEqual(parseRefresh('0;URL=\'/q\''), { delay: 0, url: '/q' });
    assert.deepEqual(parseRefresh('3, url="/y"'), { delay: 3, url: '/y' });
    assert.deepEqual(parseRefresh('  7   Url  =  z.html'), { delay: 7, url: 'z.html' });
    assert.deepEqual(parseRefresh('5'), { delay: 5, url: null });
    assert.deepEqual(parseRefresh('5;'), { delay: 5, url: null });
    assert.deepEqual(parseRefresh('1.5; url=a'), { delay: 1, url: 'a' }); // fractional part ignored
    assert.deepEqual(parseRefresh('.5; url=a'), { delay: 0, url: 'a' });
    assert.deepEqual(parseRefresh('5; /direct'), { delay: 5, url: '/direct' }); // no "url=" prefix
    assert.deepEqual(parseRefresh('5; \'quoted\' rest'), { delay: 5, url: 'quoted' });
    assert.deepEqual(parseRefresh('5; url=\'a\'b\''), { delay: 5, url: 'a' });
    assert.deepEqual(parseRefresh('5; url="unterminated'), { delay: 5, url: 'unterminated' });
    assert.deepEqual(parseRefresh('5; urx'), { delay: 5, url: 'urx' });
    assert.deepEqual(parseRefresh('5; url x'), { delay: 5, url: 'url x' });
    assert.equal(parseRefresh('url=/x'), null); // no time
    assert.equal(parseRefresh('5x; url=/x'), null); // bad separator
    assert.equal(parseRefresh(''), null);
    assert.equal(parseRefresh('99999999999999999999; url=a')?.delay, 999_999_999);
  });

  test('meta refresh is returned as a link and as metaRefresh; the first valid one counts', () => {
    const r = ex('<meta http-equiv="refresh" content="garbage"><meta http-equiv="Refresh" content="2; url=/next#f"><meta http-equiv="refresh" content="0; url=/later">');
    assert.equal(r.metaRefresh, 'https://example.com/next');
    assert.equal(r.metaRefreshDelay, 2);
    assert.deepEqual(r.links, [{ url: 'https://example.com/next', tag: 'refresh', nofollow: false }]);
    assert.equal(ex('<meta http-equiv="refresh" content="30">').metaRefresh, undefined);
    assert.equal(ex('<meta http-equiv="refresh" content="0; url=javascript:alert(1)">').metaRefresh, undefined);
  });
});

// ---------------------------------------------------------------------------------------------
describe('robots directives', () => {
  const NOW = Date.parse('2024-06-01T00:00:00Z');

  test('Google robots meta: noindex, nofollow, noarchive; name and content case-insensitive', () => {
    const r = ex('<META NAME="ROBOTS" CONTENT="NoIndex, NOFOLLOW"><meta name=robots content=noarchive><a href="/x">x</a>');
    assert.deepEqual(r.directives, { noindex: true, nofollow: true, noarchive: true, nosnippet: false });
    assert.deepEqual(r.links, []); // page-level nofollow: no links followed
  });

  test('Google robots meta: none = noindex, nofollow; all has no effect', () => {
    assert.deepEqual(parseMetaRobots('none', NOW), { noindex: true, nofollow: true, noarchive: false, nosnippet: false });
    assert.deepEqual(parseMetaRobots('all', NOW), { noindex: false, nofollow: false, noarchive: false, nosnippet: false });
    assert.equal(parseMetaRobots('all, noindex', NOW).noindex, true); // the more restrictive rule applies
    assert.equal(parseMetaRobots('index, follow', NOW).noindex, false);
    assert.equal(parseMetaRobots('nocache', NOW).noarchive, true);
    assert.equal(parseMetaRobots('max-snippet:0', NOW).nosnippet, true);
    assert.equal(parseMetaRobots('max-snippet:50, max-image-preview:large', NOW).nosnippet, false);
  });

  test('Google robots meta: <meta name="<our token>"> applies, other crawlers\' names do not', () => {
    assert.equal(ex('<meta name="UbiCrawl" content="noindex">').directives.noindex, true);
    assert.equal(ex('<meta name="googlebot" content="noindex">').directives.noindex, false);
    assert.equal(ex('<meta name="ubicrawl" content="noindex">', { robotsToken: 'ubicrawl/1.0 (+https://x)' }).directives.noindex, true);
  });

  test('Google robots meta: several tags combine (robots + token)', () => {
    const r = ex('<meta name="robots" content="noarchive"><meta name="ubicrawl" content="nofollow">');
    assert.equal(r.directives.noarchive, true);
    assert.equal(r.directives.nofollow, true);
    assert.equal(r.directives.noindex, false);
  });

  test('Google X-Robots-Tag: rules without a user agent apply to every crawler; several headers combine', () => {
    const d = parseXRobotsTag(['noindex', 'noarchive, nofollow'], 'ubicrawl', NOW);
    assert.deepEqual(d, { noindex: true, nofollow: true, noarchive: true, nosnippet: false });
  });

  test('Google X-Robots-Tag: "<user agent>: rules" applies only to that crawler', () => {
    assert.equal(parseXRobotsTag(['googlebot: noindex'], 'ubicrawl', NOW).noindex, false);
    assert.equal(parseXRobotsTag(['UbiCrawl: noindex'], 'ubicrawl', NOW).noindex, true);
    const d = parseXRobotsTag(['otherbot: noindex, nofollow', 'ubicrawl: noarchive'], 'ubicrawl', NOW);
    assert.deepEqual(d, { noindex: false, nofollow: false, noarchive: true, nosnippet: false });
    // a scope switch inside one value
    const d2 = parseXRobotsTag(['googlebot: noindex, ubicrawl: nofollow'], 'ubicrawl', NOW);
    assert.equal(d2.noindex, false);
    assert.equal(d2.nofollow, true);
  });

  test('Google unavailable_after: past date → noindex; future → recorded only; invalid → ignored', () => {
    const past = parseXRobotsTag(['unavailable_after: 25 Jun 2010 15:00:00 PST'], 'ubicrawl', NOW);
    assert.equal(past.noindex, true);
    assert.equal(past.unavailableAfter, Date.parse('2010-06-25T23:00:00Z'));
    const future = parseMetaRobots('unavailable_after: 2030-01-01T00:00:00Z', NOW);
    assert.equal(future.noindex, false);
    assert.equal(future.unavailableAfter, Date.parse('2030-01-01T00:00:00Z'));
    // RFC 850 and RFC 822 dates contain a comma, which is also the rule separator
    const rfc850 = parseXRobotsTag(['noarchive, unavailable_after: Wednesday, 03-Nov-21 15:00:00 GMT, nosnippet'], 'ubicrawl', NOW);
    assert.equal(rfc850.noindex, true);
    assert.equal(rfc850.unavailableAfter, Date.parse('2021-11-03T15:00:00Z'));
    assert.equal(rfc850.noarchive, true);
    assert.equal(rfc850.nosnippet, true);
    const rfc822 = parseMetaRobots('unavailable_after: Sat, 01 Jan 2000 00:00:00 GMT', NOW);
    assert.equal(rfc822.noindex, true);
    assert.equal(parseMetaRobots('unavailable_after: soon', NOW).noindex, false);
    assert.equal(parseMetaRobots('unavailable_after:', NOW).unavailableAfter, undefined);
    // the prefix form: another crawler's unavailable_after does not apply
    assert.equal(parseXRobotsTag(['googlebot: unavailable_after: 1 Jan 2001 00:00:00 GMT'], 'ubicrawl', NOW).noindex, false);
  });

  test('tolerant: space- or semicolon-separated rule lists are obeyed', () => {
    assert.deepEqual(parseMetaRobots('noindex nofollow', NOW), { noindex: true, nofollow: true, noarchive: false, nosnippet: false });
    assert.equal(parseMetaRobots('noindex;nofollow', NOW).nofollow, true);
    assert.equal(parseMetaRobots('  , ,, ', NOW).noindex, false);
    assert.equal(parseMetaRobots('googlebot: noindex', NOW).noindex, false); // a prefix has no meaning in meta
  });

  test('X-Robots-Tag nofollow: no links, but canonical and refresh are still recorded', () => {
    const r = ex('<head><link rel=canonical href="/c"><meta http-equiv=refresh content="0;url=/r"></head><a href="/a">a</a>', { xRobotsTag: ['nofollow'] });
    assert.deepEqual(r.links, []);
    assert.equal(r.canonical, 'https://example.com/c');
    assert.equal(r.metaRefresh, 'https://example.com/r');
  });

  test('meta robots nofollow late in the document still empties the links', () => {
    const r = ex('<a href="/a">a</a><a rel=nofollow href="/b">b</a><meta name="robots" content="nofollow">');
    assert.deepEqual(r.links, []);
    assert.equal(r.directives.nofollow, true);
  });

  test('meta robots inside <template> is ignored (not in the document)', () => {
    assert.equal(ex('<template><meta name=robots content=noindex></template>').directives.noindex, false);
  });
});

// ---------------------------------------------------------------------------------------------
describe('title and visible text', () => {
  test('HTML §4.2.2: the first <title>, whitespace stripped and collapsed, references decoded', () => {
    const r = ex('<title>\n  A &amp; B\t\tC  </title><title>second</title>');
    assert.equal(r.title, 'A & B C');
    assert.equal(ex('<p>no title</p>').title, undefined);
    assert.equal(ex('<svg><title>icon</title></svg><title>doc</title>').title, 'doc');
    assert.equal(ex('<template><title>tpl</title></template><title>doc</title>').title, 'doc');
  });

  test('visible text excludes script, style, noscript, template, title; collapses whitespace', () => {
    const r = ex(`<html><head><title>T</title><style>p{}</style><script>var x = 1;</script></head>
      <body><h1>Head&nbsp;line</h1>  <p>One <b>bold</b> word,\n\n  <i>two</i>.</p><noscript>enable js</noscript>
      <template><p>tpl</p></template><ul><li>a</li><li>b</li></ul><div>x&lt;y</div></body></html>`, { wantText: true });
    assert.equal(r.text, 'Head line One bold word, two. a b x<y');
  });

  test('visible text: block boundaries separate words, inline elements do not', () => {
    assert.equal(ex('<div>a</div><div>b</div><p>c<br>d</p><td>e</td><td>f</td>', { wantText: true }).text, 'a b c d e f');
    assert.equal(ex('<p>wo<b>r</b>d <span>x</span>y</p>', { wantText: true }).text, 'word xy');
  });

  test('whitespace collapsing equals the reference /[ASCII whitespace + NBSP]+/ → " " on random text', () => {
    let x = 7;
    const rnd = (n: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return (x >>> 8) % n;
    };
    const alphabet = [' ', ' ', '  ', '\n', '\t', '\r\n', '\f', '\u00a0', 'a', 'bc', 'd.', '\u3000'];
    for (let k = 0; k < 2000; k++) {
      let t = '';
      for (let i = rnd(20); i >= 0; i--) t += alphabet[rnd(alphabet.length)];
      const want = t.replace(/[\t\n\f\r \u00a0]+/g, ' ').trim();
      assert.equal(ex(`<p>${t}</p>`, { wantText: true }).text, want, JSON.stringify(t));
    }
  });

  test('maxTextChars caps the text (after collapsing)', () => {
    const r = ex('<p>' + 'word   '.repeat(50_000) + '</p>', { wantText: true, maxTextChars: 1000 });
    assert.equal(r.text?.length, 1000);
    assert.ok(r.text?.startsWith('word word '));
    assert.equal(ex('<p>abc</p>').text, undefined); // only when asked
  });
});

// ---------------------------------------------------------------------------------------------
describe('malformed and hostile input', () => {
  test('unterminated constructs at EOF never throw', () => {
    const cases = [
      '<a href="/x', '<a href=/x', '<a', '<', '<!--', '<!-- <a href="/x">', '<script>', '<script><a href="/x">',
      '<title>abc', '<title', '</', '<![CDATA[', '<!DOCTYPE', '<?xml', '<a href="/x">&#', '&', '&#x110000;', '<svg><svg><svg>',
      '<base href=', '<meta http-equiv=refresh content="0;url=', '\u0000<a\u0000 href="/n\u0000ul">',
    ];
    for (const c of cases) {
      const r = ex(c, { wantText: true });
      assert.equal(r.isHtml, true, c);
    }
    // a tag cut off by EOF is dropped (HTML §13.2.5.32 "EOF in tag")
    assert.deepEqual(urls(ex('<a href="/x">ok</a><a href="/y')), ['https://example.com/x']);
  });

  test('binary garbage served as text/html: bounded, no throw', () => {
    let x = 12345;
    const junk = new Uint8Array(1 << 20);
    for (let i = 0; i < junk.length; i++) {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      junk[i] = x >> 16;
    }
    const t0 = performance.now();
    const r = ex(junk, { wantText: true, maxTextChars: 10_000 });
    const ms = performance.now() - t0;
    assert.equal(r.isHtml, true);
    assert.ok((r.text?.length ?? 0) <= 10_000);
    assert.ok(ms < 10_000, `took ${ms} ms`); // bounded, not a speed goal: bench/parse.ts measures speed
  });

  test('100,000 links are capped at maxLinks (default 2000) and counted', () => {
    let html = '';
    for (let i = 0; i < 100_000; i++) html += `<a href="/p${i}">${i}</a>`;
    const r = ex(html);
    assert.equal(r.links.length, 2000);
    assert.equal(r.linksDropped, 98_000);
  });

  test('deep nesting, huge attributes, huge titles, entity floods stay bounded', () => {
    const deep = '<svg>'.repeat(100_000) + '<a href="/deep">d</a>' + '</svg>'.repeat(100_000) + '<script>"<a href=/no>"</script>';
    assert.deepEqual(urls(ex(deep)), ['https://example.com/deep']);
    const bigAttr = `<a title="${'x'.repeat(1 << 20)}" href="/big">b</a>`;
    assert.deepEqual(urls(ex(bigAttr)), ['https://example.com/big']);
    const bigTitle = ex(`<title>${'t '.repeat(500_000)}</title>`);
    assert.ok((bigTitle.title?.length ?? 0) <= 1024);
    const entities = ex(`<title>${'&amp;'.repeat(100_000)}</title><a href="/${'&amp;'.repeat(10_000)}">e</a>`);
    assert.ok((entities.title?.length ?? 0) <= 1024);
    assert.equal(entities.links.length, 1);
  });

  test('mismatched and stray tags do not derail extraction', () => {
    const r = ex('</div></p><a href="/1"><a href="/2"></b></i><p><table><a href="/3"></td></table></html></body><a href="/4">', { wantText: true });
    assert.deepEqual(urls(r), ['https://example.com/1', 'https://example.com/2', 'https://example.com/3', 'https://example.com/4']);
    const r2 = ex('</script><a href="/after-stray-close">x</a></style></title></noscript></template></svg>');
    assert.deepEqual(urls(r2), ['https://example.com/after-stray-close']);
  });

  test('an invalid page URL does not throw; absolute links still resolve', () => {
    const r = extractPage(enc.encode('<a href="http://ok.example/x">x</a><a href="rel">r</a>'), { url: 'not a url', contentType: 'text/html', robotsToken: 'ubicrawl' });
    assert.deepEqual(urls(r), ['http://ok.example/x']);
    assert.equal(r.invalidLinks, 1);
  });

  test('the extractor is reusable: state does not leak between pages', () => {
    ex('<head><base href="https://leak.example/"><title>one</title><meta name=robots content=nofollow><link rel=canonical href="/c"></head><svg><script>', { wantText: true });
    const r = ex('<a href="p">p</a>');
    assert.equal(r.base, URL0);
    assert.equal(r.title, undefined);
    assert.equal(r.canonical, undefined);
    assert.equal(r.directives.nofollow, false);
    assert.deepEqual(urls(r), ['https://example.com/dir/p']);
    // a script left open on the previous page does not swallow this page
    assert.deepEqual(urls(ex('<a href="q">q</a>')), ['https://example.com/dir/q']);
  });
});

// ---------------------------------------------------------------------------------------------
describe('differential check against htmlparser2 Parser', () => {
  test('<a href> extraction agrees with htmlparser2 Parser on 300 random documents', async () => {
    const { Parser } = await import('htmlparser2');
    let x = 987654321;
    const rnd = (n: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return (x >>> 8) % n;
    };
    const hrefs = ['/a', 'b.html', '/s?x=1&amp;y=2', '/e&copy=1', '/n&notin;', '/c&#x41;&#66;', '  /sp  ', '#f', 'javascript:x', '//h.example/p', '/q\'x', '/d"x', '/u&lt', 'mailto:z', ''];
    const frags = [
      () => `<a href="${hrefs[rnd(hrefs.length)].replace(/"/g, '&quot;')}">t</a>`,
      () => `<A HREF='${hrefs[rnd(hrefs.length)].replace(/'/g, '&#39;')}' class=x>t</A>`,
      () => `<a class="k" href=${hrefs[rnd(hrefs.length)].replace(/[\s"'<>=`]/g, '') || '/e'} >t</a>`,
      () => '<p>text &amp; more < 3 &lt; 5 &notanentity; &#x3C;a href="/fake"&#x3E;</p>',
      () => '<script>var s = "<a href=\'/in-script\'>"; if (a < b) {}</script>',
      () => '<style>a[href="/in-style"]{}</style>',
      () => '<!-- <a href="/in-comment"> -->',
      () => '<title><a href="/in-title"></title>',
      () => '<textarea><a href="/in-textarea"></textarea>',
      () => '<svg><a href="/svg">s</a><title>t</title></svg>',
      () => '<math><mi><a href="/math">m</a></mi></math>',
      () => '<div><span>inline</span></div>',
      () => '<a href="/dup">1</a><a href="/dup">2</a>',
      () => '<![CDATA[ <a href="/cdata"> ]]>',
      () => '<a href="/noclose">',
      () => '<a\nhref\n=\n"/newlines"\n>x</a>',
      () => '<a href="/first" href="/second">d</a>',
    ];
    for (let doc = 0; doc < 300; doc++) {
      let html = '';
      const n = 1 + rnd(25);
      for (let i = 0; i < n; i++) html += frags[rnd(frags.length)]();
      const expected: string[] = [];
      const seen = new Set<string>();
      const self = new URL(URL0).href.split('#')[0];
      const p = new Parser({
        onopentag(name, attribs) {
          if (name !== 'a' || attribs.href === undefined) return;
          let u: URL;
          try {
            u = new URL(attribs.href, URL0);
          } catch {
            return;
          }
          if (u.protocol !== 'http:' && u.protocol !== 'https:') return;
          const s = u.href.split('#')[0];
          if (s === self || seen.has(s)) return;
          seen.add(s);
          expected.push(s);
        },
      });
      p.end(html);
      assert.deepEqual(urls(ex(html)), expected, html);
    }
  });
});

describe('URL resolution', () => {
  test('WHATWG URL Standard: resolved links equal new URL(href, base) minus fragment, on 20,000 random references', () => {
    let x = 42;
    const rnd = (n: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return (x >>> 8) % n;
    };
    const alphabet = ['/', '/', '/', '.', '..', '%', '2', 'e', 'E', '%2e', '%2E', '?', '#', ':', '\\', ' ', "'", '^', 'a', 'b', 'é',
      '@', '&', '=', '~', '|', '[', ']', '{', '`', '"', '<', '\t', 'x.html', 'seg', '-', '_', '!', '$', '(', '*', '+', ',', ';', '%41'];
    const bases = ['https://example.com/dir/page.html?q=1', 'http://u:p@Example.COM:8080/a/b/', 'https://example.com', 'https://xn--nxasmq6b.example/%7Euser/x'];
    for (const base of bases) {
      for (let k = 0; k < 5000; k++) {
        let h = '';
        const n = 1 + rnd(8);
        for (let i = 0; i < n; i++) h += alphabet[rnd(alphabet.length)];
        let expected: string | null = null;
        try {
          const u = new URL(h, base);
          if (u.protocol === 'http:' || u.protocol === 'https:') expected = u.href.split('#')[0];
        } catch {
          expected = null;
        }
        const self = new URL(base).href.split('#')[0];
        const got = extractPage(enc.encode(`<a href="${h.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}">x</a>`), {
          url: base, contentType: 'text/html', robotsToken: 'ubicrawl',
        });
        const want = expected === null || expected === self ? [] : [expected];
        assert.deepEqual(got.links.map((l) => l.url), want, `${JSON.stringify(h)} against ${base}`);
      }
    }
  });
});


test('text and markup fast paths: the same extraction as htmlparser2\'s Tokenizer as shipped, over the synthetic web, edge cases and cut buffers', async () => {
  const web = await startSyntheticWeb({ seed: 11, hosts: 4, pagesPerHost: 30, pageBytes: { min: 2000, max: 30000 }, variantShare: 0.2 });
  const pages: Buffer[] = [];
  try {
    const port = Number(web.resolveArgs[0]!.split(':')[1]);
    const get = (host: string, path: string) => new Promise<Buffer>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path, headers: { host } }, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (d: Buffer) => chunks.push(d));
        r.on('end', () => resolve(Buffer.concat(chunks)));
      }).on('error', reject).end();
    });
    for (let h = 0; h < 4; h++) for (let p = 0; p < 30; p++) pages.push(await get(web.hostName(h), p === 0 ? '/' : `/p/${p}`));
  } finally {
    await web.close();
  }
  assert.ok(pages.filter((p) => p.length > 2000).length > 80, 'real pages were fetched');
  for (const e of [
    '<p>a &amp; b &lt;c&gt; <a href="/x?a=1&amp;b=2">x</a> tail', 'no tags at all & an amp', 'text only', '&', '<', 'a<', 'a&', '&amp', 'x &#x41',
    '<title>t &amp; u</title><body>x<script>var a="<p>"&&1</script>y &#x41; z &notanentity; <a href=/q>q</a>',
    '<!-- c --> t <![CDATA[ x ]]> &copy; end', '<textarea>a &amp; <b></textarea><a href="u">v</a>', '<plaintext>a < b & c',
    '<style>a{}</style>&nbsp;<b>x</b>&nbsp', 'é &eacute; \u{1F600} <a href="/é?x=&quot;">y</a>',
    // The tag, attribute-name and quoted-value runs: every way a run can end, and buffers that end inside one.
    `<a class='x y' href=y/z data-x="a&amp;b&#34;c" disabled>t</a ><br/><img src=a/b alt='it&apos;s'/>`,
    '<a\nhref\n=\n"/n"\tREL="nofollow"\f>f</a\tjunk><A HREF=\'/s\'>s</A><link rel=canonical href="/c"><base href="/b/">',
    '<a href="/unterminated', "<a href='/u2", '<a href=/u3', '<a hre', '<a', '</a', '<a href="x"/><a href="/d"class=c>d</a>',
    '<meta name=robots content="noindex,&#x20;nofollow"><meta http-equiv=refresh content=\'0; url=/r?a=1&amp;b=2\'>',
    // Attributes of tags the extractor ignores (skipped without callbacks): every way a tag can end, and buffers that end inside one.
    `<span class=x title="a>b" data-x='c"d' e=f&amp;g h / i/>t</span><div/ >u</div><p = x>v<br / ><hr/x><a href=/after>a</a>`,
    '<b\tclass = "x"\n>y</b><i \'=\' "q">z</i><em a=\'\' b="" c= d>e</em><u/ / / >w</u><s a=b/>x<a href="/s">s</a>',
    '<script type="text/x">if(a<b)</script><a href=/1>1</a><style media="x>y">p>b{}</style><title lang=en>T &amp; t</title><textarea rows=2><a href=/no>x</textarea>',
    '<script src=x />after<a href=/2>2</a></script><a href=/3>3</a><title/>t2</title><svg viewBox="0 0 1 1"><title a=b>s</title></svg>',
    '<svg viewBox="0 0 1 1"/><title>T</title><p>x</p><math display=block / ><style>s{}</style><a href=/m>m</a>', '<template id=t/>y<a href=/t>t</a><noscript a=b/>x',
    '<span a="unterminated', '<span a=', '<span a ', '<span /', '<span a=\'x', '<span a=x', '<span a="&amp', '<p class="&#x22;&quot;" id=&gt;>&lt;</p>',
  ]) pages.push(Buffer.from(e));
  // Real documentation pages (Debian's, as bench/realhtml serves them), where installed.
  for (const dir of ['/usr/share/doc/python3.11/html/library', '/usr/share/doc/debian-handbook/html/en-US']) {
    let names: string[] = [];
    try { names = readdirSync(dir).filter((n) => n.endsWith('.html')).sort(); } catch { continue; }
    for (let i = 0; i < names.length && i < 600; i += 10) pages.push(readFileSync(join(dir, names[i]!)));
  }
  // Buffers cut inside every kind of run: prefixes of a markup-dense page.
  const dense = Buffer.from(`<div class="a"><p><a class='r' href="/p?x=1&amp;y=2" title="T &lt; U">x</a> <span id=s data-v=1>y</span></p></div>`);
  for (let cut = 1; cut < dense.length; cut++) pages.push(dense.subarray(0, cut));
  const ignored = Buffer.from(`<div class="a b" data-q='1"2' x=y&amp;z / w><br/><span\ta = "&lt;" /><script src="/s.js" defer></script>t<a href=/z>z</a>`);
  for (let cut = 1; cut < ignored.length; cut++) pages.push(ignored.subarray(0, cut));
  const opts: ExtractOptions = { url: 'http://h0.web.test/p/1', contentType: 'text/html; charset=utf-8', robotsToken: 'ubicrawl', wantText: true, wantFingerprint: true };
  const run = () => pages.map((b) => { const r = extractPage(b, opts); return JSON.stringify({ ...r, fingerprint: String(r.fingerprint) }); });
  assert.equal(setFastTextScan(true), true, 'the fast path works with this htmlparser2');
  const fast = run();
  setFastTextScan(false);
  let plain: string[];
  try { plain = run(); } finally { setFastTextScan(true); }
  for (let i = 0; i < pages.length; i++) assert.equal(fast[i], plain[i], `page ${i}: ${pages[i]!.subarray(0, 80).toString()}`);
});

test('decodeBody UTF-8: the fast paths (ASCII as Latin-1, valid UTF-8 through the transcoder) give exactly what TextDecoder gives, valid or not; a BOM after the sniffed one stays', () => {
  const td = new TextDecoder('utf-8', { ignoreBOM: true });
  const cs = { encoding: 'utf-8', source: 'header' as const, bomLength: 0 };
  let seed = 7;
  const rnd = () => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 4294967296; };
  let checked = 0;
  const check = (b: Buffer) => { checked++; assert.equal(decodeBody(b, cs), td.decode(b), `bytes ${b.subarray(0, 24).toString('hex')}…`); };
  for (let t = 0; t < 400; t++) {
    let s = '';
    const len = 100 + Math.floor(rnd() * 1500);
    for (let i = 0; i < len; i++) {
      const k = rnd();
      let cp = k < 0.7 ? 32 + Math.floor(rnd() * 95) : k < 0.85 ? 0x80 + Math.floor(rnd() * 0x780) : k < 0.95 ? 0x800 + Math.floor(rnd() * 0xf000) : 0x10000 + Math.floor(rnd() * 0xfffff);
      if (cp >= 0xd800 && cp < 0xe000) cp = 0x41;
      s += String.fromCodePoint(cp);
    }
    const b = Buffer.from(s, 'utf8');
    check(b);
    check(Buffer.from(s.replace(/[^\x00-\x7f]/g, 'a'), 'utf8')); // pure ASCII
    const broken = Buffer.from(b);
    for (let j = 0; j < 3; j++) broken[Math.floor(rnd() * broken.length)] = Math.floor(rnd() * 256);
    check(broken);
    check(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b])); // a second BOM (the sniffed one is stripped before): content, U+FEFF
    check(b.subarray(1, b.length - 1)); // cut inside sequences
  }
  assert.equal(checked, 2000);
  // Sniffed BOM stripped, the next one kept (Encoding Standard "decode" sniffs once).
  const two = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]), Buffer.from('<p>x</p>')]);
  assert.equal(decodeBody(two, determineCharset(two)), '\ufeff<p>x</p>');
});
