// Wire item kinds (src/mesh/wire.ts classifyItem/encodeItem; docs/mesh.md "Item
// kinds"): the hops byte's flags decoded once into crawl, seen, replica, marker
// or bad; round trips through the union, through outbox segments and batch
// frames; every one of the 256 hops bytes; the bytes themselves unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  classifyItem, encodeItem, encodeHandoffMarker, decodeBatch, decodeSegment, encodeBatchFrame, encodeSegment, isWireItem, shortPeerId,
  SEEN_ONLY_FLAG, SITEMAP_FLAG, GRANT_FLAG, HOPS_MASK, REPLICA_SEEN_HOPS, HANDOFF_MARKER_HOPS,
  type UrlItem, type WireItem,
} from '../src/mesh/wire.js';

const PEER = '12D3KooW' + 'B'.repeat(44);
const URL_A = 'http://a.example/page';
const MAP = 'http://maps.example/sitemap.xml';
const GRANT = 'http://shop.example/';

/** The length prefix of a frame (a varint) stripped: what decodeBatch reads. */
function payload(frame: Uint8Array): Uint8Array {
  let i = 0;
  while (frame[i]! & 0x80) i++;
  return frame.subarray(i + 1);
}

type Good = Exclude<WireItem, { kind: 'bad' }>;
const samples: Good[] = [
  { kind: 'crawl', url: URL_A, depth: 0, hops: 0, sitemap: false },
  { kind: 'crawl', url: URL_A, depth: 65535, hops: 3, sitemap: false },
  { kind: 'crawl', url: MAP, depth: 2, hops: 1, sitemap: true },
  { kind: 'crawl', url: MAP, depth: 2, hops: 31, sitemap: true, grant: GRANT },
  { kind: 'seen', url: URL_A, hops: 0 },
  { kind: 'seen', url: URL_A, hops: 2 },
  { kind: 'replica', url: URL_A },
  { kind: 'queued', url: URL_A, depth: 7, sitemap: false },
  { kind: 'queued', url: MAP, depth: 65535, sitemap: true },
  { kind: 'queued', url: URL_A, depth: 7, sitemap: false, owner: PEER },
  { kind: 'queued', url: MAP, depth: 2, sitemap: true, owner: PEER },
  { kind: 'replica', url: URL_A, owner: PEER },
  { kind: 'host-state', host: 'example.org', state: '{"backoff":2,"notBefore":1795730000000}' },
  { kind: 'recrawl', url: URL_A, depth: 3, state: Buffer.from([1, 2, 3, 250, 0, 7]) },
  { kind: 'marker', ringId: 0xfedcba9876543210n },
  { kind: 'marker', ringId: 0n },
];

test('wire items: every kind round-trips through the union, outbox segments and batch frames', () => {
  const items = samples.map(encodeItem);
  for (let i = 0; i < samples.length; i++) {
    assert.ok(isWireItem(items[i]!), `${samples[i]!.kind} is a valid wire item`);
    assert.deepEqual(classifyItem(items[i]!), samples[i]);
  }
  const fromSegment = decodeSegment(encodeSegment(items));
  assert.ok(fromSegment);
  assert.deepEqual(fromSegment.map(classifyItem), samples);
  const d = decodeBatch(payload(encodeBatchFrame({ batchId: 7, from: PEER, epoch: 1, flags: 0, items, seqs: items.map((_, i) => i + 1) })));
  assert.ok(d.ok);
  assert.equal(d.value.invalidUrls, 0);
  assert.deepEqual(d.value.items.map(classifyItem), samples);
});

test('wire items: the hops bytes are those peers and outboxes on disk already use', () => {
  const hops = (w: Good) => encodeItem(w).hops;
  assert.equal(hops({ kind: 'crawl', url: URL_A, depth: 1, hops: 2, sitemap: false }), 2);
  assert.equal(hops({ kind: 'crawl', url: MAP, depth: 1, hops: 2, sitemap: true }), 0x42);
  assert.equal(hops({ kind: 'crawl', url: MAP, depth: 1, hops: 2, sitemap: true, grant: GRANT }), 0x62);
  assert.equal(hops({ kind: 'seen', url: URL_A, hops: 0 }), 0x80);
  assert.equal(hops({ kind: 'seen', url: URL_A, hops: 1 }), 0x81);
  assert.equal(hops({ kind: 'replica', url: URL_A }), 0x9f);
  assert.equal(REPLICA_SEEN_HOPS, 0x9f);
  assert.equal(HANDOFF_MARKER_HOPS, 0xc0);
  assert.deepEqual(encodeItem({ kind: 'marker', ringId: 5n }), encodeHandoffMarker(5n));
  // Seen entries and replicas carry depth 0 (the receiver never reads it).
  assert.equal(encodeItem({ kind: 'seen', url: URL_A, hops: 1 }).depth, 0);
  assert.equal(encodeItem({ kind: 'replica', url: URL_A }).depth, 0);
  assert.equal(encodeItem({ kind: 'crawl', url: URL_A, depth: 0, hops: 0, sitemap: false, grant: GRANT }).grant, undefined, 'a grant travels with a sitemap only');
});

test('wire items: hop counts past the byte are capped below the flag bits (a seen entry never reads as a replica)', () => {
  const crawl = encodeItem({ kind: 'crawl', url: URL_A, depth: 0, hops: 40, sitemap: false });
  assert.deepEqual(classifyItem(crawl), { kind: 'crawl', url: URL_A, depth: 0, hops: HOPS_MASK, sitemap: false });
  const seen = encodeItem({ kind: 'seen', url: URL_A, hops: HOPS_MASK });
  assert.deepEqual(classifyItem(seen), { kind: 'seen', url: URL_A, hops: HOPS_MASK - 1 });
});

/** What each hops byte means, written from docs/mesh.md's table rather than from the code. */
function expectedKind(h: number): WireItem['kind'] | `bad:${string}` {
  if (h === 0xc0) return 'marker';
  if (h === 0x9f) return 'replica';
  if (h === 0xc1 || h === 0xc2) return 'queued';
  // A host state whose URL is not one, a recrawl entry whose second string is not a schedule, a held replica
  // passed on whose second string names no owner: meaningless.
  if (h >= 0xe0 && h <= 0xe3) return 'bad:grant';
  if (h >= 0x80) return h <= 0x9e ? 'seen' : 'bad:flags';
  if (h >= 0x20 && h <= 0x3f) return 'bad:flags';
  return 'crawl';
}

test('wire items: all 256 hops bytes, with and without a grant, classify as the table says', () => {
  const counts: Record<string, number> = {};
  for (let h = 0; h < 256; h++) {
    const url = h === 0xc0 ? encodeHandoffMarker(9n).url : URL_A;
    const withGrant: UrlItem = { url, depth: 0, hops: h, grant: GRANT };
    const plain: UrlItem = { url, depth: 0, hops: h };
    const want = expectedKind(h);
    const w = classifyItem(withGrant);
    const got = w.kind === 'bad' ? `bad:${w.reason}` : w.kind;
    assert.equal(got, want, `hops 0x${h.toString(16)}`);
    counts[got] = (counts[got] ?? 0) + 1;
    const p = classifyItem(plain);
    if (h & GRANT_FLAG && !(h & SEEN_ONLY_FLAG) && h & SITEMAP_FLAG) {
      assert.deepEqual(p, { kind: 'bad', reason: 'grant' }, `hops 0x${h.toString(16)} without its grant`);
    } else {
      assert.equal(p.kind === 'bad' ? `bad:${p.reason}` : p.kind, want, `hops 0x${h.toString(16)} without a grant`);
    }
    if (w.kind === 'crawl') {
      assert.equal(w.hops, h & HOPS_MASK);
      assert.equal(w.sitemap, (h & SITEMAP_FLAG) !== 0);
      assert.equal(w.grant, h & GRANT_FLAG ? GRANT : undefined, 'the grant is read only under its flag');
      assert.deepEqual(encodeItem(w), h & GRANT_FLAG ? withGrant : plain, 'crawl items re-encode to the same bytes');
    }
    if (w.kind === 'seen') {
      assert.equal(w.hops, h & HOPS_MASK);
      assert.deepEqual(encodeItem(w), plain);
    }
    // Held replicas passed on, with a second string that names their owner.
    if (h >= 0xe1 && h <= 0xe3) {
      const named = classifyItem({ ...plain, grant: `http://held.ubicrawl.invalid/v1/${PEER}` });
      assert.deepEqual(named, h === 0xe3 ? { kind: 'replica', url, owner: PEER } : { kind: 'queued', url, depth: 0, sitemap: h === 0xe2, owner: PEER });
      assert.deepEqual(encodeItem(named as Good), { ...plain, grant: `http://held.ubicrawl.invalid/v1/${PEER}` }, 'held replicas re-encode to the same bytes');
    }
    if (w.kind === 'queued') {
      assert.equal(w.sitemap, h === 0xc2);
      assert.deepEqual(encodeItem(w), plain, 'queued replicas re-encode to the same bytes');
    }
  }
  // 0x00–0x1f and 0x40–0x7f crawl; 0x20–0x3f, 0xa0–0xbf and 0xc3–0xff meaningless (0xc3, 0xe0 and 0xe1–0xe3 unless
  // they carry a host state, a recrawl entry or a held replica's owner); 0x80–0x9e seen; 0xc1–0xc2 queued replicas.
  assert.deepEqual(counts, { crawl: 96, 'bad:flags': 121, 'bad:grant': 4, seen: 31, replica: 1, marker: 1, queued: 2 });
});

test('wire items: a malformed marker is a bad item, not a marker and not a URL', () => {
  const m = encodeHandoffMarker(0x1234n);
  const bad: UrlItem[] = [
    { ...m, url: m.url.slice(0, -1) + 'g' }, // not hex
    { ...m, url: m.url + '0' }, // too long
    { ...m, depth: 1 },
    { url: URL_A, depth: 0, hops: HANDOFF_MARKER_HOPS }, // marker flags on an ordinary URL
  ];
  for (const it of bad) assert.deepEqual(classifyItem(it), { kind: 'bad', reason: 'marker' }, it.url);
  assert.deepEqual(classifyItem(m), { kind: 'marker', ringId: 0x1234n });
});

test('shortPeerId: the last 12 characters, as logs, metric labels and the API name a peer', () => {
  const id = '12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDHp7fYbyE9Jh8b9z6B';
  assert.equal(shortPeerId(id), 'byE9Jh8b9z6B');
  assert.equal(shortPeerId('short'), 'short');
});
