// The crawl benchmark (docs/performance.md "Crawl"): one agent crawls a
// synthetic web on loopback with politeness delay 0 and everything on (durable
// frontier and seen-set, WARC/1.1 gzip). Prints pages/s, CPU ms per page and
// peak RSS per run and their medians.
//
// By default the agent runs the way `ubicrawl join` runs it: a mesh member
// (libp2p node on loopback, membership, outbox), alone, ending on mesh-wide
// idle. `--mode standalone` runs the agent without a mesh (library use only:
// the CLI always starts one); `--mode both` alternates the two in pairs (the
// first of each pair alternates too) and prints each mode's medians, the pair
// ratios and the load average.
//
// The synthetic web runs in a child process so its CPU is not charged to the
// crawler; the crawler runs in this process and is measured with
// process.cpuUsage() (user + system) and sampled RSS.
//
//   node dist/bench/crawl.js [--runs 5] [--mode join|standalone|both] [--hosts 200] [--pages 50] [--concurrency 32] [--page-kb 10-30] [--no-near-dup] [--no-link-graph]
import '../src/polyfill.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { median, peakRss, resetPeakRss } from './measure.js';

/** `join`: a lone mesh member, as `ubicrawl join` runs it; `standalone`: no mesh; `both`: interleaved pairs. */
type Mode = 'join' | 'standalone' | 'both';
type RunMode = Exclude<Mode, 'both'>;
const MODES: readonly Mode[] = ['join', 'standalone', 'both'];
const USAGE = 'node dist/bench/crawl.js [--runs N] [--mode join|standalone|both] [--hosts N] [--pages N] [--concurrency N] [--page-kb MIN-MAX] [--no-near-dup] [--no-link-graph]\n';

interface Args { runs: number; mode: Mode; hosts: number; pages: number; concurrency: number; minKb: number; maxKb: number; nearDup: boolean; linkGraph: boolean }

function parseArgs(argv: string[]): Args {
  const a: Args = { runs: 5, mode: 'join', hosts: 200, pages: 50, concurrency: 32, minKb: 10, maxKb: 30, nearDup: true, linkGraph: true };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (k === '--runs') { a.runs = Number(v); i++; }
    else if (k === '--hosts') { a.hosts = Number(v); i++; }
    else if (k === '--pages') { a.pages = Number(v); i++; }
    else if (k === '--concurrency') { a.concurrency = Number(v); i++; }
    else if (k === '--page-kb') { const [lo, hi] = String(v).split('-').map(Number); a.minKb = lo!; a.maxKb = hi ?? lo!; i++; }
    else if (k === '--mode') {
      if (!MODES.includes(v as Mode)) { process.stderr.write(`--mode must be one of ${MODES.join(', ')}\n${USAGE}`); process.exit(2); }
      a.mode = v as Mode; i++;
    }
    else if (k === '--no-near-dup') a.nearDup = false;
    else if (k === '--no-link-graph') a.linkGraph = false;
    else if (k === '--help') { process.stdout.write(USAGE); process.exit(0); }
  }
  return a;
}

interface WebInfo { child: ChildProcess; resolve: string[]; roots: string[] }

async function startWeb(a: Args): Promise<WebInfo> {
  const cli = join(dirname(fileURLToPath(import.meta.url)), 'web', 'cli.js');
  const child = spawn(process.execPath, [cli, '--hosts', String(a.hosts), '--pages', String(a.pages),
    '--page-bytes', `${a.minKb * 1024}-${a.maxKb * 1024}`, '--no-log', '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const rl = createInterface({ input: child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`synthetic web exited with ${code}`)));
  });
  const info = JSON.parse(line) as { resolve: string[]; roots: string[] };
  return { child, resolve: info.resolve, roots: info.roots };
}


interface RunResult {
  pages: number; pagesPerSec: number; cpuMsPerPage: number; peakRssMb: number;
  /** Seconds from the start to the first page fetched (agent and, in join mode, mesh start-up). */
  startSecs: number;
  /** Seconds from the last page fetched to the end (idle detection: in join mode, mesh-wide over heartbeats). */
  tailSecs: number;
}

async function runOnce(a: Args, web: WebInfo, mode: RunMode): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-bench-'));
  // The kernel's own peak when it keeps one; else sampled with the page counts.
  const kernelPeak = resetPeakRss() && peakRss() !== undefined;
  let peak = process.memoryUsage.rss();
  let stats: { fetched: number } | undefined;
  let fetched = 0;
  let firstAt = NaN;
  let lastAt = NaN;
  const sampler = setInterval(() => {
    if (!kernelPeak) peak = Math.max(peak, process.memoryUsage.rss());
    if (stats && stats.fetched !== fetched) {
      fetched = stats.fetched;
      lastAt = performance.now();
      if (Number.isNaN(firstAt)) firstAt = lastAt;
    }
  }, 50);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots, untilIdle: true, minDelayMs: 0, delayFactor: 0,
      concurrency: a.concurrency, resolve: web.resolve.map(parseResolveRule), logLevel: 'warn',
      ...(a.nearDup ? {} : { dedup: { near: false } }),
      ...(a.linkGraph ? {} : { linkGraph: { enabled: false } }),
      // As `ubicrawl join` (src/cli/main.ts): always a mesh member; here alone, on an ephemeral loopback port.
      ...(mode === 'join' ? { mesh: { enabled: true, listen: ['/ip4/127.0.0.1/tcp/0'] } } : {}),
    });
    stats = agent.stats;
    const summary = await agent.done;
    const end = performance.now();
    const secs = (end - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (kernelPeak) peak = peakRss() ?? peak;
    const pages = summary.pages as number;
    return {
      pages,
      pagesPerSec: pages / secs,
      cpuMsPerPage: (cpu.user + cpu.system) / 1000 / pages,
      peakRssMb: peak / 1048576,
      startSecs: (firstAt - t0) / 1000,
      tailSecs: (end - lastAt) / 1000,
    };
  } finally {
    clearInterval(sampler);
    rmSync(dir, { recursive: true, force: true });
  }
}

const line = (r: RunResult): string =>
  `${r.pages} pages  ${r.pagesPerSec.toFixed(0)} pages/s  ${r.cpuMsPerPage.toFixed(3)} CPU-ms/page  peak RSS ${r.peakRssMb.toFixed(0)} MB  ` +
  `first page ${r.startSecs.toFixed(1)} s, last page to end ${r.tailSecs.toFixed(1)} s`;

const medians = (rs: readonly RunResult[]): string =>
  `${median(rs.map((r) => r.pagesPerSec)).toFixed(0)} pages/s  ${median(rs.map((r) => r.cpuMsPerPage)).toFixed(3)} CPU-ms/page  ` +
  `peak RSS ${median(rs.map((r) => r.peakRssMb)).toFixed(0)} MB  first page ${median(rs.map((r) => r.startSecs)).toFixed(1)} s  ` +
  `last page to end ${median(rs.map((r) => r.tailSecs)).toFixed(1)} s`;

const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const what = a.mode === 'both' ? `${a.runs} pairs (join, standalone; the first of each pair alternates)` : `${a.runs} runs, mode ${a.mode}`;
  process.stdout.write(`crawl bench: ${a.hosts} hosts × ${a.pages} pages, ${a.minKb}-${a.maxKb} KB pages, concurrency ${a.concurrency}, delay 0, ${what}; load ${load()}\n`);
  const web = await startWeb(a);
  try {
    const results: Record<RunMode, RunResult[]> = { join: [], standalone: [] };
    const loads: number[] = [loadavg()[0]!];
    for (let i = 0; i < a.runs; i++) {
      const order: RunMode[] = a.mode !== 'both' ? [a.mode] : i % 2 === 0 ? ['join', 'standalone'] : ['standalone', 'join'];
      for (const mode of order) {
        const r = await runOnce(a, web, mode);
        results[mode].push(r);
        loads.push(loadavg()[0]!);
        process.stdout.write(`run ${i + 1} ${mode}: ${line(r)}  load ${load()}\n`);
      }
    }
    for (const mode of ['join', 'standalone'] as const) {
      if (results[mode].length) process.stdout.write(`median ${mode}: ${medians(results[mode])}\n`);
    }
    if (a.mode === 'both') {
      const ratios = results.join.map((r, i) => r.pagesPerSec / results.standalone[i]!.pagesPerSec);
      const cpu = results.join.map((r, i) => r.cpuMsPerPage / results.standalone[i]!.cpuMsPerPage);
      process.stdout.write(`join / standalone, pair by pair: pages/s ${ratios.map((x) => x.toFixed(2)).join(' ')} (median ${median(ratios).toFixed(2)}×, ` +
        `${ratios.filter((x) => x > 1).length} of ${ratios.length} ahead); CPU-ms/page median ${median(cpu).toFixed(2)}×\n`);
    }
    process.stdout.write(`load average (1 min) over the runs: ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}\n`);
  } finally {
    web.child.kill('SIGTERM');
  }
}

main().catch((err) => { process.stderr.write(`bench failed: ${(err as Error).stack}\n`); process.exit(1); });
