import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { parseSitemap } from '../src/sitemap/parse.js';
import { parseW3cDatetime, parsePriority, parseChangefreq, parseRfc822Date } from '../src/sitemap/fields.js';
import { gunzipBounded } from '../src/sitemap/gzip.js';
import { SitemapGrants, MAX_GRANTS_PER_SITEMAP } from '../src/sitemap/grants.js';
import { openStore } from '../src/store/db.js';
import { tempDir } from './helpers.js';
import { DEFAULT_SITEMAP_LIMITS, sitemapDepthOk } from '../src/sitemap/limits.js';
import { robotsGrantPrefix, directoryPrefix, sitemapScope } from '../src/sitemap/scope.js';

const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"';
const urlset = (inner: string) => `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n${inner}\n</urlset>`;
const u = (loc: string, extra = '') => `<url><loc>${loc}</loc>${extra}</url>`;

// ---------------------------------------------------------------------------
// XML format

test('sitemaps.org "Sample XML Sitemap": every entry and field', () => {
  const body = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
   <url>
      <loc>http://www.example.com/</loc>
      <lastmod>2005-01-01</lastmod>
      <changefreq>monthly</changefreq>
      <priority>0.8</priority>
   </url>
   <url>
      <loc>http://www.example.com/catalog?item=12&amp;desc=vacation_hawaii</loc>
      <changefreq>weekly</changefreq>
   </url>
   <url>
      <loc>http://www.example.com/catalog?item=73&amp;desc=vacation_new_zealand</loc>
      <lastmod>2004-12-23</lastmod>
      <changefreq>weekly</changefreq>
   </url>
   <url>
      <loc>http://www.example.com/catalog?item=74&amp;desc=vacation_newfoundland</loc>
      <lastmod>2004-12-23T18:00:15+00:00</lastmod>
      <priority>0.3</priority>
   </url>
   <url>
      <loc>http://www.example.com/catalog?item=83&amp;desc=vacation_usa</loc>
      <lastmod>2004-11-23</lastmod>
   </url>
</urlset>`;
  const r = parseSitemap(body, 'http://www.example.com/sitemap.xml');
  assert.equal(r.kind, 'urlset');
  assert.deepEqual(r.urls, [
    { loc: 'http://www.example.com/', lastmod: '2005-01-01T00:00:00.000Z', changefreq: 'monthly', priority: 0.8 },
    { loc: 'http://www.example.com/catalog?item=12&desc=vacation_hawaii', changefreq: 'weekly' },
    { loc: 'http://www.example.com/catalog?item=73&desc=vacation_new_zealand', lastmod: '2004-12-23T00:00:00.000Z', changefreq: 'weekly' },
    { loc: 'http://www.example.com/catalog?item=74&desc=vacation_newfoundland', lastmod: '2004-12-23T18:00:15.000Z', priority: 0.3 },
    { loc: 'http://www.example.com/catalog?item=83&desc=vacation_usa', lastmod: '2004-11-23T00:00:00.000Z' },
  ]);
  assert.deepEqual(r.rejected, { outOfScope: 0, invalid: 0, overLimit: 0 });
  assert.equal(r.truncated, false);
  assert.equal(r.invalidFields, 0);
  assert.deepEqual(r.sitemaps, []);
});

test('sitemaps.org "Entity escaping": &amp; &apos; &quot; &gt; &lt;, numeric references, and CDATA in <loc>', () => {
  const r = parseSitemap(urlset([
    u('http://www.example.com/%C3%BCmlat.php&amp;q=name'),
    u('http://www.example.com/q?a=&apos;x&apos;&amp;b=&quot;y&quot;&amp;c=&lt;&gt;'),
    u('http://www.example.com/&#x41;&#66;'),
    u('<![CDATA[http://www.example.com/cdata?a=1&b=2]]>'),
    u('http://www.example.com/ümlat.php'),
  ].join('\n')), 'http://www.example.com/sitemap.xml');
  assert.deepEqual(r.urls.map((x) => x.loc), [
    'http://www.example.com/%C3%BCmlat.php&q=name',
    "http://www.example.com/q?a='x'&b=%22y%22&c=%3C%3E",
    'http://www.example.com/AB',
    'http://www.example.com/cdata?a=1&b=2',
    'http://www.example.com/%C3%BCmlat.php',
  ]);
});

test('sitemaps.org <loc>: surrounding whitespace ignored, URL normalised (RFC 3986 §6), fragment dropped', () => {
  const r = parseSitemap(urlset(u('\n   HTTP://WWW.Example.com:80/a/%7ex#frag  \n')), 'http://www.example.com/sitemap.xml');
  assert.deepEqual(r.urls, [{ loc: 'http://www.example.com/a/~x' }]);
});

test('sitemaps.org <loc>: must be absolute ("begin with the protocol") and under 2,048 characters', () => {
  const long = 'http://h/' + 'a'.repeat(2047 - 9);
  assert.equal(long.length, 2047);
  const r = parseSitemap(urlset([
    u('/relative/path'), u('www.example.com/x'), u('mailto:a@h'), u(''), '<url><lastmod>2005-01-01</lastmod></url>',
    u(long), u(long + 'b'), u('http://h/ok'),
  ].join('')), 'http://h/sitemap.xml');
  assert.deepEqual(r.urls.map((x) => x.loc), [long, 'http://h/ok']);
  assert.equal(r.rejected.invalid, 6);
});

test('sitemaps.org: extension namespaces (image, video, news, xhtml) are ignored; prefixed sitemap elements are not', () => {
  const body = `<urlset ${NS} xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
      xmlns:xhtml="http://www.w3.org/1999/xhtml" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
    <url>
      <loc>http://h/page</loc>
      <image:image><image:loc>http://h/evil-not-a-page.jpg</image:loc></image:image>
      <xhtml:link rel="alternate" hreflang="de" href="http://h/de/page"/>
      <news:news><news:publication_date>2008-12-23</news:publication_date></news:news>
    </url>
    <url><image:loc>http://h/only-image</image:loc></url>
  </urlset>`;
  const r = parseSitemap(body, 'http://h/sitemap.xml');
  assert.deepEqual(r.urls, [{ loc: 'http://h/page' }]);
  assert.equal(r.rejected.invalid, 1, 'the <url> without its own <loc>');

  const prefixed = `<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:url><sm:loc>http://h/p</sm:loc>
    <sm:priority>1.0</sm:priority></sm:url></sm:urlset>`;
  assert.deepEqual(parseSitemap(prefixed, 'http://h/sitemap.xml').urls, [{ loc: 'http://h/p', priority: 1 }]);
});

test('sitemaps.org "XML tag definitions": first <loc> of an entry wins; unknown child elements ignored', () => {
  const r = parseSitemap(urlset(`<url><loc>http://h/1</loc><loc>http://h/2</loc><foo>x</foo><mobile:mobile/></url>`),
    'http://h/sitemap.xml');
  assert.deepEqual(r.urls, [{ loc: 'http://h/1' }]);
});

test('sitemaps.org: a <urlset> without the namespace declaration is still read', () => {
  const r = parseSitemap('<urlset><url><loc>http://h/x</loc></url></urlset>', 'http://h/sitemap.xml');
  assert.equal(r.kind, 'urlset');
  assert.equal(r.urls.length, 1);
});

test('sitemaps.org <lastmod>: W3C Datetime, all six forms; others dropped and counted', () => {
  const r = parseSitemap(urlset([
    u('http://h/1', '<lastmod>1997</lastmod>'),
    u('http://h/2', '<lastmod>1997-07</lastmod>'),
    u('http://h/3', '<lastmod>1997-07-16</lastmod>'),
    u('http://h/4', '<lastmod>1997-07-16T19:20+01:00</lastmod>'),
    u('http://h/5', '<lastmod>1997-07-16T19:20:30+01:00</lastmod>'),
    u('http://h/6', '<lastmod>1997-07-16T19:20:30.45+01:00</lastmod>'),
    u('http://h/7', '<lastmod>1997-07-16T19:20:30Z</lastmod>'),
    u('http://h/8', '<lastmod>16/07/1997</lastmod>'),
  ].join('')), 'http://h/sitemap.xml');
  assert.deepEqual(r.urls.map((x) => x.lastmod), [
    '1997-01-01T00:00:00.000Z', '1997-07-01T00:00:00.000Z', '1997-07-16T00:00:00.000Z', '1997-07-16T18:20:00.000Z',
    '1997-07-16T18:20:30.000Z', '1997-07-16T18:20:30.450Z', '1997-07-16T19:20:30.000Z', undefined,
  ]);
  assert.equal(r.invalidFields, 1);
  assert.equal(r.urls.length, 8, 'a bad field never costs the URL');
});

test('W3C Datetime (NOTE-datetime): what is not in the profile is refused', () => {
  for (const bad of ['1997-07-16T19:20', '1997-07-16T19:20:30', '1997-07-16 19:20:30Z', '1997-7-16', '97-07-16',
    '1997-13-01', '1997-02-29', '1997-04-31', '1997-07-16T24:00Z', '1997-07-16T19:60Z', '1997-07-16T19:20:61Z',
    '1997-07-16T19:20+25:00', '1997-07-16T19:20+0100', '1997-07-16t19:20z', '', 'yesterday', '2005-01-01T00:00:00.Z']) {
    assert.equal(parseW3cDatetime(bad), undefined, bad);
  }
  assert.equal(parseW3cDatetime('2000-02-29'), '2000-02-29T00:00:00.000Z');
  assert.equal(parseW3cDatetime('1900-02-29'), undefined);
  assert.equal(parseW3cDatetime(' 2004-12-23T18:00:15-05:30 '), '2004-12-23T23:30:15.000Z');
  assert.equal(parseW3cDatetime('0050-01-01'), '0050-01-01T00:00:00.000Z');
  assert.equal(parseW3cDatetime('2004-12-23T18:00:15.123456789Z'), '2004-12-23T18:00:15.123Z');
});

test('sitemaps.org <priority>: 0.0 to 1.0 (xsd:decimal); others dropped and counted', () => {
  for (const [v, n] of [['0.0', 0], ['1.0', 1], ['0.5', 0.5], ['1', 1], ['.5', 0.5], ['0', 0], [' 0.30 ', 0.3], ['+0.1', 0.1], ['-0.0', 0]] as const) {
    assert.equal(parsePriority(v), n, v);
  }
  for (const bad of ['1.1', '-0.1', '2', 'high', '', '1e-1', '0x1', 'NaN', 'Infinity', '0.5.1', '.', '1,0']) {
    assert.equal(parsePriority(bad), undefined, bad);
  }
  const r = parseSitemap(urlset(u('http://h/a', '<priority>1.5</priority>')), 'http://h/sitemap.xml');
  assert.deepEqual(r.urls, [{ loc: 'http://h/a' }]);
  assert.equal(r.invalidFields, 1);
});

test('sitemaps.org <changefreq>: the seven values', () => {
  for (const v of ['always', 'hourly', 'daily', 'weekly', 'monthly', 'yearly', 'never']) assert.equal(parseChangefreq(v), v);
  assert.equal(parseChangefreq(' Daily\n'), 'daily');
  for (const bad of ['biweekly', 'sometimes', '', 'day']) assert.equal(parseChangefreq(bad), undefined, bad);
});

// ---------------------------------------------------------------------------
// Sitemap index

test('sitemaps.org "Sample XML Sitemap Index"', () => {
  const body = `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
   <sitemap>
      <loc>http://www.example.com/sitemap1.xml.gz</loc>
      <lastmod>2004-10-01T18:23:17+00:00</lastmod>
   </sitemap>
   <sitemap>
      <loc>http://www.example.com/sitemap2.xml.gz</loc>
      <lastmod>2005-01-01</lastmod>
   </sitemap>
</sitemapindex>`;
  const r = parseSitemap(body, 'http://www.example.com/sitemap_index.xml');
  assert.equal(r.kind, 'sitemapindex');
  assert.deepEqual(r.sitemaps, [
    { loc: 'http://www.example.com/sitemap1.xml.gz', lastmod: '2004-10-01T18:23:17.000Z' },
    { loc: 'http://www.example.com/sitemap2.xml.gz', lastmod: '2005-01-01T00:00:00.000Z' },
  ]);
  assert.deepEqual(r.urls, []);
});

test('sitemaps.org "Sitemap index": children only on the same site (any directory of it)', () => {
  const body = `<sitemapindex ${NS}>
    <sitemap><loc>http://www.example.com/deep/dir/s1.xml</loc></sitemap>
    <sitemap><loc>http://www.example.com/s2.xml</loc></sitemap>
    <sitemap><loc>http://example.com/s3.xml</loc></sitemap>
    <sitemap><loc>http://sub.www.example.com/s4.xml</loc></sitemap>
    <sitemap><loc>https://www.example.com/s5.xml</loc></sitemap>
    <url><loc>http://www.example.com/a-page</loc></url>
  </sitemapindex>`;
  const r = parseSitemap(body, 'http://www.example.com/indexes/sitemap_index.xml');
  assert.deepEqual(r.sitemaps.map((s) => s.loc), ['http://www.example.com/deep/dir/s1.xml', 'http://www.example.com/s2.xml']);
  assert.equal(r.rejected.outOfScope, 3);
  assert.equal(r.rejected.invalid, 1, 'a <url> inside an index is counted, not followed');
});

// ---------------------------------------------------------------------------
// Location rules

test('sitemaps.org "Sitemap file location": only URLs under the sitemap\'s directory, same scheme, host and port', () => {
  const locs = [
    'http://example.com/catalog/show?item=23',              // ok
    'http://example.com/catalog/show?item=233&amp;user=3453', // ok
    'http://EXAMPLE.com:80/catalog/%7Ex',                    // ok: equivalent after normalisation
    'http://example.com/catalog/',                           // ok: the directory itself
    'http://example.com/image/show.php?item=23',             // other directory
    'http://example.com/catalogue',                          // not under "catalog/"
    'http://example.com/',                                   // parent
    'https://example.com/catalog/page1.php',                 // other scheme
    'http://www.example.com/catalog/x',                      // other host
    'http://example.com:81/catalog/x',                       // other port
    'http://example.com/Catalog/x',                          // paths are case-sensitive
  ];
  const r = parseSitemap(urlset(locs.map((l) => u(l)).join('')), 'http://example.com/catalog/sitemap.xml');
  assert.deepEqual(r.urls.map((x) => x.loc), [
    'http://example.com/catalog/show?item=23', 'http://example.com/catalog/show?item=233&user=3453',
    'http://example.com/catalog/~x', 'http://example.com/catalog/',
  ]);
  assert.equal(r.rejected.outOfScope, 7);
});

test('sitemaps.org "Sitemap file location": a sitemap on a non-default port covers that port only', () => {
  const r = parseSitemap(urlset(u('http://h:8080/a') + u('http://h/a')), 'http://h:8080/sitemap.xml');
  assert.deepEqual(r.urls.map((x) => x.loc), ['http://h:8080/a']);
  assert.equal(r.rejected.outOfScope, 1);
});

test('sitemaps.org "Sitemaps & Cross Submits": a robots.txt naming the sitemap grants its own host', () => {
  const body = urlset(u('http://www.example.com/page') + u('http://sitemaps.host.com/x') + u('http://other.com/p'));
  const noGrant = parseSitemap(body, 'http://sitemaps.host.com/sitemap-www.xml');
  assert.deepEqual(noGrant.urls.map((x) => x.loc), ['http://sitemaps.host.com/x']);
  const grant = robotsGrantPrefix('http://www.Example.com/robots.txt');
  assert.equal(grant, 'http://www.example.com/');
  const r = parseSitemap(body, 'http://sitemaps.host.com/sitemap-www.xml', { allowedPrefixes: [grant as string] });
  assert.deepEqual(r.urls.map((x) => x.loc), ['http://www.example.com/page', 'http://sitemaps.host.com/x']);
  assert.equal(r.rejected.outOfScope, 1);
});

test('scope: a grant for a bare origin cannot be stretched to a look-alike host', () => {
  const r = parseSitemap(urlset(u('http://a.com.evil.net/x') + u('http://a.com/x')), 'http://s.net/sitemap.xml',
    { allowedPrefixes: ['http://a.com'] });
  assert.deepEqual(r.urls.map((x) => x.loc), ['http://a.com/x']);
});

test('scope helpers', () => {
  assert.equal(directoryPrefix('http://h/a/b/sitemap.xml?x=/y/'), 'http://h/a/b/');
  assert.equal(directoryPrefix('http://h/sitemap.xml'), 'http://h/');
  assert.equal(directoryPrefix('http://h/?s=/a/'), 'http://h/');
  assert.deepEqual(sitemapScope('not a url'), { urlPrefixes: [], sitemapPrefixes: [] });
  // An unparseable sitemap URL leaves nothing in scope: everything counted out of scope.
  const r = parseSitemap(urlset(u('http://h/a')), 'garbage');
  assert.equal(r.rejected.outOfScope, 1);
});

// ---------------------------------------------------------------------------
// Other formats

test('sitemaps.org "Text file": one URL per line, UTF-8, blank lines and CRLF tolerated, bad lines counted', () => {
  const body = '\ufeffhttp://www.example.com/catalog?item=1\r\n\r\nhttp://www.example.com/catalog?item=11\n' +
    'not a url\n   http://www.example.com/ünïcode   \nhttp://elsewhere.example/x\n/relative\n';
  const r = parseSitemap(body, 'http://www.example.com/sitemap.txt');
  assert.equal(r.kind, 'text');
  assert.deepEqual(r.urls.map((x) => x.loc), [
    'http://www.example.com/catalog?item=1', 'http://www.example.com/catalog?item=11',
    'http://www.example.com/%C3%BCn%C3%AFcode',
  ]);
  assert.deepEqual(r.rejected, { outOfScope: 1, invalid: 2, overLimit: 0 });
  const bytes = parseSitemap(new TextEncoder().encode(body), 'http://www.example.com/sitemap.txt');
  assert.deepEqual(bytes.urls, r.urls);
});

test('sitemaps.org "Syndication feed": RSS 2.0 <item><link> and <pubDate>', () => {
  const body = `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>http://h/blog/</link>
    <item><title>a</title><link>http://h/blog/a</link><pubDate>Sat, 07 Sep 2002 00:00:01 GMT</pubDate></item>
    <item><link>/blog/b</link><pubDate>whenever</pubDate></item>
    <item><link>http://other/x</link></item>
  </channel></rss>`;
  const r = parseSitemap(body, 'http://h/blog/feed.xml');
  assert.equal(r.kind, 'feed');
  assert.deepEqual(r.urls, [{ loc: 'http://h/blog/a', lastmod: '2002-09-07T00:00:01.000Z' }, { loc: 'http://h/blog/b' }]);
  assert.equal(r.invalidFields, 1);
  assert.equal(r.rejected.outOfScope, 1);
  assert.equal(parseRfc822Date('Tue, 10 Jun 2003 04:00:00 +0200'), '2003-06-10T02:00:00.000Z');
  assert.equal(parseRfc822Date('2003'), undefined);
});

test('sitemaps.org "Syndication feed": Atom 1.0 <entry><link href> and <updated>', () => {
  const body = `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>
    <link href="http://h/"/><updated>2003-12-13T18:30:02Z</updated>
    <entry><title>a</title><link rel="edit" href="http://h/edit/1"/><link href="http://h/2003/12/13/atom03"/>
      <id>urn:uuid:1</id><updated>2003-12-13T18:30:02Z</updated></entry>
    <entry><link rel="alternate" type="text/html" href="rel/2"/><updated>2003-12-13T18:30:02+01:00</updated></entry>
  </feed>`;
  const r = parseSitemap(body, 'http://h/feed.atom');
  assert.equal(r.kind, 'feed');
  assert.deepEqual(r.urls, [
    { loc: 'http://h/2003/12/13/atom03', lastmod: '2003-12-13T18:30:02.000Z' },
    { loc: 'http://h/rel/2', lastmod: '2003-12-13T17:30:02.000Z' },
  ]);
});

// ---------------------------------------------------------------------------
// gzip

test('sitemaps.org: gzip-compressed sitemaps (Uint8Array body) are read', () => {
  const xml = urlset(u('http://h/a') + u('http://h/b'));
  const r = parseSitemap(gzipSync(xml), 'http://h/sitemap.xml.gz');
  assert.equal(r.gzip, true);
  assert.equal(r.kind, 'urlset');
  assert.deepEqual(r.urls.map((x) => x.loc), ['http://h/a', 'http://h/b']);
  assert.equal(r.bytes, Buffer.byteLength(xml));
  // gzip on gzip (file .gz plus a Content-Encoding the client kept)
  assert.deepEqual(parseSitemap(gzipSync(gzipSync(xml)), 'http://h/s.xml.gz').urls.length, 2);
  // gzip that went through a latin1 string
  assert.deepEqual(parseSitemap(gzipSync(xml).toString('latin1'), 'http://h/s.xml.gz').urls.length, 2);
});

test('gzip: a download cut short yields its complete entries; corrupt data is invalid', () => {
  const xml = urlset(Array.from({ length: 2000 }, (_, i) => u(`http://h/p${i}`)).join('\n'));
  const gz = gzipSync(xml);
  const r = parseSitemap(gz.subarray(0, gz.length >> 1), 'http://h/sitemap.xml');
  assert.equal(r.kind, 'urlset');
  assert.ok(r.urls.length > 100 && r.urls.length < 2000, String(r.urls.length));
  assert.equal(r.urls[r.urls.length - 1].loc, `http://h/p${r.urls.length - 1}`);
  const bad = parseSitemap(new Uint8Array([0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), 'http://h/s.xml');
  assert.equal(bad.kind, 'invalid');
});

test('hostile: a gzip bomb is bounded to maxBytes (50 MiB default) in memory and time', () => {
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 }); // 64 MiB of zeros in ~64 KiB
  const t0 = Date.now();
  const r = parseSitemap(bomb, 'http://h/sitemap.xml.gz');
  const ms = Date.now() - t0;
  assert.equal(r.kind, 'invalid');
  assert.equal(r.truncated, true);
  assert.ok(r.bytes <= DEFAULT_SITEMAP_LIMITS.maxBytes);
  assert.ok(ms < 5000, `${ms} ms`);
});

test('hostile: a sitemap padded past the byte limit keeps the entries before the cut', () => {
  const head = urlset(u('http://h/a') + u('http://h/b')).replace('</urlset>', '');
  const body = head + '<url><loc>http://h/c</loc></url>' + ' '.repeat(4 * 1024 * 1024) + u('http://h/z') + '</urlset>';
  const limit = { maxBytes: 1024 * 1024 };
  for (const [label, b] of [['gzip', gzipSync(body)], ['plain', Buffer.from(body)], ['string', body]] as const) {
    const r = parseSitemap(b, 'http://h/sitemap.xml', limit);
    assert.equal(r.truncated, true, label);
    assert.ok(r.bytes <= limit.maxBytes, label);
    assert.deepEqual(r.urls.map((x) => x.loc), ['http://h/a', 'http://h/b', 'http://h/c'], label);
  }
  // and an entry cut in the middle is not taken
  const two = urlset(u('http://h/a') + u('http://h/bbbbbbbb'));
  const cut = parseSitemap(two, 'http://h/s.xml', { maxBytes: two.indexOf('bbbb') });
  assert.equal(cut.truncated, true);
  assert.deepEqual(cut.urls.map((x) => x.loc), ['http://h/a']);
});

test('gunzipBounded: exact below the cap, a bounded prefix above it', () => {
  const data = Buffer.from('x'.repeat(10_000));
  assert.equal(gunzipBounded(gzipSync(data), 10_000).bytes?.length, 10_000);
  const over = gunzipBounded(gzipSync(data), 4_000);
  assert.equal(over.truncated, true);
  assert.ok((over.bytes?.length ?? 0) <= 4_000);
  assert.equal(gunzipBounded(new Uint8Array([1, 2, 3]), 100).bytes, null);
});

// ---------------------------------------------------------------------------
// Limits and hostile input

test('hostile: a 100,000-URL sitemap is cut at 50,000 entries; the rest is counted', () => {
  const parts: string[] = [];
  for (let i = 0; i < 100_000; i++) parts.push(`<url><loc>http://h/p/${i}</loc><priority>0.5</priority></url>`);
  const body = urlset(parts.join('\n'));
  const t0 = Date.now();
  const r = parseSitemap(body, 'http://h/sitemap.xml');
  const ms = Date.now() - t0;
  assert.equal(r.urls.length, 50_000);
  assert.equal(r.urls[49_999].loc, 'http://h/p/49999');
  assert.equal(r.rejected.overLimit, 50_000);
  assert.equal(r.truncated, true);
  assert.ok(ms < 10_000, `${ms} ms`);
});

test('limits: maxUrls counts every entry, index and text too', () => {
  const idx = `<sitemapindex ${NS}>` + Array.from({ length: 5 }, (_, i) => `<sitemap><loc>http://h/s${i}.xml</loc></sitemap>`).join('') + '</sitemapindex>';
  const r = parseSitemap(idx, 'http://h/i.xml', { maxUrls: 3 });
  assert.equal(r.sitemaps.length, 3);
  assert.equal(r.rejected.overLimit, 2);
  const t = parseSitemap('http://h/1\nhttp://h/2\nhttp://h/3\n', 'http://h/s.txt', { maxUrls: 2 });
  assert.equal(t.urls.length, 2);
  assert.equal(t.rejected.overLimit, 1);
  assert.equal(t.truncated, true);
  assert.deepEqual(DEFAULT_SITEMAP_LIMITS, { maxUrls: 50_000, maxBytes: 50 * 1024 * 1024, maxIndexDepth: 3 });
});

test('hostile: garbage is invalid, bounded, and never throws', () => {
  assert.equal(parseSitemap('', 'http://h/s.xml').kind, 'invalid');
  assert.equal(parseSitemap('   \n  ', 'http://h/s.xml').kind, 'invalid');
  assert.equal(parseSitemap('<!DOCTYPE html><html><body><a href="http://h/x">x</a></body></html>', 'http://h/s.xml').kind, 'invalid');
  assert.equal(parseSitemap('{"urls": ["http://h/x"]}', 'http://h/s.xml').kind, 'invalid');
  assert.equal(parseSitemap(new Uint8Array([0, 1, 2, 3, 255, 254]), 'http://h/s.xml').kind, 'invalid');
  assert.equal(parseSitemap(null as unknown as string, 'http://h/s.xml').kind, 'invalid');
  assert.equal(parseSitemap(42 as unknown as string, null as unknown as string).kind, 'invalid');
  assert.equal(parseSitemap('<urlset><url><loc>http://h/x</loc></url>', 'http://h/s.xml').urls.length, 1, 'unclosed root');
  assert.equal(parseSitemap('<<<>>><urlset', 'http://h/s.xml').rejected.invalid, 0);

  // Deep nesting, a huge text node, an endless attribute: bounded, no stack overflow.
  const deep = urlset(u('http://h/first') + '<a>'.repeat(1_000_000) + '</urlset>');
  const t0 = Date.now();
  const rd = parseSitemap(deep, 'http://h/s.xml');
  assert.ok(Date.now() - t0 < 2000, `deep nesting took ${Date.now() - t0} ms`);
  assert.deepEqual(rd.urls.map((x) => x.loc), ['http://h/first']);
  assert.equal(rd.truncated, true);
  const huge = urlset(`<url><loc>http://h/${'x'.repeat(3_000_000)}</loc></url>`);
  assert.equal(parseSitemap(huge, 'http://h/s.xml').rejected.invalid, 1);

  let seed = 99;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) & 0xff;
  for (let k = 0; k < 200; k++) {
    const b = new Uint8Array(1 + (rnd() << 4));
    for (let i = 0; i < b.length; i++) b[i] = rnd();
    if (k % 3 === 0) { b[0] = 0x3c; }
    if (k % 5 === 0) { b[0] = 0x1f; if (b.length > 1) b[1] = 0x8b; }
    const r = parseSitemap(b, 'http://h/s.xml');
    assert.ok(['invalid', 'text', 'urlset', 'sitemapindex', 'feed'].includes(r.kind));
  }
});

test('hostile: binary garbage served as a text sitemap stops early', () => {
  const lines = Array.from({ length: 200_000 }, (_, i) => `garbage line ${i} \u00ff\u00fe`).join('\n');
  const t0 = Date.now();
  const r = parseSitemap(lines, 'http://h/s.txt');
  assert.equal(r.kind, 'invalid');
  assert.ok(Date.now() - t0 < 2000);
});

// ---------------------------------------------------------------------------
// Nested indexes

// An index that lists itself, in a crawl: test/crawl.test.ts "hostile input".
test('nested indexes: the depth bound', () => {
  assert.equal(sitemapDepthOk(0), true);
  assert.equal(sitemapDepthOk(3), true);
  assert.equal(sitemapDepthOk(4), false);
  assert.equal(sitemapDepthOk(-1), false);
  assert.equal(sitemapDepthOk(1, 0), false);
});

test('Sitemaps 0.90 cross submits: grants are durable across a reopen, bounded per sitemap, and a damaged entry reads as none', async () => {
  const dir = tempDir();
  let store = await openStore(dir);
  try {
    const g = new SitemapGrants(store.meta);
    await g.add('http://maps.example/all.xml', 'http://shop.example/');
    await g.add('http://maps.example/all.xml', 'http://shop.example/');
    await g.add('http://maps.example/all.xml', 'http://blog.example/');
    for (let i = 0; i < MAX_GRANTS_PER_SITEMAP + 5; i++) await g.add('http://maps.example/flood.xml', `http://h${i}.example/`);
    await store.close();
    store = await openStore(dir);
    const again = new SitemapGrants(store.meta);
    assert.deepEqual(await again.get('http://maps.example/all.xml'), ['http://shop.example/', 'http://blog.example/']);
    assert.equal((await again.get('http://maps.example/flood.xml'))!.length, MAX_GRANTS_PER_SITEMAP);
    assert.equal(await again.get('http://maps.example/other.xml'), undefined);
    await store.meta.put(Buffer.from('grant\u0000http://maps.example/bad.xml', 'latin1'), Buffer.from('{not json'));
    assert.equal(await again.get('http://maps.example/bad.xml'), undefined);
  } finally {
    await store.close();
  }
});
