import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, writeFile, rm, stat } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { gunzipSync, gzipSync } from 'node:zlib';
import { createHash, randomBytes } from 'node:crypto';
import { WARCParser, CDXIndexer } from 'warcio';
import { WarcWriter, recoverWarcFile } from '../src/warc/writer.js';
import type { ExchangeInput, WriteResult } from '../src/warc/writer.js';
import { readWarc, verifyWarc } from '../src/warc/reader.js';
import type { WarcEntry } from '../src/warc/reader.js';
import { base32, unbase32, parseDigest, digestMatches } from '../src/warc/digest.js';
import { storedResponseHeaders, cleanHeaderValue, gzipMember } from '../src/warc/records.js';
import { gzipMembers } from '../src/warc/gzmembers.js';

const FILE_RE = /^ubicrawl-(\d{17})-(\d{5})-agentA\.warc\.gz$/;
const UUID_ID = /^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}>$/;
const SHA256_B32 = /^sha256:[A-Z2-7]{52}====$/;

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'ubicrawl-warc-'));
}

function html(i: number, size: number): Uint8Array {
  let s = `<!doctype html><html><head><title>Page ${i}</title></head><body>`;
  let x = i * 2654435761;
  while (s.length < size - 20) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += `<p>word${x % 997} text${(x >>> 10) % 131} <a href="/p/${x % 10007}">l</a></p>\n`;
  }
  return Buffer.from((s + '</body></html>').slice(0, size));
}

function exchange(i: number, size = 3000, extra: Partial<ExchangeInput> = {}): ExchangeInput {
  const body = html(i, size);
  return {
    url: `http://host${i % 7}.example/page/${i}?q=${i}`,
    date: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, i % 1000)),
    ip: '127.0.0.1',
    requestHeaders: [
      ['User-Agent', 'ubicrawl-test/1.0'],
      ['Accept-Encoding', 'gzip, br'],
    ],
    status: 200,
    responseHeaders: [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Content-Encoding', 'gzip'],
      ['Content-Length', String(Math.floor(size / 3))],
      ['Vary', 'Accept-Encoding'],
    ],
    body,
    ...extra,
  };
}

async function warcFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith('.warc.gz')).sort();
}

/** All records of a file through warcio alone (its own multi-member gzip reader). */
async function warcioRecords(path: string) {
  const parser = new WARCParser(createReadStream(path));
  const out: Array<{
    offset: number;
    length: number;
    version: string;
    headers: Map<string, string>;
    http: { statusline: string; get: (n: string) => string | null | undefined } | null;
    content: Uint8Array;
  }> = [];
  for await (const rec of parser) {
    const headers = new Map<string, string>();
    for (const [k, v] of rec.warcHeaders.headers) headers.set(k.toLowerCase(), v);
    const http = rec.httpHeaders
      ? { statusline: rec.httpHeaders.statusline, get: (n: string) => rec.httpHeaders!.headers.get(n) }
      : null;
    // readFully(true) applies Content-Encoding / Transfer-Encoding the way a replay tool would.
    const content = await rec.readFully(true);
    out.push({ offset: parser.offset, length: 0, version: rec.warcHeaders.statusline, headers, http, content });
    out[out.length - 1].length = parser.recordLength;
  }
  return out;
}

function sha256b32(b: Uint8Array): string {
  return 'sha256:' + base32(createHash('sha256').update(b).digest());
}

test('RFC 4648 §6 base32 and WARC/1.1 §5.8 labelled digests parse in every common encoding', () => {
  // RFC 4648 §10 test vectors.
  const vec: Array<[string, string]> = [
    ['', ''],
    ['f', 'MY======'],
    ['fo', 'MZXQ===='],
    ['foo', 'MZXW6==='],
    ['foob', 'MZXW6YQ='],
    ['fooba', 'MZXW6YTB'],
    ['foobar', 'MZXW6YTBOI======'],
  ];
  for (const [plain, enc] of vec) {
    assert.equal(base32(Buffer.from(plain)), enc);
    assert.equal(Buffer.from(unbase32(enc)!).toString(), plain);
  }
  const data = Buffer.from('hello world');
  const raw = createHash('sha1').update(data).digest();
  // jwarc's known value for sha1("hello world") in base32.
  assert.equal('sha1:' + base32(raw), 'sha1:FKXGYNOJJ7H3IFO35FPUBC445EPOQRXN');
  for (const label of [
    'sha1:FKXGYNOJJ7H3IFO35FPUBC445EPOQRXN',
    'sha1:' + raw.toString('hex'),
    'SHA1:' + raw.toString('base64'),
    sha256b32(data),
    'sha256:' + createHash('sha256').update(data).digest('hex'),
  ]) {
    assert.ok(parseDigest(label), label);
    assert.ok(digestMatches(label, data), label);
    assert.ok(!digestMatches(label, Buffer.from('hello world!')), label);
  }
  assert.equal(parseDigest('crc32:1234'), null);
  assert.equal(parseDigest('nonsense'), null);
});

test('WARC/1.1 §6.4–6.5: an exchange is a response and a request record with every required field', async () => {
  const dir = await tempDir();
  try {
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA', warcinfo: { operator: 'test@example.org' }, digest: 'sha256' });
    const ex = exchange(1, 5000);
    const res = await w.writeExchange(ex);
    await w.close();
    const files = await warcFiles(dir);
    assert.equal(files.length, 1);
    assert.match(files[0], FILE_RE);
    assert.equal(res.filename, files[0]);
    assert.match(res.recordId, UUID_ID);
    assert.equal(res.payloadDigest, sha256b32(ex.body));

    const recs = await warcioRecords(join(dir, files[0]));
    assert.deepEqual(
      recs.map((r) => r.headers.get('warc-type')),
      ['warcinfo', 'response', 'request'],
    );
    for (const r of recs) {
      assert.equal(r.version, 'WARC/1.1');
      assert.match(r.headers.get('warc-record-id')!, UUID_ID);
    }
    const [info, resp, req] = recs;
    assert.equal(info.headers.get('warc-filename'), files[0]);
    assert.equal(info.headers.get('content-type'), 'application/warc-fields');
    const infoText = Buffer.from(info.content).toString();
    assert.match(infoText, /^software: ubicrawl\r\n/m);
    assert.match(infoText, /^format: WARC File Format 1\.1\r$/m);
    assert.match(infoText, /^operator: test@example\.org\r$/m);

    // §5.4: WARC-Date keeps sub-second precision.
    assert.equal(resp.headers.get('warc-date'), '2024-01-02T03:04:05.001Z');
    assert.equal(req.headers.get('warc-date'), '2024-01-02T03:04:05.001Z');
    assert.equal(resp.headers.get('warc-target-uri'), ex.url);
    assert.equal(req.headers.get('warc-target-uri'), ex.url);
    assert.equal(resp.headers.get('warc-ip-address'), '127.0.0.1');
    assert.equal(req.headers.get('warc-ip-address'), '127.0.0.1');
    // §5.7: each record of the pair names the other.
    assert.equal(resp.headers.get('warc-record-id'), res.recordId);
    assert.equal(req.headers.get('warc-concurrent-to'), res.recordId);
    assert.equal(resp.headers.get('warc-concurrent-to'), req.headers.get('warc-record-id'));
    assert.equal(resp.headers.get('content-type'), 'application/http; msgtype=response');
    assert.equal(req.headers.get('content-type'), 'application/http; msgtype=request');
    for (const r of [resp, req]) {
      assert.match(r.headers.get('warc-block-digest')!, SHA256_B32);
      assert.match(r.headers.get('warc-payload-digest')!, SHA256_B32);
    }
    assert.equal(resp.headers.get('warc-payload-digest'), sha256b32(ex.body));
    assert.equal(resp.headers.get('warc-truncated'), undefined);

    // The stored HTTP message parses to exactly the stored (decoded) body.
    assert.equal(resp.http!.statusline, 'HTTP/1.1 200 OK');
    assert.equal(resp.http!.get('content-encoding'), null);
    assert.equal(resp.http!.get('x-crawler-content-encoding'), 'gzip');
    assert.equal(resp.http!.get('content-length'), String(ex.body.length));
    assert.equal(resp.http!.get('x-crawler-content-length'), String(Math.floor(5000 / 3)));
    assert.deepEqual(Buffer.from(resp.content), Buffer.from(ex.body));
    assert.equal(req.http!.statusline, 'GET /page/1?q=1 HTTP/1.1');
    assert.equal(req.http!.get('host'), 'host1.example');
    assert.equal(req.http!.get('user-agent'), 'ubicrawl-test/1.0');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('WARC/1.1 §6.7 revisit (both profiles) and §6.6 metadata records carry their fields', async () => {
  const dir = await tempDir();
  try {
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA' });
    const ex = exchange(2);
    const orig = await w.writeExchange(ex);
    const rv = await w.writeRevisit({
      url: 'http://host9.example/copy',
      date: new Date(Date.UTC(2024, 0, 3, 0, 0, 0, 250)),
      ip: '127.0.0.2',
      refersToUri: ex.url,
      refersToDate: ex.date,
      refersToRecordId: orig.recordId,
      payloadDigest: orig.payloadDigest,
      status: 200,
      responseHeaders: [
        ['Content-Type', 'text/html'],
        ['Content-Encoding', 'br'],
        ['Content-Length', '77'],
      ],
      profile: 'identical-payload-digest',
      payloadLength: ex.body.length,
    });
    const nm = await w.writeRevisit({
      url: ex.url,
      date: new Date(Date.UTC(2024, 0, 4)),
      refersToUri: ex.url,
      refersToDate: ex.date,
      payloadDigest: orig.payloadDigest,
      status: 304,
      responseHeaders: [['ETag', '"abc"']],
      profile: 'server-not-modified',
    });
    const md = await w.writeMetadata(
      'http://host9.example/near',
      new Date(Date.UTC(2024, 0, 5)),
      { 'near-duplicate-of': ex.url, 'simhash-distance': '2' },
      nm.recordId,
    );
    await w.close();
    assert.equal(rv.payloadDigest, orig.payloadDigest);
    const [file] = await warcFiles(dir);
    const recs = await warcioRecords(join(dir, file));
    const byId = new Map(recs.map((r) => [r.headers.get('warc-record-id'), r]));

    const r1 = byId.get(rv.recordId)!;
    assert.equal(r1.headers.get('warc-type'), 'revisit');
    assert.equal(r1.headers.get('warc-profile'), 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
    assert.equal(r1.headers.get('warc-refers-to-target-uri'), ex.url);
    assert.equal(r1.headers.get('warc-refers-to-date'), '2024-01-02T03:04:05.002Z');
    assert.equal(r1.headers.get('warc-refers-to'), orig.recordId);
    assert.equal(r1.headers.get('warc-payload-digest'), orig.payloadDigest);
    assert.equal(r1.headers.get('warc-date'), '2024-01-03T00:00:00.250Z');
    assert.equal(r1.headers.get('warc-ip-address'), '127.0.0.2');
    assert.equal(r1.headers.get('content-type'), 'application/http; msgtype=response');
    assert.equal(r1.http!.get('x-crawler-content-encoding'), 'br');
    assert.equal(r1.http!.get('content-length'), String(ex.body.length));
    assert.equal(r1.content.length, 0, 'a revisit block holds the HTTP header only');

    const r2 = byId.get(nm.recordId)!;
    assert.equal(r2.headers.get('warc-profile'), 'http://netpreserve.org/warc/1.1/revisit/server-not-modified');
    assert.equal(r2.http!.statusline, 'HTTP/1.1 304 Not Modified');
    assert.equal(r2.headers.get('warc-refers-to'), undefined);

    const m = byId.get(md.recordId)!;
    assert.equal(m.headers.get('warc-type'), 'metadata');
    assert.equal(m.headers.get('content-type'), 'application/warc-fields');
    assert.equal(m.headers.get('warc-concurrent-to'), nm.recordId);
    assert.equal(m.headers.get('warc-target-uri'), 'http://host9.example/near');
    assert.equal(
      Buffer.from(m.content).toString(),
      `near-duplicate-of: ${ex.url}\r\nsimhash-distance: 2\r\n`,
    );

    const v = await verifyWarc(join(dir, file));
    assert.deepEqual(v.digestErrors, []);
    assert.equal(v.records, 6);
    assert.equal(v.responses, 1);
    // warcinfo 1 + response 2 + request 2 + revisits 1 each (payload digest not recomputable) + metadata 2.
    assert.equal(v.digestsOk, 9);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('RFC 1952 §2.2: each result offset/length is one gzip member that inflates alone to its record', async () => {
  const dir = await tempDir();
  try {
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA', digest: 'sha256' });
    const results: WriteResult[] = [];
    for (let i = 0; i < 30; i++) results.push(await w.writeExchange(exchange(i, 1000 + i * 97)));
    await w.close();
    const [file] = await warcFiles(dir);
    const bytes = await readFile(join(dir, file));
    for (const r of results) {
      const slice = bytes.subarray(r.offset, r.offset + r.length);
      const text = gunzipSync(slice).toString('latin1');
      assert.ok(text.startsWith('WARC/1.1\r\nWARC-Type: response\r\n'));
      assert.ok(text.includes(`WARC-Record-ID: ${r.recordId}\r\n`));
      assert.ok(text.endsWith('\r\n\r\n'));
      assert.equal(text.match(/^WARC\/1\.1\r$/gm)!.length, 1, 'one record per member');
    }
    // warcio's own offsets agree with ours, and its CDXJ indexer pairs request and response.
    const recs = await warcioRecords(join(dir, file));
    const mine: WarcEntry[] = [];
    for await (const e of readWarc(join(dir, file))) mine.push(e);
    assert.equal(mine.length, recs.length);
    let end = 0;
    for (let i = 0; i < recs.length; i++) {
      assert.equal(mine[i].offset, recs[i].offset);
      assert.equal(mine[i].length, recs[i].length);
      // Members tile the file: each starts where the previous ended and inflates alone.
      assert.equal(mine[i].offset, end);
      end += mine[i].length;
      const one = gunzipSync(bytes.subarray(mine[i].offset, end)).toString('latin1');
      assert.ok(one.startsWith(`WARC/1.1\r\nWARC-Type: ${mine[i].type}\r\n`));
    }
    assert.equal(end, bytes.length);
    const cdx: Array<Record<string, unknown>> = [];
    const indexer = new CDXIndexer({ format: 'cdxj' } as never);
    for await (const line of indexer.iterIndex([{ filename: file, reader: createReadStream(join(dir, file)) }])) {
      cdx.push(line as Record<string, unknown>);
    }
    assert.equal(cdx.length, results.length);
    for (let i = 0; i < results.length; i++) {
      assert.equal(Number(cdx[i].offset), results[i].offset);
      assert.equal(Number(cdx[i].length), results[i].length);
      assert.equal(cdx[i].digest, results[i].payloadDigest.slice('sha256:'.length));
      assert.equal(Number(cdx[i].status), 200);
      assert.equal(cdx[i].mime, 'text/html');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('rotation: files stay under maxFileBytes, each opens with warcinfo, pairs never split, serials count up', async () => {
  const dir = await tempDir();
  try {
    const closed: string[] = [];
    const max = 16 * 1024;
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA', maxFileBytes: max, onFileClosed: (p) => closed.push(p) });
    const results: WriteResult[] = [];
    for (let i = 0; i < 60; i++) results.push(await w.writeExchange(exchange(i, 4000)));
    await w.close();
    const files = await warcFiles(dir);
    assert.ok(files.length >= 4, `rotated into ${files.length} files`);
    assert.deepEqual((await readdir(dir)).filter((n) => n.endsWith('.open')), []);
    // Completed files are published (fsync, rename, hook) in the background, in any order.
    assert.deepEqual(closed.map((p) => p.slice(dir.length + 1)).sort(), files);
    const serials = files.map((f) => Number(FILE_RE.exec(f)![2]));
    assert.deepEqual(serials, serials.map((_, i) => i));
    let responses = 0;
    for (const f of files) {
      assert.ok((await stat(join(dir, f))).size <= max);
      const entries: WarcEntry[] = [];
      for await (const e of readWarc(join(dir, f))) entries.push(e);
      assert.equal(entries[0].type, 'warcinfo');
      assert.equal(entries[0].headers['WARC-Filename'], f);
      assert.equal(entries.filter((e) => e.type === 'warcinfo').length, 1);
      const ids = new Set(entries.map((e) => e.headers['WARC-Record-ID']));
      for (const e of entries) {
        if (e.type === 'response' || e.type === 'request') {
          assert.ok(ids.has(e.headers['WARC-Concurrent-To']), 'the other half of the pair is in the same file');
        }
      }
      responses += entries.filter((e) => e.type === 'response').length;
      const v = await verifyWarc(join(dir, f));
      assert.deepEqual(v.digestErrors, []);
    }
    assert.equal(responses, 60);
    for (const r of results) assert.ok(files.includes(r.filename));
    // Reopening continues the serial numbers.
    const w2 = await WarcWriter.open({ dir, agentShortId: 'agentA', maxFileBytes: max });
    const r2 = await w2.writeExchange(exchange(99));
    await w2.close();
    assert.equal(Number(FILE_RE.exec(r2.filename)![2]), files.length);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('concurrent calls are serialised in call order with backpressure, in worker and in-line modes, and across the switch from in-line to the worker', async () => {
  for (const [worker, inlineFirst] of [[true, 0], [false, 0], [true, 50]] as const) {
    const dir = await tempDir();
    try {
      const w = await WarcWriter.open({ dir, agentShortId: 'agentA', worker, maxPending: 4, inlineFirst });
      const write = (i: number) => w.writeExchange(exchange(i, 500 + (i % 13) * 300));
      let results: WriteResult[] = [];
      if (inlineFirst) {
        results = await Promise.all(Array.from({ length: inlineFirst - 1 }, (_, i) => write(i)));
        assert.equal(w.stats.encoderThread, false, 'the first calls are encoded in-line: no thread yet');
      }
      const n0 = results.length;
      results = results.concat(await Promise.all(Array.from({ length: 120 - n0 }, (_, i) => write(n0 + i))));
      assert.equal(w.stats.encoderThread, worker, worker ? 'the thread runs once the in-line calls are used up' : 'no thread in in-line mode');
      assert.ok(w.stats.pending <= 4);
      await w.close();
      for (let i = 1; i < results.length; i++) assert.ok(results[i].offset > results[i - 1].offset, 'call order kept');
      const [file] = await warcFiles(dir);
      const responses: WarcEntry[] = [];
      for await (const e of readWarc(join(dir, file))) if (e.type === 'response') responses.push(e);
      assert.equal(responses.length, 120);
      responses.forEach((e, i) => {
        assert.equal(e.headers['WARC-Target-URI'], exchange(i).url);
        assert.equal(e.offset, results[i].offset);
        assert.deepEqual(Buffer.from(e.payload!), Buffer.from(html(i, 500 + (i % 13) * 300)));
      });
      assert.deepEqual((await verifyWarc(join(dir, file))).digestErrors, []);
      await assert.rejects(w.writeExchange(exchange(1)), /closed/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
});

test('WARC/1.1 §5.13 and RFC 9112 §6: truncation, chunked, missing length, odd bytes keep the HTTP message consistent', async () => {
  const dir = await tempDir();
  try {
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA' });
    const body = html(5, 2000);
    const t = await w.writeExchange(
      exchange(5, 2000, {
        truncated: 'length',
        responseHeaders: [
          ['Content-Type', 'text/html'],
          ['Transfer-Encoding', 'chunked'],
          ['X-Evil', 'a\r\nInjected: yes'],
          ['X-Utf8', Buffer.from('café', 'utf8').toString('latin1')],
        ],
        httpVersion: '2',
        method: 'GET',
      }),
    );
    const n = await w.writeExchange(
      exchange(6, 100, { status: 404, statusText: 'Gone Fishing', responseHeaders: [['Content-Type', 'text/plain']], contentDecoded: false }),
    );
    const z = await w.writeExchange(exchange(7, 0, { body: new Uint8Array(0), status: 204, responseHeaders: [] }));
    await w.close();
    const [file] = await warcFiles(dir);
    const recs = await warcioRecords(join(dir, file));
    const get = (id: string) => recs.find((r) => r.headers.get('warc-record-id') === id)!;
    const tr = get(t.recordId);
    assert.equal(tr.headers.get('warc-truncated'), 'length');
    assert.equal(tr.headers.get('warc-protocol'), 'h2');
    assert.equal(tr.http!.get('transfer-encoding'), null);
    assert.equal(tr.http!.get('x-crawler-transfer-encoding'), 'chunked');
    assert.equal(tr.http!.get('content-length'), String(body.length));
    assert.equal(tr.http!.get('x-evil'), 'a Injected: yes');
    assert.equal(tr.http!.get('injected'), null);
    assert.deepEqual(Buffer.from(tr.content), Buffer.from(body));
    const nr = get(n.recordId);
    assert.equal(nr.http!.statusline, 'HTTP/1.1 404 Gone Fishing');
    assert.equal(nr.http!.get('content-length'), '100');
    const zr = get(z.recordId);
    assert.equal(zr.http!.statusline, 'HTTP/1.1 204 No Content');
    assert.equal(zr.http!.get('content-length'), '0');
    assert.equal(zr.content.length, 0);
    // The UTF-8 bytes undici handed over as latin1 are stored as the same bytes.
    const raw = gunzipSync(await readFile(join(dir, file)));
    assert.ok(raw.includes(Buffer.from('X-Utf8: café\r\n', 'utf8')));
    assert.deepEqual((await verifyWarc(join(dir, file))).digestErrors, []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('stored response headers follow the X-Crawler- convention for decoded bodies', () => {
  assert.deepEqual(
    storedResponseHeaders(
      [
        ['Content-Length', '10'],
        ['Content-Encoding', 'identity'],
        ['Content-Type', 'text/plain'],
      ],
      10,
    ),
    [
      ['Content-Encoding', 'identity'],
      ['Content-Type', 'text/plain'],
      ['Content-Length', '10'],
    ],
  );
  assert.deepEqual(
    storedResponseHeaders(
      [
        ['content-encoding', 'gzip'],
        ['content-length', '5'],
        ['content-length', '5'],
      ],
      12,
    ),
    [
      ['X-Crawler-Content-Encoding', 'gzip'],
      ['X-Crawler-Content-Length', '5'],
      ['X-Crawler-Content-Length', '5'],
      ['Content-Length', '12'],
    ],
  );
  // Body stored as received: Content-Encoding stays.
  assert.deepEqual(storedResponseHeaders([['Content-Encoding', 'zstd']], 3, false), [
    ['Content-Encoding', 'zstd'],
    ['Content-Length', '3'],
  ]);
  // Revisit without a known length: an encoded length is renamed, none added.
  assert.deepEqual(
    storedResponseHeaders(
      [
        ['Content-Encoding', 'gzip'],
        ['Content-Length', '5'],
      ],
      null,
    ),
    [
      ['X-Crawler-Content-Encoding', 'gzip'],
      ['X-Crawler-Content-Length', '5'],
    ],
  );
  assert.equal(cleanHeaderValue(Buffer.from([0xe9]).toString('latin1')), 'é', 'non-UTF-8 latin1 stays latin1');
});

test('bad input never throws: unparsable URL, invalid Date, odd status', async () => {
  const dir = await tempDir();
  try {
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA', worker: false });
    const r = await w.writeExchange(
      exchange(1, 100, { url: 'not a url', date: new Date(Number.NaN), status: 7, requestHeaders: [['Bad:Name', 'v']] }),
    );
    await w.writeMetadata('also not a url', new Date('x'), { 'a\r\nb': 'c\nd' });
    await w.close();
    const v = await verifyWarc(join(dir, r.filename));
    assert.deepEqual(v.digestErrors, []);
    assert.equal(v.records, 4);
    // A value the worker cannot be sent (structured clone fails) is encoded in-line instead.
    const w2 = await WarcWriter.open({ dir, agentShortId: 'agentB' });
    const odd = exchange(2, 100, { responseHeaders: [['X-Fn', (() => 1) as unknown as string]] });
    const r2 = await w2.writeExchange(odd);
    const r3 = await w2.writeExchange(exchange(3, 100));
    await w2.close();
    assert.equal(r2.filename, r3.filename);
    assert.deepEqual((await verifyWarc(join(dir, r2.filename))).digestErrors, []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a file cut mid-record (SIGKILL) yields every whole record; digests catch corruption', async () => {
  const dir = await tempDir();
  try {
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA' });
    const results: WriteResult[] = [];
    for (let i = 0; i < 20; i++) results.push(await w.writeExchange(exchange(i, 3000)));
    await w.close();
    const [file] = await warcFiles(dir);
    const full = await readFile(join(dir, file));
    const last = results[results.length - 1];
    // Cut inside the 20th response member, and at several other points.
    for (const cut of [last.offset + 37, last.offset + last.length - 3, results[10].offset + 1, 5]) {
      const p = join(dir, `cut-${cut}.warc.gz`);
      await writeFile(p, full.subarray(0, cut));
      const seen: WarcEntry[] = [];
      let tail: { problem: string | null; end: number } | null = null;
      for await (const e of readWarc(p, { onEnd: (t) => (tail = t) })) seen.push(e);
      const whole = results.filter((r) => r.offset + r.length <= cut).length;
      assert.equal(seen.filter((e) => e.type === 'response').length, whole);
      assert.equal(tail!.problem, 'truncated');
      const v = await verifyWarc(p);
      assert.equal(v.digestErrors.length, 1);
      assert.match(v.digestErrors[0], /^truncated/);
    }
    // Flip one payload byte inside a member (re-gzipped so the member is valid gzip).
    const r = results[3];
    const rec = gunzipSync(full.subarray(r.offset, r.offset + r.length));
    rec[rec.length - 100] ^= 1;
    const bad = Buffer.concat([full.subarray(0, r.offset), gzipSync(rec), full.subarray(r.offset + r.length)]);
    const bp = join(dir, 'bad.warc.gz');
    await writeFile(bp, bad);
    const v = await verifyWarc(bp);
    assert.equal(v.digestErrors.length, 2);
    assert.match(v.digestErrors[0], /Block-Digest mismatch/);
    assert.match(v.digestErrors[1], /Payload-Digest mismatch/);
    // Garbage is not a gzip member: the walk stops without throwing.
    await writeFile(join(dir, 'junk.warc.gz'), Buffer.from('this is not gzip at all'));
    const junk = await verifyWarc(join(dir, 'junk.warc.gz'));
    assert.equal(junk.records, 0);
    assert.match(junk.digestErrors[0], /^corrupt/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('crash safety: an agent killed with SIGKILL leaves a .open file that open() repairs and publishes', async () => {
  const dir = await tempDir();
  try {
    const writerUrl = new URL('../src/warc/writer.js', import.meta.url).href;
    const script = `
      const { WarcWriter } = await import(${JSON.stringify(writerUrl)});
      const w = await WarcWriter.open({ dir: ${JSON.stringify(dir)}, agentShortId: 'agentA' });
      const body = new Uint8Array(20000).fill(97);
      let i = 0;
      for (;;) {
        await w.writeExchange({ url: 'http://k.example/' + i, date: new Date(), requestHeaders: [], status: 200,
          responseHeaders: [['Content-Type', 'text/html']], body });
        if (++i === 50) process.stdout.write('ready\\n');
      }`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      child.on('exit', (code) => reject(new Error(`child exited early: ${code}`)));
    });
    await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const left = (await readdir(dir)).filter((n) => n.endsWith('.open'));
    assert.equal(left.length, 1, 'the killed writer left its open file');
    // Also cut it mid-member, as if the kill had landed inside a write.
    const openPath = join(dir, left[0]);
    const size = (await stat(openPath)).size;
    await writeFile(openPath, (await readFile(openPath)).subarray(0, size - 1234));

    const published: string[] = [];
    const w = await WarcWriter.open({ dir, agentShortId: 'agentA', onFileClosed: (p) => published.push(p) });
    await w.close();
    assert.deepEqual((await readdir(dir)).filter((n) => n.endsWith('.open')), []);
    assert.equal(published.length, 1);
    assert.equal(published[0], openPath.slice(0, -'.open'.length));
    const v = await verifyWarc(published[0]);
    assert.deepEqual(v.digestErrors, []);
    assert.ok(v.responses >= 50, `${v.responses} responses survived`);
    // Every whole record is kept: the cut may leave the last response without its request.
    const requests = v.records - 1 - v.responses;
    assert.ok(requests === v.responses || requests === v.responses - 1, `${requests} requests`);
    // Repairing a file that holds only a partial warcinfo deletes it.
    const stub = join(dir, 'ubicrawl-20240101000000000-00077-agentA.warc.gz.open');
    await writeFile(stub, gzipSync(Buffer.from('WARC/1.1\r\n')).subarray(0, 10));
    assert.equal(await recoverWarcFile(stub), null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('gzipMembers walks members of any size across its read window', async () => {
  const dir = await tempDir();
  try {
    const parts = [Buffer.alloc(10, 1), Buffer.alloc(6 << 20, 2), Buffer.from('x')].map((b) => {
      // incompressible 6 MiB member: bigger than the 4 MiB window
      if (b.length > 1000) for (let i = 0; i < b.length; i++) b[i] = (i * 2654435761) >>> 24;
      return gzipSync(b, { level: 1 });
    });
    const p = join(dir, 'm.gz');
    await writeFile(p, Buffer.concat(parts));
    const got: Array<[number, number]> = [];
    for await (const m of gzipMembers(p)) got.push([m.offset, m.length]);
    assert.deepEqual(got, [
      [0, parts[0].length],
      [parts[0].length, parts[1].length],
      [parts[0].length + parts[1].length, parts[2].length],
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('RFC 1952 gzip members: the reused deflate state writes exactly what gzipSync writes (every level, empty to multi-chunk, incompressible)', () => {
  const text = Buffer.from('<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n'.repeat(800));
  const inputs = [Buffer.alloc(0), Buffer.from('x'), text.subarray(0, 300), text, randomBytes(40000), Buffer.alloc(200000, 7), randomBytes(100)];
  for (let level = 0; level <= 9; level++) {
    // Twice over, interleaved with another level: each member starts from a reset state.
    for (let round = 0; round < 2; round++) {
      for (const b of inputs) {
        assert.deepEqual(Buffer.from(gzipMember(b, level)), gzipSync(b, { level }), `level ${level}, ${b.length} bytes`);
        gzipMember(text.subarray(0, 1000), (level + 3) % 10);
      }
    }
  }
  assert.deepEqual(gunzipSync(gzipMember(text, 4)), text);
});
