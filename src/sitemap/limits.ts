// Limits of Sitemaps 0.90 (https://www.sitemaps.org/protocol.html): a sitemap
// file holds at most 50,000 URLs and 50 MiB (52,428,800 bytes) uncompressed; a
// sitemap index at most 50,000 sitemaps under the same size limit. The
// protocol does not provide for an index listing indexes, but the web does
// it, so the agent follows nested indexes down to a fixed depth
// (sitemapDepthOk); its seen-set fetches none twice, so cycles end.
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
