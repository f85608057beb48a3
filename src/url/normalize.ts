// URL normalisation: RFC 3986 §6.2.2 (syntax-based) and §6.2.3 (scheme-based)
// normal form, relative resolution per §5.2, plus opt-in lossy crawler rules.
//
// Why not `new URL(x, base).href` and patch it up: WHATWG serialisation loses
// information RFC 3986 needs. It percent-encodes `'` in http queries (so a raw
// `'` and a literal `%27`, which RFC 3986 §2.2 says are NOT equivalent, become
// the same string), it leaves raw `|`, `^`, `[`, `{`, "`"... unencoded (so the
// output is not a valid URI), it never decodes `%7E` and friends, and it keeps
// lower-case hex. A single hand-written scan over the input does the RFC work
// directly, costs less than constructing a WHATWG URL, and reaches for WHATWG
// only where it is the authority (IDNA/punycode, IPv4/IPv6 host syntax).
// The input pre-processing follows WHATWG (what a browser does with an href):
// surrounding C0/space trimmed, tab/CR/LF removed, `\` read as `/` in http(s).
// docs/standards.md (URL part) lists every departure from WHATWG and other crawlers.

import { domainToUnicode } from 'node:url';
import { TRACKING_PARAMS, compileParamList, isListedParam, type CompiledParamList } from './tracking.js';

export interface NormalizeOptions {
  /** Accepted schemes, lower-case. Anything else normalises to null. */
  schemes: readonly string[];
  /** Drop the parameters listed in `trackingParams` from the query (lossy, on by default). */
  stripTrackingParams: boolean;
  /** Parameter names to drop; an entry ending in `*` is a prefix. Default `TRACKING_PARAMS`. */
  trackingParams: readonly string[];
  /** Sort query parameters by name, stable for repeated names (lossy, opt-in). */
  sortQuery: boolean;
  /** `/a/b/` → `/a/b`; the root `/` stays (lossy, opt-in). */
  removeTrailingSlash: boolean;
  /** `/a/index.html` → `/a/` for a last segment in `indexFiles`, ASCII case-insensitive (lossy, opt-in). */
  removeIndexFiles: boolean;
  indexFiles: readonly string[];
  /** `www.example.com` → `example.com` (lossy, opt-in; never reduces a host to one label). */
  stripWww: boolean;
  /** `http://a/?` → `http://a/` (lossy, opt-in: RFC 3986 §6.2.3 keeps the empty query). */
  removeEmptyQuery: boolean;
}

export const DEFAULT_INDEX_FILES: readonly string[] = Object.freeze([
  'index.html', 'index.htm', 'index.shtml', 'index.php', 'index.asp', 'index.aspx', 'index.jsp',
  'default.html', 'default.htm', 'default.asp', 'default.aspx',
]);

export const DEFAULT_NORMALIZE_OPTIONS: Readonly<NormalizeOptions> = Object.freeze({
  schemes: Object.freeze(['http', 'https']),
  stripTrackingParams: true,
  trackingParams: TRACKING_PARAMS,
  sortQuery: false,
  removeTrailingSlash: false,
  removeIndexFiles: false,
  indexFiles: DEFAULT_INDEX_FILES,
  stripWww: false,
  removeEmptyQuery: false,
});

/** Why a URL did not normalise; for counters ("turned away, by reason"). */
export type NormalizeFailureReason =
  | 'type'      // not a string
  | 'empty'     // nothing left after trimming
  | 'relative'  // a relative reference and no (valid) base
  | 'base'      // the base itself is not an absolute URI
  | 'scheme'    // scheme not in `schemes` (mailto:, javascript:, data:, ...)
  | 'host'      // missing, empty or invalid host (bad IDN, bad IP literal, forbidden characters)
  | 'port'      // port not a number in 0..65535
  | 'error';    // an unexpected exception (should not happen; never thrown to the caller)

export interface NormalizeFailure { readonly reason: NormalizeFailureReason }

const FAILURES: Readonly<Record<NormalizeFailureReason, NormalizeFailure>> = Object.freeze({
  type: Object.freeze({ reason: 'type' }),
  empty: Object.freeze({ reason: 'empty' }),
  relative: Object.freeze({ reason: 'relative' }),
  base: Object.freeze({ reason: 'base' }),
  scheme: Object.freeze({ reason: 'scheme' }),
  host: Object.freeze({ reason: 'host' }),
  port: Object.freeze({ reason: 'port' }),
  error: Object.freeze({ reason: 'error' }),
} as const);

// ---------------------------------------------------------------------------
// Character tables (RFC 3986 §2.2, §2.3, §3.2.1, §3.3, §3.4)

const UNRESERVED = new Uint8Array(128);   // ALPHA DIGIT - . _ ~
const USERINFO_OK = new Uint8Array(128);  // unreserved / sub-delims / ":"
const PATH_OK = new Uint8Array(128);      // pchar / "/"  = unreserved / sub-delims / ":" / "@" / "/"
const QUERY_OK = new Uint8Array(128);     // pchar / "/" / "?"
const HEXVAL = new Int8Array(128).fill(-1);
const ENC: string[] = new Array(256);     // byte → "%XX", upper-case hex (§6.2.2.1)
const DEC: string[] = new Array(128);     // ASCII byte → one-char string

{
  const set = (t: Uint8Array, chars: string) => { for (let i = 0; i < chars.length; i++) t[chars.charCodeAt(i)] = 1; };
  const alnum = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const subDelims = "!$&'()*+,;=";
  for (const t of [UNRESERVED, USERINFO_OK, PATH_OK, QUERY_OK]) set(t, alnum + '-._~');
  for (const t of [USERINFO_OK, PATH_OK, QUERY_OK]) set(t, subDelims + ':');
  set(PATH_OK, '@/');
  set(QUERY_OK, '@/?');
  const hex = '0123456789ABCDEF';
  for (let i = 0; i < 16; i++) {
    HEXVAL[hex.charCodeAt(i)] = i;
    HEXVAL[hex.toLowerCase().charCodeAt(i)] = i;
  }
  for (let b = 0; b < 256; b++) ENC[b] = '%' + hex[b >> 4] + hex[b & 15];
  for (let b = 0; b < 128; b++) DEC[b] = String.fromCharCode(b);
}

// The same sets as regexes for the all-clean fast path (no "%", nothing to encode).
const PATH_CLEAN = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;
const QUERY_CLEAN = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*$/;
const USERINFO_CLEAN = /^[A-Za-z0-9\-._~!$&'()*+,;=:]*$/;
const HOST_FAST = /^[a-z0-9_.-]+$/;

/**
 * Scheme defaults for §6.2.3 (default port omitted; empty path becomes "/");
 * 0 for schemes without one. These schemes also cannot have an empty host
 * (RFC 9110 §4.2.1, §4.2.2 for http/https; RFC 6455 §3 for ws/wss).
 */
function defaultPort(scheme: string): number {
  switch (scheme) {
    case 'http': return 80;
    case 'https': return 443;
    case 'ws': return 80;
    case 'wss': return 443;
    case 'ftp': return 21;
    default: return 0;
  }
}
/** WHATWG "special" schemes: `\` is read as `/` before the query, as browsers do. */
function isSpecial(scheme: string): boolean {
  return scheme === 'http' || scheme === 'https' || defaultPort(scheme) !== 0 || scheme === 'file';
}

// ---------------------------------------------------------------------------
// Options compilation (cached per options object, so the hot path does no merging)

interface Compiled {
  schemes: ReadonlySet<string>;
  strip: CompiledParamList | null;
  sortQuery: boolean;
  removeTrailingSlash: boolean;
  indexFiles: ReadonlySet<string> | null;
  stripWww: boolean;
  removeEmptyQuery: boolean;
}

function compile(o: Partial<NormalizeOptions>): Compiled {
  const d = DEFAULT_NORMALIZE_OPTIONS;
  const schemes = new Set<string>();
  for (const s of o.schemes ?? d.schemes) if (typeof s === 'string') schemes.add(s.toLowerCase());
  const stripOn = o.stripTrackingParams ?? d.stripTrackingParams;
  const idx = o.removeIndexFiles ?? d.removeIndexFiles;
  return {
    schemes,
    strip: stripOn ? compileParamList(o.trackingParams ?? d.trackingParams) : null,
    sortQuery: o.sortQuery ?? d.sortQuery,
    removeTrailingSlash: o.removeTrailingSlash ?? d.removeTrailingSlash,
    indexFiles: idx ? new Set((o.indexFiles ?? d.indexFiles).map((f) => String(f).toLowerCase())) : null,
    stripWww: o.stripWww ?? d.stripWww,
    removeEmptyQuery: o.removeEmptyQuery ?? d.removeEmptyQuery,
  };
}

const DEFAULT_COMPILED = compile({});
const compiledCache = new WeakMap<object, Compiled>();

function compiledFor(opts: Partial<NormalizeOptions> | undefined): Compiled {
  if (opts === undefined || opts === null || opts === DEFAULT_NORMALIZE_OPTIONS) return DEFAULT_COMPILED;
  let c = compiledCache.get(opts);
  if (c === undefined) {
    c = compile(opts);
    compiledCache.set(opts, c);
  }
  return c;
}

// ---------------------------------------------------------------------------
// Reference parsing (RFC 3986 §3 / Appendix B), after WHATWG-style input cleanup

interface Parts {
  scheme: string | null;     // lower-case, or null for a relative reference
  authority: string | null;  // raw, without the leading "//"
  path: string;              // raw
  query: string | null;      // raw, without "?"
}

const TAB_OR_NEWLINE = /[\t\n\r]/;
const TAB_OR_NEWLINE_G = /[\t\n\r]/g;

/** Trim C0 controls and space at both ends, drop tab/LF/CR anywhere (WHATWG URL parsing, basic-URL-parser steps 1–3). */
function clean(s: string): string {
  let end = s.length;
  if (end === 0) return s;
  if (s.charCodeAt(0) <= 0x20 || s.charCodeAt(end - 1) <= 0x20) {
    let start = 0;
    while (start < end && s.charCodeAt(start) <= 0x20) start++;
    while (end > start && s.charCodeAt(end - 1) <= 0x20) end--;
    s = s.slice(start, end);
  }
  // A native regex scan beats a charCodeAt loop here; it almost never matches.
  return TAB_OR_NEWLINE.test(s) ? s.replace(TAB_OR_NEWLINE_G, '') : s;
}

function isAlpha(c: number): boolean { return (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a; }

/** Length of a syntactically valid scheme followed by ":", or 0 (RFC 3986 §3.1). */
function schemeLength(s: string): number {
  if (s.length === 0 || !isAlpha(s.charCodeAt(0))) return 0;
  for (let i = 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x3a) return i;
    if (isAlpha(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e) continue;
    return 0;
  }
  return 0;
}

/**
 * The lower-cased scheme; "http" and "https" come back as the literal
 * (internalised) strings, which makes every later Set lookup and comparison
 * on the hot path a pointer compare instead of hashing a fresh slice.
 */
function internScheme(s: string, sl: number): string {
  if ((sl === 4 || sl === 5) && (s.charCodeAt(0) | 0x20) === 0x68 && (s.charCodeAt(1) | 0x20) === 0x74 &&
      (s.charCodeAt(2) | 0x20) === 0x74 && (s.charCodeAt(3) | 0x20) === 0x70) {
    if (sl === 4) return 'http';
    if ((s.charCodeAt(4) | 0x20) === 0x73) return 'https';
  }
  return s.slice(0, sl).toLowerCase();
}

/** `\` → `/` before the query/fragment, as WHATWG does for special schemes. */
function backslashes(s: string, from: number): string {
  const bs = s.indexOf('\\', from);
  if (bs < 0) return s;
  let end = s.length;
  const q = s.indexOf('?', from);
  const h = s.indexOf('#', from);
  if (q >= 0) end = q;
  if (h >= 0 && h < end) end = h;
  if (bs >= end) return s;
  return s.slice(0, from) + s.slice(from, end).replace(/\\/g, '/') + s.slice(end);
}

function split(s: string, from: number, scheme: string | null, out: Parts): void {
  // Appendix B, with native indexOf scans (the fragment is found first so
  // that a "?" inside it is not taken for the query).
  const n = s.length;
  const hash = s.indexOf('#', from);
  const end = hash < 0 ? n : hash;
  let q = s.indexOf('?', from);
  if (q >= end) q = -1;
  const pathEnd = q < 0 ? end : q;
  let i = from;
  let authority: string | null = null;
  if (i + 1 < pathEnd && s.charCodeAt(i) === 0x2f && s.charCodeAt(i + 1) === 0x2f) {
    let j = s.indexOf('/', i + 2);
    if (j < 0 || j > pathEnd) j = pathEnd;
    authority = s.slice(i + 2, j);
    i = j;
  }
  out.scheme = scheme;
  out.authority = authority;
  out.path = i === 0 && pathEnd === n ? s : s.slice(i, pathEnd);
  out.query = q < 0 ? null : s.slice(q + 1, end);
}

/**
 * Parses `s` (already cleaned) into `out`. `inheritScheme` is the base's
 * scheme, used only to decide on `\` handling. Returns the string that was
 * split (`s` with backslashes turned into slashes where WHATWG does that).
 */
function parseRef(s: string, inheritScheme: string | null, out: Parts): string {
  const sl = schemeLength(s);
  let scheme: string | null = null;
  let from = 0;
  if (sl > 0) {
    scheme = internScheme(s, sl);
    from = sl + 1;
  }
  const eff = scheme ?? inheritScheme;
  if (eff !== null && isSpecial(eff)) s = backslashes(s, from);
  split(s, from, scheme, out);
  return s;
}

// Single-entry cache of the last base: link extraction resolves many hrefs
// against the same page URL in a row.
let lastBaseInput: string | undefined;
let lastBase: Parts | null = null;

function parseBase(base: string): Parts | null {
  if (base === lastBaseInput) return lastBase;
  const p: Parts = { scheme: null, authority: null, path: '', query: null };
  parseRef(clean(base), null, p);
  lastBaseInput = base;
  lastBase = p.scheme === null ? null : p;
  return lastBase;
}

// ---------------------------------------------------------------------------
// Component normalisation

/**
 * RFC 3986 §6.2.2.1 + §6.2.2.2 on one component: upper-case hex in every
 * percent-encoding, decode the ones that encode an unreserved character (and
 * only those: %2F, %3F, %23, %25 and every other reserved or non-ASCII octet
 * stay encoded), and percent-encode characters the component may not contain
 * raw (space, `"`, `<`, `>`, `\`, `^`, "`", `{`, `|`, `}`, `[`, `]`, controls,
 * non-ASCII as UTF-8, §2.5). A `%` that does not start a valid triplet is
 * encoded as `%25` so the output is a valid URI.
 */
function normPct(s: string, ok: Uint8Array, clean: RegExp): string {
  if (clean.test(s)) return s; // the common case, checked by native regex code
  const n = s.length;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || ok[c] === 0) break;
  }
  let out = s.slice(0, i);
  let run = i;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c < 128 && ok[c] === 1) { i++; continue; }
    if (run < i) out += s.slice(run, i);
    if (c === 0x25) {
      const a = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      const b = i + 2 < n ? s.charCodeAt(i + 2) : 0;
      const ha = a < 128 ? HEXVAL[a] : -1;
      const hb = b < 128 ? HEXVAL[b] : -1;
      if (ha >= 0 && hb >= 0) {
        const v = (ha << 4) | hb;
        out += v < 128 && UNRESERVED[v] === 1 ? DEC[v] : ENC[v];
        i += 3;
      } else {
        out += '%25';
        i += 1;
      }
    } else if (c < 128) {
      out += ENC[c];
      i++;
    } else {
      let cp = c;
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = i + 1 < n ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else {
          cp = 0xfffd; // lone surrogate: U+FFFD, as TextEncoder and WHATWG do
        }
      }
      if (cp < 0x800) {
        out += ENC[0xc0 | (cp >> 6)] + ENC[0x80 | (cp & 63)];
      } else if (cp < 0x10000) {
        out += ENC[0xe0 | (cp >> 12)] + ENC[0x80 | ((cp >> 6) & 63)] + ENC[0x80 | (cp & 63)];
      } else {
        out += ENC[0xf0 | (cp >> 18)] + ENC[0x80 | ((cp >> 12) & 63)] + ENC[0x80 | ((cp >> 6) & 63)] + ENC[0x80 | (cp & 63)];
      }
      i++;
    }
    run = i;
  }
  if (run < n) out += s.slice(run);
  return out;
}

/** True if some segment of `p` is "." or "..". */
function hasDotSegment(p: string): boolean {
  let i = p.indexOf('.');
  while (i >= 0) {
    if (i === 0 || p.charCodeAt(i - 1) === 0x2f) {
      let j = i + 1;
      if (j < p.length && p.charCodeAt(j) === 0x2e) j++;
      if (j === p.length || p.charCodeAt(j) === 0x2f) return true;
    }
    i = p.indexOf('.', i + 1);
  }
  return false;
}

/**
 * RFC 3986 §5.2.4 remove_dot_segments. Works on the string with slices (no
 * arrays): runs of ordinary segments are copied in one piece, and the output
 * buffer's "remove last segment" is a lastIndexOf on the output.
 */
export function removeDotSegments(path: string): string {
  if (!hasDotSegment(path)) return path;
  const n = path.length;
  let out = '';
  let i = 0;
  if (path.charCodeAt(0) !== 0x2f) {
    // Rule A: drop leading "../" and "./"; rule D: a lone "." or "..".
    for (;;) {
      if (path.startsWith('../', i)) i += 3;
      else if (path.startsWith('./', i)) i += 2;
      else break;
    }
    if (n - i === 1 && path.charCodeAt(i) === 0x2e) return '';
    if (n - i === 2 && path.charCodeAt(i) === 0x2e && path.charCodeAt(i + 1) === 0x2e) return '';
    // Rule E for the first, slash-less segment.
    let j = path.indexOf('/', i);
    if (j < 0) j = n;
    out = path.slice(i, j);
    i = j;
  }
  let run = i; // start of ordinary segments not yet copied to `out`
  while (i < n) {
    // here path[i] === "/"
    let j = path.indexOf('/', i + 1);
    if (j < 0) j = n;
    const len = j - i - 1;
    if ((len === 1 || len === 2) && path.charCodeAt(i + 1) === 0x2e && (len === 1 || path.charCodeAt(i + 2) === 0x2e)) {
      if (run < i) out += path.slice(run, i);
      if (len === 2) {
        // Rule C: "/../" → "/", removing the last output segment and its "/".
        const k = out.lastIndexOf('/');
        out = k <= 0 ? '' : out.slice(0, k);
      }
      if (j === n) out += '/'; // rules B and C at the end: "/." or "/.." → "/"
      run = j;
    }
    i = j;
  }
  if (run < n) out += path.slice(run);
  return out;
}

/** RFC 3986 §5.2.3 merge. */
function merge(base: Parts, refPath: string): string {
  if (base.authority !== null && base.path === '') return '/' + refPath;
  const k = base.path.lastIndexOf('/');
  return k < 0 ? refPath : base.path.slice(0, k + 1) + refPath;
}

function isDottedQuad(h: string): boolean {
  let parts = 0;
  let i = 0;
  const n = h.length;
  while (i <= n) {
    let j = i;
    let v = 0;
    while (j < n && h.charCodeAt(j) !== 0x2e) {
      const c = h.charCodeAt(j);
      if (c < 0x30 || c > 0x39) return false;
      v = v * 10 + (c - 0x30);
      j++;
    }
    const len = j - i;
    if (len === 0 || len > 3 || v > 255 || (len > 1 && h.charCodeAt(i) === 0x30)) return false;
    parts++;
    i = j + 1;
  }
  return parts === 4;
}

/** Host via WHATWG: IDNA UTS #46 → punycode, IPv4 number forms, IPv6 compression, percent-decoding. */
function slowHost(h: string): string | null {
  try {
    const host = new URL('http://' + h + '/').hostname;
    return host.length > 0 && validALabels(host) ? host : null;
  } catch {
    return null;
  }
}

/**
 * RFC 5891 §5.4: an A-label ("xn--…") must decode to a U-label. Node 20's URL parser refuses a host with
 * one that does not; Node 24's keeps such a label as it is (domainToUnicode too): checked here, so that
 * both refuse it.
 */
function validALabels(host: string): boolean {
  if (!host.includes('xn--')) return true;
  for (const label of host.split('.')) {
    if (!label.startsWith('xn--')) continue;
    const u = domainToUnicode(label);
    if (u === '' || u.startsWith('xn--')) return false;
  }
  return true;
}

/**
 * Host per §6.2.2.1 (case) and §3.2.2, with IDN hosts converted to punycode
 * (RFC 3986 §3.2.2 allows the IDNA form; WHATWG/UTS #46 does the conversion).
 * Plain ASCII names take a fast path that gives the same result WHATWG would.
 */
function normHost(h: string): string | null {
  if (h.length === 0) return '';
  let r = h;
  if (!HOST_FAST.test(r)) {
    r = h.toLowerCase();
    if (!HOST_FAST.test(r)) return slowHost(h);
  }
  if (r.includes('xn--')) return slowHost(r); // punycode labels must be validated
  let end = r.length;
  if (r.charCodeAt(end - 1) === 0x2e) end--;
  if (end <= 0) return r;
  const ls = r.lastIndexOf('.', end - 1) + 1;
  if (ls < end) {
    const c0 = r.charCodeAt(ls);
    // WHATWG "ends in a number": the host is an IPv4 address in some notation.
    if (c0 >= 0x30 && c0 <= 0x39) return end === r.length && isDottedQuad(r) ? r : slowHost(r);
  }
  return r;
}

// ---------------------------------------------------------------------------
// Query rules

function paramName(p: string): string {
  const eq = p.indexOf('=');
  return eq < 0 ? p : p.slice(0, eq);
}

/** Drops listed parameters; returns null when every parameter was dropped (then the "?" goes too). */
function stripParams(q: string, list: CompiledParamList): string | null {
  let out: string | null = null; // null until the first parameter is dropped
  let kept = 0;
  let start = 0;
  const n = q.length;
  while (start <= n) {
    let amp = q.indexOf('&', start);
    if (amp < 0) amp = n;
    let nameEnd = start; // scan only this parameter: indexOf('=') could run to the end each time (quadratic)
    while (nameEnd < amp && q.charCodeAt(nameEnd) !== 0x3d) nameEnd++;
    if (nameEnd > start && isListedParam(q.slice(start, nameEnd), list)) {
      if (out === null) {
        // every parameter before this one was kept
        out = start > 0 ? q.slice(0, start - 1) : '';
        kept = start > 0 ? 1 : 0;
      }
    } else if (out !== null) {
      out = kept > 0 ? out + '&' + q.slice(start, amp) : q.slice(start, amp);
      kept++;
    }
    start = amp + 1;
  }
  if (out === null) return q;
  return kept === 0 ? null : out;
}

function sortParams(q: string): string {
  if (q.indexOf('&') < 0) return q;
  const params = q.split('&');
  const keyed = params.map((p, i) => ({ p, k: paramName(p), i }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : a.i - b.i));
  return keyed.map((x) => x.p).join('&');
}

// ---------------------------------------------------------------------------
// Main entry points

const REF: Parts = { scheme: null, authority: null, path: '', query: null };

// Normalised authority = AUTH_PRE (userinfo "@" or "") + AUTH_HOST + AUTH_POST
// (":" port or ""). Single-entry cache: links on a page mostly share a host,
// and relative references hand over the base's very own authority string.
let authIn: string | null = null;
let authScheme = '';
let authFail: NormalizeFailure | null = null;
let AUTH_PRE = '';
let AUTH_HOST = '';
let AUTH_POST = '';

/** Sets AUTH_PRE/AUTH_HOST/AUTH_POST for `authority` (§3.2), or returns why it is invalid. */
function normAuthority(authority: string, scheme: string): NormalizeFailure | null {
  if (authority === authIn && scheme === authScheme) return authFail;
  authIn = null; // not cached until parsed completely
  authFail = parseAuthority(authority, scheme);
  authIn = authority;
  authScheme = scheme;
  return authFail;
}

function parseAuthority(authority: string, scheme: string): NormalizeFailure | null {
  AUTH_PRE = '';
  AUTH_HOST = '';
  AUTH_POST = '';
  // WHATWG and RFC agree on the last "@" as the userinfo delimiter for any
  // input a browser accepts.
  let hp = authority;
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const ui = normPct(authority.slice(0, at), USERINFO_OK, USERINFO_CLEAN);
    // An empty userinfo ("http://@a/", "http://:@a/") identifies nothing; WHATWG drops it too.
    if (ui !== '' && ui !== ':') AUTH_PRE = ui + '@';
    hp = authority.slice(at + 1);
  }
  let colon: number;
  if (hp.charCodeAt(0) === 0x5b) {
    const close = hp.indexOf(']');
    if (close < 0) return FAILURES.host;
    colon = close + 1 < hp.length ? close + 1 : -1;
    if (colon >= 0 && hp.charCodeAt(colon) !== 0x3a) return FAILURES.host;
  } else {
    colon = hp.lastIndexOf(':');
  }
  let rawHost = hp;
  if (colon >= 0) {
    rawHost = hp.slice(0, colon);
    const p = hp.slice(colon + 1);
    if (p.length > 0) {
      let v = 0;
      for (let i = 0; i < p.length; i++) {
        const d = p.charCodeAt(i) - 0x30;
        if (d < 0 || d > 9) return FAILURES.port;
        v = v * 10 + d;
        if (v > 65535) return FAILURES.port;
      }
      // §6.2.3: the scheme's default port is omitted; leading zeros are not significant.
      if (defaultPort(scheme) !== v) AUTH_POST = ':' + v;
    }
  }
  const h = normHost(rawHost);
  if (h === null) return FAILURES.host;
  if (h === '' && defaultPort(scheme) !== 0) return FAILURES.host;
  AUTH_HOST = h;
  return null;
}

function run(input: string, base: string | undefined, c: Compiled): string | NormalizeFailure {
  let s = clean(input);
  const hasBase = base !== undefined && base !== null && base !== '';
  const b = hasBase ? parseBase(String(base)) : null;
  if (hasBase && b === null) return FAILURES.base;
  if (s.length === 0 && b === null) return FAILURES.empty;
  s = parseRef(s, b === null ? null : b.scheme, REF);

  // RFC 3986 §5.2.2 (transform references), non-strict variant: a reference
  // with the base's own scheme and no authority ("http:g") is resolved as a
  // relative reference, as the RFC permits for backward compatibility and as
  // browsers do.
  let scheme: string;
  let authority: string | null;
  let path: string;
  let query: string | null;
  // `same` stays true while the output is known to equal `s` character for
  // character; then `s` itself is returned and nothing is concatenated.
  let same = false;
  if (REF.scheme !== null && !(b !== null && REF.scheme === b.scheme && REF.authority === null)) {
    scheme = REF.scheme;
    authority = REF.authority;
    path = REF.path;
    query = REF.query;
    same = authority !== null && s.startsWith(scheme) && s.length === scheme.length + 3 + authority.length +
      path.length + (query === null ? 0 : query.length + 1);
  } else {
    if (b === null) return FAILURES.relative;
    scheme = b.scheme as string;
    if (REF.authority !== null) {
      authority = REF.authority;
      path = REF.path;
      query = REF.query;
    } else {
      authority = b.authority;
      if (REF.path === '') {
        path = b.path;
        query = REF.query !== null ? REF.query : b.query;
      } else {
        path = REF.path.charCodeAt(0) === 0x2f ? REF.path : merge(b, REF.path);
        query = REF.query;
      }
    }
  }

  if (!c.schemes.has(scheme)) return FAILURES.scheme;

  let pre = '';
  let host = '';
  let post = '';
  if (authority !== null) {
    const fail = normAuthority(authority, scheme);
    if (fail !== null) return fail;
    pre = AUTH_PRE;
    host = AUTH_HOST;
    post = AUTH_POST;
    if (same && (pre !== '' || post !== '' || host !== authority)) same = false;
  } else if (defaultPort(scheme) !== 0) {
    return FAILURES.host; // http(s) without an authority ("http:/a", "http:a" with no base of that scheme)
  }

  // §6.2.2.1–2 then §6.2.2.3: decoding first means "%2E%2E" is treated as the
  // ".." it is equivalent to (§2.3), the same as WHATWG does.
  const path0 = path;
  path = removeDotSegments(normPct(path, PATH_OK, PATH_CLEAN));
  if (authority !== null && path === '' && defaultPort(scheme) !== 0) path = '/'; // §6.2.3
  if (query !== null) {
    const query0 = query;
    query = normPct(query, QUERY_OK, QUERY_CLEAN);
    if (c.strip !== null && query.length > 0) query = stripParams(query, c.strip);
    if (query !== null) {
      if (c.sortQuery) query = sortParams(query);
      if (c.removeEmptyQuery && query === '') query = null;
    }
    if (query !== query0) same = false;
  }
  if (c.indexFiles !== null) {
    const k = path.lastIndexOf('/');
    if (k >= 0 && k < path.length - 1 && c.indexFiles.has(path.slice(k + 1).toLowerCase())) path = path.slice(0, k + 1);
  }
  if (c.removeTrailingSlash && path.length > 1 && path.charCodeAt(path.length - 1) === 0x2f) path = path.slice(0, -1);
  if (c.stripWww && host.startsWith('www.') && host.indexOf('.', 4) > 4) {
    host = host.slice(4);
    same = false;
  }
  if (same && path === path0) return s;

  let out = authority === null ? scheme + ':' : scheme + '://' + pre + host + post;
  out += path;
  if (query !== null) out += '?' + query;
  return out;
}

/**
 * Normalises `url` (resolved against `base` if relative) to its RFC 3986
 * normal form; null if it is invalid, relative without a base, or not of an
 * accepted scheme. Never throws. The fragment is always dropped.
 */
export function normalizeUrl(url: string, base?: string, opts?: Partial<NormalizeOptions>): string | null {
  const r = normalizeUrlOrReason(url, base, opts);
  return typeof r === 'string' ? r : null;
}

/**
 * As `normalizeUrl`, but a failure is a (shared, frozen) object naming the
 * reason, for counters. Test with `typeof r === 'string'`.
 */
export function normalizeUrlOrReason(url: string, base?: string, opts?: Partial<NormalizeOptions>): string | NormalizeFailure {
  if (typeof url !== 'string') return FAILURES.type;
  try {
    return run(url, base, compiledFor(opts));
  } catch {
    return FAILURES.error;
  }
}

/**
 * Lower-case host name (no port, no userinfo; IPv6 with its brackets) of a URL
 * that `normalizeUrl` produced; '' if it has no authority. Not a parser.
 */
export function hostOf(normalizedUrl: string): string {
  const ss = normalizedUrl.indexOf('://');
  if (ss < 0) return '';
  const start = ss + 3;
  let end = start;
  const n = normalizedUrl.length;
  while (end < n) {
    const c = normalizedUrl.charCodeAt(end);
    if (c === 0x2f || c === 0x3f || c === 0x23) break;
    end++;
  }
  let hs = normalizedUrl.lastIndexOf('@', end - 1);
  hs = hs >= start ? hs + 1 : start;
  let he = end;
  if (normalizedUrl.charCodeAt(hs) === 0x5b) {
    const close = normalizedUrl.indexOf(']', hs);
    he = close >= 0 && close < end ? close + 1 : end;
  } else {
    const colon = normalizedUrl.indexOf(':', hs);
    if (colon >= 0 && colon < end) he = colon;
  }
  return normalizedUrl.slice(hs, he).toLowerCase();
}
