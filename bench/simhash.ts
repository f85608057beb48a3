// SimHash figures (docs/performance.md "Content dedup in the crawl"):
//   1. simhash64 throughput on 15 KB texts (English-like and non-Latin):
//      MB/s and µs/doc, median of 5 runs, CPU time of this process;
//   2. near-duplicate behaviour: Hamming distance between two copies of a
//      1000-word article that differ by a boilerplate line of w words, and
//      between distinct articles (what "distance ≤ 3" catches);
//   3. the in-memory permuted-table index (reference for the LevelDB one):
//      add and query rates, recall for planted near-duplicates, and false
//      matches of random queries.
// Run: npx tsc -p . && node dist/bench/simhash.js [--index N]

import { simhash64, hamming64, SimhashIndex, SIMHASH_TABLES } from '../src/dedup/simhash.js';
import { article, prng } from './textgen.js';
import { median } from './measure.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
const cpu = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

function to15k(text: string): string {
  while (text.length < 15000) text += ' ' + text;
  return text.slice(0, 15000);
}

// 1. Throughput.
const english = Array.from({ length: 100 }, (_, i) => to15k(article(100 + i, 3000)));
const GREEK = 'Η ταχεία καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο και τρέχει στο δάσος με χαρά';
const RUSSIAN = 'Съешь же ещё этих мягких французских булок да выпей чаю в тихом старом городе';
const mixed = Array.from({ length: 100 }, (_, i) => {
  const r = prng(500 + i);
  const words = (GREEK + ' ' + RUSSIAN + ' 東京 大阪 data 2024').split(' ');
  let t = '';
  while (t.length < 15000) t += words[Math.floor(r() * words.length)] + (r() < 0.1 ? '. ' : ' ');
  return t.slice(0, 15000);
});

console.log(`simhash64 — node ${process.version}`);
for (const [name, docs] of [['English-like, 15,000 chars', english], ['Greek/Cyrillic/CJK, 15,000 chars', mixed]] as const) {
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0) / docs.length;
  for (const d of docs) simhash64(d); // warm-up
  const runs: number[] = [];
  let sink = 0n;
  for (let run = 0; run < 5; run++) {
    const t0 = cpu();
    for (let rep = 0; rep < 5; rep++) for (const d of docs) sink ^= simhash64(d);
    runs.push(((cpu() - t0) * 1000) / (5 * docs.length));
  }
  const us = median(runs);
  console.log(`  ${name} (${(bytes / 1024).toFixed(1)} KiB UTF-8): ${us.toFixed(0)} µs/doc, ${(bytes / us).toFixed(1)} MB/s` + (sink === 1n ? ' ' : ''));
}

// 2. Near-duplicates.
console.log('\nnear-duplicates: 1000-word article + a differing boilerplate line of w words (100 pairs each)');
console.log('  w   | median | p90 | max | within 3');
for (const w of [1, 3, 5, 10, 20, 50]) {
  const ds: number[] = [];
  for (let s = 0; s < 100; s++) {
    const body = article(1000 + s, 1000);
    ds.push(hamming64(simhash64(article(50000 + s, w) + '\n' + body), simhash64(article(60000 + s, w) + '\n' + body)));
  }
  ds.sort((a, b) => a - b);
  console.log(`  ${String(w).padStart(3)} | ${String(ds[50]).padStart(6)} | ${String(ds[90]).padStart(3)} | ${String(ds[99]).padStart(3)} | ${ds.filter((d) => d <= 3).length} %`);
}
{
  const far: number[] = [];
  for (let s = 0; s < 200; s++) far.push(hamming64(simhash64(article(3000 + s, 1000)), simhash64(article(4000 + s, 1000))));
  far.sort((a, b) => a - b);
  console.log(`  distinct articles (200 pairs): min ${far[0]}, median ${far[100]}, max ${far[199]}`);
}

// 3. Index.
const N = arg('--index', 1_000_000);
const r = prng(77);
const rnd64 = (): bigint => (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32));
const index = new SimhashIndex<number>(SIMHASH_TABLES);
const fps: bigint[] = [];
let t0 = cpu();
for (let i = 0; i < N; i++) { const fp = rnd64(); fps.push(fp); index.add(fp, i); }
const addMs = cpu() - t0;
const Q = 50000;
let found = 0;
const qrates: number[] = [];
for (let run = 0; run < 5; run++) {
  t0 = cpu();
  for (let q = 0; q < Q / 5; q++) {
    const target = Math.floor(r() * N);
    let fp = fps[target];
    const d = q % 4;
    const flipped = new Set<number>();
    while (flipped.size < d) flipped.add(Math.floor(r() * 64));
    for (const b of flipped) fp ^= 1n << BigInt(b);
    if (index.query(fp, 3).some((m) => m.id === target)) found++;
  }
  qrates.push((Q / 5) / ((cpu() - t0) / 1000));
}
let falseMatches = 0;
for (let q = 0; q < 10000; q++) falseMatches += index.query(rnd64(), 3).length;
console.log(`\nin-memory SimhashIndex (4 tables × 16-bit prefix), ${N.toLocaleString('en')} random fingerprints:`);
console.log(`  add ${((N / addMs) * 1000).toFixed(0)} /s; query ${median(qrates).toFixed(0)} /s (median of 5 runs)`);
console.log(`  recall for planted near-duplicates at distance 0..3: ${((found / Q) * 100).toFixed(2)} % (${found}/${Q})`);
console.log(`  false matches (random query, distance ≤ 3): ${falseMatches} in 10,000 queries`);
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
