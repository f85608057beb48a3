import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  simhash64, hamming64, simhashHex, parseSimhashHex, popcount32,
  SIMHASH_TABLES, SIMHASH_TABLES_16, simhashLayout, type SimhashLayout,
  permute, unpermute, tableKeys, candidatePrefixes, candidateRanges, fingerprintFromKey,
  SimhashIndex, TABLE_KEY_BYTES, simhashPieces, PIECE_BREAK, PIECE_ENTITY,
} from '../src/dedup/simhash.js';
import { extractPage } from '../src/parse/html.js';
import { article, prng } from '../bench/textgen.js';

// Straightforward reference of the definition in simhash.ts (regex tokens,
// BigInt arithmetic, one vote per bit): slow but obviously right.
const M32 = 0xffffffffn;
function fmix32Ref(h: bigint): bigint {
  h ^= h >> 16n; h = (h * 0x85ebca6bn) & M32;
  h ^= h >> 13n; h = (h * 0xc2b2ae35n) & M32;
  return h ^ (h >> 16n);
}
function rotl32Ref(x: bigint, r: bigint): bigint { return ((x << r) | (x >> (32n - r))) & M32; }
/** Step 2: a token's hashes (a, b). */
function tokenHashRef(tok: string): [bigint, bigint] {
  let h = 0x811c9dc5n;
  for (let i = 0; i < tok.length; i++) h = ((h ^ BigInt(tok.charCodeAt(i))) * 0x01000193n) & M32;
  return [fmix32Ref(h), fmix32Ref(h ^ 0x9e3779b9n)];
}
/** Step 3: the 64-bit hash of a feature (its tokens in order). */
function featureHashRef(toks: string[]): bigint {
  let x = 0n, y = 0n;
  for (const t of toks) {
    const [a, b] = tokenHashRef(t);
    x = rotl32Ref(x, 11n) ^ a;
    y = rotl32Ref(y, 13n) ^ b;
  }
  const m = BigInt(toks.length);
  return (fmix32Ref(y ^ m) << 32n) | fmix32Ref(x ^ m);
}
/** simhash64 of the pangram below, computed once (a regression guard; the reference agrees, see the test). */
const PINNED_FOX = 'f3b2d42893785d42';

function referenceSimhash(text: string, k = 3): bigint {
  const toks = text.toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
  if (toks.length === 0) return 0n;
  const feats: string[][] = [];
  if (toks.length < k) feats.push(toks);
  else for (let i = 0; i + k <= toks.length; i++) feats.push(toks.slice(i, i + k));
  const v = new Array<number>(64).fill(0);
  for (const f of feats) {
    const h = featureHashRef(f);
    for (let b = 0; b < 64; b++) v[b] += Number((h >> BigInt(b)) & 1n);
  }
  let fp = 0n;
  for (let b = 0; b < 64; b++) if (v[b] * 2 > feats.length) fp |= 1n << BigInt(b);
  return fp;
}

function randomFp(r: () => number): bigint {
  return (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32));
}

function flipBits(fp: bigint, n: number, r: () => number): bigint {
  const bits = new Set<number>();
  while (bits.size < n) bits.add(Math.floor(r() * 64));
  for (const b of bits) fp ^= 1n << BigInt(b);
  return fp;
}

test('Charikar 2002 definition: one feature → the fingerprint is that feature\'s hash', () => {
  // Three tokens with shingle 3 = one feature "hello world foo".
  assert.equal(simhash64('Hello,  WORLD!! foo'), featureHashRef(['hello', 'world', 'foo']));
  // Fewer tokens than the shingle size: one feature of all tokens.
  assert.equal(simhash64('Hello world'), featureHashRef(['hello', 'world']));
  assert.equal(simhash64('Grüße aus Köln', { shingle: 3 }), featureHashRef(['grüße', 'aus', 'köln']));
  assert.equal(simhash64('one', { shingle: 1 }), featureHashRef(['one']));
  // Pinned values: the definition is a wire format between agents (simhash.ts, version 2).
  assert.equal(simhashHex(simhash64('hello world foo')), simhashHex(featureHashRef(['hello', 'world', 'foo'])));
  assert.equal(simhashHex(simhash64('The quick brown fox jumps over the lazy dog')), PINNED_FOX);
  assert.equal(simhashHex(referenceSimhash('The quick brown fox jumps over the lazy dog')), PINNED_FOX);
  // Word order matters (rotations), a repeated word is still a word.
  assert.notEqual(simhash64('a b c'), simhash64('c b a'));
  assert.notEqual(simhash64('a a a'), simhash64('a a'));
});

test('tokenisation: case, punctuation, markup-like symbols and whitespace do not matter', () => {
  const a = 'The quick brown fox -- jumps over the lazy dog; again & again.';
  const b = 'the QUICK\tbrown\n\nfox jumps (over) the "lazy" dog again again';
  assert.equal(simhash64(a), simhash64(b));
  // Letters with combining marks stay in their word; digits are words too.
  assert.equal(simhash64('cafe\u0301 au lait 2024'), referenceSimhash('cafe\u0301 au lait 2024'));
  assert.equal(simhash64('Привет, мир! Съешь же ещё этих мягких булок.'), referenceSimhash('Привет, мир! Съешь же ещё этих мягких булок.'));
  // Astral-plane letters (𝒜, U+1D49C) and emoji (not letters) behave as in the reference.
  assert.equal(simhash64('𝒜lpha 😀 beta gamma 😀 delta'), referenceSimhash('𝒜lpha 😀 beta gamma 😀 delta'));
});

test('no letters or digits → 0n; empty → 0n', () => {
  assert.equal(simhash64(''), 0n);
  assert.equal(simhash64('  ... !!! ——  😀 '), 0n);
});

test('matches the bit-per-feature reference on long texts (lane flushes, buffer growth, shingle sizes)', () => {
  for (const [seed, words] of [[1, 10], [2, 254], [3, 255], [4, 256], [5, 1000], [6, 30000]] as const) {
    const t = article(seed, words);
    for (const k of [1, 2, 3, 5]) assert.equal(simhash64(t, { shingle: k }), referenceSimhash(t, k), `seed ${seed} k ${k}`);
  }
  // Mixed scripts and a large text (~3 MB of UTF-8) that does not fit the kept buffer.
  const big = ('Ελληνικά κείμενα και 日本語テキスト mixed with English words 42. ').repeat(50000);
  assert.equal(simhash64(big), referenceSimhash(big));
});

// Characters whose lower case is not a one-unit, context-free map (Σ: Final_Sigma;
// İ: two units; the Kelvin sign: lower-cases to ASCII k), surrogates (pairs,
// lone, Deseret letters with a case), combining marks, no-break space.
const TRICKY = ['a', 'B', '7', ' ', '.', 'é', 'É', 'ß', 'İ', 'ı', 'Σ', 'σ', 'ς', '\u212a', '\u00a0', 'ǅ', 'Ⅰ', 'Ⓐ', '\u0301',
  '東', '\u{10400}', '\u{10428}', '\u{1F600}', '\ud800', '\udc00', '\u{1D49C}'];
function trickyText(r: () => number, len: number): string {
  let t = '';
  for (let i = 0; i < len; i++) t += r() < 0.5 ? TRICKY[Math.floor(r() * TRICKY.length)] : 'abcdefgh'[Math.floor(r() * 8)];
  return t;
}

test('lower-casing in place equals String.prototype.toLowerCase (Σ, İ, Kelvin sign, surrogates)', () => {
  const r = prng(77);
  for (let i = 0; i < 3000; i++) {
    const t = trickyText(r, 1 + Math.floor(r() * 30));
    assert.equal(simhash64(t), referenceSimhash(t), JSON.stringify(t));
  }
  assert.equal(simhash64('\u212a\u212a\u212a'), simhash64('kkk'));
  assert.equal(simhash64('ΟΔΟΣ ΟΔΟΣ.Α'), referenceSimhash('ΟΔΟΣ ΟΔΟΣ.Α')); // Final_Sigma depends on the neighbours
});

test('simhashPieces: equal to simhash64 of the concatenated pieces, or null (then the caller builds the text)', () => {
  const r = prng(78);
  let nulls = 0;
  for (let i = 0; i < 3000; i++) {
    const src = trickyText(r, 40);
    const pieces: number[] = [];
    let text = '';
    for (let p = 0, n = 1 + Math.floor(r() * 8); p < n; p++) {
      const x = r();
      if (x < 0.2) { pieces.push(PIECE_BREAK, 0); text += ' '; }
      else if (x < 0.35) { const cp = [0x26, 0xe9, 0x3a3, 0x1f600, 0x10400, 0x41][Math.floor(r() * 6)]!; pieces.push(PIECE_ENTITY, cp); text += String.fromCodePoint(cp); }
      else { const a = Math.floor(r() * 40), b = a + Math.floor(r() * (41 - a)); pieces.push(a, b); text += src.slice(a, b); }
    }
    const fp = simhashPieces(src, Int32Array.from(pieces), pieces.length / 2);
    if (fp === null) { nulls++; continue; }
    assert.equal(fp, simhash64(text), JSON.stringify(text));
  }
  assert.ok(nulls < 3000);
  assert.equal(simhashPieces('foobar', Int32Array.from([0, 3, PIECE_BREAK, 0, 3, 6]), 3), simhash64('foo bar'));
  assert.equal(simhashPieces('foobar', Int32Array.from([0, 3, 3, 6]), 2), simhash64('foobar'));
});

test('extractPage wantFingerprint: simhash64 of the text wantText returns (inline tags, entities, cap)', () => {
  const r = prng(79);
  const tags = ['<b>', '</b>', '<p>', '</p>', '<br>', '<span>', '&amp;', '&eacute;', '&Sigma;', '&#x1F600;', '&nbsp;', '<script>x y</script>', '<!-- c -->', '<title>t</title>'];
  for (let i = 0; i < 1500; i++) {
    let h = '<html><body>';
    for (let j = 0, n = Math.floor(r() * 30); j < n; j++) h += r() < 0.3 ? tags[Math.floor(r() * tags.length)] : trickyText(r, 1 + Math.floor(r() * 6));
    const body = Buffer.from(h + '</body></html>');
    const maxTextChars = i % 5 === 0 ? 1 + Math.floor(r() * 20) : undefined; // past the cap the text is collapsed and cut
    const opts = { url: 'http://a.test/', contentType: 'text/html; charset=utf-8', robotsToken: 'ubicrawl', maxTextChars };
    const text = extractPage(body, { ...opts, wantText: true }).text!;
    const only = extractPage(body, { ...opts, wantFingerprint: true });
    assert.equal(only.fingerprint, simhash64(text), h);
    assert.equal(only.text, undefined);
    const both = extractPage(body, { ...opts, wantText: true, wantFingerprint: true });
    assert.equal(both.text, text);
    assert.equal(both.fingerprint, simhash64(text));
  }
  const page = Buffer.from('<p>Caf&eacute;<b>s</b> and <i>bars</i></p><div>next</div>');
  const ex = extractPage(page, { url: 'http://a.test/', contentType: 'text/html', robotsToken: 'ubicrawl', wantFingerprint: true });
  assert.equal(ex.fingerprint, simhash64('Cafés and bars next'));
});

test('hamming64 and popcount32', () => {
  assert.equal(hamming64(0n, 0n), 0);
  assert.equal(hamming64(0n, (1n << 64n) - 1n), 64);
  assert.equal(hamming64(1n << 63n, 0n), 1);
  assert.equal(hamming64(0xf0f0n, 0x0ff0n), 8);
  assert.equal(hamming64(-1n, 0n), 64); // negative inputs are read as 64-bit two's complement
  const r = prng(9);
  for (let i = 0; i < 1000; i++) {
    const a = randomFp(r), b = randomFp(r);
    let x = a ^ b, n = 0;
    while (x) { n += Number(x & 1n); x >>= 1n; }
    assert.equal(hamming64(a, b), n);
    assert.equal(hamming64(b, a), n);
  }
  assert.equal(popcount32(0xffffffff), 32);
  assert.equal(popcount32(0x80000001), 2);
});

test('simhashHex / parseSimhashHex round-trip', () => {
  assert.equal(simhashHex(0xabcn), '0000000000000abc');
  assert.equal(simhashHex((1n << 64n) - 1n), 'ffffffffffffffff');
  assert.equal(parseSimhashHex('0000000000000abc'), 0xabcn);
  assert.equal(parseSimhashHex('0xFFFFFFFFFFFFFFFF'), (1n << 64n) - 1n);
  assert.equal(parseSimhashHex('xyz'), null);
  assert.equal(parseSimhashHex('1'.repeat(17)), null);
});

test('Manku et al. 2007 §3: same article with a different date line, ad slot or nav item is within distance 3', () => {
  const body = article(42, 1500);
  const a = `Home News Sport\nPosted 2024-05-17 by staff\n${body}\nAdvertisement: try our app\n© 2024`;
  const variants = [
    `Home News Sport\nPosted 2024-05-18 by staff\n${body}\nAdvertisement: try our app\n© 2024`,
    `Home News Sport\nPosted 2024-05-17 by staff\n${body}\nAdvertisement: cheap flights\n© 2024`,
    `Home News Weather\nPosted 2024-05-17 by staff\n${body}\nAdvertisement: try our app\n© 2024`,
    `Home News Sport\nPosted 2024-05-17 by staff\n${body}\nAdvertisement: try our app\n© 2025 Example Media`,
  ];
  const fa = simhash64(a);
  for (const v of variants) assert.ok(hamming64(fa, simhash64(v)) <= 3, `distance ${hamming64(fa, simhash64(v))}`);
});

test('Manku et al. 2007: near-duplicate recall and distinct-page separation over 100 article pairs', () => {
  // Same 1000-word article, a differing boilerplate line of 3 words on top.
  // SimHash bits flip with probability θ/π (Charikar): 3 new words out of
  // 1000 leave ~1.5 bits expected; a few pairs reach 4–5. Distinct articles
  // sit near 32 (random).
  const near: number[] = [];
  const far: number[] = [];
  for (let s = 0; s < 100; s++) {
    const body = article(1000 + s, 1000);
    near.push(hamming64(simhash64(article(50000 + s, 3) + '\n' + body), simhash64(article(60000 + s, 3) + '\n' + body)));
    far.push(hamming64(simhash64(body), simhash64(article(2000 + s, 1000))));
  }
  const within = near.filter((d) => d <= 3).length;
  assert.ok(within >= 88, `near-duplicates within 3: ${within}/100`);
  assert.ok(Math.max(...near) <= 6, `max near distance ${Math.max(...near)}`);
  assert.ok(Math.min(...far) >= 15, `min distinct distance ${Math.min(...far)}`);
  const med = [...far].sort((x, y) => x - y)[50];
  assert.ok(med >= 28 && med <= 36, `median distinct distance ${med}`);
});

test('layouts: every table is a permutation of the 64 bits; permute/unpermute round-trip; keys sort by permuted value', () => {
  const r = prng(3);
  for (const layout of [SIMHASH_TABLES, SIMHASH_TABLES_16, simhashLayout(8, 2)]) {
    const ids = new Set<number>();
    for (const t of layout.tables) {
      ids.add(t.id);
      const seen = new Array<number>(64).fill(0);
      for (const [s, w] of t.blocks) for (let i = s; i < s + w; i++) seen[i]++;
      assert.deepEqual(seen, new Array<number>(64).fill(1), `table ${t.id}`);
    }
    assert.equal(ids.size, layout.tables.length);
    for (let i = 0; i < 200; i++) {
      const fp = randomFp(r);
      for (const t of layout.tables) assert.equal(unpermute(permute(fp, t), t), fp);
      const keys = tableKeys(fp, layout);
      assert.equal(keys.length, layout.tables.length);
      for (const k of keys) {
        assert.equal(k.length, TABLE_KEY_BYTES);
        assert.equal(fingerprintFromKey(k, layout), fp);
      }
    }
  }
  assert.equal(SIMHASH_TABLES.tables.length, 4);
  assert.equal(SIMHASH_TABLES.prefixBits, 16);
  assert.equal(SIMHASH_TABLES_16.tables.length, 16);
  assert.equal(fingerprintFromKey(Buffer.from([9, 1, 2])), null);
  assert.equal(fingerprintFromKey(Buffer.from([200, 0, 0, 0, 0, 0, 0, 0, 0])), null);
  // Table 1 of the default layout leads with bits 16..31 of the fingerprint.
  const k1 = tableKeys(0x1111222233334444n)[1];
  assert.equal(k1.toString('hex'), '01' + '2222' + '1111' + '3333' + '4444');
  assert.equal(candidatePrefixes(0x1111222233334444n)[1].toString('hex'), '012222');
});

function plantedRecall(layout: SimhashLayout, maxD: number, size: number, queries: number): void {
  const r = prng(11 + layout.tables.length);
  const index = new SimhashIndex<number>(layout);
  const stored: bigint[] = [];
  const hi = new Uint32Array(size), lo = new Uint32Array(size);
  for (let i = 0; i < size; i++) {
    const fp = randomFp(r);
    stored.push(fp); index.add(fp, i);
    hi[i] = Number(fp >> 32n); lo[i] = Number(fp & 0xffffffffn);
  }
  // Plant: for `queries` stored fingerprints, query at every distance 0..maxD.
  for (let q = 0; q < queries; q++) {
    const target = Math.floor(r() * stored.length);
    for (let d = 0; d <= maxD; d++) {
      const query = flipBits(stored[target], d, r);
      const got = index.query(query, maxD);
      const hit = got.find((m) => m.id === target);
      assert.ok(hit, `planted at distance ${d} not found (${layout.tables.length} tables)`);
      assert.equal(hit.distance, d);
      // Exactly the brute-force answer, each id once, closest first.
      const qh = Number(query >> 32n), ql = Number(query & 0xffffffffn);
      const brute = new Set<number>();
      for (let i = 0; i < size; i++) if (popcount32(hi[i] ^ qh) + popcount32(lo[i] ^ ql) <= maxD) brute.add(i);
      assert.deepEqual(new Set(got.map((m) => m.id)), brute);
      assert.equal(brute.size, got.length);
      for (let i = 1; i < got.length; i++) assert.ok(got[i - 1].distance <= got[i].distance);
    }
  }
}

test('Manku et al. 2007 §3: 100 % recall for planted fingerprints at distance 0..3 (4-table layout)', () => {
  plantedRecall(SIMHASH_TABLES, 3, 30000, 300);
});

test('Manku et al. 2007 §3: 100 % recall at distance 0..3 (16-table, 28-bit layout) and 0..6 (28-table layout)', () => {
  plantedRecall(SIMHASH_TABLES_16, 3, 8000, 150);
  plantedRecall(simhashLayout(8, 2), 6, 4000, 80);
});

test('SimhashIndex: delete, size, duplicate ids keep the closest distance', () => {
  const idx = new SimhashIndex();
  idx.add(0x1234n, 'a');
  idx.add(0x1235n, 'a');
  idx.add(0x1234n, 'b');
  assert.equal(idx.size, 3);
  assert.deepEqual(idx.query(0x1234n), [{ id: 'a', distance: 0 }, { id: 'b', distance: 0 }]);
  assert.equal(idx.delete(0x1234n, 'a'), true);
  assert.equal(idx.delete(0x1234n, 'a'), false);
  assert.deepEqual(idx.query(0x1234n), [{ id: 'b', distance: 0 }, { id: 'a', distance: 1 }]);
  assert.deepEqual(idx.query(0x1234n, 0), [{ id: 'b', distance: 0 }]);
  assert.equal(idx.size, 2);
});

// An ordered key-value store emulated by a sorted array: what a LevelDB range read does.
function sortedStore(layout: SimhashLayout, fps: bigint[]): Buffer[] {
  const keys: Buffer[] = [];
  fps.forEach((fp, id) => {
    const idBytes = Buffer.alloc(4);
    idBytes.writeUInt32BE(id);
    for (const k of tableKeys(fp, layout)) keys.push(Buffer.concat([k, idBytes]));
  });
  return keys.sort(Buffer.compare);
}
function lowerBound(keys: Buffer[], k: Buffer): number {
  let lo = 0, hi = keys.length;
  while (lo < hi) { const m = (lo + hi) >>> 1; if (Buffer.compare(keys[m], k) < 0) lo = m + 1; else hi = m; }
  return lo;
}

test('key layout maps onto ordered range reads: candidateRanges / candidatePrefixes find every match', () => {
  for (const layout of [SIMHASH_TABLES, SIMHASH_TABLES_16]) {
    const r = prng(21);
    const fps: bigint[] = [];
    for (let i = 0; i < 3000; i++) fps.push(randomFp(r));
    const keys = sortedStore(layout, fps);
    for (let q = 0; q < 200; q++) {
      const target = Math.floor(r() * fps.length);
      const query = flipBits(fps[target], q % 4, r);
      // Range reads.
      const found = new Map<number, number>();
      let scanned = 0;
      for (const { gte, lt } of candidateRanges(query, layout)) {
        for (let i = lowerBound(keys, gte); i < keys.length && Buffer.compare(keys[i], lt) < 0; i++) {
          scanned++;
          const fp = fingerprintFromKey(keys[i], layout)!;
          const d = hamming64(fp, query);
          if (d <= 3) found.set(keys[i].readUInt32BE(TABLE_KEY_BYTES), d);
        }
      }
      assert.equal(found.get(target), q % 4);
      assert.ok(scanned < 100, `a query reads a small part of the index (${scanned} keys)`);
      // Prefix reads give the same matches.
      const viaPrefix = new Set<number>();
      for (const p of candidatePrefixes(query, layout)) {
        for (let i = lowerBound(keys, p); i < keys.length && keys[i].subarray(0, p.length).equals(p); i++) {
          if (hamming64(fingerprintFromKey(keys[i], layout)!, query) <= 3) viaPrefix.add(keys[i].readUInt32BE(TABLE_KEY_BYTES));
        }
      }
      assert.deepEqual(viaPrefix, new Set(found.keys()));
    }
  }
  // A prefix of all ones: the range runs to the end of its table.
  const top = candidateRanges((1n << 64n) - 1n);
  assert.deepEqual([...top[0].lt], [1]);
  assert.equal(top[0].gte.toString('hex'), '00ffff000000000000');
});
