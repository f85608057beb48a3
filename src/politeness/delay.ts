// Per-host politeness (docs/politeness.md): the next request to a
// host waits for the largest of
//   - the configured floor,
//   - the site's Crawl-delay (advisory, non-standard, capped),
//   - k × the last response time (Mercator, Heydon & Najork 1999: k = 10),
//   - a server's Retry-After (RFC 9110 §10.2.3).
// Pure: the caller passes the clock.

export interface DelayInputs {
  /** When the last exchange with the host ended, epoch ms. */
  endedAt: number;
  minDelayMs: number;
  crawlDelayMs?: number;
  lastResponseMs: number;
  factor: number;
  retryAfterMs?: number;
  maxDelayMs: number;
}

export function nextAllowedAt(p: DelayInputs): number {
  const delay = Math.max(
    p.minDelayMs,
    Math.min(p.crawlDelayMs ?? 0, p.maxDelayMs),
    p.factor * p.lastResponseMs,
    Math.min(p.retryAfterMs ?? 0, p.maxDelayMs),
  );
  return p.endedAt + delay;
}

/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Returns ms
 * from `now`, or undefined when absent or unparseable.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}
