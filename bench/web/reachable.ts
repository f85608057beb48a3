// The coverage oracle: which URLs a correct crawler fetches, by breadth-first
// search over the synthetic web as the server would answer it. Definitions
// (docs/synthetic-web.md, "What reachable means"):
//  - a URL is fetched when it is a seed, a link target on a fetched 200 HTML
//    page, or the Location of a fetched 3xx (redirects are followed as new
//    URLs, each hop is one fetch);
//  - 404/500/429 answers are fetched but have no links;
//  - robots.txt and sitemap.xml fetches are not part of the sets;
//  - trap URLs are reported in `traps`, never in the sets;
//  - the obeying crawl neither fetches nor expands a URL its host's
//    robots.txt disallows for the user agent (RFC 9309, via RobotsOracle).
import { RobotsOracle } from './robots-oracle.js';
import type { WebGraph } from './graph.js';
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

  const crawl = (obey: boolean): { fetched: Set<string>; disallowed: Set<string>; touched: Set<string> } => {
    const fetched = new Set<string>();
    const disallowed = new Set<string>();
    const touched = new Set<string>();
    const seen = new Set<string>();
    const queue: string[] = [];
    const sitemapDone = new Set<number>();
    const push = (url: string): void => {
      if (seen.has(url)) return;
      seen.add(url);
      queue.push(url);
    };
    for (const s of seeds) {
      const info = g.describe(s);
      if (info) push(info.url);
    }
    for (let qi = 0; qi < queue.length; qi++) {
      const url = queue[qi];
      const loc = locate(g, url);
      if (loc === null) {
        if (g.describe(url)?.kind === 'trap') traps.add(url);
        continue;
      }
      touched.add(g.hostName(loc.host));
      if (obey && !allowed(loc.host, loc.target)) {
        disallowed.add(url);
        continue;
      }
      if (opts.viaSitemaps && !sitemapDone.has(loc.host)) {
        sitemapDone.add(loc.host);
        if (g.cfg.sitemap && (!obey || allowed(loc.host, '/sitemap.xml'))) {
          for (let k = 0; k < g.pages(loc.host); k++) push(g.pageUrl(loc.host, k));
        }
      }
      const info = g.describe(url);
      if (info === null) continue;
      fetched.add(url);
      status.set(url, info.status);
      if (info.status >= 300 && info.status < 400) {
        redirects.add(url);
        if (info.location) {
          const target = g.describe(info.location);
          if (target) push(target.url);
        }
      } else if (info.status >= 400) {
        errors.add(url);
      }
      const links = opts.tooManyRecovers && info.linksOnceServed ? info.linksOnceServed : info.links;
      for (const l of links) {
        if (opts.obeyNofollow && l.nofollow) continue;
        push(l.url);
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
