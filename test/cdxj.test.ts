import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, readFile, readdir, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { AsyncIterReader, WARCParser, CDXIndexer, getSurt } from 'warcio';
import { WarcWriter } from '../src/warc/writer.js';
import type { ExchangeInput, WriteResult } from '../src/warc/writer.js';
import { surt } from '../src/warc/surt.js';
import {
  buildCdxj,
  cdxjLineHead,
  cdxjTimestamp,
  formatCdxjLine,
  indexWarcFile,
  parseCdxjLine,
  runIndexCommand,
} from '../src/warc/cdxj.js';
import { getStoredResponse, lookupUrl, readRecordAt, runWarcGetCommand, SMALL_INDEX_BYTES } from '../src/warc/lookup.js';
import { tempDir } from './helpers.js';
import { encodeMetadata, type MetadataInput } from '../src/warc/records.js';

// ---------------------------------------------------------------------------
// SURT

// internetarchive/surt tests/test_surt.py (test_surt: from archive-commons'
// WaybackURLKeyMakerTest.java), the key pywb's canonicalize() and cdxj-indexer use.
const SURT_DIRECT: Array<[string, string]> = [
  ['', '-'],
  ['filedesc:foo.arc.gz', 'filedesc:foo.arc.gz'],
  ['warcinfo:foo.warc.gz', 'warcinfo:foo.warc.gz'],
  ['dns:alexa.com', 'dns:alexa.com'],
  ['mailto:foo@example.com', 'mailto:foo@example.com'],
  ['http://www.archive.org/', 'org,archive)/'],
  ['http://archive.org/', 'org,archive)/'],
  ['http://archive.org/goo/', 'org,archive)/goo'],
  ['http://archive.org/goo/?', 'org,archive)/goo'],
  ['http://archive.org/goo/?b&a', 'org,archive)/goo?a&b'],
  ['http://archive.org/goo/?a=2&b&a=1', 'org,archive)/goo?a=1&a=2&b'],
  [
    'http://archive.org/index.php?PHPSESSID=0123456789abcdefghijklemopqrstuv&action=profile;u=4221',
    'org,archive)/index.php?action=profile;u=4221',
  ],
  ['whois://whois.isoc.org.il/shaveh.co.il', 'il,org,isoc,whois)/shaveh.co.il'],
  ['ftp://www.example.com/', 'com,example)/'],
  [
    'http://visit.webhosting.yahoo.com/visit.gif?&r=http%3A//web.archive.org/web/20090517140029/http%3A//anthonystewarthead.electric-chi.com/&b=Netscape%205.0%20%28Windows%3B%20en-US%29&s=1366x768&o=Win32&c=24&j=true&v=1.2',
    'com,yahoo,webhosting,visit)/visit.gif?&b=netscape%205.0%20(windows;%20en-us)&c=24&j=true&o=win32&r=http://web.archive.org/web/20090517140029/http://anthonystewarthead.electric-chi.com/&s=1366x768&v=1.2',
  ],
];

// The canonicaliser cases of the same file (Google's, IA's, session ids), taken
// through the whole key: Google canonical URL → IA canonical URL → SURT form.
const SURT_CANON: Array<[string, string]> = [
  ['http://host/%25%32%35', 'host)/%25'],
  ['http://host/%2525252525252525', 'host)/%25'],
  ['http://host/%%%25%32%35asd%%', 'host)/%25%25%25asd%25%25'],
  [
    'http://%31%36%38%2e%31%38%38%2e%39%39%2e%32%36/%2E%73%65%63%75%72%65/%77%77%77%2E%65%62%61%79%2E%63%6F%6D/',
    '26,99,188,168)/.secure/www.ebay.com',
  ],
  [
    'http://host%23.com/%257Ea%2521b%2540c%2523d%2524e%25f%255E00%252611%252A22%252833%252944_55%252B',
    'com,host%23)/~a!b@c%23d$e%25f^00&11*22(33)44_55+',
  ],
  ['http://3279880203/blah', '11,0,127,195)/blah'],
  ['http://017.0.0.1/', '1,0,0,15)/'],
  ['http://10.0.258/', '2,1,0,10)/'],
  ['http://www.google.com/blah/..', 'com,google)/'],
  ['www.google.com', 'com,google)/'],
  ['http://www.evil.com/blah#frag', 'com,evil)/blah'],
  ['http://www.GOOgle.com/', 'com,google)/'],
  ['http://www.google.com.../', 'com,google)/'],
  ['http://www.google.com/foo\tbar\rbaz\n2', 'com,google)/foobarbaz2'],
  ['http://www.google.com/q?r?s', 'com,google)/q?r?s'],
  ['http://evil.com/foo;', 'com,evil)/foo;'],
  ['B\u00fccher.ch:8080', 'ch,xn--bcher-kva:8080)/'],
  ['\u2603.com', 'com,xn--n3h)/'],
  ['http://\u0001\u0080.com/', 'com,%01%c2%80)/'],
  ['http://www.t%EF%BF%BD%04.82.net/', 'net,82,t%ef%bf%bd%04)/'],
  ['  http://www.google.com/  ', 'com,google)/'],
  ['http:// leadingspace.com/', 'com,%20leadingspace)/'],
  ['http://host.com//twoslashes?more//slashes', 'com,host)/twoslashes?more//slashes'],
  ['http://ARCHIVE.ORG/', 'org,archive)/'],
  ['http://www.archive.org:80/', 'org,archive)/'],
  ['https://www.archive.org:80/', 'org,archive:80)/'],
  ['http://www.archive.org:443/', 'org,archive:443)/'],
  ['https://www.archive.org:443/', 'org,archive)/'],
  ['http://www34.archive.org/index.html?b=a&b=b&a=b', 'org,archive)/index.html?a=b&b=a&b=b'],
  ['http://www2.www2foo.com/', 'com,www2foo)/'],
  ['http://example.com/foo?X=Y', 'com,example)/foo?x=y'],
  ['http:////////////////www.vikings.com', 'com,vikings)/'],
  ['http://https://order.1and1.com', 'com,1and1,order)/'],
  ['http://mineral.galleries.com:/minerals/silicate/chabazit/chabazit.htm', 'com,galleries,mineral)/minerals/silicate/chabazit/chabazit.htm'],
  ['http://x.com/(S(4hqa0555fwsecu455xqckv45))/mileg.aspx', 'com,x)/mileg.aspx'],
  ['http://x.com/(4hqa0555fwsecu455xqckv45)/mileg.aspx', 'com,x)/mileg.aspx'],
  [
    'http://x.com/(a(4hqa0555fwsecu455xqckv45)S(4hqa0555fwsecu455xqckv45)f(4hqa0555fwsecu455xqckv45))/mileg.aspx?page=sessionschedules',
    'com,x)/mileg.aspx?page=sessionschedules',
  ],
  ['http://x.com/photos/36050182@N05/', 'com,x)/photos/36050182@n05'],
  ['http://x.com/?jsessionid=0123456789abcdefghijklemopqrstuv', 'com,x)/'],
  ['http://x.com/?jsessionid=0123456789abcdefghijklemopqrstuv0', 'com,x)/?jsessionid=0123456789abcdefghijklemopqrstuv0'],
  ['http://x.com/?one=two&jsessionid=0123456789abcdefghijklemopqrstuv&x=y', 'com,x)/?one=two&x=y'],
  ['http://x.com/?aspsessionidABCDEFGH=ABCDEFGHIJKLMNOPQRSTUVWX&x=y', 'com,x)/?x=y'],
  ['http://x.com/?sid=9682993c8daa2c5497996114facdc805&x=y', 'com,x)/?x=y'],
  ['http://x.com/?CFID=1169580&CFTOKEN=48630702&dtstamp=22%2F08%2F2006%7C06%3A58%3A11', 'com,x)/?dtstamp=22/08/2006|06:58:11'],
  [
    'http://x.com/?CFID=14475712&CFTOKEN=2D89F5AF-3048-2957-DA4EE4B6B13661AB&r=468710288378&m=forgotten',
    'com,x)/?m=forgotten&r=468710288378',
  ],
  ['http://127.0.0.1:8080/x', '1,0,0,127:8080)/x'],
];

test('SURT: keys equal Python surt.surt() on its own test cases (the key pywb and cdxj-indexer use)', () => {
  for (const [url, key] of SURT_DIRECT) assert.equal(surt(url), key, JSON.stringify(url));
});

test('SURT: Google + IA canonicalisation cases (escaping, IPs, dots, ports, session ids) through the whole key', () => {
  for (const [url, key] of SURT_CANON) assert.equal(surt(url), key, JSON.stringify(url));
});

test('SURT: where warcio.js getSurt simplifies, the key follows Python surt; on plain URLs both agree', () => {
  // Python sorts (name, value) pairs; warcio.js sorts whole "name=value" strings.
  assert.equal(surt('http://x.com/?a-b=1&a=2'), 'com,x)/?a=2&a-b=1');
  assert.equal(getSurt('http://x.com/?a-b=1&a=2'), 'com,x)/?a-b=1&a=2');
  // Python lowercases the host before stripping www; strips a trailing slash.
  assert.equal(surt('http://WWW.Example.com/Dir/'), 'com,example)/dir');
  assert.notEqual(getSurt('http://WWW.Example.com/Dir/'), 'com,example)/dir');
  for (const u of ['http://example.com/', 'https://www.example.com/a/b.html?z=1&y=2', 'http://127.0.0.1:8080/x?q']) {
    assert.equal(surt(u), getSurt(u), u);
  }
  // Never a space or a non-ASCII character in a key: the line format depends on it.
  for (const u of ['mailto:a b@x', 'urn:x:caf\u00e9', 'http://x.com/a b?c d', 'http://caf\u00e9.fr/\u00e9t\u00e9']) {
    assert.match(surt(u), /^[\x21-\x7e]+$/, u);
  }
});

test('CDXJ timestamps: WARC-Date to 14 digits, milliseconds dropped, lower precision padded', () => {
  assert.equal(cdxjTimestamp('2024-01-02T03:04:05.678Z'), '20240102030405');
  assert.equal(cdxjTimestamp('2024-01-02T03:04:05Z'), '20240102030405');
  assert.equal(cdxjTimestamp('2024-01-02T03:04Z'), '20240102030400');
  assert.equal(cdxjTimestamp('2024-01'), '20240101000000');
  assert.equal(cdxjTimestamp('yesterday'), null);
  assert.equal(cdxjTimestamp(undefined), null);
});

test('CDXJ JSON is written as Python json.dumps writes it (cdxj-indexer byte-compatible)', () => {
  const line = formatCdxjLine('fr,caf%c3%a9)/', '20240102030405', [
    ['url', 'http://caf\u00e9.fr/\u{1F600}'],
    ['mime', 'text/html'],
    ['note', 'a"b\\c\nd\u0001'],
  ]);
  assert.equal(
    line,
    'fr,caf%c3%a9)/ 20240102030405 {"url": "http://caf\\u00e9.fr/\\ud83d\\ude00", "mime": "text/html", "note": "a\\"b\\\\c\\nd\\u0001"}',
  );
  assert.match(line, /^[\x20-\x7e]+$/);
  const p = parseCdxjLine('com,example)/ 20240102030405 {"url":"http://example.com/","mime":"text/html","status":"200","digest":"X","length":"10","offset":"0","filename":"a.warc.gz"}');
  assert.deepEqual(p, {
    urlkey: 'com,example)/',
    timestamp: '20240102030405',
    url: 'http://example.com/',
    mime: 'text/html',
    status: 200,
    digest: 'X',
    length: 10,
    offset: 0,
    filename: 'a.warc.gz',
  });
  assert.equal(parseCdxjLine('garbage'), null);
  assert.equal(parseCdxjLine('a b {"offset": "1"}'), null);
});

// ---------------------------------------------------------------------------
// A small crawl written with WarcWriter

interface Fixture {
  dir: string;
  files: string[];
  results: Record<string, WriteResult>;
  bodies: Record<string, Uint8Array>;
  inputs: Record<string, ExchangeInput>;
  indexed: string[];
}

function page(text: string, size = 2500): Uint8Array {
  let s = `<!doctype html><title>${text}</title>`;
  let i = 0;
  while (s.length < size) s += `<p>${text} paragraph ${i++} caf\u00e9</p>\n`;
  return Buffer.from(s);
}

function ex(url: string, date: string, body: Uint8Array, extra: Partial<ExchangeInput> = {}): ExchangeInput {
  return {
    url,
    date: new Date(date),
    ip: '127.0.0.1',
    requestHeaders: [['User-Agent', 'ubicrawl-test/1.0']],
    status: 200,
    responseHeaders: [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Set-Cookie', 'a=1'],
      ['Set-Cookie', 'b=2'],
    ],
    body,
    ...extra,
  };
}

async function writeFixture(dir: string, maxFileBytes = 7000, opts: { collect?: boolean; worker?: boolean; given?: string[] } = {}): Promise<Fixture> {
  const closed: string[] = [];
  const indexing: Promise<string>[] = [];
  const w = await WarcWriter.open({
    dir,
    agentShortId: 'agentA',
    digest: 'sha256',
    worker: opts.worker ?? false,
    fsync: false,
    maxFileBytes,
    collectCdxj: opts.collect ?? false,
    // The wiring the lead uses: index each file as it completes (with the writer's lines when it collects them).
    onFileClosed: (p, lines) => {
      closed.push(p);
      if (lines) opts.given?.push(p);
      indexing.push(indexWarcFile(p, lines));
    },
  });
  const bodies: Record<string, Uint8Array> = {
    home1: page('home one'),
    home2: page('home two'),
    json: Buffer.from(JSON.stringify({ ok: true, items: [1, 2, 3], text: 'caf\u00e9' })),
    missing: Buffer.from('not found\n'),
    png: randomBytes(3000),
    idn: page('b\u00fccher'),
  };
  const inputs: Record<string, ExchangeInput> = {
    home1: ex('http://example.com/', '2024-01-02T03:04:05.678Z', bodies.home1),
    json: ex('https://www.example.com/api?b=2&a=1', '2024-01-02T03:04:06Z', bodies.json, {
      responseHeaders: [
        ['Content-Type', 'application/json'],
        ['Content-Encoding', 'gzip'],
        ['Content-Length', '40'],
      ],
    }),
    missing: ex('http://example.com/missing', '2024-01-02T03:04:07Z', bodies.missing, {
      status: 404,
      statusText: 'Not Found',
      responseHeaders: [['Content-Type', 'text/plain']],
    }),
    png: ex('http://img.example.org/x.png', '2024-01-02T03:04:08Z', bodies.png, {
      responseHeaders: [['Content-Type', 'image/png']],
    }),
    idn: ex('http://xn--bcher-kva.ch/caf%C3%A9?q=%E2%9C%93', '2024-01-02T03:04:09Z', bodies.idn),
    home2: ex('http://example.com/', '2024-02-01T00:00:00Z', bodies.home2),
  };
  const results: Record<string, WriteResult> = {};
  for (const k of ['home1', 'json', 'missing', 'png', 'idn', 'home2']) results[k] = await w.writeExchange(inputs[k]);
  // identical-payload-digest revisit of home1 under another URL (the crawl's dedup).
  results.copy = await w.writeRevisit({
    url: 'http://example.com/copy',
    date: new Date('2024-02-02T00:00:00Z'),
    refersToUri: inputs.home1.url,
    refersToDate: inputs.home1.date,
    refersToRecordId: results.home1.recordId,
    payloadDigest: results.home1.payloadDigest,
    status: 200,
    responseHeaders: [['Content-Type', 'text/html; charset=utf-8'], ['X-Copy', 'yes']],
    profile: 'identical-payload-digest',
    payloadLength: bodies.home1.length,
  });
  // server-not-modified revisit of home2: the newest capture of http://example.com/.
  results.home3 = await w.writeRevisit({
    url: 'http://example.com/',
    date: new Date('2024-03-01T00:00:00Z'),
    refersToUri: inputs.home2.url,
    refersToDate: inputs.home2.date,
    payloadDigest: results.home2.payloadDigest,
    status: 304,
    responseHeaders: [['ETag', '"v2"']],
    profile: 'server-not-modified',
  });
  // A near-duplicate note: application/warc-fields metadata, not indexed.
  results.note = await w.writeMetadata('http://example.com/near', new Date('2024-03-02T00:00:00Z'), {
    'near-duplicate-of': 'http://example.com/',
  });
  await w.close();
  const indexed = await Promise.all(indexing);
  return { dir, files: closed, results, bodies, inputs, indexed };
}

const LINE_RE = /^(\S+) (\d{14}) (\{.*\})$/;
const KEYS = ['url', 'mime', 'status', 'digest', 'length', 'offset', 'filename'];

async function allLines(fx: Fixture): Promise<string[]> {
  const out: string[] = [];
  for (const p of fx.indexed) {
    const text = await readFile(p, 'utf8');
    assert.ok(text === '' || text.endsWith('\n'));
    out.push(...text.split('\n').filter(Boolean));
  }
  return out;
}

test('CDXJ index (pywb/cdxj-indexer format): written next to each WARC as files close; one sorted line per response/revisit', async () => {
  const fx = await writeFixture(tempDir());
  assert.ok(fx.files.length >= 3, `rotation gave ${fx.files.length} files`);
  assert.deepEqual(fx.indexed, fx.files.map((f) => f + '.cdxj'));
  const lines = await allLines(fx);
  // 6 responses + 2 revisits; no request, warcinfo or warc-fields metadata line.
  assert.equal(lines.length, 8);
  for (const p of fx.indexed) {
    const own = (await readFile(p, 'utf8')).split('\n').filter(Boolean);
    assert.deepEqual(own, [...own].sort(), `${p} is sorted`);
    for (let i = 1; i < own.length; i++) assert.ok(Buffer.compare(Buffer.from(own[i - 1]), Buffer.from(own[i])) <= 0);
  }
  const byUrlTs = new Map<string, Record<string, string>>();
  for (const line of lines) {
    const m = LINE_RE.exec(line);
    assert.ok(m, line);
    assert.match(line, /^[\x20-\x7e]+$/);
    const j = JSON.parse(m[3]) as Record<string, string>;
    // Key order and presence as cdxj-indexer writes them; every value a string.
    assert.deepEqual(Object.keys(j), KEYS.filter((k) => k in j));
    for (const k of ['url', 'digest', 'length', 'offset', 'filename']) assert.equal(typeof j[k], 'string', k);
    assert.equal(m[1], surt(j.url));
    assert.match(m[3], /^\{"url": "/); // Python separators
    byUrlTs.set(`${j.url} ${m[2]}`, j);
  }
  const check = (key: string, url: string, ts: string, mime: string, status: string) => {
    const r = fx.results[key];
    const j = byUrlTs.get(`${url} ${ts}`);
    assert.ok(j, `${key}: ${url} ${ts}`);
    assert.equal(j.mime, mime, key);
    assert.equal(j.status, status, key);
    // cdxj-indexer copies WARC-Payload-Digest, label included.
    assert.equal(j.digest, r.payloadDigest, key);
    assert.equal(j.offset, String(r.offset), key);
    assert.equal(j.length, String(r.length), key);
    assert.equal(j.filename, r.filename, key);
  };
  check('home1', 'http://example.com/', '20240102030405', 'text/html', '200');
  check('json', 'https://www.example.com/api?b=2&a=1', '20240102030406', 'application/json', '200');
  check('missing', 'http://example.com/missing', '20240102030407', 'text/plain', '404');
  check('png', 'http://img.example.org/x.png', '20240102030408', 'image/png', '200');
  check('home2', 'http://example.com/', '20240201000000', 'text/html', '200');
  check('copy', 'http://example.com/copy', '20240202000000', 'warc/revisit', '200');
  check('home3', 'http://example.com/', '20240301000000', 'warc/revisit', '304');
  // The revisit's digest is the original's: pywb resolves the payload through it.
  assert.equal(byUrlTs.get('http://example.com/copy 20240202000000')!.digest, byUrlTs.get('http://example.com/ 20240102030405')!.digest);
  // The line is exactly what cdxj-indexer writes for this record.
  const r = fx.results.missing;
  assert.ok(
    lines.includes(
      `com,example)/missing 20240102030407 {"url": "http://example.com/missing", "mime": "text/plain", "status": "404", ` +
        `"digest": "${r.payloadDigest}", "length": "${r.length}", "offset": "${r.offset}", "filename": "${r.filename}"}`,
    ),
  );
});

test('RFC 1952 §2.2, one member per record: every CDXJ offset/length reads back one gzip member holding the record of that URL', async () => {
  const fx = await writeFixture(tempDir());
  for (const line of await allLines(fx)) {
    const c = parseCdxjLine(line)!;
    const file = await readFile(join(fx.dir, c.filename));
    const member = file.subarray(c.offset, c.offset + c.length);
    // One whole gzip member: gunzip takes exactly these bytes, and warcio parses one record.
    const parser = new WARCParser(new AsyncIterReader([gunzipSync(member)], null));
    const rec = await parser.parse();
    assert.ok(rec);
    assert.equal(rec.warcTargetURI, c.url);
    assert.equal(rec.warcType, c.mime === 'warc/revisit' ? 'revisit' : 'response');
    assert.equal(await parser.parse(), null, 'one record per member');
    const again = await readRecordAt(join(fx.dir, c.filename), c.offset, c.length);
    assert.equal(again!.headers['WARC-Target-URI'], c.url);
  }
});

test('CDXJ index agrees with warcio.js CDXIndexer on offsets, lengths, digests, mime and status', async () => {
  const fx = await writeFixture(tempDir());
  const ours = (await allLines(fx)).map((l) => parseCdxjLine(l)!);
  const theirs: Array<Record<string, unknown>> = [];
  for (const f of fx.files) {
    const indexer = new CDXIndexer({ format: 'cdxj' } as never);
    for await (const r of indexer.iterIndex([{ filename: f.slice(fx.dir.length + 1), reader: createReadStream(f) }])) {
      theirs.push(r as Record<string, unknown>);
    }
  }
  assert.equal(theirs.length, ours.length);
  for (const t of theirs) {
    const o = ours.find((c) => c.filename === t.filename && c.offset === Number(t.offset));
    assert.ok(o, `warcio line at ${String(t.filename)}:${String(t.offset)}`);
    assert.equal(o.length, Number(t.length));
    assert.equal(o.url, t.url);
    // warcio.js's CDXIndexer drops the `algo:` label that cdxj-indexer (and we) keep.
    assert.equal(o.digest, `sha256:${String(t.digest)}`);
    assert.equal(o.mime, t.mime);
    assert.equal(o.status, Number(t.status));
    assert.equal(o.timestamp, t.timestamp);
  }
});

test('lookup: the stored response is the very bytes written, with status and headers as stored', async () => {
  const fx = await writeFixture(tempDir());
  for (const k of ['json', 'missing', 'png', 'idn']) {
    const r = await getStoredResponse(fx.dir, fx.inputs[k].url);
    assert.ok(r, k);
    assert.equal(Buffer.compare(Buffer.from(r.payload), Buffer.from(fx.bodies[k])), 0, `${k} payload`);
    assert.equal(r.status, fx.inputs[k].status);
    assert.equal(r.url, fx.inputs[k].url);
    assert.equal(r.type, 'response');
    assert.equal(r.filename, fx.results[k].filename);
    assert.equal(r.offset, fx.results[k].offset);
    assert.equal(r.length, fx.results[k].length);
  }
  const json = (await getStoredResponse(fx.dir, 'https://www.example.com/api?b=2&a=1'))!;
  // Decoded body: Content-Encoding was renamed and Content-Length fixed (docs/warc.md).
  assert.deepEqual(
    json.headers.filter(([k]) => /content-/i.test(k)),
    [
      ['Content-Type', 'application/json'],
      ['X-Crawler-Content-Encoding', 'gzip'],
      ['X-Crawler-Content-Length', '40'],
      ['Content-Length', String(fx.bodies.json.length)],
    ],
  );
  const missing = (await getStoredResponse(fx.dir, 'http://example.com/missing'))!;
  assert.equal(missing.statusLine, 'HTTP/1.1 404 Not Found');
  const home1 = (await getStoredResponse(fx.dir, 'http://example.com/', { timestamp: '20240102' }))!;
  assert.deepEqual(home1.headers.filter(([k]) => k === 'Set-Cookie'), [['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2']]);
  // The same page under an equivalent URL (same SURT key) is found too.
  const viaKey = (await getStoredResponse(fx.dir, 'http://EXAMPLE.com/missing/'))!;
  assert.equal(viaKey.url, 'http://example.com/missing');
  assert.equal(await getStoredResponse(fx.dir, 'http://example.com/never'), null);
  assert.equal(await getStoredResponse(join(fx.dir, 'nope'), 'http://example.com/'), null);
});

test('lookup: captures listed oldest first; a timestamp picks the nearest; WARC/1.1 §6.7 revisits resolve to the original payload', async () => {
  const fx = await writeFixture(tempDir());
  const caps = await lookupUrl(fx.dir, 'http://example.com/');
  assert.deepEqual(
    caps.map((c) => [c.timestamp, c.mime, c.status]),
    [
      ['20240102030405', 'text/html', 200],
      ['20240201000000', 'text/html', 200],
      ['20240301000000', 'warc/revisit', 304],
    ],
  );
  assert.equal(caps[0].filename, fx.results.home1.filename);
  assert.equal(caps[0].offset, fx.results.home1.offset);
  assert.equal(caps[0].digest, fx.results.home1.payloadDigest);

  const at1 = (await getStoredResponse(fx.dir, 'http://example.com/', { timestamp: '2024010203' }))!;
  assert.deepEqual(Buffer.from(at1.payload), Buffer.from(fx.bodies.home1));
  const at2 = (await getStoredResponse(fx.dir, 'http://example.com/', { timestamp: new Date('2024-02-03T00:00:00Z') }))!;
  assert.deepEqual(Buffer.from(at2.payload), Buffer.from(fx.bodies.home2));
  // Newest: the 304 revisit; payload from home2, status and headers the revisit's own.
  const newest = (await getStoredResponse(fx.dir, 'http://example.com/'))!;
  assert.equal(newest.type, 'revisit');
  assert.equal(newest.status, 304);
  assert.deepEqual(Buffer.from(newest.payload), Buffer.from(fx.bodies.home2));
  assert.equal(newest.payloadFrom!.offset, fx.results.home2.offset);
  // identical-payload-digest revisit under another URL: found through Refers-To.
  const copy = (await getStoredResponse(fx.dir, 'http://example.com/copy'))!;
  assert.equal(copy.type, 'revisit');
  assert.equal(copy.status, 200);
  assert.deepEqual(copy.headers.find(([k]) => k === 'X-Copy'), ['X-Copy', 'yes']);
  assert.deepEqual(Buffer.from(copy.payload), Buffer.from(fx.bodies.home1));
  assert.deepEqual(copy.payloadFrom, {
    url: 'http://example.com/',
    timestamp: '20240102030405',
    filename: fx.results.home1.filename,
    offset: fx.results.home1.offset,
    length: fx.results.home1.length,
  });
});

function sink(): { stream: PassThrough; bytes: () => Buffer; text: () => string } {
  const stream = new PassThrough();
  const parts: Buffer[] = [];
  stream.on('data', (d: Buffer) => parts.push(d));
  return { stream, bytes: () => Buffer.concat(parts), text: () => Buffer.concat(parts).toString('utf8') };
}

test('ubicrawl warc get: payload bytes to stdout or a file, curl -i style headers, exit codes', async () => {
  const fx = await writeFixture(tempDir());
  const out = sink();
  const err = sink();
  const io = { stdout: out.stream, stderr: err.stream };
  assert.equal(await runWarcGetCommand('http://img.example.org/x.png', { dir: fx.dir }, io), 0);
  assert.deepEqual(out.bytes(), Buffer.from(fx.bodies.png));

  const file = join(fx.dir, 'out.bin');
  assert.equal(await runWarcGetCommand('http://xn--bcher-kva.ch/caf%C3%A9?q=%E2%9C%93', { dir: fx.dir, out: file }, io), 0);
  assert.deepEqual(await readFile(file), Buffer.from(fx.bodies.idn));

  const h = sink();
  assert.equal(await runWarcGetCommand('http://example.com/missing', { dir: fx.dir, headers: true }, { stdout: h.stream, stderr: err.stream }), 0);
  assert.equal(h.text(), 'HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nnot found\n');

  const t = sink();
  assert.equal(await runWarcGetCommand('http://example.com/', { dir: fx.dir, timestamp: '20240102' }, { stdout: t.stream, stderr: err.stream }), 0);
  assert.deepEqual(t.bytes(), Buffer.from(fx.bodies.home1));

  assert.equal(await runWarcGetCommand('http://example.com/never', { dir: fx.dir }, io), 1);
  assert.match(err.text(), /no capture/);
  assert.equal(await runWarcGetCommand('http://example.com/', { dir: join(fx.dir, 'nope') }, io), 2);
});

test('ubicrawl index: rebuilding is idempotent and equals what the close hook wrote', async () => {
  const fx = await writeFixture(tempDir());
  const before = await Promise.all(fx.indexed.map((p) => readFile(p)));
  const out = sink();
  const err = sink();
  assert.equal(await runIndexCommand(fx.files, { stdout: out.stream, stderr: err.stream }), 0);
  const after1 = await Promise.all(fx.indexed.map((p) => readFile(p)));
  assert.equal(await runIndexCommand([fx.dir], { stdout: out.stream, stderr: err.stream }), 0);
  const after2 = await Promise.all(fx.indexed.map((p) => readFile(p)));
  assert.deepEqual(after1, before);
  assert.deepEqual(after2, before);
  assert.equal(err.text(), '');
  assert.match(out.text(), /\.warc\.gz\.cdxj: \d+ captures from \d+ records\n/);
  // No temporary files are left behind.
  assert.deepEqual((await readdir(fx.dir)).filter((n) => n.includes('.tmp-')), []);
  assert.equal(await runIndexCommand([], { stdout: out.stream, stderr: err.stream }), 2);
  assert.equal(await runIndexCommand([join(fx.dir, 'none.warc.gz')], { stdout: out.stream, stderr: err.stream }), 1);
});

test('CDXJ lines collected by the writer as it appends (collectCdxj) are byte-equal to reading the closed file back', async () => {
  for (const worker of [false, true]) {
    for (const maxFileBytes of [7000, 1 << 30]) {
      const given: string[] = [];
      const fx = await writeFixture(tempDir(), maxFileBytes, { collect: true, worker, given });
      assert.deepEqual(given, fx.files, 'every file closed with its lines');
      assert.ok(fx.files.length >= (maxFileBytes === 7000 ? 3 : 1));
      for (const f of fx.files) {
        const built = await buildCdxj(f);
        const text = await readFile(f + '.cdxj', 'utf8');
        assert.equal(text, built.lines.length ? built.lines.join('\n') + '\n' : '', `${f} (worker ${worker})`);
      }
      assert.equal((await allLines(fx)).length, 8);
    }
  }
});

test('a truncated .open file: whole records indexed and found, the cut one not; `index` skips .open files', async () => {
  const dir = tempDir();
  const src = tempDir();
  const fx = await writeFixture(src, 1 << 30); // one file
  assert.equal(fx.files.length, 1);
  const name = fx.results.home1.filename;
  const open = join(dir, name + '.open');
  await copyFile(fx.files[0], open);
  // Cut inside the png response: home1, json and missing stay whole.
  const cut = fx.results.png.offset + Math.floor(fx.results.png.length / 2);
  await truncate(open, cut);

  const built = await buildCdxj(open);
  assert.equal(built.problem, 'truncated');
  const urls = built.lines.map((l) => parseCdxjLine(l)!);
  assert.deepEqual(urls.map((c) => c.url).sort(), ['http://example.com/', 'http://example.com/missing', 'https://www.example.com/api?b=2&a=1']);
  for (const c of urls) {
    assert.equal(c.filename, name + '.open');
    assert.ok(c.offset + c.length <= cut);
    assert.ok(await readRecordAt(open, c.offset, c.length));
  }
  // Lookup indexes the open file in memory.
  const r = (await getStoredResponse(dir, 'http://example.com/missing'))!;
  assert.deepEqual(Buffer.from(r.payload), Buffer.from(fx.bodies.missing));
  assert.equal(r.filename, name + '.open');
  assert.equal(await getStoredResponse(dir, 'http://img.example.org/x.png'), null);
  // The record at the cut reads as null, not as a partial record.
  assert.equal(await readRecordAt(open, fx.results.png.offset, fx.results.png.length), null);

  const out = sink();
  const err = sink();
  assert.equal(await runIndexCommand([dir], { stdout: out.stream, stderr: err.stream }), 0);
  assert.match(err.text(), /skipped, still open/);
  assert.deepEqual((await readdir(dir)).sort(), [name + '.open']);

  // The same damage in a finished file: indexed up to the cut, reported, exit code 1.
  const done = join(dir, name);
  await copyFile(open, done);
  const err2 = sink();
  assert.equal(await runIndexCommand([done], { stdout: out.stream, stderr: err2.stream }), 1);
  assert.match(err2.text(), /truncated data at offset/);
  assert.equal((await readFile(done + '.cdxj', 'utf8')).trim().split('\n').length, 3);
});

test('lookup: a WARC without an index, or with one older than the file, is indexed in memory', async () => {
  const fx = await writeFixture(tempDir(), 1 << 30);
  const warc = fx.files[0];
  // Stale index: empty and older than the WARC.
  await writeFile(warc + '.cdxj', '');
  const old = new Date(Date.now() - 60_000);
  await utimes(warc + '.cdxj', old, old);
  const r = (await getStoredResponse(fx.dir, 'http://img.example.org/x.png'))!;
  assert.deepEqual(Buffer.from(r.payload), Buffer.from(fx.bodies.png));
  // Fresh but empty index: trusted, so nothing is found.
  const now = new Date(Date.now() + 60_000);
  await utimes(warc + '.cdxj', now, now);
  assert.equal(await getStoredResponse(fx.dir, 'http://img.example.org/x.png'), null);
  // No index at all.
  await (await import('node:fs/promises')).unlink(warc + '.cdxj');
  assert.equal((await lookupUrl(fx.dir, 'http://example.com/')).length, 3);
});

test('an uncompressed .warc is indexed and read back the same way', async () => {
  const fx = await writeFixture(tempDir(), 1 << 30);
  const dir = tempDir();
  const plain = join(dir, 'plain.warc');
  await writeFile(plain, gunzipSync(await readFile(fx.files[0])));
  const idx = await indexWarcFile(plain);
  const lines = (await readFile(idx, 'utf8')).trim().split('\n');
  assert.equal(lines.length, 8);
  const r = (await getStoredResponse(dir, 'http://img.example.org/x.png'))!;
  assert.deepEqual(Buffer.from(r.payload), Buffer.from(fx.bodies.png));
  assert.equal(r.filename, 'plain.warc');
});

test('lookup: on-disk binary search over a large index finds exactly what a linear scan finds', async () => {
  const dir = tempDir();
  const warcName = 'big.warc.gz';
  await writeFile(join(dir, warcName), '');
  const old = new Date(Date.now() - 60_000);
  await utimes(join(dir, warcName), old, old);
  // Keys that share prefixes: /p, /p/x, /p?q, /p0 … and many hosts.
  const lines: string[] = [];
  let off = 0;
  for (let h = 0; h < 1200; h++) {
    for (const path of ['', 'p', 'p/x', 'p?q=1', 'p0', 'q' + 'z'.repeat(h % 7)]) {
      const url = `http://h${h}.example/${path}`;
      for (const ts of ['20240101000000', '20240102000000']) {
        lines.push(
          formatCdxjLine(surt(url), ts, [
            ['url', url],
            ['mime', 'text/html'],
            ['status', '200'],
            ['digest', 'D'.repeat(52)],
            ['length', '100'],
            ['offset', String((off += 100))],
            ['filename', warcName],
          ]),
        );
      }
    }
  }
  // Long lines too (a long URL), so probes land inside them.
  const longUrl = `http://h200.example/${'l'.repeat(20000)}`;
  lines.push(formatCdxjLine(surt(longUrl), '20240101000000', [['url', longUrl], ['length', '1'], ['offset', '1'], ['filename', warcName]]));
  lines.sort();
  await writeFile(join(dir, warcName + '.cdxj'), lines.join('\n') + '\n');
  assert.ok((await stat(join(dir, warcName + '.cdxj'))).size > SMALL_INDEX_BYTES * 2);
  const probe = async (url: string) => {
    const key = surt(url) + ' ';
    const expect = lines.filter((l) => l.startsWith(key)).map((l) => parseCdxjLine(l)!.offset);
    const got = (await lookupUrl(dir, url)).map((c) => c.offset);
    assert.deepEqual(got.sort((a, b) => a - b), expect.sort((a, b) => a - b), url);
    return got.length;
  };
  assert.equal(await probe('http://h0.example/'), 2);
  assert.equal(await probe('http://h1199.example/qzz'), 2);
  assert.equal(await probe('http://h57.example/p'), 2);
  assert.equal(await probe('http://h57.example/p/x'), 2);
  assert.equal(await probe('http://h57.example/p?q=1'), 2);
  assert.equal(await probe(longUrl), 1);
  for (const absent of ['http://a.example/', 'http://zzz.example/', 'http://h57.example/o', 'http://h57.example/p/', 'http://h57.example/p/y']) {
    if (absent === 'http://h57.example/p/') assert.equal(await probe(absent), 2); // same key as /p
    else assert.equal(await probe(absent), 0);
  }
  for (let i = 0; i < 40; i++) {
    const h = (i * 37) % 1200;
    await probe(`http://h${h}.example/${['', 'p', 'p/x', 'p0'][i % 4]}`);
  }
});

// Records as other tools write them, each gzipped as its own member (RFC 1952 §2.2),
// plus one member holding two records.
function rawRecord(fields: Array<[string, string]>, block: string | Buffer): Buffer {
  const b = Buffer.isBuffer(block) ? block : Buffer.from(block);
  const head = ['WARC/1.0', ...fields.map(([k, v]) => `${k}: ${v}`), `Content-Length: ${b.length}`].join('\r\n');
  return Buffer.concat([Buffer.from(head + '\r\n\r\n'), b, Buffer.from('\r\n\r\n')]);
}

test('WARC/1.1 §4 framing from other writers: resource records, missing digests, <uri>, folded fields, two records in a member', async () => {
  const { gzipSync } = await import('node:zlib');
  const { createHash } = await import('node:crypto');
  const { base32 } = await import('../src/warc/digest.js');
  const { readWarc } = await import('../src/warc/reader.js');
  const { cdxjLineFor } = await import('../src/warc/cdxj.js');
  const dir = tempDir();
  const body = 'hello world\n';
  const http = `HTTP/1.0 200 OK\r\nContent-Type: text/plain;charset=ascii\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const members = [
    rawRecord([['WARC-Type', 'warcinfo'], ['WARC-Date', '2020-05-06T07:08:09Z'], ['Content-Type', 'application/warc-fields']], 'software: x\r\n'),
    // No WARC-Payload-Digest; target URI in angle brackets (WARC/1.0 drafts).
    rawRecord(
      [['WARC-Type', 'response'], ['WARC-Target-URI', '<http://Example.org/a/>'], ['WARC-Date', '2020-05-06T07:08:09Z'], ['Content-Type', 'application/http; msgtype=response']],
      http,
    ),
    // A resource (no HTTP part), with a folded Content-Type.
    rawRecord(
      [['WARC-Type', 'resource'], ['WARC-Target-URI', 'urn:x-test:thing'], ['WARC-Date', '2020-05-06T07:08:10Z'], ['Content-Type', 'image/gif;\r\n  name=x'], ['WARC-Payload-Digest', 'sha1:ABCDEFGH']],
      'GIF89a',
    ),
    rawRecord([['WARC-Type', 'metadata'], ['WARC-Target-URI', 'http://example.org/a/'], ['WARC-Date', '2020-05-06T07:08:11Z'], ['Content-Type', 'application/warc-fields']], 'via: x\r\n'),
    rawRecord([['WARC-Type', 'request'], ['WARC-Target-URI', 'http://example.org/a/'], ['WARC-Date', '2020-05-06T07:08:09Z'], ['Content-Type', 'application/http; msgtype=request']], 'GET /a/ HTTP/1.0\r\n\r\n'),
  ].map((m) => gzipSync(m));
  const pair = gzipSync(
    Buffer.concat([
      rawRecord([['WARC-Type', 'resource'], ['WARC-Target-URI', 'http://example.org/r1'], ['WARC-Date', '2020-05-06T07:08:12Z'], ['Content-Type', 'text/plain']], 'one'),
      rawRecord([['WARC-Type', 'resource'], ['WARC-Target-URI', 'http://example.org/r2'], ['WARC-Date', '2020-05-06T07:08:13Z'], ['Content-Type', 'text/plain']], 'two'),
    ]),
  );
  const path = join(dir, 'other.warc.gz');
  await writeFile(path, Buffer.concat([...members, pair]));
  const built = await buildCdxj(path);
  assert.equal(built.problem, null);
  // The lean reader and the warcio-based one give the same lines.
  const viaWarcio: string[] = [];
  for await (const e of readWarc(path)) {
    const l = cdxjLineFor(e, 'other.warc.gz').line;
    if (l) viaWarcio.push(l);
  }
  assert.deepEqual(built.lines, viaWarcio.sort());
  const caps = built.lines.map((l) => parseCdxjLine(l)!);
  assert.deepEqual(caps.map((c) => c.url), ['http://Example.org/a/', 'http://example.org/r1', 'http://example.org/r2', 'urn:x-test:thing']);
  assert.equal(caps[0].urlkey, 'org,example)/a');
  assert.equal(caps[0].mime, 'text/plain');
  assert.equal(caps[0].status, 200);
  // A missing digest is computed over the payload, as cdxj-indexer does (sha1, base32).
  assert.equal(caps[0].digest, 'sha1:' + base32(createHash('sha1').update(body).digest()));
  assert.equal(caps[3].mime, 'image/gif');
  assert.equal(caps[3].status, null);
  assert.equal(caps[3].digest, 'sha1:ABCDEFGH');
  assert.ok(!built.lines[3].includes('"status"'));
  // Both records of the shared member point at it; a lookup serves the first one.
  assert.equal(caps[1].offset, caps[2].offset);
  const r = (await getStoredResponse(dir, 'http://example.org/a/'))!;
  assert.equal(Buffer.from(r.payload).toString(), body);
  assert.equal((await getStoredResponse(dir, 'http://example.org/r1'))!.status, 200);
  assert.equal(await getStoredResponse(dir, 'http://example.org/r2'), null);

  // A member that is not a WARC record is skipped and reported; the rest is indexed.
  const bad = join(dir, 'bad.warc.gz');
  await writeFile(bad, Buffer.concat([members[1], gzipSync('not a warc record'), members[2]]));
  const b = await buildCdxj(bad);
  assert.equal(b.problem, 'corrupt');
  assert.equal(b.lines.length, 2);
});

test('metadata records of warc-fields: the encoder gives them no CDXJ line without reading them back, as reading them back gives', async () => {
  const cases: MetadataInput[] = [
    { url: 'http://example.com/a', date: new Date('2024-01-01T00:00:00Z'), fields: [['outlink', 'http://example.com/b L a/@href'], ['outlink', 'http://example.com/c L a/@href']], concurrentTo: '<urn:uuid:00000000-0000-4000-8000-000000000000>', protocols: ['http/1.1'] },
    { url: 'https://example.org/near?q=1', date: new Date('2024-01-02T00:00:00.123Z'), fields: { 'near-duplicate-of': 'https://example.org/' } },
    { url: 'http://example.net/', date: new Date('2024-01-03T00:00:00Z'), fields: [] },
  ];
  for (const md of cases) {
    const enc = await encodeMetadata(md, 3);
    assert.deepEqual(enc.cdxj, [null]);
    assert.equal(cdxjLineHead(gunzipSync(enc.bytes), enc.sizes[0]!), null, md.url);
  }
});
