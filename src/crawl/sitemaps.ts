// Sitemaps 0.90 in the crawl (docs/scope.md, src/sitemap/): discovered from a
// fresh robots.txt (RFC 9309 §2.2.4) or at /sitemap.xml, read into page and
// sitemap candidates, with the "cross submit" grants a robots.txt gives the
// sitemaps it names (src/sitemap/grants.ts) kept in the store and sent along
// with a sitemap to the agent that fetches it.
import type { AgentConfig } from '../config.js';
import type { QueuedUrl } from '../frontier/frontier.js';
import type { FetchResponse } from '../fetch/fetcher.js';
import type { RobotsEntry } from '../robots/cache.js';
import { parseSitemap } from '../sitemap/parse.js';
import { robotsGrantPrefix } from '../sitemap/scope.js';
import type { SitemapGrants } from '../sitemap/grants.js';
import type { Recrawler } from '../recrawl/recrawler.js';
import { classifyItem, encodeItem, type UrlItem } from '../mesh/index.js';
import type { CrawlStats } from './stats.js';
import type { Admission } from './admission.js';
import type { Candidate } from './candidate.js';
import type { Logger } from '../util/log.js';
import { sitemapDepthOk } from '../sitemap/limits.js';

/** Sitemaps taken from one robots.txt. */
const MAX_LISTED = 50;

export interface SitemapComponents {
  config: Pick<AgentConfig, 'sitemaps'>;
  /** Sitemap URL → origins whose robots.txt named it (their URLs may be listed in it). */
  grants: SitemapGrants;
  admission: Pick<Admission, 'candidate' | 'follows'>;
  /** `--recrawl`: a sitemap's lastmod/changefreq/priority seed a URL's first interval. */
  recrawl: Recrawler | undefined;
  stats: Pick<CrawlStats, 'sitemaps'>;
  log: Logger;
  /** Sends candidates to their owners (src/crawl/router.ts). */
  route(cands: Candidate[]): Promise<void>;
}

export class Sitemaps {
  constructor(private readonly c: SitemapComponents) {}

  /**
   * Sitemaps 0.90 discovery: the `Sitemap:` lines of a freshly fetched
   * robots.txt (RFC 9309 §2.2.4), or the host's /sitemap.xml when it names none.
   */
  async discover(origin: string, entry: RobotsEntry): Promise<void> {
    if (!this.c.config.sitemaps.enabled) return;
    const { admission } = this.c;
    const listed = entry.verdict === 'parsed' ? entry.rules.sitemaps : [];
    const urls = listed.length ? listed.slice(0, MAX_LISTED) : [`${origin}/sitemap.xml`];
    const cands: Candidate[] = [];
    const grant = robotsGrantPrefix(`${origin}/robots.txt`);
    for (const u of urls) {
      const c = admission.candidate(u, origin + '/', 0, 'sitemap');
      if (!admission.follows(c, origin + '/')) continue;
      cands.push(c);
      // Sitemaps 0.90 "cross submits": a sitemap named by host X's robots.txt may list X's URLs.
      if (grant && listed.length) c.grant = grant;
    }
    this.c.stats.sitemaps.discovered += cands.length;
    await this.c.route(cands);
  }

  /** A fetched sitemap: its URLs become page candidates, nested sitemaps (bounded depth) sitemap candidates. */
  async read(q: QueuedUrl, out: FetchResponse, into: Candidate[]): Promise<void> {
    const grant = await this.c.grants.get(q.url);
    const { admission, recrawl } = this.c;
    const sm = parseSitemap(out.body, q.url, grant ? { allowedPrefixes: grant } : {});
    const st = this.c.stats.sitemaps;
    st.fetched++;
    st.urls += sm.urls.length;
    st.rejected += sm.rejected.outOfScope + sm.rejected.invalid + sm.rejected.overLimit;
    if (sm.truncated || out.truncated) st.truncated++;
    if (sm.kind === 'invalid') { st.invalid++; this.c.log.warn({ url: q.url, note: sm.note }, 'invalid sitemap'); return; }
    for (const u of sm.urls) {
      // Sitemaps 0.90 <priority> is kept for scheduling: it nudges the URL's frontier class.
      const c = admission.candidate(u.loc, undefined, 1, 'page', u.priority);
      if (!admission.follows(c, q.url)) continue;
      into.push(c);
      if (recrawl) recrawl.noteHint(c.key, u); // lastmod/changefreq/priority seed its first interval
    }
    if (!sitemapDepthOk(q.depth + 1, this.c.config.sitemaps.maxIndexDepth)) { st.tooDeep += sm.sitemaps.length; return; }
    for (const child of sm.sitemaps) {
      const c = admission.candidate(child.loc, undefined, q.depth + 1, 'sitemap');
      if (admission.follows(c, q.url)) into.push(c);
    }
  }

  /** A sitemap's redirect target takes the sitemap's grants along (one candidate per grant; the seen-set keeps one). */
  async redirected(from: string, target: Candidate, into: Candidate[]): Promise<void> {
    const grants = await this.c.grants.get(from);
    if (grants?.length) { target.grant = grants[0]; for (const g of grants.slice(1)) into.push({ ...target, grant: g }); }
    into.push(target);
  }

  /** Queued sitemaps leaving with their host take their grants along (one item per grant; the receiver's seen-set keeps one). */
  async attachGrants(items: UrlItem[]): Promise<void> {
    const n = items.length;
    for (let i = 0; i < n; i++) {
      const w = classifyItem(items[i]!);
      if (w.kind !== 'crawl' || !w.sitemap) continue;
      const grants = await this.c.grants.get(w.url);
      if (!grants?.length) continue;
      items[i] = encodeItem({ ...w, grant: grants[0] });
      for (const g of grants.slice(1)) items.push(encodeItem({ ...w, grant: g }));
    }
  }

  /** Grants of the sitemaps about to be queued here are made durable first (a restart must not lose them). */
  async keepGrants(local: Candidate[]): Promise<void> {
    for (const c of local) if (c.grant !== undefined) await this.c.grants.add(c.url, c.grant);
  }
}
