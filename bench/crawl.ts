// The crawl benchmark (issue 2 item 8): one agent crawls a synthetic web on
// loopback with politeness delay 0 and everything on (durable frontier and
// seen-set, WARC/1.1 gzip). Prints pages/s, CPU ms per page and peak RSS per
// run and their medians.
//
// The synthetic web runs in a child process so its CPU is not charged to the
// crawler; the crawler runs in this process and is measured with
// process.cpuUsage() (user + system) and sampled RSS.
//
//   node dist/bench/crawl.js [--runs 5] [--hosts 200] [--pages 50] [--concurrency 32] [--page-kb 10-30] [--no-near-dup]
import '../src/polyfill.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { startAgent } from '../src/crawl/agent.js';
import { parseResolveRule } from '../src/config.js';
import { median } from './measure.js';

interface Args { runs: number; hosts: number; pages: number; concurrency: number; minKb: number; maxKb: number; profile: boolean; nearDup: boolean }

function parseArgs(argv: string[]): Args {
  const a: Args = { runs: 5, hosts: 200, pages: 50, concurrency: 32, minKb: 10, maxKb: 30, profile: false, nearDup: true };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (k === '--runs') { a.runs = Number(v); i++; }
    else if (k === '--hosts') { a.hosts = Number(v); i++; }
    else if (k === '--pages') { a.pages = Number(v); i++; }
    else if (k === '--concurrency') { a.concurrency = Number(v); i++; }
    else if (k === '--page-kb') { const [lo, hi] = String(v).split('-').map(Number); a.minKb = lo!; a.maxKb = hi ?? lo!; i++; }
    else if (k === '--no-near-dup') a.nearDup = false;
    else if (k === '--help') { process.stdout.write('node dist/bench/crawl.js [--runs N] [--hosts N] [--pages N] [--concurrency N] [--page-kb MIN-MAX] [--no-near-dup]\n'); process.exit(0); }
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


async function runOnce(a: Args, web: WebInfo): Promise<{ pages: number; pagesPerSec: number; cpuMsPerPage: number; peakRssMb: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-bench-'));
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    const agent = await startAgent({
      dataDir: dir, seeds: web.roots, untilIdle: true, minDelayMs: 0, delayFactor: 0,
      concurrency: a.concurrency, resolve: web.resolve.map(parseResolveRule), logLevel: 'warn',
      ...(a.nearDup ? {} : { dedup: { near: false } }),
    });
    const summary = await agent.done;
    const secs = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const pages = summary.pages as number;
    return {
      pages,
      pagesPerSec: pages / secs,
      cpuMsPerPage: (cpu.user + cpu.system) / 1000 / pages,
      peakRssMb: peak / 1048576,
    };
  } finally {
    clearInterval(sampler);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  process.stdout.write(`crawl bench: ${a.hosts} hosts × ${a.pages} pages, ${a.minKb}-${a.maxKb} KB pages, concurrency ${a.concurrency}, delay 0, ${a.runs} runs\n`);
  const web = await startWeb(a);
  try {
    const results = [];
    for (let i = 0; i < a.runs; i++) {
      const r = await runOnce(a, web);
      results.push(r);
      process.stdout.write(`run ${i + 1}: ${r.pages} pages  ${r.pagesPerSec.toFixed(0)} pages/s  ${r.cpuMsPerPage.toFixed(3)} CPU-ms/page  peak RSS ${r.peakRssMb.toFixed(0)} MB\n`);
    }
    process.stdout.write(`median: ${median(results.map((r) => r.pagesPerSec)).toFixed(0)} pages/s  ` +
      `${median(results.map((r) => r.cpuMsPerPage)).toFixed(3)} CPU-ms/page  ` +
      `peak RSS ${median(results.map((r) => r.peakRssMb)).toFixed(0)} MB\n`);
  } finally {
    web.child.kill('SIGTERM');
  }
}

main().catch((err) => { process.stderr.write(`bench failed: ${(err as Error).stack}\n`); process.exit(1); });
