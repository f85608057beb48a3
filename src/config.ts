import type { ScopeOptions } from './scope/traps.js';
import type { PolitenessConfig } from './politeness/host.js';
import type { DnsConfig } from './fetch/dns.js';
import type { RecrawlSettings } from './recrawl/settings.js';
import type { RecrawlConfig } from './recrawl/schedule.js';
import type { DedupConfig } from './dedup/content.js';
import type { SitemapLimits } from './sitemap/limits.js';
import type { DigestAlgo } from './warc/digest.js';
import type { CrawlScopeConfig } from './scope/crawl-scope.js';
import type { CookieJarLimits } from './fetch/cookies.js';
import { SOFTWARE } from './version.js';
import { unbracketHost } from './url/host.js';

// The one place for configuration defaults. Every module takes its settings
// from an AgentConfig built by `resolveConfig`, and a module used on its own
// (library use, tests) falls back to the typed defaults below, so a default is
// written here once. The CLI's options read them too (src/cli/options.ts).
// This module imports types only: modules import their defaults from here.

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
  /** Per-host floor between two requests, ms (docs/politeness.md). */
  minDelayMs: number;
  /** Mercator's rule: next request waits k × the last response time. */
  delayFactor: number;
  /** Upper bound on any politeness delay we honour (Crawl-delay, Retry-After), ms. */
  maxDelayMs: number;
  /** Stop after this many fetched pages (0 = no limit). */
  maxPages: number;
  /** Exit once nothing is queued or in flight (with recrawl: and nothing due within recrawl.horizonMs). */
  untilIdle: boolean;
  /**
   * With `untilIdle`: deferred work (hosts in backoff, paused, or awaiting a robots.txt retry) due within this
   * long holds the run open; later than that, the run ends and the work stays queued for the next run, ms.
   */
  idleGraceMs: number;
  /** Stop after this much wall-clock time, ms (0 = no limit). */
  maxDurationMs: number;
  /** Recrawl scheduling (off by default: a one-pass crawl; docs/recrawl.md). */
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
  /** Adaptive politeness beyond the three delays above (backoff, pauses, retries, per-IP); defaults in DEFAULT_POLITENESS. */
  politeness: Partial<PolitenessConfig>;
  /** The c-ares resolver (servers, TTL clamps, timeouts); defaults in DEFAULT_DNS_CONFIG. */
  dns: Partial<DnsConfig>;
  fetch: FetchConfig;
  robots: RobotsConfig;
  warc: WarcConfig;
  frontier: FrontierConfig;
  seen: SeenConfig;
  /** Sitemaps 0.90: follow robots.txt `Sitemap:` lines and each host's /sitemap.xml. */
  sitemaps: { enabled: boolean; maxIndexDepth: number };
  /** Each page's outlinks: a WARC metadata record and a line of `<data-dir>/graph/*.edges.gz` (src/graph/, docs/graph.md). */
  linkGraph: { enabled: boolean };
  /** Scope and trap defences; defaults in src/scope/traps.ts (DEFAULT_SCOPE_OPTIONS). */
  scope: Partial<ScopeOptions>;
  /** What the crawl follows and stores: `--scope`, URL filters, depth, per-host cap, accepted types (src/scope/crawl-scope.ts, docs/scope.md). */
  crawlScope: CrawlScopeConfig;
  /** Media, opt-in (`--media`, `--max-media-bytes`; src/parse/media.ts, docs/media.md): none by default. */
  media: MediaConfig;
  /** Content dedup (src/dedup/content.ts): exact payload digests → WARC revisit records; SimHash near-duplicates noted. */
  dedup: DedupConfig;
  /** What every request carries and how it travels: header fields, proxy, cookies (docs/requests.md). */
  requests: RequestsConfig;
  /** `--blocklist`: block rules loaded into the crawl policy at start, one a line (docs/scope.md "Block list"). */
  blocklistFile?: string;
  /** The config file the command line read (`--config`; docs/requests.md "Config file"): informational. */
  configFile?: string;
  /** The mesh (libp2p). Off: a lone agent without networking (library use, benchmarks). */
  mesh: MeshConfig;
  /** The render tier: headless Chromium for pages built by JavaScript (src/render/, docs/render.md). Off by default. */
  render: RenderConfig;
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
  /**
   * Local address outgoing mesh connections are made from (a machine with several addresses; the WAN
   * emulator, bench/wan, tells agents apart by it). Unset: the system chooses.
   */
  sourceAddress?: string;
  /**
   * How long `join` keeps trying its seed peers (with backoff) before it gives up; it crawls nothing
   * meanwhile (docs/mesh.md "Joining in any order"). 0: no limit.
   */
  joinTimeoutMs: number;
  swarmKeyFile?: string;
  /** One gossip topic per crawl: agents of different crawls ignore each other. */
  crawlId: string;
  /** Share of hosts relative to other agents (UbiCrawler capacity). */
  capacity: number;
  /** This agent's zone (a data center, a region); '' = the default zone (docs/mesh.md "Zones"). */
  zone: string;
  /** The weight this agent declares for its zone: a zone's share of hosts is its weight over the sum (docs/mesh.md "Zones"). */
  zoneWeight: number;
  /** `SUFFIX=ZONE` or `CIDR=ZONE` rules (src/assign/zones.ts), the same on every member. */
  zoneRules: string[];
  /** A partial batch of URLs for a member of another zone waits this long for more (larger, fewer batches across a WAN), ms. */
  crossZoneLingerMs: number;
  heartbeatMs: number;
  /** Silence (and no connection) after which a member is declared dead. */
  deadAfterMs: number;
  /**
   * A member that meets the dead rule is suspect this long before it is declared dead and its hosts
   * are taken over (docs/mesh.md "Suspicion before takeover"). 0: at once.
   */
  takeoverGraceMs: number;
  /** A URL forwarded this many times is kept where it lands (views disagree for a moment). */
  maxHops: number;
  /**
   * Extra copies of every host's queued URLs and seen entries, kept by the host's next owners on the ring
   * (docs/mesh.md "Replicated frontier"): the permanent loss of fewer agents than this plus one loses nothing
   * queued. 0: only the next owner learns what was settled (replica seen entries), queued URLs are not copied.
   */
  replicas: number;
  /**
   * A graceful leave (SIGTERM, `POST /leave`) hands hosts over and waits for their acknowledgements
   * this long in total; what is left stays on disk for the next start (docs/mesh.md, "Graceful leave").
   */
  leaveTimeoutMs: number;
  /** Per-sender limits on received URL batches (docs/mesh.md "Admission"): over them, the sender is slowed down. */
  receiveLimits: { itemsPerSec: number; itemsBurst: number; bytesPerSec: number; bytesBurst: number };
  /** A member with this many bytes queued for it in our outbox is left out of our ring (its queue re-routed). */
  outboxQuotaBytes: number;
  /** A member that acknowledges nothing for this long while we have URLs queued for it is left out likewise. */
  peerStallMs: number;
  /** How long such a member stays out of our ring. */
  excludeMs: number;
  /** State kept per departed peer (counters, rate limits, inbox high-water mark) is dropped this long after it left. */
  forgetPeerAfterMs: number;
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

export const DEFAULT_MESH_ADMISSION: Readonly<MeshAdmissionConfig> = Object.freeze({
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
});

export function defaultMeshAdmission(): MeshAdmissionConfig {
  return { ...DEFAULT_MESH_ADMISSION };
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

export interface RequestsConfig {
  /** Header fields sent with every request, each as `Name: value` (src/fetch/headers.ts checks them). */
  headers: string[];
  /** Proxy for every target (http:// or https:// URL); unset: the environment's HTTP_PROXY / HTTPS_PROXY, when proxyFromEnv. */
  proxy?: string;
  /** Hosts reached directly, not through a proxy (NO_PROXY syntax, one entry each). */
  noProxy: string[];
  /** Honour HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and their lower-case forms), as curl, wget and undici do. */
  proxyFromEnv: boolean;
  /** Keep each host's cookies and send them back to it (RFC 6265, host-only; src/fetch/cookies.ts). Off: no Cookie is sent. */
  cookies: boolean;
}

export interface RobotsConfig {
  /** RFC 9309 §2.4: cache no longer than 24 h. */
  cacheTtlMs: number;
  /** RFC 9309 §2.5: parse at least 500 KiB. */
  maxBytes: number;
  /** RFC 9309 §2.3.1.2: follow at least five consecutive redirects. */
  maxRedirects: number;
}

/** never: no browser; auto: pages whose static parse looks like an empty shell (src/render/decide.ts); always: every HTML page. */
export type RenderMode = 'never' | 'auto' | 'always';

export interface RenderConfig {
  mode: RenderMode;
  /** Hosts always rendered whatever the mode: exact name or `*.suffix`. */
  hosts: string[];
  /** Browser pages rendering at once (one Chromium process for all of them). */
  concurrency: number;
  /** Wall time of one render, from navigation to the serialised DOM, ms. */
  timeoutMs: number;
  /** After the network has been quiet this long, the page is taken as settled, ms. */
  networkIdleMs: number;
  /** Requests one render may make besides the page itself; more are refused (outcome 'budget'). */
  maxRequests: number;
  /** Bytes of subresource bodies one render may fetch; past it, further requests are refused (outcome 'budget'). */
  maxBytes: number;
  /** The browser is restarted once its process tree's RSS exceeds this, bytes (checked between renders). */
  maxBrowserRssBytes: number;
  /** Chromium to launch (Debian: apt-get install chromium). Missing: rendering is off, said once. */
  chromiumPath: string;
  /** auto: below this many characters of visible text, a page with scripts is an empty shell. */
  minTextChars: number;
  /** auto: an app root (<div id=root|app|__next…>) with at most this many characters of text is empty. */
  appRootMaxChars: number;
  /** auto: the first this-many pages of a host settle its verdict (majority; a tie renders). */
  settleAfter: number;
  /** auto: hosts whose verdict is remembered (least recently used forgotten). */
  maxHosts: number;
  /** Pages waiting in the durable render queue; more are dropped and counted. */
  maxQueued: number;
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

/** `ubicrawl wacz --out` and `ubicrawl graph export --out` when not given (docs/warc.md, docs/graph.md). */
export const DEFAULT_WACZ_OUT = 'crawl.wacz';
export const DEFAULT_GRAPH_OUT = 'graph';

/** The product token robots.txt groups are matched on (RFC 9309 §2.2.1); the first word of the User-Agent. */
export const DEFAULT_ROBOTS_TOKEN = 'ubicrawl';

/** `ubicrawl/<package version> (+…)`: its product token is DEFAULT_ROBOTS_TOKEN. */
export const DEFAULT_USER_AGENT = `${SOFTWARE} (+https://github.com/ubicrawl/ubicrawl)`;

/** Where the API listens unless told otherwise: loopback only (no token needed there). */
export const DEFAULT_API_LISTEN = '127.0.0.1:7070';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const MIN_DELAY_MS = 1000;

/** Adaptive politeness (docs/politeness.md). The first three are also AgentConfig's top-level delays. */
export const DEFAULT_POLITENESS: Readonly<PolitenessConfig> = Object.freeze({
  minDelayMs: MIN_DELAY_MS,
  // Mercator's k (Heydon & Najork 1999).
  delayFactor: 10,
  maxDelayMs: 120_000,
  retryAfterMaxMs: HOUR,
  backoffBaseMs: 5_000,
  backoffMaxMs: 600_000,
  backoffJitter: 0.5,
  errorRunToPause: 5,
  pauseBaseMs: 60_000,
  pauseMaxMs: HOUR,
  maxPauses: 5,
  maxRetries: 3,
  retryBaseMs: 30_000,
  perIp: false,
  // The per-host floor, unless set on its own (politenessConfig()).
  ipMinDelayMs: MIN_DELAY_MS,
});

/** The c-ares resolver (src/fetch/dns.ts). */
export const DEFAULT_DNS_CONFIG: Readonly<DnsConfig> = Object.freeze({
  servers: [],
  minTtlMs: 30_000,
  maxTtlMs: HOUR,
  negativeTtlMs: 300_000,
  errorTtlMs: 5_000,
  queryTimeoutMs: 5_000,
  tries: 2,
  family: 0,
  maxEntries: 100_000,
  prefetchWindowMs: 30_000,
  lookupFallback: false,
} as DnsConfig);

// Manku et al. 2007: 64-bit fingerprints, k = 3 (the index layout is complete up to 3).
export const DEFAULT_DEDUP_CONFIG: Readonly<DedupConfig> = Object.freeze({ enabled: true, near: true, maxDistance: 3 });

/** The revisit schedule (src/recrawl/schedule.ts, docs/recrawl.md). */
export const DEFAULT_RECRAWL: Readonly<RecrawlConfig> = Object.freeze({
  minIntervalMs: HOUR,
  maxIntervalMs: 30 * DAY,
  initialIntervalMs: DAY,
  revisitShare: 0.7,
});

/** AgentConfig's `recrawl` section (src/recrawl/settings.ts). */
export const DEFAULT_RECRAWL_SETTINGS: Readonly<RecrawlSettings> = Object.freeze({
  enabled: false,
  minIntervalMs: DEFAULT_RECRAWL.minIntervalMs,
  maxIntervalMs: DEFAULT_RECRAWL.maxIntervalMs,
  initialIntervalMs: DEFAULT_RECRAWL.initialIntervalMs,
  revisitShare: DEFAULT_RECRAWL.revisitShare,
  speedup: 1,
  batchSize: 1024,
  scanIntervalMs: 0,
  horizonMs: HOUR,
  maxHints: 1_000_000,
});

/** Sitemaps 0.90 limits (https://www.sitemaps.org/protocol.html): 50,000 entries and 50 MiB per file. */
export const DEFAULT_SITEMAP_LIMITS: Readonly<SitemapLimits> = Object.freeze({
  maxUrls: 50_000,
  maxBytes: 50 * 1024 * 1024,
  maxIndexDepth: 3,
});

/**
 * Scope and trap defences (src/scope/traps.ts; DEFAULT_SCOPE_OPTIONS adds the session id parameter lists).
 * patternBudget 1000: an endless calendar costs at most 1000 fetches per pattern (≈ 17 minutes of one
 * host's 1 s politeness slot), while numbered sections of ordinary sites (articles /a/123, forum pages)
 * pass up to 1000 pages per pattern; raise it for crawls that want large catalogues.
 */
export const DEFAULT_SCOPE_LIMITS: Readonly<Omit<ScopeOptions, 'currentYear' | 'sessionIdParams' | 'sessionIdTokenParams'>> = Object.freeze({
  maxUrlLength: 2048,
  maxPathDepth: 16,
  maxSegmentRepeats: 2,
  calendarYearsAhead: 2,
  sessionIds: 'strip' as const,
  schemes: Object.freeze(['http', 'https']),
  includeHosts: Object.freeze([]) as readonly string[],
  excludeHosts: Object.freeze([]) as readonly string[],
  domains: Object.freeze([]) as readonly string[],
  hostBudget: 100_000,
  maxLinksPerPage: 1000,
  patternBudget: 1000,
  counterSlots: 1 << 18,
});

/**
 * What a crawl follows (docs/scope.md): the seeds' registrable domains, as wget, Scrapy and Crawlee keep
 * to a site unless told otherwise; no filter, depth limit, per-host cap or type restriction.
 */
export const DEFAULT_CRAWL_SCOPE: Readonly<CrawlScopeConfig> = Object.freeze({
  mode: 'seeds' as const,
  allowHosts: Object.freeze([]) as unknown as string[],
  include: Object.freeze([]) as unknown as string[],
  exclude: Object.freeze([]) as unknown as string[],
  maxDepth: 0,
  maxPagesPerHost: 0,
  acceptTypes: Object.freeze([]) as unknown as string[],
});

/** Requests carry no header of the operator's, no cookie, and use the environment's proxy if it names one. */
export const DEFAULT_REQUESTS: Readonly<RequestsConfig> = Object.freeze({
  headers: Object.freeze([]) as unknown as string[],
  noProxy: Object.freeze([]) as unknown as string[],
  proxyFromEnv: true,
  cookies: false,
});

/** The cookie jar's bounds (src/fetch/cookies.ts): RFC 6265 §6.1's minimums per host, and a bound on hosts kept. */
export const DEFAULT_COOKIE_LIMITS: Readonly<CookieJarLimits> = Object.freeze({ maxPerHost: 50, maxCookieBytes: 4096, maxHosts: 10_000 });

export const DEFAULT_ROBOTS: Readonly<RobotsConfig> = Object.freeze({
  cacheTtlMs: 24 * HOUR,
  maxBytes: 500 * 1024,
  maxRedirects: 5,
});

export const DEFAULT_RENDER: Readonly<Omit<RenderConfig, 'hosts'>> & { readonly hosts: readonly string[] } = Object.freeze({
  mode: 'never',
  hosts: Object.freeze([]) as readonly string[],
  concurrency: 2,
  timeoutMs: 20_000,
  networkIdleMs: 500,
  maxRequests: 100,
  maxBytes: 10 * 1024 * 1024,
  maxBrowserRssBytes: 1024 * 1024 * 1024,
  chromiumPath: '/usr/bin/chromium',
  minTextChars: 200,
  appRootMaxChars: 64,
  settleAfter: 5,
  maxHosts: 100_000,
  maxQueued: 100_000,
});

/**
 * zlib level of the WARC's gzip members (WarcWriter `gzipLevel`). 3, the strongest of zlib's fast
 * deflate levels: on real HTML (Debian's documentation pages) 26 % less deflate CPU than level 4 for 5.6 %
 * more bytes, on the crawl bench's pages 12 % less for 1.5 % more; deflate was the largest single cost of
 * the agent (docs/warc.md "Compression", docs/performance.md "Crawl").
 */
export const WARC_GZIP_LEVEL = 3;

export const DEFAULT_WARC: Readonly<WarcConfig> = Object.freeze({
  enabled: true,
  prefix: DEFAULT_ROBOTS_TOKEN,
  maxFileBytes: 1024 * 1024 * 1024,
  fsyncIntervalMs: 2000,
  digest: 'sha1',
});

/**
 * Pages whose WARC records and SimHash an agent computes on its main thread before it starts the helper thread
 * that takes both (src/util/helper-thread.ts). Starting a thread costs 0.15–0.35 CPU-s (Node compiles its internals again in each),
 * what a few hundred pages cost in-line: a small crawl (a test, a single site) never pays it, a large one
 * moves the work off the main thread after its first pages (docs/performance.md "Worker threads").
 */
export const INLINE_PAGES_BEFORE_THREADS = 256;

/**
 * Young generation (MB) of the helper thread's heap (the WARC encoder and the fingerprints: src/util/helper-thread.ts). V8 gives each thread the main thread's
 * ceiling (semi-spaces of up to 16 MB: up to 48 MB of young generation), which let the encoder thread's heap reach
 * 43 MB for 23 MB used and keep the bodies transferred to it until a scavenge came. 16 MB costs the encoder no
 * measurable CPU (bench/warc.ts: 648 against 664 µs an exchange) and takes 15–20 MB off the crawl bench's peak RSS;
 * 6 MB takes 35–40 MB off but costs the encoder ≈ 3 % more CPU (jobs in flight get promoted and reach the old
 * generation's GC). docs/performance.md "Worker threads".
 */
export const WORKER_YOUNG_GENERATION_MB = 16;

/** A sender may burst this many seconds' worth of its URL rate (`--peer-rate`; docs/mesh.md "Admission"). */
export const RECEIVE_BURST_SECONDS = 5;
/** Without its own dead-after setting, a member is dead after this many silent heartbeat intervals. */
export const DEAD_AFTER_HEARTBEATS = 5;

const DEFAULT_HEARTBEAT_MS = 1000;
const DEFAULT_PEER_RATE = 20_000;

/** The mesh (docs/mesh.md). Arrays and nested sections are frozen: copy before changing (defaultConfig() does). */
export const DEFAULT_MESH: Readonly<MeshConfig> = Object.freeze({
  enabled: false,
  peers: Object.freeze([]) as unknown as string[],
  listen: Object.freeze([DEFAULT_MESH_LISTEN]) as unknown as string[],
  announce: Object.freeze([]) as unknown as string[],
  // Machines of a cluster start in any order: a joiner waits this long for its seed peers.
  joinTimeoutMs: 300_000,
  crawlId: 'default',
  capacity: 1,
  zone: '',
  zoneWeight: 1,
  zoneRules: Object.freeze([]) as unknown as string[],
  // Inside a zone a batch waits 50 ms (DEFAULT_MESH_EXCHANGE.lingerMs); across zones, ten times that:
  // a round trip there costs 60–300 ms, so fewer, fuller batches (docs/mesh.md "Zones").
  crossZoneLingerMs: 500,
  heartbeatMs: DEFAULT_HEARTBEAT_MS,
  deadAfterMs: DEAD_AFTER_HEARTBEATS * DEFAULT_HEARTBEAT_MS,
  // On one site a silent member is most likely gone: take over at once. Across data centers raise it
  // (docs/deploy.md "Three data centers"): a partition shorter than dead-after + grace moves no host.
  takeoverGraceMs: 0,
  maxHops: 3,
  replicas: 1,
  leaveTimeoutMs: 120_000,
  // About 10× what an honest agent sends at full speed (docs/mesh.md "Admission"); a handoff of a large
  // frontier is slowed, never refused.
  receiveLimits: Object.freeze({
    itemsPerSec: DEFAULT_PEER_RATE, itemsBurst: RECEIVE_BURST_SECONDS * DEFAULT_PEER_RATE, bytesPerSec: 16 << 20, bytesBurst: 64 << 20,
  }),
  outboxQuotaBytes: 256 << 20,
  peerStallMs: 60_000,
  excludeMs: 600_000,
  forgetPeerAfterMs: 600_000,
  openMesh: false,
  admission: DEFAULT_MESH_ADMISSION,
});

/** Tunables of the URL exchange and its outbox (src/mesh/exchange.ts, src/mesh/outbox.ts) and of the node's connections (src/mesh/node.ts): not agent options, the classes' defaults. */
export interface MeshExchangeTuning {
  /** URLs per batch frame. */
  batchMaxUrls: number;
  /** Bytes per batch frame. */
  batchMaxBytes: number;
  /** A partial batch waits this long for more URLs, ms. */
  lingerMs: number;
  /** URLs and bytes per batch frame to a member of another zone (the linger is mesh.crossZoneLingerMs). */
  crossZoneBatchMaxUrls: number;
  crossZoneBatchMaxBytes: number;
  /** Unacknowledged URL batches per peer. */
  window: number;
  ackTimeoutMs: number;
  dialTimeoutMs: number;
  /** A sending stream with nothing to send is closed after this long, ms. */
  idleCloseMs: number;
  /** A receiving stream silent this long is closed, ms. */
  readIdleMs: number;
  /** Retry backoff of a failing sender, ms: from min, doubling up to max. */
  backoffMinMs: number;
  backoffMaxMs: number;
  maxInboundStreams: number;
  /**
   * A connection whose ping (libp2p's connection monitor, every 10 s) goes unanswered this long is aborted
   * with every stream on it, ms (at least; the agent uses 4 × dead-after when longer: docs/mesh.md "Connections").
   */
  pingTimeoutMs: number;
  /** New inbound connections accepted per second from one address, and handshakes under way at once (docs/mesh.md "Connections"). */
  inboundConnectionsPerSecond: number;
  maxPendingInboundConnections: number;
  /** Outbox: "recently forwarded" hashes kept (0: no such cache). */
  recentSize: number;
  /** Outbox: URLs and bytes per stored segment. */
  segmentMaxUrls: number;
  segmentMaxBytes: number;
  /** Outbox: items written in one LevelDB batch. */
  commitMaxItems: number;
  /** Outbox: URLs of the last acknowledged batches kept per peer, sent again if it dies (docs/mesh.md "Replicated frontier"). */
  retainAckedUrls: number;
  /**
   * Outbox: how long after its acknowledgement a URL is worth sending again when the peer dies,
   * beyond the dead-after period and takeover grace, ms: the replication window under load
   * (docs/mesh.md "Replicated frontier").
   */
  resendWindowMs: number;
}

export const DEFAULT_MESH_EXCHANGE: Readonly<MeshExchangeTuning> = Object.freeze({
  batchMaxUrls: 500,
  batchMaxBytes: 256 * 1024,
  lingerMs: 50,
  crossZoneBatchMaxUrls: 2000,
  crossZoneBatchMaxBytes: 1024 * 1024,
  window: 4,
  ackTimeoutMs: 30_000,
  dialTimeoutMs: 10_000,
  idleCloseMs: 5_000,
  readIdleMs: 120_000,
  backoffMinMs: 100,
  backoffMaxMs: 10_000,
  maxInboundStreams: 3,
  // libp2p's 5 s: a peer whose event loop or relay runs 5 s late lost the connection and every batch on it.
  pingTimeoutMs: 20_000,
  // libp2p's 5 per second and 10 at once: a mesh's members may share one address, and all dial a joiner at once.
  inboundConnectionsPerSecond: 32,
  maxPendingInboundConnections: 32,
  recentSize: 1 << 18,
  retainAckedUrls: 5000,
  resendWindowMs: 10_000,
  segmentMaxUrls: 500,
  segmentMaxBytes: 64 * 1024,
  commitMaxItems: 4096,
});

/** A fresh, mutable AgentConfig holding every default. */
/** Media kinds `--media` takes (src/parse/media.ts, docs/media.md). */
export type MediaKind = 'images' | 'pdf' | 'video' | 'audio';

export interface MediaConfig {
  /** Kinds fetched besides pages (empty: none, the default). */
  kinds: MediaKind[];
  /** Body cap per kind, bytes: a longer response is kept truncated at the cap (WARC-Truncated: length). */
  maxBytes: Record<MediaKind, number>;
}

/** Per-kind body caps of media (docs/media.md): a longer response is kept truncated at the cap. */
export const DEFAULT_MEDIA_MAX_BYTES: Readonly<MediaConfig['maxBytes']> = Object.freeze({
  images: 5 * 1024 ** 2, pdf: 50 * 1024 ** 2, video: 100 * 1024 ** 2, audio: 50 * 1024 ** 2,
});

export function defaultConfig(): AgentConfig {
  return {
    dataDir: DEFAULT_DATA_DIR,
    userAgent: DEFAULT_USER_AGENT,
    seeds: [],
    concurrency: 32,
    minDelayMs: DEFAULT_POLITENESS.minDelayMs,
    delayFactor: DEFAULT_POLITENESS.delayFactor,
    maxDelayMs: DEFAULT_POLITENESS.maxDelayMs,
    maxPages: 0,
    untilIdle: false,
    idleGraceMs: 30_000,
    maxDurationMs: 0,
    recrawl: { ...DEFAULT_RECRAWL_SETTINGS },
    resolve: [],
    allowAddress: [],
    // Completed from DEFAULT_POLITENESS and DEFAULT_DNS_CONFIG by the modules (politenessConfig(), HostResolver):
    // empty here so that the top-level delays above are not overridden (politenessConfig()).
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
    robots: { ...DEFAULT_ROBOTS },
    warc: { ...DEFAULT_WARC },
    frontier: {
      activeHostsPerSlot: 3,
      headSize: 64,
    },
    seen: {
      batchSize: 4096,
      maxWaitMs: 20,
    },
    sitemaps: { enabled: true, maxIndexDepth: DEFAULT_SITEMAP_LIMITS.maxIndexDepth },
    linkGraph: { enabled: true },
    // Completed from DEFAULT_SCOPE_OPTIONS (src/scope/traps.ts) by ScopePolicy.
    scope: {},
    media: { kinds: [], maxBytes: { ...DEFAULT_MEDIA_MAX_BYTES } },
    crawlScope: {
      ...DEFAULT_CRAWL_SCOPE,
      allowHosts: [...DEFAULT_CRAWL_SCOPE.allowHosts],
      include: [...DEFAULT_CRAWL_SCOPE.include],
      exclude: [...DEFAULT_CRAWL_SCOPE.exclude],
      acceptTypes: [...DEFAULT_CRAWL_SCOPE.acceptTypes],
    },
    dedup: { ...DEFAULT_DEDUP_CONFIG },
    requests: { ...DEFAULT_REQUESTS, headers: [...DEFAULT_REQUESTS.headers], noProxy: [...DEFAULT_REQUESTS.noProxy] },
    mesh: {
      ...DEFAULT_MESH,
      peers: [...DEFAULT_MESH.peers],
      listen: [...DEFAULT_MESH.listen],
      announce: [...DEFAULT_MESH.announce],
      zoneRules: [...DEFAULT_MESH.zoneRules],
      receiveLimits: { ...DEFAULT_MESH.receiveLimits },
      admission: defaultMeshAdmission(),
    },
    render: { ...DEFAULT_RENDER, hosts: [...DEFAULT_RENDER.hosts] },
    api: {},
    progress: 'auto',
    logLevel: 'info',
    heapGrowthPercent: 50,
  };
}

/** Every setting as it applies when nothing sets it: defaultConfig() with the sections the modules complete filled in. */
export type EffectiveDefaults = Omit<AgentConfig, 'politeness' | 'dns'> & { politeness: PolitenessConfig; dns: DnsConfig };

export function effectiveDefaults(): EffectiveDefaults {
  return { ...defaultConfig(), politeness: { ...DEFAULT_POLITENESS }, dns: { ...DEFAULT_DNS_CONFIG, servers: [] } };
}

/** A dotted path to one setting of EffectiveDefaults, e.g. 'mesh.capacity' or 'politeness.maxRetries'. */
export type ConfigPath = PathsOf<EffectiveDefaults>;
type PathsOf<T> = {
  [K in keyof T & string]-?: NonNullable<T[K]> extends unknown[] ? K
    : NonNullable<T[K]> extends object ? K | `${K}.${PathsOf<NonNullable<T[K]>>}` : K;
}[keyof T & string];

/** The value at a dotted path (undefined where a section has no such setting). */
export function configValue(config: object, path: ConfigPath): unknown {
  let v: unknown = config;
  for (const k of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
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
  const address = unbracketHost(m[3]!);
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
