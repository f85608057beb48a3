// Politeness checks over a request log (docs/politeness.md, docs/synthetic-web.md "Politeness checks":
// one connection per host, a minimum delay between requests to a host, and
// optionally the same per IP address).
import type { RequestRecord, Violation } from './types.js';

export interface PolitenessOptions {
  /** What the rule is kept for: the Host name (default), the server IP the client connected to, or a custom key. */
  key?: 'host' | 'ip' | ((r: RequestRecord) => string);
  /**
   * Where the delay is counted from. 'start' (default): the previous
   * request's arrival, the weakest rule any polite crawler keeps whatever it
   * counts from. 'end': the previous response's completion (Mercator-style).
   */
  measure?: 'start' | 'end';
  /** Slack for timing jitter between client and server clocks, ms. Default 0. */
  toleranceMs?: number;
  /** Only check requests for which this returns true (e.g. leave out /robots.txt). */
  filter?: (r: RequestRecord) => boolean;
  /** Also report overlapping requests (more than one in flight per key). Default true. */
  concurrency?: boolean;
}

/**
 * Every pair of requests with the same key that starts closer than
 * `minDelayMs` after its predecessor ('tooClose'), and every request that
 * starts while an earlier one of the same key is still in flight
 * ('concurrent'). Requests are ordered by start time; in-flight records
 * (end = 0) count as never ending.
 */
export function checkPoliteness(requests: readonly RequestRecord[], minDelayMs: number, opts: PolitenessOptions = {}): Violation[] {
  const keyOpt = opts.key ?? 'host';
  const keyOf = keyOpt === 'host' ? (r: RequestRecord) => r.host : keyOpt === 'ip' ? (r: RequestRecord) => r.localAddress : keyOpt;
  const tol = opts.toleranceMs ?? 0;
  const fromEnd = opts.measure === 'end';
  const concurrency = opts.concurrency ?? true;
  const groups = new Map<string, RequestRecord[]>();
  for (const r of requests) {
    if (opts.filter && !opts.filter(r)) continue;
    const k = keyOf(r);
    let g = groups.get(k);
    if (g === undefined) groups.set(k, (g = []));
    g.push(r);
  }
  const out: Violation[] = [];
  for (const [key, g] of groups) {
    g.sort((a, b) => a.start - b.start);
    // The request still in flight the longest among the earlier ones.
    let longest: RequestRecord | null = null;
    for (let j = 1; j < g.length; j++) {
      const prev = g[j - 1];
      const cur = g[j];
      const prevEnd = (r: RequestRecord): number => (r.end === 0 ? Infinity : r.end);
      if (longest === null || prevEnd(prev) > prevEnd(longest)) longest = prev;
      if (concurrency && cur.start < prevEnd(longest)) {
        out.push({ key, kind: 'concurrent', first: longest, second: cur, gapMs: cur.start - longest.start });
      }
      const from = fromEnd ? prevEnd(prev) : prev.start;
      const gap = cur.start - from;
      if (gap + tol < minDelayMs) out.push({ key, kind: 'tooClose', first: prev, second: cur, gapMs: gap });
    }
  }
  return out;
}

/** checkPoliteness keyed by the server address the client connected to (per-IP politeness). */
export function checkPolitenessPerIp(requests: readonly RequestRecord[], minDelayMs: number, opts: Omit<PolitenessOptions, 'key'> = {}): Violation[] {
  return checkPoliteness(requests, minDelayMs, { ...opts, key: 'ip' });
}
