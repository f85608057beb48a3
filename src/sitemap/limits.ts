// Limits of Sitemaps 0.90 (https://www.sitemaps.org/protocol.html): a sitemap
// file holds at most 50,000 URLs and 50 MiB (52,428,800 bytes) uncompressed; a
// sitemap index at most 50,000 sitemaps under the same size limit. The
// protocol does not provide for an index listing indexes, but the web does
// it, so the fetcher follows nested indexes down to a fixed depth and never
// twice.
import { DEFAULT_SITEMAP_LIMITS } from '../config.js';

export interface SitemapLimits {
  /** Entries (<url>, <sitemap>, text lines, feed items) considered per file. */
  readonly maxUrls: number;
  /** Uncompressed bytes considered per file. */
  readonly maxBytes: number;
  /** Depth bound for nested sitemap indexes; the sitemap named by robots.txt (or /sitemap.xml) is depth 0. */
  readonly maxIndexDepth: number;
}

// Defaults: src/config.ts (one place for every default).
export { DEFAULT_SITEMAP_LIMITS };

/**
 * True if a sitemap at `depth` may be fetched: depth 0 is a sitemap named by
 * robots.txt or /sitemap.xml, a child listed by an index at depth d is at d+1.
 */
export function sitemapDepthOk(depth: number, maxDepth: number = DEFAULT_SITEMAP_LIMITS.maxIndexDepth): boolean {
  return Number.isInteger(depth) && depth >= 0 && depth <= maxDepth;
}

export interface ChildSitemapPlan {
  /** Child sitemap URLs to fetch next, at `depth`. */
  follow: string[];
  /** Depth of the children. */
  depth: number;
  /** Children skipped because they were already seen (an index listing itself, or a cycle). */
  skippedSeen: number;
  /** Children skipped because of the depth bound. */
  skippedDepth: number;
}

/**
 * Which children of a sitemap index at `parentDepth` to fetch. `seen` holds
 * the normalised URLs of every sitemap already fetched or queued in this
 * discovery round (include the index itself); it is updated in place, so an
 * index that lists itself, or two indexes that list each other, terminate.
 */
export function planChildSitemaps(
  children: ReadonlyArray<{ loc: string }>,
  parentDepth: number,
  seen: Set<string>,
  maxDepth: number = DEFAULT_SITEMAP_LIMITS.maxIndexDepth,
): ChildSitemapPlan {
  const depth = parentDepth + 1;
  const plan: ChildSitemapPlan = { follow: [], depth, skippedSeen: 0, skippedDepth: 0 };
  const depthOk = sitemapDepthOk(depth, maxDepth);
  for (const c of children) {
    if (seen.has(c.loc)) { plan.skippedSeen++; continue; }
    if (!depthOk) { plan.skippedDepth++; continue; }
    seen.add(c.loc);
    plan.follow.push(c.loc);
  }
  return plan;
}
