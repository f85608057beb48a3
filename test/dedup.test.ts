// Content dedup wired into the crawl (docs/warc.md "Duplicates in the crawl"): exact duplicates as WARC
// revisit records (WARC/1.1 §6.7.2), their links not extracted again; near
// duplicates found with SimHash and the permuted-table index (Manku, Jain, Das
// Sarma 2007); distinct pages never merged; `ubicrawl simhash`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb } from '../bench/web/index.js';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { openStore } from '../src/store/db.js';
import { readWarc, verifyWarc, type WarcEntry } from '../src/warc/reader.js';
import { PROFILE_URI } from '../src/warc/records.js';
import { createHash } from 'node:crypto';
import { sha256Label, base32 } from '../src/warc/digest.js';
import { decodeFetchRecord, type FetchRecord } from '../src/crawl/records.js';
import { ContentDedup, Fence } from '../src/dedup/content.js';
import { simhash64, simhashHex } from '../src/dedup/simhash.js';
import { extractPage } from '../src/parse/html.js';
import { tempDir } from './helpers.js';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'ubicrawl.js');
const IDENTICAL = 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest';

async function warcRecords(dir: string): Promise<WarcEntry[]> {
  const warcDir = join(dir, 'warc');
  const out: WarcEntry[] = [];
  for (const f of readdirSync(warcDir).filter((n) => n.endsWith('.warc.gz')).sort()) {
    const v = await verifyWarc(join(warcDir, f));
    assert.deepEqual(v.digestErrors, [], `${f}: digests verify`);
    for await (const e of readWarc(join(warcDir, f))) out.push(e);
  }
  return out;
}

async function fetchRecords(dir: string): Promise<Map<string, FetchRecord>> {
  const store = await openStore(dir);
  try {
    const out = new Map<string, FetchRecord>();
    for await (const [, v] of store.fetches.iterator()) {
      const r = decodeFetchRecord(v);
      if (r) out.set(r.url, r);
    }
    return out;
  } finally {
    await store.close();
  }
}

test('Fence: a claim outlives every read entered before its release was asked for', () => {
  const f = new Fence();
  const released: string[] = [];
  const a = f.enter();
  f.afterReads(() => released.push('x'));
  const b = f.enter(); // entered after: does not hold x back
  assert.equal(released.join(','), '');
  f.leave(a);
  assert.equal(released.join(','), 'x');
  f.afterReads(() => released.push('y'));
  assert.equal(released.join(','), 'x', 'b is still reading');
  f.leave(b);
  assert.equal(released.join(','), 'x,y');
  f.afterReads(() => released.push('z'));
  assert.equal(released.join(','), 'x,y,z', 'no read running: at once');
  assert.equal(f.pending, 0);
});

/** A gate for reads held back after they were made (they answer as of when they ran). */
function heldReads() {
  const waiting: Array<() => void> = [];
  let holding = true;
  return {
    waiting,
    async after<T>(read: Promise<T>): Promise<T> { const v = await read; if (holding) await new Promise<void>((r) => waiting.push(r)); return v; },
    release() { holding = false; for (const r of waiting.splice(0)) r(); },
  };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(cond());
}

test('an exact duplicate whose store read missed the original\'s put, answered after the original was committed, still finds it (the claim is looked up before the read leaves its fence)', async () => {
  const store = await openStore(tempDir());
  try {
    const gate = heldReads();
    let hold = false;
    // The digests sublevel, its getMany answered late while `hold`: what a loaded thread pool does.
    const digests = new Proxy(store.digests, {
      get(target, key) {
        const v = Reflect.get(target, key, target) as unknown;
        if (key === 'getMany' && hold) return (keys: Buffer[]) => gate.after(target.getMany(keys));
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const d = new ContentDedup(digests, store.simhash, { digest: 'sha256' });
    await d.load();
    const body = Buffer.from('<p>one article, two addresses</p>');
    const a = await d.checkExact('http://a.test/dir1/a', new Date(), body);
    assert.equal(a.original, undefined);
    hold = true;
    const b = d.checkExact('http://a.test/dir2/a', new Date(), body);
    await until(() => gate.waiting.length === 1); // b's read ran: the put below is not in it
    await store.db.batch(a.ops as never);
    d.committed(a); // released once b's read leaves
    gate.release();
    assert.equal((await b).original?.uri, 'http://a.test/dir1/a');
    assert.deepEqual(d.inMemory, { digests: 0, fingerprints: 0 });
  } finally {
    await store.close();
  }
});

test('a near-duplicate whose index query ran before the other page was indexed, answered after, still finds it in memory', async () => {
  const store = await openStore(tempDir());
  try {
    const d = new ContentDedup(store.digests, store.simhash, { maxDistance: 3 });
    const gate = heldReads();
    const query = d.index.query.bind(d.index);
    let calls = 0;
    d.index.query = (fp, max) => (++calls === 1 ? gate.after(query(fp, max)) : query(fp, max));
    const fp = simhash64('the same article with one word changed at the end of it, here');
    const b = d.checkNearFingerprint('http://b.test/', fp ^ 1n); // its query runs on an empty index, answered late
    await until(() => gate.waiting.length === 1);
    const a = await d.checkNearFingerprint('http://a.test/', fp);
    assert.equal(a?.match, undefined, 'b is not in memory yet: its check has not come back');
    await a!.indexed; // a is in the index, and leaves memory once b's query is done
    gate.release();
    assert.deepEqual((await b)?.match, { url: 'http://a.test/', distance: 1 });
    await (await b)!.indexed;
    assert.deepEqual(d.inMemory, { digests: 0, fingerprints: 0 });
  } finally {
    await store.close();
  }
});

test('WARC/1.1 §6.7.2: of two identical payloads checked at the same moment, exactly one is the original', async () => {
  const dir = tempDir();
  const store = await openStore(dir);
  try {
    const d = new ContentDedup(store.digests, store.simhash, { digest: 'sha256' });
    const body = Buffer.from('<p>the same bytes</p>');
    const date = new Date('2026-01-02T03:04:05.678Z');
    const [a, b] = await Promise.all([d.checkExact('http://a.test/', date, body), d.checkExact('http://b.test/', date, body)]);
    assert.equal(a.digest, sha256Label(body), 'the WARC payload digest');
    assert.equal(a.original, undefined);
    assert.equal(a.ops.length, 1);
    assert.equal(b.original?.uri, 'http://a.test/');
    assert.equal(b.original?.recordId, a.recordId, 'refers to the record id the original response will carry');
    assert.equal(b.original?.date.getTime(), date.getTime());
    // The original's completion batch makes the claim durable; after release the store answers alone.
    await store.db.batch(a.ops as never);
    d.committed(a);
    assert.deepEqual(d.inMemory, { digests: 0, fingerprints: 0 });
    const c = await d.checkExact('http://c.test/', new Date(), body);
    assert.equal(c.original?.uri, 'http://a.test/');
    // The same URL again (a restart's re-fetch) is not a duplicate of itself.
    const again = await d.checkExact('http://a.test/', new Date(), body);
    assert.equal(again.original, undefined);
    assert.deepEqual(again.ops, [], 'the first capture stays the reference');
    assert.deepEqual(d.counts, { digests: 4, digestReads: 4, exact: 2, fingerprinted: 0, near: 0 }, 'no filter loaded: every lookup reads the store');
    // A restart: the filter is rebuilt from the store, and answers new payloads without a read.
    const d2 = new ContentDedup(store.digests, store.simhash, { digest: 'sha256' });
    await d2.load();
    assert.equal((await d2.checkExact('http://d.test/', new Date(), body)).original?.uri, 'http://a.test/', 'a stored digest is never filtered out');
    const fresh = await d2.checkExact('http://d.test/', new Date(), Buffer.from('new bytes'));
    assert.equal(fresh.original, undefined);
    assert.equal(fresh.ops.length, 1);
    assert.equal(d2.counts.digests, 2);
    assert.equal(d2.counts.digestReads, 1, 'the new payload was claimed without reading the store (Bloom filter)');
    const again2 = await d2.checkExact('http://e.test/', new Date(), Buffer.from('new bytes'));
    assert.equal(again2.original?.uri, 'http://d.test/', 'a claim is in the filter before it is durable');
  } finally {
    await store.close();
  }
});

test('--warc-digest: sha1 (default) and sha256 keys never meet, so a data dir resumed with the other algorithm never refers across them', async () => {
  const dir = tempDir();
  const store = await openStore(dir);
  try {
    const body = Buffer.from('<p>one payload, two algorithms</p>');
    const date = new Date('2026-01-02T03:04:05.678Z');
    const commit = async (d: ContentDedup, c: Awaited<ReturnType<ContentDedup['checkExact']>>) => { await store.db.batch(c.ops as never); d.committed(c); };
    // A crawl with sha256 archives the payload first.
    const s256 = new ContentDedup(store.digests, store.simhash, { digest: 'sha256' });
    const a = await s256.checkExact('http://a.test/', date, body);
    assert.equal(a.digest, sha256Label(body));
    await commit(s256, a);
    // Resumed with the default (sha1): the sha256 capture is not an original its revisits could name
    // (its WARC-Payload-Digest would not match theirs), so the payload is archived again, once.
    const s1 = new ContentDedup(store.digests, store.simhash);
    assert.deepEqual(await s1.load(), { otherAlgorithm: 1 }, 'the agent warns about the sha256 digests it will not use');
    assert.equal(s1.config.digest, 'sha1');
    const b = await s1.checkExact('http://b.test/', date, body);
    assert.equal(b.digest, 'sha1:' + base32(createHash('sha1').update(body).digest()));
    assert.equal(b.original, undefined, 'not a revisit of the sha256 capture');
    await commit(s1, b);
    const c = await s1.checkExact('http://c.test/', date, body);
    assert.equal(c.original?.uri, 'http://b.test/', 'a revisit of the sha1 capture');
    assert.equal(c.digest, b.digest);
    // And back to sha256: its own capture is still the original.
    const back = new ContentDedup(store.digests, store.simhash, { digest: 'sha256' });
    assert.deepEqual(await back.load(), { otherAlgorithm: 1 });
    assert.equal((await back.checkExact('http://d.test/', date, body)).original?.uri, 'http://a.test/');
  } finally {
    await store.close();
  }
});

test('Manku et al. 2007: concurrent near-duplicates find each other; the index is durable and memory is released', async () => {
  const dir = tempDir();
  const store = await openStore(dir);
  try {
    const d = new ContentDedup(store.digests, store.simhash, { maxDistance: 3 });
    const words = Array.from({ length: 400 }, (_, i) => `w${(i * 7919) % 1000}`).join(' ');
    const [a, b] = await Promise.all([d.checkNear('http://a.test/', words), d.checkNear('http://b.test/', words + ' footer')]);
    assert.ok(a && b);
    const matched = [a.match, b.match].filter(Boolean);
    assert.equal(matched.length, 1, 'one of the two is the near-duplicate of the other');
    assert.ok(matched[0]!.distance <= 3);
    await Promise.all([a.indexed, b.indexed]);
    assert.deepEqual(d.inMemory, { digests: 0, fingerprints: 0 });
    const c = await d.checkNear('http://c.test/', words);
    assert.deepEqual(c?.match, { url: 'http://a.test/', distance: 0 }, 'closest, then smallest URL');
    assert.equal(await d.checkNear('http://e.test/', '— … —'), undefined, 'no word: no fingerprint');
    const other = await d.checkNear('http://f.test/', Array.from({ length: 400 }, (_, i) => `v${(i * 104729) % 997}`).join(' '));
    assert.equal(other?.match, undefined);
    await Promise.all([c!.indexed, other!.indexed]);
    const off = new ContentDedup(store.digests, store.simhash, { near: false });
    assert.equal(off.wantsText, false);
    assert.equal(await off.checkNear('http://g.test/', words), undefined);
  } finally {
    await store.close();
  }
});

test('WARC/1.1 §6.7.2 + Manku et al.: planted exact duplicates become revisit records, near-duplicates are noted with their original, distinct pages are never merged', async () => {
  const web = await startSyntheticWeb({
    seed: 11, hosts: 12, pagesPerHost: 30, outLinks: 6, crossHostShare: 0.2, pageBytes: { min: 3000, max: 9000 },
    exactDupShare: 0.12, nearDupShare: 0.12, errorMix: { notFound: 0.05 },
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 20, delayFactor: 0, concurrency: 12,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', sitemaps: { enabled: false },
    });
    const summary = await agent.done;
    const expected = web.reachable();
    const pages = web.requests().filter((r) => !r.path.startsWith('/robots'));
    const counts = new Map<string, number>();
    for (const r of pages) { const u = r.url ?? `${r.host}${r.path}`; counts.set(u, (counts.get(u) ?? 0) + 1); }
    assert.deepEqual([...counts].filter(([, n]) => n > 1), [], 'no URL fetched twice');
    assert.deepEqual([...expected.reachable].filter((u) => !counts.has(u)), [], 'coverage unchanged: an exact duplicate holds the same links as its original');

    // Planted classes: an ordinary page and the pages that copy it.
    const dups = web.duplicates();
    const classOf = new Map<string, string>();
    for (const { url, of } of [...dups.exact, ...dups.near]) { classOf.set(of, of); classOf.set(url, of); }
    const exactSet = new Set(dups.exact.map((d) => d.url));
    const fetchedExact = dups.exact.filter((d) => counts.has(d.url) && counts.has(d.of));
    const fetchedNear = dups.near.filter((d) => counts.has(d.url) && counts.has(d.of));
    assert.ok(fetchedExact.length >= 10 && fetchedNear.length >= 10, `enough planted pairs crawled (${fetchedExact.length} exact, ${fetchedNear.length} near)`);

    const recs = await warcRecords(dir);
    const responses = new Map<string, WarcEntry>();
    const byId = new Map<string, WarcEntry>();
    const revisits = new Map<string, WarcEntry>();
    const metadata = new Map<string, WarcEntry>();
    for (const e of recs) {
      const uri = e.headers['WARC-Target-URI']!;
      byId.set(e.headers['WARC-Record-ID']!, e);
      if (e.type === 'response') { assert.ok(!responses.has(uri), `one response for ${uri}`); responses.set(uri, e); }
      if (e.type === 'revisit') revisits.set(uri, e);
      if (e.type === 'metadata') metadata.set(uri, e);
    }
    // Every revisit: the identical-payload-digest profile, and WARC-Refers-To-* naming an earlier response with that payload.
    for (const [uri, rv] of revisits) {
      const h = rv.headers;
      assert.equal(h['WARC-Profile'], IDENTICAL);
      assert.equal(PROFILE_URI['identical-payload-digest'], IDENTICAL);
      const target = h['WARC-Refers-To-Target-URI']!;
      assert.notEqual(target, uri);
      const orig = responses.get(target);
      assert.ok(orig, `${uri}: the original ${target} is a response record`);
      assert.equal(h['WARC-Refers-To'], orig.headers['WARC-Record-ID']);
      assert.equal(new Date(h['WARC-Refers-To-Date']!).getTime(), new Date(orig.headers['WARC-Date']!).getTime());
      assert.equal(h['WARC-Payload-Digest'], orig.headers['WARC-Payload-Digest']);
      assert.equal(classOf.get(uri), classOf.get(target), `${uri} and ${target} are one planted class`);
      assert.ok(exactSet.has(uri) || exactSet.has(target), 'only byte-identical pages are revisits');
    }
    // Every set of byte-identical pages (an original and its exact copies): one response, the rest revisits
    // (whichever was fetched first is the original).
    const identical = new Map<string, string[]>();
    for (const { url, of } of dups.exact) identical.set(of, [...(identical.get(of) ?? [of]), url]);
    for (const [of, members] of identical) {
      const fetched = members.filter((u) => counts.has(u));
      if (fetched.length === 0) continue;
      const stored = fetched.filter((u) => responses.has(u));
      assert.equal(stored.length, 1, `${of}: one response among ${fetched.join(' ')}`);
      for (const u of fetched) if (u !== stored[0]) assert.equal(revisits.get(u)?.headers['WARC-Refers-To-Target-URI'], stored[0], `${u} is a revisit of ${stored[0]}`);
    }

    const fetches = await fetchRecords(dir);
    // Near-duplicates: each planted near-duplicate (or its original, when fetched first) names a page of its class.
    const nearRecords = [...fetches.values()].filter((r) => r.duplicateKind === 'near');
    for (const r of nearRecords) {
      assert.ok(classOf.has(r.url) && classOf.get(r.url) === classOf.get(r.duplicateOf!), `false near-duplicate: ${r.url} ≁ ${r.duplicateOf}`);
      assert.ok(r.distance! <= 3 && r.distance! >= 0);
      const md = metadata.get(r.url);
      assert.ok(md, `${r.url}: a WARC metadata record notes it`);
      const fields = Buffer.from(md.payload!).toString('utf8');
      assert.match(fields, new RegExp(`^near-duplicate-of: ${r.duplicateOf!.replace(/[.?]/g, '\\$&')}\\r$`, 'm'));
      assert.match(fields, new RegExp(`^hamming-distance: ${r.distance}\\r$`, 'm'));
      assert.equal(md.headers['WARC-Concurrent-To'], responses.get(r.url)!.headers['WARC-Record-ID']);
    }
    for (const { url, of } of fetchedNear) {
      const a = fetches.get(url)!, b = fetches.get(of)!;
      const noted = [a, b].filter((r) => r.duplicateOf !== undefined);
      assert.ok(noted.length >= 1, `planted near-duplicate ${url} of ${of} detected`);
      for (const r of noted) assert.equal(classOf.get(r.duplicateOf!), of, `${r.url} names a page of its own class`);
    }
    // Ordinary pages outside every class are never duplicates, and carry their fingerprint.
    for (const r of fetches.values()) {
      if (r.status !== 200 || classOf.has(r.url)) continue;
      assert.equal(r.duplicateOf, undefined, `${r.url} is distinct`);
      assert.match(r.simhash ?? '', /^[0-9a-f]{16}$/);
    }
    // Counters: summary, fetch records and Prometheus agree.
    const dd = summary.dedup as { exact: number; near: number; fingerprinted: number; digests: number };
    assert.equal(dd.exact, revisits.size);
    assert.equal(dd.exact, [...fetches.values()].filter((r) => r.duplicateKind === 'exact').length);
    assert.equal(dd.near, nearRecords.length);
    assert.ok(dd.near >= fetchedNear.length / 2 && dd.exact >= fetchedExact.length / 2);
    const after = await (agent as unknown as { metrics: { render(): Promise<string> } }).metrics.render();
    assert.match(after, new RegExp(`ubicrawl_dedup_hits_total\\{kind="exact"\\} ${dd.exact}\\b`));
    assert.match(after, new RegExp(`ubicrawl_dedup_hits_total\\{kind="near"\\} ${dd.near}\\b`));
  } finally {
    await web.close();
  }
});

test('Manku et al. 2007, k = 3: near-duplicates whose ad block differs by a word are still found; unrelated pages never match', async (t) => {
  const web = await startSyntheticWeb({
    seed: 23, hosts: 10, pagesPerHost: 30, outLinks: 6, pageBytes: { min: 8000, max: 20000 },
    nearDupShare: 0.15, nearDupChangedWords: 1,
  });
  const dir = tempDir();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 10,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', sitemaps: { enabled: false }, warc: { enabled: false },
    });
    await agent.done;
    const fetches = await fetchRecords(dir);
    const classOf = new Map<string, string>();
    const near = web.duplicates().near.filter((d) => fetches.has(d.url) && fetches.has(d.of));
    for (const { url, of } of near) { classOf.set(url, of); classOf.set(of, of); }
    let found = 0;
    for (const { url, of } of near) if (fetches.get(url)!.duplicateOf !== undefined || fetches.get(of)!.duplicateOf !== undefined) found++;
    for (const r of fetches.values()) {
      if (r.duplicateOf === undefined) continue;
      assert.equal(r.duplicateKind, 'near');
      assert.ok(classOf.has(r.url) && classOf.get(r.duplicateOf) === classOf.get(r.url), `false near-duplicate: ${r.url} ≁ ${r.duplicateOf}`);
    }
    // docs/synthetic-web.md: with one changed word ≈ 98 % of 10–30 KB pairs are within distance 3.
    t.diagnostic(`planted near-duplicate pairs with one changed word: ${found} of ${near.length} found`);
    assert.ok(near.length >= 20, `${near.length} planted pairs`);
    assert.ok(found >= Math.ceil(near.length * 0.85), `found ${found} of ${near.length}`);
  } finally {
    await web.close();
  }
});

// A page linked only from an exact duplicate, through a relative link (which
// resolves against the duplicate's own URL): the duplicate's links are not
// extracted, so that page is never requested. /dir2/a is linked only from
// /dir1/a, so /dir1/a is always fetched (and its payload recorded) first.
function relativeWeb() {
  const same = '<!doctype html><title>t</title><p>one article, two addresses, relative links</p><a href="only-here">rel</a> <a href="/dir2/a">next</a>';
  return startSyntheticWeb({
    seed: 3, hosts: 1, pagesPerHost: 1, sitemap: false,
    intercept: (req) => {
      const html = { 'content-type': 'text/html; charset=utf-8' };
      if (req.path === '/') return { status: 200, headers: html, body: '<a href="/dir1/a">start</a>' };
      if (req.path === '/dir1/a' || req.path === '/dir2/a') return { status: 200, headers: html, body: same };
      if (req.path.endsWith('/only-here')) return { status: 200, headers: html, body: `<p>${req.path}</p>` };
      return null;
    },
  });
}

test('WARC/1.1 §6.7.2: the links of an exact duplicate are not extracted again (request log)', async () => {
  for (const enabled of [true, false]) {
    const web = await relativeWeb();
    const dir = tempDir();
    try {
      const agent = await startAgent({
        dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0,
        resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent', sitemaps: { enabled: false }, dedup: { enabled },
      });
      const summary = await agent.done;
      const paths = web.requests().map((r) => r.path).filter((p) => p !== '/robots.txt');
      assert.ok(paths.includes('/dir1/a') && paths.includes('/dir2/a') && paths.includes('/dir1/only-here'));
      const recs = await warcRecords(dir);
      const rv = recs.filter((e) => e.type === 'revisit');
      if (enabled) {
        assert.ok(!paths.includes('/dir2/only-here'), 'reachable only through the duplicate: not requested');
        assert.equal(rv.length, 1);
        assert.match(rv[0]!.headers['WARC-Target-URI']!, /\/dir2\/a$/);
        assert.match(rv[0]!.headers['WARC-Refers-To-Target-URI']!, /\/dir1\/a$/);
        assert.equal((summary.dedup as { exact: number }).exact, 1);
      } else {
        assert.ok(paths.includes('/dir2/only-here'), 'without dedup the duplicate is parsed like any page');
        assert.equal(rv.length, 0);
        assert.deepEqual(summary.dedup, { digests: 0, digestReads: 0, exact: 0, fingerprinted: 0, near: 0 });
      }
    } finally {
      await web.close();
    }
  }
});

test('dedup state survives a restart: duplicates of pages archived by the previous run refer to their records', async () => {
  const web = await startSyntheticWeb({ seed: 5, hosts: 6, pagesPerHost: 25, outLinks: 5, pageBytes: { min: 2000, max: 5000 }, exactDupShare: 0.2, nearDupShare: 0.15 });
  const dir = tempDir();
  try {
    const opts = {
      dataDir: dir, seeds: web.roots(), untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 6,
      resolve: web.resolveArgs.map(parseResolveRule), logLevel: 'silent' as const, sitemaps: { enabled: false },
    };
    const first = await startAgent({ ...opts, maxPages: 40 });
    await first.done;
    const second = await startAgent(opts);
    await second.done;
    const recs = await warcRecords(dir);
    const ids = new Map(recs.map((e) => [e.headers['WARC-Record-ID'], e]));
    const rv = recs.filter((e) => e.type === 'revisit');
    assert.ok(rv.length > 0);
    for (const e of rv) {
      const orig = ids.get(e.headers['WARC-Refers-To']);
      assert.ok(orig && orig.type === 'response', 'the original record is in the WARC files');
      assert.equal(orig.headers['WARC-Target-URI'], e.headers['WARC-Refers-To-Target-URI']);
    }
    const uris = recs.filter((e) => e.type === 'response').map((e) => e.headers['WARC-Payload-Digest']);
    const exactUrls = new Set(web.duplicates().exact.map((d) => d.url));
    const perDigest = new Map<string, string[]>();
    for (const e of recs.filter((x) => x.type === 'response')) {
      const l = perDigest.get(e.headers['WARC-Payload-Digest']!) ?? [];
      l.push(e.headers['WARC-Target-URI']!);
      perDigest.set(e.headers['WARC-Payload-Digest']!, l);
    }
    for (const [d, l] of perDigest) assert.ok(l.length === 1 || !l.some((u) => exactUrls.has(u)), `${d}: ${l.join(' ')} stored twice`);
    assert.ok(uris.length > 0);
  } finally {
    await web.close();
  }
});

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (c) => { stdout += c; });
    p.stderr.on('data', (c) => { stderr += c; });
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('ubicrawl simhash <file…>: one "hex  file" line each; HTML by its visible text (Charikar 2002 fingerprint)', async () => {
  const dir = tempDir();
  const html = join(dir, 'page.html');
  const htmlBoiler = join(dir, 'page2.html');
  const txt = join(dir, 'notes.txt');
  const article = Array.from({ length: 200 }, (_, i) => `word${(i * 31) % 97}`).join(' ');
  writeFileSync(html, `<html><head><title>T</title><style>p{}</style></head><body><p>${article}</p><script>var x = 1;</script></body></html>`);
  writeFileSync(htmlBoiler, `<!doctype html><html><body><div class="x"><p>${article}</p></div><!-- other boilerplate --></body></html>`);
  writeFileSync(txt, 'Hello, world: plain text is fingerprinted as it is.');
  const r = await runCli(['simhash', html, htmlBoiler, txt]);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 3);
  const hexes = lines.map((l) => { const m = /^([0-9a-f]{16}) {2}(.+)$/.exec(l); assert.ok(m, l); return m[1]!; });
  const text = extractPage(Buffer.from(`<html><head><title>T</title><style>p{}</style></head><body><p>${article}</p><script>var x = 1;</script></body></html>`), { url: 'http://localhost/', contentType: 'text/html', robotsToken: 'ubicrawl', wantText: true }).text!;
  assert.equal(hexes[0], simhashHex(simhash64(text)));
  assert.equal(hexes[2], simhashHex(simhash64('Hello, world: plain text is fingerprinted as it is.')));
  // The title is visible text too, so the two pages differ by one word at most: within distance 3.
  const d = (BigInt('0x' + hexes[0]) ^ BigInt('0x' + hexes[1])).toString(2).replace(/0/g, '').length;
  assert.ok(d <= 3, `boilerplate changes only: distance ${d}`);
  const missing = await runCli(['simhash', join(dir, 'nope.html')]);
  assert.notEqual(missing.code, 0);
  assert.equal(missing.stderr.trim().split('\n').length, 1, 'one clear line');
});
