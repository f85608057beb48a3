// The command line's options, as one table per command. Each row names the
// setting it sets (a path into AgentConfig) and takes its default from
// src/config.ts, so a default is never written here: the help, docs/cli.md
// (src/cli/doc.ts) and the agent all read the same value.
import { isIP } from 'node:net';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  parseResolveRule, configValue, effectiveDefaults, DEFAULT_API_LISTEN, DEFAULT_DATA_DIR, DEFAULT_GRAPH_OUT, DEFAULT_WACZ_OUT, DEFAULT_MESH, DEFAULT_MESH_LISTEN,
  DEFAULT_MESH_LISTEN_WITH_KEY, DEFAULT_ROBOTS_TOKEN, DEFAULT_MEDIA_MAX_BYTES, RECEIVE_BURST_SECONDS, type AgentOptions, type ConfigPath, type ResolveRule,
} from '../config.js';
import { parseCidr } from '../fetch/address.js';
import { DEFAULT_ZONE, MAX_ZONE_CHARS, MAX_ZONE_WEIGHT, isZoneName, parseZoneRule } from '../assign/zones.js';
import { DIGEST_ALGOS } from '../warc/digest.js';
import { DEFAULT_HEAP_HEADROOM_BYTES } from '../util/memory.js';
import { classifySeed, type SeedSet } from './seeds.js';
import { compilePatterns, SCOPE_MODES } from '../scope/crawl-scope.js';
import { parseHeaderFields } from '../fetch/headers.js';
import { parseProxyUrl } from '../fetch/proxy.js';
import { formatMediaBytes, parseMediaBytes, parseMediaKinds, type MediaKind } from '../parse/media.js';

const RENDER_MODES = ['never', 'auto', 'always'] as const;

/** The options a command was given, by commander's camel-case attribute names. */
export type ParsedOptions = Record<string, unknown>;

export interface CliOption {
  /** commander's flags, e.g. '--concurrency <n>'; `--no-x` negates a setting that is on by default. */
  flags: string;
  help: string;
  /** The setting the option sets. Its default, shown in the help and in docs/cli.md, is that setting's default. */
  config?: ConfigPath;
  /** For an option that sets no agent setting (tools, API clients): its default, read from a constant of src/config.ts. */
  fallback?: () => unknown;
  /** Parses one value; `previous` is the value so far (for repeatable options, the list). */
  parse?: (value: string, previous: never) => unknown;
  choices?: readonly string[];
  /** May be given several times: the values replace the default (which applies when none is given). */
  repeatable?: boolean;
  /** The default is not passed on: the setting is left as it is unless the option is given (it says what "off" means). */
  noDefault?: boolean;
  /** How the default reads in the help (durations: 1h, not 3600000). */
  show?: (value: unknown) => string;
  /** Sets the option's value into the agent options where a plain `config` path does not say it all. */
  apply?: (value: never, into: AgentOptions, all: ParsedOptions) => void;
}

// ---------------------------------------------------------------- value parsers

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

/** The largest unit that divides the duration: 3600000 → 1h. */
export function formatDuration(ms: unknown): string {
  if (typeof ms !== 'number' || ms === 0) return String(ms);
  for (const unit of ['d', 'h', 'm', 's'] as const) if (ms % DURATION_UNITS[unit]! === 0) return `${ms / DURATION_UNITS[unit]!}${unit}`;
  return `${ms}ms`;
}

function numberArg(name: string, min: number, max: number) {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}`);
    return n;
  };
}

function delayFactorArg(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('--delay-factor must be a number ≥ 0');
  return n;
}

function nearDupDistanceArg(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || n > 3) throw new InvalidArgumentError('--near-dup-distance must be 0, 1, 2 or 3');
  return n;
}

function resolveArg(v: string, prev: ResolveRule[]): ResolveRule[] {
  try { return [...prev, parseResolveRule(v)]; } catch (err) { throw new InvalidArgumentError((err as Error).message); }
}

function allowAddressArg(v: string, prev: string[]): string[] {
  try { parseCidr(v); } catch (err) { throw new InvalidArgumentError((err as Error).message); }
  return [...prev, v.trim()];
}

/** A regular expression of --include / --exclude, refused here (exit code 2) when it does not compile. */
function patternArg(option: string) {
  return (v: string, prev: string[]): string[] => {
    try { compilePatterns([v], option); } catch (err) { throw new InvalidArgumentError((err as Error).message); }
    return [...prev, v];
  };
}

function sourceAddressArg(v: string): string {
  if (!isIP(v.trim())) throw new InvalidArgumentError(`--source-address must be an IP address, got '${v}'`);
  return v.trim();
}

function zoneArg(v: string): string {
  const z = v.trim().toLowerCase();
  // Empty is "no zone" (the default, and what `config print` writes for it).
  if (z === DEFAULT_ZONE) return z;
  if (!isZoneName(z)) throw new InvalidArgumentError(`--zone must be letters, digits, - and _ (at most ${MAX_ZONE_CHARS}), got '${v}'`);
  return z;
}

/** A `--zone-rule`, refused here (exit code 2) when malformed (src/assign/zones.ts parseZoneRule). */
function zoneRuleArg(v: string, prev: string[]): string[] {
  try { parseZoneRule(v); } catch (err) { throw new InvalidArgumentError((err as Error).message); }
  return [...prev, v.trim()];
}

function mediaTypeArg(v: string, prev: string[]): string[] {
  const t = v.trim().toLowerCase();
  if (!/^([a-z0-9!#$&^_.+-]+|\*)\/([a-z0-9!#$&^_.+-]+|\*)$/.test(t)) throw new InvalidArgumentError(`--accept-type expects a media type such as text/html or image/*, got '${v}'`);
  return [...prev, t];
}

/** A `--header` field, refused here (exit code 2) when malformed, reserved, or given twice (src/fetch/headers.ts). */
function headerArg(v: string, prev: string[]): string[] {
  try { parseHeaderFields([...prev, v]); } catch (err) { throw new InvalidArgumentError((err as Error).message); }
  return [...prev, v];
}

function proxyArg(v: string): string {
  try { parseProxyUrl(v); } catch (err) { throw new InvalidArgumentError((err as Error).message); }
  return v.trim();
}

const ALLOW_ADDRESS_HELP = 'also fetch from this internal address range (CIDR, e.g. 10.0.0.0/8 or ::1/128; loopback, private, link-local … are refused otherwise; a --resolve rule reaches its own address for its host and port); repeatable';

const { minCapacity, maxCapacity } = DEFAULT_MESH.admission;

// ---------------------------------------------------------------- the tables

/** `ubicrawl join`: every agent setting the command line can set. */
export const JOIN_OPTIONS: readonly CliOption[] = [
  {
    flags: '--config <file>', config: 'configFile', noDefault: true,
    help: 'read options from this YAML or JSON file: the keys are the long option names (max-depth: 2, warc: false); an option given here wins (docs/requests.md)',
  },
  {
    flags: '--seed <url|peer|file>', help: 'crawl seed URL, peer (multiaddr or host:port), or file of either; repeatable', config: 'seeds', parse: collect, repeatable: true,
    apply: (specs: string[], into) => {
      const seeds: SeedSet = { urls: [], peers: [] };
      for (const s of specs) classifySeed(s, seeds);
      into.seeds = seeds.urls;
      into.mesh = { ...into.mesh, peers: seeds.peers };
    },
  },
  {
    flags: '--scope <mode>', config: 'crawlScope.mode', choices: SCOPE_MODES,
    help: "which links are followed: seeds = the seeds' registrable domains (example.org for https://docs.example.org/), domain = the seed hosts and the names under them, host = the seed hosts only, web = every link; plus --allow-host hosts (docs/scope.md)",
  },
  { flags: '--allow-host <host>', help: "also follow links to this host ('name', or '*.suffix' for every name under suffix); repeatable", config: 'crawlScope.allowHosts', parse: collect, repeatable: true },
  { flags: '--include <regex>', help: 'follow only links whose normalised URL matches one of these regular expressions (seeds are always fetched); repeatable', config: 'crawlScope.include', parse: patternArg('--include'), repeatable: true },
  { flags: '--exclude <regex>', help: 'do not follow links whose normalised URL matches this regular expression (wins over --include); repeatable', config: 'crawlScope.exclude', parse: patternArg('--exclude'), repeatable: true },
  { flags: '--max-depth <n>', help: 'follow links at most this many hops from a seed (0 = no limit)', config: 'crawlScope.maxDepth', parse: intArg('--max-depth', 0) },
  { flags: '--max-pages-per-host <n>', help: 'fetch at most this many URLs of one host (0 = no limit); the rest are recorded as host-page-budget', config: 'crawlScope.maxPagesPerHost', parse: intArg('--max-pages-per-host', 0) },
  {
    flags: '--media <kinds>', help: 'also fetch and archive media found on pages: images, pdf, video, audio (comma-separated; img/srcset/picture/video/audio/source/embed/object, links to PDFs), through the same scope, robots.txt and politeness (docs/media.md)',
    config: 'media.kinds', parse: (v: string) => { try { return parseMediaKinds(v); } catch (err) { throw new InvalidArgumentError((err as Error).message); } },
    show: (v) => ((v as string[]).length ? (v as string[]).join(',') : 'none'),
  },
  {
    flags: '--max-media-bytes <caps>', help: 'size cap of a media response, one for all (20MB) or per kind (images=5MB,pdf=50MB); KB/MB/GB are powers of 1024; a longer one is kept truncated (WARC-Truncated: length)',
    config: 'media.maxBytes', show: (v) => formatMediaBytes(v as Record<MediaKind, number>),
    parse: (v: string) => { try { return parseMediaBytes(v, DEFAULT_MEDIA_MAX_BYTES); } catch (err) { throw new InvalidArgumentError((err as Error).message); } },
  },
  { flags: '--accept-type <mime>', help: "store only responses of this media type ('text/html', 'image/*'); others are still parsed for links, recorded as skipped; repeatable (default: all)", config: 'crawlScope.acceptTypes', parse: mediaTypeArg, repeatable: true },
  {
    flags: '--blocklist <file>', config: 'blocklistFile', noDefault: true,
    help: 'block these hosts, domains and URL patterns mesh-wide from the start, one a line as `ubicrawl block` takes them (# comments); docs/scope.md',
  },
  { flags: '--data-dir <dir>', help: 'where the store, the WARC files and the API token (api.token) live', config: 'dataDir' },
  { flags: '--user-agent <string>', help: 'User-Agent header; its product token is matched against robots.txt', config: 'userAgent' },
  { flags: '--concurrency <n>', help: 'parallel fetches (each to a different host)', config: 'concurrency', parse: intArg('--concurrency', 1) },
  { flags: '--min-delay <ms>', help: 'minimum delay between two requests to one host', config: 'minDelayMs', parse: intArg('--min-delay', 0) },
  { flags: '--delay-factor <k>', help: 'wait k × the last response time before the next request to a host (Mercator)', config: 'delayFactor', parse: delayFactorArg },
  {
    flags: '--per-ip-delay <ms>', help: 'also limit per IP address: hosts that resolve to one address share a clock (one request at a time, this delay between them); off by default',
    config: 'politeness.ipMinDelayMs', parse: intArg('--per-ip-delay', 0), noDefault: true,
    apply: (ms: number | undefined, into) => { if (ms !== undefined) into.politeness = { ...into.politeness, perIp: true, ipMinDelayMs: ms }; },
  },
  { flags: '--retries <n>', help: 'retries of a transient failure (timeout, reset, 5xx, 429) before the URL is recorded as failed', config: 'politeness.maxRetries', parse: intArg('--retries', 0) },
  { flags: '--retry-delay <ms>', help: 'wait before the first retry; doubles with each further one (with jitter)', config: 'politeness.retryBaseMs', parse: intArg('--retry-delay', 0) },
  { flags: '--dns-server <ip[:port]>', help: 'DNS server to resolve host names with (c-ares); repeatable (default: the system\'s)', config: 'dns.servers', parse: collect, repeatable: true },
  { flags: '--max-pages <n>', help: 'stop after fetching this many pages (0 = no limit)', config: 'maxPages', parse: intArg('--max-pages', 0) },
  { flags: '--until-idle', help: 'exit once nothing is left to crawl (with --recrawl: and nothing is due within --recrawl-horizon)', config: 'untilIdle' },
  {
    flags: '--idle-grace <duration>', help: 'with --until-idle: end when only deferred work is left (hosts in backoff, paused or awaiting a robots.txt retry; a host\'s ordinary delay, e.g. a long Crawl-delay, is not deferred and is waited for) and none of it is due within this long (hosts paused by the operator: once this long has passed with nothing else left); it stays queued for the next run',
    config: 'idleGraceMs', parse: durationArg('--idle-grace'), show: formatDuration,
  },
  { flags: '--max-duration <duration>', help: 'stop after this long (e.g. 90s, 2h; 0 = no limit)', config: 'maxDurationMs', parse: durationArg('--max-duration'), show: formatDuration },
  { flags: '--recrawl', help: 'revisit fetched pages at the rate they change, with conditional GETs (off: one pass)', config: 'recrawl.enabled' },
  { flags: '--recrawl-min <duration>', help: 'shortest revisit interval', config: 'recrawl.minIntervalMs', parse: durationArg('--recrawl-min'), show: formatDuration },
  {
    flags: '--recrawl-max <duration>', help: 'longest revisit interval', config: 'recrawl.maxIntervalMs', parse: durationArg('--recrawl-max'), show: formatDuration,
    // Never below the shortest.
    apply: (ms: number, into, all) => { into.recrawl = { ...into.recrawl, maxIntervalMs: Math.max(all.recrawlMin as number, ms) }; },
  },
  { flags: '--recrawl-horizon <duration>', help: 'with --until-idle: exit when nothing is due sooner than this', config: 'recrawl.horizonMs', parse: durationArg('--recrawl-horizon'), show: formatDuration },
  { flags: '--revisit-share <x>', help: 'share of fetches given to revisits while new URLs also wait (0–1)', config: 'recrawl.revisitShare', parse: numberArg('--revisit-share', 0, 1) },
  { flags: '--recrawl-speedup <x>', help: 'run recrawl time x times faster than the clock (simulations and tests)', config: 'recrawl.speedup', parse: numberArg('--recrawl-speedup', 1, 1e9) },
  { flags: '--summary <file>', help: 'also write the closing JSON summary to this file', config: 'summaryFile' },
  { flags: '--resolve <host:port:addr>', help: "connect to ADDR for HOST:PORT (curl syntax; HOST may be '*' or '*.suffix'); repeatable", config: 'resolve', parse: resolveArg, repeatable: true },
  { flags: '--allow-address <cidr>', help: ALLOW_ADDRESS_HELP, config: 'allowAddress', parse: allowAddressArg, repeatable: true },
  {
    flags: '--header <field>', config: 'requests.headers', parse: headerArg, repeatable: true,
    help: "send this header field with every request, 'Name: value' (not Host, Connection, Content-Length, User-Agent … : docs/requests.md); repeatable",
  },
  {
    flags: '--proxy <url>', config: 'requests.proxy', parse: proxyArg,
    help: 'send every request through this HTTP proxy, http://[user:password@]host:port (https:// targets through a CONNECT tunnel); without it HTTP_PROXY / HTTPS_PROXY',
  },
  { flags: '--noproxy <host>', help: 'reach this host and the names under it directly (host:port for one port), as NO_PROXY does, which adds to it; repeatable', config: 'requests.noProxy', parse: collect, repeatable: true },
  { flags: '--no-proxy-env', help: 'ignore HTTP_PROXY, HTTPS_PROXY and NO_PROXY', config: 'requests.proxyFromEnv' },
  { flags: '--cookies', help: "keep each host's cookies and send them back to it (RFC 6265, host-only, in memory); off: no cookie is sent", config: 'requests.cookies' },
  { flags: '--max-body <bytes>', help: 'body cap; longer bodies are kept truncated', config: 'fetch.maxBodyBytes', parse: intArg('--max-body', 1024) },
  { flags: '--warc-max-size <bytes>', help: 'rotate WARC files at this size', config: 'warc.maxFileBytes', parse: intArg('--warc-max-size', 1024) },
  {
    flags: '--warc-digest <algo>', help: 'WARC digest algorithm, also the exact-duplicate key (sha1: as Common Crawl and Heritrix archives; see docs/warc.md)',
    config: 'warc.digest', choices: DIGEST_ALGOS,
  },
  { flags: '--operator <text>', help: 'who runs the crawl, for the warcinfo record (e.g. "Jane Doe <jane@example.org>")', config: 'warc.operator', noDefault: true },
  { flags: '--no-warc', help: 'do not write WARC files', config: 'warc.enabled' },
  { flags: '--no-link-graph', help: "do not record pages' outlinks (WARC metadata records and DATA-DIR/graph edge files; docs/graph.md)", config: 'linkGraph.enabled' },
  { flags: '--no-sitemaps', help: 'do not follow robots.txt Sitemap: lines and /sitemap.xml', config: 'sitemaps.enabled' },
  { flags: '--no-dedup', help: 'store exact duplicates as full responses and skip near-duplicate detection', config: 'dedup.enabled' },
  { flags: '--no-near-dup', help: 'keep exact-duplicate revisit records, skip SimHash near-duplicate detection', config: 'dedup.near' },
  { flags: '--near-dup-distance <bits>', help: 'SimHash Hamming distance (0-3) that marks a near-duplicate', config: 'dedup.maxDistance', parse: nearDupDistanceArg },
  {
    flags: '--render <mode>', config: 'render.mode', choices: RENDER_MODES,
    help: "render pages in headless Chromium to find links built by JavaScript: auto (pages whose static parse looks like an empty shell, decided per host), always (every HTML page), never (docs/render.md)",
  },
  { flags: '--render-host <host>', help: "always render this host ('name', or '*.suffix' for every name under suffix), whatever --render says; repeatable", config: 'render.hosts', parse: collect, repeatable: true },
  { flags: '--render-concurrency <n>', help: 'pages rendered at once (one Chromium process for all)', config: 'render.concurrency', parse: intArg('--render-concurrency', 1) },
  { flags: '--render-timeout <duration>', help: "a render's wall-time budget, waits for the hosts' politeness clocks included (e.g. 20s)", config: 'render.timeoutMs', parse: durationArg('--render-timeout'), show: formatDuration },
  { flags: '--render-max-requests <n>', help: "requests one render may make besides the page itself; more are refused inside the browser", config: 'render.maxRequests', parse: intArg('--render-max-requests', 0) },
  { flags: '--render-max-bytes <bytes>', help: 'bytes of subresource bodies one render may fetch; further requests are refused', config: 'render.maxBytes', parse: intArg('--render-max-bytes', 0) },
  { flags: '--render-memory <bytes>', help: "restart the browser once its process tree holds more memory than this", config: 'render.maxBrowserRssBytes', parse: intArg('--render-memory', 1024 * 1024) },
  { flags: '--chromium <path>', help: 'the Chromium to render with (missing: rendering is off, said once)', config: 'render.chromiumPath' },
  {
    flags: '--listen <multiaddr>', help: `libp2p listen address; repeatable (default ${DEFAULT_MESH_LISTEN}, with --swarm-key ${DEFAULT_MESH_LISTEN_WITH_KEY}); beyond loopback it needs --swarm-key or --open-mesh`,
    config: 'mesh.listen', parse: collect, repeatable: true,
    // Exposure beyond loopback is checked with the other startup checks (src/crawl/preflight.ts).
    apply: (listen: string[], into, all) => { into.mesh = { ...into.mesh, listen: listen.length ? listen : [all.swarmKey ? DEFAULT_MESH_LISTEN_WITH_KEY : DEFAULT_MESH_LISTEN] }; },
  },
  { flags: '--announce <multiaddr>', help: 'address to announce to peers instead of the listen addresses; repeatable', config: 'mesh.announce', parse: collect, repeatable: true },
  {
    flags: '--source-address <ip>', help: 'local address to make outgoing mesh connections from (a machine with several addresses; the WAN emulator of bench/wan tells agents apart by it)',
    config: 'mesh.sourceAddress', parse: sourceAddressArg,
  },
  {
    flags: '--join-timeout <duration>', help: 'keep trying the --seed peers this long (with backoff, crawling nothing meanwhile) before giving up (e.g. 5m; 0 = no limit)',
    config: 'mesh.joinTimeoutMs', parse: durationArg('--join-timeout'), show: formatDuration,
  },
  { flags: '--swarm-key <file>', help: 'libp2p private network key (make one with `ubicrawl keygen FILE`): only holders can connect', config: 'mesh.swarmKeyFile' },
  { flags: '--open-mesh', help: 'allow listening beyond loopback without a swarm key: anyone who can reach this port can join the mesh', config: 'mesh.openMesh' },
  {
    flags: '--capacity <n>', help: `share of hosts relative to other agents (${minCapacity}–${maxCapacity}; heartbeats outside this range are refused)`,
    config: 'mesh.capacity', parse: numberArg('--capacity', minCapacity, maxCapacity),
  },
  { flags: '--zone <name>', help: 'this agent\'s zone (data center, region): a host is given a zone, then an agent of that zone (docs/mesh.md "Zones"); none = one zone for all', config: 'mesh.zone', parse: zoneArg },
  {
    flags: '--zone-weight <n>', help: `this agent's zone's share of hosts relative to other zones (planned capacity of the zone; give every member of a zone the same; up to ${MAX_ZONE_WEIGHT})`,
    config: 'mesh.zoneWeight', parse: numberArg('--zone-weight', 0.001, MAX_ZONE_WEIGHT),
  },
  {
    flags: '--zone-rule <suffix|cidr=zone>', help: 'crawl hosts under a name suffix (.de=eu), or IP-literal hosts in a range (10.0.0.0/8=eu), from that zone while it has a live member; the same list on every agent; repeatable',
    config: 'mesh.zoneRules', parse: zoneRuleArg, repeatable: true,
  },
  {
    flags: '--cross-zone-linger <duration>', help: 'a batch of URLs for another zone waits this long for more (fewer, larger batches across a WAN; inside a zone 50ms)',
    config: 'mesh.crossZoneLingerMs', parse: durationArg('--cross-zone-linger'), show: formatDuration,
  },
  { flags: '--crawl-id <id>', help: 'agents of one crawl share this id (one gossip topic per crawl)', config: 'mesh.crawlId' },
  { flags: '--heartbeat <ms>', help: 'membership heartbeat interval', config: 'mesh.heartbeatMs', parse: intArg('--heartbeat', 50) },
  {
    flags: '--replicas <n>', help: 'extra copies of each host\'s queued URLs, kept by its next owners on the ring so that losing an agent for good loses nothing queued (0 = settled pages only)',
    config: 'mesh.replicas', parse: intArg('--replicas', 0),
  },
  { flags: '--dead-after <ms>', help: 'a silent member without a connection is dead after this long', config: 'mesh.deadAfterMs', parse: intArg('--dead-after', 100) },
  {
    flags: '--takeover-grace <duration>', help: 'a member silent past --dead-after is suspect this long before its hosts are taken over (a partition shorter than both moves no host; 0 = at once)',
    config: 'mesh.takeoverGraceMs', parse: durationArg('--takeover-grace'), show: formatDuration,
  },
  {
    flags: '--peer-rate <urls/s>', help: `URLs per second one peer may send us (bursts of ${RECEIVE_BURST_SECONDS} s); faster senders are slowed down`,
    config: 'mesh.receiveLimits.itemsPerSec', parse: intArg('--peer-rate', 1),
    apply: (rate: number, into) => { into.mesh = { ...into.mesh, receiveLimits: { ...DEFAULT_MESH.receiveLimits, itemsPerSec: rate, itemsBurst: RECEIVE_BURST_SECONDS * rate } }; },
  },
  { flags: '--peer-stall <ms>', help: 'a member that acknowledges nothing we queued for it this long is left out of our ring for a while', config: 'mesh.peerStallMs', parse: intArg('--peer-stall', 100) },
  { flags: '--api <host:port>', help: `serve the status and control API (and dashboard) here, e.g. ${DEFAULT_API_LISTEN}`, config: 'api.listen' },
  {
    flags: '--api-token-file <file>', help: 'bearer token required by every API route (mandatory when it listens beyond loopback); without it the agent makes DATA-DIR/api.token, required by the routes that change something',
    config: 'api.tokenFile',
  },
  { flags: '--progress <mode>', help: 'live display', config: 'progress', choices: ['auto', 'tty', 'log', 'off'] },
  { flags: '--log-level <level>', help: 'log level', config: 'logLevel', choices: ['trace', 'debug', 'info', 'warn', 'error', 'silent'] },
  {
    flags: '--heap-growth <percent>',
    help: `let the JS heap grow this many percent over its live size (but at least ${DEFAULT_HEAP_HEADROOM_BYTES >> 20} MB) before a full GC; 0 = V8's own policy, up to 300`,
    config: 'heapGrowthPercent', parse: intArg('--heap-growth', 0),
  },
];

/** `ubicrawl config print`: join's options, and these. */
export const CONFIG_PRINT_OPTIONS: readonly CliOption[] = [
  { flags: '--json', help: 'print JSON: each key with its value, source and setting' },
];

export const KEYGEN_OPTIONS: readonly CliOption[] = [
  { flags: '--force', help: 'overwrite an existing file' },
];

export const ROBOTS_CHECK_OPTIONS: readonly CliOption[] = [
  { flags: '--agent <name>', help: 'user agent (product token) to check for', fallback: () => DEFAULT_ROBOTS_TOKEN },
  { flags: '--resolve <host:port:addr>', help: 'as for join; repeatable', parse: resolveArg, repeatable: true },
  { flags: '--allow-address <cidr>', help: 'as for join; repeatable', parse: allowAddressArg, repeatable: true },
];

export const URL_NORMALIZE_OPTIONS: readonly CliOption[] = [
  { flags: '--base <url>', help: 'resolve relative references against this base' },
];

/** The commands that talk to a running agent's API (src/api/client.ts). */
export const API_CLIENT_OPTIONS: readonly CliOption[] = [
  { flags: '--api <host:port>', help: 'the agent API', fallback: () => DEFAULT_API_LISTEN },
  { flags: '--token-file <file>', help: 'bearer token file (default: DATA-DIR/api.token, for an agent on this machine)' },
  { flags: '--data-dir <dir>', help: "the agent's data dir, where its API token is", fallback: () => DEFAULT_DATA_DIR },
  { flags: '--json', help: 'print raw JSON' },
];

export const BLOCK_OPTIONS: readonly CliOption[] = [
  { flags: '--reason <text>', help: 'why (a takedown ticket, a complaint): kept with the rule, shown by `ubicrawl policy`' },
];

export const LEAVE_OPTIONS: readonly CliOption[] = [
  { flags: '--wait', help: 'wait until it has left' },
];

export const WARC_GET_OPTIONS: readonly CliOption[] = [
  { flags: '--dir <dir>', help: 'WARC directory', fallback: () => `${DEFAULT_DATA_DIR}/warc` },
  { flags: '--headers', help: 'print the status line and headers first (like curl -i)' },
  { flags: '--out <file>', help: 'write the body to this file instead of stdout' },
  { flags: '--timestamp <ts>', help: 'the capture closest to this 14-digit timestamp' },
];

export const GRAPH_EXPORT_OPTIONS: readonly CliOption[] = [
  {
    flags: '--dir <dir>', help: 'a data dir, a directory of data dirs, or a graph/ directory; repeat for each agent (default: the default data dir)',
    parse: collect as never, repeatable: true,
  },
  { flags: '--out <base>', help: 'output base name: BASE.urls, BASE.graph-txt, BASE-host.hosts, BASE-host.graph-txt', fallback: () => DEFAULT_GRAPH_OUT },
  { flags: '--hops <letters>', help: 'keep only arcs of these hop types (L link, E embed: frame/iframe, R redirect/refresh), e.g. L' },
];

export const DERIVE_OPTIONS: readonly CliOption[] = [
  { flags: '--out-dir <dir>', help: 'write the derived files here (default: next to each WARC file, named X.warc.wat.gz / X.warc.wet.gz)' },
];

export const WACZ_OPTIONS: readonly CliOption[] = [
  { flags: '--dir <dir>', help: 'a data dir or WARC directory; repeat for each agent', parse: collect as never, repeatable: true },
  { flags: '--out <file>', help: 'the WACZ file to write', fallback: () => DEFAULT_WACZ_OUT },
  { flags: '--title <text>', help: 'datapackage.json title' },
];

// ---------------------------------------------------------------- commander

/** The row each commander option was made from (docs/cli.md shows the setting it sets). */
const rowOf = new WeakMap<Option, CliOption>();

export function cliOptionOf(option: Option): CliOption | undefined { return rowOf.get(option); }

/** A flag without a value (`--json`, `--until-idle`); `--no-x` flags are negations. */
function isFlag(row: CliOption): boolean { return !/[<[]/.test(row.flags); }

/** The default an option has: its setting's default, its named fallback, or none. */
export function defaultOf(row: CliOption): unknown {
  if (row.noDefault) return undefined;
  if (row.config) return configValue(effectiveDefaults(), row.config);
  return row.fallback?.();
}

/** Adds the rows as commander options: the defaults come from src/config.ts. */
export function addOptions(cmd: Command, rows: readonly CliOption[]): Command {
  for (const row of rows) {
    const o = new Option(row.flags, row.help);
    if (row.parse) o.argParser(row.parse as (value: string, previous: unknown) => unknown);
    if (row.choices) o.choices(row.choices);
    const def = defaultOf(row);
    if (row.flags.startsWith('--no-')) {
      // commander turns the setting on unless the flag is given; the setting's default must be on.
    } else if (row.repeatable) {
      // Values are collected into the list; none given keeps the setting's default (see toAgentOptions).
      o.default([]);
    } else if (isFlag(row)) {
      o.default(def ?? false);
    } else if (def !== undefined) {
      o.default(def, row.show?.(def));
    }
    rowOf.set(o, row);
    cmd.addOption(o);
  }
  return cmd;
}

/** commander's attribute name of a flag: '--max-pages <n>' → maxPages, '--no-warc' → warc. */
export function attributeOf(flags: string): string {
  const long = /--(?:no-)?([a-z0-9-]+)/.exec(flags)![1]!;
  return long.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Sets `value` at a dotted path, creating the sections on the way. */
function setPath(into: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = into;
  for (const k of keys.slice(0, -1)) at = (at[k] ??= {}) as Record<string, unknown>;
  at[keys[keys.length - 1]!] = value;
}

/** The agent options a parsed `join` command line stands for. */
export function toAgentOptions(parsed: ParsedOptions, rows: readonly CliOption[] = JOIN_OPTIONS): AgentOptions {
  const into: AgentOptions = {};
  for (const row of rows) {
    if (!row.config) continue;
    const value = parsed[attributeOf(row.flags)];
    if (row.apply) { (row.apply as (v: unknown, i: AgentOptions, a: ParsedOptions) => void)(value, into, parsed); continue; }
    if (value === undefined) continue;
    if (row.repeatable && Array.isArray(value) && value.length === 0) continue;
    setPath(into as Record<string, unknown>, row.config, value);
  }
  return into;
}
