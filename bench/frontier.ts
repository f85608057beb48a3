// Frontier benchmark (docs/performance.md "Frontier"): N URLs queued over H hosts through the
// same path the agent uses (enqueueOps → one LevelDB batch → committed, in
// DRUM-sized rounds), the store closed and reopened (recovery), then drained
// with politeness delay 0 (nextReady → take → one batch of doneOps →
// acknowledged → release(h, 0)), `concurrency` hosts per round.
//
// Prints enqueue rate, recovery time, dequeue rate and peak RSS (VmHWM, reset
// per phase) for each run, each run in a fresh child process, and the medians.
//
//   node dist/bench/frontier.js [--urls 5000000] [--hosts 100000] [--runs 3]
//        [--classes 8] [--concurrency 64] [--head 64] [--batch 4096] [--slack 0]
//        [--heap-mb N]   (runs each child with node --max-old-space-size=N)
//        [--heap-growth P]   (the agent's heap policy, src/util/memory.ts; default: the agent's default; 0 = V8's own)
//        [--max-open-files N] [--compression 0|1] [--db '{"blockSize":1024}']   (LevelDB options instead of the store's defaults)
//   node --cpu-prof dist/bench/frontier.js --inline [...]   (one run in this process, for profiling)
import '../src/polyfill.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_STORE_OPTIONS, openStore, type Store, type StoreOptions } from '../src/store/db.js';
import { hostKey } from '../src/store/keys.js';
import { Frontier, type FrontierOptions, type HostState, type NewUrl, type QueuedUrl } from '../src/frontier/frontier.js';
import { prng } from './textgen.js';
import { dirBytes } from './measure.js';
import { defaultConfig } from '../src/config.js';
import { limitHeapGrowth } from '../src/util/memory.js';

interface Args { urls: number; hosts: number; runs: number; classes: number; concurrency: number; head: number; batch: number; slack: number; heapMb: number; inline: boolean; child: boolean; seed: number; maxOpenFiles: number; compression: number; heapGrowth: number; db: StoreOptions }

function parseArgs(argv: string[]): Args {
  const a: Args = { urls: 5_000_000, hosts: 100_000, runs: 3, classes: 8, concurrency: 64, head: 64, batch: 4096, slack: 0, heapMb: 0, inline: false, child: false, seed: 1, maxOpenFiles: 0, compression: -1, heapGrowth: defaultConfig().heapGrowthPercent, db: {} };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!, v = Number(argv[i + 1]);
    switch (k) {
      case '--urls': a.urls = v; i++; break;
      case '--hosts': a.hosts = v; i++; break;
      case '--runs': a.runs = v; i++; break;
      case '--classes': a.classes = v; i++; break;
      case '--concurrency': a.concurrency = v; i++; break;
      case '--head': a.head = v; i++; break;
      case '--batch': a.batch = v; i++; break;
      case '--seed': a.seed = v; i++; break;
      case '--slack': a.slack = v; i++; break;
      case '--heap-mb': a.heapMb = v; i++; break;
      case '--max-open-files': a.maxOpenFiles = v; i++; break;
      case '--compression': a.compression = v; i++; break;
      case '--heap-growth': a.heapGrowth = v; i++; break;
      case '--db': a.db = JSON.parse(String(argv[i + 1])) as StoreOptions; i++; break;
      case '--inline': a.inline = true; break;
      case '--child': a.child = true; break;
      case '--help':
        process.stdout.write('node dist/bench/frontier.js [--urls N] [--hosts N] [--runs N] [--classes 1-8] [--concurrency N] [--head N] [--batch N] [--slack N] [--heap-mb N] [--max-open-files N] [--compression 0|1] [--heap-growth P] [--db JSON] [--inline]\n');
        process.exit(0);
    }
  }
  return a;
}

interface Result {
  enqueueSecs: number; enqueuePerSec: number; enqueuePeak: Peak;
  reopenSecs: number; firstSecs: number; recoverSecs: number; recoverPeak: Peak;
  drainSecs: number; drainPerSec: number; drainPeak: Peak;
  storeMb: number; hosts: number; hostBytes: number; loads: number; rotations: number; evicted: number; emptyTakes: number; stalls: number;
}

// ---- peak RSS --------------------------------------------------------------------
// The kernel's high-water mark (VmHWM, reset at each phase through clear_refs),
// and sampled maxima of its two parts: anonymous memory (JS heap, LevelDB's
// buffers, malloc) and file-backed pages (the node binary and LevelDB's
// memory-mapped table files, i.e. page cache the kernel can drop at any time).

interface Peak { total: number; anon: number; file: number; heap: number }

function status(): string | undefined {
  try { return readFileSync('/proc/self/status', 'utf8'); } catch { return undefined; }
}
function field(st: string | undefined, name: string): number {
  const m = st && new RegExp(`${name}:\\s+(\\d+) kB`).exec(st);
  return m ? Number(m[1]) / 1024 : NaN;
}

class PhasePeak {
  private anon = 0;
  private file = 0;
  private heap = 0;
  private readonly timer: NodeJS.Timeout;
  constructor() {
    try { writeFileSync('/proc/self/clear_refs', '5'); } catch { /* not Linux: the peak covers the whole process */ }
    this.timer = setInterval(() => this.sample(), 100);
  }
  private sample(): void {
    const st = status();
    this.anon = Math.max(this.anon, field(st, 'RssAnon') || 0);
    this.file = Math.max(this.file, field(st, 'RssFile') || 0);
    this.heap = Math.max(this.heap, process.memoryUsage().heapTotal / 1048576);
  }
  end(): Peak {
    clearInterval(this.timer);
    this.sample();
    const total = field(status(), 'VmHWM');
    return { total: Number.isNaN(total) ? process.memoryUsage().rss / 1048576 : total, anon: this.anon, file: this.file, heap: this.heap };
  }
}

const gc = (globalThis as { gc?: () => void }).gc;
function heapAfterGc(): number { gc?.(); gc?.(); return process.memoryUsage().heapUsed; }

// What the agent keeps per host (src/crawl/agent.ts HostData), so per-host figures are realistic.
const hostData = () => ({ robots: new Map(), lastResponseMs: 0, crawlDelayMs: 0, errorRun: 0, pages: 0 });

function storeOptions(a: Args): StoreOptions {
  const o: StoreOptions = { ...a.db };
  if (a.maxOpenFiles > 0) o.maxOpenFiles = a.maxOpenFiles;
  if (a.compression >= 0) o.compression = a.compression > 0;
  return o;
}

async function enqueueAll(a: Args, dir: string, opts: FrontierOptions<ReturnType<typeof hostData>>, names: string[], keys: Buffer[]): Promise<{ secs: number; peak: Peak }> {
  const peak = new PhasePeak();
  const store = await openStore(dir, storeOptions(a));
  try {
    const f = new Frontier(store.frontier, store.hosts, store.meta, opts);
    await f.recover();
    const rnd = prng(a.seed);
    const t0 = performance.now();
    for (let done = 0; done < a.urls;) {
      const n = Math.min(a.batch, a.urls - done);
      const items: NewUrl[] = new Array(n);
      for (let i = 0; i < n; i++, done++) {
        const h = Math.floor(rnd() * a.hosts);
        const cls = a.classes > 1 ? Math.floor(rnd() * a.classes) : 4;
        items[i] = { host: names[h]!, hostKey: keys[h]!, url: `http://${names[h]}/section/article-${done}.html`, depth: 1, hops: 0, priority: cls };
      }
      await store.db.batch(f.enqueueOps(items) as never);
      f.committed(items);
    }
    const secs = (performance.now() - t0) / 1000;
    if (f.queued !== a.urls) throw new Error(`queued ${f.queued}, expected ${a.urls}`);
    return { secs, peak: peak.end() };
  } finally {
    await store.close();
  }
}

async function runOnce(a: Args): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-frontier-bench-'));
  const opts = { maxActiveHosts: a.concurrency * 3, headSize: a.head, rotationSlack: a.slack, createData: hostData };
  let store: Store | undefined;
  try {
    // Host names and keys are computed by the caller in the agent too (one hostKey per candidate).
    const names: string[] = [];
    const keys: Buffer[] = [];
    for (let i = 0; i < a.hosts; i++) { names.push(`www.host${i}.example.com`); keys.push(hostKey(names[i]!)); }

    // 1. Enqueue (in a function, so that its frontier is garbage once it returns).
    const enq = await enqueueAll(a, dir, opts, names, keys);
    const storeMb = dirBytes(join(dir, 'db')) / 1048576;

    // 2. Reopen and recover.
    let peak = new PhasePeak();
    const t1 = performance.now();
    store = await openStore(dir, storeOptions(a));
    const reopenSecs = (performance.now() - t1) / 1000;
    const heap0 = heapAfterGc();
    const f = new Frontier(store.frontier, store.hosts, store.meta, opts);
    const t2 = performance.now();
    await f.recover();
    const firstSecs = (performance.now() - t2) / 1000;
    await f.whenRecovered();
    const recoverSecs = (performance.now() - t2) / 1000;
    const recoverPeak = peak.end();
    if (f.queued !== a.urls) throw new Error(`recovered ${f.queued}, expected ${a.urls}`);

    // 3. Drain, delay 0.
    peak = new PhasePeak();
    const t3 = performance.now();
    const hosts: HostState<ReturnType<typeof hostData>>[] = [];
    const ops: unknown[] = [];
    const got: [HostState<ReturnType<typeof hostData>>, QueuedUrl][] = [];
    let taken = 0, emptyTakes = 0, stalls = 0;
    while (f.queued > 0) {
      const now = Date.now();
      hosts.length = 0;
      ops.length = 0;
      got.length = 0;
      while (hosts.length < a.concurrency) {
        const h = f.nextReady(now);
        if (!h) break;
        const q: QueuedUrl | undefined = f.take(h);
        if (q) { ops.push(f.doneOp(q)); got.push([h, q]); } else emptyTakes++;
        hosts.push(h);
      }
      if (ops.length > 0) {
        await store.db.batch(ops as never);
        // As the agent does: per URL, with its host (counts, and the URL is no longer handed out).
        for (const [h, q] of got) f.acknowledged(1, h, q);
        taken += ops.length;
      }
      for (const h of hosts) f.release(h, 0);
      if (hosts.length === 0) { stalls++; await new Promise((r) => setImmediate(r)); }
    }
    const drainSecs = (performance.now() - t3) / 1000;
    const drainPeak = peak.end();
    if (taken !== a.urls) throw new Error(`drained ${taken}, expected ${a.urls}`);
    // Per-host records once every host has been active (cursors allocated), heads all gone;
    // the same names and keys were alive when heap0 was taken.
    const hostBytes = (heapAfterGc() - heap0) / f.knownHosts;
    const r: Result = {
      enqueueSecs: enq.secs, enqueuePerSec: a.urls / enq.secs, enqueuePeak: enq.peak,
      reopenSecs, firstSecs, recoverSecs, recoverPeak,
      drainSecs, drainPerSec: a.urls / drainSecs, drainPeak,
      storeMb, hosts: f.knownHosts, hostBytes, loads: f.stats.loads, rotations: f.stats.rotations, evicted: f.stats.evicted, emptyTakes, stalls,
    };
    await store.close();
    store = undefined;
    return r;
  } finally {
    await store?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

function runChild(a: Args): Promise<Result> {
  const self = fileURLToPath(import.meta.url);
  const argv = ['--expose-gc', ...(a.heapMb > 0 ? [`--max-old-space-size=${a.heapMb}`] : []), self, '--child', '--urls', String(a.urls), '--hosts', String(a.hosts), '--classes', String(a.classes),
    '--concurrency', String(a.concurrency), '--head', String(a.head), '--batch', String(a.batch), '--slack', String(a.slack), '--seed', String(a.seed),
    '--max-open-files', String(a.maxOpenFiles), '--compression', String(a.compression), '--heap-growth', String(a.heapGrowth), '--db', JSON.stringify(a.db)];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('exit', (code) => {
      if (code !== 0) { reject(new Error(`run exited with ${code}`)); return; }
      resolve(JSON.parse(out.trim().split('\n').pop()!) as Result);
    });
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const k = (x: number) => `${(x / 1000).toFixed(1)} k`;

const mb = (p: Peak) => `peak ${p.total.toFixed(0)} MB = anon ${p.anon.toFixed(0)} (JS heap ${p.heap.toFixed(0)}) + file ${p.file.toFixed(0)}`;

function line(i: string, r: Result): string {
  return `${i}: enqueue ${k(r.enqueuePerSec)} URLs/s (${r.enqueueSecs.toFixed(1)} s, ${mb(r.enqueuePeak)}) | ` +
    `reopen ${r.reopenSecs.toFixed(2)} s, serving after ${(r.firstSecs * 1000).toFixed(0)} ms, recovered ${r.recoverSecs.toFixed(2)} s (${mb(r.recoverPeak)}) | ` +
    `dequeue ${k(r.drainPerSec)} URLs/s (${r.drainSecs.toFixed(1)} s, ${mb(r.drainPeak)}) | ` +
    `store ${r.storeMb.toFixed(0)} MB after the enqueue | ${r.hosts} hosts × ${r.hostBytes.toFixed(0)} B, ${r.loads} loads, ${r.rotations} rotations, ${r.evicted} evicted, ${r.emptyTakes} empty takes, ${r.stalls} stalls\n`;
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  // The agent sets its heap policy at start (startAgent); a run does the same.
  if (a.child || a.inline) limitHeapGrowth(a.heapGrowth);
  if (a.child) { process.stdout.write(JSON.stringify(await runOnce(a)) + '\n'); return; }
  process.stdout.write(`frontier bench: ${a.urls} URLs over ${a.hosts} hosts, ${a.classes} priority class(es), ` +
    `batches of ${a.batch}, ${a.concurrency} hosts per drain round, ${a.concurrency * 3} active hosts, head ${a.head}, rotation slack ${a.slack}, ${a.heapMb > 0 ? `JS heap capped at ${a.heapMb} MB` : 'default JS heap limit'}, heap growth ${a.heapGrowth > 0 ? `${a.heapGrowth} %` : 'V8 default'}, store ${JSON.stringify({ ...DEFAULT_STORE_OPTIONS, ...storeOptions(a) })}, node ${process.version}\n`);
  if (a.inline) { process.stdout.write(line('run', await runOnce(a))); return; }
  const rs: Result[] = [];
  for (let i = 0; i < a.runs; i++) {
    const r = await runChild({ ...a, seed: a.seed + i });
    rs.push(r);
    process.stdout.write(line(`run ${i + 1}`, r));
  }
  const med = (f: (r: Result) => number) => median(rs.map(f));
  const phases = ['enqueuePeak', 'recoverPeak', 'drainPeak'] as const;
  const worst = (part: keyof Peak) => Math.max(...phases.map((ph) => med((r) => r[ph][part])));
  process.stdout.write(`median: enqueue ${k(med((r) => r.enqueuePerSec))} URLs/s | serving after ${(med((r) => r.firstSecs) * 1000).toFixed(0)} ms, ` +
    `recovered ${med((r) => r.recoverSecs).toFixed(2)} s | dequeue ${k(med((r) => r.drainPerSec))} URLs/s | ` +
    `peak RSS ${worst('total').toFixed(0)} MB (anon ${worst('anon').toFixed(0)} MB, file-backed ${worst('file').toFixed(0)} MB; ` +
    phases.map((ph) => `${ph.replace('Peak', '')} ${med((r) => r[ph].total).toFixed(0)}`).join(', ') + `) | ` +
    `store ${med((r) => r.storeMb).toFixed(0)} MB | ${med((r) => r.hostBytes).toFixed(0)} B per host record\n`);
}

main().catch((err) => { process.stderr.write(`bench failed: ${(err as Error).stack}\n`); process.exit(1); });
