// Faithful records (docs/warc.md "Faithful records"): the WARC holds the request and
// response heads byte for byte as they crossed a loopback socket, the body as
// received, and digests that verify — read back with warcio.js and our reader.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { createReadStream, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { buildConnector } from 'undici';
import { WARCParser } from 'warcio';
import { Fetcher, archivedBody, type FetchResponse } from '../src/fetch/fetcher.js';
import { HostResolver } from '../src/fetch/dns.js';
import { AddressPolicy } from '../src/fetch/address.js';
import { tlsProtocolValue } from '../src/fetch/wire.js';
import { defaultConfig } from '../src/config.js';
import { WarcWriter } from '../src/warc/writer.js';
import { readWarc, verifyWarc, type WarcEntry } from '../src/warc/reader.js';
import { base32, digestMatches, type DigestAlgo } from '../src/warc/digest.js';
import { warcinfoFields } from '../src/warc/warcinfo.js';
import { buildCdxj } from '../src/warc/cdxj.js';
import { tempDir } from './helpers.js';

const HTML = '<!doctype html><title>odd</title><p>caf\u00e9 and more text</p>';
const GZ = gzipSync(Buffer.from(HTML, 'utf8'));

/** Response heads exactly as the server writes them (latin1: one char per byte). */
const HEADS: Record<string, { head: string; body: Buffer; close?: boolean; split?: boolean }> = {
  // Mixed case, odd order, duplicates with different case, no space after a colon,
  // padding inside a value, a non-UTF-8 byte, an encoded body.
  '/odd': {
    head: 'HTTP/1.1 200 Fine Thanks\r\nx-Zeta:  a  \r\nContent-TYPE: text/html; charset=utf-8\r\nX-Dup: 1\r\nX-DUP:2\r\n' +
      'Set-Cookie: a=1\r\nset-cookie: b=2\r\nX-Latin: caf\xe9\r\nCONTENT-ENCODING: gzip\r\ncontent-length: ' + GZ.length + '\r\nDate: Tue, 01 Oct 2024 00:00:00 GMT\r\n\r\n',
    body: GZ,
  },
  '/chunked': {
    head: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nTransfer-Encoding:  chunked\r\nX-After: yes\r\n\r\n',
    body: Buffer.from('5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n', 'latin1'),
  },
  '/early': {
    head: 'HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\n',
    body: Buffer.from('ok'),
  },
  // A head that arrives in pieces (separate socket reads).
  '/split': {
    head: 'HTTP/1.1 200 OK\r\nX-Part: one\r\nContent-Length: 4\r\n\r\n',
    body: Buffer.from('done'),
    split: true,
  },
  '/old': {
    head: 'HTTP/1.0 404 Gone Fishing\r\nContent-Type: text/plain\r\n\r\n',
    body: Buffer.from('nothing here'),
    close: true,
  },
};
const FINAL_HEAD = (path: string): string => {
  const h = HEADS[path]!.head;
  return path === '/early' ? h.slice(h.indexOf('\r\n\r\n') + 4) : h;
};

interface Wire {
  server: Server;
  port: number;
  /** Request heads received, per path, byte for byte. */
  requests: Map<string, Buffer>;
}

/**
 * Splits what a client sends on `sock` into request heads (GETs: no bodies), records each by path in
 * `requests` and hands the path to `answer`; at most `max` heads per read. `answer` returns false to stop.
 */
function onRequestHeads(sock: Socket, requests: Map<string, Buffer>, max: number, answer: (path: string) => boolean): void {
  let buf = Buffer.alloc(0);
  sock.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    for (let guard = 0; guard < max; guard++) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end + 4);
      buf = buf.subarray(end + 4);
      const path = head.toString('latin1').split(' ')[1]!;
      requests.set(path, Buffer.from(head));
      if (!answer(path)) return;
    }
  });
  sock.on('error', () => {});
}

function handle(sock: Socket, requests: Map<string, Buffer>): void {
  onRequestHeads(sock, requests, 16, (path) => {
    const r = HEADS[path];
    if (!r) { sock.end('HTTP/1.1 500 X\r\ncontent-length: 0\r\n\r\n'); return false; }
    const bytes = Buffer.concat([Buffer.from(r.head, 'latin1'), r.body]);
    if (r.split) {
      // Three writes apart in time, so the client reads the head in pieces (CRLF CRLF itself split).
      const cut = r.head.length - 3;
      sock.write(bytes.subarray(0, 9));
      setTimeout(() => { sock.write(bytes.subarray(9, cut)); setTimeout(() => sock.write(bytes.subarray(cut)), 15); }, 15);
    } else {
      sock.write(bytes);
    }
    if (r.close) sock.end();
    return true;
  });
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  return (server.address() as { port: number }).port;
}

async function plainServer(): Promise<Wire> {
  const requests = new Map<string, Buffer>();
  const server = createServer((s) => handle(s, requests));
  return { server, port: await listen(server), requests };
}

function fetcher(dial?: buildConnector.connector): Fetcher {
  const cfg = defaultConfig();
  return new Fetcher(cfg.fetch, 'ubicrawl-test/1.0 (+http://example.test/bot)', new HostResolver([]), {
    addresses: new AddressPolicy(['127.0.0.0/8']),
    ...(dial ? { dial } : {}),
  });
}

async function archive(dir: string, digest: DigestAlgo, outs: FetchResponse[]): Promise<string> {
  const w = await WarcWriter.open({ dir, agentShortId: 'wire', digest, worker: false, fsync: false });
  for (const out of outs) {
    await w.writeExchange({
      url: out.url, date: out.startedAt, ip: out.ip, method: out.method, requestHeaders: out.requestHeaders,
      status: out.status, statusText: out.statusText, responseHeaders: out.responseHeaders,
      ...archivedBody(out),
    });
  }
  await w.close();
  const files = readdirSync(dir).filter((n) => n.endsWith('.warc.gz'));
  assert.equal(files.length, 1);
  return join(dir, files[0]!);
}

async function entries(file: string): Promise<WarcEntry[]> {
  const out: WarcEntry[] = [];
  for await (const e of readWarc(file, { block: true })) out.push(e);
  return out;
}

/** Every record through warcio.js, as a replay tool reads it (content decoded). */
async function warcioCheck(file: string): Promise<Array<{ type: string; headers: Map<string, string>; decoded?: Buffer; statusline?: string }>> {
  const out: Array<{ type: string; headers: Map<string, string>; decoded?: Buffer; statusline?: string }> = [];
  const parser = new WARCParser(createReadStream(file), { keepHeadersCase: true });
  for await (const rec of parser) {
    const headers = new Map<string, string>();
    for (const [k, v] of rec.warcHeaders.headers as unknown as Iterable<[string, string]>) {
      const key = k.toLowerCase();
      headers.set(key, headers.has(key) ? `${headers.get(key)}, ${v}` : v); // a repeated field, joined
    }
    const statusline = rec.httpHeaders?.statusline;
    const decoded = rec.warcType === 'response' ? Buffer.from(await rec.readFully(true)) : undefined;
    out.push({ type: rec.warcType!, headers, ...(decoded ? { decoded } : {}), ...(statusline ? { statusline } : {}) });
  }
  return out;
}

/**
 * warcio.js with HTTP parsing off hands out each record's block as stored: both digests
 * are recomputed over it (payload: after the HTTP head, for application/http records).
 */
async function warcioDigestsVerify(file: string): Promise<number> {
  let n = 0;
  for await (const rec of new WARCParser(createReadStream(file), { parseHttp: false })) {
    const block = Buffer.from(await rec.readFully(false));
    const bd = rec.warcHeaders.headers.get('WARC-Block-Digest');
    assert.ok(bd && digestMatches(bd, block), `${rec.warcType}: WARC-Block-Digest ${bd}`);
    const pd = rec.warcHeaders.headers.get('WARC-Payload-Digest');
    if (pd && rec.warcType !== 'revisit') {
      const http = (rec.warcContentType ?? '').startsWith('application/http');
      const payload = http ? block.subarray(block.indexOf('\r\n\r\n') + 4) : block;
      assert.ok(digestMatches(pd, payload), `${rec.warcType}: WARC-Payload-Digest ${pd}`);
    }
    n++;
  }
  return n;
}

for (const digest of ['sha1', 'sha256'] as const) {
  test(`WARC/1.1 §6.3.2 (${digest}): heads stored byte for byte as sent and received, bodies as received, digests verify`, async () => {
    const wire = await plainServer();
    const f = fetcher();
    const dir = tempDir();
    try {
      const base = `http://127.0.0.1:${wire.port}`;
      const outs: FetchResponse[] = [];
      // One keep-alive connection for the first three: each capture must start at its own response.
      for (const path of ['/odd', '/chunked', '/early', '/split', '/old']) {
        const out = await f.fetch(base + path);
        assert.ok(out.ok, `${path}: ${out.ok ? '' : out.message}`);
        assert.ok(out.wire, `${path}: heads captured`);
        outs.push(out);
      }
      assert.equal(outs[0]!.statusText, 'Fine Thanks');
      assert.equal(outs[0]!.body.toString('utf8'), HTML, 'decoded for the parser');
      assert.deepEqual(outs[0]!.rawBody, GZ, 'as received for the archive');

      const file = await archive(dir, digest, outs);
      const v = await verifyWarc(file);
      assert.deepEqual(v.digestErrors, []);
      assert.equal(await warcioDigestsVerify(file), 1 + 2 * outs.length);
      const recs = await entries(file);
      const label = new RegExp(`^${digest}:[A-Z2-7]+=*$`);
      for (const path of ['/odd', '/chunked', '/early', '/split', '/old']) {
        const resp = recs.find((r) => r.type === 'response' && r.headers['WARC-Target-URI'] === base + path)!;
        const req = recs.find((r) => r.type === 'request' && r.headers['WARC-Target-URI'] === base + path)!;
        assert.ok(resp && req, path);
        const block = Buffer.from(resp.block!);
        let head = FINAL_HEAD(path);
        // The one byte-level change: the body is stored without its chunk framing, so the field that announced it is renamed in place.
        if (path === '/chunked') head = head.replace('\r\nTransfer-Encoding:', '\r\nX-Crawler-Transfer-Encoding:');
        const body = path === '/chunked' ? Buffer.from('hello world') : HEADS[path]!.body;
        assert.deepEqual(block, Buffer.concat([Buffer.from(head, 'latin1'), body]), `${path}: the response block is what the server sent`);
        assert.deepEqual(Buffer.from(req.block!), wire.requests.get(path), `${path}: the request block is what the server received`);
        for (const r of [resp, req]) {
          assert.match(r.headers['WARC-Block-Digest']!, label);
          assert.ok(digestMatches(r.headers['WARC-Block-Digest']!, r.block!), `${path}: block digest`);
          assert.equal(r.headers['WARC-Protocol'], 'http/1.1');
        }
        assert.equal(resp.headers['WARC-Payload-Digest'], `${digest}:` + base32(createHash(digest).update(body).digest()), `${path}: payload digest over the entity as received`);
      }

      // CDXJ as cdxj-indexer writes it: fields found whatever the case of the stored names, digest labelled.
      const cdx = new Map<string, Record<string, string>>();
      for (const line of (await buildCdxj(file)).lines) {
        const j = JSON.parse(line.slice(line.indexOf('{'))) as Record<string, string>;
        cdx.set(j.url!, j);
      }
      assert.equal(cdx.get(base + '/odd')?.mime, 'text/html');
      assert.equal(cdx.get(base + '/odd')?.status, '200');
      assert.equal(cdx.get(base + '/odd')?.digest, recs.find((r) => r.type === 'response' && r.headers['WARC-Target-URI'] === base + '/odd')!.headers['WARC-Payload-Digest']);
      assert.match(cdx.get(base + '/old')?.digest ?? '', label);
      assert.equal(cdx.get(base + '/old')?.status, '404');

      // warcio.js reads every record; what a replay tool decodes is the page.
      const theirs = await warcioCheck(file);
      assert.deepEqual(theirs.map((r) => r.type), ['warcinfo', ...outs.flatMap(() => ['response', 'request'])]);
      const odd = theirs.find((r) => r.type === 'response' && r.headers.get('warc-target-uri') === base + '/odd')!;
      assert.equal(odd.statusline, 'HTTP/1.1 200 Fine Thanks');
      assert.equal(odd.decoded!.toString('utf8'), HTML, 'Content-Encoding: gzip decodes to the page');
      const old = theirs.find((r) => r.type === 'response' && r.headers.get('warc-target-uri') === base + '/old')!;
      assert.equal(old.statusline, 'HTTP/1.0 404 Gone Fishing');
      const chunked = theirs.find((r) => r.type === 'response' && r.headers.get('warc-target-uri') === base + '/chunked')!;
      assert.equal(chunked.decoded!.toString(), 'hello world');
    } finally {
      await f.close();
      wire.server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
}

function selfSignedCert(dir: string): { key: Buffer; cert: Buffer } | null {
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { stdio: 'ignore', timeout: 10_000 });
    return { key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) };
  } catch {
    return null;
  }
}

test('WARC-Protocol and WARC-Cipher-Suite (IIPC proposals): http/1.1 and tls/1.x with the IANA suite name over TLS', async (t) => {
  assert.equal(tlsProtocolValue('TLSv1.3'), 'tls/1.3');
  assert.equal(tlsProtocolValue('TLSv1.2'), 'tls/1.2');
  assert.equal(tlsProtocolValue('TLSv1'), 'tls/1.0');
  assert.equal(tlsProtocolValue(null), undefined);
  const dir = tempDir();
  const pem = selfSignedCert(dir);
  if (!pem) { t.skip('openssl not available'); await rm(dir, { recursive: true, force: true }); return; }
  const requests = new Map<string, Buffer>();
  const sni: Array<string | false | null> = [];
  const server = createTlsServer({ key: pem.key, cert: pem.cert, minVersion: 'TLSv1.3' }, (s) => { sni.push(s.servername); handle(s as unknown as Socket, requests); });
  const port = await listen(server as unknown as Server);
  // The certificate is self-signed: this test's connector trusts it (the crawler's does not).
  const f = fetcher(buildConnector({ rejectUnauthorized: false }));
  try {
    const out = await f.fetch(`https://127.0.0.1:${port}/odd`);
    assert.ok(out.ok && out.wire, out.ok ? 'captured' : out.message);
    assert.deepEqual(out.wire.protocols, ['http/1.1', 'tls/1.3']);
    assert.match(out.wire.cipherSuite ?? '', /^TLS_(AES|CHACHA20)_[A-Z0-9_]+$/);
    // An IP-literal URL sends no server name (RFC 6066 §3: literal addresses are not permitted in HostName).
    assert.deepEqual(sni, [false]);
    const file = await archive(join(dir), 'sha1', [out]);
    const v = await verifyWarc(file);
    assert.deepEqual(v.digestErrors, []);
    assert.equal(await warcioDigestsVerify(file), 3);
    const theirs = await warcioCheck(file);
    const resp = theirs.find((r) => r.type === 'response')!;
    // Repeated WARC-Protocol fields, as the proposal settled on; warcio.js joins them.
    assert.equal(resp.headers.get('warc-protocol'), 'http/1.1, tls/1.3');
    assert.equal(resp.headers.get('warc-cipher-suite'), out.wire.cipherSuite);
    const raw = (await entries(file)).find((r) => r.type === 'request')!;
    assert.deepEqual(Buffer.from(raw.block!), requests.get('/odd'));
  } finally {
    await f.close();
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('warcinfo (WARC/1.1 §6.2, annex C names as Heritrix writes them) and its duplicate policy', async () => {
  const dir = tempDir();
  try {
    const info = warcinfoFields({
      software: 'ubicrawl/0.1', userAgent: 'ubicrawl-test/1.0', operator: 'Jane <jane@example.test>', crawlId: 'c42',
      digest: 'sha1', exactDedup: true, nearDedup: true, maxDistance: 3, recrawl: true,
    });
    for (const k of ['software', 'hostname', 'format', 'conformsTo', 'operator', 'isPartOf', 'description', 'robots', 'http-header-user-agent', 'duplicates', 'near-duplicates', 'not-modified']) {
      assert.ok(info[k], k);
    }
    assert.equal(info.isPartOf, 'c42');
    assert.equal(info.format, 'WARC File Format 1.1');
    assert.equal(info.robots, 'obey');
    assert.match(info.duplicates!, /identical-payload-digest/);
    const w = await WarcWriter.open({ dir, agentShortId: 'info', warcinfo: info, worker: false, fsync: false });
    await w.writeMetadata('http://example.test/', new Date(), { note: 'a file opens with its warcinfo' });
    await w.close();
    const files = readdirSync(dir).filter((n) => n.endsWith('.warc.gz'));
    assert.equal(await warcioDigestsVerify(join(dir, files[0]!)), 2);
    const recs = await warcioCheck(join(dir, files[0]!));
    assert.equal(recs[0]!.type, 'warcinfo');
    assert.match(recs[0]!.headers.get('warc-block-digest')!, /^sha1:/);
    const e = (await entries(join(dir, files[0]!)))[0]!;
    const text = Buffer.from(e.block!).toString('utf8');
    assert.match(text, /^operator: Jane <jane@example\.test>\r$/m);
    assert.match(text, /^isPartOf: c42\r$/m);
    assert.match(text, /^http-header-user-agent: ubicrawl-test\/1\.0\r$/m);
    assert.ok(digestMatches(e.headers['WARC-Block-Digest']!, e.block!));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('concurrent fetches to one origin (queued on its one connection) each get their own heads', async () => {
  const requests = new Map<string, Buffer>();
  const server = createServer((sock) => onRequestHeads(sock, requests, 64, (path) => {
    sock.write(`HTTP/1.1 200 OK\r\nX-Path: ${path}\r\nContent-Length: 2\r\n\r\nok`);
    return true;
  }));
  const port = await listen(server);
  const f = fetcher();
  try {
    const paths = Array.from({ length: 20 }, (_, i) => `/p${i}`);
    const outs = await Promise.all(paths.map((p) => f.fetch(`http://127.0.0.1:${port}${p}`)));
    for (const [i, out] of outs.entries()) {
      assert.ok(out.ok && out.wire, paths[i]);
      assert.equal(out.wire.responseHead.toString('latin1'), `HTTP/1.1 200 OK\r\nX-Path: ${paths[i]}\r\nContent-Length: 2\r\n\r\n`);
      assert.deepEqual(out.wire.requestHead, requests.get(paths[i]!));
    }
  } finally {
    await f.close();
    server.close();
  }
});
