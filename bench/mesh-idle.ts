// What an idle mesh costs (docs/performance.md "Mesh CPU"): N `ubicrawl join` agents meshed on loopback with
// nothing to crawl, each its own process; after a warm-up, each agent's CPU (user + system, all threads, from
// /proc/<pid>/stat) over a window, per second of wall time. What remains is the coordination's fixed cost:
// membership heartbeats, gossipsub's own heartbeat and control traffic, the connections' keep-alives.
//
//   node dist/bench/mesh-idle.js [--agents 3] [--heartbeat 250] [--warmup 5] [--seconds 20] [--runs 1] [--cpu-prof DIR]
//
// --cpu-prof DIR writes each agent's V8 CPU profiles into DIR/hb<ms>-a<i>/ (the agents are stopped with SIGTERM).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.js';
import { median } from './measure.js';

interface Args { agents: number; heartbeat: number; warmup: number; seconds: number; runs: number; cpuProf?: string }
const USAGE = 'node dist/bench/mesh-idle.js [--agents N] [--heartbeat MS] [--warmup S] [--seconds S] [--runs N] [--cpu-prof DIR]\n';

function parseArgs(argv: string[]): Args {
  const a: Args = { agents: 3, heartbeat: 250, warmup: 5, seconds: 20, runs: 1 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    if (k === '--help') { process.stdout.write(USAGE); process.exit(0); }
    if (k === '--cpu-prof') { a.cpuProf = argv[++i]; continue; }
    const key = k.replace(/^--/, '') as Exclude<keyof Args, 'cpuProf'>;
    const v = Number(argv[i + 1]);
    if (!['agents', 'heartbeat', 'warmup', 'seconds', 'runs'].includes(key) || !Number.isInteger(v) || v < 1) { process.stderr.write(`bad argument ${k} ${argv[i + 1] ?? ''}\n${USAGE}`); process.exit(2); }
    a[key] = v;
    i++;
  }
  return a;
}

const here = dirname(fileURLToPath(import.meta.url));
// UBICRAWL_BIN: another entry (e.g. one that loads dist/src unbundled, for profiles with file names).
const bin = process.env.UBICRAWL_BIN ?? join(here, '..', '..', 'bin', 'ubicrawl.js');
const TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user + system, all threads) of a process so far. */
function procCpu(pid: number): number {
  const [user, sys] = cpuParts(`/proc/${pid}/stat`);
  return user + sys;
}

/** User and system CPU seconds from a /proc stat file (a process's, or one thread's under task/). */
function cpuParts(file: string): [number, number] {
  const st = readFileSync(file, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return [Number(f[11]) / TICKS, Number(f[12]) / TICKS];
}

/** The split of a process's CPU so far: user, system, and its main thread's (user + system). */
function cpuSplit(pid: number): { user: number; sys: number; main: number } {
  const [user, sys] = cpuParts(`/proc/${pid}/stat`);
  const [mu, ms] = cpuParts(`/proc/${pid}/task/${pid}/stat`);
  return { user, sys, main: mu + ms };
}

function waitExit(c: ChildProcess, ms: number): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => { c.kill('SIGKILL'); resolve(); }, ms);
    c.once('exit', () => { clearTimeout(t); resolve(); });
  });
}

/** One idle mesh: CPU-ms per second of each agent over the window, and each agent's CPU-ms up to it (start-up, joining, warm-up). */
async function runIdle(a: Args): Promise<{ perS: number[]; warmupMs: number[]; split: string }> {
  const base = mkdtempSync(join(tmpdir(), 'ubicrawl-meshidle-'));
  const port = await freePort();
  const children: ChildProcess[] = [];
  try {
    for (let i = 0; i < a.agents; i++) {
      const mesh = i === 0 ? ['--listen', `/ip4/127.0.0.1/tcp/${port}`] : ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`];
      const prof = a.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(a.cpuProf, `hb${a.heartbeat}-a${i}`)}`] : [];
      const c = spawn(process.execPath, [...prof, bin, 'join', ...mesh, '--heartbeat', String(a.heartbeat), '--data-dir', join(base, `a${i}`),
        '--progress', 'off', '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
      children.push(c);
    }
    await sleep(a.warmup * 1000);
    for (const c of children) if (c.exitCode !== null) throw new Error(`an agent exited early with ${c.exitCode}`);
    const t0 = performance.now();
    const c0 = children.map((c) => procCpu(c.pid!));
    const s0 = children.map((c) => cpuSplit(c.pid!));
    await sleep(a.seconds * 1000);
    const wall = (performance.now() - t0) / 1000;
    const s1 = children.map((c) => cpuSplit(c.pid!));
    // Per agent, CPU-ms/s: user and system; main thread and the others (V8's helpers, libuv's pool, workers).
    const per = (f: (x: { user: number; sys: number; main: number }) => number): string => s1.map((x, i) => ((f(x) - f(s0[i]!)) * 1000 / wall).toFixed(1)).join('/');
    const split = `user ${per((x) => x.user)}, system ${per((x) => x.sys)}; main thread ${per((x) => x.main)}, other threads ${per((x) => x.user + x.sys - x.main)}`;
    return { perS: children.map((c, i) => ((procCpu(c.pid!) - c0[i]!) * 1000) / wall), warmupMs: c0.map((x) => x * 1000), split };
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => waitExit(c, 10_000)));
    rmSync(base, { recursive: true, force: true });
  }
}

const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  process.stdout.write(`idle mesh: ${a.agents} agents, heartbeat ${a.heartbeat} ms, ${a.warmup} s warm-up, ${a.seconds} s window, ${a.runs} run(s); load ${load()}\n`);
  const perAgent: number[] = [];
  for (let r = 0; r < a.runs; r++) {
    const { perS: xs, warmupMs, split } = await runIdle(a);
    perAgent.push(...xs);
    process.stdout.write(`run ${r + 1}: CPU-ms/s per agent ${xs.map((x) => x.toFixed(1)).join(' ')} (CPU-ms before the window, start-up and ${a.warmup} s: ${warmupMs.map((x) => x.toFixed(0)).join(' ')}); load ${load()}\n  ${split}\n`);
  }
  process.stdout.write(`median ${median(perAgent).toFixed(1)} CPU-ms/s per agent (heartbeat ${a.heartbeat} ms); load ${load()}\n`);
}

main().catch((err) => { process.stderr.write(`bench failed: ${(err as Error).stack}\n`); process.exit(1); });
