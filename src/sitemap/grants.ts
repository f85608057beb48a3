// Sitemaps 0.90 "cross submits" (sitemaps.org, "Sitemaps & Cross Submits"):
// a sitemap named by host X's robots.txt may list X's URLs even though the
// sitemap itself lives elsewhere. The grant is learnt by whoever reads X's
// robots.txt (X's owner) but used by whoever fetches the sitemap (the owner of
// the sitemap's host), possibly another agent, possibly after a restart — so
// grants travel with the sitemap URL on the wire (mesh/wire.ts GRANT_FLAG) and
// are kept in LevelDB until the sitemap is read, not only in memory.
import type { Sublevel } from '../store/db.js';

/** Key prefix in the `meta` sublevel: "grant\0" ‖ sitemap URL. */
const PREFIX = 'grant\u0000';
/** Most prefixes kept per sitemap: a sitemap named by many robots.txt files is rare; a flood is hostile. */
export const MAX_GRANTS_PER_SITEMAP = 64;
/** Entries kept in memory in front of the store. */
const CACHE_ENTRIES = 10_000;

export class SitemapGrants {
  private readonly cache = new Map<string, string[]>();

  constructor(private readonly db: Sublevel) {}

  /** Records that `sitemapUrl` may list URLs under `prefix`; durable when the promise resolves. */
  async add(sitemapUrl: string, prefix: string): Promise<void> {
    const list = (await this.get(sitemapUrl)) ?? [];
    if (list.includes(prefix)) return;
    if (list.length >= MAX_GRANTS_PER_SITEMAP) return;
    const next = [...list, prefix];
    await this.db.put(Buffer.from(PREFIX + sitemapUrl, 'latin1'), Buffer.from(JSON.stringify(next)));
    this.remember(sitemapUrl, next);
  }

  /** The prefixes granted to `sitemapUrl`, or undefined. A damaged entry reads as none. */
  async get(sitemapUrl: string): Promise<string[] | undefined> {
    const hit = this.cache.get(sitemapUrl);
    if (hit) return hit;
    const raw = await this.db.get(Buffer.from(PREFIX + sitemapUrl, 'latin1'));
    if (raw === undefined) return undefined;
    const list = parseList(raw);
    if (list) this.remember(sitemapUrl, list);
    return list;
  }

  private remember(sitemapUrl: string, list: string[]): void {
    this.cache.delete(sitemapUrl);
    if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(sitemapUrl, list);
  }
}

function parseList(raw: Buffer): string[] | undefined {
  try {
    const v: unknown = JSON.parse(raw.toString());
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.slice(0, MAX_GRANTS_PER_SITEMAP);
  } catch { /* damaged entry: no grant */ }
  return undefined;
}
