// Counters of one agent's crawl and the closing summary built from them.
// Everything a person or a test wants to know afterwards is counted here, by kind.

export type Counts = Record<string, number>;

export function bump(c: Counts, key: string, by = 1): void {
  c[key] = (c[key] ?? 0) + by;
}

export class CrawlStats {
  readonly startedAt = Date.now();
  fetched = 0;
  bytes = 0;
  readonly byStatusClass: Counts = {};
  readonly byStatus: Counts = {};
  readonly errors: Counts = {};
  /** URLs turned away before fetching, by reason (robots, scope, traps, invalid). */
  readonly rejected: Counts = {};
  /** Responses fetched but not stored, by reason (type-not-accepted: --accept-type). */
  readonly skipped: Counts = {};
  robotsBlocked = 0;
  robotsFetches = 0;
  truncated = 0;
  redirects = 0;
  linksExtracted = 0;
  urlsDiscovered = 0;
  warcRecords = 0;
  /** Pages that asked not to be indexed (stored and flagged). */
  noindex = 0;
  /** Pages whose links were not followed (meta robots / X-Robots-Tag nofollow). */
  nofollowPages = 0;
  canonicals = 0;
  metaRefreshes = 0;
  /** Content dedup (src/dedup/content.ts): payload digests, store lookups, exact duplicates (revisit records), pages fingerprinted, near-duplicates. */
  readonly dedup = { digests: 0, digestReads: 0, exact: 0, fingerprinted: 0, near: 0 };
  /**
   * In-link hints (src/frontier/inlinks.ts): queued URLs whose in-link count
   * crossed a priority threshold, how many of them were moved to a better
   * class, and how many were left where they were (being fetched, already
   * fetched, their host busy or handed over).
   */
  readonly inlinks = { crossings: 0, promoted: 0, skipped: 0 };
  /** Sitemaps 0.90: discovered, fetched and parsed, URLs found, turned away, cut at limits, invalid, index too deep. */
  readonly sitemaps = { discovered: 0, fetched: 0, urls: 0, rejected: 0, truncated: 0, invalid: 0, tooDeep: 0 };

  recordResponse(status: number, bytes: number): void {
    this.fetched++;
    this.bytes += bytes;
    bump(this.byStatusClass, `${Math.floor(status / 100)}xx`);
    bump(this.byStatus, String(status));
  }

  summary(extra: Record<string, unknown> = {}): Record<string, unknown> {
    const durationMs = Date.now() - this.startedAt;
    return {
      pages: this.fetched,
      pagesByStatusClass: { ...this.byStatusClass },
      pagesByStatus: { ...this.byStatus },
      bytes: this.bytes,
      durationMs,
      pagesPerSecond: durationMs > 0 ? Math.round((this.fetched / durationMs) * 10000) / 10 : 0,
      robotsBlocked: this.robotsBlocked,
      robotsFetches: this.robotsFetches,
      errors: { ...this.errors },
      rejected: { ...this.rejected },
      skipped: { ...this.skipped },
      truncated: this.truncated,
      redirects: this.redirects,
      linksExtracted: this.linksExtracted,
      sitemaps: { ...this.sitemaps },
      directives: { noindex: this.noindex, nofollowPages: this.nofollowPages, canonicals: this.canonicals, metaRefreshes: this.metaRefreshes },
      urlsDiscovered: this.urlsDiscovered,
      inlinks: { ...this.inlinks },
      dedup: { ...this.dedup },
      ...extra,
    };
  }
}
