// What coordination costs (docs/performance.md "Mesh CPU"): the same synthetic web crawled by one `ubicrawl join`
// agent and by a mesh of N agents on this machine, in one run, alternating which goes first. Each agent is its own
// process under GNU time, so it is charged its own CPU (user + system, all threads); the mesh's figure is the sum
// over its agents. Prints pages, wall time, CPU-ms per page for each, and the ratio mesh / one (the coordination
// overhead per page: forwarding, the libp2p connections' encryption, handoffs, duplicate seen-set work and each
// process's fixed costs).
//
// The agents start together, as a cluster does: the first listens on a free loopback port, the others join it
// (`--seed 127.0.0.1:PORT`); every agent is given the web's roots, which each routes to their owners.
//
//   node dist/bench/mesh-cpu.js [--runs 3] [--agents 3] [--hosts 200] [--pages 50] [--concurrency 32] [--cpu-prof DIR]
//
// Each run also counts the pages fetched by more than one agent (their WARC indexes, robots.txt aside): every page
// should be fetched once, by its host's owner.
//
// --cpu-prof DIR writes each agent's V8 CPU profiles (one per thread) into DIR/agents<N>-a<i>/ (the last pair's).
// --node-options "…" passes options to each agent's node (e.g. "--cpu-prof-interval 500"); --agent-args "…" passes
// options to each `ubicrawl join` (e.g. "--replicas 0", to split the replicated frontier's cost from the rest).
// --perf DIR records each agent with Linux perf (`perf record -g -p PID`, all its threads, kernel included) into
// DIR/agents<N>-a<i>.data; give --node-options "--perf-basic-prof --interpreted-frames-native-stack" to name JS frames.
// --threads prints, per run, the agents' CPU on their main threads and the others (sampled from /proc/<pid>/task/*/stat every 100 ms, so a
// thread's last 100 ms before exit may be missed; the total from GNU time stays the figure).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from './ports.js';
import { loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { median } from './measure.js';
import { parseCdxjLine } from '../src/warc/cdxj.js';

interface Args { runs: number; agents: number; hosts: number; pages: number; concurrency: number; cpuProf?: string; perf?: string; nodeOptions: string[]; agentArgs: string[]; threads: boolean }
const USAGE = 'node dist/bench/mesh-cpu.js [--runs N] [--agents N] [--hosts N] [--pages N] [--concurrency N] [--cpu-prof DIR] [--node-options "…"] [--agent-args "…"] [--threads]\n';

function parseArgs(argv: string[]): Args {
  const a: Args = { runs: 3, agents: 3, hosts: 200, pages: 50, concurrency: 32, nodeOptions: [], agentArgs: [], threads: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    const v = Number(argv[i + 1]);
    const key = k.replace(/^--/, '') as 'runs' | 'agents' | 'hosts' | 'pages' | 'concurrency';
    if (k === '--help') { process.stdout.write(USAGE); process.exit(0); }
    if (k === '--cpu-prof') { a.cpuProf = argv[++i]; continue; }
    if (k === '--node-options') { a.nodeOptions = (argv[++i] ?? '').split(/\s+/).filter(Boolean); continue; }
    if (k === '--agent-args') { a.agentArgs = (argv[++i] ?? '').split(/\s+/).filter(Boolean); continue; }
    if (k === '--threads') { a.threads = true; continue; }
    if (k === '--perf') { a.perf = argv[++i]; continue; }
    if (!['runs', 'agents', 'hosts', 'pages', 'concurrency'].includes(key) || !Number.isInteger(v) || v < 1) { process.stderr.write(`bad argument ${k} ${argv[i + 1] ?? ''}\n${USAGE}`); process.exit(2); }
    a[key] = v;
    i++;
  }
  return a;
}

const here = dirname(fileURLToPath(import.meta.url));
// UBICRAWL_BIN: another entry (e.g. one that loads dist/src unbundled, for profiles with file names).
const bin = process.env.UBICRAWL_BIN ?? join(here, '..', '..', 'bin', 'ubicrawl.js');

interface Web { child: ChildProcess; resolve: string[]; roots: string[] }

async function startWeb(a: Args): Promise<Web> {
  const child = spawn(process.execPath, [join(here, 'web', 'cli.js'), '--hosts', String(a.hosts), '--pages', String(a.pages), '--no-log', '--json'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`synthetic web exited with ${code}`)));
  });
  const info = JSON.parse(line) as { resolve: string[]; roots: string[] };
  return { child, resolve: info.resolve, roots: info.roots };
}

interface AgentRun { pages: number; cpuS: number; maxRssKb: number; threads: Map<string, number> }

const TICK_S = 0.01; // USER_HZ: /proc's utime and stime are in 1/100 s on Linux

/** CPU seconds so far of each thread of `pid` (by thread id: name and seconds), read from /proc. */
function threadTimes(pid: number, into: Map<number, [string, number]>): void {
  let tids: string[];
  try { tids = readdirSync(`/proc/${pid}/task`); } catch { return; }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      // Node 20 names no thread of its own ("node" for all): the main thread is the one whose id is the pid.
      const comm = stat.slice(stat.indexOf('(') + 1, close).replace(/[0-9]+$/, '#');
      const name = Number(tid) === pid ? 'main' : comm === 'node' ? 'other threads' : comm;
      const f = stat.slice(close + 2).split(' ');
      into.set(Number(tid), [name, (Number(f[11]) + Number(f[12])) * TICK_S]);
    } catch { /* the thread ended between the listing and the read */ }
  }
}

/** One `ubicrawl join` under GNU time; resolves when it exits with its pages (from the summary) and its CPU. */
function runAgent(args: string[], dir: string, prof: string[], sampleThreads: boolean, perfOut?: string): Promise<AgentRun> {
  const timeFile = join(dir, `time-${process.hrtime.bigint()}.txt`);
  const child = spawn('/usr/bin/time', ['-f', '%U %S %M', '-o', timeFile, process.execPath, ...prof, bin, 'join', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const byTid = new Map<number, [string, number]>();
  let nodePid: number | undefined;
  const sampler = sampleThreads || perfOut ? setInterval(() => {
    if (nodePid === undefined) {
      try { nodePid = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]) || undefined; } catch { /* not yet */ }
      if (nodePid !== undefined && perfOut) spawn('perf', ['record', '-q', '-F', '499', '-g', '-p', String(nodePid), '-o', perfOut], { stdio: 'ignore' });
    }
    if (nodePid !== undefined && sampleThreads) threadTimes(nodePid, byTid);
  }, perfOut && nodePid === undefined ? 5 : 100) : undefined;
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString('utf8'); });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      if (sampler) clearInterval(sampler);
      const threads = new Map<string, number>();
      for (const [name, s] of byTid.values()) threads.set(name, (threads.get(name) ?? 0) + s);
      if (code !== 0) { reject(new Error(`agent exited with ${code}`)); return; }
      const [user, sys, rss] = readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
      const summary = JSON.parse(out) as { pages: number };
      resolve({ pages: summary.pages, cpuS: user! + sys!, maxRssKb: rss!, threads });
    });
  });
}

interface RunResult {
  agents: number; pages: number; wallS: number; cpuMsPerPage: number; maxRssMb: number; twice: number; threads: Map<string, number>;
  /** Seconds from the start to the first page captured, and from the last one to the end (whole seconds ±1). */
  firstS: number; tailS: number;
}

/** 14-digit UTC WARC timestamp → ms since the epoch. */
const warcMs = (t: string): number => Date.UTC(+t.slice(0, 4), +t.slice(4, 6) - 1, +t.slice(6, 8), +t.slice(8, 10), +t.slice(10, 12), +t.slice(12, 14));

/**
 * Pages (robots.txt aside) recorded by more than one of the agents whose data directories are `dirs`, and the
 * first and last capture's time (WARC timestamps: whole seconds).
 */
function captures(dirs: string[]): { twice: number; firstMs: number; lastMs: number } {
  const by = new Map<string, number>();
  let firstMs = Infinity;
  let lastMs = -Infinity;
  for (const [i, dir] of dirs.entries()) {
    const warc = join(dir, 'warc');
    for (const f of readdirSync(warc).filter((n) => n.endsWith('.cdxj'))) {
      for (const l of readFileSync(join(warc, f), 'utf8').split('\n')) {
        const c = parseCdxjLine(l);
        const url = c?.url;
        if (!url || url.endsWith('/robots.txt')) continue;
        const ms = warcMs(c.timestamp);
        if (ms < firstMs) firstMs = ms;
        if (ms > lastMs) lastMs = ms;
        by.set(url, (by.get(url) ?? 0) | (1 << i));
      }
    }
  }
  let n = 0;
  for (const agents of by.values()) if ((agents & (agents - 1)) !== 0) n++;
  return { twice: n, firstMs, lastMs };
}

async function runMesh(a: Args, web: Web, agents: number): Promise<RunResult> {
  const base = mkdtempSync(join(tmpdir(), 'ubicrawl-meshcpu-'));
  const port = await freePort();
  const common = [
    ...web.roots.flatMap((u) => ['--seed', u]), ...web.resolve.flatMap((r) => ['--resolve', r]),
    '--until-idle', '--min-delay', '0', '--delay-factor', '0', '--concurrency', String(a.concurrency), '--progress', 'off', '--log-level', 'warn', ...a.agentArgs,
  ];
  const t0 = performance.now();
  const start = Date.now();
  try {
    const runs = await Promise.all(Array.from({ length: agents }, (_, i) => {
      const dir = join(base, `a${i}`);
      rmSync(dir, { recursive: true, force: true });
      const mesh = i === 0 ? ['--listen', `/ip4/127.0.0.1/tcp/${port}`] : ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`];
      const prof = [...a.nodeOptions, ...(a.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(a.cpuProf, `agents${agents}-a${i}`)}`] : [])];
      return runAgent([...common, ...mesh, '--data-dir', dir], base, prof, a.threads, a.perf ? join(a.perf, `agents${agents}-a${i}.data`) : undefined).then((r) => r, (err: Error) => { throw new Error(`agent ${i}: ${err.message}`); });
    }));
    const wallS = (performance.now() - t0) / 1000;
    const pages = runs.reduce((s, r) => s + r.pages, 0);
    const cpuS = runs.reduce((s, r) => s + r.cpuS, 0);
    const end = Date.now();
    const { twice, firstMs, lastMs } = captures(Array.from({ length: agents }, (_, i) => join(base, `a${i}`)));
    const threads = new Map<string, number>();
    for (const r of runs) for (const [name, s] of r.threads) threads.set(name, (threads.get(name) ?? 0) + s);
    return { agents, pages, wallS, cpuMsPerPage: (cpuS * 1000) / pages, maxRssMb: Math.max(...runs.map((r) => r.maxRssKb)) / 1024, twice, threads,
      firstS: (firstMs - start) / 1000, tailS: (end - lastMs) / 1000 };
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');
const line = (r: RunResult): string =>
  `${r.agents} agent(s): ${r.pages} pages  ${r.wallS.toFixed(1)} s  ${(r.pages / r.wallS).toFixed(0)} pages/s  ${r.cpuMsPerPage.toFixed(2)} CPU-ms/page (all agents)  peak RSS ${r.maxRssMb.toFixed(0)} MB per agent  first page at ${r.firstS.toFixed(0)} s, last ${r.tailS.toFixed(0)} s before the end${r.agents > 1 ? `  fetched by two agents: ${r.twice}` : ''}`;

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  process.stdout.write(`mesh CPU bench: ${a.hosts} hosts × ${a.pages} pages, 1 agent vs ${a.agents}${a.agentArgs.length ? ` (agents: ${a.agentArgs.join(' ')})` : ''}, ${a.runs} pairs (the first of each alternates); load ${load()}\n`);
  const web = await startWeb(a);
  const one: RunResult[] = [];
  const many: RunResult[] = [];
  try {
    for (let i = 0; i < a.runs; i++) {
      for (const n of i % 2 === 0 ? [1, a.agents] : [a.agents, 1]) {
        const r = await runMesh(a, web, n);
        (n === 1 ? one : many).push(r);
        process.stdout.write(`run ${i + 1} ${line(r)}  load ${load()}\n`);
        if (a.threads) {
          const byName = [...r.threads].sort((x, y) => y[1] - x[1]);
          process.stdout.write(`  CPU-ms/page by thread: ${byName.map(([n, s]) => `${n} ${((s * 1000) / r.pages).toFixed(2)}`).join(', ')}\n`);
        }
      }
    }
  } finally {
    web.child.kill('SIGTERM');
  }
  const ratios = many.map((r, i) => r.cpuMsPerPage / one[i]!.cpuMsPerPage);
  const walls = many.map((r, i) => r.wallS / one[i]!.wallS);
  process.stdout.write(`median 1 agent: ${median(one.map((r) => r.cpuMsPerPage)).toFixed(2)} CPU-ms/page, ${median(one.map((r) => r.wallS)).toFixed(1)} s\n`);
  process.stdout.write(`median ${a.agents} agents: ${median(many.map((r) => r.cpuMsPerPage)).toFixed(2)} CPU-ms/page, ${median(many.map((r) => r.wallS)).toFixed(1)} s\n`);
  process.stdout.write(`${a.agents} agents / 1, pair by pair: CPU per page ${ratios.map((x) => x.toFixed(2)).join(' ')} (median ${median(ratios).toFixed(2)}×); ` +
    `wall ${walls.map((x) => x.toFixed(2)).join(' ')} (median ${median(walls).toFixed(2)}×); load ${load()}\n`);
}

main().catch((err) => { process.stderr.write(`bench failed: ${(err as Error).stack}\n`); process.exit(1); });
