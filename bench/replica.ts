// What the replicated frontier costs (docs/performance.md "Replicated
// frontier"): three agent processes crawl one synthetic web as a mesh, with
// `--replicas 0` and `--replicas 1` in interleaved runs. Per page: CPU of the
// three agents (user + system, from the reaped children's times), bytes the
// agents wrote (write syscalls: LevelDB and sockets, from /proc/<pid>/io, last
// sample before exit), the store's size at the end, and the replica items sent.
//
//   node dist/bench/replica.js [--runs 3] [--hosts 150] [--pages 20] [--agents 3]
import { mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { tmpdir, loadavg } from 'node:os';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb } from './web/index.js';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'ubicrawl.js');

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const RUNS = arg('--runs', 3);
const HOSTS = arg('--hosts', 150);
const PAGES = arg('--pages', 20);
const AGENTS = arg('--agents', 3);

/** CPU seconds of this process's reaped children (utime + stime of /proc/self/stat: cutime, cstime). */
function childCpu(): number {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[13]) + Number(rest[14])) / 100; // fields 16, 17; USER_HZ = 100
}

function wchar(pid: number): number {
  try { return Number(/wchar: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0); } catch { return -1; }
}

function dirBytes(d: string): number {
  let n = 0;
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return n;
}

interface Run { pages: number; twice: number; firstSecs: number; tailSecs: number; secs: number; cpuMsPerPage: number; writtenPerPage: number; storePerPage: number; replicaItems: number }

async function runOnce(replicas: number): Promise<Run> {
  const web = await startSyntheticWeb({ seed: 11, hosts: HOSTS, pagesPerHost: PAGES, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 1500, max: 3000 }, sitemap: false });
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-replica-'));
  writeFileSync(join(dir, 'seeds'), web.roots().join('\n') + '\n');
  const procs: ChildProcess[] = [];
  const out: string[] = [];
  const written = new Map<number, number>();
  const sampler = setInterval(() => { for (const p of procs) { const w = wchar(p.pid!); if (w >= 0) written.set(p.pid!, w); } }, 100);
  const cpu0 = childCpu();
  const t0 = performance.now();
  try {
    const start = (name: string, extra: string[]) => {
      const p = spawn(process.execPath, [BIN, 'join', '--data-dir', join(dir, name), '--until-idle', '--min-delay', '20', '--delay-factor', '0', '--concurrency', '16',
        '--progress', 'off', '--log-level', 'info', '--no-sitemaps', '--no-warc', '--heartbeat', '250', '--dead-after', '1500', '--replicas', String(replicas),
        '--listen', '/ip4/127.0.0.1/tcp/0', ...web.resolveArgs.flatMap((r) => ['--resolve', r]), ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      p.stdout!.on('data', (d: Buffer) => { text += d; });
      p.stderr!.on('data', (d: Buffer) => { text += d; });
      const done = new Promise<void>((r) => p.once('close', () => { out.push(text); r(); }));
      procs.push(p);
      return { p, done, text: () => text };
    };
    const a0 = start('a0', []);
    let port = 0;
    for (let i = 0; i < 1200 && !port; i++) {
      const line = a0.text().split('\n').find((l) => l.includes('"mesh node started"'));
      port = Number(/\/ip4\/127\.0\.0\.1\/tcp\/(\d+)/.exec(line ?? '')?.[1] ?? 0);
      if (!port) await new Promise((r) => setTimeout(r, 50));
    }
    if (!port) throw new Error('a0 did not start');
    const rest = Array.from({ length: AGENTS - 1 }, (_, i) => start(`a${i + 1}`, ['--seed', `127.0.0.1:${port}`, ...(i === AGENTS - 2 ? ['--seed', join(dir, 'seeds')] : [])]));
    await Promise.all([a0.done, ...rest.map((r) => r.done)]);
    const secs = (performance.now() - t0) / 1000;
    const cpu = childCpu() - cpu0;
    let pages = 0;
    let replicaItems = 0;
    for (const t of out) {
      pages += Number(/"pages": (\d+)/.exec(t)?.[1] ?? 0);
      replicaItems += Number(/"replicatedFrontier": \{[^}]*?"sent": (\d+)/.exec(t)?.[1] ?? 0);
    }
    const bytes = [...written.values()].reduce((a, b) => a + b, 0);
    const urls = web.requests().filter((r) => r.url && !r.path.startsWith('/robots')).map((r) => r.url!);
    const twice = urls.length - new Set(urls).size;
    // Where the wall time goes: start-up (mesh formed, seeds routed) and the tail (mesh-wide idle detection).
    const starts = web.requests().map((r) => r.start);
    const wallStart = Date.now() - secs * 1000;
    const firstSecs = (Math.min(...starts) - wallStart) / 1000;
    const tailSecs = (Date.now() - Math.max(...starts)) / 1000;
    return { twice, firstSecs, tailSecs, pages, secs, cpuMsPerPage: (cpu * 1000) / pages, writtenPerPage: bytes / pages, storePerPage: dirBytes(dir) / pages, replicaItems };
  } finally {
    clearInterval(sampler);
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const med = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]!; };
const fmt = (r: Run): string => `${r.pages} pages (${r.twice} fetched again) in ${r.secs.toFixed(1)} s  ${r.cpuMsPerPage.toFixed(2)} CPU-ms/page  ${(r.writtenPerPage / 1024).toFixed(2)} KiB written/page  ` +
  `store ${(r.storePerPage / 1024).toFixed(2)} KiB/page  queued replicas sent ${r.replicaItems}  first request ${r.firstSecs.toFixed(1)} s, last request to end ${r.tailSecs.toFixed(1)} s`;

console.log(`replicated frontier cost: ${AGENTS} agents, ${HOSTS} hosts × ${PAGES} pages, ${RUNS} interleaved pairs; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
const results: Record<number, Run[]> = { 0: [], 1: [] };
for (let i = 0; i < RUNS; i++) {
  for (const r of i % 2 === 0 ? [0, 1] : [1, 0]) {
    const res = await runOnce(r);
    results[r]!.push(res);
    console.log(`  --replicas ${r}: ${fmt(res)}  (load ${loadavg()[0]!.toFixed(1)})`);
  }
}
for (const r of [0, 1]) {
  const rs = results[r]!;
  console.log(`median --replicas ${r}: ${med(rs.map((x) => x.cpuMsPerPage)).toFixed(2)} CPU-ms/page  ${(med(rs.map((x) => x.writtenPerPage)) / 1024).toFixed(2)} KiB written/page  ` +
    `store ${(med(rs.map((x) => x.storePerPage)) / 1024).toFixed(2)} KiB/page  ${med(rs.map((x) => x.secs)).toFixed(1)} s`);
}
