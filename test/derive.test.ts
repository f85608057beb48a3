// WAT and WET derived from a WARC (docs/warc.md "WAT and WET"): read back with
// warcio.js, digests verified; the links and the text of a known page match it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { WarcWriter } from '../src/warc/writer.js';
import { deriveFile, derivedName } from '../src/derive/derive.js';
import { tempDir } from './helpers.js';
import { warcioRecordsVerified } from './warcio-verify.js';

const PAGE = `<!doctype html><html><head><title>A  known page</title>
<link rel="canonical" href="https://example.org/canonical-form"><link rel="stylesheet" href="/s.css">
</head><body><h1>Heading</h1><p>First paragraph with <b>bold</b> words &amp; an entity.</p>
<a href="/one" rel="nofollow">one</a> <a href="https://other.example/two">two</a>
<iframe src="frame.html"></iframe><script>var hidden = 1;</script><p>Last words.</p></body></html>`;

async function writeKnownWarc(dir: string): Promise<string> {
  const w = await WarcWriter.open({ dir, agentShortId: 'derive', worker: false, fsync: false });
  const body = gzipSync(Buffer.from(PAGE, 'utf8'));
  const head = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`, 'latin1');
  await w.writeExchange({
    url: 'https://example.org/known', date: new Date('2024-05-06T07:08:09.123Z'), ip: '127.0.0.1',
    requestHeaders: [['user-agent', 'ubicrawl/0.1']], status: 200, responseHeaders: [['content-type', 'text/html; charset=utf-8'], ['content-encoding', 'gzip']],
    body, wire: { responseHead: head, requestHead: Buffer.from('GET /known HTTP/1.1\r\nhost: example.org\r\n\r\n') },
  });
  await w.writeExchange({
    url: 'https://example.org/img', date: new Date('2024-05-06T07:08:10Z'), requestHeaders: [], status: 200,
    responseHeaders: [['content-type', 'image/png']], body: Buffer.from([0x89, 0x50, 0x4e, 0x47]),
  });
  await w.close();
  const files = (await import('node:fs')).readdirSync(dir).filter((f) => f.endsWith('.warc.gz'));
  assert.equal(files.length, 1);
  return join(dir, files[0]!);
}

test('WAT: one metadata record per WARC record, Envelope JSON with the known page\'s links and headers', async () => {
  const dir = tempDir();
  const warc = await writeKnownWarc(dir);
  const source = await warcioRecordsVerified(warc);
  const r = await deriveFile(warc, 'wat', { outDir: dir });
  assert.equal(r.output, join(dir, derivedName(warc, 'wat')));
  assert.match(r.output, /\.warc\.wat\.gz$/);
  const recs = await warcioRecordsVerified(r.output);
  assert.equal(recs[0]!.type, 'warcinfo');
  const md = recs.slice(1);
  assert.equal(md.length, source.length, 'one WAT record per WARC record');
  for (let i = 0; i < md.length; i++) {
    assert.equal(md[i]!.type, 'metadata');
    assert.equal(md[i]!.headers['Content-Type'], 'application/json');
    assert.equal(md[i]!.headers['WARC-Refers-To'], source[i]!.headers['WARC-Record-ID']);
  }
  const resp = md.find((m) => m.headers['WARC-Target-URI'] === 'https://example.org/known' && JSON.parse(m.block.toString()).Envelope['WARC-Header-Metadata']['WARC-Type'] === 'response')!;
  const json = JSON.parse(resp.block.toString('utf8'));
  assert.equal(json.Envelope.Format, 'WARC');
  assert.equal(json.Container.Compressed, true);
  assert.equal(json.Container.Filename, warc.split('/').pop());
  assert.equal(json.Envelope['WARC-Header-Metadata']['WARC-Type'], 'response');
  const http = json.Envelope['Payload-Metadata']['HTTP-Response-Metadata'];
  assert.deepEqual(http['Response-Message'], { Version: 'HTTP/1.1', Status: '200', Reason: 'OK' });
  assert.equal(http.Headers['Content-Encoding'], 'gzip');
  const html = http['HTML-Metadata'];
  assert.equal(html.Head.Title, 'A known page');
  assert.deepEqual(html.Head.Link, [
    { path: 'LINK@/href', url: 'https://example.org/canonical-form', rel: 'canonical' },
    { path: 'LINK@/href', url: 'https://example.org/s.css', rel: 'stylesheet' },
  ]);
  assert.deepEqual(html.Links, [
    { path: 'A@/href', url: 'https://example.org/one', rel: 'nofollow' },
    { path: 'A@/href', url: 'https://other.example/two' },
    { path: 'IFRAME@/src', url: 'https://example.org/frame.html' },
  ]);
  const img = md.find((m) => m.headers['WARC-Target-URI'] === 'https://example.org/img' && JSON.parse(m.block.toString()).Envelope['WARC-Header-Metadata']['WARC-Type'] === 'response')!;
  assert.equal(JSON.parse(img.block.toString()).Envelope['Payload-Metadata']['HTTP-Response-Metadata']['HTML-Metadata'], undefined);
});

test('WET: one conversion record per HTML response, text/plain, the page\'s visible text', async () => {
  const dir = tempDir();
  const warc = await writeKnownWarc(dir);
  const source = await warcioRecordsVerified(warc);
  const r = await deriveFile(warc, 'wet', { outDir: dir });
  const recs = await warcioRecordsVerified(r.output);
  assert.equal(recs[0]!.type, 'warcinfo');
  assert.equal(recs.length, 2, 'the image has no text record');
  const conv = recs[1]!;
  assert.equal(conv.type, 'conversion');
  assert.equal(conv.headers['Content-Type'], 'text/plain');
  assert.equal(conv.headers['WARC-Target-URI'], 'https://example.org/known');
  const response = source.find((s) => s.type === 'response' && s.headers['WARC-Target-URI'] === 'https://example.org/known')!;
  assert.equal(conv.headers['WARC-Refers-To'], response.headers['WARC-Record-ID']);
  assert.equal(conv.headers['WARC-Date'], response.headers['WARC-Date']);
  assert.equal(conv.block.toString('utf8'), 'A known page\nHeading First paragraph with bold words & an entity. one two Last words.');
});
