import type { ScopeOptions } from './scope/traps.js';
import type { PolitenessConfig } from './politeness/host.js';
import type { DnsConfig } from './fetch/dns.js';
import { defaultRecrawlSettings, type RecrawlSettings } from './recrawl/settings.js';
import type { DedupConfig } from './dedup/content.js';
import type { DigestAlgo } from './warc/digest.js';

// The one place for configuration defaults. Every module takes its settings
// from an AgentConfig built by `resolveConfig`, so a default lives here once.

export interface ResolveRule {
  /** Host pattern: exact name, `*` (any host) or `*.suffix`. Lower case. */
  host: string;
  /** Port the rule applies to (curl semantics: HOST:PORT:ADDR). */
  port: number;
  /** Address to connect to instead of resolving the name. */
  address: string;
}

export interface AgentConfig {
  dataDir: string;
  /** Full User-Agent header. Its product token is what robots.txt groups are matched on. */
  userAgent: string;
  /** Crawl seeds (absolute http(s) URLs). */
  seeds: string[];
  /** Maximum concurrent fetches (each to a different host). */
  concurrency: number;
  /** Per-host floor between two requests, ms (DESIGN.md: default 1 s). */
  minDelayMs: number;
  /** Mercator's rule: next request waits k × the last response time. */
  delayFactor: number;
  /** Upper bound on any politeness delay we honour (Crawl-delay, Retry-After), ms. */
  maxDelayMs: number;
  /** Stop after this many fetched pages (0 = no limit). */
  maxPages: number;
  /** Exit once nothing is queued or in flight (with recrawl: and nothing due within recrawl.horizonMs). */
  untilIdle: boolean;
  /** Stop after this much wall-clock time, ms (0 = no limit). */
  maxDurationMs: number;
  /** Recrawl scheduling (issue 7; off by default: a one-pass crawl). Defaults in src/recrawl/settings.ts. */
  recrawl: RecrawlSettings;
  /** Write the closing summary JSON here as well as printing it. */
  summaryFile?: string;
  resolve: ResolveRule[];
  /**
   * Address ranges (CIDR) the fetcher may dial although they are internal
   * (loopback, private, link-local …; src/fetch/address.ts). Empty: none. A
   * `resolve` rule's own target is always allowed.
   */
  allowAddress: string[];
  /** Adaptive politeness beyond the three delays above (backoff, pauses, retries, per-IP); defaults in src/politeness/host.ts. */
  politeness: Partial<PolitenessConfig>;
  /** The c-ares resolver (servers, TTL clamps, timeouts); defaults in src/fetch/dns.ts. */
  dns: Partial<DnsConfig>;
  fetch: FetchConfig;
  robots: RobotsConfig;
  warc: WarcConfig;
  frontier: FrontierConfig;
  seen: SeenConfig;
  /** Sitemaps 0.90: follow robots.txt `Sitemap:` lines and each host's /sitemap.xml. */
  sitemaps: { enabled: boolean; maxIndexDepth: number };
  /** Scope and trap defences; defaults in src/scope/traps.ts (DEFAULT_SCOPE_OPTIONS). */
  scope: Partial<ScopeOptions>;
  /** Content dedup (src/dedup/content.ts): exact payload digests → WARC revisit records; SimHash near-duplicates noted. */
  dedup: DedupConfig;
  /** The mesh (libp2p). Off: a lone agent without networking (library use, benchmarks). */
  mesh: MeshConfig;
  /** Agent HTTP API (`--api HOST:PORT`): off when `listen` is unset. */
  api: { listen?: string; tokenFile?: string };
  /** Progress display: 'auto' = live line on a TTY, JSON logs otherwise. */
  progress: 'auto' | 'tty' | 'log' | 'off';
  logLevel: string;
  /**
   * Process-wide: the JS heap may grow this many percent over its live size
   * (but at least 48 MB) before a full GC (src/util/memory.ts); 0 leaves V8's
   * policy (up to 300 %).
   */
  heapGrowthPercent: number;
}

export interface MeshConfig {
  enabled: boolean;
  /** Peers to join through (multiaddr or host:port). None: start a new mesh. */
  peers: string[];
  listen: string[];
  announce: string[];
  swarmKeyFile?: string;
  /** One gossip topic per crawl: agents of different crawls ignore each other. */
  crawlId: string;
  /** Share of hosts relative to other agents (UbiCrawler capacity). */
  capacity: number;
  heartbeatMs: number;
  /** Silence (and no connection) after which a member is declared dead. */
  deadAfterMs: number;
  /** A URL forwarded this many times is kept where it lands (views disagree for a moment). */
  maxHops: number;
  /**
   * A graceful leave (SIGTERM, `POST /leave`) hands hosts over and waits for their acknowledgements
   * this long in total; what is left stays on disk for the next start (docs/mesh.md, "Graceful leave").
   */
  leaveTimeoutMs: number;
  /** Listen beyond loopback without a swarm key: anyone who can reach the port can join (docs/mesh.md "Admission"). */
  openMesh: boolean;
  /** What a heartbeat may claim and how fast identities are admitted (docs/mesh.md "Admission"). */
  admission: MeshAdmissionConfig;
}

export interface MeshAdmissionConfig {
  /** Smallest capacity a heartbeat (and `--capacity`) may carry; heartbeats outside [min, max] are refused. */
  minCapacity: number;
  /** Largest capacity; also the ring's clamp. */
  maxCapacity: number;
  /** Most members (admitted or waiting for a connection) in the table. */
  maxMembers: number;
  /** New identities admitted at once (token bucket size)... */
  newMembersBurst: number;
  /** ...then this many per heartbeat interval; the rest are ignored and counted. */
  newMembersPerInterval: number;
  /** Heartbeats accepted from one member per interval; more are ignored and counted. */
  heartbeatsPerInterval: number;
  /** Dials to members started per interval, all members together. */
  dialsPerInterval: number;
  /** Longest wait between two dials to one unreachable member (the backoff doubles up to this), ms. */
  maxDialBackoffMs: number;
}

/** Default mesh listen address without a swarm key: loopback, so a one-machine crawl is not exposed. */
export const DEFAULT_MESH_LISTEN = '/ip4/127.0.0.1/tcp/4001';
/** Default listen address with a swarm key (only key holders can connect). */
export const DEFAULT_MESH_LISTEN_WITH_KEY = '/ip4/0.0.0.0/tcp/4001';

export function defaultMeshAdmission(): MeshAdmissionConfig {
  return {
    minCapacity: 1,
    maxCapacity: 16,
    // The mesh is a full mesh of direct connections: tens to a few hundred agents (docs/mesh.md "Known gaps").
    maxMembers: 512,
    // A joiner learns up to 32 members at once; after that one new identity per interval keeps a
    // flood of fresh identities to a trickle that dies out after deadAfterMs each.
    newMembersBurst: 32,
    newMembersPerInterval: 1,
    // An honest member sends one per interval, plus one at once for leave() or setCapacity().
    heartbeatsPerInterval: 4,
    dialsPerInterval: 8,
    maxDialBackoffMs: 60_000,
  };
}

export interface FetchConfig {
  connectTimeoutMs: number;
  /** Time to wait for response headers. */
  headersTimeoutMs: number;
  /** Idle time allowed between two body chunks. */
  readTimeoutMs: number;
  /** Wall-clock cap on one whole exchange; a trickling body is cut here. */
  totalTimeoutMs: number;
  /** Body cap, applied to the raw and to the decoded body. Longer bodies are kept truncated. */
  maxBodyBytes: number;
  /** Content types whose bodies are parsed for links. */
  parseTypes: string[];
}

export interface RobotsConfig {
  /** RFC 9309 §2.4: cache no longer than 24 h. */
  cacheTtlMs: number;
  /** RFC 9309 §2.5: parse at least 500 KiB. */
  maxBytes: number;
  /** RFC 9309 §2.3.1.2: follow at least five consecutive redirects. */
  maxRedirects: number;
}

export interface WarcConfig {
  enabled: boolean;
  prefix: string;
  maxFileBytes: number;
  /** fsync the WARC file being written this often, ms (0: only at rotation and close); the power-loss window of docs/storage.md. */
  fsyncIntervalMs: number;
  /**
   * WARC-Block-Digest / WARC-Payload-Digest algorithm, also the exact-duplicate key
   * (docs/warc.md "Digests"): sha1 joins with Common Crawl and Heritrix archives.
   */
  digest: DigestAlgo;
  /** warcinfo `operator` (`--operator`): who runs the crawl, e.g. a name and a contact address. */
  operator?: string;
  /** warcinfo `description`; a default one names the crawl id. */
  description?: string;
}

export interface FrontierConfig {
  /** Hosts kept active (with an in-memory head) per unit of concurrency (Mercator: ~3×). */
  activeHostsPerSlot: number;
  /** URLs loaded into memory per active host at a time. */
  headSize: number;
}

export interface SeenConfig {
  /** DRUM: URLs buffered before one sorted check+update round. */
  batchSize: number;
  /** DRUM: longest a URL waits in the buffer, ms. */
  maxWaitMs: number;
}

/** Where `join` keeps its store and WARC files, and where the API client commands look for the token. */
export const DEFAULT_DATA_DIR = './ubicrawl-data';

export const DEFAULT_USER_AGENT = 'ubicrawl/0.1 (+https://github.com/ubicrawl/ubicrawl)';

export function defaultConfig(): AgentConfig {
  return {
    dataDir: DEFAULT_DATA_DIR,
    userAgent: DEFAULT_USER_AGENT,
    seeds: [],
    concurrency: 32,
    minDelayMs: 1000,
    delayFactor: 10,
    maxDelayMs: 120_000,
    maxPages: 0,
    untilIdle: false,
    maxDurationMs: 0,
    recrawl: defaultRecrawlSettings(),
    resolve: [],
    allowAddress: [],
    politeness: {},
    dns: {},
    fetch: {
      connectTimeoutMs: 10_000,
      headersTimeoutMs: 15_000,
      readTimeoutMs: 15_000,
      totalTimeoutMs: 60_000,
      maxBodyBytes: 2 * 1024 * 1024,
      parseTypes: ['text/html', 'application/xhtml+xml'],
    },
    robots: {
      cacheTtlMs: 24 * 3600 * 1000,
      maxBytes: 500 * 1024,
      maxRedirects: 5,
    },
    warc: {
      enabled: true,
      prefix: 'ubicrawl',
      maxFileBytes: 1024 * 1024 * 1024,
      fsyncIntervalMs: 2000,
      digest: 'sha1',
    },
    frontier: {
      activeHostsPerSlot: 3,
      headSize: 64,
    },
    seen: {
      batchSize: 4096,
      maxWaitMs: 20,
    },
    sitemaps: { enabled: true, maxIndexDepth: 3 },
    scope: {},
    // Manku et al. 2007: 64-bit fingerprints, k = 3 (the index layout is complete up to 3).
    dedup: { enabled: true, near: true, maxDistance: 3 },
    mesh: {
      enabled: false,
      peers: [],
      listen: [DEFAULT_MESH_LISTEN],
      announce: [],
      crawlId: 'default',
      capacity: 1,
      heartbeatMs: 1000,
      deadAfterMs: 5000,
      maxHops: 3,
      leaveTimeoutMs: 120_000,
      openMesh: false,
      admission: defaultMeshAdmission(),
    },
    api: {},
    progress: 'auto',
    logLevel: 'info',
    heapGrowthPercent: 50,
  };
}

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K] };
export type AgentOptions = DeepPartial<AgentConfig>;

/** Merges user options over the defaults (one level of nesting, which is all the config has). */
export function resolveConfig(options: AgentOptions = {}): AgentConfig {
  const base = defaultConfig();
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const current = (base as unknown as Record<string, unknown>)[key];
    if (current && typeof current === 'object' && !Array.isArray(current) && typeof value === 'object' && !Array.isArray(value)) {
      out[key] = { ...current, ...value };
    } else {
      out[key] = value;
    }
  }
  return out as unknown as AgentConfig;
}

/** Parses curl's `--resolve HOST:PORT:ADDR` syntax. Throws a usage error with a clear message. */
export function parseResolveRule(spec: string): ResolveRule {
  // ADDR may be an IPv6 literal in brackets: host:443:[::1]
  const m = /^([^:]+):(\d{1,5}):(\[[0-9a-fA-F:.]+\]|[0-9.]+)$/.exec(spec.trim());
  if (!m) throw new Error(`--resolve expects HOST:PORT:ADDR (e.g. '*.web.test:8080:127.0.0.1'), got '${spec}'`);
  const port = Number(m[2]);
  if (port < 1 || port > 65535) throw new Error(`--resolve port out of range in '${spec}'`);
  const address = m[3]!.startsWith('[') ? m[3]!.slice(1, -1) : m[3]!;
  return { host: m[1]!.toLowerCase(), port, address };
}

/** The rule that applies to host:port, if any. Exact names win over wildcards, longer suffixes over shorter. */
export function matchResolveRule(rules: readonly ResolveRule[], host: string, port: number): ResolveRule | undefined {
  let best: ResolveRule | undefined;
  let bestScore = -1;
  for (const r of rules) {
    if (r.port !== port) continue;
    let score = -1;
    if (r.host === host) score = 1e6;
    else if (r.host === '*') score = 0;
    else if (r.host.startsWith('*.') && host.endsWith(r.host.slice(1))) score = r.host.length;
    if (score > bestScore) { best = r; bestScore = score; }
  }
  return best;
}
