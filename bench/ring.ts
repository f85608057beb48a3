// HostRing figures (src/assign/ring.ts states the contract and the goal):
//   - balance: max/mean hosts per agent over 1 M synthetic hosts, equal
//     capacities, at 10 / 100 / 1,000 agents (median and worst over several
//     identifier sets);
//   - share of hosts moved when one agent joins and when one leaves (ideal:
//     1/(n+1) and 1/n);
//   - ownerOf cost in ns per lookup (median of 5 timed passes), ring build time
//     (all members added from scratch), one incremental join; CPU time.
// Run: npx tsc -p . && node dist/bench/ring.js [--hosts N] [--replicas R]

import { HostRing, DEFAULT_REPLICAS } from '../src/assign/ring.js';
import { median } from './measure.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

const HOSTS = arg('--hosts', 1_000_000);
const REPLICAS = arg('--replicas', DEFAULT_REPLICAS);
const hosts = Array.from({ length: HOSTS }, (_, i) => `host${i}.example`);
/** CPU milliseconds of this process (less sensitive than wall time to other load on the machine). */
const cpu = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

function ownersOf(ring: HostRing): string[] {
  const out = new Array<string>(HOSTS);
  for (let i = 0; i < HOSTS; i++) out[i] = ring.ownerOf(hosts[i])!;
  return out;
}

function balance(owners: string[], agents: number): number {
  const c = new Map<string, number>();
  for (const o of owners) c.set(o, (c.get(o) ?? 0) + 1);
  let max = 0;
  for (const v of c.values()) if (v > max) max = v;
  return max / (HOSTS / agents);
}

function moved(a: string[], b: string[]): number {
  let n = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++;
  return n / a.length;
}

console.log(`HostRing: ${HOSTS.toLocaleString('en')} hosts, ${REPLICAS} points per unit capacity, node ${process.version}`);
console.log('agents | hosts max/mean (median, worst) | arc max/mean (median) | moved on join (ideal) | moved on leave (ideal) | build ms | join ms | ownerOf ns');
for (const n of [10, 100, 1000]) {
  const sets = n >= 1000 ? 3 : 5;
  const bal: number[] = [], arc: number[] = [], join: number[] = [], leave: number[] = [], build: number[] = [], joinMs: number[] = [], ns: number[] = [];
  for (let s = 0; s < sets; s++) {
    const ids = Array.from({ length: n }, (_, i) => `12D3KooW${s}x${i.toString(36)}`);
    let t0 = cpu();
    const ring = new HostRing({ replicas: REPLICAS });
    for (const id of ids) ring.add(id);
    ring.ownerOf('warm.example'); // forces the (lazy) build
    build.push(cpu() - t0);
    const base = ownersOf(ring);
    bal.push(balance(base, n));
    arc.push(Math.max(...ring.shares().values()) * n);
    t0 = cpu();
    ring.add(`12D3KooW${s}newcomer`);
    ring.ownerOf('warm.example');
    joinMs.push(cpu() - t0);
    join.push(moved(base, ownersOf(ring)));
    ring.remove(`12D3KooW${s}newcomer`);
    ring.remove(ids[0]);
    leave.push(moved(base, ownersOf(ring)));
    ring.add(ids[0]);
    if (s === 0) {
      // Timed lookups: 5 passes over all hosts.
      const passes: number[] = [];
      let sink = 0;
      for (let p = 0; p < 5; p++) {
        t0 = cpu();
        for (let i = 0; i < HOSTS; i++) sink += ring.ownerOf(hosts[i])!.length;
        passes.push(((cpu() - t0) * 1e6) / HOSTS);
      }
      if (sink === 0) console.log('');
      ns.push(median(passes));
    }
  }
  const worst = Math.max(...bal);
  console.log(
    `${String(n).padStart(6)} | ${median(bal).toFixed(3)}, ${worst.toFixed(3)}`.padEnd(41) +
      ` | ${median(arc).toFixed(3)}`.padEnd(24) +
      ` | ${(median(join) * 100).toFixed(2)} % (${(100 / (n + 1)).toFixed(2)} %)`.padEnd(24) +
      ` | ${(median(leave) * 100).toFixed(2)} % (${(100 / n).toFixed(2)} %)`.padEnd(25) +
      ` | ${median(build).toFixed(0).padStart(8)} | ${median(joinMs).toFixed(1).padStart(7)} | ${ns[0].toFixed(0)}`,
  );
}
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
