// Page processing: what a fetch brought back, after the host was released
// (src/crawl/host-turn.ts) — a failure recorded, or a response archived
// (src/crawl/archive.ts; an exact duplicate as a revisit record, a 304 to a
// revisit as a not-modified one, a type --accept-type refuses not at all),
// parsed for links (HTML, a redirect's Location, a sitemap), checked for near
// duplicates, and completed with its links (src/crawl/completion.ts).
import type { AgentConfig } from '../config.js';
import type { HostState, QueuedUrl } from '../frontier/frontier.js';
import { archivedBody, type FetchOutcome, type FetchResponse, type FetchFailure } from '../fetch/fetcher.js';
import { extractPage } from '../parse/html.js';
import type { FingerprintJob } from '../dedup/simhash.js';
import { captureRef, type LinkGraphRecorder } from '../graph/recorder.js';
import { hostOf } from '../url/normalize.js';
import { typeAccepted } from '../scope/crawl-scope.js';
import { mediaKindOfType, mediaMask, type MediaKind } from '../parse/media.js';
import { nearDupFields, type ContentDedup, type ExactCheck } from '../dedup/content.js';
import type { Fingerprinter } from '../dedup/fingerprinter.js';
import { payloadDigestBytes, type RecrawlOutcome, type Recrawler } from '../recrawl/recrawler.js';
import type { WriteResult } from '../warc/writer.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { RecentErrors } from '../api/history.js';
import { bump, type CrawlStats } from './stats.js';
import type { FetchRecord } from './records.js';
import type { Admission } from './admission.js';
import type { Archive } from './archive.js';
import type { Sitemaps } from './sitemaps.js';
import type { Completion } from './completion.js';
import { noteRecent } from './host-turn.js';
import type { Candidate, HostData } from './candidate.js';
import type { Logger } from '../util/log.js';
import type { RenderStep, RenderCandidate } from './render-step.js';

export interface PageComponents {
  config: Pick<AgentConfig, 'crawlScope'> & Partial<Pick<AgentConfig, 'media'>>;
  admission: Pick<Admission, 'candidate' | 'follows' | 'asSeed' | 'scope'>;
  archive: Pick<Archive, 'enabled' | 'writeExchange' | 'writeNotModified' | 'writeRevisit' | 'writeMetadata'>;
  sitemaps: Pick<Sitemaps, 'read' | 'redirected'>;
  completion: Pick<Completion, 'finish'>;
  /** Content dedup (exact: revisit records; near: noted), or undefined when off. */
  dedup: ContentDedup | undefined;
  /** Computes the SimHash of pages off the event loop (near-dup on), or undefined. */
  fingerprinter: Fingerprinter | undefined;
  recrawl: Recrawler | undefined;
  stats: CrawlStats;
  metrics: Pick<AgentMetrics, 'pageFetched' | 'dedupHit'> & Partial<Pick<AgentMetrics, 'mediaFetched'>>;
  recentErrors: Pick<RecentErrors, 'record'>;
  log: Logger;
  /** Our robots.txt product token (RFC 9309 §2.2.1), for meta robots directives. */
  token: string;
  /** The link graph's recorder (src/graph/recorder.ts), once open; undefined with --no-link-graph. */
  linkGraph(): Pick<LinkGraphRecorder, 'page' | 'redirect'> | undefined;
  /** The render step (src/crawl/render-step.ts): an HTML page it should render is queued before the page completes. */
  render?: Pick<RenderStep, 'wantsSignals' | 'enabled' | 'consider' | 'considerDuplicate'>;
  /** A URL that failed for good: counted and recorded (src/crawl/host-turn.ts). */
  recordFailure(q: QueuedUrl, h: HostState<HostData>, out: FetchFailure, failure?: string): Promise<void>;
}

export class PageProcessor {
  /** `--media`: the kinds asked for, as the parser's mask (docs/media.md). */
  private readonly media: ReadonlySet<MediaKind>;
  private readonly mediaMask: number;

  constructor(private readonly c: PageComponents) {
    this.media = new Set(c.config.media?.kinds ?? []);
    this.mediaMask = mediaMask([...this.media]);
  }

  /** `failure`: set when politeness gave up on the URL (retries used up, permanent failure): it is recorded as failed. */
  async process(q: QueuedUrl, h: HostState<HostData>, out: FetchOutcome, failure?: string): Promise<void> {
    if (!out.ok) {
      await this.c.recordFailure(q, h, out, failure);
      return;
    }
    const { stats, metrics, archive, dedup, recrawl } = this.c;
    const at = out.startedAt.getTime();
    h.data.pages++;
    noteRecent(h, { url: q.url, status: out.status, at, durationMs: out.durationMs, error: null });
    metrics.pageFetched(out.status, out.rawBytes, out.durationMs);
    if (out.truncated) { stats.truncated++; bump(stats.errors, `truncated-${out.truncated}`); }
    if (out.contentEncodingError) bump(stats.errors, 'content-encoding');
    const record: FetchRecord = { url: q.url, at, status: out.status };
    if (failure) record.failure = failure; // e.g. still 503 after the last retry
    // A 304 to a revisit is stored as a server-not-modified revisit record (WARC/1.1 §6.7.3).
    const earlier = out.status === 304 ? recrawl?.earlierCapture(q) : undefined;
    // --accept-type: a successful response of another type is not stored, but still parsed for links (docs/scope.md).
    const skipped = out.status >= 200 && out.status < 300 && !typeAccepted(this.c.config.crawlScope.acceptTypes, out.header('content-type')) ? 'type-not-accepted' : undefined;
    if (skipped) { record.skipped = skipped; stats.skip(skipped); }
    // Content dedup (src/dedup/content.ts): an exact duplicate is stored as a revisit record and its links are not extracted again.
    const exact = !skipped && !earlier && dedup && q.kind === 'page' && dedup.applies(out.status, out.body, out.truncated) ? await dedup.checkExact(out.url, out.startedAt, archivedBody(out).body) : undefined;
    let stored: WriteResult | undefined;
    try {
      stored = skipped ? undefined : earlier ? await archive.writeNotModified(out, earlier) : exact?.original ? await this.writeRevisit(out, exact, record) : await archive.writeExchange(out, exact);
    } catch (err) {
      // Not recorded, so not acknowledged: the URL stays queued for the next run (docs/storage.md "Write failures").
      h.data.pendingAcks--;
      throw err;
    }
    if (stored) { record.digest = stored.payloadDigest; record.warc = { filename: stored.filename, offset: stored.offset, length: stored.length }; }
    if (this.mediaMask !== 0) this.countMedia(out);
    let recrawlOutcome: RecrawlOutcome | undefined;
    if (recrawl && q.kind === 'page') {
      recrawlOutcome = { at, status: out.status, etag: out.header('etag'), lastModified: out.header('last-modified') };
      if (out.status >= 200 && out.status < 300) recrawlOutcome.digest = payloadDigestBytes(stored?.payloadDigest, out.body);
    }
    const links: Candidate[] = [];
    let near: Promise<void> | undefined;
    if (out.status === 304) {
      // Not modified: nothing new to parse, its links were taken from the capture.
    } else if (out.status >= 300 && out.status < 400) {
      await this.redirect(q, out, links, stored);
    } else if (out.status >= 200 && out.status < 300) {
      if (q.kind === 'sitemap') await this.c.sitemaps.read(q, out, links);
      else if (!exact?.original) {
        const html: RenderCandidate = {};
        const fp = this.extractLinks(q, out, links, record, stored, html);
        // The SimHash check runs while the links are made durable; the page completes after both.
        if (fp !== undefined && fp !== 0n && exact) { near = this.noteNearDup(out, record, this.fingerprintOf(q, out, fp), stored); near.catch(() => {}); } // failures surface in finish
        if (html.parsed && this.c.render?.enabled) await this.c.render.consider(q.url, q.depth, out, html.signals, stored);
      } else if (this.c.render?.enabled) {
        await this.c.render.considerDuplicate(q.url, q.depth, out, stored);
      }
    }
    if (recrawl && q.kind === 'sitemap') await recrawl.flushHints();
    // The first capture's digest entry only once its response record is in a WARC file (or WARC is off).
    await this.c.completion.finish(q, h, links, record, { recrawl: recrawlOutcome, ops: stored || !archive.enabled ? exact?.ops : undefined, before: near });
    dedup?.committed(exact);
  }

  /** A media response of a kind asked for, counted by kind (and those cut at their cap). */
  private countMedia(out: FetchResponse): void {
    const kind = out.status >= 200 && out.status < 300 ? mediaKindOfType(out.header('content-type')) : undefined;
    if (!kind || !this.media.has(kind)) return;
    bump(this.c.stats.media, kind);
    this.c.metrics.mediaFetched?.(kind);
    if (out.truncated === 'length') { bump(this.c.stats.media, 'truncated'); this.c.metrics.mediaFetched?.('truncated'); }
  }

  /** A redirect's Location, queued like any URL: through the frontier, so the target waits for its host's clock. */
  private async redirect(q: QueuedUrl, out: FetchResponse, into: Candidate[], stored: WriteResult | undefined): Promise<void> {
    const loc = out.header('location');
    if (!loc) return;
    if (q.kind === 'page') this.c.linkGraph()?.redirect(q.url, captureRef(out, stored), loc);
    const { admission } = this.c;
    this.c.stats.redirects++;
    const target = admission.candidate(loc, q.url, q.depth, q.kind);
    // A seed's redirect is a seed (http://example.org/ → https://www.example.com/): it widens the scope.
    const c = target && q.depth === 0 && q.kind === 'page' ? admission.asSeed(target) : admission.follows(target, q.url) ? target : null;
    // A sitemap's redirect leads to the sitemap, with its cross-submit grants.
    if (c && q.kind === 'sitemap') await this.c.sitemaps.redirected(q.url, c, into);
    else if (c) { c.inlink = true; into.push(c); }
  }

  /** An exact duplicate: a revisit record naming the first capture (WARC/1.1 §6.7.2), counted. */
  private async writeRevisit(out: FetchResponse, exact: ExactCheck, record: FetchRecord): Promise<WriteResult | undefined> {
    const original = exact.original!;
    record.duplicateOf = original.uri;
    record.duplicateKind = 'exact';
    this.c.metrics.dedupHit('exact');
    return this.c.archive.writeRevisit(out, { ...exact, original });
  }

  /** SimHash of the visible text: a near-duplicate is noted in the fetch record and a WARC metadata record; the fingerprint is indexed before the page completes. */
  private async noteNearDup(out: FetchResponse, record: FetchRecord, fingerprint: Promise<bigint>, stored: WriteResult | undefined): Promise<void> {
    const dedup = this.c.dedup!;
    const fp = await fingerprint;
    if (fp === 0n) return; // no word in the text
    const near = await dedup.checkNearFingerprint(out.url, fp);
    if (!near) return;
    record.simhash = near.hex;
    if (near.match) {
      record.duplicateOf = near.match.url;
      record.duplicateKind = 'near';
      record.distance = near.match.distance;
      this.c.metrics.dedupHit('near');
      const fields = nearDupFields({ ...near, match: near.match }, dedup.config.maxDistance);
      await this.c.archive.writeMetadata(out.url, out.startedAt, fields, stored?.recordId, captureRef(out).protocols);
    }
    await near.indexed;
  }

  /** The page's SimHash: as the parser gave it, or from the fingerprint thread (inline again when that declines). */
  private async fingerprintOf(q: QueuedUrl, out: FetchResponse, fp: bigint | FingerprintJob): Promise<bigint> {
    if (typeof fp === 'bigint') return fp;
    const offloaded = await this.c.fingerprinter!.fingerprint(fp);
    if (offloaded !== null) return offloaded;
    // simhash64's reference path (rare characters), or the thread is gone: the parser's own fingerprint.
    return this.parsePage(q, out, false).fingerprint ?? 0n;
  }

  /** Links, directives and (dedup on) the SimHash of the visible text, or the job that computes it elsewhere. */
  private parsePage(q: QueuedUrl, out: FetchResponse, fingerprintLater: boolean) {
    return extractPage(out.body, {
      url: q.url,
      contentType: out.header('content-type'),
      xRobotsTag: out.responseHeaders.filter(([k]) => k === 'x-robots-tag').map(([, v]) => v),
      robotsToken: this.c.token,
      wantFingerprint: this.c.dedup?.wantsText ?? false,
      fingerprintLater,
      wantRenderSignals: this.c.render?.wantsSignals ?? false,
      media: this.mediaMask,
    });
  }

  /** Returns the simhash64 of the page's visible text when dedup asked for it, or what the fingerprint thread needs to take it. */
  private extractLinks(q: QueuedUrl, out: FetchResponse, into: Candidate[], record: FetchRecord, stored?: WriteResult, html?: RenderCandidate): bigint | FingerprintJob | undefined {
    const { stats, admission } = this.c;
    let page;
    try {
      // A job only while the fingerprint thread runs (after it fails every job would come back for a second parse), and
      // not for a crawl's first pages (src/config.ts INLINE_PAGES_BEFORE_THREADS).
      page = this.parsePage(q, out, this.c.fingerprinter?.wantsJob() ?? false);
    } catch (err) {
      bump(stats.errors, 'parse');
      this.c.recentErrors.record('parse', (err as Error).message, q.url, hostOf(q.url));
      this.c.log.warn({ url: q.url, err: (err as Error).message }, 'page could not be parsed');
      return;
    }
    // noindex (meta robots, meta <token>, X-Robots-Tag): fetched and stored, but flagged.
    if (page.directives.noindex) { stats.noindex++; record.noindex = true; }
    if (!page.isHtml) return;
    this.c.linkGraph()?.page(q.url, captureRef(out, stored), page.links);
    if (page.nofollowLinks) bump(stats.rejected, 'rel-nofollow', page.nofollowLinks);
    if (page.directives.nofollow) { stats.nofollowPages++; return page.fingerprintJob ?? page.fingerprint; }
    if (html) { html.parsed = true; html.signals = page.renderSignals; }
    if (page.canonical) stats.canonicals++;
    if (page.metaRefresh) stats.metaRefreshes++;
    stats.linksExtracted += page.links.length;
    let links = page.links;
    const scope = admission.scope;
    if (links.length > scope.maxLinksPerPage) {
      scope.noteLinkCap(links.length - scope.maxLinksPerPage);
      links = links.slice(0, scope.maxLinksPerPage);
    }
    for (const link of links) {
      const c = admission.candidate(link.url, undefined, q.depth + 1);
      if (admission.follows(c, q.url)) { c.inlink = true; into.push(c); }
    }
    return page.fingerprintJob ?? page.fingerprint;
  }
}
