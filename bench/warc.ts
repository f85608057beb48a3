// WARC writer benchmark: 20,000 exchanges of 15 KB HTML each, 32 callers at once
// (as the fetch loop calls it), median of 5 runs per configuration.
// Usage: node dist/bench/warc.js [--runs N] [--count N] [--only worker-6,inline-6,...]
// Prints per exchange: wall µs, process CPU µs (all threads) and main-thread CPU µs
// (from /proc/self/task/<pid>/schedstat: the part that competes with the crawl loop).
// CPU figures are the reliable ones on a shared machine; wall time also counts
// whatever else the machine is running (the load average is printed).
import { mkdtemp, rm, stat, readdir } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WarcWriter } from '../src/warc/writer.js';
import type { ExchangeInput } from '../src/warc/writer.js';
import { median } from './measure.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1] : def;
};
const RUNS = Number(arg('--runs', '5'));
const COUNT = Number(arg('--count', '20000'));
const CONCURRENCY = 32;
const PAGE = 15 * 1024;

// Text-like HTML: words from a small vocabulary, links, markup, so deflate sees
// realistic redundancy (~3:1 at level 6), not a repeated string.
const WORDS = (
  'the of and to in is was for on that with as by at from his her which an be this are or have had not ' +
  'but were it their they one all been has more its who also after two first new other can into time some ' +
  'only most would may when out over these about between years such than many then later people state world'
).split(' ');
function page(n: number): Uint8Array {
  let x = (n + 1) * 2654435761;
  const rnd = (m: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) % m);
  let s = `<!doctype html><html><head><meta charset="utf-8"><title>Page ${n}</title></head><body><div class="c">`;
  while (s.length < PAGE - 40) {
    s += '<p>';
    for (let i = 0; i < 30; i++) s += WORDS[rnd(WORDS.length)] + ' ';
    s += `<a href="/h${rnd(200)}/p/${rnd(100000)}">link ${rnd(1000)}</a></p>\n`;
  }
  return Buffer.from((s + '</div></body></html>').slice(0, PAGE));
}
const PAGES = Array.from({ length: 256 }, (_, i) => page(i));

function input(i: number): ExchangeInput {
  const body = PAGES[i % PAGES.length];
  return {
    url: `http://host${i % 200}.example/p/${i}`,
    date: new Date(),
    ip: '127.0.0.1',
    requestHeaders: [
      ['User-Agent', 'ubicrawl/0.1 (+https://example.org/bot)'],
      ['Accept', 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8'],
      ['Accept-Encoding', 'gzip, br'],
    ],
    status: 200,
    responseHeaders: [
      ['Date', new Date().toUTCString()],
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Content-Encoding', 'gzip'],
      ['Content-Length', '5123'],
      ['Cache-Control', 'max-age=600'],
      ['Vary', 'Accept-Encoding'],
    ],
    body,
  };
}

/** CPU time of the main thread in µs (Linux schedstat: ns on CPU); NaN elsewhere. */
function mainThreadCpuUs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return Number.NaN;
  }
}

interface Run {
  wallUs: number;
  cpuUs: number;
  mainUs: number;
  bytesPerExchange: number;
}

async function once(worker: boolean, level: number): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), 'ubicrawl-warc-bench-'));
  try {
    const w = await WarcWriter.open({ dir, agentShortId: 'bench', worker, gzipLevel: level, fsync: false });
    // Warm-up (worker start, JIT) outside the measurement.
    for (let i = 0; i < 200; i++) await w.writeExchange(input(i));
    const main0 = mainThreadCpuUs();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < COUNT) await w.writeExchange(input(next++));
      }),
    );
    await w.close();
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const main = mainThreadCpuUs() - main0;
    let bytes = 0;
    for (const f of await readdir(dir)) bytes += (await stat(join(dir, f))).size;
    return {
      wallUs: (wall * 1000) / COUNT,
      cpuUs: (cpu.user + cpu.system) / COUNT,
      mainUs: main / COUNT,
      bytesPerExchange: bytes / (COUNT + 200),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}


const CONFIGS: Array<{ name: string; worker: boolean; level: number }> = [
  { name: 'worker-4', worker: true, level: 4 }, // the default
  { name: 'worker-6', worker: true, level: 6 },
  { name: 'worker-1', worker: true, level: 1 },
  { name: 'inline-4', worker: false, level: 4 },
  { name: 'inline-6', worker: false, level: 6 },
  { name: 'inline-1', worker: false, level: 1 },
  { name: 'inline-0', worker: false, level: 0 }, // no compression: what framing and digests cost
];
const only = arg('--only', '').split(',').filter(Boolean);

console.log(
  `WARC writer: ${COUNT} exchanges × ${PAGE} B HTML, ${CONCURRENCY} concurrent callers, median of ${RUNS} runs; ` +
    `load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`,
);
for (const c of CONFIGS) {
  if (only.length && !only.includes(c.name)) continue;
  const runs: Run[] = [];
  for (let r = 0; r < RUNS; r++) runs.push(await once(c.worker, c.level));
  const m = (k: keyof Run) => median(runs.map((x) => x[k]));
  const line = {
    config: c.name,
    wallUsPerExchange: +m('wallUs').toFixed(1),
    cpuUsPerExchange: +m('cpuUs').toFixed(1),
    mainThreadCpuUsPerExchange: +m('mainUs').toFixed(1),
    exchangesPerSecond: Math.round(1e6 / m('wallUs')),
    bytesPerExchange: Math.round(m('bytesPerExchange')),
  };
  console.log(JSON.stringify(line));
}
