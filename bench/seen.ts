// Seen-set benchmark (docs/performance.md): N distinct URLs inserted through the
// DRUM seen-set (src/seen/drum.ts) into a real LevelDB, then N lookups of
// which half are hits (URLs inserted before, picked at random) and half
// misses (never-seen URLs). Keys are host-hash ‖ url-hash (src/store/keys.ts),
// computed inside the timed loop, as the crawler does for every link.
//
// Each run is a fresh child process with a fresh store in a temporary
// directory, so peak RSS (getrusage maxrss) and the page cache state of one
// run do not leak into the next. Figures are medians over --runs.
//
// Goal: ≥ 100 k ops/s, and the rate at 10 M within 2× of the rate
// at 1 M.
//
//   node dist/bench/seen.js [--sizes 1e6,1e7] [--runs 3] [--batch 4096]
//                           [--hosts 100000] [--chunk 256] [--dir /tmp]
//                           [--phase-lookup submit|check]
//
// --phase-lookup check (default) uses the lookup-only Drum.checkMany; submit
// runs the lookups as ordinary DRUM submissions (check + insert of misses).
import '../src/polyfill.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg, cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore, type StoreOptions } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { Drum, type DrumItem } from '../src/seen/drum.js';
import { dirBytes, mainThreadCpu, procRss, median } from './measure.js';

interface Args {
  sizes: number[]; runs: number; batch: number; hosts: number; chunk: number; dir: string;
  lookup: 'check' | 'submit'; child: boolean; keep: boolean; dbOpts: StoreOptions; filter: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { sizes: [1e6, 1e7], runs: 3, batch: 4096, hosts: 100_000, chunk: 256, dir: tmpdir(), lookup: 'check', child: false, keep: false, dbOpts: {}, filter: true };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = argv[i + 1];
    if (k === '--sizes') { a.sizes = String(v).split(',').map(Number); i++; }
    else if (k === '--runs') { a.runs = Number(v); i++; }
    else if (k === '--batch') { a.batch = Number(v); i++; }
    else if (k === '--hosts') { a.hosts = Number(v); i++; }
    else if (k === '--chunk') { a.chunk = Number(v); i++; }
    else if (k === '--dir') { a.dir = String(v); i++; }
    else if (k === '--phase-lookup') { a.lookup = v === 'submit' ? 'submit' : 'check'; i++; }
    else if (k === '--db') { a.dbOpts = JSON.parse(String(v)) as StoreOptions; i++; }
    else if (k === '--no-filter') a.filter = false;
    else if (k === '--child') a.child = true;
    else if (k === '--keep') a.keep = true;
    else if (k === '--help') {
      process.stdout.write('node dist/bench/seen.js [--sizes 1e6,1e7] [--runs 3] [--batch 4096] [--hosts 100000] [--chunk 256] [--dir DIR] [--phase-lookup check|submit]\n');
      process.exit(0);
    }
  }
  return a;
}

/** The i-th distinct URL of the synthetic crawl: `hosts` sites, a few path shapes. */
function urlOf(i: number, hosts: number): { host: string; url: string } {
  const h = i % hosts;
  const host = `www.site${h}.example`;
  return { host, url: `https://${host}/section-${i % 97}/article-${i}.html?ref=${i % 13}` };
}

function itemOf(i: number, hosts: number): DrumItem {
  const { host, url } = urlOf(i, hosts);
  return { key: seenKey(hostKey(host), url) };
}

/** xorshift32: reproducible pseudo-random picks without allocation. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
}

interface RunResult {
  n: number;
  insertSecs: number; lookupSecs: number;
  /** Process CPU (all threads: JS, LevelDB reads, writes and compaction), seconds. */
  insertCpu: number; lookupCpu: number;
  /** Of which the main (JS) thread. */
  insertMain: number; lookupMain: number;
  insertSplit: { anon: number; file: number }; lookupSplit: { anon: number; file: number };
  filter: { ready: boolean; keys: number; bytes: number; layers: number };
  /** Restart: seconds to rebuild the filter from the store, and the rebuilt filter. */
  rebuildSecs: number; rebuilt: { ready: boolean; keys: number; bytes: number; layers: number };
  load: number;
  /** Insert rate over each tenth of the insert phase (ops/s). */
  insertWindows: number[];
  lookupWindows: number[];
  hits: number; expectedHits: number; falseMisses: number; falseHits: number;
  rssMB: number; dbMB: number; stats: Record<string, number>;
}

async function runOnce(a: Args, n: number): Promise<RunResult> {
  const dir = mkdtempSync(join(a.dir, 'ubicrawl-bench-seen-'));
  const store = await openStore(dir, a.dbOpts);
  const VALUE = Buffer.from([1]);
  const drum = new Drum<DrumItem>(store.db, store.seen, {
    batchSize: a.batch, maxWaitMs: 5, valueOf: () => VALUE, onNew: () => [], afterCommit: () => {},
    ...(a.filter ? {} : { filter: false as const }),
  });
  const tenth = Math.max(1, Math.floor(n / 10));

  await drum.ready();
  const cpu = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
  const load0 = loadavg()[0]!;
  let c0 = cpu();
  let m0 = mainThreadCpu();
  // Insert phase: "pages" of `chunk` links each, submitted without waiting,
  // with at most two batches' worth outstanding (a crawler's parse pipeline).
  const insertWindows: number[] = [];
  let t0 = performance.now();
  let tWin = t0;
  let doneItems = 0;
  let nextMark = tenth;
  const outstanding: Array<{ p: Promise<void>; count: number }> = [];
  const maxOutstanding = Math.max(a.chunk, 2 * a.batch);
  let outCount = 0;
  const settle = async (): Promise<void> => {
    const o = outstanding.shift()!;
    await o.p;
    outCount -= o.count;
    doneItems += o.count;
    while (doneItems >= nextMark && insertWindows.length < 10) {
      const now = performance.now();
      insertWindows.push(tenth / ((now - tWin) / 1000));
      tWin = now;
      nextMark += tenth;
    }
  };
  for (let i = 0; i < n; i += a.chunk) {
    const end = Math.min(n, i + a.chunk);
    const items: DrumItem[] = new Array(end - i);
    for (let j = i; j < end; j++) items[j - i] = itemOf(j, a.hosts);
    outstanding.push({ p: drum.submit(items), count: items.length });
    outCount += items.length;
    while (outCount > maxOutstanding) await settle();
  }
  await drum.flush();
  while (outstanding.length > 0) await settle();
  const insertSecs = (performance.now() - t0) / 1000;
  const insertCpu = cpu() - c0;
  const insertMain = mainThreadCpu() - m0;
  const insertSplit = procRss();
  if (process.env.BENCH_MEM) {
    (globalThis as { gc?: () => void }).gc?.();
    process.stderr.write(`after insert${(globalThis as { gc?: unknown }).gc ? ' + gc' : ''}: ${JSON.stringify(process.memoryUsage())}, filter ${JSON.stringify(drum.filterInfo)}\n`);
  }
  m0 = mainThreadCpu();
  c0 = cpu();
  if (drum.stats.fresh !== n) throw new Error(`expected ${n} fresh, got ${drum.stats.fresh}`);

  // Lookup phase: half hits (random earlier URLs), half misses (new URLs).
  const lookupWindows: number[] = [];
  const r = rng(12345);
  let hits = 0, expectedHits = 0, falseMisses = 0, falseHits = 0;
  t0 = performance.now();
  tWin = t0;
  nextMark = tenth;
  const q = Math.max(a.chunk, a.batch);
  let missSerial = n;
  if (a.lookup === 'check') {
    // Two rounds in flight: the next batch is hashed while the store answers the previous one.
    let prev: { p: Promise<boolean[]>; hit: Uint8Array } | undefined;
    const consume = async (b: { p: Promise<boolean[]>; hit: Uint8Array }): Promise<void> => {
      const res = await b.p;
      for (let k = 0; k < res.length; k++) {
        if (res[k]) hits++;
        if (b.hit[k] === 1) { expectedHits++; if (!res[k]) falseMisses++; }
        else if (res[k]) falseHits++;
      }
    };
    for (let i = 0; i < n; i += q) {
      const end = Math.min(n, i + q);
      const keys: Buffer[] = new Array(end - i);
      const hit = new Uint8Array(end - i);
      for (let j = i; j < end; j++) {
        const isHit = (r() & 1) === 0;
        hit[j - i] = isHit ? 1 : 0;
        keys[j - i] = itemOf(isHit ? r() % n : missSerial++, a.hosts).key;
      }
      const cur = { p: drum.checkMany(keys), hit };
      if (prev) await consume(prev);
      prev = cur;
      while (end >= nextMark && lookupWindows.length < 10) {
        const now = performance.now();
        lookupWindows.push(tenth / ((now - tWin) / 1000));
        tWin = now;
        nextMark += tenth;
      }
    }
    if (prev) await consume(prev);
  } else {
    const fresh0 = drum.stats.fresh;
    for (let i = 0; i < n; i += a.chunk) {
      const end = Math.min(n, i + a.chunk);
      const items: DrumItem[] = new Array(end - i);
      for (let j = i; j < end; j++) {
        const isHit = (r() & 1) === 0;
        if (isHit) expectedHits++;
        items[j - i] = itemOf(isHit ? r() % n : missSerial++, a.hosts);
      }
      outstanding.push({ p: drum.submit(items), count: items.length });
      outCount += items.length;
      while (outCount > maxOutstanding) { const o = outstanding.shift()!; await o.p; outCount -= o.count; }
      while (end >= nextMark && lookupWindows.length < 10) {
        const now = performance.now();
        lookupWindows.push(tenth / ((now - tWin) / 1000));
        tWin = now;
        nextMark += tenth;
      }
    }
    await drum.flush();
    for (const o of outstanding) await o.p;
    const misses = drum.stats.fresh - fresh0;
    hits = n - misses;
    falseMisses = Math.max(0, expectedHits - hits);
  }
  const lookupSecs = (performance.now() - t0) / 1000;
  const lookupCpu = cpu() - c0;
  const lookupMain = mainThreadCpu() - m0;
  const lookupSplit = procRss();
  await store.close();
  // Restart: the filter is rebuilt from the store by one key scan.
  const store2 = await openStore(dir, a.dbOpts);
  const tr = performance.now();
  const drum2 = new Drum<DrumItem>(store2.db, store2.seen, { batchSize: a.batch, maxWaitMs: 5, valueOf: () => VALUE, onNew: () => [], afterCommit: () => {} });
  await drum2.ready();
  const rebuildSecs = (performance.now() - tr) / 1000;
  const rebuilt = drum2.filterInfo;
  await store2.close();
  const dbMB = dirBytes(join(dir, 'db')) / 2 ** 20;
  if (!a.keep) rmSync(dir, { recursive: true, force: true });
  return {
    n, insertSecs, lookupSecs, insertCpu, lookupCpu, insertMain, lookupMain, insertSplit, lookupSplit, filter: drum.filterInfo, rebuildSecs, rebuilt, load: (load0 + loadavg()[0]!) / 2, insertWindows, lookupWindows, hits, expectedHits, falseMisses, falseHits,
    rssMB: process.resourceUsage().maxRSS / 1024, dbMB, stats: { ...drum.stats },
  };
}

function childRun(a: Args, n: number): Promise<RunResult> {
  const self = fileURLToPath(import.meta.url);
  const argv = [...process.execArgv, self, '--child', '--sizes', String(n), '--batch', String(a.batch), '--hosts', String(a.hosts),
    '--chunk', String(a.chunk), '--dir', a.dir, '--phase-lookup', a.lookup, '--db', JSON.stringify(a.dbOpts), ...(a.keep ? ['--keep'] : []), ...(a.filter ? [] : ['--no-filter'])];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => { out += d; });
    child.on('exit', (code) => {
      if (code !== 0) { reject(new Error(`child exited ${code}`)); return; }
      resolve(JSON.parse(out.trim().split('\n').pop()!) as RunResult);
    });
  });
}


const k = (x: number): string => `${(x / 1000).toFixed(0)} k`;
const M = (n: number): string => (n >= 1e6 ? `${n / 1e6} M` : `${n / 1e3} k`);

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  if (a.child) {
    const res = await runOnce(a, a.sizes[0]);
    process.stdout.write(JSON.stringify(res) + '\n');
    return;
  }
  console.log(`seen-set (DRUM over LevelDB) — node ${process.version}; batch ${a.batch}, ${a.hosts} hosts, ${a.chunk} links per submit, lookups via ${a.lookup === 'check' ? 'checkMany' : 'submit'}, filter ${a.filter ? 'on' : 'off'}, store options ${JSON.stringify(a.dbOpts)}, ${a.runs} runs`);
  // Sizes are interleaved run by run (1 M, 10 M, 1 M, 10 M, …) so that both
  // see the same machine conditions; the ratio is of medians.
  const results = new Map<number, RunResult[]>(a.sizes.map((n) => [n, []]));
  for (let run = 0; run < a.runs; run++) {
    for (const n of a.sizes) {
      const res = await childRun(a, n);
      results.get(n)!.push(res);
      const ins = n / res.insertSecs, look = n / res.lookupSecs;
      console.log(`  ${M(n)} run ${run + 1}: insert ${k(ins)} ops/s (last tenth ${k(res.insertWindows.at(-1) ?? 0)}), lookup ${k(look)} ops/s (last tenth ${k(res.lookupWindows.at(-1) ?? 0)}), ` +
        `hits ${res.hits}/${res.expectedHits} expected, false misses ${res.falseMisses}, false hits ${res.falseHits}, peak RSS ${res.rssMB.toFixed(0)} MB, db ${res.dbMB.toFixed(0)} MB`);
      console.log(`      CPU per op: insert ${(res.insertCpu * 1e6 / n).toFixed(2)} µs (JS thread ${(res.insertMain * 1e6 / n).toFixed(2)}), ` +
        `lookup ${(res.lookupCpu * 1e6 / n).toFixed(2)} µs (JS thread ${(res.lookupMain * 1e6 / n).toFixed(2)}); load average ${res.load.toFixed(1)} on ${cpus().length} CPUs; ` +
        `store reads ${res.stats.storeReads}, filter-proved new ${res.stats.filterNew}`);
      console.log(`      memory: after inserts ${res.insertSplit.anon.toFixed(0)} MB anonymous + ${res.insertSplit.file.toFixed(0)} MB file-backed, after lookups ${res.lookupSplit.anon.toFixed(0)} + ${res.lookupSplit.file.toFixed(0)} MB; ` +
        `filter ${(res.filter.bytes / 2 ** 20).toFixed(1)} MB in ${res.filter.layers} layers; ` +
        `restart: filter rebuilt from ${res.rebuilt.keys} keys in ${res.rebuildSecs.toFixed(2)} s (${(res.rebuilt.bytes / 2 ** 20).toFixed(1)} MB, ${res.rebuilt.layers} layer${res.rebuilt.layers === 1 ? '' : 's'})`);
      console.log(`      insert by tenth: ${res.insertWindows.map(k).join(', ')}`);
      console.log(`      lookup by tenth: ${res.lookupWindows.map(k).join(', ')}`);
    }
  }
  const summary: Array<{ n: number; ins: number; look: number; all: number; insCpu: number; lookCpu: number }> = [];
  console.log(`medians of ${a.runs} runs:`);
  for (const n of a.sizes) {
    const rs = results.get(n)!;
    const row = {
      n,
      ins: median(rs.map((r) => n / r.insertSecs)),
      look: median(rs.map((r) => n / r.lookupSecs)),
      all: median(rs.map((r) => (2 * n) / (r.insertSecs + r.lookupSecs))),
      insCpu: median(rs.map((r) => (r.insertCpu * 1e6) / n)),
      lookCpu: median(rs.map((r) => (r.lookupCpu * 1e6) / n)),
    };
    summary.push(row);
    console.log(`  ${M(n)}: insert ${k(row.ins)} ops/s, lookup ${k(row.look)} ops/s, overall ${k(row.all)} ops/s; ` +
      `CPU per op insert ${row.insCpu.toFixed(2)} µs, lookup ${row.lookCpu.toFixed(2)} µs; ` +
      `insert last tenth ${k(median(rs.map((r) => r.insertWindows.at(-1) ?? 0)))} ops/s; peak RSS ${median(rs.map((r) => r.rssMB)).toFixed(0)} MB; ` +
      `load ${median(rs.map((r) => r.load)).toFixed(1)}`);
  }
  if (summary.length > 1) {
    const first = summary[0]!, last = summary[summary.length - 1]!;
    console.log(`ratio ${M(first.n)} / ${M(last.n)} (rate), ${M(last.n)} / ${M(first.n)} (CPU per op): ` +
      `insert ${(first.ins / last.ins).toFixed(2)}× (CPU ${(last.insCpu / first.insCpu).toFixed(2)}×), ` +
      `lookup ${(first.look / last.look).toFixed(2)}× (CPU ${(last.lookCpu / first.lookCpu).toFixed(2)}×), overall ${(first.all / last.all).toFixed(2)}×`);
  }
}

await main();
