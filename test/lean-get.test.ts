// The fetcher reads responses through a plain undici handler (src/fetch/lean-get.ts),
// not request() and a body stream: the body cap, a connection cut mid-body, the total
// timeout mid-body, informational answers and repeated header fields must come out as
// they did through request(). Real loopback servers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Fetcher } from '../src/fetch/fetcher.js';
import { HostResolver } from '../src/fetch/dns.js';
import { AddressPolicy } from '../src/fetch/address.js';
import { defaultConfig } from '../src/config.js';

/** A raw TCP server: `answer` writes what it likes to each connection once the request head is in. */
async function rawServer(answer: (sock: import('node:net').Socket) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((sock) => {
    let head = '';
    sock.on('data', (d) => {
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) { head = ''; answer(sock); }
    });
    sock.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

function fetcher(over: Partial<ReturnType<typeof defaultConfig>['fetch']> = {}): Fetcher {
  return new Fetcher({ ...defaultConfig().fetch, ...over }, 'ubicrawl-test/1', new HostResolver([]), { addresses: new AddressPolicy(['127.0.0.0/8']) });
}

test('lean GET: a body past the cap is cut at the cap (length), the head and fields as undici parses them', async () => {
  const body = 'x'.repeat(50_000);
  const { server, port } = await rawServer((s) => {
    s.write(`HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n`);
    s.write(`HTTP/1.1 200 Fine\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: ${body.length}\r\n\r\n`);
    s.write(body);
  });
  const f = fetcher({ maxBodyBytes: 20_000 });
  try {
    const out = await f.fetch(`http://127.0.0.1:${port}/p`);
    assert.ok(out.ok);
    assert.equal(out.status, 200, 'the informational answer is skipped');
    assert.equal(out.statusText, 'Fine');
    assert.equal(out.body.length, 20_000);
    assert.equal(out.truncated, 'length');
    assert.equal(out.rawTruncated, 'length');
    assert.deepEqual(out.responseHeaders.filter(([k]) => k === 'set-cookie'), [['set-cookie', 'a=1'], ['set-cookie', 'b=2']]);
    assert.equal(out.header('Set-Cookie'), 'a=1, b=2');
    // The connection was given up; the next request still gets a whole answer.
    const small = await fetcher().fetch(`http://127.0.0.1:${port}/q`);
    assert.ok(small.ok && small.body.length === body.length && small.truncated === false);
  } finally {
    await f.close();
    server.close();
  }
});

test('lean GET: a connection cut mid-body keeps what came (disconnect); the total timeout mid-body too (time); before the head it is a failure', async () => {
  const cut = await rawServer((s) => { s.write('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n' + 'a'.repeat(300)); setImmediate(() => s.destroy()); });
  const stall = await rawServer((s) => { s.write('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n' + 'b'.repeat(200)); });
  const silent = await rawServer(() => {});
  const f = fetcher({ totalTimeoutMs: 400, readTimeoutMs: 10_000, headersTimeoutMs: 10_000 });
  try {
    const a = await f.fetch(`http://127.0.0.1:${cut.port}/`);
    assert.ok(a.ok);
    assert.equal(a.truncated, 'disconnect');
    assert.equal(a.body.toString(), 'a'.repeat(300));
    const b = await f.fetch(`http://127.0.0.1:${stall.port}/`);
    assert.ok(b.ok);
    assert.equal(b.truncated, 'time');
    assert.equal(b.body.toString(), 'b'.repeat(200));
    const c = await f.fetch(`http://127.0.0.1:${silent.port}/`);
    assert.ok(!c.ok);
    assert.equal(c.kind, 'timeout');
  } finally {
    await f.close();
    for (const s of [cut, stall, silent]) s.server.close();
  }
});
