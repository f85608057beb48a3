// Counters of one agent's crawl and the closing summary built from them.
// Everything a person or a test wants to know afterwards is counted here, by kind.
// A count the metrics endpoint shows too (src/api/metrics.ts) is recorded once,
// through the methods below, which pass it on to the metrics sink.
import type { AgentMetrics } from '../api/metrics.js';
import type { CrawlCounts, CrawlSummary, RunFacts } from './summary.js';

export type Counts = Record<string, number>;

export function bump(c: Counts, key: string, by = 1): void {
  c[key] = (c[key] ?? 0) + by;
}

/** The metrics a count is passed on to (none in a component test that does not look at them). */
export type CounterSink = Pick<AgentMetrics, 'urlRejected' | 'responseSkipped' | 'fetchFailed' | 'robotsFetched'>;

export class CrawlStats {
  readonly startedAt = Date.now();

  constructor(private readonly sink?: CounterSink) {}

  fetched = 0;
  bytes = 0;
  readonly byStatusClass: Counts = {};
  readonly byStatus: Counts = {};
  readonly errors: Counts = {};
  /** URLs turned away before fetching, by reason (robots, scope, traps, invalid). */
  readonly rejected: Counts = {};
  /** Responses fetched but not stored, by reason (type-not-accepted: --accept-type). */
  readonly skipped: Counts = {};
  /** `--media`: media responses by kind (images, pdf, video, audio), and `truncated` at their cap (docs/media.md). */
  readonly media: Counts = {};
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

  /** A URL turned away before fetching (scope, robots, budgets). */
  reject(reason: string, n = 1): void {
    bump(this.rejected, reason, n);
    this.sink?.urlRejected(reason, n);
  }

  /** A response fetched but not stored (--accept-type). */
  skip(reason: string): void {
    bump(this.skipped, reason);
    this.sink?.responseSkipped(reason);
  }

  /** A URL that failed for good, by kind. */
  failed(kind: string, durationMs?: number): void {
    bump(this.errors, kind);
    this.sink?.fetchFailed(kind, durationMs);
  }

  /** robots.txt decided (fetched, or given up on). */
  robotsDecided(verdict: string): void {
    this.robotsFetches++;
    this.sink?.robotsFetched(verdict);
  }

  /** The crawl's counters, and with `facts` the whole end summary. */
  summary(): CrawlCounts;
  summary(facts: RunFacts): CrawlSummary;
  summary(facts?: RunFacts): CrawlCounts | CrawlSummary {
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
      media: { ...this.media },
      truncated: this.truncated,
      redirects: this.redirects,
      linksExtracted: this.linksExtracted,
      sitemaps: { ...this.sitemaps },
      directives: { noindex: this.noindex, nofollowPages: this.nofollowPages, canonicals: this.canonicals, metaRefreshes: this.metaRefreshes },
      urlsDiscovered: this.urlsDiscovered,
      inlinks: { ...this.inlinks },
      dedup: { ...this.dedup },
      ...facts,
    };
  }
}
