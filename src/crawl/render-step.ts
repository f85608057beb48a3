// The render step of the pipeline (docs/render.md): after page processing has
// parsed a fetched HTML page, decide whether it needs a browser (src/render/decide.ts)
// and queue it in the durable render queue (src/render/queue.ts); a render loop
// of its own concurrency takes pages off that queue, renders them in the
// Chromium pool (src/render/browser.ts) and files what came out:
//   - every subresource the browser asked for went through robots.txt and the
//     crawler's own fetcher on the host's politeness clock, and is archived
//     once (src/crawl/render-requests.ts);
//   - the rendered DOM as a `conversion` record referring to the page's response
//     (docs/warc.md "Rendered pages");
//   - the links of the rendered DOM, through admission (scope, seen-set) like any page's;
//   - the rendered text into the near-duplicate fingerprint.
// A queue entry is acknowledged only once its records are written: a browser
// that dies mid-render, or an agent that stops, leaves it to be rendered again.
import { existsSync } from 'node:fs';
import type { AgentConfig, RenderConfig } from '../config.js';
import type { Store } from '../store/db.js';
import type { Fetcher, FetchResponse } from '../fetch/fetcher.js';
import type { RobotsCache } from '../robots/cache.js';
import type { RenderSignals } from '../parse/html.js';
import { extractPage } from '../parse/html.js';
import type { WriteResult } from '../warc/writer.js';
import type { AgentMetrics } from '../api/metrics.js';
import type { StatusReport } from '../api/backend.js';
import { nearDupFields, type ContentDedup } from '../dedup/content.js';
import { hostOf } from '../url/normalize.js';
import type { Archive } from './archive.js';
import type { Admission } from './admission.js';
import type { Candidate } from './candidate.js';
import type { Logger } from '../util/log.js';
import { decideRender, HostRenderMemory, type RenderReason } from '../render/decide.js';
import { RenderQueue, type QueuedRender, type RenderQueueItem } from '../render/queue.js';
import { RenderPool, type RenderOutcome, type RenderResult } from '../render/browser.js';
import type { HostClocks } from './render-clocks.js';
import { RenderMetrics } from '../render/metrics.js';
import { BrowserRequests, type SubresourceCounts } from './render-requests.js';

export interface RenderStepComponents {
  config: Pick<AgentConfig, 'render' | 'userAgent' | 'robots'>;
  store: Pick<Store, 'render' | 'meta'>;
  fetcher: Pick<Fetcher, 'fetch'>;
  robots: Pick<RobotsCache, 'lookup' | 'step' | 'giveUp'>;
  clocks: Pick<HostClocks, 'acquire'>;
  archive: Pick<Archive, 'enabled' | 'writeExchange' | 'writeConversion' | 'writeMetadata'>;
  admission: Pick<Admission, 'candidate' | 'follows' | 'scope'>;
  /** Found links to the frontier (the router: here, or to their owners in a mesh). */
  route(cands: Candidate[]): Promise<void>;
  dedup: Pick<ContentDedup, 'wantsText' | 'checkNearFingerprint' | 'config'> | undefined;
  metrics: Pick<AgentMetrics, 'registry' | 'dedupHit'>;
  log: Logger;
  /** Our robots.txt product token (RFC 9309 §2.2.1). */
  token: string;
  /** Runs the render loop as the agent's work in progress (so the crawl is not idle while pages wait for the browser). */
  background(job: () => Promise<unknown>, fatal: boolean): void;
  running(): boolean;
}

/** What page processing tells the render step about a parsed page (src/crawl/page.ts). */
export interface RenderCandidate {
  /** An HTML page whose links were followed (not nofollow). */
  parsed?: boolean;
  /** What the static parse saw (with `wantsSignals`). */
  signals?: RenderSignals;
}

/** What the queue keeps of a page besides its URL and body. */
interface PageMeta {
  depth: number;
  /** The page's response record (WARC-Refers-To of the rendered DOM). */
  recordId?: string;
  status: number;
  headers: Record<string, string>;
}

export interface RenderSummary {
  mode: RenderConfig['mode'];
  /** Why rendering is off on this machine (no Chromium), if it is. */
  off?: string;
  decisions: Partial<Record<RenderReason, number>>;
  queued: number;
  /** Pages not queued: the queue was full. */
  dropped: number;
  /** Pages waiting at the end (rendered on the next start). */
  waiting: number;
  renders: Record<RenderOutcome, number>;
  /** Renders started again after the browser died. */
  retried: number;
  linksFound: number;
  linksAdmitted: number;
  conversionRecords: number;
  subresources: SubresourceCounts;
  browser: { launches: number; crashes: number; memoryRestarts: number; rssBytes: number };
}

export type RenderStatus = NonNullable<StatusReport['render']>;

/** Renders of one page that the browser's death may interrupt before it is filed anyway (empty). */
const MAX_ATTEMPTS = 3;

export class RenderStep {
  private readonly cfg: RenderConfig;
  private readonly memory: HostRenderMemory;
  private queue: RenderQueue | undefined;
  private pool: RenderPool | undefined;
  private metrics: RenderMetrics | undefined;
  private off: string | undefined;
  private draining = false;
  private active = 0;
  private pushed: { promise: Promise<void>; resolve: () => void } | undefined;
  private readonly attempts = new Map<number, number>();
  /** What the browser asks for: robots.txt, then the request on the host's clock, archived once. */
  private readonly requests: BrowserRequests;
  private lastRestarts = { crashes: 0, memory: 0 };
  private readonly timed = { n: 0, ms: 0 };
  private readonly counts = {
    decisions: {} as Partial<Record<RenderReason, number>>, queued: 0, retried: 0, linksFound: 0, linksAdmitted: 0, conversionRecords: 0,
  };

  constructor(private readonly c: RenderStepComponents) {
    this.cfg = c.config.render;
    this.memory = new HostRenderMemory(this.cfg);
    this.requests = new BrowserRequests({ ...c, metrics: () => this.metrics });
  }

  /** Configured to render at all (a mode other than never, or a host rule). */
  get configured(): boolean { return this.cfg.mode !== 'never' || this.cfg.hosts.length > 0; }

  /** Pages are being queued: configured, and a browser is there. */
  get enabled(): boolean { return this.queue !== undefined && this.off === undefined; }

  /** The static parse should collect render signals (`auto`). */
  get wantsSignals(): boolean { return this.enabled && this.cfg.mode === 'auto'; }

  /** Nothing queued or rendering. */
  get idle(): boolean { return this.queue === undefined || (this.queue.size === 0 && this.active === 0); }

  /** Opens the queue and readies the pool (Chromium starts on the first render); says once when there is no browser. */
  async open(): Promise<void> {
    if (!this.configured) return;
    if (!existsSync(this.cfg.chromiumPath)) {
      this.off = `${this.cfg.chromiumPath} is not installed (Debian: apt-get install chromium)`;
      this.c.log.warn({ reason: this.off }, 'render: rendering is off');
      return;
    }
    this.queue = await RenderQueue.open({ db: this.c.store.render, maxQueued: this.cfg.maxQueued });
    this.pool = new RenderPool({
      allowed: (url) => this.requests.allowed(url),
      fetch: (url, method, deadline) => this.requests.fetchSubresource(url, method, deadline),
      logger: this.c.log,
    }, { ...this.cfg, userAgent: this.c.config.userAgent });
    const pool = this.pool;
    const queue = this.queue;
    this.metrics = new RenderMetrics(this.c.metrics.registry, {
      queueDepth: () => queue.size, active: () => this.active, browserMemoryBytes: () => pool.stats().browserRssBytes,
    });
    if (queue.size > 0) {
      this.c.log.info({ waiting: queue.size }, 'render: pages left in the render queue by the last run');
      this.kick();
    }
  }

  /**
   * A fetched page was parsed (HTML, 2xx, links followed): render it if the policy says so. `signals`: what
   * the static parse saw (auto). Queued before the page is acknowledged, so a crash renders it on the next start.
   */
  async consider(url: string, depth: number, out: FetchResponse, signals: RenderSignals | undefined, stored: WriteResult | undefined): Promise<void> {
    if (!this.enabled) return;
    const d = decideRender(hostOf(url), signals, this.cfg, this.memory, this.cfg);
    this.counts.decisions[d.reason] = (this.counts.decisions[d.reason] ?? 0) + 1;
    if (!d.render) return;
    const headers: Record<string, string> = {};
    for (const [k, v] of out.responseHeaders) headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    const meta: PageMeta = { depth, status: out.status, headers };
    if (stored) meta.recordId = stored.recordId;
    const item: RenderQueueItem = { url: out.url, meta: meta as unknown as Record<string, unknown>, body: out.body, enqueuedAt: Date.now() };
    if (!(await this.queue!.push(item))) return;
    this.counts.queued++;
    this.kick();
  }

  /**
   * An exact duplicate (archived as a revisit, not parsed by page processing): the shells of a client-side app
   * are byte-identical, their rendered pages are not, so it is parsed here for the decision.
   */
  async considerDuplicate(url: string, depth: number, out: FetchResponse, stored: WriteResult | undefined): Promise<void> {
    if (!this.enabled) return;
    let page;
    try {
      page = extractPage(out.body, {
        url, contentType: out.header('content-type'), robotsToken: this.c.token, wantRenderSignals: this.wantsSignals,
        xRobotsTag: out.responseHeaders.filter(([k]) => k === 'x-robots-tag').map(([, v]) => v),
      });
    } catch {
      return; // page processing counted the parse failure of the original
    }
    if (page.isHtml && !page.directives.nofollow) await this.consider(url, depth, out, page.renderSignals, stored);
  }

  /** For the summary. */
  summary(): RenderSummary {
    const st = this.pool?.stats();
    const s: RenderSummary = {
      mode: this.cfg.mode,
      decisions: { ...this.counts.decisions },
      queued: this.counts.queued,
      dropped: this.queue?.dropped ?? 0,
      waiting: this.queue?.size ?? 0,
      renders: { ...(st?.outcomes ?? { rendered: 0, timeout: 0, budget: 0, crashed: 0, unavailable: 0 }) },
      retried: this.counts.retried,
      linksFound: this.counts.linksFound,
      linksAdmitted: this.counts.linksAdmitted,
      conversionRecords: this.counts.conversionRecords,
      subresources: { ...this.requests.counts },
      browser: { launches: st?.launches ?? 0, crashes: st?.crashes ?? 0, memoryRestarts: st?.memoryRestarts ?? 0, rssBytes: st?.browserRssBytes ?? 0 },
    };
    if (this.off !== undefined) s.off = this.off;
    return s;
  }

  /** For GET /status and the dashboard; undefined when the tier is not configured. */
  status(): RenderStatus | undefined {
    if (!this.configured) return undefined;
    const st = this.pool?.stats();
    const s: RenderStatus = {
      mode: this.cfg.mode, queue: this.queue?.size ?? 0, active: this.active,
      renders: { ...(st?.outcomes ?? { rendered: 0, timeout: 0, budget: 0, crashed: 0, unavailable: 0 }) },
      meanRenderMs: this.timed.n > 0 ? Math.round(this.timed.ms / this.timed.n) : 0,
      browserRssBytes: st?.browserRssBytes ?? 0,
    };
    if (this.off !== undefined) s.off = this.off;
    return s;
  }

  /** pid of the browser process now (tests kill it). */
  browserPid(): number | undefined { return this.pool?.browserPid(); }

  /** Ends the browser; pages being rendered stay queued (rendered again on the next start). */
  async stop(): Promise<void> {
    this.wakeDrain();
    await this.pool?.close();
    // The loop notices the stop once its renders end (they end quickly without a browser).
    for (let i = 0; i < 200 && this.active > 0; i++) await new Promise((r) => setTimeout(r, 25));
  }

  // --- the render loop ---------------------------------------------------------------------------

  private kick(): void {
    if (this.draining) { this.wakeDrain(); return; }
    if (!this.c.running() || this.queue === undefined || this.queue.pending === 0) return;
    this.draining = true;
    this.c.background(() => this.drain().finally(() => {
      this.draining = false;
      if (this.c.running() && this.queue!.pending > 0) this.kick();
    }), false);
  }

  private wakeDrain(): void {
    const p = this.pushed;
    this.pushed = undefined;
    p?.resolve();
  }

  private nextPush(): Promise<void> {
    if (this.pushed === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => { resolve = r; });
      this.pushed = { promise, resolve };
    }
    return this.pushed.promise;
  }

  /** Takes pages off the queue, `concurrency` at once, until it is empty or the agent stops. */
  private async drain(): Promise<void> {
    const queue = this.queue!;
    const inflight = new Set<Promise<void>>();
    // Each pass starts a render or waits for one to end (or for a page to be queued).
    while (this.c.running() && this.off === undefined) {
      if (inflight.size >= this.cfg.concurrency) { await Promise.race(inflight); continue; }
      const taken = await queue.take();
      if (taken === undefined) {
        if (inflight.size === 0) break;
        await Promise.race([...inflight, this.nextPush()]);
        continue;
      }
      const p: Promise<void> = this.renderOne(taken).finally(() => { inflight.delete(p); });
      inflight.add(p);
    }
    await Promise.all(inflight);
  }

  private async renderOne({ seq, item }: QueuedRender): Promise<void> {
    const meta = item.meta as unknown as PageMeta;
    this.active++;
    try {
      const result = await this.pool!.render({ url: item.url, status: meta.status, headers: meta.headers, body: item.body ?? new Uint8Array() });
      this.noteOutcome(result);
      if (result.outcome === 'crashed') {
        if (!this.c.running()) return; // left queued: rendered again on the next start
        const n = (this.attempts.get(seq) ?? 0) + 1;
        if (n < MAX_ATTEMPTS) {
          this.attempts.set(seq, n);
          this.counts.retried++;
          this.c.log.warn({ url: item.url, attempt: n, err: result.error }, 'render: the browser died during the render; rendering the page again');
          this.queue!.retry(seq);
          this.wakeDrain();
          return;
        }
      }
      if (result.outcome === 'unavailable' && this.off === undefined) this.off = result.error ?? 'the browser is unavailable';
      await this.file(item, meta, result);
      this.attempts.delete(seq);
      await this.queue!.ack(seq);
    } catch (err) {
      // A failed WARC write already stopped the agent (src/crawl/archive.ts): the page stays queued.
      this.c.log.error({ url: item.url, err: (err as Error).message }, 'render: the page could not be filed; it stays queued');
    } finally {
      this.active--;
    }
  }

  private noteOutcome(r: RenderResult): void {
    this.metrics?.rendered(r.outcome, r.ms);
    if (r.outcome !== 'unavailable') { this.timed.n++; this.timed.ms += r.ms; }
    const st = this.pool!.stats();
    this.metrics?.restarted('crash', st.crashes - this.lastRestarts.crashes);
    this.metrics?.restarted('memory', st.memoryRestarts - this.lastRestarts.memory);
    this.lastRestarts = { crashes: st.crashes, memory: st.memoryRestarts };
  }

  /** The rendered DOM's record, links and fingerprint. */
  private async file(item: RenderQueueItem, meta: PageMeta, r: RenderResult): Promise<void> {
    if (r.dom === '') return;
    const date = new Date();
    const dom = Buffer.from(r.dom, 'utf8');
    const conv = await this.c.archive.writeConversion({
      url: item.url, date, contentType: 'text/html; charset=utf-8', body: dom, ...(meta.recordId ? { refersTo: meta.recordId } : {}),
    });
    if (conv) this.counts.conversionRecords++;
    const { admission } = this.c;
    let links = r.links;
    const scope = admission.scope;
    if (links.length > scope.maxLinksPerPage) {
      scope.noteLinkCap(links.length - scope.maxLinksPerPage);
      links = links.slice(0, scope.maxLinksPerPage);
    }
    this.counts.linksFound += links.length;
    const cands: Candidate[] = [];
    for (const link of links) {
      const c = admission.candidate(link, undefined, meta.depth + 1);
      if (admission.follows(c, item.url)) { c.inlink = true; cands.push(c); }
    }
    this.counts.linksAdmitted += cands.length;
    await this.c.route(cands);
    await this.noteNearDup(item.url, date, dom, conv);
  }

  /** The rendered text's SimHash, indexed under the page; a near-duplicate is noted as for a fetched page. */
  private async noteNearDup(url: string, date: Date, dom: Buffer, conv: WriteResult | undefined): Promise<void> {
    const dedup = this.c.dedup;
    if (dedup === undefined || !dedup.wantsText) return;
    const fp = extractPage(dom, { url, contentType: 'text/html; charset=utf-8', robotsToken: this.c.token, wantFingerprint: true }).fingerprint ?? 0n;
    const near = await dedup.checkNearFingerprint(url, fp);
    if (near === undefined) return;
    if (near.match) {
      this.c.metrics.dedupHit('near');
      await this.c.archive.writeMetadata(url, date, nearDupFields({ ...near, match: near.match }, dedup.config.maxDistance), conv?.recordId);
    }
    await near.indexed;
  }
}
