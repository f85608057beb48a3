// Sitemaps 0.90 (https://www.sitemaps.org/protocol.html): XML <urlset>,
// <sitemapindex>, plain text (one URL per line) and the syndication feeds the
// protocol also accepts (RSS 2.0, Atom 0.3/1.0), plain or gzip-compressed.
//
// Pure and synchronous; bounded in time and memory by `maxBytes` and
// `maxUrls`; never throws. Everything that is turned away is counted:
// `rejected.invalid` (no usable <loc>, not an absolute http(s) URL, 2,048
// characters or more), `rejected.outOfScope` (the protocol's location rules,
// see scope.ts), `rejected.overLimit` (entries past `maxUrls`), and
// `invalidFields` (optional fields dropped because they do not validate).

import { Parser } from 'htmlparser2';
import { normalizeUrl, type NormalizeOptions } from '../url/normalize.js';
import { parseChangefreq, parsePriority, parseW3cDatetime, parseRfc822Date, type Changefreq } from './fields.js';
import { gunzipBounded, isGzip } from './gzip.js';
import { DEFAULT_SITEMAP_LIMITS } from './limits.js';
import { sitemapScope, inScope } from './scope.js';

export type SitemapKind = 'urlset' | 'sitemapindex' | 'feed' | 'text' | 'invalid';

export interface SitemapUrl {
  loc: string;
  /** ISO 8601 UTC (`toISOString()` form), from a valid W3C Datetime. */
  lastmod?: string;
  changefreq?: Changefreq;
  /** 0.0 – 1.0; absent when the file gives none (the protocol's default is 0.5). */
  priority?: number;
}

export interface SitemapChild {
  loc: string;
  lastmod?: string;
}

export interface SitemapRejected {
  outOfScope: number;
  invalid: number;
  overLimit: number;
}

export interface SitemapParseResult {
  kind: SitemapKind;
  /** Page URLs (urlset, text, feed), normalised, in file order. */
  urls: SitemapUrl[];
  /** Child sitemaps (sitemapindex), normalised, in file order. */
  sitemaps: SitemapChild[];
  rejected: SitemapRejected;
  /** True if the byte or entry limit cut the file short. */
  truncated: boolean;
  /** lastmod / changefreq / priority values dropped as invalid (their URL is kept). */
  invalidFields: number;
  /** Uncompressed bytes considered. */
  bytes: number;
  /** True if the body was gzip-compressed. */
  gzip: boolean;
  /** Why the kind is 'invalid', or what was cut; for logs. */
  note?: string;
}

export interface ParseSitemapOptions {
  /** Entries considered per file (default 50,000). */
  maxUrls?: number;
  /** Uncompressed bytes considered per file (default 50 MiB). */
  maxBytes?: number;
  /** Extra scope, e.g. from `robotsGrantPrefix()` when a robots.txt named this sitemap. */
  allowedPrefixes?: readonly string[];
  /** Options for normalising every <loc> (default: `DEFAULT_NORMALIZE_OPTIONS`). */
  normalize?: Partial<NormalizeOptions>;
}

/** "Your Sitemap must ... be less than 2,048 characters" (the <loc> definition). */
const MAX_LOC_LENGTH = 2047;
/** Text kept per field; longer values are invalid anyway, so the buffer stops growing. */
const MAX_FIELD_CHARS = 4096;
/**
 * Element nesting allowed in XML. Sitemaps nest four or five deep (urlset /
 * url / video:video / video:price ...), feeds a little more. The bound also
 * protects the parser: htmlparser2 keeps its open-element stack with
 * unshift/shift, so each level costs time proportional to the depth, and
 * unbounded nesting would be quadratic.
 */
const MAX_XML_DEPTH = 64;
/** A text body with no URL in its first lines is not a sitemap; stop there. */
const TEXT_GIVE_UP_LINES = 1000;

const SITEMAP_NS: ReadonlySet<string> = new Set([
  'http://www.sitemaps.org/schemas/sitemap/0.9',
  'https://www.sitemaps.org/schemas/sitemap/0.9',
  'http://www.google.com/schemas/sitemap/0.9',
  'http://www.google.com/schemas/sitemap/0.84',
]);
const ATOM_NS: ReadonlySet<string> = new Set(['http://www.w3.org/2005/Atom', 'http://purl.org/atom/ns#']);

const utf8 = new TextDecoder('utf-8'); // non-fatal (U+FFFD for bad bytes), strips a BOM

function emptyResult(kind: SitemapKind): SitemapParseResult {
  return {
    kind, urls: [], sitemaps: [], rejected: { outOfScope: 0, invalid: 0, overLimit: 0 },
    truncated: false, invalidFields: 0, bytes: 0, gzip: false,
  };
}

function invalid(r: SitemapParseResult, note: string): SitemapParseResult {
  r.kind = 'invalid';
  r.note = note;
  return r;
}

function posInt(v: unknown, dflt: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : dflt;
}

/**
 * Parses one sitemap file. `sitemapUrl` is where it was fetched from (after
 * redirects): it sets the scope of the URLs the file may list, and is the base
 * for the relative links that Atom/RSS feeds may contain.
 */
export function parseSitemap(body: string | Uint8Array, sitemapUrl: string, opts: ParseSitemapOptions = {}): SitemapParseResult {
  const r = emptyResult('invalid');
  try {
    return parseInto(r, body, sitemapUrl, opts ?? {});
  } catch (e) {
    // Not expected; the contract is to count, never to throw into the pipeline.
    r.kind = 'invalid';
    r.urls = [];
    r.sitemaps = [];
    r.note = 'internal error: ' + (e instanceof Error ? e.message : String(e));
    return r;
  }
}

function parseInto(r: SitemapParseResult, body: string | Uint8Array, sitemapUrl: string, opts: ParseSitemapOptions): SitemapParseResult {
  const maxUrls = posInt(opts.maxUrls, DEFAULT_SITEMAP_LIMITS.maxUrls);
  const maxBytes = posInt(opts.maxBytes, DEFAULT_SITEMAP_LIMITS.maxBytes);
  const normOpts = opts.normalize;

  // --- bytes → text, within maxBytes -------------------------------------
  let bytes: Uint8Array | null = null;
  let text: string;
  if (typeof body === 'string') {
    if (body.length >= 2 && body.charCodeAt(0) === 0x1f && body.charCodeAt(1) === 0x8b) {
      bytes = Buffer.from(body, 'latin1'); // gzip that went through a binary string
    }
    text = body;
  } else if (body instanceof Uint8Array) {
    bytes = body;
    text = '';
  } else {
    return invalid(r, 'body is neither a string nor bytes');
  }
  if (bytes !== null) {
    // One layer is the file's own .gz; a second appears when a server adds
    // Content-Encoding: gzip on top and the client did not undo it.
    for (let layer = 0; layer < 2 && isGzip(bytes); layer++) {
      const g = gunzipBounded(bytes, maxBytes);
      r.gzip = true;
      if (g.bytes === null) return invalid(r, 'corrupt gzip data');
      if (g.truncated) {
        r.truncated = true;
        r.note = `decompressed size over ${maxBytes} bytes; cut there`;
      }
      if (g.incomplete) {
        r.truncated = true;
        r.note = 'gzip stream ends early; read up to there';
      }
      bytes = g.bytes;
    }
    if (bytes.length > maxBytes) {
      bytes = bytes.subarray(0, maxBytes);
      r.truncated = true;
      r.note = `over ${maxBytes} bytes; cut there`;
    }
    r.bytes = bytes.length;
    text = utf8.decode(bytes);
  } else {
    // A string body: the limit is on its UTF-8 size (at most 3 bytes per UTF-16 unit).
    if (text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes) {
      const b = Buffer.from(text, 'utf8').subarray(0, maxBytes);
      text = utf8.decode(b);
      r.truncated = true;
      r.note = `over ${maxBytes} bytes; cut there`;
      r.bytes = b.length;
    } else {
      r.bytes = Buffer.byteLength(text, 'utf8');
    }
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  }

  // --- sniff ---------------------------------------------------------------
  let i = 0;
  while (i < text.length && i < 4096) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
    i++;
  }
  if (i >= text.length) return invalid(r, 'empty body');
  if (text.lastIndexOf('\u0000', 4095) >= 0) return invalid(r, 'binary data'); // no NUL in XML or in URLs

  const scope = sitemapScope(sitemapUrl, Array.isArray(opts.allowedPrefixes) ? opts.allowedPrefixes : [], normOpts);
  const ctx: Ctx = {
    r, maxUrls, normOpts, scope, entries: 0, base: undefined,
    sitemapUrl: typeof sitemapUrl === 'string' ? sitemapUrl : undefined,
  };
  if (text.charCodeAt(i) === 0x3c /* < */) return parseXml(ctx, text);
  return parseText(ctx, text);
}

interface Ctx {
  r: SitemapParseResult;
  maxUrls: number;
  normOpts: Partial<NormalizeOptions> | undefined;
  scope: ReturnType<typeof sitemapScope>;
  /** Entries seen so far, toward maxUrls. */
  entries: number;
  /** Base for relative links (feeds only; sitemaps require absolute URLs). */
  base: string | undefined;
  sitemapUrl: string | undefined;
}

/**
 * Counts one entry toward the limit; returns false (and counts it as over the
 * limit) past `maxUrls`.
 */
function admit(ctx: Ctx): boolean {
  ctx.entries++;
  if (ctx.entries > ctx.maxUrls) {
    ctx.r.rejected.overLimit++;
    if (!ctx.r.truncated || ctx.r.note === undefined) ctx.r.note = `more than ${ctx.maxUrls} entries; the rest counted, not kept`;
    ctx.r.truncated = true;
    return false;
  }
  return true;
}

/** Normalises and scope-checks a <loc>; null if rejected (and counted). */
function acceptLoc(ctx: Ctx, raw: string | undefined, prefixes: readonly string[]): string | null {
  const rej = ctx.r.rejected;
  if (raw === undefined) { rej.invalid++; return null; }
  const loc = raw.trim();
  if (loc.length === 0 || loc.length > MAX_LOC_LENGTH) { rej.invalid++; return null; }
  const n = normalizeUrl(loc, ctx.base, ctx.normOpts);
  if (n === null) { rej.invalid++; return null; }
  if (!inScope(n, prefixes)) { rej.outOfScope++; return null; }
  return n;
}

// --- plain text --------------------------------------------------------------

function parseText(ctx: Ctx, text: string): SitemapParseResult {
  const r = ctx.r;
  r.kind = 'text';
  let end = text.length;
  // A body cut at the byte limit ends inside a line; that line is not whole.
  if (r.truncated) {
    const lastNl = text.lastIndexOf('\n');
    end = lastNl < 0 ? 0 : lastNl;
  }
  let start = 0;
  let nonBlank = 0;
  let parsed = 0; // lines that were URLs (kept or out of scope)
  while (start < end) {
    let nl = text.indexOf('\n', start);
    if (nl < 0 || nl > end) nl = end;
    const line = text.slice(start, nl).trim();
    start = nl + 1;
    if (line.length === 0) continue;
    nonBlank++;
    if (parsed === 0 && nonBlank > TEXT_GIVE_UP_LINES) {
      r.urls = [];
      return invalid(r, `no URL in the first ${TEXT_GIVE_UP_LINES} lines`);
    }
    if (!admit(ctx)) continue;
    const before = r.rejected.invalid;
    const loc = acceptLoc(ctx, line, ctx.scope.urlPrefixes);
    if (r.rejected.invalid === before) parsed++;
    if (loc !== null) r.urls.push({ loc });
  }
  if (parsed === 0 && r.rejected.overLimit === 0) return invalid(r, 'no URL lines');
  return r;
}

// --- XML ---------------------------------------------------------------------

const enum Root { None, Urlset, Index, Rss, Atom, Other }

interface Entry {
  loc: string | undefined;
  lastmod: string | undefined;
  changefreq: string | undefined;
  priority: string | undefined;
}

function parseXml(ctx: Ctx, text: string): SitemapParseResult {
  const r = ctx.r;
  const ns = new Map<string, string>(); // prefix → namespace URI (document-wide; sitemaps declare on the root)
  let root = Root.None;
  let depth = 0;
  let entryDepth = -1;
  let field: string | null = null; // local name of the field being captured
  let buf = '';
  let cur: Entry = { loc: undefined, lastmod: undefined, changefreq: undefined, priority: undefined };
  let wrongEntries = 0;

  const ours = (name: string, colon: number, nsSet: ReadonlySet<string>): boolean =>
    colon < 0 || nsSet.has(ns.get(name.slice(0, colon)) ?? '');

  const finishEntry = (): void => {
    if (!admit(ctx)) return;
    if (root === Root.Index) {
      const loc = acceptLoc(ctx, cur.loc, ctx.scope.sitemapPrefixes);
      if (loc === null) return;
      const child: SitemapChild = { loc };
      if (cur.lastmod !== undefined) {
        const lm = parseW3cDatetime(cur.lastmod);
        if (lm !== undefined) child.lastmod = lm; else r.invalidFields++;
      }
      r.sitemaps.push(child);
      return;
    }
    const loc = acceptLoc(ctx, cur.loc, ctx.scope.urlPrefixes);
    if (loc === null) return;
    const u: SitemapUrl = { loc };
    if (cur.lastmod !== undefined) {
      const lm = root === Root.Rss ? parseRfc822Date(cur.lastmod) : parseW3cDatetime(cur.lastmod);
      if (lm !== undefined) u.lastmod = lm; else r.invalidFields++;
    }
    if (cur.changefreq !== undefined) {
      const cf = parseChangefreq(cur.changefreq);
      if (cf !== undefined) u.changefreq = cf; else r.invalidFields++;
    }
    if (cur.priority !== undefined) {
      const p = parsePriority(cur.priority);
      if (p !== undefined) u.priority = p; else r.invalidFields++;
    }
    r.urls.push(u);
  };

  const parser = new Parser({
    onopentag(name, attribs) {
      const d = depth++;
      if (d >= MAX_XML_DEPTH) {
        r.truncated = true;
        r.note = `XML nested deeper than ${MAX_XML_DEPTH} elements; stopped there`;
        parser.pause(); // for good: end() does not resume a paused tokenizer
        return;
      }
      if (d <= 1) {
        for (const k in attribs) if (k.startsWith('xmlns:')) ns.set(k.slice(6), attribs[k]);
      }
      const colon = name.indexOf(':');
      const local = (colon < 0 ? name : name.slice(colon + 1)).toLowerCase();
      if (d === 0) {
        if (root !== Root.None) return; // a second top-level element: not XML, ignore
        if (local === 'urlset') root = Root.Urlset;
        else if (local === 'sitemapindex') root = Root.Index;
        else if (local === 'rss' || local === 'rdf') root = Root.Rss;
        else if (local === 'feed') root = Root.Atom;
        else {
          root = Root.Other;
          r.note = `root element <${name.slice(0, 64)}> is not a sitemap`;
          parser.pause(); // stop tokenising: nothing in this document is ours
        }
        // Feeds may hold relative links (RFC 4287 §4.2.7.1); sitemaps may not.
        if (root === Root.Rss || root === Root.Atom) ctx.base = ctx.sitemapUrl;
        return;
      }
      if (entryDepth < 0) {
        let isEntry = false;
        if (root === Root.Urlset) {
          isEntry = d === 1 && local === 'url' && ours(name, colon, SITEMAP_NS);
          if (!isEntry && d === 1 && local === 'sitemap') wrongEntries++;
        } else if (root === Root.Index) {
          isEntry = d === 1 && local === 'sitemap' && ours(name, colon, SITEMAP_NS);
          if (!isEntry && d === 1 && local === 'url') wrongEntries++;
        } else if (root === Root.Rss) {
          isEntry = local === 'item' && colon < 0;
        } else if (root === Root.Atom) {
          isEntry = d === 1 && local === 'entry' && ours(name, colon, ATOM_NS);
        }
        if (isEntry) {
          entryDepth = d;
          cur = { loc: undefined, lastmod: undefined, changefreq: undefined, priority: undefined };
        }
        return;
      }
      if (d !== entryDepth + 1 || field !== null) return;
      if (root === Root.Urlset || root === Root.Index) {
        if (!ours(name, colon, SITEMAP_NS)) return; // image:loc, xhtml:link, news:… are extensions
        if (local === 'loc' || local === 'lastmod' || (root === Root.Urlset && (local === 'changefreq' || local === 'priority'))) {
          field = local;
          buf = '';
        }
      } else if (root === Root.Rss) {
        if (colon >= 0) return;
        if (local === 'link' || local === 'pubdate') { field = local; buf = ''; }
      } else if (root === Root.Atom) {
        if (!ours(name, colon, ATOM_NS)) return;
        if (local === 'link') {
          const rel = attribs.rel;
          if (cur.loc === undefined && typeof attribs.href === 'string' && (rel === undefined || rel === 'alternate')) {
            cur.loc = attribs.href;
          }
        } else if (local === 'updated' || local === 'modified') {
          field = local;
          buf = '';
        }
      }
    },
    ontext(data) {
      if (field === null) return;
      if (buf.length + data.length <= MAX_FIELD_CHARS) buf += data;
      else buf = ' '.repeat(MAX_FIELD_CHARS + 1); // over every field's limit: invalid, and stays bounded
    },
    onclosetag(_name, isImplied) {
      const d = --depth;
      if (field !== null && d === entryDepth + 1) {
        // A field closed only implicitly (end of input, or a mismatched end
        // tag) may hold a value cut in the middle: it is not taken.
        if (!isImplied) switch (field) {
          case 'loc': case 'link': if (cur.loc === undefined) cur.loc = buf; break;
          case 'lastmod': case 'pubdate': case 'updated': case 'modified': if (cur.lastmod === undefined) cur.lastmod = buf; break;
          case 'changefreq': if (cur.changefreq === undefined) cur.changefreq = buf; break;
          case 'priority': if (cur.priority === undefined) cur.priority = buf; break;
        }
        field = null;
        buf = '';
      } else if (d === entryDepth) {
        // An entry closed implicitly still counts: its fields were only
        // taken if they were closed properly.
        finishEntry();
        entryDepth = -1;
        field = null;
      }
    },
  }, { xmlMode: true, decodeEntities: true });

  parser.end(text);

  switch (root as Root) { // assigned in the callbacks
    case Root.Urlset: r.kind = 'urlset'; break;
    case Root.Index: r.kind = 'sitemapindex'; break;
    case Root.Rss: case Root.Atom: r.kind = 'feed'; break;
    case Root.Other: r.kind = 'invalid'; break;
    default: return invalid(r, 'no root element');
  }
  r.rejected.invalid += wrongEntries;
  return r;
}
