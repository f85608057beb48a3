// What the browser asks for during a render (docs/render.md "Subresources"):
// robots.txt of the request's origin (the agent's robots cache, else fetched
// on the host's politeness clock, src/crawl/render-clocks.ts), then the
// request itself made by the crawler's fetcher on that clock, archived once
// (response + request records; a URL this run already has is served from
// memory, one an earlier run archived with the same payload is not archived
// again). Used by the render step (src/crawl/render-step.ts) as the pool's
// `allowed` and `fetch`.
import { createHash } from 'node:crypto';
import type { AgentConfig } from '../config.js';
import type { Store } from '../store/db.js';
import type { Fetcher, FetchResponse } from '../fetch/fetcher.js';
import type { RobotsCache, RobotsEntry } from '../robots/cache.js';
import { hostOf } from '../url/normalize.js';
import type { Archive } from './archive.js';
import type { Subresource } from '../render/browser.js';
import type { RenderMetrics } from '../render/metrics.js';
import type { HostClocks } from './render-clocks.js';

/** Subresources kept for the rest of the run (a site's script bundle serves every page of it). */
const CACHE_BYTES = 32 * 1024 * 1024;
const CACHE_ITEM_BYTES = 2 * 1024 * 1024;
/** store.meta key prefix: subresource URL → payload digest archived (across runs). */
const ARCHIVED_PREFIX = 'render-sub\0';

/** Counts of the browser's requests, by what became of them (the render summary's `subresources`). */
export interface SubresourceCounts { fetched: number; cached: number; refused: number; failed: number; archived: number; alreadyArchived: number; robotsRefused: number }

export interface BrowserRequestComponents {
  config: Pick<AgentConfig, 'render' | 'robots'>;
  store: Pick<Store, 'meta'>;
  fetcher: Pick<Fetcher, 'fetch'>;
  robots: Pick<RobotsCache, 'lookup' | 'step' | 'giveUp'>;
  clocks: Pick<HostClocks, 'acquire'>;
  archive: Pick<Archive, 'enabled' | 'writeExchange'>;
  /** Our robots.txt product token (RFC 9309 §2.2.1). */
  token: string;
  /** The render tier's Prometheus series, once it opened. */
  metrics(): Pick<RenderMetrics, 'subresource'> | undefined;
}

export class BrowserRequests {
  readonly counts: SubresourceCounts = { fetched: 0, cached: 0, refused: 0, failed: 0, archived: 0, alreadyArchived: 0, robotsRefused: 0 };
  private readonly cache = new Map<string, Subresource>();
  private cacheBytes = 0;
  private readonly robotsKnown = new Map<string, RobotsEntry>();
  private readonly robotsPending = new Map<string, Promise<RobotsEntry | undefined>>();

  constructor(private readonly c: BrowserRequestComponents) {}

  /** robots.txt of the request's origin (fetched, timed by its host's clock, when the agent has no copy). */
  async allowed(url: string): Promise<boolean> {
    let origin: string;
    try { origin = new URL(url).origin; } catch { return false; }
    const entry = await this.robotsFor(origin);
    const ok = entry !== undefined && entry.verdict !== 'unreachable' && entry.rules.isAllowed(url, this.c.token);
    if (!ok) {
      this.counts.robotsRefused++;
      this.counts.refused++;
      this.c.metrics()?.subresource('refused');
    }
    return ok;
  }

  private robotsFor(origin: string): Promise<RobotsEntry | undefined> {
    const known = this.robotsKnown.get(origin);
    if (known !== undefined && known.expires > Date.now()) return Promise.resolve(known);
    let p = this.robotsPending.get(origin);
    if (p === undefined) {
      p = this.fetchRobots(origin).then((e) => {
        if (e !== undefined) {
          if (this.robotsKnown.size >= 4096) this.robotsKnown.clear();
          this.robotsKnown.set(origin, e);
        }
        return e;
      }, () => undefined).finally(() => this.robotsPending.delete(origin));
      this.robotsPending.set(origin, p);
    }
    return p;
  }

  /** The agent's copy, or the exchange as a host turn makes it (RFC 9309 §2.3.1.2: up to maxRedirects hops), archived. */
  private async fetchRobots(origin: string): Promise<RobotsEntry | undefined> {
    const stored = await this.c.robots.lookup(origin);
    if (stored !== undefined) return stored;
    const deadline = Date.now() + this.c.config.render.timeoutMs;
    let target = `${origin}/robots.txt`;
    for (let hop = 0; hop <= this.c.config.robots.maxRedirects; hop++) {
      const held = await this.c.clocks.acquire(hostOf(target), deadline);
      if (held === undefined) return undefined;
      let step;
      try {
        step = await this.c.robots.step(origin, target, hop);
      } catch {
        held.done(undefined);
        return undefined;
      }
      held.done(step.out);
      if (step.out.ok) await this.c.archive.writeExchange(step.out);
      if (step.entry !== undefined) return step.entry;
      target = step.next;
    }
    return this.c.robots.giveUp(origin);
  }

  /** One subresource: from this run's copy, else fetched on the host's clock and archived once. */
  async fetchSubresource(url: string, method: string, deadline: number): Promise<Subresource | undefined> {
    const counts = this.counts;
    // The crawler's fetcher makes GET requests only; a page's POST (a form, an API call) is refused.
    if (method !== 'GET') { counts.refused++; this.c.metrics()?.subresource('refused'); return undefined; }
    const cached = this.cache.get(url);
    if (cached !== undefined) {
      this.cache.delete(url);
      this.cache.set(url, cached);
      counts.cached++;
      this.c.metrics()?.subresource('cached');
      return cached;
    }
    const held = await this.c.clocks.acquire(hostOf(url), deadline);
    if (held === undefined) { counts.refused++; this.c.metrics()?.subresource('refused'); return undefined; }
    let out;
    try {
      out = await this.c.fetcher.fetch(url);
    } finally {
      held.done(out);
    }
    if (!out.ok) { counts.failed++; return undefined; }
    counts.fetched++;
    this.c.metrics()?.subresource('fetched');
    await this.archiveOnce(out);
    const sub: Subresource = {
      url, method, status: out.status, headers: out.responseHeaders.map(([name, value]) => ({ name, value })),
      contentType: out.header('content-type') ?? '', body: out.body,
    };
    this.remember(sub);
    return sub;
  }

  /** Response and request records, unless an earlier run archived the same payload for this URL. */
  private async archiveOnce(out: FetchResponse): Promise<void> {
    if (!this.c.archive.enabled) return;
    const key = Buffer.from(ARCHIVED_PREFIX + out.url, 'utf8');
    const digest = Buffer.from(createHash('sha1').update(out.body).digest('hex') + ' ' + out.status, 'utf8');
    const before = await this.c.store.meta.get(key).catch(() => undefined);
    if (before !== undefined && Buffer.compare(before, digest) === 0) { this.counts.alreadyArchived++; return; }
    await this.c.archive.writeExchange(out);
    this.counts.archived++;
    await this.c.store.meta.put(key, digest);
  }

  private remember(sub: Subresource): void {
    if (sub.body.length > CACHE_ITEM_BYTES) return;
    this.cache.set(sub.url, sub);
    this.cacheBytes += sub.body.length;
    // Least recently used first (Map order), bounded by the byte budget.
    for (const [u, s] of this.cache) {
      if (this.cacheBytes <= CACHE_BYTES) break;
      this.cache.delete(u);
      this.cacheBytes -= s.body.length;
    }
  }
}
