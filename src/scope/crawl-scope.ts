// What a crawl follows: the scope (`--scope seeds|domain|host|web`, `--allow-host`),
// URL filters (`--include`, `--exclude`) and the link depth (`--max-depth`).
// No I/O, plain data in and out (the seeds it knows are its only state); the agent applies it where a URL is admitted
// (docs/scope.md). Host names are the normalised URL's: lower case, IDNs in
// punycode, no port, IPv6 in brackets.
//
// A link is in scope when any of these holds:
//   - the mode is `web`;
//   - its host is an allowed host (`--allow-host`: `name` or `*.suffix`);
//   - its host is in the unit of a seed this agent knows (seeds given to it,
//     seeds added through its API, seeds other agents forwarded to it);
//   - its host is in the unit of the page it was found on (a link, a redirect,
//     a sitemap entry), unless that page's host is in scope only as an allowed
//     host. This makes the scope follow a seed's lineage across agents that
//     were never told the seed: a page was admitted in scope, so its unit is.
// The unit of a host, by mode:
//   seeds   its registrable domain (eTLD+1 by the Public Suffix List, private
//           section included: foo.github.io is its own); an IP address, a
//           single label or a public suffix is its own unit
//   domain  the host and every name under it (docs.example.org covers
//           api.docs.example.org, not www.example.org)
//   host    the host name itself
import { domainToASCII } from 'node:url';
import { getDomain } from 'tldts';

export type ScopeMode = 'seeds' | 'domain' | 'host' | 'web';
export const SCOPE_MODES: readonly ScopeMode[] = Object.freeze(['seeds', 'domain', 'host', 'web'] as const);

export interface CrawlScopeConfig {
  /** What links are followed (see above); `seeds` by default. */
  mode: ScopeMode;
  /** Hosts also in scope, whatever the mode: `name` exactly, `*.suffix` any name under suffix. */
  allowHosts: string[];
  /** Regular expressions on the normalised URL: if any is given, a link must match one. */
  include: string[];
  /** Regular expressions on the normalised URL: a link matching one is not followed (wins over include). */
  exclude: string[];
  /** Link hops from the seed a URL may be at (seeds are at 0); 0 = no limit. */
  maxDepth: number;
  /** Fetches per host on the agent that owns it (robots.txt not counted); 0 = no limit. */
  maxPagesPerHost: number;
  /** Media types stored (`text/html`, `image/*`); others are fetched, parsed for links, and recorded as skipped. Empty: all. */
  acceptTypes: string[];
}

/** Why a URL is not followed. */
export type ScopeRefusal = 'out-of-scope' | 'url-excluded' | 'url-not-included' | 'max-depth';

/** Host name as the normalised URL writes it: lower case, punycode, no trailing dot. */
export function asciiHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h.startsWith('[') || /^[\x00-\x7f]*$/.test(h)) return h;
  return domainToASCII(h) || h;
}

/**
 * The registrable domain (eTLD+1) of a host, by the Public Suffix List (tldts),
 * private section included. A host without one (an IP address, `localhost`, a
 * public suffix itself) is its own.
 */
export function registrableDomain(host: string): string {
  if (host.startsWith('[') || /^[\d.]+$/.test(host)) return host;
  return getDomain(host, { allowPrivateDomains: true, extractHostname: false }) ?? host;
}

/** The unit a host belongs to under a mode (see the header); `web` has none. */
export function scopeUnit(mode: ScopeMode, host: string): string | null {
  if (mode === 'web') return null;
  return mode === 'seeds' ? registrableDomain(host) : host;
}

/** Whether `host` is `name` or a name under it. */
function under(host: string, name: string): boolean {
  return host === name || (host.length > name.length && host.endsWith(name) && host.charCodeAt(host.length - name.length - 1) === 0x2e);
}

/** Host units remembered per scope: a page's links mostly name the same few hosts. */
const UNIT_CACHE_SIZE = 16_384;

/** Compiles the regular expressions of --include / --exclude; throws a one-line error naming a bad one. */
export function compilePatterns(patterns: readonly string[], option: string): RegExp[] {
  return patterns.map((p) => {
    try { return new RegExp(p); } catch (err) { throw new Error(`${option}: not a regular expression: ${p} (${(err as Error).message})`); }
  });
}

/** Whether a media type (parameters ignored) is one of the accepted types (`type/*` and `*\/*` patterns). Empty list: all. */
export function typeAccepted(accept: readonly string[], contentType: string | undefined | null): boolean {
  if (accept.length === 0) return true;
  const mime = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  for (const a of accept) {
    const p = a.trim().toLowerCase();
    if (p === mime || p === '*/*' || (p.endsWith('/*') && mime.startsWith(p.slice(0, -1)))) return true;
  }
  return false;
}

export class CrawlScope {
  readonly mode: ScopeMode;
  readonly maxDepth: number;
  private readonly allowExact = new Set<string>();
  private readonly allowSuffixes: string[] = [];
  /** Units of the seeds this agent knows. */
  private readonly units = new Set<string>();
  private readonly include: RegExp[];
  private readonly exclude: RegExp[];
  /** scopeUnit() of recent hosts (a Public Suffix List lookup is a microsecond or so; cleared when full). */
  private readonly unitCache = new Map<string, string>();

  constructor(config: Pick<CrawlScopeConfig, 'mode' | 'allowHosts' | 'include' | 'exclude' | 'maxDepth'>) {
    if (!SCOPE_MODES.includes(config.mode)) throw new Error(`scope must be one of ${SCOPE_MODES.join(', ')}, got ${String(config.mode)}`);
    this.mode = config.mode;
    this.maxDepth = config.maxDepth > 0 ? config.maxDepth : Infinity;
    for (const raw of config.allowHosts) {
      const p = asciiHost(raw);
      if (p.startsWith('*.')) this.allowSuffixes.push(p.slice(1));
      else if (p) this.allowExact.add(p);
    }
    this.include = compilePatterns(config.include, '--include');
    this.exclude = compilePatterns(config.exclude, '--exclude');
  }

  /** The unit of a host under this scope's mode (not `web`). */
  private unitOf(host: string): string {
    let u = this.unitCache.get(host);
    if (u === undefined) {
      if (this.unitCache.size >= UNIT_CACHE_SIZE) this.unitCache.clear();
      u = scopeUnit(this.mode, host) ?? host;
      this.unitCache.set(host, u);
    }
    return u;
  }

  /** A seed's host widens the scope by its unit; true if the unit is new. */
  addSeed(host: string): boolean {
    if (this.mode === 'web') return false;
    const unit = this.unitOf(host);
    if (this.units.has(unit)) return false;
    this.units.add(unit);
    return true;
  }

  /** The seed units known here (registrable domains, hosts), sorted. */
  seedUnits(): string[] {
    return [...this.units].sort();
  }

  isAllowedHost(host: string): boolean {
    if (this.allowExact.has(host)) return true;
    for (const s of this.allowSuffixes) if (host.length > s.length && host.endsWith(s)) return true;
    return false;
  }

  /** Whether the host is in a known seed's unit. */
  private inSeedUnit(host: string): boolean {
    if (this.mode !== 'domain') return this.units.has(this.unitOf(host));
    // The name or any of its parents.
    for (let name = host; ;) {
      if (this.units.has(name)) return true;
      const dot = name.indexOf('.');
      if (dot < 0) return false;
      name = name.slice(dot + 1);
    }
  }

  /** Whether a link to `host`, found on a page of `fromHost` (none: no page, e.g. a forwarded URL), is in scope. */
  hostInScope(host: string, fromHost?: string): boolean {
    if (this.mode === 'web') return true;
    if (this.isAllowedHost(host) || this.inSeedUnit(host)) return true;
    if (fromHost === undefined) return false;
    // A page in scope only as an allowed host does not bring its own unit in.
    if (this.isAllowedHost(fromHost) && !this.inSeedUnit(fromHost)) return false;
    return this.mode === 'domain' ? under(host, fromHost) : this.unitOf(host) === this.unitOf(fromHost);
  }

  /** The URL filters and the depth limit (not the host scope): null = followed. */
  filter(url: string, depth: number): ScopeRefusal | null {
    if (depth > this.maxDepth) return 'max-depth';
    for (const re of this.exclude) if (re.test(url)) return 'url-excluded';
    if (this.include.length > 0 && !this.include.some((re) => re.test(url))) return 'url-not-included';
    return null;
  }

  /** Host scope, then filters, of a link at `depth` found on a page of `fromHost`. */
  check(url: string, host: string, depth: number, fromHost?: string): ScopeRefusal | null {
    return this.hostInScope(host, fromHost) ? this.filter(url, depth) : 'out-of-scope';
  }
}
