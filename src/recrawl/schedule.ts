// Recrawl scheduling core (docs/recrawl.md): when to fetch a URL again, how urgent a
// due URL is, how to split fetches between revisits and discovery, and the
// per-URL state that makes revisits cheap (conditional GET).
//
// Pure: plain data in, plain data out; the caller passes the clock.
//
// The revisit interval adapts per URL, in the spirit of Cho & Garcia-Molina
// ("Effective page refresh policies", 2003) without their estimator: halved
// when the payload digest changed since the last fetch, doubled when it did
// not (a 304 counts as unchanged), clamped to [minIntervalMs, maxIntervalMs].
// The first interval comes from the sitemap's <changefreq> / <lastmod> when
// the URL had them (sitemaps.org protocol, "XML tag definitions"), else
// initialIntervalMs.
import type { Changefreq } from '../sitemap/fields.js';
import { DEFAULT_RECRAWL } from '../config.js';

export interface RecrawlConfig {
  minIntervalMs: number;
  maxIntervalMs: number;
  /** First revisit interval when the sitemap says nothing. */
  initialIntervalMs: number;
  /** Share of fetch slots given to revisits when both kinds are waiting (0–1). */
  revisitShare: number;
  /**
   * Real ms per simulated ms (default 1). Bounds above are given already scaled
   * (see scaleRecrawlConfig); this only scales the fixed periods that come from
   * outside the config: sitemap <changefreq>, and the recrawler's scan horizon.
   */
  timeScale?: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// Defaults: src/config.ts (one place for every default).
export { DEFAULT_RECRAWL };

export interface RecrawlState {
  /** Current revisit interval, ms. */
  intervalMs: number;
  /** Last fetch (a 2xx or a 304), epoch ms. */
  fetchedAt: number;
  /** Last time a payload was captured (a 2xx): what a 304's WARC revisit record refers to. */
  capturedAt: number;
  /** When the URL is due again, epoch ms. */
  nextDueAt: number;
  /** ETag of the captured representation, verbatim (RFC 9110 §8.8.3). */
  etag?: string;
  /** Last-Modified of the captured representation, epoch ms (RFC 9110 §8.8.2). */
  lastModified?: number;
  /** Payload digest of the capture (e.g. the raw SHA-256, or an 8-byte xxh64), ≤ 64 bytes. */
  digest?: Uint8Array;
  /** Fetches so far (saturates at 65535). */
  fetches: number;
  /** Fetches that found the payload changed (saturates at 65535). */
  changes: number;
}

/** Sitemap <url> hints: <changefreq>, and <lastmod> as epoch ms or the ISO string src/sitemap/fields.ts produces. */
export interface SitemapHints {
  changefreq?: Changefreq;
  lastmod?: string | number;
}

export interface FetchObservation {
  /** When the response arrived, epoch ms. */
  fetchedAt: number;
  /** The server answered 304 Not Modified (RFC 9110 §15.4.5). */
  notModified?: boolean;
  /** Payload digest of a 2xx body. */
  digest?: Uint8Array;
  /** ETag response header, if any. */
  etag?: string;
  /** Last-Modified response header, if any. */
  lastModified?: string;
  /** Sitemap hints, used to seed the first interval. */
  hints?: SitemapHints;
}

const CHANGEFREQ_MS: Record<Changefreq, number> = {
  always: 0, // → minIntervalMs
  hourly: HOUR,
  daily: DAY,
  weekly: 7 * DAY,
  monthly: 30 * DAY,
  yearly: 365 * DAY,
  never: Infinity, // "archived URLs" → maxIntervalMs
};

function clamp(ms: number, cfg: RecrawlConfig): number {
  return ms < cfg.minIntervalMs ? cfg.minIntervalMs : ms > cfg.maxIntervalMs ? cfg.maxIntervalMs : ms;
}

/**
 * First revisit interval from sitemap hints. <changefreq> maps to its period;
 * <lastmod> gives the page's age, taken as an estimate of how long it stays
 * unchanged (a page last modified an hour ago is likely to change again soon).
 * With both, the shorter wins. Without either, initialIntervalMs.
 */
export function seedInterval(hints: SitemapHints | undefined, now: number, cfg: RecrawlConfig = DEFAULT_RECRAWL): number {
  let best = Infinity;
  let any = false;
  if (hints?.changefreq !== undefined && hints.changefreq in CHANGEFREQ_MS) {
    best = CHANGEFREQ_MS[hints.changefreq] * (cfg.timeScale ?? 1);
    any = true;
  }
  if (hints?.lastmod !== undefined) {
    const t = typeof hints.lastmod === 'number' ? hints.lastmod : Date.parse(hints.lastmod);
    if (Number.isFinite(t) && t <= now) {
      best = Math.min(best, now - t);
      any = true;
    }
  }
  return clamp(any ? best : cfg.initialIntervalMs, cfg);
}

/** When a URL fetched at `fetchedAt` is due again. */
export function nextFetchAt(state: Pick<RecrawlState, 'intervalMs'>, fetchedAt: number): number {
  return fetchedAt + state.intervalMs;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The state after a fetch. `prev` undefined: the first fetch (interval seeded
 * from the hints). A 304 or an identical digest doubles the interval, a
 * different digest halves it; without two digests to compare it is kept.
 * Returns a new object.
 */
export function recordFetch(prev: RecrawlState | undefined, obs: FetchObservation, cfg: RecrawlConfig = DEFAULT_RECRAWL): RecrawlState {
  const at = obs.fetchedAt;
  const etag = validEtag(obs.etag);
  const lm = parseHttpDate(obs.lastModified);
  const lastModified = lm !== undefined && lm <= at ? lm : undefined; // a future date would make every IMS answer 304
  if (!prev) {
    const intervalMs = seedInterval(obs.hints, at, cfg);
    return {
      intervalMs, fetchedAt: at, capturedAt: obs.notModified ? 0 : at, nextDueAt: at + intervalMs,
      ...(etag !== undefined ? { etag } : {}),
      ...(lastModified !== undefined ? { lastModified } : {}),
      ...(obs.digest && obs.digest.length <= 64 ? { digest: obs.digest } : {}),
      fetches: 1, changes: 0,
    };
  }
  let intervalMs = prev.intervalMs;
  let changes = prev.changes;
  let next: RecrawlState;
  if (obs.notModified) {
    intervalMs = clamp(intervalMs * 2, cfg);
    // RFC 9110 §15.4.5: a 304 carries the validators a 200 would have; keep ours otherwise.
    next = { ...prev, intervalMs, fetchedAt: at };
    if (etag !== undefined) next.etag = etag;
    if (lastModified !== undefined) next.lastModified = lastModified;
  } else {
    const digest = obs.digest && obs.digest.length <= 64 ? obs.digest : undefined;
    if (digest && prev.digest) {
      if (sameBytes(digest, prev.digest)) intervalMs = clamp(intervalMs * 2, cfg);
      else { intervalMs = clamp(intervalMs / 2, cfg); changes = Math.min(changes + 1, 0xffff); }
    }
    // A new capture: its validators replace the old ones (absent ones are dropped).
    next = { intervalMs, fetchedAt: at, capturedAt: at, nextDueAt: 0, fetches: prev.fetches, changes };
    if (etag !== undefined) next.etag = etag;
    if (lastModified !== undefined) next.lastModified = lastModified;
    if (digest) next.digest = digest;
  }
  next.fetches = Math.min(prev.fetches + 1, 0xffff);
  next.changes = changes;
  next.nextDueAt = at + intervalMs;
  return next;
}

/**
 * A sitemap seen after the last capture says the page was modified after it:
 * make it due now (the interval itself is left to the digest to judge).
 */
export function applySitemapHint(state: RecrawlState, hints: SitemapHints, now: number): RecrawlState {
  if (hints.lastmod === undefined) return state;
  const t = typeof hints.lastmod === 'number' ? hints.lastmod : Date.parse(hints.lastmod);
  if (!Number.isFinite(t) || t <= state.capturedAt || t > now || state.nextDueAt <= now) return state;
  return { ...state, nextDueAt: now };
}

/** Frontier priority classes (src/frontier/priority.ts: 0 lowest … 7 fetched first). */
export const REVISIT_BASE_CLASS = 4;

/**
 * Priority class a due URL re-enters the frontier with: 4 (a depth-1 link's
 * class) when just due, +1 once it is half an interval overdue, +2 at two
 * intervals, +3 (the top, 7) at eight. Relative to the URL's own interval, so
 * it is the same at any time scale, and it only grows while the URL waits:
 * nothing starves. Same steps as priorityClass()'s overdue bonus.
 */
export function revisitPriority(dueAt: number, now: number, intervalMs: number): number {
  const late = now - dueAt;
  if (!(late > 0) || !(intervalMs > 0)) return REVISIT_BASE_CLASS;
  const x = late / intervalMs;
  return REVISIT_BASE_CLASS + (x >= 8 ? 3 : x >= 2 ? 2 : x >= 0.5 ? 1 : 0);
}

// ---- sitemap hints, as stored until a URL's first fetch -------------------------
//
//   0  u8   flags: 1 changefreq, 2 lastmod, 4 priority
//   1  u8   changefreq (index in CHANGEFREQS)
//   2  u8   priority × 100 (0–100)
//   3  u48  lastmod, epoch ms

export interface StoredHints extends SitemapHints {
  /** Sitemap <priority>, 0.0–1.0 (for the priority frontier's sitemapPriority). */
  priority?: number;
}

const CHANGEFREQS: readonly Changefreq[] = ['always', 'hourly', 'daily', 'weekly', 'monthly', 'yearly', 'never'];

/** null when there is nothing worth storing. */
export function encodeHints(h: StoredHints): Buffer | null {
  const cf = h.changefreq !== undefined ? CHANGEFREQS.indexOf(h.changefreq) : -1;
  const lm = h.lastmod === undefined ? NaN : typeof h.lastmod === 'number' ? h.lastmod : Date.parse(h.lastmod);
  const pr = typeof h.priority === 'number' && h.priority >= 0 && h.priority <= 1 ? Math.round(h.priority * 100) : -1;
  const flags = (cf >= 0 ? 1 : 0) | (Number.isFinite(lm) && lm >= 0 ? 2 : 0) | (pr >= 0 ? 4 : 0);
  if (!flags) return null;
  const b = Buffer.alloc(9);
  b[0] = flags;
  b[1] = cf >= 0 ? cf : 0;
  b[2] = pr >= 0 ? pr : 0;
  if (flags & 2) b.writeUIntBE(Math.min(Math.floor(lm), 2 ** 48 - 1), 3, 6);
  return b;
}

export function decodeHints(b: Uint8Array | undefined): StoredHints | undefined {
  if (!b || b.length !== 9 || b[0]! & ~7 || b[1]! >= CHANGEFREQS.length || b[2]! > 100) return undefined;
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length);
  const h: StoredHints = {};
  if (buf[0]! & 1) h.changefreq = CHANGEFREQS[buf[1]!];
  if (buf[0]! & 2) h.lastmod = buf.readUIntBE(3, 6);
  if (buf[0]! & 4) h.priority = buf[2]! / 100;
  return h;
}

// ---- revisit / discovery budget ----------------------------------------------

/** Credits of a smooth weighted round-robin between the two kinds (they always sum to 0). */
export interface ShareState { revisit: number; discovery: number }

export function newShare(): ShareState { return { revisit: 0, discovery: 0 }; }

/**
 * Which kind of URL to serve next. With both waiting, revisits get
 * `revisitShare` of the picks, interleaved evenly (70/30 → R D R R R D R …);
 * with one kind waiting it gets every pick and no debt builds up, so discovery
 * is not starved later for revisits it could not have taken. null: neither.
 */
export function nextKind(share: ShareState, revisitShare: number, hasRevisit: boolean, hasDiscovery: boolean): 'revisit' | 'discovery' | null {
  if (!hasRevisit) return hasDiscovery ? 'discovery' : null;
  if (!hasDiscovery) return 'revisit';
  const w = revisitShare > 1 ? 1 : revisitShare > 0 ? revisitShare : 0;
  share.revisit += w;
  share.discovery += 1 - w;
  if (share.revisit >= share.discovery) { share.revisit -= 1; return 'revisit'; }
  share.discovery -= 1;
  return 'discovery';
}

// ---- conditional GET ------------------------------------------------------------

/**
 * Request headers for a revisit (RFC 9110 §13.1.2 If-None-Match, §13.1.3
 * If-Modified-Since). Both are sent when both validators are known: a server
 * that understands ETags evaluates If-None-Match and ignores the date (§13.2.2),
 * one that does not still has the date. The ETag is echoed verbatim; the date
 * is sent as an IMF-fixdate.
 */
export function conditionalHeaders(state: Pick<RecrawlState, 'etag' | 'lastModified'>): [string, string][] {
  const out: [string, string][] = [];
  if (state.etag) out.push(['If-None-Match', state.etag]);
  if (state.lastModified !== undefined) out.push(['If-Modified-Since', new Date(state.lastModified).toUTCString()]);
  return out;
}

// Visible ASCII, SP and obs-text; bounded, so the test cannot backtrack. Stricter
// than nothing, laxer than §8.8.3 (servers that send unquoted tags still match their own).
const ETAG_OK = /^[\x20-\x7e\x80-\xff]{1,255}$/;

function validEtag(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const t = v.trim();
  return ETAG_OK.test(t) ? t : undefined;
}

const ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/** HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, obsolete RFC 850 and asctime forms, all GMT) → epoch ms. */
export function parseHttpDate(v: string | undefined): number | undefined {
  if (v === undefined || v.length > 64) return undefined;
  const s = v.trim();
  // asctime carries no zone; Date.parse would read it as local time.
  const t = Date.parse(ASCTIME.test(s) ? `${s} GMT` : s);
  return Number.isFinite(t) && t >= 0 ? Math.floor(t / 1000) * 1000 : undefined;
}

// ---- LevelDB encoding ------------------------------------------------------------
//
//   0  u8   version (2)
//   1  u8   flags: 1 etag, 2 lastModified, 4 digest
//   2  u48  intervalMs
//   8  u48  fetchedAt, epoch ms
//  14  u48  capturedAt, epoch ms
//  20  u48  nextDueAt, epoch ms
//  26  u16  fetches
//  28  u16  changes
//  30  [u48 lastModified, epoch ms]
//      [u8 n, n bytes digest]
//      [u8 n, n bytes etag, latin1]
// Milliseconds, not seconds: with a time scale (tests, simulations) an interval
// can be 100 ms. u48 ms lasts until the year 10889. At most 357 bytes.

const VERSION = 2;
const F_ETAG = 1;
const F_LM = 2;
const F_DIGEST = 4;
const FIXED = 30;
const U48_MAX = 2 ** 48 - 1;
export const RECRAWL_STATE_MAX_BYTES = FIXED + 6 + 1 + 64 + 1 + 255;

function u48(ms: number, up = false): number {
  const v = up ? Math.ceil(ms) : Math.floor(ms);
  return v > U48_MAX ? U48_MAX : v > 0 ? v : 0;
}

export function encodeRecrawlState(s: RecrawlState): Buffer {
  const etag = s.etag !== undefined && ETAG_OK.test(s.etag) ? s.etag : undefined;
  const digest = s.digest && s.digest.length <= 64 ? s.digest : undefined;
  const lm = s.lastModified !== undefined && Number.isFinite(s.lastModified) && s.lastModified >= 0 ? s.lastModified : undefined;
  const size = FIXED + (lm !== undefined ? 6 : 0) + (digest ? 1 + digest.length : 0) + (etag ? 1 + etag.length : 0);
  const b = Buffer.allocUnsafe(size);
  b[0] = VERSION;
  b[1] = (etag ? F_ETAG : 0) | (lm !== undefined ? F_LM : 0) | (digest ? F_DIGEST : 0);
  b.writeUIntBE(u48(s.intervalMs), 2, 6);
  b.writeUIntBE(u48(s.fetchedAt), 8, 6);
  b.writeUIntBE(u48(s.capturedAt), 14, 6);
  b.writeUIntBE(u48(s.nextDueAt, true), 20, 6);
  b.writeUInt16BE(Math.min(Math.max(s.fetches | 0, 0), 0xffff), 26);
  b.writeUInt16BE(Math.min(Math.max(s.changes | 0, 0), 0xffff), 28);
  let o = FIXED;
  if (lm !== undefined) { b.writeUIntBE(u48(lm), o, 6); o += 6; }
  if (digest) { b[o++] = digest.length; b.set(digest, o); o += digest.length; }
  if (etag) { b[o++] = etag.length; b.write(etag, o, 'latin1'); o += etag.length; }
  return b;
}

/** Inverse of encodeRecrawlState; null for another version or a damaged value. */
export function decodeRecrawlState(b: Uint8Array): RecrawlState | null {
  if (b.length < FIXED || b.length > RECRAWL_STATE_MAX_BYTES || b[0] !== VERSION) return null;
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length);
  const flags = buf[1]!;
  if (flags & ~(F_ETAG | F_LM | F_DIGEST)) return null;
  const s: RecrawlState = {
    intervalMs: buf.readUIntBE(2, 6),
    fetchedAt: buf.readUIntBE(8, 6),
    capturedAt: buf.readUIntBE(14, 6),
    nextDueAt: buf.readUIntBE(20, 6),
    fetches: buf.readUInt16BE(26),
    changes: buf.readUInt16BE(28),
  };
  let o = FIXED;
  if (flags & F_LM) {
    if (o + 6 > buf.length) return null;
    s.lastModified = buf.readUIntBE(o, 6);
    o += 6;
  }
  if (flags & F_DIGEST) {
    const n = buf[o++];
    if (n === undefined || n > 64 || o + n > buf.length) return null;
    s.digest = new Uint8Array(buf.subarray(o, o + n)); // a copy: LevelDB may reuse the value's memory
    o += n;
  }
  if (flags & F_ETAG) {
    const n = buf[o++];
    if (!n || o + n > buf.length) return null;
    s.etag = buf.toString('latin1', o, o + n);
    o += n;
  }
  return o === buf.length ? s : null;
}
