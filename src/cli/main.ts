// The `ubicrawl` command line (DESIGN.md "CLI"). Exit codes: 0 success,
// 1 runtime failure, 2 usage error; errors are one clear line on stderr.
// Heavy modules are imported inside the actions so `--help` stays instant.
import { writeFileSync, readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { parseResolveRule, DEFAULT_DATA_DIR, DEFAULT_USER_AGENT, DEFAULT_MESH_LISTEN, DEFAULT_MESH_LISTEN_WITH_KEY, defaultMeshAdmission, type ResolveRule } from '../config.js';
import { classifySeed, UsageError, type SeedSet } from './seeds.js';
import { DEFAULT_POLITENESS } from '../politeness/host.js';
import { parseCidr } from '../fetch/address.js';

const VERSION = '0.1.0';

function intArg(name: string, min: number) {
  return (v: string): number => {
    if (!/^\d+$/.test(v.trim())) throw new InvalidArgumentError(`${name} must be a whole number`);
    const n = Number(v);
    if (n < min) throw new InvalidArgumentError(`${name} must be at least ${min}`);
    return n;
  };
}

function collect(v: string, prev: string[]): string[] { return [...prev, v]; }

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `1h`, `30d`, `500ms`; a bare number is seconds. */
function durationArg(name: string) {
  return (v: string): number => {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(v.trim());
    if (!m) throw new InvalidArgumentError(`${name} must be a duration such as 90s, 30m, 1h or 30d`);
    return Math.round(Number(m[1]) * DURATION_UNITS[m[2] ?? 's']!);
  };
}

function numberArg(name: string, min: number, max: number) {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}`);
    return n;
  };
}

function resolveArg(v: string, prev: ResolveRule[]): ResolveRule[] {
  try { return [...prev, parseResolveRule(v)]; } catch (err) { throw new InvalidArgumentError((err as Error).message); }
}

function allowAddressArg(v: string, prev: string[]): string[] {
  try { parseCidr(v); } catch (err) { throw new InvalidArgumentError((err as Error).message); }
  return [...prev, v.trim()];
}

const ALLOW_ADDRESS_HELP = 'also fetch from this internal address range (CIDR, e.g. 10.0.0.0/8 or ::1/128; loopback, private, link-local … are refused otherwise; a --resolve rule reaches its own address for its host and port); repeatable';

export function buildProgram(): Command {
  const program = new Command('ubicrawl')
    .description('A fully peer-to-peer web crawler: identical agents, no coordinator, WARC/1.1 output.')
    .version(VERSION)
    .showSuggestionAfterError(true);

  program.command('join')
    .description('start an agent: crawl seeds, and (with a peer seed) join a mesh')
    .option('--seed <url|peer|file>', 'crawl seed URL, peer (multiaddr or host:port), or file of either; repeatable', collect, [])
    .option('--data-dir <dir>', 'where the store, the WARC files and the API token (api.token) live', DEFAULT_DATA_DIR)
    .option('--user-agent <string>', 'User-Agent header; its product token is matched against robots.txt', DEFAULT_USER_AGENT)
    .option('--concurrency <n>', 'parallel fetches (each to a different host)', intArg('--concurrency', 1), 32)
    .option('--min-delay <ms>', 'minimum delay between two requests to one host', intArg('--min-delay', 0), 1000)
    .option('--delay-factor <k>', 'wait k × the last response time before the next request to a host (Mercator)', (v) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('--delay-factor must be a number ≥ 0');
      return n;
    }, 10)
    .option('--per-ip-delay <ms>', 'also limit per IP address: hosts that resolve to one address share a clock (one request at a time, this delay between them); off by default', intArg('--per-ip-delay', 0))
    .option('--retries <n>', 'retries of a transient failure (timeout, reset, 5xx, 429) before the URL is recorded as failed', intArg('--retries', 0), DEFAULT_POLITENESS.maxRetries)
    .option('--retry-delay <ms>', 'wait before the first retry; doubles with each further one (with jitter)', intArg('--retry-delay', 0), DEFAULT_POLITENESS.retryBaseMs)
    .option('--dns-server <ip[:port]>', 'DNS server to resolve host names with (c-ares); repeatable (default: the system\'s)', collect, [])
    .option('--max-pages <n>', 'stop after fetching this many pages (0 = no limit)', intArg('--max-pages', 0), 0)
    .option('--until-idle', 'exit once nothing is left to crawl (with --recrawl: and nothing is due within --recrawl-horizon)', false)
    .addOption(new Option('--max-duration <duration>', 'stop after this long (e.g. 90s, 2h; 0 = no limit)').argParser(durationArg('--max-duration')).default(0))
    .option('--recrawl', 'revisit fetched pages at the rate they change, with conditional GETs (off: one pass)', false)
    .addOption(new Option('--recrawl-min <duration>', 'shortest revisit interval').argParser(durationArg('--recrawl-min')).default(3_600_000, '1h'))
    .addOption(new Option('--recrawl-max <duration>', 'longest revisit interval').argParser(durationArg('--recrawl-max')).default(30 * 86_400_000, '30d'))
    .addOption(new Option('--recrawl-horizon <duration>', 'with --until-idle: exit when nothing is due sooner than this').argParser(durationArg('--recrawl-horizon')).default(3_600_000, '1h'))
    .addOption(new Option('--revisit-share <x>', 'share of fetches given to revisits while new URLs also wait (0–1)').argParser(numberArg('--revisit-share', 0, 1)).default(0.7))
    .addOption(new Option('--recrawl-speedup <x>', 'run recrawl time x times faster than the clock (simulations and tests)').argParser(numberArg('--recrawl-speedup', 1, 1e9)).default(1))
    .option('--summary <file>', 'also write the closing JSON summary to this file')
    .option('--resolve <host:port:addr>', "connect to ADDR for HOST:PORT (curl syntax; HOST may be '*' or '*.suffix'); repeatable", resolveArg, [])
    .option('--allow-address <cidr>', ALLOW_ADDRESS_HELP, allowAddressArg, [])
    .option('--max-body <bytes>', 'body cap; longer bodies are kept truncated', intArg('--max-body', 1024), 2 * 1024 * 1024)
    .option('--warc-max-size <bytes>', 'rotate WARC files at this size', intArg('--warc-max-size', 1024), 1024 * 1024 * 1024)
    .addOption(new Option('--warc-digest <algo>', 'WARC digest algorithm, also the exact-duplicate key (sha1: as Common Crawl and Heritrix archives; see docs/warc.md)').choices(['sha1', 'sha256']).default('sha1'))
    .option('--operator <text>', 'who runs the crawl, for the warcinfo record (e.g. "Jane Doe <jane@example.org>")')
    .option('--no-warc', 'do not write WARC files')
    .option('--no-sitemaps', "do not follow robots.txt Sitemap: lines and /sitemap.xml")
    .option('--no-dedup', 'store exact duplicates as full responses and skip near-duplicate detection')
    .option('--no-near-dup', 'keep exact-duplicate revisit records, skip SimHash near-duplicate detection')
    .option('--near-dup-distance <bits>', 'SimHash Hamming distance (0-3) that marks a near-duplicate', (v) => {
      const n = Number(v);
      if (!/^\d+$/.test(v.trim()) || n > 3) throw new InvalidArgumentError('--near-dup-distance must be 0, 1, 2 or 3');
      return n;
    }, 3)
    .option('--listen <multiaddr>', `libp2p listen address; repeatable (default ${DEFAULT_MESH_LISTEN}, with --swarm-key ${DEFAULT_MESH_LISTEN_WITH_KEY}); beyond loopback it needs --swarm-key or --open-mesh`, collect, [])
    .option('--announce <multiaddr>', 'address to announce to peers instead of the listen addresses; repeatable', collect, [])
    .option('--swarm-key <file>', 'libp2p private network key (make one with `ubicrawl keygen FILE`): only holders can connect')
    .option('--open-mesh', 'allow listening beyond loopback without a swarm key: anyone who can reach this port can join the mesh', false)
    .option('--capacity <n>', `share of hosts relative to other agents (${defaultMeshAdmission().minCapacity}–${defaultMeshAdmission().maxCapacity}; heartbeats outside this range are refused)`,
      numberArg('--capacity', defaultMeshAdmission().minCapacity, defaultMeshAdmission().maxCapacity), 1)
    .option('--crawl-id <id>', 'agents of one crawl share this id (one gossip topic per crawl)', 'default')
    .option('--heartbeat <ms>', 'membership heartbeat interval', intArg('--heartbeat', 50), 1000)
    .option('--dead-after <ms>', 'a silent member without a connection is dead after this long', intArg('--dead-after', 100), 5000)
    .option('--api <host:port>', 'serve the status and control API (and dashboard) here, e.g. 127.0.0.1:7070')
    .option('--api-token-file <file>', 'bearer token required by every API route (mandatory when it listens beyond loopback); without it the agent makes DATA-DIR/api.token, required by the routes that change something')
    .addOption(new Option('--progress <mode>', 'live display').choices(['auto', 'tty', 'log', 'off']).default('auto'))
    .addOption(new Option('--log-level <level>', 'log level').choices(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('info'))
    .option('--heap-growth <percent>', 'let the JS heap grow this many percent over its live size (but at least 48 MB) before a full GC; 0 = V8\'s own policy, up to 300', intArg('--heap-growth', 0), 50)
    .action(async (opts) => { process.exitCode = await runJoin(opts); });

  program.command('keygen')
    .description('write a new swarm key (mode 0600) for --swarm-key; copy the same file to every machine of the mesh')
    .argument('<file>', 'where to write the key')
    .option('--force', 'overwrite an existing file', false)
    .action(async (file: string, opts: { force: boolean }) => {
      const { existsSync } = await import('node:fs');
      if (existsSync(file) && !opts.force) throw new UsageError(`${file} exists: refusing to overwrite a swarm key (--force to replace it; every machine then needs the new one)`);
      const { writeSwarmKeyFile } = await import('../mesh/node.js');
      writeSwarmKeyFile(file);
      process.stderr.write(`wrote a new swarm key to ${file}: copy it to every machine (e.g. scp) and pass --swarm-key ${file}\n`);
    });

  const robots = program.command('robots').description('robots.txt tools (RFC 9309)');
  robots.command('check')
    .description('tell, for each URL, whether a robots.txt allows it and which rule decided')
    .argument('<file-or-url>', 'robots.txt file, or the URL of one to fetch')
    .argument('<url...>', 'URLs or paths to check')
    .option('--agent <name>', 'user agent (product token) to check for', 'ubicrawl')
    .option('--resolve <host:port:addr>', 'as for join; repeatable', resolveArg, [])
    .option('--allow-address <cidr>', 'as for join; repeatable', allowAddressArg, [])
    .action(async (source: string, urls: string[], opts: { agent: string; resolve: ResolveRule[]; allowAddress: string[] }) => {
      const { RobotsTxt, formatExplain } = await import('../robots/index.js');
      const body = await readSource(source, opts.resolve, opts.allowAddress);
      const robotsTxt = RobotsTxt.parse(body);
      for (const u of urls) process.stdout.write(formatExplain(u, robotsTxt.explain(u, opts.agent)) + '\n');
    });

  const url = program.command('url').description('URL tools (RFC 3986)');
  url.command('normalize')
    .description('print the normal form of each URL (arguments, or stdin one per line)')
    .argument('[url...]', 'URLs to normalise')
    .option('--base <url>', 'resolve relative references against this base')
    .action(async (urls: string[], opts: { base?: string }) => {
      const { normalizeUrlsForCli, splitInputLines } = await import('../url/cli.js');
      const inputs = urls.length ? urls : splitInputLines(await readStdin());
      const result = normalizeUrlsForCli(inputs, { base: opts.base });
      process.stdout.write(result.lines.map((l) => l + '\n').join(''));
      if (result.invalid > 0) process.exitCode = 1;
    });

  program.command('simhash')
    .description('print the 64-bit SimHash of each file (visible text for HTML)')
    .argument('<file...>')
    .action(async (files: string[]) => {
      const { simhash64 } = await import('../dedup/simhash.js');
      const { extractPage } = await import('../parse/html.js');
      for (const f of files) {
        const body = readFileSync(f);
        const isHtml = /\.x?html?$/i.test(f) || /^\s*</.test(body.subarray(0, 64).toString('latin1'));
        const text = isHtml
          ? extractPage(body, { url: 'http://localhost/', contentType: 'text/html', robotsToken: 'ubicrawl', wantText: true }).text ?? ''
          : body.toString('utf8');
        process.stdout.write(`${simhash64(text).toString(16).padStart(16, '0')}  ${f}\n`);
      }
    });

  // Commands that talk to a running agent's API (src/api/client.ts).
  const apiOptions = (c: Command) => c
    .option('--api <host:port>', 'the agent API', '127.0.0.1:7070')
    .option('--token-file <file>', 'bearer token file (default: DATA-DIR/api.token, for an agent on this machine)')
    .option('--data-dir <dir>', "the agent's data dir, where its API token is", DEFAULT_DATA_DIR)
    .option('--json', 'print raw JSON', false);
  apiOptions(program.command('status').description('show an agent and the mesh as it sees it'))
    .action(async (opts) => { const { runStatus } = await import('../api/client.js'); process.exitCode = await runStatus(opts); });
  apiOptions(program.command('seed').description('add crawl seeds through a running agent (routed to their owners)').argument('<url...>'))
    .action(async (urls: string[], opts) => { const { runSeed } = await import('../api/client.js'); process.exitCode = await runSeed(urls, opts); });
  apiOptions(program.command('leave').description('ask an agent to leave the mesh gracefully').option('--wait', 'wait until it has left', false))
    .action(async (opts) => { const { runLeave } = await import('../api/client.js'); process.exitCode = await runLeave(opts); });
  apiOptions(program.command('inspect').description('what an agent knows about a URL or a host').argument('<url-or-host>'))
    .action(async (target: string, opts) => { const { runInspect } = await import('../api/client.js'); process.exitCode = await runInspect(target, opts); });

  program.command('index')
    .description('(re)build the CDXJ index next to each WARC file')
    .argument('<warc...>', 'WARC files')
    .action(async (paths: string[]) => {
      const { runIndexCommand } = await import('../warc/cdxj.js');
      process.exitCode = await runIndexCommand(paths);
    });

  const warc = program.command('warc').description('WARC tools');
  warc.command('get')
    .description('print the stored response body of a URL, found through the CDXJ indexes')
    .argument('<url>')
    .option('--dir <dir>', 'WARC directory', `${DEFAULT_DATA_DIR}/warc`)
    .option('--headers', 'print the status line and headers first (like curl -i)', false)
    .option('--out <file>', 'write the body to this file instead of stdout')
    .option('--timestamp <ts>', 'the capture closest to this 14-digit timestamp')
    .action(async (u: string, opts: { dir: string; headers: boolean; out?: string; timestamp?: string }) => {
      const { runWarcGetCommand } = await import('../warc/lookup.js');
      process.exitCode = await runWarcGetCommand(u, opts);
    });

  return program;
}

async function readSource(source: string, resolve: ResolveRule[], allowAddress: string[]): Promise<string> {
  if (/^https?:\/\//i.test(source)) {
    const { Fetcher } = await import('../fetch/fetcher.js');
    const { HostResolver } = await import('../fetch/dns.js');
    const { AddressPolicy } = await import('../fetch/address.js');
    const { defaultConfig } = await import('../config.js');
    const cfg = defaultConfig();
    // The same guard as the crawl's (docs/operations.md "Internal addresses"): a --resolve target is allowed.
    const f = new Fetcher(cfg.fetch, cfg.userAgent, new HostResolver(resolve), { addresses: new AddressPolicy(allowAddress) });
    const out = await f.fetch(source);
    await f.close();
    if (!out.ok) throw new Error(`cannot fetch ${source}: ${out.message}`);
    if (out.status >= 400 && out.status < 500) { process.stderr.write(`note: ${source} answered ${out.status}: RFC 9309 §2.3.1.3 says allow all\n`); return ''; }
    if (out.status >= 500) throw new Error(`${source} answered ${out.status}: RFC 9309 §2.3.1.4 says disallow all`);
    return out.body.toString('utf8');
  }
  try { return readFileSync(source, 'utf8'); } catch (err) { throw new UsageError(`cannot read ${source}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`); }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

interface JoinOpts {
  seed: string[]; dataDir: string; userAgent: string; concurrency: number; minDelay: number; delayFactor: number;
  maxPages: number; untilIdle: boolean; maxDuration: number; recrawl: boolean; recrawlMin: number; recrawlMax: number;
  recrawlHorizon: number; revisitShare: number; recrawlSpeedup: number; summary?: string; resolve: ResolveRule[]; allowAddress: string[]; maxBody: number; warcMaxSize: number;
  warcDigest: 'sha1' | 'sha256'; operator?: string;
  warc: boolean; sitemaps: boolean; dedup: boolean; nearDup: boolean; nearDupDistance: number; progress: 'auto' | 'tty' | 'log' | 'off'; logLevel: string; api?: string; apiTokenFile?: string;
  listen: string[]; announce: string[]; swarmKey?: string; openMesh: boolean; capacity: number; crawlId: string; heartbeat: number; deadAfter: number;
  perIpDelay?: number; retries: number; retryDelay: number; dnsServer: string[]; heapGrowth: number;
}

async function runJoin(opts: JoinOpts): Promise<number> {
  const seeds: SeedSet = { urls: [], peers: [] };
  for (const s of opts.seed) classifySeed(s, seeds);
  // Exposure beyond loopback is checked with the other startup checks (src/crawl/preflight.ts).
  const listen = opts.listen.length ? opts.listen : [opts.swarmKey ? DEFAULT_MESH_LISTEN_WITH_KEY : DEFAULT_MESH_LISTEN];
  const mode = opts.progress === 'auto' ? (process.stderr.isTTY ? 'tty' : 'log') : opts.progress;
  const { startAgent } = await import('../crawl/agent.js');
  const { createLogger } = await import('../util/log.js');
  const { startProgress } = await import('./progress.js');
  // On a TTY the live line is the display; logs show only what needs attention.
  const logger = createLogger(mode === 'tty' && opts.logLevel === 'info' ? 'warn' : opts.logLevel);
  const agent = await startAgent({
    dataDir: opts.dataDir, userAgent: opts.userAgent, seeds: seeds.urls, concurrency: opts.concurrency,
    minDelayMs: opts.minDelay, delayFactor: opts.delayFactor, maxPages: opts.maxPages, untilIdle: opts.untilIdle,
    resolve: opts.resolve, allowAddress: opts.allowAddress, fetch: { maxBodyBytes: opts.maxBody },
    politeness: {
      maxRetries: opts.retries, retryBaseMs: opts.retryDelay,
      ...(opts.perIpDelay !== undefined ? { perIp: true, ipMinDelayMs: opts.perIpDelay } : {}),
    },
    dns: opts.dnsServer.length ? { servers: opts.dnsServer } : {}, warc: { enabled: opts.warc, maxFileBytes: opts.warcMaxSize, digest: opts.warcDigest, ...(opts.operator ? { operator: opts.operator } : {}) },
    api: { listen: opts.api, tokenFile: opts.apiTokenFile },
    sitemaps: { enabled: opts.sitemaps },
    maxDurationMs: opts.maxDuration,
    heapGrowthPercent: opts.heapGrowth,
    recrawl: {
      enabled: opts.recrawl, minIntervalMs: opts.recrawlMin, maxIntervalMs: Math.max(opts.recrawlMin, opts.recrawlMax),
      horizonMs: opts.recrawlHorizon, revisitShare: opts.revisitShare, speedup: opts.recrawlSpeedup,
    },
    dedup: { enabled: opts.dedup, near: opts.nearDup, maxDistance: opts.nearDupDistance },
    mesh: {
      enabled: true, peers: seeds.peers, announce: opts.announce, swarmKeyFile: opts.swarmKey, capacity: opts.capacity, crawlId: opts.crawlId,
      heartbeatMs: opts.heartbeat, deadAfterMs: opts.deadAfter, listen, openMesh: opts.openMesh,
    },
    logger,
  });
  const progress = startProgress(mode, () => agent.snapshot(), logger);
  let signals = 0;
  const onSignal = (sig: string) => {
    if (++signals > 1) process.exit(130);
    // A signal means "leave": hand the hosts over to the rest of the mesh, then exit.
    logger.warn({ signal: sig }, 'leaving: finishing in-flight fetches and handing hosts over (again to force)');
    void agent.leave();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const summary = await agent.done;
  progress.stop();
  const text = JSON.stringify(summary, null, 2);
  process.stdout.write(text + '\n');
  if (opts.summary) writeFileSync(opts.summary, text + '\n');
  if (mode === 'tty' && summary.warcDir) process.stderr.write(`WARC files are in ${String(summary.warcDir)}\n`);
  // One plain line for the operator; nothing acknowledged was lost (docs/storage.md "Write failures").
  if (summary.failure) process.stderr.write(`ubicrawl: stopped: ${String(summary.failure)} (queued work is kept: fix the cause, e.g. free disk space, and run the same command again to resume)\n`);
  return summary.failure ? 1 : 0;
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  program.exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  for (const c of program.commands) { c.exitOverride(); for (const sc of c.commands) sc.exitOverride(); }
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2; // commander already printed its one-line message
    }
    if (err instanceof UsageError) { process.stderr.write(`ubicrawl: ${err.message}\n`); return 2; }
    // src/crawl/preflight.ts: refused before anything started. Matched by name: importing it here would load the agent for `--help`.
    if (err instanceof Error && err.name === 'StartupError') { process.stderr.write(`ubicrawl: ${err.message}\n`); return 2; }
    process.stderr.write(`ubicrawl: ${(err as Error).message}\n`);
    return 1;
  }
}
