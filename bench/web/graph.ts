// The synthetic web as pure data: hosts, pages, their kinds (ok, error,
// redirect, duplicate), links, robots.txt and sitemaps, all derived on demand
// from the seed. No I/O here: the server renders what this describes and the
// reachability oracle walks it.
import { hash4, Rng, seedToInt } from './prng.js';
import type {
  ErrorMix, RobotsSpec, SyntheticWebOptions, TrapOptions, UrlInfo, VariantKind,
} from './types.js';

export const enum Kind {
  Ok = 0,
  NotFound = 1,
  Redirect = 2,
  ServerError = 3,
  TooMany = 4,
  ExactDup = 5,
  NearDup = 6,
}

const KIND_NAMES: UrlInfo['kind'][] = ['page', 'notFound', 'redirect', 'serverError', 'tooMany', 'exactDup', 'nearDup'];

// Salts keep the independent random streams of one page apart.
const SALT_PLAN = 0x51a7;
const SALT_LINKS = 0x11c5;
const SALT_REDIR = 0x4ed1;
const SALT_SECTION = 0x5ec7;
const SALT_DATE = 0xda7e;

export interface Link {
  host: number;
  page: number;
  variant: VariantKind | null;
  nofollow: boolean;
  /** Seed for the anchor text. */
  anchor: number;
}

export interface RedirectInfo {
  /** Number of 3xx answers in the chain (1–3); hop 0 is the page URL itself. */
  length: number;
  /** Status of hop j (301 or 302). */
  codes: number[];
  /** Final target: another page, or null for the page's own moved copy at /m/<k>. */
  target: { host: number; page: number } | null;
}

interface HostPlan {
  pages: number;
  kinds: Uint8Array;
  /** Content source page of a duplicate, else -1. */
  src: Int32Array;
}

export type Route =
  | { t: 'page'; page: number }
  | { t: 'hop'; page: number; hop: number }
  | { t: 'moved'; page: number }
  | { t: 'robots' }
  | { t: 'robotsAlt' }
  | { t: 'sitemap' }
  | { t: 'missing' };

interface ResolvedRobots {
  status: number;
  body: string;
  location?: string;
  retryAfterSec?: number;
}

export const TRAP_NAMES = ['calendar', 'pager', 'slow', 'bomb', 'malformed', 'binary', 'loop'] as const;
export type TrapHost = (typeof TRAP_NAMES)[number];

const ALL_VARIANTS: VariantKind[] = ['case', 'dot', 'fragment', 'pct', 'tracking', 'defaultPort'];

/** Query parameters dropped by canonicalisation (and by ubicrawl's default normaliser). */
export function isTrackingParam(name: string): boolean {
  const n = name.toLowerCase();
  return n.startsWith('utm_') || n === 'gclid' || n === 'fbclid' || n === 'msclkid' || n === 'dclid' ||
    n === 'yclid' || n === 'mc_cid' || n === 'mc_eid';
}

function isUnreservedCode(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) ||
    c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e;
}

/** RFC 3986 §5.2.4 remove_dot_segments. */
export function removeDotSegments(path: string): string {
  if (path.indexOf('.') < 0) return path;
  const out: string[] = [];
  const segs = path.split('/');
  // segs[0] is '' for an absolute path.
  for (let i = 1; i < segs.length; i++) {
    const s = segs[i];
    if (s === '.') {
      if (i === segs.length - 1) out.push('');
    } else if (s === '..') {
      out.pop();
      if (i === segs.length - 1) out.push('');
    } else {
      out.push(s);
    }
  }
  return '/' + out.join('/');
}

/** RFC 3986 §6.2.2.1–2: decode percent-encoded unreserved characters, upper-case the remaining escapes. */
export function normalizePercent(s: string): string {
  if (s.indexOf('%') < 0) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25 && i + 2 < s.length) {
      const hex = s.slice(i + 1, i + 3);
      if (/^[0-9a-fA-F]{2}$/.test(hex)) {
        const v = parseInt(hex, 16);
        out += isUnreservedCode(v) ? String.fromCharCode(v) : '%' + hex.toUpperCase();
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

/**
 * Canonical form of a request target (path?query#frag): RFC 3986 §6.2.2
 * percent and dot-segment normalisation, fragment dropped, tracking
 * parameters removed. The fast path (plain paths) allocates nothing.
 */
export function canonicalTarget(target: string): string {
  let needs = false;
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c === 0x25 || c === 0x3f || c === 0x23) { needs = true; break; }
    if (c === 0x2e && i > 0 && target.charCodeAt(i - 1) === 0x2f) { needs = true; break; }
  }
  if (!needs) return target === '' ? '/' : target;
  let t = target;
  const hash = t.indexOf('#');
  if (hash >= 0) t = t.slice(0, hash);
  const q = t.indexOf('?');
  let path = q >= 0 ? t.slice(0, q) : t;
  let query = q >= 0 ? t.slice(q + 1) : null;
  path = removeDotSegments(normalizePercent(path || '/'));
  if (query !== null) {
    const kept = query.split('&').filter((p) => p !== '' && !isTrackingParam(normalizePercent(p.split('=')[0])));
    query = kept.length ? kept.map(normalizePercent).join('&') : null;
  }
  return query === null ? path : path + '?' + query;
}

/** Resolved, validated options with defaults applied. */
export interface GraphConfig {
  seed: number;
  hosts: number;
  outLinks: number;
  crossHostShare: number;
  pageMin: number;
  pageMax: number;
  sections: number;
  variantShare: number;
  variantKinds: VariantKind[];
  nofollowShare: number;
  errorMix: Required<ErrorMix>;
  redirectToExistingShare: number;
  nearDupShare: number;
  nearDupChangedWords: number;
  exactDupShare: number;
  sitemap: boolean;
  hostPrefix: string;
  hostSuffix: string;
  traps: Required<TrapOptions> | null;
}

function share(x: number | undefined, name: string): number {
  const v = x ?? 0;
  if (!(v >= 0 && v <= 1)) throw new RangeError(`${name} must be in [0, 1], got ${x}`);
  return v;
}

export function resolveConfig(o: SyntheticWebOptions): GraphConfig {
  const hosts = o.hosts ?? 10;
  if (!Number.isInteger(hosts) || hosts < 1) throw new RangeError(`hosts must be a positive integer, got ${o.hosts}`);
  const pb = o.pageBytes ?? { min: 10240, max: 30720 };
  const pageMin = typeof pb === 'number' ? pb : pb.min;
  const pageMax = typeof pb === 'number' ? pb : pb.max;
  if (!(pageMin >= 0 && pageMax >= pageMin)) throw new RangeError('pageBytes: need 0 <= min <= max');
  const em = o.errorMix ?? {};
  const errorMix = {
    notFound: share(em.notFound, 'errorMix.notFound'),
    redirect: share(em.redirect, 'errorMix.redirect'),
    serverError: share(em.serverError, 'errorMix.serverError'),
    tooMany: share(em.tooMany, 'errorMix.tooMany'),
  };
  let traps: Required<TrapOptions> | null = null;
  if (o.traps) {
    const t: TrapOptions = o.traps === true ? {} : o.traps;
    traps = {
      calendar: t.calendar ?? true,
      pager: t.pager ?? true,
      slowForever: t.slowForever ?? true,
      trickleMs: t.trickleMs ?? 100,
      gzipBomb: t.gzipBomb ?? true,
      gzipBombBytes: t.gzipBombBytes ?? 1024 * 1024 * 1024,
      malformedHtml: t.malformedHtml ?? true,
      nonHtml: t.nonHtml ?? true,
      redirectLoop: t.redirectLoop ?? true,
      linkFromRoot: t.linkFromRoot ?? true,
    };
  }
  const outLinks = o.outLinks ?? 8;
  if (!Number.isInteger(outLinks) || outLinks < 0) throw new RangeError('outLinks must be a non-negative integer');
  return {
    seed: seedToInt(o.seed ?? 1),
    hosts,
    outLinks,
    crossHostShare: share(o.crossHostShare ?? 0.2, 'crossHostShare'),
    pageMin,
    pageMax,
    sections: Math.max(0, Math.floor(o.sections ?? 0)),
    variantShare: share(o.variantShare, 'variantShare'),
    variantKinds: o.variantKinds && o.variantKinds.length ? [...o.variantKinds] : ALL_VARIANTS,
    nofollowShare: share(o.nofollowShare, 'nofollowShare'),
    errorMix,
    redirectToExistingShare: share(o.redirectToExistingShare ?? 0.5, 'redirectToExistingShare'),
    nearDupShare: share(o.nearDupShare, 'nearDupShare'),
    nearDupChangedWords: Math.max(0, Math.floor(o.nearDupChangedWords ?? 0)),
    exactDupShare: share(o.exactDupShare, 'exactDupShare'),
    sitemap: o.sitemap ?? true,
    hostPrefix: (o.hostPrefix ?? 'h').toLowerCase(),
    hostSuffix: (o.hostSuffix ?? 'web.test').toLowerCase(),
    traps,
  };
}

/** Parses a decimal page number at s[from..to) with no sign and no leading zero; -1 if not one. */
function parseIndex(s: string, from: number, to: number): number {
  if (to <= from || to - from > 9) return -1;
  if (s.charCodeAt(from) === 0x30 && to - from > 1) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i) - 0x30;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/** The mixed robots.txt rotation (docs/synthetic-web.md lists what each one tests). */
function mixedRobots(i: number, sitemapLine: string, sections: number): RobotsSpec {
  switch (i % 10) {
    case 0: return `User-agent: *\nDisallow:\n${sitemapLine}`;
    case 1: return `User-agent: *\r\nDisallow: /p/1\r\n${sitemapLine.replaceAll('\n', '\r\n')}`;
    case 2: return `User-agent: ubicrawl\nDisallow: /p/2\n\nUser-agent: *\nDisallow: /\n${sitemapLine}`;
    case 3: return `\ufeff# pages ending in 3 are off limits, except /p/13\nUser-agent: *\nDisallow: /*3$ # wildcard + anchor\nAllow: /p/13$\n${sitemapLine}`;
    case 4: return { status: 404, body: 'not here' };
    case 5: return { status: 503, body: 'busy', retryAfterSec: 5 };
    case 6: return { status: 301, location: '/robots-real.txt', body: `User-agent: *\nDisallow: /p/4\n${sitemapLine}` };
    case 7: return 'User-agent: other-bot\nDisallow: /\n\nUser-agent: UbiCrawl\nDisallow: /p/3\n\n' +
      `User-agent: *\nDisallow: /p/\n\nuser-agent: ubicrawl\nDisallow: /p/5\n${sitemapLine}`;
    case 8: return `User-agent: *\nDisallow: /p/%36\nDisallow: /%70/7\n${sections > 0 ? 'Disallow: /s%30/\n' : ''}${sitemapLine}`;
    default: return `User-agent: *\nAllow: /$\nDisallow: /\n${sitemapLine}`;
  }
}

export class WebGraph {
  readonly cfg: GraphConfig;
  readonly port: number;
  /** `:PORT`, or '' for port 80 (RFC 3986 §6.2.3: the default port is omitted). */
  readonly portSuffix: string;
  private readonly dotSuffix: string;
  private readonly pagesFn: ((i: number) => number) | null;
  private readonly pagesFixed: number;
  private readonly pageCounts: Int32Array | null;
  private readonly plans: (HostPlan | undefined)[];
  private readonly origins: (string | undefined)[];
  private readonly names: (string | undefined)[];
  private readonly robotsOpt: SyntheticWebOptions['robots'];
  private readonly robotsCache: (ResolvedRobots | undefined)[];
  readonly trapHosts: Map<string, TrapHost> = new Map();

  constructor(options: SyntheticWebOptions, port: number) {
    this.cfg = resolveConfig(options);
    this.port = port;
    this.portSuffix = port === 80 ? '' : ':' + port;
    this.dotSuffix = '.' + this.cfg.hostSuffix;
    const p = options.pagesPerHost ?? 20;
    if (typeof p === 'function') {
      this.pagesFn = p;
      this.pagesFixed = 0;
      this.pageCounts = new Int32Array(this.cfg.hosts).fill(-1);
    } else {
      if (!Number.isInteger(p) || p < 1) throw new RangeError(`pagesPerHost must be a positive integer, got ${p}`);
      this.pagesFn = null;
      this.pagesFixed = p;
      this.pageCounts = null;
    }
    this.plans = new Array(this.cfg.hosts);
    this.origins = new Array(this.cfg.hosts);
    this.names = new Array(this.cfg.hosts);
    this.robotsOpt = options.robots ?? 'allow';
    this.robotsCache = new Array(this.cfg.hosts);
    const t = this.cfg.traps;
    if (t) {
      const on: Record<TrapHost, boolean> = {
        calendar: t.calendar, pager: t.pager, slow: t.slowForever, bomb: t.gzipBomb, malformed: t.malformedHtml,
        binary: t.nonHtml, loop: t.redirectLoop,
      };
      for (const name of TRAP_NAMES) if (on[name]) this.trapHosts.set(this.trapHostName(name), name);
    }
  }

  get hosts(): number {
    return this.cfg.hosts;
  }

  pages(i: number): number {
    if (this.pagesFn === null) return this.pagesFixed;
    const c = this.pageCounts!;
    if (c[i] < 0) {
      const n = Math.floor(this.pagesFn(i));
      c[i] = n >= 1 ? n : 1;
    }
    return c[i];
  }

  /** Total number of graph pages (page URLs; redirect hops and moved copies not included). */
  totalPages(): number {
    let n = 0;
    for (let i = 0; i < this.cfg.hosts; i++) n += this.pages(i);
    return n;
  }

  hostName(i: number): string {
    let n = this.names[i];
    if (n === undefined) n = this.names[i] = `${this.cfg.hostPrefix}${i}${this.dotSuffix}`;
    return n;
  }

  trapHostName(t: TrapHost): string {
    return `trap-${t}${this.dotSuffix}`;
  }

  /** Index of a graph host from its lower-case name without port, or -1. */
  hostIndex(name: string): number {
    const pre = this.cfg.hostPrefix;
    if (!name.endsWith(this.dotSuffix) || !name.startsWith(pre)) return -1;
    const n = parseIndex(name, pre.length, name.length - this.dotSuffix.length);
    return n >= 0 && n < this.cfg.hosts ? n : -1;
  }

  origin(i: number): string {
    let o = this.origins[i];
    if (o === undefined) o = this.origins[i] = `http://${this.hostName(i)}${this.portSuffix}`;
    return o;
  }

  originOf(hostName: string): string {
    return `http://${hostName}${this.portSuffix}`;
  }

  /** Kind of page k of host i (page 0, the root, is always Ok). */
  kind(i: number, k: number): Kind {
    return this.plan(i).kinds[k] as Kind;
  }

  /** Page whose article a duplicate shows, or k itself. */
  contentSource(i: number, k: number): number {
    const s = this.plan(i).src[k];
    return s >= 0 ? s : k;
  }

  private plan(i: number): HostPlan {
    let p = this.plans[i];
    if (p !== undefined) return p;
    const n = this.pages(i);
    const kinds = new Uint8Array(n);
    const src = new Int32Array(n).fill(-1);
    const rng = new Rng(hash4(this.cfg.seed, i, 0, SALT_PLAN));
    // A seeded shuffle of pages 1..n-1, then exact per-host counts taken in
    // order: shares hold per host up to one page (stochastic rounding keeps
    // the expectation exact when share × pages is not an integer).
    const perm = new Int32Array(n - 1);
    for (let j = 0; j < n - 1; j++) perm[j] = j + 1;
    for (let j = n - 2; j > 0; j--) {
      const r = rng.int(j + 1);
      const t = perm[j]; perm[j] = perm[r]; perm[r] = t;
    }
    const em = this.cfg.errorMix;
    const wanted: [Kind, number][] = [
      [Kind.NotFound, em.notFound], [Kind.Redirect, em.redirect], [Kind.ServerError, em.serverError],
      [Kind.TooMany, em.tooMany], [Kind.ExactDup, this.cfg.exactDupShare], [Kind.NearDup, this.cfg.nearDupShare],
    ];
    let at = 0;
    for (const [kind, s] of wanted) {
      const x = s * (n - 1);
      let c = Math.floor(x);
      if (rng.next() < x - c) c++;
      for (let j = 0; j < c && at < n - 1; j++) kinds[perm[at++]] = kind;
    }
    const ok: number[] = [];
    for (let k = 0; k < n; k++) if (kinds[k] === Kind.Ok) ok.push(k);
    for (let k = 0; k < n; k++) {
      if (kinds[k] === Kind.ExactDup || kinds[k] === Kind.NearDup) src[k] = ok[rng.int(ok.length)];
    }
    p = { pages: n, kinds, src };
    this.plans[i] = p;
    return p;
  }

  /** Section of page k (-1: top level /p/k). */
  section(i: number, k: number): number {
    const s = this.cfg.sections;
    if (s === 0 || k === 0) return -1;
    return (hash4(this.cfg.seed, i, k, SALT_SECTION) % (s + 1)) - 1;
  }

  /** Canonical path of page k. */
  pagePath(i: number, k: number): string {
    if (k === 0) return '/';
    const s = this.section(i, k);
    return s < 0 ? `/p/${k}` : `/s${s}/p/${k}`;
  }

  pageUrl(i: number, k: number): string {
    return this.origin(i) + this.pagePath(i, k);
  }

  /**
   * Article links of page k (its own, not its content source's). The random
   * draws do not depend on the variant/nofollow shares, so turning those on
   * changes how links are written, never where they point.
   */
  links(i: number, k: number): Link[] {
    const c = this.cfg;
    const rng = new Rng(hash4(c.seed, i, k, SALT_LINKS));
    const out: Link[] = new Array(c.outLinks);
    for (let j = 0; j < c.outLinks; j++) {
      const crossDraw = rng.next();
      const hostDraw = rng.u32();
      const cross = c.hosts > 1 && crossDraw < c.crossHostShare;
      const ti = cross ? (i + 1 + (hostDraw % (c.hosts - 1))) % c.hosts : i;
      const tk = rng.int(this.pages(ti));
      const vDraw = rng.next();
      const vPick = rng.u32();
      const nfDraw = rng.next();
      out[j] = {
        host: ti,
        page: tk,
        variant: vDraw < c.variantShare ? c.variantKinds[vPick % c.variantKinds.length] : null,
        nofollow: nfDraw < c.nofollowShare,
        anchor: rng.u32(),
      };
    }
    return out;
  }

  redirect(i: number, k: number): RedirectInfo {
    const c = this.cfg;
    const rng = new Rng(hash4(c.seed, i, k, SALT_REDIR));
    const length = 1 + rng.int(3);
    const codes: number[] = [];
    for (let j = 0; j < length; j++) codes.push(rng.next() < 0.5 ? 301 : 302);
    const toExisting = rng.next() < c.redirectToExistingShare;
    const crossDraw = rng.next();
    const hostDraw = rng.u32();
    const pageDraw = rng.u32();
    let target: RedirectInfo['target'] = null;
    if (toExisting) {
      const cross = c.hosts > 1 && crossDraw < c.crossHostShare;
      const ti = cross ? (i + 1 + (hostDraw % (c.hosts - 1))) % c.hosts : i;
      const tk = pageDraw % this.pages(ti);
      if (!(ti === i && tk === k)) target = { host: ti, page: tk };
    }
    return { length, codes, target };
  }

  /** Absolute Location of hop j of page k's redirect chain. */
  redirectLocation(i: number, k: number, hop: number, r: RedirectInfo = this.redirect(i, k)): string {
    if (hop + 1 < r.length) return `${this.origin(i)}${this.hopPath(k, hop + 1)}`;
    return r.target ? this.pageUrl(r.target.host, r.target.page) : `${this.origin(i)}/m/${k}`;
  }

  /**
   * Location header as sent: intermediate hops use a relative reference
   * (RFC 9110 §10.2.2 allows it), the final target an absolute URL, so
   * crawlers must resolve both kinds.
   */
  redirectWireLocation(i: number, k: number, hop: number, r: RedirectInfo = this.redirect(i, k)): string {
    if (hop + 1 < r.length) return this.hopPath(k, hop + 1);
    return this.redirectLocation(i, k, hop, r);
  }

  private hopPath(k: number, n: number): string {
    return `/r/${k}/${n}`;
  }

  /** Static Last-Modified of a page that never changes: a fixed date in 2024. */
  staticLastModified(i: number, k: number): number {
    return Date.UTC(2024, 0, 1) + (hash4(this.cfg.seed, i, k, SALT_DATE) % 365) * 86400000;
  }

  robots(i: number): ResolvedRobots {
    let r = this.robotsCache[i];
    if (r !== undefined) return r;
    const sitemapLine = this.cfg.sitemap ? `\nSitemap: ${this.origin(i)}/sitemap.xml\n` : '';
    const def = `User-agent: *\nDisallow:\n${sitemapLine}`;
    const o = this.robotsOpt;
    let spec: RobotsSpec | undefined;
    if (o === undefined || o === 'allow') spec = def;
    else if (o === 'mixed') spec = mixedRobots(i, sitemapLine, this.cfg.sections);
    else if (typeof o === 'function') spec = o(this.hostName(i), i) ?? def;
    else spec = o;
    r = typeof spec === 'string' ? { status: 200, body: spec } : {
      status: spec.status, body: spec.body ?? '', location: spec.location, retryAfterSec: spec.retryAfterSec,
    };
    this.robotsCache[i] = r;
    return r;
  }

  /** Same-host path that serves the body of a redirecting robots.txt, if any. */
  robotsAltPath(i: number): string | null {
    const r = this.robots(i);
    if (r.status < 300 || r.status >= 400 || !r.location || !r.location.startsWith('/')) return null;
    return r.location;
  }

  /**
   * Routes a canonical path (no query) on graph host i. Unknown or
   * non-canonical paths are 'missing' (404).
   */
  route(i: number, path: string): Route {
    const len = path.length;
    if (len === 1 && path === '/') return { t: 'page', page: 0 };
    const c1 = path.charCodeAt(1);
    if (len > 3 && path.charCodeAt(2) === 0x2f) {
      if (c1 === 0x70 /* p */) {
        const k = parseIndex(path, 3, len);
        if (k > 0 && k < this.pages(i) && this.section(i, k) < 0) return { t: 'page', page: k };
        return { t: 'missing' };
      }
      if (c1 === 0x72 /* r */) {
        const slash = path.indexOf('/', 3);
        if (slash < 0) return { t: 'missing' };
        const k = parseIndex(path, 3, slash);
        const hop = parseIndex(path, slash + 1, len);
        if (k > 0 && k < this.pages(i) && hop > 0 && this.kind(i, k) === Kind.Redirect &&
            hop < this.redirect(i, k).length) return { t: 'hop', page: k, hop };
        return { t: 'missing' };
      }
      if (c1 === 0x6d /* m */) {
        const k = parseIndex(path, 3, len);
        if (k > 0 && k < this.pages(i) && this.kind(i, k) === Kind.Redirect && this.redirect(i, k).target === null) {
          return { t: 'moved', page: k };
        }
        return { t: 'missing' };
      }
    }
    if (c1 === 0x73 /* s */ && this.cfg.sections > 0) {
      const slash = path.indexOf('/', 2);
      if (slash > 2 && path.startsWith('/p/', slash)) {
        const s = parseIndex(path, 2, slash);
        const k = parseIndex(path, slash + 3, len);
        if (s >= 0 && k > 0 && k < this.pages(i) && this.section(i, k) === s) return { t: 'page', page: k };
      }
    }
    if (path === '/robots.txt') return { t: 'robots' };
    if (path === '/sitemap.xml' && this.cfg.sitemap) return { t: 'sitemap' };
    if (path === this.robotsAltPath(i)) return { t: 'robotsAlt' };
    return { t: 'missing' };
  }

  /** Sitemap 0.90 urlset of host i: every page URL of the host. */
  sitemapXml(i: number, changefreq: (path: string) => string | null): string {
    const parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'];
    const n = this.pages(i);
    for (let k = 0; k < n; k++) {
      const path = this.pagePath(i, k);
      const cf = changefreq(path);
      const lm = new Date(this.staticLastModified(i, k)).toISOString().slice(0, 10);
      parts.push(`<url><loc>${this.origin(i)}${path}</loc>${cf ? `<changefreq>${cf}</changefreq>` : `<lastmod>${lm}</lastmod>`}</url>\n`);
    }
    parts.push('</urlset>\n');
    return parts.join('');
  }

  /** Entry URLs of the enabled traps. */
  trapEntryUrls(): Record<string, string> {
    const out: Record<string, string> = {};
    const t = this.cfg.traps;
    if (!t) return out;
    const o = (h: TrapHost): string => this.originOf(this.trapHostName(h));
    if (t.calendar) out.calendar = `${o('calendar')}/cal/2024/01/01`;
    if (t.pager) {
      out.pager = `${o('pager')}/list?page=1`;
      out.sessionIds = `${o('pager')}/shop?sid=0`;
    }
    if (t.slowForever) out.slowForever = `${o('slow')}/slow-forever`;
    if (t.gzipBomb) out.gzipBomb = `${o('bomb')}/bomb.html`;
    if (t.malformedHtml) out.malformedHtml = `${o('malformed')}/`;
    if (t.nonHtml) {
      out.pdf = `${o('binary')}/doc.pdf`;
      out.image = `${o('binary')}/image.png`;
      out.binaryAsHtml = `${o('binary')}/garbage.html`;
    }
    if (t.redirectLoop) {
      out.redirectLoop = `${o('loop')}/loop/a`;
      out.selfRedirect = `${o('loop')}/self`;
      out.endlessRedirects = `${o('loop')}/chain/1`;
    }
    return out;
  }

  /** Trap URLs linked from the root of host 0 (empty unless traps.linkFromRoot). */
  rootTrapLinks(i: number, src: number): string[] {
    if (i !== 0 || src !== 0 || !this.cfg.traps || !this.cfg.traps.linkFromRoot) return [];
    return Object.values(this.trapEntryUrls());
  }

  /** Canonical URL of a link's target. */
  linkUrl(l: Link): string {
    return this.pageUrl(l.host, l.page);
  }

  /**
   * The oracle's view of a URL: status, kind, canonical links. Robots and
   * sitemap bodies are not parsed here. Returns null for URLs outside the
   * synthetic web (other ports, schemes, unparsable).
   */
  describe(url: string): UrlInfo | null {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return null;
    }
    if (u.protocol !== 'http:') return null;
    const port = u.port === '' ? 80 : Number(u.port);
    if (port !== this.port) return null;
    const host = u.hostname.toLowerCase();
    const canon = this.originOf(host) + canonicalTarget(u.pathname + u.search);
    if (this.trapHosts.has(host)) return { url: canon, status: 0, kind: 'trap', links: [] };
    const i = this.hostIndex(host);
    if (i < 0) return { url: canon, status: 404, kind: 'missing', links: [] };
    return this.describeAt(i, canonicalTarget(u.pathname + u.search), canon);
  }

  /** describe() for graph host i and an already canonical target (path?query) whose full URL is `canon`. */
  describeAt(i: number, target: string, canon: string): UrlInfo {
    const q = target.indexOf('?');
    const path = q >= 0 ? target.slice(0, q) : target;
    const r = this.route(i, path);
    switch (r.t) {
      case 'robots': {
        const rb = this.robots(i);
        return { url: canon, status: rb.status, kind: 'robots', links: [],
          ...(rb.location ? { location: new URL(rb.location, canon).href } : {}) };
      }
      case 'robotsAlt': return { url: canon, status: 200, kind: 'robots', links: [] };
      case 'sitemap': return { url: canon, status: 200, kind: 'sitemap', links: [] };
      case 'missing': return { url: canon, status: 404, kind: 'missing', links: [] };
      case 'hop': {
        const ri = this.redirect(i, r.page);
        return { url: canon, status: ri.codes[r.hop], kind: 'redirect', links: [],
          location: this.redirectLocation(i, r.page, r.hop, ri) };
      }
      case 'moved': return { url: canon, status: 200, kind: 'moved', links: this.pageLinks(i, r.page, r.page) };
      case 'page': {
        const k = r.page;
        const kind = this.kind(i, k);
        switch (kind) {
          case Kind.Ok:
          case Kind.ExactDup:
          case Kind.NearDup:
            return { url: canon, status: 200, kind: KIND_NAMES[kind], links: this.pageLinks(i, k, this.contentSource(i, k)) };
          case Kind.Redirect: {
            const ri = this.redirect(i, k);
            return { url: canon, status: ri.codes[0], kind: 'redirect', links: [], location: this.redirectLocation(i, k, 0, ri) };
          }
          case Kind.NotFound: return { url: canon, status: 404, kind: 'notFound', links: [] };
          case Kind.ServerError: return { url: canon, status: 500, kind: 'serverError', links: [] };
          case Kind.TooMany:
            return { url: canon, status: 429, kind: 'tooMany', links: [], linksOnceServed: this.pageLinks(i, k, k) };
        }
      }
    }
    throw new Error('unreachable route');
  }

  /** Links of an HTML page as rendered: nav link to `/`, article links of its content source `src`, trap links. */
  pageLinks(i: number, _k: number, src: number): { url: string; nofollow: boolean }[] {
    const out = [{ url: this.origin(i) + '/', nofollow: false }];
    for (const l of this.links(i, src)) out.push({ url: this.linkUrl(l), nofollow: l.nofollow });
    for (const t of this.rootTrapLinks(i, src)) out.push({ url: t, nofollow: false });
    return out;
  }

  /** Planted duplicates: `url` shows the same article as `of` (exact: identical bytes). */
  duplicates(): { exact: { url: string; of: string }[]; near: { url: string; of: string }[] } {
    const exact: { url: string; of: string }[] = [];
    const near: { url: string; of: string }[] = [];
    for (let i = 0; i < this.cfg.hosts; i++) {
      const p = this.plan(i);
      for (let k = 0; k < p.pages; k++) {
        if (p.kinds[k] === Kind.ExactDup) exact.push({ url: this.pageUrl(i, k), of: this.pageUrl(i, p.src[k]) });
        else if (p.kinds[k] === Kind.NearDup) near.push({ url: this.pageUrl(i, k), of: this.pageUrl(i, p.src[k]) });
      }
    }
    return { exact, near };
  }
}
