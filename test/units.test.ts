import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { parseResolveRule, matchResolveRule, resolveConfig } from '../src/config.js';
import { classifySeed, UsageError, type SeedSet } from '../src/cli/seeds.js';
import { decodeBody } from '../src/fetch/decode.js';
import { nextAllowedAt, parseRetryAfter } from '../src/politeness/delay.js';
import { MinHeap } from '../src/util/heap.js';

test('--resolve parses curl syntax and prefers exact names over wildcards', () => {
  const rules = ['*:80:127.0.0.9', '*.web.test:80:127.0.0.2', 'a.web.test:80:127.0.0.3', 'v6.test:443:[::1]'].map(parseResolveRule);
  assert.equal(matchResolveRule(rules, 'a.web.test', 80)?.address, '127.0.0.3');
  assert.equal(matchResolveRule(rules, 'b.web.test', 80)?.address, '127.0.0.2');
  assert.equal(matchResolveRule(rules, 'other.org', 80)?.address, '127.0.0.9');
  assert.equal(matchResolveRule(rules, 'a.web.test', 8080), undefined);
  assert.equal(matchResolveRule(rules, 'v6.test', 443)?.address, '::1');
  assert.throws(() => parseResolveRule('nonsense'), /HOST:PORT:ADDR/);
});

test('config: nested options merge over defaults', () => {
  const c = resolveConfig({ fetch: { maxBodyBytes: 10 }, concurrency: 3 });
  assert.equal(c.fetch.maxBodyBytes, 10);
  assert.equal(c.fetch.connectTimeoutMs, 10_000);
  assert.equal(c.concurrency, 3);
  assert.equal(c.minDelayMs, 1000);
});

test('--seed: URLs, multiaddrs and host:port are told apart; junk is a usage error', () => {
  const s: SeedSet = { urls: [], peers: [] };
  classifySeed('http://example.com/', s);
  classifySeed('/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWabc', s);
  classifySeed('127.0.0.1:4001', s);
  assert.deepEqual(s, { urls: ['http://example.com/'], peers: ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWabc', '127.0.0.1:4001'] });
  assert.throws(() => classifySeed('ftp://example.com/', s), UsageError);
  assert.throws(() => classifySeed('not a seed', s), UsageError);
  assert.throws(() => classifySeed('http://', s), UsageError);
});

test('decode: gzip, deflate (zlib and raw), br; a gzip bomb stops at the cap', () => {
  const text = Buffer.from('hello '.repeat(1000));
  assert.deepEqual(decodeBody(zlib.gzipSync(text), 'gzip', 1 << 20).body, text);
  assert.deepEqual(decodeBody(zlib.deflateSync(text), 'deflate', 1 << 20).body, text);
  assert.deepEqual(decodeBody(zlib.deflateRawSync(text), 'deflate', 1 << 20).body, text);
  assert.deepEqual(decodeBody(zlib.brotliCompressSync(text), 'br', 1 << 20).body, text);
  const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024));
  assert.ok(bomb.length < 200_000);
  const d = decodeBody(bomb, 'gzip', 1 << 20);
  assert.equal(d.truncated, true);
  assert.ok(d.body.length <= 1 << 20 && d.body.length > 900_000, `decoded prefix ${d.body.length}`);
  const bad = decodeBody(Buffer.from('not gzip at all'), 'gzip', 1 << 20);
  assert.match(bad.error ?? '', /corrupt gzip/);
  assert.match(decodeBody(text, 'compress', 100).error ?? '', /unsupported/);
});

test('politeness: the largest of floor, Crawl-delay, k × response time and Retry-After wins', () => {
  const base = { endedAt: 1000, minDelayMs: 1000, lastResponseMs: 50, factor: 10, maxDelayMs: 60_000 };
  assert.equal(nextAllowedAt(base), 2000);
  assert.equal(nextAllowedAt({ ...base, lastResponseMs: 500 }), 6000);
  assert.equal(nextAllowedAt({ ...base, crawlDelayMs: 3000 }), 4000);
  assert.equal(nextAllowedAt({ ...base, retryAfterMs: 5000 }), 6000);
  assert.equal(nextAllowedAt({ ...base, retryAfterMs: 10_000_000 }), 61_000, 'capped');
  assert.equal(parseRetryAfter('5', 0), 5000);
  assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 4000), 6000);
  assert.equal(parseRetryAfter('soon', 0), undefined);
});

test('MinHeap orders by key and supports remove/update', () => {
  type N = { k: number; heapIndex: number };
  const h = new MinHeap<N>((n) => n.k);
  const ns: N[] = [5, 3, 9, 1, 7].map((k) => ({ k, heapIndex: -1 }));
  for (const n of ns) h.push(n);
  h.remove(ns[3]!);
  ns[2]!.k = 0; h.update(ns[2]!);
  const out: number[] = [];
  while (h.size) out.push(h.pop()!.k);
  assert.deepEqual(out, [0, 3, 5, 7]);
});
