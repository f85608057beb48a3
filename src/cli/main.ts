// The `ubicrawl` command line (docs/cli.md). Exit codes: 0 success,
// 1 runtime failure, 2 usage error; errors are one clear line on stderr.
// Heavy modules are imported inside the actions so `--help` stays instant.
// The options and their defaults are the tables of ./options.ts.
import { writeFileSync, readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { DEFAULT_DATA_DIR, DEFAULT_ROBOTS_TOKEN, type AgentOptions, type ResolveRule } from '../config.js';
import { UsageError } from './seeds.js';
import { VERSION } from '../version.js';
import {
  addOptions, toAgentOptions, formatDuration, API_CLIENT_OPTIONS, BLOCK_OPTIONS, CONFIG_PRINT_OPTIONS, JOIN_OPTIONS, KEYGEN_OPTIONS, LEAVE_OPTIONS, ROBOTS_CHECK_OPTIONS, URL_NORMALIZE_OPTIONS,
  WARC_GET_OPTIONS, GRAPH_EXPORT_OPTIONS, DERIVE_OPTIONS, WACZ_OPTIONS, type ParsedOptions,
} from './options.js';

export function buildProgram(): Command {
  const program = new Command('ubicrawl')
    .description('A fully peer-to-peer web crawler: identical agents, no coordinator, WARC/1.1 output.')
    .version(VERSION)
    .showSuggestionAfterError(true);

  addOptions(program.command('join')
    .description('start an agent: crawl seeds, and (with a peer seed) join a mesh'), JOIN_OPTIONS)
    .action(async (_opts, cmd: Command) => { process.exitCode = await runJoin(await withConfigFile(cmd) as JoinOpts); });

  addOptions(program.command('keygen')
    .description('write a new swarm key (mode 0600) for --swarm-key; copy the same file to every machine of the mesh')
    .argument('<file>', 'where to write the key'), KEYGEN_OPTIONS)
    .action(async (file: string, opts: { force: boolean }) => {
      const { existsSync } = await import('node:fs');
      if (existsSync(file) && !opts.force) throw new UsageError(`${file} exists: refusing to overwrite a swarm key (--force to replace it; every machine then needs the new one)`);
      const { writeSwarmKeyFile } = await import('../mesh/node.js');
      writeSwarmKeyFile(file);
      process.stderr.write(`wrote a new swarm key to ${file}: copy it to every machine (e.g. scp) and pass --swarm-key ${file}\n`);
    });

  const robots = program.command('robots').description('robots.txt tools (RFC 9309)');
  addOptions(robots.command('check')
    .description('tell, for each URL, whether a robots.txt allows it and which rule decided')
    .argument('<file-or-url>', 'robots.txt file, or the URL of one to fetch')
    .argument('<url...>', 'URLs or paths to check'), ROBOTS_CHECK_OPTIONS)
    .action(async (source: string, urls: string[], opts: { agent: string; resolve: ResolveRule[]; allowAddress: string[] }) => {
      const { RobotsTxt, formatExplain } = await import('../robots/index.js');
      const body = await readSource(source, opts.resolve, opts.allowAddress);
      const robotsTxt = RobotsTxt.parse(body);
      for (const u of urls) process.stdout.write(formatExplain(u, robotsTxt.explain(u, opts.agent)) + '\n');
    });

  const url = program.command('url').description('URL tools (RFC 3986)');
  addOptions(url.command('normalize')
    .description('print the normal form of each URL (arguments, or stdin one per line)')
    .argument('[url...]', 'URLs to normalise'), URL_NORMALIZE_OPTIONS)
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
          ? extractPage(body, { url: 'http://localhost/', contentType: 'text/html', robotsToken: DEFAULT_ROBOTS_TOKEN, wantText: true }).text ?? ''
          : body.toString('utf8');
        process.stdout.write(`${simhash64(text).toString(16).padStart(16, '0')}  ${f}\n`);
      }
    });

  // Commands that talk to a running agent's API (src/api/client.ts).
  const apiOptions = (c: Command) => addOptions(c, API_CLIENT_OPTIONS);
  apiOptions(program.command('status').description('show an agent and the mesh as it sees it'))
    .action(async (opts) => { const { runStatus } = await import('../api/client.js'); process.exitCode = await runStatus(opts); });
  apiOptions(program.command('seed').description('add crawl seeds through a running agent (routed to their owners)').argument('<url...>'))
    .action(async (urls: string[], opts) => { const { runSeed } = await import('../api/client.js'); process.exitCode = await runSeed(urls, opts); });
  apiOptions(addOptions(program.command('block')
    .description("stop crawling a domain (example.org: it and every name under it), a host (=www.example.org) or URL pattern (https://example.org/private/*) on every agent of the crawl; its queued URLs are dropped (docs/scope.md)")
    .argument('<target...>'), BLOCK_OPTIONS))
    .action(async (targets: string[], opts) => { const { runBlock } = await import('../api/client.js'); process.exitCode = await runBlock('block', targets, opts); });
  apiOptions(program.command('unblock').description('lift blocks made with `ubicrawl block` (the same arguments), on every agent').argument('<target...>'))
    .action(async (targets: string[], opts) => { const { runBlock } = await import('../api/client.js'); process.exitCode = await runBlock('unblock', targets, opts); });
  apiOptions(program.command('policy').description("show the crawl policy in force (scope, filters, seed units, blocks) and each member's version"))
    .action(async (opts) => { const { runPolicy } = await import('../api/client.js'); process.exitCode = await runPolicy(opts); });
  apiOptions(addOptions(program.command('leave').description('ask an agent to leave the mesh gracefully'), LEAVE_OPTIONS))
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
  addOptions(warc.command('get')
    .description('print the stored response body of a URL, found through the CDXJ indexes')
    .argument('<url>'), WARC_GET_OPTIONS)
    .action(async (u: string, opts: { dir: string; headers: boolean; out?: string; timestamp?: string }) => {
      const { runWarcGetCommand } = await import('../warc/lookup.js');
      process.exitCode = await runWarcGetCommand(u, opts);
    });

  const config = program.command('config').description('configuration files (docs/requests.md "Config file")');
  addOptions(config.command('print')
    .description("show the configuration `join` would run with these options (and --config file): each key with its value and where it came from (default, file, command line, env); the output is a YAML file --config reads"),
  [...JOIN_OPTIONS, ...CONFIG_PRINT_OPTIONS])
    .action(async (_opts, cmd: Command) => {
      const all = await withConfigFile(cmd);
      const { printConfig } = await import('./config-file.js');
      process.stdout.write(printConfig(cmd, all, process.env));
    });

  for (const kind of ['wat', 'wet'] as const) {
    addOptions(program.command(kind)
      .description(kind === 'wat'
        ? "derive Common Crawl WAT files (JSON metadata records with each record's headers and the page's links) from WARC files"
        : 'derive Common Crawl WET files (conversion records with the visible text of each HTML page) from WARC files')
      .argument('<warc...>', 'WARC files (.warc.gz)'), DERIVE_OPTIONS)
      .action(async (paths: string[], opts: { outDir?: string }) => {
        const { runDeriveCommand } = await import('../derive/derive.js');
        process.exitCode = await runDeriveCommand(kind, paths, opts);
      });
  }

  addOptions(program.command('wacz')
    .description('pack the WARC files of one or more agents into a WACZ 1.1.1 file (ReplayWeb.page opens it)'), WACZ_OPTIONS)
    .action(async (opts: { dir: string[]; out: string; title?: string }) => {
      const { runWaczCommand } = await import('../wacz/wacz.js');
      process.exitCode = await runWaczCommand(opts, `${DEFAULT_DATA_DIR}/warc`);
    });

  const graph = program.command('graph').description('link graph tools (docs/graph.md)');
  addOptions(graph.command('export')
    .description("merge the agents' edge files into a URL graph and a host graph in WebGraph's ASCIIGraph format"), GRAPH_EXPORT_OPTIONS)
    .action(async (opts: { dir: string[]; out: string; hops?: string }) => {
      const { runGraphExportCommand } = await import('../graph/export.js');
      process.exitCode = await runGraphExportCommand(opts.dir.length ? opts.dir : [DEFAULT_DATA_DIR], opts);
    });

  return program;
}

/** The command's options with its --config file applied under them (src/cli/config-file.ts). */
async function withConfigFile(cmd: Command): Promise<ParsedOptions> {
  const path = cmd.opts().config as string | undefined;
  if (path !== undefined) {
    const { applyConfigFile } = await import('./config-file.js');
    applyConfigFile(cmd, JOIN_OPTIONS, path);
  }
  return cmd.opts();
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

/** What runJoin reads itself; the rest goes to the agent through the options table (toAgentOptions). */
interface JoinOpts extends ParsedOptions {
  summary?: string; progress: 'auto' | 'tty' | 'log' | 'off'; logLevel: string;
}

async function runJoin(opts: JoinOpts): Promise<number> {
  const options = toAgentOptions(opts);
  const mode = opts.progress === 'auto' ? (process.stderr.isTTY ? 'tty' : 'log') : opts.progress;
  const { startAgent } = await import('../crawl/agent.js');
  const { createLogger } = await import('../util/log.js');
  const { startProgress } = await import('./progress.js');
  // On a TTY the live line is the display; logs show only what needs attention.
  const logger = createLogger(mode === 'tty' && opts.logLevel === 'info' ? 'warn' : opts.logLevel);
  // A peer's stream reset that nobody awaited must not end the agent (src/mesh/stream-faults.ts).
  const { guardPeerStreamFaults } = await import('../mesh/stream-faults.js');
  guardPeerStreamFaults(logger);
  await noteEnvironmentProxy(options, logger);
  // `join` is always a mesh member (alone until a peer joins).
  const agent = await startAgent({ ...options, mesh: { ...options.mesh, enabled: true }, logger });
  const progress = startProgress(mode, () => agent.snapshot(), logger, () => agent.waitingFor());
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
  // How the run ended (docs/politeness.md "Ending a run"): work kept for the next run; nothing fetched at all.
  const { describeDeferred } = await import('../crawl/deferred.js');
  const { describeNothingFetched } = await import('../crawl/ending.js');
  if (summary.deferred) {
    const why = agent.config.untilIdle ? ` (--until-idle: none of it due within --idle-grace ${formatDuration(agent.config.idleGraceMs)})` : '';
    process.stderr.write(`ubicrawl: deferred work kept for the next run${why}: ${describeDeferred(summary.deferred)}\n`);
  }
  if (summary.nothingFetched) process.stderr.write(`ubicrawl: ${describeNothingFetched(summary.nothingFetched)}\n`);
  // The run is over once its summary is out. libp2p's stop() leaves ref'd timers of up to a second behind (gossipsub's
  // next heartbeat, the address manager's debounce), which would hold the process up that long; stdout and stderr
  // writes to files and pipes are synchronous on Linux, and pino flushes its log on exit.
  setTimeout(() => process.exit(), 100).unref();
  return summary.failure || (summary.nothingFetched?.failures.length ?? 0) > 0 ? 1 : 0;
}

/** A proxy taken from HTTP_PROXY / HTTPS_PROXY is said at start (a warning: the operator did not name it here). */
async function noteEnvironmentProxy(options: AgentOptions, logger: { warn(o: object, msg: string): void }): Promise<void> {
  const { resolveConfig } = await import('../config.js');
  const { proxyPlan, redactProxy } = await import('../fetch/proxy.js');
  let plan;
  try { plan = proxyPlan(resolveConfig(options).requests, process.env); } catch { return; } // refused at start, with its own line
  const fromEnv = [plan?.http, plan?.https].filter((c) => c?.from.startsWith('env '));
  if (fromEnv.length === 0) return;
  const proxies = Object.fromEntries(fromEnv.map((c) => [c!.from.slice(4), redactProxy(c!.url)]));
  logger.warn({ ...proxies, noProxy: plan!.noProxyList }, 'requests go through a proxy from the environment (--no-proxy-env to ignore it)');
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
