// Recrawl settings (the `recrawl` part of AgentConfig) and the scaled schedule
// configuration derived from them. Durations here are in *simulated* time;
// `speedup` says how much faster simulated time runs than the wall clock, so
// a test can live through a week in seconds with the same code paths.
import type { RecrawlConfig } from './schedule.js';
import { DEFAULT_RECRAWL, DEFAULT_RECRAWL_SETTINGS } from '../config.js';

export interface RecrawlSettings {
  /** `--recrawl`: revisit fetched pages. Off: a one-pass crawl. */
  enabled: boolean;
  /** Interval bounds and the first interval without sitemap hints, simulated ms. */
  minIntervalMs: number;
  maxIntervalMs: number;
  initialIntervalMs: number;
  /** Share of fetches given to revisits while discovery is also waiting (0–1). */
  revisitShare: number;
  /** Simulated time runs this many times faster than real time (1 = real time; 36000 = 1 h in 100 ms). */
  speedup: number;
  /** Due URLs moved into the frontier per scan, and the most revisits waiting there at once. */
  batchSize: number;
  /** How often the due index is scanned, real ms (0: a quarter of the minimum interval, within 20 ms – 1 s). */
  scanIntervalMs: number;
  /** `--until-idle` with recrawl: exit once nothing is queued and nothing is due within this long, simulated ms. */
  horizonMs: number;
  /** Sitemap hints (lastmod/changefreq/priority) stored per run at most; each is deleted at the URL's first fetch. */
  maxHints: number;
}

export function defaultRecrawlSettings(): RecrawlSettings {
  return { ...DEFAULT_RECRAWL_SETTINGS };
}

/** The schedule configuration in real milliseconds (what src/recrawl/schedule.ts works with). */
export function scheduleConfig(s: RecrawlSettings): RecrawlConfig {
  const scale = s.speedup > 0 && Number.isFinite(s.speedup) ? 1 / s.speedup : 1;
  const min = Math.max(1, s.minIntervalMs * scale);
  const max = Math.max(min, s.maxIntervalMs * scale);
  const initial = Math.min(max, Math.max(min, s.initialIntervalMs * scale));
  const share = s.revisitShare >= 0 && s.revisitShare <= 1 ? s.revisitShare : DEFAULT_RECRAWL.revisitShare;
  return { minIntervalMs: min, maxIntervalMs: max, initialIntervalMs: initial, revisitShare: share, timeScale: scale };
}

/** Real ms between two scans of the due index. */
export function scanInterval(s: RecrawlSettings, cfg: RecrawlConfig): number {
  if (s.scanIntervalMs > 0) return s.scanIntervalMs;
  const q = cfg.minIntervalMs / 4;
  return q < 20 ? 20 : q > 1000 ? 1000 : Math.round(q);
}
