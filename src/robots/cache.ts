// Getting robots.txt for an origin (RFC 9309 §2.3) and keeping it (§2.4).
//
// Outcomes by status (RFC 9309 §2.3.1):
//   2xx            → parse the body (at least the first 500 KiB, §2.5)
//   3xx            → follow up to 5 redirects (§2.3.1.2), then treat as unavailable
//   4xx            → "unavailable": allow all (§2.3.1.3). 429 is the exception: it
//                    says the server is overloaded, so we treat it like 5xx (as
//                    Google does) rather than reading it as permission.
//   5xx / network  → "unreachable": disallow all (§2.3.1.4), or the last good copy
//                    if we have one, however old.
// Good copies are cached in LevelDB for at most `cacheTtlMs` (≤ 24 h, §2.4).
// An unreachable verdict is cached only briefly, so the site is asked again soon.
import type { Sublevel } from '../store/db.js';
import type { Fetcher, FetchOutcome } from '../fetch/fetcher.js';
import type { RobotsConfig } from '../config.js';
import { RobotsTxt } from './parse.js';

export type RobotsVerdict = 'parsed' | 'unavailable' | 'unreachable' | 'stale-copy';

export interface RobotsEntry {
  rules: RobotsTxt;
  verdict: RobotsVerdict;
  /** Epoch ms after which it must be fetched again. */
  expires: number;
  status?: number;
}

/** One request of a robots.txt exchange (the caller logs, counts and WARC-records `out`). */
export type RobotsStep =
  | { out: FetchOutcome; entry: RobotsEntry; next?: undefined }
  | { out: FetchOutcome; next: string; entry?: undefined };

const UNREACHABLE_TTL_MS = 10 * 60_000;

interface Stored { fetchedAt: number; status: number; body: string }

export class RobotsCache {
  constructor(private readonly db: Sublevel, private readonly fetcher: Fetcher, private readonly cfg: RobotsConfig) {}

  /** The cached entry for an origin if still fresh. */
  async lookup(origin: string, now = Date.now()): Promise<RobotsEntry | undefined> {
    const stored = await this.readStored(origin);
    if (!stored || now - stored.fetchedAt >= this.cfg.cacheTtlMs) return undefined;
    return this.fromStored(stored, stored.fetchedAt + this.cfg.cacheTtlMs);
  }

  /**
   * One request of the robots.txt exchange for `origin`: `target` is
   * `${origin}/robots.txt` at hop 0, else the Location of hop − 1. Either the
   * exchange is decided (`entry`, stored) or it goes on at `next`, one hop
   * further. One request per call, so that the caller can wait for the
   * politeness clock of the target's host between hops (docs/politeness.md).
   */
  async step(origin: string, target: string, hop: number, now = Date.now()): Promise<RobotsStep> {
    const out = await this.fetcher.fetch(target);
    if (!out.ok) return { out, entry: await this.unreachable(origin, now) };
    const s = out.status;
    if (s >= 300 && s < 400) {
      const loc = out.header('location');
      if (!loc) return { out, entry: await this.store(origin, { fetchedAt: now, status: s, body: '' }) };
      let next: string;
      try { next = new URL(loc, target).href; } catch { return { out, entry: await this.store(origin, { fetchedAt: now, status: 404, body: '' }) }; }
      // §2.3.1.2: more than five redirects → treat as unavailable (allow all).
      if (hop >= this.cfg.maxRedirects) return { out, entry: await this.store(origin, { fetchedAt: now, status: 404, body: '' }) };
      // Not fetchable over HTTP: as if the fetch had failed.
      if (!next.startsWith('http://') && !next.startsWith('https://')) return { out, entry: await this.unreachable(origin, now) };
      return { out, next };
    }
    if (s === 429 || s >= 500) return { out, entry: await this.unreachable(origin, now) };
    if (s >= 200 && s < 300) {
      const body = out.body.subarray(0, this.cfg.maxBytes).toString('utf8');
      return { out, entry: await this.store(origin, { fetchedAt: now, status: s, body }) };
    }
    return { out, entry: await this.store(origin, { fetchedAt: now, status: s, body: '' }) };
  }

  /** The exchange ends without a request (e.g. a redirect to a host we no longer contact): unreachable (§2.3.1.4). */
  giveUp(origin: string, now = Date.now()): Promise<RobotsEntry> {
    return this.unreachable(origin, now);
  }

  private async unreachable(origin: string, now: number): Promise<RobotsEntry> {
    const stored = await this.readStored(origin);
    if (stored && stored.status >= 200 && stored.status < 300) {
      return { ...this.fromStored(stored, now + UNREACHABLE_TTL_MS), verdict: 'stale-copy' };
    }
    return { rules: RobotsTxt.disallowAll(), verdict: 'unreachable', expires: now + UNREACHABLE_TTL_MS };
  }

  private async store(origin: string, s: Stored): Promise<RobotsEntry> {
    await this.db.put(Buffer.from(origin), Buffer.from(JSON.stringify(s)));
    return this.fromStored(s, s.fetchedAt + this.cfg.cacheTtlMs);
  }

  private fromStored(s: Stored, expires: number): RobotsEntry {
    if (s.status >= 200 && s.status < 300) {
      return { rules: RobotsTxt.parse(s.body, { maxBytes: this.cfg.maxBytes }), verdict: 'parsed', expires, status: s.status };
    }
    return { rules: RobotsTxt.allowAll(), verdict: 'unavailable', expires, status: s.status };
  }

  private async readStored(origin: string): Promise<Stored | undefined> {
    const v = await this.db.get(Buffer.from(origin));
    if (!v) return undefined;
    try {
      const s = JSON.parse(v.toString('utf8')) as Stored;
      if (typeof s.fetchedAt === 'number' && typeof s.status === 'number' && typeof s.body === 'string') return s;
    } catch { /* corrupt entry: treat as absent, it is rewritten on the next fetch */ }
    return undefined;
  }
}
