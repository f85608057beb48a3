#!/usr/bin/env node
// Command line for the synthetic web:
//   node dist/bench/web/cli.js --hosts 50 --pages 40 --port 8080
// prints the --resolve argument(s) and the root URLs, then serves until
// SIGINT/SIGTERM. `--json` prints one JSON line instead (for scripts).
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { startSyntheticWeb } from './server.js';
import type { SyntheticWebOptions } from './types.js';

function num(name: string, min = 0, max = Infinity): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a number in [${min}, ${max}]`);
    return n;
  };
}

function int(name: string, min = 0): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer >= ${min}`);
    return n;
  };
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

const program = new Command('synthetic-web')
  .description('Serve a deterministic synthetic web on loopback (see docs/synthetic-web.md)')
  .option('--seed <seed>', 'seed of the link graph and text', '1')
  .option('--hosts <n>', 'number of hosts', int('hosts', 1), 50)
  .option('--pages <n>', 'pages per host', int('pages', 1), 40)
  .option('--out-links <n>', 'out-links per page', int('out-links'), 8)
  .option('--cross-host <share>', 'share of links to other hosts', num('cross-host', 0, 1), 0.2)
  .option('--page-bytes <min-max>', 'page size range in bytes, e.g. 10240-30720', '10240-30720')
  .option('--sections <n>', 'path sections (/s<n>/p/<k>) for depth variety', int('sections'), 0)
  .option('--latency <ms>', 'response latency', num('latency'), 0)
  .option('--address <ip>', 'loopback address to listen on (repeatable)', collect, [] as string[])
  .option('--port <port>', 'port (0 = ephemeral)', int('port'), 0)
  .option('--host-suffix <suffix>', 'host name suffix', 'web.test')
  .option('--robots <mode>', "robots.txt policy: 'allow' or 'mixed'", 'allow')
  .option('--not-found <share>', 'share of 404 pages', num('not-found', 0, 1), 0)
  .option('--redirects <share>', 'share of redirecting pages', num('redirects', 0, 1), 0)
  .option('--server-errors <share>', 'share of 500 pages', num('server-errors', 0, 1), 0)
  .option('--too-many <share>', 'share of 429 pages', num('too-many', 0, 1), 0)
  .option('--variants <share>', 'share of links written as URL variants', num('variants', 0, 1), 0)
  .option('--nofollow <share>', 'share of rel=nofollow links', num('nofollow', 0, 1), 0)
  .option('--near-dups <share>', 'share of near-duplicate pages', num('near-dups', 0, 1), 0)
  .option('--exact-dups <share>', 'share of exact-duplicate pages', num('exact-dups', 0, 1), 0)
  .option('--change-every <ms>', 'every page changes every N ms (conditional GET testing)', num('change-every'), 0)
  .option('--traps', 'serve the trap hosts (linked from the root of host 0)', false)
  .option('--no-log', 'do not keep a request log (long benchmark runs)')
  .option('--cache-mb <n>', 'rendered-page cache size in MiB', num('cache-mb'), 0)
  .option('--json', 'print one JSON line {port, resolve, roots, traps} instead of text', false);

// Usage errors exit 2, as ubicrawl's own CLI does (docs/cli.md).
program.exitOverride();
try {
  program.parse();
} catch (e) {
  process.exit((e as CommanderError).exitCode === 0 ? 0 : 2);
}
const o = program.opts();

const m = /^(\d+)(?:-(\d+))?$/.exec(String(o.pageBytes));
if (!m) {
  process.stderr.write('error: --page-bytes must be N or MIN-MAX\n');
  process.exit(2);
}
if (o.robots !== 'allow' && o.robots !== 'mixed') {
  process.stderr.write("error: --robots must be 'allow' or 'mixed'\n");
  process.exit(2);
}
const changeEvery = o.changeEvery as number;
const options: SyntheticWebOptions = {
  seed: /^\d+$/.test(o.seed) ? Number(o.seed) : o.seed,
  hosts: o.hosts,
  pagesPerHost: o.pages,
  outLinks: o.outLinks,
  crossHostShare: o.crossHost,
  pageBytes: { min: Number(m[1]), max: Number(m[2] ?? m[1]) },
  sections: o.sections,
  latencyMs: o.latency,
  addresses: o.address.length ? o.address : undefined,
  port: o.port,
  hostSuffix: o.hostSuffix,
  robots: o.robots,
  errorMix: { notFound: o.notFound, redirect: o.redirects, serverError: o.serverErrors, tooMany: o.tooMany },
  variantShare: o.variants,
  nofollowShare: o.nofollow,
  nearDupShare: o.nearDups,
  exactDupShare: o.exactDups,
  changeEveryMs: changeEvery > 0 ? () => changeEvery : undefined,
  traps: o.traps,
  log: o.log,
  cacheBytes: Math.floor(o.cacheMb * 1024 * 1024),
};

try {
  const web = await startSyntheticWeb(options);
  const roots = web.roots();
  if (o.json) {
    process.stdout.write(JSON.stringify({ port: web.port, addresses: web.addresses, resolve: web.resolveArgs, roots, traps: web.trapUrls }) + '\n');
  } else {
    const r = web.reachable();
    process.stdout.write(`synthetic web: ${web.hostCount} hosts x ${o.pages} pages on ${web.addresses.join(', ')} port ${web.port}\n`);
    process.stdout.write(`reachable pages: ${r.reachable.size} (${r.reachableAllowed.size} allowed by robots.txt)\n`);
    process.stdout.write(`resolve:\n${web.resolveArgs.map((a) => `  --resolve '${a}'`).join('\n')}\n`);
    process.stdout.write(`roots:\n${roots.map((u) => '  ' + u).join('\n')}\n`);
    const traps = Object.entries(web.trapUrls);
    if (traps.length) process.stdout.write(`traps:\n${traps.map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n`);
    process.stdout.write('serving; Ctrl-C to stop\n');
  }
  const stop = (): void => {
    void web.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (e) {
  process.stderr.write(`error: ${(e as Error).message}\n`);
  process.exit(1);
}
