// Bounded loopback load test of the synthetic web server, to check it is not
// the bottleneck of a crawl benchmark:
//   node dist/bench/web/load.js --requests 40000 --connections 32
// Starts the server (cli.js) in a child process, fetches every page of the
// web in a shuffled order (distinct URLs, like a crawl: every body is
// rendered, the cache rarely helps) through an undici Pool, and prints
// requests/s, MB/s and the server's CPU time per request (from /proc).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import { Pool } from 'undici';
import { median } from '../measure.js';

const program = new Command('synthetic-web-load')
  .option('--requests <n>', 'requests to send', (v) => Number(v), 40000)
  .option('--connections <n>', 'concurrent keep-alive connections', (v) => Number(v), 32)
  .option('--hosts <n>', 'hosts', (v) => Number(v), 200)
  .option('--pages <n>', 'pages per host', (v) => Number(v), 50)
  .option('--latency <ms>', 'server latency', (v) => Number(v), 0)
  .option('--log', 'keep the server request log on (as tests do)', false)
  .option('--cache-mb <n>', 'server page cache, MiB', (v) => Number(v), 0)
  .option('--runs <n>', 'runs (median reported)', (v) => Number(v), 3);
program.parse();
const o = program.opts();

function cpuMs(pid: number): { user: number; sys: number } {
  // /proc/<pid>/stat fields 14 and 15: utime and stime in clock ticks (USER_HZ = 100 on Linux).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(f[11]) * 10, sys: Number(f[12]) * 10 };
}

interface Result { rps: number; mbps: number; cpuUsPerReq: number; userUsPerReq: number }

async function run(): Promise<Result> {
  const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
  const args = [cli, '--json', '--hosts', String(o.hosts), '--pages', String(o.pages), '--latency', String(o.latency)];
  if (!o.log) args.push('--no-log');
  args.push('--cache-mb', String(o.cacheMb));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const line: string = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (l) => { rl.close(); resolve(l); });
    child.once('exit', (c) => reject(new Error(`server exited with ${c}`)));
  });
  const info = JSON.parse(line) as { port: number };
  const hosts: number = o.hosts;
  const pages: number = o.pages;
  const total = hosts * pages;
  // A fixed permutation of all pages: a crawl fetches each page once.
  const order = new Uint32Array(total);
  for (let j = 0; j < total; j++) order[j] = j;
  let s = 12345;
  for (let j = total - 1; j > 0; j--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const r = s % (j + 1);
    const t = order[j]; order[j] = order[r]; order[r] = t;
  }
  const pool = new Pool(`http://127.0.0.1:${info.port}`, { connections: o.connections, pipelining: 1 });
  const n: number = o.requests;
  let next = 0;
  let bytes = 0;
  let errors = 0;
  const cpu0 = cpuMs(child.pid!);
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < n) {
      const id = order[next++ % total];
      const h = Math.floor(id / pages);
      const k = id % pages;
      const res = await pool.request({
        path: k === 0 ? '/' : `/p/${k}`, method: 'GET', headers: { host: `h${h}.web.test:${info.port}` },
      });
      if (res.statusCode !== 200) errors++;
      for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    }
  };
  await Promise.all(Array.from({ length: o.connections }, worker));
  const secs = (performance.now() - t0) / 1000;
  const cpu1 = cpuMs(child.pid!);
  const user = cpu1.user - cpu0.user;
  const cpu = user + cpu1.sys - cpu0.sys;
  await pool.close();
  child.kill('SIGTERM');
  if (errors) process.stderr.write(`${errors} non-200 answers\n`);
  return { rps: n / secs, mbps: bytes / secs / 1e6, cpuUsPerReq: (cpu * 1000) / n, userUsPerReq: (user * 1000) / n };
}

const results: Result[] = [];
for (let r = 0; r < o.runs; r++) {
  const x = await run();
  results.push(x);
  process.stdout.write(`run ${r + 1}: ${x.rps.toFixed(0)} req/s, ${x.mbps.toFixed(1)} MB/s, server ${x.cpuUsPerReq.toFixed(0)} CPU-us/req (${x.userUsPerReq.toFixed(0)} user)\n`);
}
const med = (f: (x: (typeof results)[number]) => number): number => median(results.map(f));
process.stdout.write(`median: ${med((x) => x.rps).toFixed(0)} req/s, ${med((x) => x.mbps).toFixed(1)} MB/s, ` +
  `server ${med((x) => x.cpuUsPerReq).toFixed(0)} CPU-us/req, ${med((x) => x.userUsPerReq).toFixed(0)} of it user (${o.connections} connections, log ${o.log ? 'on' : 'off'})\n`);
