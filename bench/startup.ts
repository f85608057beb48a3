// An agent's start (docs/performance.md "Start-up"): `ubicrawl join --seed URL --until-idle` on a loopback site
// of N pages (default 1; robots.txt answers 404). For each run: the time from spawning the process to the site's
// first request (robots.txt), the agent's CPU (user + system, all threads, /proc/<pid>/stat) at that moment, the
// time to its exit and its whole CPU (GNU time). With several --bin, the builds run in turn, interleaved (after
// one uncounted run of each), and each median's ratio to the first build's is printed. --node runs another node
// binary (e.g. Node 24's, from scripts/npm-node.sh); --cpu-prof DIR writes each run's V8 profiles into
// DIR/<build index>-<run>/.
//
//   node dist/bench/startup.js [--pages 1] [--runs 5] [--bin PATH/bin/ubicrawl.js ...] [--node PATH] [--cpu-prof DIR]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './measure.js';
import { startChainSite } from './chain-site.js';

const USAGE = 'node dist/bench/startup.js [--pages N] [--runs N] [--bin PATH ...] [--node PATH] [--cpu-prof DIR]\n';
const here = dirname(fileURLToPath(import.meta.url));
const args = { pages: 1, runs: 5, bins: [] as string[], node: process.execPath, cpuProf: undefined as string | undefined };
for (let i = 2; i < process.argv.length; i++) {
  const k = process.argv[i]!;
  const v = process.argv[++i];
  if (k === '--bin' && v) args.bins.push(v);
  else if (k === '--node' && v) args.node = v;
  else if (k === '--cpu-prof' && v) args.cpuProf = v;
  else if ((k === '--pages' || k === '--runs') && Number.isInteger(Number(v)) && Number(v) > 0) args[k.slice(2) as 'pages' | 'runs'] = Number(v);
  else { process.stderr.write(`bad argument ${k} ${v ?? ''}\n${USAGE}`); process.exit(2); }
}
if (args.bins.length === 0) args.bins.push(join(here, '..', '..', 'bin', 'ubicrawl.js'));

const TICKS = 100; // USER_HZ on Linux
/** CPU-ms (user + system, all threads, the exited ones included) of a process so far; NaN once it is gone. */
function procCpuMs(pid: number): number {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
  } catch { return NaN; }
}

/** The node process GNU time started (its only child). */
function childOf(pid: number): number {
  try { return Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0]); } catch { return NaN; }
}

let onFirst: (() => void) | undefined;
const { server, port } = await startChainSite(args.pages, () => { onFirst?.(); onFirst = undefined; });

interface Run { firstMs: number; firstCpuMs: number; exitMs: number; cpuMs: number }

async function once(bin: string, prof: string | undefined): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-startup-'));
  try {
    const profArgs = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
    let first: { ms: number; cpu: number } | undefined;
    let pid = NaN;
    onFirst = () => { first = { ms: performance.now() - t0, cpu: procCpuMs(pid) }; };
    const t0 = performance.now();
    const p = spawn('/usr/bin/time', ['-f', '%U %S', args.node, ...profArgs, bin, 'join', '--seed', `http://127.0.0.1:${port}/0`, '--until-idle',
      '--data-dir', dir, '--progress', 'off', '--log-level', 'warn', '--allow-address', '127.0.0.0/8', '--no-sitemaps'], { stdio: ['ignore', 'ignore', 'pipe'] });
    // The node process is GNU time's child: found once it exists (well before it can send a request).
    const find = setInterval(() => { pid = childOf(p.pid!); if (pid > 0) clearInterval(find); }, 2);
    let err = '';
    p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    const code = await new Promise<number | null>((r) => p.on('close', r));
    clearInterval(find);
    const exitMs = performance.now() - t0;
    const [u, s] = err.trim().split('\n').pop()!.split(' ').map(Number);
    if (code !== 0 || !Number.isFinite(u) || !first) throw new Error(`${bin} failed (exit ${code}): ${err.slice(-500)}`);
    return { firstMs: first.ms, firstCpuMs: first.cpu, exitMs, cpuMs: (u! + s!) * 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = args.bins.map(() => [] as Run[]);
// One run of each build first, not counted: the first start of a build compiles it and writes the compiled code
// for the next ones (bin/code-cache.js; Node's compile cache on Node ≥ 22.1), which is what every later start is.
for (const bin of args.bins) await once(bin, undefined);
const load0 = loadavg()[0]!;
for (let r = 0; r < args.runs; r++) {
  for (let b = 0; b < args.bins.length; b++) {
    results[b]!.push(await once(args.bins[b]!, args.cpuProf ? join(args.cpuProf, `${b}-${r}`) : undefined));
  }
}
server.close();
process.stdout.write(`start-up: ${args.pages} page(s), ${args.runs} runs each, interleaved, ${args.node}; load ${load0.toFixed(1)}–${loadavg()[0]!.toFixed(1)}\n`);
const fields: [keyof Run, string][] = [['firstMs', 'first request ms'], ['firstCpuMs', 'CPU-ms at it'], ['exitMs', 'exit ms'], ['cpuMs', 'CPU-ms in all']];
const base = fields.map(([k]) => median(results[0]!.map((x) => x[k])));
args.bins.forEach((bin, b) => {
  process.stdout.write(`  ${bin}\n`);
  fields.forEach(([k, label], i) => {
    const xs = results[b]!.map((x) => x[k]);
    const m = median(xs);
    process.stdout.write(`    ${label.padEnd(17)} median ${m.toFixed(0).padStart(5)} (${xs.map((x) => x.toFixed(0)).join(' ')})${b ? `  ${(m / base[i]!).toFixed(2)}× the first` : ''}\n`);
  });
});
