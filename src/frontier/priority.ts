// Priority classes for the frontier's front queues (Mercator: Heydon & Najork,
// "Mercator: A scalable, extensible Web crawler", WWW 1999, §3.2 — "front
// queues" are one FIFO per priority; the URL's priority decides which one).
//
// A pure function from a few hints to a small integer class, so that the disk
// frontier can key entries by it (one byte of the key) and scheduling stays a
// handful of integer comparisons. Higher class = fetched earlier.
//
// The hints, and why each one:
//  - depth (link hops from a seed): breadth-first order finds the pages with
//    high in-degree / PageRank early (Najork & Wiener, "Breadth-first crawling
//    yields high-quality pages", WWW 2001), so shallow URLs go first;
//  - sitemap <priority> (0.0–1.0, default 0.5, sitemaps.org "XML tag
//    definitions"): the site's own ranking *relative to its other pages*, so it
//    only nudges (±2 classes) rather than overriding the crawler's order;
//  - in-link hints: how many distinct pages were seen linking to the URL (cheap
//    backlink count, Cho, Garcia-Molina & Page, "Efficient crawling through URL
//    ordering", WWW 1998);
//  - recrawl overdue-ness (docs/recrawl.md): a revisit whose due time has passed gains
//    classes the longer it waits, so revisits never starve behind discovery.

/** Number of classes; classes are 0 (lowest) … PRIORITY_CLASSES − 1 (highest). */
export const PRIORITY_CLASSES = 8;
export const MAX_PRIORITY = PRIORITY_CLASSES - 1;

export interface PriorityHints {
  /** Link hops from a seed (0 = seed). */
  depth: number;
  /** Sitemap <priority>, 0.0–1.0 (absent = the protocol's default 0.5). */
  sitemapPriority?: number;
  /** Distinct pages known to link here (a hint; absent = unknown). */
  inlinks?: number;
  /** Recrawl: epoch ms at which the URL became due again. */
  dueAt?: number;
  /** Current time in epoch ms (needed with `dueAt`). */
  now?: number;
  /** Recrawl: the URL's current revisit interval in ms; makes overdue-ness relative to it. */
  intervalMs?: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;

const finite = (x: number | undefined): x is number => typeof x === 'number' && Number.isFinite(x);

/**
 * The priority class (0–7, 7 first) of a URL. Never throws: absent, negative or
 * non-finite hints are ignored.
 *
 * score = 2 (base)
 *       + depth bonus:      depth 0 → 3, 1 → 2, 2–3 → 1, ≥ 4 → 0
 *       + sitemap nudge:    round((p − 0.5) × 4) ∈ −2…+2
 *       + in-link bonus:    ≥ 3 → 1, ≥ 20 → 2
 *       + overdue bonus:    due → 1, then +1 at each of 1 h / 1 d / 1 week late
 *                           (or 0.5 / 2 / 8 intervals late when `intervalMs` is known)
 * clamped to 0…7. Without any hint: seeds 5, their links 4, deep pages 2.
 */
export function priorityClass(h: PriorityHints): number {
  let score = 2;
  const d = finite(h.depth) && h.depth > 0 ? h.depth : 0;
  score += d === 0 ? 3 : d === 1 ? 2 : d <= 3 ? 1 : 0;
  if (finite(h.sitemapPriority)) {
    const p = h.sitemapPriority < 0 ? 0 : h.sitemapPriority > 1 ? 1 : h.sitemapPriority;
    score += Math.round((p - 0.5) * 4);
  }
  if (finite(h.inlinks)) score += inlinkBonus(h.inlinks);
  if (finite(h.dueAt) && finite(h.now) && h.now >= h.dueAt) {
    const late = h.now - h.dueAt;
    if (finite(h.intervalMs) && h.intervalMs > 0) {
      const x = late / h.intervalMs;
      score += x >= 8 ? 4 : x >= 2 ? 3 : x >= 0.5 ? 2 : 1;
    } else {
      score += late >= WEEK ? 4 : late >= DAY ? 3 : late >= HOUR ? 2 : 1;
    }
  }
  return score < 0 ? 0 : score > MAX_PRIORITY ? MAX_PRIORITY : score;
}

/**
 * Classes gained from in-links: 1 from 3 linking pages, 2 from 20. A queued
 * URL is promoted one class each time its count crosses one of these
 * (src/frontier/inlinks.ts, the agent's promotions).
 */
export function inlinkBonus(inlinks: number): number {
  return inlinks >= 20 ? 2 : inlinks >= 3 ? 1 : 0;
}

/** A caller-supplied class, made safe: integers 0–7 pass, anything else is clamped (NaN → the depth default). */
export function clampClass(p: number | undefined, depth: number): number {
  if (p === undefined || !Number.isFinite(p)) return priorityClass({ depth });
  const c = Math.round(p);
  return c < 0 ? 0 : c > MAX_PRIORITY ? MAX_PRIORITY : c;
}
