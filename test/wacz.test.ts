// WACZ 1.1.1 (docs/warc.md "WACZ"): structural validation with a small ZIP reader
// written here from APPNOTE (and `unzip -t` when installed): every entry stored,
// every resource of datapackage.json present with its sha256 and size, the digest
// file names datapackage.json's hash, pages.jsonl has its header line, the index
// points at records inside the archived WARCs; the WARCs read back with warcio.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { WarcWriter } from '../src/warc/writer.js';
import { writeWacz } from '../src/wacz/wacz.js';
import { crc32, crc32Table } from '../src/util/crc32.js';
import { parseCdxjLine } from '../src/warc/cdxj.js';
import { tempDir } from './helpers.js';
import { warcioRecordsVerified } from './warcio-verify.js';

interface ZipEntry { name: string; method: number; crc: number; size: number; data: Buffer }

/** Reads a ZIP through its central directory (APPNOTE §4.3.12, §4.3.16, ZIP64 §4.3.14/§4.5.3). */
function readZip(buf: Buffer): ZipEntry[] {
  let eocd = buf.length - 22;
  while (eocd >= 0 && buf.readUInt32LE(eocd) !== 0x06054b50) eocd--;
  assert.ok(eocd >= 0, 'end of central directory record');
  let n = buf.readUInt16LE(eocd + 10);
  let cdOffset = buf.readUInt32LE(eocd + 16);
  if (cdOffset === 0xffffffff || n === 0xffff) {
    const loc = eocd - 20;
    assert.equal(buf.readUInt32LE(loc), 0x07064b50, 'ZIP64 locator');
    const z = Number(buf.readBigUInt64LE(loc + 8));
    assert.equal(buf.readUInt32LE(z), 0x06064b50, 'ZIP64 end record');
    n = Number(buf.readBigUInt64LE(z + 32));
    cdOffset = Number(buf.readBigUInt64LE(z + 48));
  }
  const out: ZipEntry[] = [];
  let p = cdOffset;
  for (let i = 0; i < n; i++) {
    assert.equal(buf.readUInt32LE(p), 0x02014b50, 'central directory header');
    const method = buf.readUInt16LE(p + 10);
    const crc = buf.readUInt32LE(p + 16);
    let size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28), extraLen = buf.readUInt16LE(p + 30), commentLen = buf.readUInt16LE(p + 32);
    let local = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    const extra = buf.subarray(p + 46 + nameLen, p + 46 + nameLen + extraLen);
    if (extra.length >= 4 && extra.readUInt16LE(0) === 1) {
      let q = 4;
      if (size === 0xffffffff) { size = Number(extra.readBigUInt64LE(q)); q += 16; }
      if (local === 0xffffffff) local = Number(extra.readBigUInt64LE(q));
    }
    assert.equal(buf.readUInt32LE(local), 0x04034b50, `${name}: local header`);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    out.push({ name, method, crc, size, data: buf.subarray(start, start + size) });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

async function agentDir(root: string, name: string, pages: Array<{ url: string; html: string }>): Promise<void> {
  const w = await WarcWriter.open({ dir: join(root, name, 'warc'), agentShortId: name, worker: false, fsync: false });
  let t = Date.parse('2024-03-04T05:06:07Z');
  for (const p of pages) {
    await w.writeExchange({ url: p.url, date: new Date(t += 1000), requestHeaders: [], status: 200, responseHeaders: [['content-type', 'text/html']], body: Buffer.from(p.html) });
  }
  await w.writeExchange({ url: `${pages[0]!.url}missing`, date: new Date(t += 1000), requestHeaders: [], status: 404, responseHeaders: [['content-type', 'text/plain']], body: Buffer.from('no') });
  await w.close();
}

test('crc32: native and table agree, incrementally', () => {
  const a = Buffer.from('The quick brown fox '), b = Buffer.from('jumps over the lazy dog');
  assert.equal(crc32Table(Buffer.concat([a, b])), 0x414fa339);
  assert.equal(crc32(b, crc32(a)), 0x414fa339);
  assert.equal(crc32Table(b, crc32Table(a)), 0x414fa339);
});

for (const forceZip64 of [false, true]) {
  test(`WACZ 1.1.1 from two agents' data dirs${forceZip64 ? ' (ZIP64 records forced)' : ''}: structure, hashes, index, pages`, async () => {
    const root = tempDir();
    await agentDir(root, 'a0', [{ url: 'http://a.test/', html: '<title>A</title><a href="/x">x</a>' }, { url: 'http://a.test/x', html: '<p>x</p>' }]);
    await agentDir(root, 'a1', [{ url: 'http://b.test/', html: '<title>B</title>' }]);
    const out = join(root, 'crawl.wacz');
    const r = await writeWacz([join(root, 'a0'), join(root, 'a1')], out, { forceZip64, title: 'test crawl' });
    assert.equal(r.warcs.length, 2);
    const zip = readFileSync(out);
    const entries = readZip(zip);
    const byName = new Map(entries.map((e) => [e.name, e]));
    for (const e of entries) {
      assert.equal(e.method, 0, `${e.name} is stored`);
      assert.equal(crc32(e.data), e.crc, `${e.name}: CRC-32`);
    }
    const dp = JSON.parse(byName.get('datapackage.json')!.data.toString('utf8'));
    assert.equal(dp.profile, 'data-package');
    assert.equal(dp.wacz_version, '1.1.1');
    assert.equal(dp.title, 'test crawl');
    assert.match(dp.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(dp.mainPageUrl, 'http://a.test/');
    const listed = new Set<string>();
    for (const res of dp.resources as Array<{ name: string; path: string; hash: string; bytes: number }>) {
      const e = byName.get(res.path);
      assert.ok(e, `${res.path} is in the ZIP`);
      assert.equal(res.bytes, e.data.length, `${res.path}: bytes`);
      assert.equal(res.hash, 'sha256:' + createHash('sha256').update(e.data).digest('hex'), `${res.path}: hash`);
      listed.add(res.path);
    }
    for (const e of entries) if (e.name !== 'datapackage.json' && e.name !== 'datapackage-digest.json') assert.ok(listed.has(e.name), `${e.name} listed in resources`);
    const digest = JSON.parse(byName.get('datapackage-digest.json')!.data.toString('utf8'));
    assert.deepEqual(digest, { path: 'datapackage.json', hash: 'sha256:' + createHash('sha256').update(byName.get('datapackage.json')!.data).digest('hex') });

    const archive = entries.filter((e) => e.name.startsWith('archive/'));
    assert.equal(archive.length, 2);
    for (const a of archive) assert.match(a.name, /^archive\/[^/]+\.warc\.gz$/);
    // Every index line points at a whole gzip member of an archived WARC, holding that URL's record.
    const index = byName.get('indexes/index.cdxj')!.data.toString('utf8').trimEnd().split('\n');
    assert.equal(index.length, 5, 'three pages and a 404 per agent');
    assert.deepEqual([...index].sort(), index, 'sorted');
    for (const l of index) {
      const c = parseCdxjLine(l)!;
      const warc = byName.get(`archive/${c.filename}`)!;
      const rec = gunzipSync(warc.data.subarray(c.offset, c.offset + c.length)).toString('latin1');
      assert.ok(rec.startsWith('WARC/1.1\r\n') && rec.includes(`WARC-Target-URI: ${c.url}\r\n`), l);
    }
    const pages = byName.get('pages/pages.jsonl')!.data.toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(pages[0], { format: 'json-pages-1.0', id: 'pages', title: 'All Pages' });
    assert.deepEqual(pages.slice(1).map((p) => [p.url, p.ts]), [
      ['http://a.test/', '2024-03-04T05:06:08Z'], ['http://b.test/', '2024-03-04T05:06:08Z'], ['http://a.test/x', '2024-03-04T05:06:09Z'],
    ]);
    for (const p of pages.slice(1)) assert.equal(typeof p.id, 'string');

    // The archived WARCs read back with warcio.js, digests verified.
    const x = join(root, 'x');
    mkdirSync(x);
    for (const a of archive) {
      const f = join(x, a.name.slice('archive/'.length));
      writeFileSync(f, a.data);
      assert.ok((await warcioRecordsVerified(f)).length >= 3);
    }
    // Info-ZIP's own check, where it is installed: every CRC and the directory structure.
    if (existsSync('/usr/bin/unzip')) execFileSync('/usr/bin/unzip', ['-tq', out], { stdio: 'pipe' });
  });
}
