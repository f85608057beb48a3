// The coverage oracle: which URLs a correct crawler fetches, by breadth-first
// search over the synthetic web as the server would answer it. Definitions
// (docs/synthetic-web.md, 'What "reachable" means'):
//  - a URL is fetched when it is a seed, a link target on a fetched 200 HTML
//    page, or the Location of a fetched 3xx (redirects are followed as new
//    URLs, each hop is one fetch);
//  - 404/500/429 answers are fetched but have no links;
//  - robots.txt and sitemap.xml fetches are not part of the sets;
//  - trap URLs are reported in `traps`, never in the sets;
//  - the obeying crawl neither fetches nor expands a URL its host's
//    robots.txt disallows for the user agent (RFC 9309, via RobotsOracle).
import { RobotsOracle } from './robots-oracle.js';
import { Kind, type RedirectInfo, type WebGraph } from './graph.js';
import type { Reachability, ReachableOptions } from './types.js';

const MAX_ROBOTS_REDIRECTS = 5; // RFC 9309 §2.3.1.2

/** Whether a fetch of robots.txt ends as: rules (2xx), allow-all (4xx, too many redirects) or disallow-all (5xx). */
type RobotsOutcome = { rules: RobotsOracle } | 'allowAll' | 'disallowAll';

function robotsOutcome(g: WebGraph, host: number): RobotsOutcome {
  let url = g.origin(host) + '/robots.txt';
  for (let hops = 0; hops <= MAX_ROBOTS_REDIRECTS; hops++) {
    const u = new URL(url);
    const i = g.hostIndex(u.hostname);
    const port = u.port === '' ? 80 : Number(u.port);
    if (i < 0 || port !== g.port) {
      // Outside the graph: trap hosts answer an allow-all robots.txt; anything else is unreachable.
      if (g.trapHosts.has(u.hostname) && u.pathname === '/robots.txt' && port === g.port) return 'allowAll';
      return 'disallowAll';
    }
    const r = g.route(i, u.pathname);
    if (r.t === 'robotsAlt') return { rules: RobotsOracle.parse(g.robots(i).body) };
    if (r.t !== 'robots') return 'allowAll'; // 404 from the missing route
    const spec = g.robots(i);
    if (spec.status >= 200 && spec.status < 300) return { rules: RobotsOracle.parse(spec.body) };
    if (spec.status >= 300 && spec.status < 400 && spec.location) {
      url = new URL(spec.location, url).href;
      continue;
    }
    if (spec.status >= 500) return 'disallowAll'; // §2.3.1.4: unreachable → complete disallow
    return 'allowAll'; // §2.3.1.3: unavailable (4xx) → may crawl anything
  }
  return 'allowAll'; // §2.3.1.2: more than five redirects MAY be treated as unavailable
}

/** Splits a canonical URL of the web into (host index, path?query), or null. */
function locate(g: WebGraph, url: string): { host: number; target: string } | null {
  if (!url.startsWith('http://')) return null;
  const slash = url.indexOf('/', 7);
  const authority = slash < 0 ? url.slice(7) : url.slice(7, slash);
  const colon = authority.lastIndexOf(':');
  const name = colon >= 0 ? authority.slice(0, colon) : authority;
  const port = colon >= 0 ? Number(authority.slice(colon + 1)) : 80;
  if (port !== g.port) return null;
  const i = g.hostIndex(name);
  if (i < 0) return null;
  return { host: i, target: slash < 0 ? '/' : url.slice(slash) };
}

export function computeReachable(g: WebGraph, opts: ReachableOptions = {}): Reachability {
  const agent = opts.userAgent ?? 'ubicrawl';
  const seeds = opts.seeds ?? Array.from({ length: g.hosts }, (_, i) => g.pageUrl(i, 0));
  const robots = new Map<number, RobotsOutcome>();
  const allowed = (host: number, target: string): boolean => {
    let o = robots.get(host);
    if (o === undefined) {
      o = robotsOutcome(g, host);
      robots.set(host, o);
    }
    if (o === 'allowAll') return true;
    if (o === 'disallowAll') return target === '/robots.txt';
    return o.rules.isAllowed(target, agent);
  };

  const status = new Map<string, number>();
  const redirects = new Set<string>();
  const errors = new Set<string>();
  const traps = new Set<string>();

  // Graph nodes are numbered, not named, during the search: building and
  // hashing URL strings for every link dominated the cost at 10^5+ pages.
  // key = (first[host] + page) * 4 + t, t: 0 page, 1 moved copy, 2/3 redirect hop 1/2;
  // dense, so `seen` is a byte array.
  const first = new Float64Array(g.hosts + 1);
  for (let i = 0; i < g.hosts; i++) first[i + 1] = first[i] + g.pages(i);
  const nodeCount = first[g.hosts] * 4;
  const key = (i: number, k: number, t: number): number => (first[i] + k) * 4 + t;
  /** Host of a dense page index (binary search over `first`). */
  const hostOf = (gk: number): number => {
    let lo = 0;
    let hi = g.hosts - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (first[mid] <= gk) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const nodeUrl = (i: number, k: number, t: number): string =>
    t === 0 ? g.pageUrl(i, k) : t === 1 ? `${g.origin(i)}/m/${k}` : `${g.origin(i)}/r/${k}/${t - 1}`;
  const finalKey = (i: number, k: number, r: RedirectInfo): number =>
    (r.target ? key(r.target.host, r.target.page, 0) : key(i, k, 1));
  /** Node key of a canonical URL of the graph, or -1 (other routes, queries, foreign URLs). */
  const urlKey = (url: string): number => {
    const loc = locate(g, url);
    if (loc === null || loc.target.indexOf('?') >= 0) return -1;
    const r = g.route(loc.host, loc.target);
    if (r.t === 'page') return key(loc.host, r.page, 0);
    if (r.t === 'moved') return key(loc.host, r.page, 1);
    if (r.t === 'hop') return key(loc.host, r.page, 1 + r.hop);
    return -1;
  };
  const trapLinks = g.rootTrapLinks(0, 0);

  const crawl = (obey: boolean): { fetched: Set<string>; disallowed: Set<string>; touched: Set<string> } => {
    const fetched = new Set<string>();
    const disallowed = new Set<string>();
    const touched = new Set<string>();
    const seen = new Uint8Array(nodeCount);
    const queue: number[] = [];
    const sitemapDone = new Set<number>();
    const push = (k: number): void => {
      if (seen[k] !== 0) return;
      seen[k] = 1;
      queue.push(k);
    };
    const pushLinks = (i: number, src: number): void => {
      push(key(i, 0, 0)); // the nav link to /
      for (const l of g.links(i, src)) {
        if (opts.obeyNofollow && l.nofollow) continue;
        push(key(l.host, l.page, 0));
      }
      if (i === 0 && src === 0) for (const t of trapLinks) traps.add(t);
    };
    const visit = (i: number, url: string, path: string): boolean => {
      touched.add(g.hostName(i));
      if (obey && !allowed(i, path)) {
        disallowed.add(url);
        return false;
      }
      if (opts.viaSitemaps && !sitemapDone.has(i)) {
        sitemapDone.add(i);
        if (g.cfg.sitemap && (!obey || allowed(i, '/sitemap.xml'))) {
          for (let k = 0; k < g.pages(i); k++) push(key(i, k, 0));
        }
      }
      fetched.add(url);
      return true;
    };
    const record = (url: string, st: number): void => {
      status.set(url, st);
      if (st >= 300 && st < 400) redirects.add(url);
      else if (st >= 400) errors.add(url);
    };
    for (const s of seeds) {
      const info = g.describe(s);
      if (info === null) continue;
      if (info.kind === 'trap') {
        traps.add(info.url);
        continue;
      }
      const k = urlKey(info.url);
      if (k >= 0) {
        push(k);
        continue;
      }
      // A seed outside the page graph (a query, robots.txt, a 404 path): fetched, and its links followed.
      const loc = locate(g, info.url);
      if (loc === null || !visit(loc.host, info.url, loc.target)) continue;
      record(info.url, info.status);
      const links = opts.tooManyRecovers && info.linksOnceServed ? info.linksOnceServed : info.links;
      for (const l of links) {
        if (opts.obeyNofollow && l.nofollow) continue;
        const lk = urlKey(l.url);
        if (lk >= 0) push(lk);
        else traps.add(l.url);
      }
      if (info.location) {
        const lk = urlKey(info.location);
        if (lk >= 0) push(lk);
      }
    }
    for (let qi = 0; qi < queue.length; qi++) {
      const n = queue[qi];
      const t = n % 4;
      const gk = (n - t) / 4;
      const i = hostOf(gk);
      const k = gk - first[i];
      const url = nodeUrl(i, k, t);
      if (!visit(i, url, url.slice(g.origin(i).length))) continue;
      if (t === 1) {
        record(url, 200);
        pushLinks(i, k);
        continue;
      }
      if (t >= 2) {
        const r = g.redirect(i, k);
        const hop = t - 1;
        record(url, r.codes[hop]);
        push(hop + 1 < r.length ? key(i, k, t + 1) : finalKey(i, k, r));
        continue;
      }
      switch (g.kind(i, k)) {
        case Kind.Ok:
        case Kind.ExactDup:
        case Kind.NearDup:
          record(url, 200);
          pushLinks(i, g.contentSource(i, k));
          break;
        case Kind.Redirect: {
          const r = g.redirect(i, k);
          record(url, r.codes[0]);
          push(r.length > 1 ? key(i, k, 2) : finalKey(i, k, r));
          break;
        }
        case Kind.NotFound:
          record(url, 404);
          break;
        case Kind.ServerError:
          record(url, 500);
          break;
        case Kind.TooMany:
          record(url, 429);
          if (opts.tooManyRecovers) pushLinks(i, k);
          break;
      }
    }
    return { fetched, disallowed, touched };
  };

  const all = crawl(false);
  const obeying = crawl(true);
  return {
    reachable: all.fetched,
    reachableAllowed: obeying.fetched,
    disallowed: obeying.disallowed,
    status,
    redirects,
    errors,
    hostsTouched: obeying.touched,
    traps,
  };
}
