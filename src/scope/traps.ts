// URL scope and crawler-trap defences (docs/standards.md "Scope and trap defences"). Runs on every
// extracted link, so it is a handful of linear scans over the URL string, no
// URL object, no per-call allocation on the accept path.
//
// Checks, in this order (the first that fails names the verdict):
//   scheme             the URL's scheme is not in `schemes`
//   too-long           more than `maxUrlLength` characters
//   out-of-scope       host outside includeHosts / domains, or in excludeHosts
//   session-id         a session id in path or query (see session.ts; in the
//                      default `strip` mode the caller runs rewrite() first,
//                      so only what cannot be stripped is turned away)
//   too-deep           more than `maxPathDepth` path segments
//   repeating-segments one path segment more than `maxSegmentRepeats` times
//                      (/a/b/a/b/a/b: relative links resolved against the
//                      wrong base, the classic Heritrix "path loop")
//   calendar-trap      a date later than current year + calendarYearsAhead
//   host-budget        the host already had `hostBudget` URLs accepted
//   pattern-budget     the URL's pattern (pattern.ts) already had
//                      `patternBudget` URLs accepted: cuts an endless calendar
//                      or pager while the host's other pages keep flowing
// The first seven are stateless ("static"); the two budgets count, and count
// only URLs that are accepted.
//
// Where to call what: budgets should count distinct URLs, so the pipeline
// should charge them after the seen-set says "new" (`admit`), on the agent that
// owns the host; the static checks can run as early as link extraction
// (`checkStatic`). `check` does both at once, for callers that only see new
// URLs. `maxLinksPerPage` is for the parser's caller: keep the first N links
// of a page and report the rest with `noteLinkCap(dropped)`.
//
// Memory is bounded: host and pattern counts live in fixed-size count-min
// tables (pattern.ts), 2 × counterSlots × 4 bytes each (default 2 MiB each),
// never a map that grows with the crawl. Counts are per process; `snapshot()` /
// `restore()` carry them across restarts if the caller stores them.

import { hasFarFutureDate } from './calendar.js';
import { CountMin, hostHashes, pathStartOf, patternHashes, urlPattern } from './pattern.js';
import { compileSessionIdMatcher, SESSION_ID_PARAMS, SESSION_ID_TOKEN_PARAMS, type SessionIdMatcher } from './session.js';
import { DEFAULT_SCOPE_LIMITS } from '../config.js';
import { hostWithoutPort } from '../url/host.js';

export type ScopeReason =
  | 'too-long'
  | 'too-deep'
  | 'repeating-segments'
  | 'calendar-trap'
  | 'session-id'
  | 'scheme'
  | 'out-of-scope'
  | 'host-budget'
  | 'pattern-budget'
  | 'link-cap';

/** null = accept; otherwise why the URL is turned away. */
export type ScopeVerdict = ScopeReason | null;

export const SCOPE_REASONS: readonly ScopeReason[] = Object.freeze([
  'too-long', 'too-deep', 'repeating-segments', 'calendar-trap', 'session-id', 'scheme',
  'out-of-scope', 'host-budget', 'pattern-budget', 'link-cap',
] as const);

export interface ScopeOptions {
  /** Longest accepted URL, in characters (a normalised URL is ASCII, so bytes). */
  maxUrlLength: number;
  /** Most path segments (`/a/b/` has 2; empty segments count: `/a//b` has 3). */
  maxPathDepth: number;
  /** How many times one non-empty path segment may occur in a path. */
  maxSegmentRepeats: number;
  /** Dates later than current year + this are calendar traps. */
  calendarYearsAhead: number;
  /** The current year (default: the UTC year when the policy is built). */
  currentYear?: number;
  /** `strip` (default): rewrite() removes session ids; `reject`: rewrite() keeps them and check() turns them away. */
  sessionIds: 'strip' | 'reject';
  /** Parameter names that always carry a session id (`*` suffix = prefix). */
  sessionIdParams: readonly string[];
  /** Parameter names that carry a session id when the value is token-like. */
  sessionIdTokenParams: readonly string[];
  /** Accepted URL schemes, lower-case. */
  schemes: readonly string[];
  /** If non-empty (or `domains` is), only these hosts: `example.com` exact, `*.example.com` any subdomain. */
  includeHosts: readonly string[];
  /** Hosts never crawled (same syntax); wins over include/domains. */
  excludeHosts: readonly string[];
  /** Domain scope: a domain and all its subdomains (`example.com` covers `a.example.com`). */
  domains: readonly string[];
  /** URLs accepted per host (Infinity = no budget). */
  hostBudget: number;
  /** Links the parser's caller keeps per page. */
  maxLinksPerPage: number;
  /** URLs accepted per URL pattern (Infinity = no budget). */
  patternBudget: number;
  /** Slots per count-min row (rounded up to a power of two); host and pattern tables each. */
  counterSlots: number;
}

/** Defaults: DEFAULT_SCOPE_LIMITS in src/config.ts, with the session id parameter lists of ./session.ts. */
export const DEFAULT_SCOPE_OPTIONS: Readonly<ScopeOptions> = Object.freeze({
  ...DEFAULT_SCOPE_LIMITS,
  sessionIdParams: SESSION_ID_PARAMS,
  sessionIdTokenParams: SESSION_ID_TOKEN_PARAMS,
});

/** Compiled host patterns: exact names and `*.suffix` wildcards. */
class HostSet {
  private readonly exact = new Set<string>();
  private readonly suffixes = new Set<string>();

  constructor(patterns: readonly string[], domains = false) {
    for (const raw of patterns) {
      if (typeof raw !== 'string') continue;
      const p = raw.trim().toLowerCase().replace(/\.$/, '');
      if (p.length === 0) continue;
      if (p.startsWith('*.')) this.suffixes.add(p.slice(2));
      else if (p.startsWith('.')) { this.exact.add(p.slice(1)); this.suffixes.add(p.slice(1)); }
      else {
        this.exact.add(p);
        if (domains) this.suffixes.add(p);
      }
    }
  }

  get empty(): boolean {
    return this.exact.size === 0 && this.suffixes.size === 0;
  }

  has(host: string): boolean {
    if (this.exact.has(host)) return true;
    if (this.suffixes.size === 0) return false;
    for (let i = host.indexOf('.'); i >= 0; i = host.indexOf('.', i + 1)) {
      if (this.suffixes.has(host.slice(i + 1))) return true;
    }
    return false;
  }
}

/** Host name without port, lower-cased, for scope matching. */
function bareHost(host: string): string {
  let h = hostWithoutPort(host);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h.toLowerCase();
}

export class ScopePolicy {
  readonly options: Readonly<ScopeOptions>;
  /** Links the parser's caller keeps per page (the rest: noteLinkCap). */
  readonly maxLinksPerPage: number;
  private readonly maxYear: number;
  private readonly schemePrefixes: string[];
  private readonly include: HostSet;
  private readonly domains: HostSet;
  private readonly exclude: HostSet;
  private readonly scoped: boolean;
  private readonly session: SessionIdMatcher;
  private readonly hosts: CountMin | null;
  private readonly patterns: CountMin | null;
  private readonly tally = new Float64Array(SCOPE_REASONS.length);
  private readonly reasonIndex = new Map<ScopeReason, number>(SCOPE_REASONS.map((r, i) => [r, i]));
  private readonly hostH = new Uint32Array(2);
  private readonly patternH = new Uint32Array(2);
  private readonly segs: Int32Array;
  private acceptedCount = 0;
  private strippedCount = 0;

  constructor(opts: Partial<ScopeOptions> = {}) {
    const o: ScopeOptions = { ...DEFAULT_SCOPE_OPTIONS, ...opts };
    this.options = Object.freeze(o);
    this.maxLinksPerPage = o.maxLinksPerPage;
    const year = o.currentYear ?? new Date().getUTCFullYear();
    this.maxYear = year + o.calendarYearsAhead;
    this.schemePrefixes = o.schemes.map((s) => s.toLowerCase() + ':');
    this.include = new HostSet(o.includeHosts);
    this.domains = new HostSet(o.domains, true);
    this.scoped = !this.include.empty || !this.domains.empty;
    this.exclude = new HostSet(o.excludeHosts);
    this.session = compileSessionIdMatcher(o.sessionIdParams, o.sessionIdTokenParams);
    this.hosts = Number.isFinite(o.hostBudget) ? new CountMin(o.counterSlots) : null;
    this.patterns = Number.isFinite(o.patternBudget) ? new CountMin(o.counterSlots) : null;
    this.segs = new Int32Array(2 * (Math.max(0, o.maxPathDepth) + 2));
  }

  /**
   * In `strip` mode, the URL without session ids (the same string when it has
   * none); in `reject` mode, the URL unchanged. Call before check() and before
   * the seen-set, so that session variants of one page are one URL.
   */
  rewrite(url: string): string {
    // Over-long URLs are left as they are: check() turns them away anyway.
    if (this.options.sessionIds !== 'strip' || typeof url !== 'string' || url.length > this.options.maxUrlLength) return url;
    const out = this.session.strip(url);
    if (out !== url) this.strippedCount++;
    return out;
  }

  /** rewrite() without counting: the form a URL is known by (the link graph names its nodes so, docs/graph.md). */
  rewriteQuiet(url: string): string {
    if (this.options.sessionIds !== 'strip' || typeof url !== 'string' || url.length > this.options.maxUrlLength) return url;
    return this.session.strip(url);
  }

  /** Static checks, then budgets (counted only when accepted). */
  check(url: string, host: string): ScopeVerdict {
    return this.checkStatic(url, host) ?? this.admit(url, host);
  }

  /** The stateless checks only (no budget is charged). Rejections are counted. */
  checkStatic(url: string, host: string): ScopeVerdict {
    const v = this.staticVerdict(url, host);
    if (v !== null) this.tally[this.reasonIndex.get(v)!]++;
    return v;
  }

  /**
   * The budgets only: turns the URL away if its host or its pattern has used
   * its budget, otherwise charges both and accepts. Call once per new URL.
   */
  admit(url: string, host: string): ScopeVerdict {
    const hh = this.hostH, ph = this.patternH;
    const hosts = this.hosts, patterns = this.patterns;
    if (hosts !== null) {
      hostHashes(host, hh);
      if (hosts.estimate(hh[0], hh[1]) >= this.options.hostBudget) return this.reject('host-budget');
    }
    if (patterns !== null) {
      patternHashes(url, host, ph);
      if (patterns.estimate(ph[0], ph[1]) >= this.options.patternBudget) return this.reject('pattern-budget');
    }
    if (hosts !== null) hosts.increment(hh[0], hh[1]);
    if (patterns !== null) patterns.increment(ph[0], ph[1]);
    this.acceptedCount++;
    return null;
  }

  /** Counts `dropped` links that a page had beyond maxLinksPerPage. */
  noteLinkCap(dropped: number): void {
    if (dropped > 0 && Number.isFinite(dropped)) this.tally[this.reasonIndex.get('link-cap')!] += Math.floor(dropped);
  }

  /** URLs turned away, by reason. */
  counts(): Record<ScopeReason, number> {
    const out = {} as Record<ScopeReason, number>;
    SCOPE_REASONS.forEach((r, i) => { out[r] = this.tally[i]; });
    return out;
  }

  /** URLs accepted by admit()/check(). */
  get accepted(): number {
    return this.acceptedCount;
  }

  /** URLs from which rewrite() removed a session id. */
  get sessionIdsStripped(): number {
    return this.strippedCount;
  }

  /** Estimated URLs accepted so far for the host / for the URL's pattern. */
  usage(url: string, host: string): { host: number; pattern: number; patternKey: string } {
    const hh = new Uint32Array(2), ph = new Uint32Array(2);
    hostHashes(host, hh);
    patternHashes(url, host, ph);
    return {
      host: this.hosts?.estimate(hh[0], hh[1]) ?? 0,
      pattern: this.patterns?.estimate(ph[0], ph[1]) ?? 0,
      patternKey: urlPattern(url, host),
    };
  }

  /** Budget counters, for persisting across restarts (opaque; same options to restore). */
  snapshot(): Uint32Array {
    const parts = [this.hosts?.snapshot(), this.patterns?.snapshot()];
    const len = parts.reduce((n, p) => n + (p?.length ?? 0), 0);
    const out = new Uint32Array(len);
    let o = 0;
    for (const p of parts) if (p) { out.set(p, o); o += p.length; }
    return out;
  }

  /** Restores snapshot(); false (nothing changed) if it does not fit these options. */
  restore(data: Uint32Array): boolean {
    const hl = this.hosts ? 2 * this.hosts.slots : 0;
    const pl = this.patterns ? 2 * this.patterns.slots : 0;
    if (data.length !== hl + pl) return false;
    if (this.hosts) this.hosts.restore(data.subarray(0, hl));
    if (this.patterns) this.patterns.restore(data.subarray(hl));
    return true;
  }

  private reject(r: ScopeReason): ScopeReason {
    this.tally[this.reasonIndex.get(r)!]++;
    return r;
  }

  private staticVerdict(url: string, host: string): ScopeVerdict {
    if (typeof url !== 'string' || typeof host !== 'string') return 'scheme';
    const o = this.options;
    // Scheme.
    let schemeOk = false;
    for (const p of this.schemePrefixes) {
      if (url.length > p.length && url.startsWith(p)) { schemeOk = true; break; }
    }
    if (!schemeOk) return 'scheme';
    if (url.length > o.maxUrlLength) return 'too-long';
    // Host scope.
    if (this.scoped || !this.exclude.empty) {
      const h = bareHost(host);
      if (this.scoped && !this.include.has(h) && !this.domains.has(h)) return 'out-of-scope';
      if (this.exclude.has(h)) return 'out-of-scope';
    }
    const pathStart = pathStartOf(url);
    if (this.session.test(url)) return 'session-id';
    // Path: depth and repeated segments.
    let end = url.length;
    for (let i = pathStart; i < url.length; i++) {
      const c = url.charCodeAt(i);
      if (c === 0x3f || c === 0x23) { end = i; break; }
    }
    const segs = this.segs;
    const maxSegs = segs.length >> 1;
    let depth = 0;
    let n = 0; // non-empty segments recorded
    for (let i = pathStart; i < end; i++) {
      if (url.charCodeAt(i) !== 0x2f) continue;
      let j = i + 1;
      while (j < end && url.charCodeAt(j) !== 0x2f) j++;
      if (j === end && j === i + 1) break; // trailing slash: not a segment
      depth++;
      if (depth > o.maxPathDepth) return 'too-deep';
      if (j > i + 1 && n < maxSegs) { segs[2 * n] = i + 1; segs[2 * n + 1] = j; n++; }
      i = j - 1;
    }
    if (n > o.maxSegmentRepeats) {
      for (let a = 0; a < n; a++) {
        const s = segs[2 * a], len = segs[2 * a + 1] - s;
        let seen = 1;
        for (let b = a + 1; b < n; b++) {
          const t = segs[2 * b];
          if (segs[2 * b + 1] - t !== len) continue;
          let k = 0;
          while (k < len && url.charCodeAt(s + k) === url.charCodeAt(t + k)) k++;
          if (k === len && ++seen > o.maxSegmentRepeats) return 'repeating-segments';
        }
      }
    }
    if (hasFarFutureDate(url, pathStart, this.maxYear)) return 'calendar-trap';
    return null;
  }
}
