// LevelDB SimHash index benchmark (docs/performance.md "SimHash index"): N fingerprints indexed
// with SimhashStore (src/dedup/index.ts) in a fresh LevelDB, then a query mix:
//   - planted near-duplicates: an indexed fingerprint with 0..3 random bits
//     flipped (recall must be 100 %);
//   - random 64-bit fingerprints;
//   - SimHashes of random documents not in the index (bench/textgen.ts
//     articles): every match is a false match; the index holds a share of
//     SimHashes of other such documents, so this measures how often two
//     unrelated texts of the same generator land within distance 3.
// Queries run `--concurrency` at a time. Each run is a child process with
// its own store (peak RSS per run); figures are medians over --runs.
//
//   node dist/bench/simhash-index.js [--n 1000000] [--docs 100000] [--queries 50000]
//        [--concurrency 32] [--runs 3] [--layout 4|16] [--dir /tmp]
import '../src/polyfill.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir, loadavg, cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/db.js';
import { SimhashStore } from '../src/dedup/index.js';
import { SIMHASH_TABLES, SIMHASH_TABLES_16, hamming64, simhash64 } from '../src/dedup/simhash.js';
import { article, prng } from './textgen.js';
import { mainThreadCpu, procRss, median } from './measure.js';

interface Args { writeRound: number; n: number; docs: number; queries: number; concurrency: number; runs: number; layout: 4 | 16; dir: string; child: string | undefined }

function parseArgs(argv: string[]): Args {
  const a: Args = { writeRound: 4096, n: 1_000_000, docs: 100_000, queries: 50_000, concurrency: 32, runs: 3, layout: 4, dir: tmpdir(), child: undefined };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = argv[i + 1];
    if (k === '--n') { a.n = Number(v); i++; }
    else if (k === '--docs') { a.docs = Number(v); i++; }
    else if (k === '--write-round') { a.writeRound = Number(v); i++; }
    else if (k === '--queries') { a.queries = Number(v); i++; }
    else if (k === '--concurrency') { a.concurrency = Number(v); i++; }
    else if (k === '--runs') { a.runs = Number(v); i++; }
    else if (k === '--layout') { a.layout = v === '16' ? 16 : 4; i++; }
    else if (k === '--dir') { a.dir = String(v); i++; }
    else if (k === '--child') { a.child = String(v); i++; }
    else if (k === '--help') {
      process.stdout.write('node dist/bench/simhash-index.js [--n N] [--docs N] [--queries N] [--concurrency N] [--runs N] [--layout 4|16] [--dir DIR]\n');
      process.exit(0);
    }
  }
  return a;
}

const DOC_WORDS = 300;
/** Seeds: indexed documents 1..docs; query documents from 10^8 up (never indexed). */
const QUERY_DOC_SEED = 100_000_000;

interface RunResult {
  addSecs: number; compactSecs: number; querySecs: number; queries: number;
  planted: number; recalled: number;
  randomFp: number; randomFpMatches: number;
  randomDocs: number; randomDocQueriesMatched: number; randomDocMatches: number;
  wrongDistance: number; queryCpuUs: number; queryMainUs: number; rssMB: number; buildRssMB: number; queryRssMB: number;
  buildSplit: { anon: number; file: number }; querySplit: { anon: number; file: number }; dbMB: number; load: number; cpuSecs: number;
}

async function runChild(a: Args, fpFile: string): Promise<RunResult> {
  const buf = readFileSync(fpFile);
  const all = new BigUint64Array(buf.buffer, buf.byteOffset, buf.byteLength / 8);
  // Layout of the file: n indexed fingerprints, then the query documents' fingerprints.
  const indexed = all.subarray(0, a.n);
  const queryDocs = all.subarray(a.n);
  const dir = mkdtempSync(join(a.dir, 'ubicrawl-bench-simhash-'));
  const store = await openStore(dir);
  const idx = new SimhashStore(store.simhash, a.layout === 16 ? SIMHASH_TABLES_16 : SIMHASH_TABLES, { maxWriteRound: a.writeRound });
  const load0 = loadavg()[0]!;
  const c0 = process.cpuUsage();
  let rssPeak = 0;
  const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, process.memoryUsage.rss()); }, 50);

  // Build: 8192 documents per call, two calls in flight (each is one or more write rounds).
  let t0 = performance.now();
  let inflight: Promise<void> | undefined;
  for (let i = 0; i < a.n; i += 8192) {
    const entries: Array<[bigint, string]> = [];
    for (let j = i; j < Math.min(a.n, i + 8192); j++) entries.push([indexed[j]!, `https://site${j % 5000}.example/doc/${j}`]);
    const p = idx.addMany(entries);
    if (inflight) await inflight;
    inflight = p;
  }
  await inflight;
  await idx.flush();
  const addSecs = (performance.now() - t0) / 1000;
  // Settle: compact the index's key range so the queries measure a steady
  // index, not the background compaction the bulk build left behind (a
  // crawler adds a few fingerprints per second; this bench adds a million).
  const tc = performance.now();
  await (store.db as unknown as { compactRange(a: Buffer, b: Buffer): Promise<void> }).compactRange(Buffer.from('!simhash!'), Buffer.from('!simhash"'));
  const compactSecs = (performance.now() - tc) / 1000;
  const buildRssMB = rssPeak / 2 ** 20;
  const buildSplit = procRss();
  rssPeak = 0;
  if (process.env.BENCH_MEM) { (globalThis as { gc?: () => void }).gc?.(); process.stderr.write(`after build + gc: ${JSON.stringify(process.memoryUsage())} ${readFileSync('/proc/self/status', 'utf8').split('\n').filter((l) => l.startsWith('Rss')).join(' ')}\n`); }

  // Query mix, generated up front so the timed loop only queries.
  const r = prng(4242);
  type Q = { fp: bigint; kind: 0 | 1 | 2; target: number; d: number };
  const qs: Q[] = [];
  for (let q = 0; q < a.queries; q++) {
    const kind = q % 4 < 2 ? 0 : q % 4 === 2 ? 1 : 2;
    if (kind === 0) {
      const target = Math.floor(r() * a.n);
      const d = (q >> 2) % 4;
      let fp = indexed[target]!;
      const bits = new Set<number>();
      while (bits.size < d) bits.add(Math.floor(r() * 64));
      for (const b of bits) fp ^= 1n << BigInt(b);
      qs.push({ fp, kind, target, d });
    } else if (kind === 1) {
      qs.push({ fp: (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32)), kind, target: -1, d: -1 });
    } else {
      qs.push({ fp: queryDocs[q % queryDocs.length]!, kind, target: -1, d: -1 });
    }
  }
  let planted = 0, recalled = 0, randomFp = 0, randomFpMatches = 0, randomDocs = 0, randomDocQueriesMatched = 0, randomDocMatches = 0, wrongDistance = 0;
  let next = 0;
  const qc0 = process.cpuUsage();
  const qm0 = mainThreadCpu();
  t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < qs.length) {
      const q = qs[next++]!;
      const hits = await idx.query(q.fp, 3);
      for (const h of hits) if (hamming64(h.fp, q.fp) !== h.distance || h.distance > 3) wrongDistance++;
      if (q.kind === 0) {
        planted++;
        if (hits.some((h) => h.id.endsWith(`/doc/${q.target}`) && h.distance <= q.d)) recalled++;
      } else if (q.kind === 1) {
        randomFp++;
        randomFpMatches += hits.length;
      } else {
        randomDocs++;
        randomDocMatches += hits.length;
        if (hits.length > 0) randomDocQueriesMatched++;
      }
    }
  };
  await Promise.all(Array.from({ length: a.concurrency }, worker));
  const querySecs = (performance.now() - t0) / 1000;
  const qcu = process.cpuUsage(qc0);
  const queryCpuUs = ((qcu.user + qcu.system) / qs.length);
  const queryMainUs = ((mainThreadCpu() - qm0) * 1e6) / qs.length;
  clearInterval(sampler);
  const queryRssMB = rssPeak / 2 ** 20;
  const querySplit = procRss();
  const cu = process.cpuUsage(c0);
  await store.close();
  let dbBytes = 0;
  for (const f of readdirSync(join(dir, 'db'))) dbBytes += statSync(join(dir, 'db', f)).size;
  rmSync(dir, { recursive: true, force: true });
  return {
    addSecs, compactSecs, querySecs, queries: qs.length, planted, recalled, randomFp, randomFpMatches, randomDocs, randomDocQueriesMatched, randomDocMatches,
    wrongDistance, queryCpuUs, queryMainUs, rssMB: process.resourceUsage().maxRSS / 1024, buildRssMB, queryRssMB, buildSplit, querySplit, dbMB: dbBytes / 2 ** 20, load: (load0 + loadavg()[0]!) / 2, cpuSecs: (cu.user + cu.system) / 1e6,
  };
}

function spawnRun(a: Args, fpFile: string): Promise<RunResult> {
  const self = fileURLToPath(import.meta.url);
  const argv = [...process.execArgv, self, '--child', fpFile, '--n', String(a.n), '--docs', String(a.docs), '--queries', String(a.queries),
    '--concurrency', String(a.concurrency), '--write-round', String(a.writeRound), '--layout', String(a.layout), '--dir', a.dir];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => { out += d; });
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!) as RunResult) : reject(new Error(`child exited ${code}`))));
  });
}




async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  if (a.child) {
    process.stdout.write(JSON.stringify(await runChild(a, a.child)) + '\n');
    return;
  }
  // Fingerprints, computed once for all runs: `docs` SimHashes of generated
  // articles and n − docs random 64-bit values, shuffled; then the SimHashes
  // of 10 000 other articles used as "random document" queries.
  const t0 = performance.now();
  const docs = Math.min(a.docs, a.n);
  const nq = 10_000;
  const fps = new BigUint64Array(a.n + nq);
  const r = prng(99);
  for (let i = 0; i < docs; i++) fps[i] = simhash64(article(1 + i, DOC_WORDS));
  for (let i = docs; i < a.n; i++) fps[i] = (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32));
  for (let i = a.n - 1; i > 0; i--) { const j = Math.floor(r() * (i + 1)); const t = fps[i]!; fps[i] = fps[j]!; fps[j] = t; }
  for (let i = 0; i < nq; i++) fps[a.n + i] = simhash64(article(QUERY_DOC_SEED + i, DOC_WORDS));
  const work = mkdtempSync(join(a.dir, 'ubicrawl-bench-fps-'));
  const fpFile = join(work, 'fps.bin');
  writeFileSync(fpFile, Buffer.from(fps.buffer));
  console.log(`SimHash index in LevelDB — node ${process.version}; ${a.n.toLocaleString('en')} fingerprints (${docs.toLocaleString('en')} from ${DOC_WORDS}-word articles, the rest random), ` +
    `layout ${a.layout === 16 ? '16 tables × 28-bit prefix' : '4 tables × 16-bit prefix'}, ${a.queries.toLocaleString('en')} queries (½ planted at distance 0..3, ¼ random 64-bit, ¼ SimHashes of unindexed articles), ` +
    `concurrency ${a.concurrency}, ${a.runs} runs; fingerprints prepared in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const rs: RunResult[] = [];
  try {
    for (let run = 0; run < a.runs; run++) {
      const res = await spawnRun(a, fpFile);
      rs.push(res);
      console.log(`  run ${run + 1}: index ${(a.n / res.addSecs / 1000).toFixed(0)} k fingerprints/s (${res.addSecs.toFixed(1)} s, then compaction ${res.compactSecs.toFixed(1)} s), ` +
        `query ${(res.queries / res.querySecs / 1000).toFixed(1)} k/s (CPU ${res.queryCpuUs.toFixed(1)} µs/query, JS thread ${res.queryMainUs.toFixed(1)}), recall ${res.recalled}/${res.planted}, ` +
        `random-fp matches ${res.randomFpMatches}/${res.randomFp}, random-doc queries with a match ${res.randomDocQueriesMatched}/${res.randomDocs} (${res.randomDocMatches} matches), ` +
        `wrong distances ${res.wrongDistance}, peak RSS ${res.rssMB.toFixed(0)} MB (build ${res.buildRssMB.toFixed(0)}, queries ${res.queryRssMB.toFixed(0)}; at the end of the build ${res.buildSplit.anon.toFixed(0)} MB anonymous + ${res.buildSplit.file.toFixed(0)} MB file-backed), db ${res.dbMB.toFixed(0)} MB, load ${res.load.toFixed(1)}/${cpus().length} CPUs`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const q = median(rs.map((x) => x.queries / x.querySecs));
  const add = median(rs.map((x) => a.n / x.addSecs));
  const recall = rs.reduce((s, x) => s + x.recalled, 0) / rs.reduce((s, x) => s + x.planted, 0);
  const docFalse = rs.reduce((s, x) => s + x.randomDocQueriesMatched, 0) / rs.reduce((s, x) => s + x.randomDocs, 0);
  const fpFalse = rs.reduce((s, x) => s + x.randomFpMatches, 0) / rs.reduce((s, x) => s + x.randomFp, 0);
  console.log(`median: query ${(q / 1000).toFixed(1)} k/s (CPU ${median(rs.map((x) => x.queryCpuUs)).toFixed(1)} µs/query, load ${median(rs.map((x) => x.load)).toFixed(1)}), index ${(add / 1000).toFixed(0)} k fingerprints/s, peak RSS ${median(rs.map((x) => x.rssMB)).toFixed(0)} MB; ` +
    `recall ${(recall * 100).toFixed(2)} %; false-match rate: random documents ${(docFalse * 100).toFixed(3)} % of queries, random fingerprints ${(fpFalse * 100).toFixed(3)} %`);
}

await main();
