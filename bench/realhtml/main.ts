// The real-HTML benchmark: a few thousand pages of real documentation HTML
// (Debian's doc packages, bench/realhtml/setup.sh), served from loopback as
// several sites, crawled in the same run by `ubicrawl join` (delay 0,
// everything on: durable frontier and seen-set, gzip WARC, CDXJ, SimHash,
// metrics) and by `wget -r -l inf --warc-file` (gzip WARC, one connection).
// Both run as child processes under GNU time, so each is charged its own CPU
// (user + system) and peak RSS; the server runs in a third process. Runs are
// interleaved, alternating which crawler goes first, and the medians and the
// ratio are printed (docs/performance.md "Real HTML").
//
//   node dist/bench/realhtml/main.js [--runs 3] [--only ubicrawl|wget|base,…] [--base TREE] [--concurrency 32] [--sites N] [--cpu-prof DIR]
//
// --cpu-prof DIR writes each crawler's profiles to DIR/<crawler>/.
// --base TREE adds a third crawler, `base`: the ubicrawl of another built tree (e.g. a worktree of
// main), run in the same interleaving, so a change is measured against its base in pairs.
import { spawn, spawnSync, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findSites } from './corpus.js';
import type { ServeStats } from './server.js';
import { median } from '../measure.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..', '..', '..');
const BIN = join(REPO, 'bin', 'ubicrawl.js');
/** Assets both crawlers leave alone, so both request the same HTML pages (wget would otherwise fetch every image and stylesheet). */
const NOT_HTML = String.raw`\.(css|js|png|jpe?g|gif|svg|ico|txt|gz|bz2|xz|zip|pdf|epub|woff2?|ttf|eot)$`;

interface Args { runs: number; only: string[] | null; base: string | null; concurrency: number; sites: number; profileDir: string | null }
interface Result { crawler: string; pages: number; requests: number; wallS: number; cpuMsPerPage: number; pagesPerSec: number; peakRssMb: number; firstRequestMs: number; mainMsPerPage: number; otherMsPerPage: number }

function parseArgs(argv: string[]): Args {
  const a: Args = { runs: 3, only: null, base: null, concurrency: 32, sites: Infinity, profileDir: null };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    switch (argv[i]) {
      case '--runs': a.runs = Number(v); i++; break;
      case '--only': a.only = v ? v.split(',') : null; i++; break;
      case '--base': a.base = v ?? null; i++; break;
      case '--concurrency': a.concurrency = Number(v); i++; break;
      case '--sites': a.sites = Number(v); i++; break;
      case '--cpu-prof': a.profileDir = v ?? null; i++; break;
      case '--help': process.stdout.write('node dist/bench/realhtml/main.js [--runs N] [--only ubicrawl|wget|base,…] [--base TREE] [--concurrency N] [--sites N] [--cpu-prof DIR]\n'); process.exit(0);
    }
  }
  return a;
}

function request<T>(server: ChildProcess, msg: object, reply: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: { type: string }): void => { if (m.type === reply) { server.off('message', on); resolve(m as T); } };
    server.on('message', on);
    server.send(msg);
  });
}

/** CPU seconds per thread of a process (Linux /proc), keyed by thread id; the main thread's id is the pid. */
function threadCpu(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(f[11]) + Number(f[12])) / 100);
    }
  } catch { /* the process ended between two reads */ }
  return out;
}

/**
 * Runs a command under GNU time; resolves with its wall, CPU seconds and peak RSS,
 * and the share of CPU on the main thread (sampled from /proc every 100 ms, so the
 * last tenth of a second is missed: the split is approximate, the totals are GNU time's).
 */
function timed(cmd: string[], cwd: string): Promise<{ wallS: number; cpuS: number; maxRssKb: number; startedAt: number; mainThreadS: number; otherThreadsS: number }> {
  const timeFile = join(cwd, 'time.txt');
  const startedAt = Date.now();
  const child = spawn('/usr/bin/time', ['-f', '%e %U %S %M', '-o', timeFile, ...cmd], { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
  const last = new Map<number, number>();
  let mainPid = 0;
  const sampler = setInterval(() => {
    if (mainPid === 0) {
      try { mainPid = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]) || 0; } catch { /* not yet */ }
    }
    if (mainPid !== 0) for (const [tid, s] of threadCpu(mainPid)) last.set(tid, s);
  }, 100);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      clearInterval(sampler);
      const mainThreadS = last.get(mainPid) ?? 0;
      let otherThreadsS = 0;
      for (const [tid, s] of last) if (tid !== mainPid) otherThreadsS += s;
      // wget exits 8 when some link answered 404 (server error response): the crawl itself is complete.
      if (code !== 0 && !(cmd[0] === 'wget' && code === 8)) { reject(new Error(`${cmd[0]} exited with ${code}`)); return; }
      const [wall, user, sys, rss] = readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
      resolve({ wallS: wall!, cpuS: user! + sys!, maxRssKb: rss!, startedAt, mainThreadS, otherThreadsS });
    });
  });
}

function commandFor(crawler: string, roots: string[], dir: string, a: Args): string[] {
  if (crawler === 'wget') {
    return ['wget', '-r', '-l', 'inf', '-q', '-e', 'robots=on', '--reject-regex', NOT_HTML,
      '--warc-file', join(dir, 'wget'), '--warc-tempdir', dir, '-P', join(dir, 'files'), ...roots];
  }
  const prof = a.profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(a.profileDir, crawler)] : [];
  const bin = crawler === 'base' ? join(a.base!, 'bin', 'ubicrawl.js') : BIN;
  return [process.execPath, ...prof, bin, 'join', ...roots.flatMap((r) => ['--seed', r]), '--data-dir', join(dir, 'data'),
    '--until-idle', '--min-delay', '0', '--delay-factor', '0', '--concurrency', String(a.concurrency),
    '--allow-address', '127.0.0.0/8', '--exclude', NOT_HTML, '--progress', 'off', '--log-level', 'warn'];
}

async function runOnce(crawler: string, roots: string[], server: ChildProcess, a: Args): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), `ubicrawl-realhtml-${crawler}-`));
  try {
    await request(server, { type: 'reset' }, 'stats');
    const t = await timed(commandFor(crawler, roots, dir, a), dir);
    const s = await request<ServeStats>(server, { type: 'reset' }, 'stats');
    return {
      crawler, pages: s.htmlPages, requests: s.requests, wallS: t.wallS,
      cpuMsPerPage: (t.cpuS * 1000) / s.htmlPages, pagesPerSec: s.htmlPages / t.wallS,
      peakRssMb: t.maxRssKb / 1024, firstRequestMs: s.firstRequestAt - t.startedAt,
      mainMsPerPage: (t.mainThreadS * 1000) / s.htmlPages, otherMsPerPage: (t.otherThreadsS * 1000) / s.htmlPages,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function line(r: Result): string {
  return `${r.crawler.padEnd(8)} ${String(r.pages).padStart(5)} pages (${r.requests} requests)  ${r.wallS.toFixed(1)} s  ` +
    `${r.pagesPerSec.toFixed(0)} pages/s  ${r.cpuMsPerPage.toFixed(2)} CPU-ms/page (main thread ${r.mainMsPerPage.toFixed(2)}, others ${r.otherMsPerPage.toFixed(2)})  peak RSS ${r.peakRssMb.toFixed(0)} MB  first request ${r.firstRequestMs} ms`;
}

/** Run i's CPU-ms/page of crawler `a` over crawler `b`'s, for each run both took part in. */
function pairRatios(results: Result[], a: string, b: string): number[] {
  const of = (c: string): Result[] => results.filter((r) => r.crawler === c);
  const xs = of(a), ys = of(b);
  return xs.slice(0, ys.length).map((x, i) => x.cpuMsPerPage / ys[i]!.cpuMsPerPage);
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const setup = spawnSync('bash', [join(REPO, 'bench', 'realhtml', 'setup.sh')], { stdio: 'inherit' });
  if (setup.status !== 0) { process.stdout.write(`realhtml bench skipped: the corpus is not installed (bench/realhtml/setup.sh exit ${setup.status})\n`); return; }
  const sites = findSites().slice(0, a.sites);
  const crawlers = a.only ?? (a.base ? ['ubicrawl', 'base', 'wget'] : ['ubicrawl', 'wget']);
  if (crawlers.includes('base') && !a.base) throw new Error('--only base needs --base TREE');
  const server = fork(join(HERE, 'server.js'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  try {
    const { roots } = await request<{ roots: string[] }>(server, { type: 'start', sites }, 'ready');
    process.stdout.write(`realhtml bench: ${sites.length} sites (${sites.map((s) => s.name).slice(0, 4).join(', ')}, …), ${a.runs} interleaved runs, load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
    const results: Result[] = [];
    for (let i = 0; i < a.runs; i++) {
      const order = i % 2 === 0 ? crawlers : [...crawlers].reverse();
      for (const c of order) {
        const r = await runOnce(c, roots, server, a);
        results.push(r);
        process.stdout.write(`run ${i + 1} ${line(r)}\n`);
      }
    }
    const med = (c: string, f: (r: Result) => number): number => median(results.filter((r) => r.crawler === c).map(f));
    for (const c of crawlers) {
      process.stdout.write(`median ${c.padEnd(8)} ${med(c, (r) => r.pages)} pages  ${med(c, (r) => r.pagesPerSec).toFixed(0)} pages/s  ` +
        `${med(c, (r) => r.cpuMsPerPage).toFixed(2)} CPU-ms/page  peak RSS ${med(c, (r) => r.peakRssMb).toFixed(0)} MB  first request ${med(c, (r) => r.firstRequestMs).toFixed(0)} ms\n`);
    }
    for (const other of ['wget', 'base']) {
      if (!crawlers.includes('ubicrawl') || !crawlers.includes(other)) continue;
      process.stdout.write(`ratio ubicrawl/${other}: CPU-ms/page ${(med('ubicrawl', (r) => r.cpuMsPerPage) / med(other, (r) => r.cpuMsPerPage)).toFixed(2)}  ` +
        `pages/s ${(med('ubicrawl', (r) => r.pagesPerSec) / med(other, (r) => r.pagesPerSec)).toFixed(2)}` +
        `  (pair ratios of CPU-ms/page: ${pairRatios(results, 'ubicrawl', other).map((x) => x.toFixed(2)).join(' ')})\n`);
    }
    process.stdout.write(`load at the end ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
  } finally {
    server.kill('SIGTERM');
  }
}

main().catch((err) => { process.stderr.write(`realhtml bench failed: ${(err as Error).stack}\n`); process.exit(1); });
