// Public library API of ubicrawl (docs/architecture.md maps the folders). Keep this file a list of re-exports.
import './polyfill.js';

// The agent
export { startAgent, type AgentHandle, type AgentSnapshot } from './crawl/agent.js';
export { StartupError } from './crawl/preflight.js';
export { resolveConfig, defaultConfig, parseResolveRule, type AgentConfig, type AgentOptions, type RequestsConfig } from './config.js';

// Standards cores (pure)
export { RobotsTxt, productToken, formatExplain } from './robots/index.js';
export type { RobotsExplanation, RobotsTxtJSON } from './robots/index.js';
export { normalizeUrl, normalizeUrlOrReason, hostOf, DEFAULT_NORMALIZE_OPTIONS, type NormalizeOptions } from './url/normalize.js';
export { TRACKING_PARAMS } from './url/tracking.js';
export { parseSitemap, type SitemapParseResult } from './sitemap/parse.js';
export { DEFAULT_SITEMAP_LIMITS } from './sitemap/limits.js';
export { extractPage, type PageExtract, type ExtractOptions } from './parse/html.js';
export { parseMetaRobots, parseXRobotsTag } from './parse/directives.js';
export { ScopePolicy, DEFAULT_SCOPE_OPTIONS, SCOPE_REASONS, type ScopeOptions, type ScopeReason } from './scope/traps.js';

// Hashing, dedup, assignment
export { xxh64, xxh64Hex } from './hash/xxhash.js';
export { simhash64, hamming64, simhashHex, SimhashIndex } from './dedup/simhash.js';
export { ContentDedup, DEFAULT_DEDUP_CONFIG, type DedupConfig, type DedupCounts, type ExactCheck, type NearCheck } from './dedup/content.js';
export { HostRing, DEFAULT_REPLICAS, type HostRingOptions } from './assign/ring.js';
export { ZonedRing, parseZoneRule, zoneByRules, zoneByHash, type ZoneRule, type OwnerRing } from './assign/zones.js';

// WARC
export { WarcWriter } from './warc/writer.js';
export { readWarc, verifyWarc } from './warc/reader.js';
export { indexWarcFile, parseCdxjLine } from './warc/cdxj.js';
export { lookupUrl, getStoredResponse } from './warc/lookup.js';
export { surt } from './warc/surt.js';
export { warcinfoFields, type WarcinfoSettings } from './warc/warcinfo.js';
export { labelledDigest, type DigestAlgo } from './warc/digest.js';

// Politeness
export { nextAllowedAt, parseRetryAfter } from './politeness/delay.js';
export { HostResolver, DnsError, DEFAULT_DNS_CONFIG, type DnsConfig, type Resolved } from './fetch/dns.js';
export {
  AddressPolicy, classifyAddress, describeAddress, parseIpLiteral, parseCidr,
  type AddressClass, type AddressRange, type BlockedAddress, type Cidr, type Embedding, type IpLiteral,
} from './fetch/address.js';
// Requests (docs/requests.md)
export { parseHeaderField, parseHeaderFields, HeaderError, type HeaderField } from './fetch/headers.js';
export { proxyPlan, proxyFor, parseProxyUrl, ProxyError, type ProxyPlan, type ProxyChoice, type ProxySettings } from './fetch/proxy.js';
export { CookieJar, parseSetCookie, parseCookieDate, DEFAULT_COOKIE_LIMITS, type Cookie, type CookieJarLimits } from './fetch/cookies.js';
export {
  onOutcome, newHostPoliteness, describeHost, politenessConfig, unpark, kindOfStatus, kindOfFailure, IpClock, DEFAULT_POLITENESS,
  type HostPoliteness, type PolitenessConfig, type Outcome, type OutcomeKind, type Decision, type DelayReason,
} from './politeness/host.js';
export { PolitenessControl, type Verdict, type PolitenessCounts } from './politeness/control.js';

// Operations
export { startApiServer, DEFAULT_API_LISTEN } from './api/server.js';
export { createMetrics } from './api/metrics.js';

// Recrawl (docs/recrawl.md)
export {
  recordFetch, seedInterval, conditionalHeaders, revisitPriority, nextKind, newShare, encodeRecrawlState, decodeRecrawlState,
  DEFAULT_RECRAWL, type RecrawlState, type RecrawlConfig,
} from './recrawl/schedule.js';
export { defaultRecrawlSettings, type RecrawlSettings } from './recrawl/settings.js';
export { serverNotModifiedRevisit } from './warc/notmodified.js';

// Frontier priority (Mercator front queues)
export { priorityClass, clampClass, PRIORITY_CLASSES, MAX_PRIORITY, type PriorityHints } from './frontier/priority.js';
export type { UrlKind } from './frontier/frontier.js';
export { simhashPieces, PIECE_BREAK, PIECE_ENTITY } from './dedup/simhash.js';
