// The whole CPU of a small crawl (docs/performance.md "Worker threads"): `ubicrawl join --until-idle` on a
// loopback site of N pages (each about 11 KB of text, linked in a chain), the process under GNU time (user +
// system, all threads), start-up and shutdown included. What a test's agent, a one-site crawl or a cron job
// pays. With several --bin, the builds run in turn, interleaved, and the ratio of each to the first is printed.
//
//   node dist/bench/small-crawl.js [--pages 50] [--runs 3] [--bin PATH/bin/ubicrawl.js ...]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './measure.js';
import { startChainSite } from './chain-site.js';

const USAGE = 'node dist/bench/small-crawl.js [--pages N] [--runs N] [--bin PATH ...]\n';
const here = dirname(fileURLToPath(import.meta.url));
const args = { pages: 50, runs: 3, bins: [] as string[] };
for (let i = 2; i < process.argv.length; i++) {
  const k = process.argv[i]!;
  const v = process.argv[++i];
  if (k === '--bin' && v) args.bins.push(v);
  else if ((k === '--pages' || k === '--runs') && Number.isInteger(Number(v)) && Number(v) > 0) args[k.slice(2) as 'pages' | 'runs'] = Number(v);
  else { process.stderr.write(`bad argument ${k} ${v ?? ''}\n${USAGE}`); process.exit(2); }
}
if (args.bins.length === 0) args.bins.push(join(here, '..', '..', 'bin', 'ubicrawl.js'));

const { server, port } = await startChainSite(args.pages);

/** CPU-ms of one whole run. */
async function once(bin: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-small-'));
  try {
    const p = spawn('/usr/bin/time', ['-f', '%U %S', process.execPath, bin, 'join', '--seed', `http://127.0.0.1:${port}/0`, '--until-idle',
      '--data-dir', dir, '--progress', 'off', '--log-level', 'warn', '--allow-address', '127.0.0.0/8', '--no-sitemaps', '--min-delay', '0',
      '--delay-factor', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    const code = await new Promise<number | null>((r) => p.on('close', r));
    const [u, s] = err.trim().split('\n').pop()!.split(' ').map(Number);
    if (code !== 0 || !Number.isFinite(u)) throw new Error(`${bin} failed (exit ${code}): ${err.slice(-500)}`);
    return (u! + s!) * 1000;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = args.bins.map(() => [] as number[]);
const load0 = loadavg()[0]!;
for (let r = 0; r < args.runs; r++) {
  for (let b = 0; b < args.bins.length; b++) results[b]!.push(await once(args.bins[b]!));
}
server.close();
process.stdout.write(`small crawl: ${args.pages} pages, ${args.runs} runs each, interleaved; load ${load0.toFixed(1)}–${loadavg()[0]!.toFixed(1)}\n`);
const base = median(results[0]!);
args.bins.forEach((bin, b) => {
  const m = median(results[b]!);
  process.stdout.write(`  ${bin}: ${results[b]!.map((x) => x.toFixed(0)).join(' / ')} CPU-ms, median ${m.toFixed(0)}${b ? `, ${(m / base).toFixed(2)}× the first` : ''}\n`);
});
