// SURT keys (Sort-friendly URI Reordering Transform) for CDXJ lines, as pywb makes them.
//
// pywb and its indexer (cdxj-indexer) key every capture with Python `surt.surt(url)`
// and its defaults: the Internet Archive's DefaultIAURLCanonicalizer (Google's URL
// canonicalisation followed by IA's) and the SURT form without scheme, without the
// trailing comma, IPv4 addresses reversed. A lookup only finds what was indexed under
// the very same key, so our keys must be byte-equal to Python's, or pywb cannot serve
// ubicrawl's WARCs from ubicrawl's CDXJ files (and a pywb-made index would not serve
// `ubicrawl warc get`).
//
// warcio.js exports a `getSurt()`, but it is a simplification that differs from
// Python surt on ordinary URLs: it strips `www.` before lowercasing the host (so
// `http://WWW.Example.com/` keeps its `www`), keeps trailing slashes (`/goo/` vs
// `/goo`), keeps trailing dots in hosts, does not strip session ids, keeps WHATWG
// percent-encoding instead of unescaping and re-escaping once, and sorts query
// arguments as whole strings (`a-b=1` before `a=2`; Python sorts (name, value)
// pairs: `a=2` first). So this module re-implements Python surt's behaviour. It is
// written from its documented behaviour and test cases (internetarchive/surt
// tests/test_surt.py, which come from archive-commons' Java tests); those cases are
// in test/cdxj.test.ts. Known differences, all for inputs a crawler does not store:
//   - non-ASCII host names go through WHATWG/UTS #46 `domainToASCII` where Python
//     uses IDNA 2003 (they differ for a few characters such as `ß`);
//   - a dotted-numeric host that is not a valid IPv4 form (`1.2.3.256`) stays as it
//     is, where Python would ask the system resolver;
//   - URLs without an authority (`dns:`, `mailto:`, `urn:`) become `scheme:` plus the
//     lowercased, re-escaped rest, with spaces and control characters escaped, so a
//     key never holds a space (the CDXJ field separator).
import { domainToASCII } from 'node:url';

/** Python surt's key for `url` (`com,example)/path?a=1&b=2`); '-' for an empty one. */
export function surt(url: string): string {
  if (!url) return '-';
  if (url.startsWith('filedesc')) return escapeOnce(url);
  try {
    return surtOf(url);
  } catch {
    // Python raises (bad port, unbalanced IPv6 brackets); cdxj-indexer then keys the
    // capture by the URL itself.
    return escapeOnce(url);
  }
}

// ---------------------------------------------------------------------------
// Parsing (surt's handyurl.parse over Python's urllib.parse.urlsplit)

interface Parsed {
  scheme: string;
  host: string | null;
  port: number | null;
  path: string | null;
  query: string | null;
}

const SCHEME_RE = /^[a-zA-Z][a-zA-Z0-9+\-.]*:/;
const HTTP_REPEAT_RE = /^(?:https?:\/\/)+/;
const NL_TAB_RE = /[\n\r\t]/g;
const LEADING_CTL_RE = /^[\x00-\x20]+/;

function parse(input: string): Parsed {
  let url = input.trim().replace(LEADING_CTL_RE, '').replace(NL_TAB_RE, '');
  if (!SCHEME_RE.test(url)) url = 'http://' + url;
  // http://https://host/ → https://host/ (the last repetition wins, as in surt).
  url = url.replace(HTTP_REPEAT_RE, (m) => (m.endsWith('https://') ? 'https://' : 'http://'));
  const colon = url.indexOf(':');
  const scheme = url.slice(0, colon).toLowerCase();
  let rest = url.slice(colon + 1);
  let netloc: string | null = null;
  if (rest.startsWith('//')) {
    let end = rest.length;
    for (const d of ['/', '?', '#']) {
      const i = rest.indexOf(d, 2);
      if (i >= 0 && i < end) end = i;
    }
    netloc = rest.slice(2, end);
    rest = rest.slice(end);
    if (netloc.includes('[') !== netloc.includes(']')) throw new Error('invalid IPv6 URL');
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  let query: string | null = null;
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  let host: string | null = null;
  let port: number | null = null;
  if (netloc !== null) {
    // A host followed by ':' and no port number (seen in Common Crawl data).
    netloc = netloc.replace(/:+$/, '');
    const hostinfo = netloc.slice(netloc.lastIndexOf('@') + 1);
    let hostname: string;
    let portStr = '';
    const br = hostinfo.indexOf('[');
    if (br >= 0) {
      const inner = hostinfo.slice(br + 1);
      const close = inner.indexOf(']');
      hostname = close >= 0 ? inner.slice(0, close) : inner;
      const after = close >= 0 ? inner.slice(close + 1) : '';
      const c = after.indexOf(':');
      portStr = c >= 0 ? after.slice(c + 1) : '';
    } else {
      const c = hostinfo.indexOf(':');
      hostname = c >= 0 ? hostinfo.slice(0, c) : hostinfo;
      portStr = c >= 0 ? hostinfo.slice(c + 1) : '';
    }
    if (portStr) {
      if (!/^[0-9]+$/.test(portStr)) throw new Error('bad port');
      const p = Number(portStr);
      if (p > 65535) throw new Error('port out of range');
      port = p || null;
    }
    host = hostname ? hostname.toLowerCase() : null;
  }
  let path: string | null = rest || null;
  // "http:////host/x" and "http:host/x": the host is the first path segment.
  if (scheme.startsWith('http') && host === null && path !== null) {
    const p = path.replace(/^\/+/, '');
    const slash = p.indexOf('/');
    host = slash >= 0 ? p.slice(0, slash) : p;
    path = '/' + (slash >= 0 ? p.slice(slash + 1) : '');
    if (!host) host = null;
  }
  return { scheme, host, port, path, query: query || null };
}

// ---------------------------------------------------------------------------
// Escaping (Python urllib.parse.quote / unquote on str)

// escapeOnce() keeps these bytes; everything else (controls, space, '#', '%', DEL and
// all non-ASCII, as UTF-8 bytes) becomes %XX with upper-case hex.
const SAFE = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~!"$&\'()*+,/:;<=>?@[\\]^`{|}')
  SAFE[c.charCodeAt(0)] = 1;
const NEEDS_ESCAPE = /[^A-Za-z0-9_.\-~!"$&'()*+,/:;<=>?@[\\\]^`{|}]/;
const HEX = '0123456789ABCDEF';

export function escapeOnce(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return s;
  const bytes = Buffer.from(s, 'utf8');
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    out += b < 128 && SAFE[b] ? String.fromCharCode(b) : '%' + HEX[b >> 4] + HEX[b & 15];
  }
  return out;
}

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  c |= 32;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/**
 * One pass of Python's unquote(): in each run of ASCII characters, %XX sequences
 * become bytes and the run is decoded as UTF-8 (invalid bytes → U+FFFD).
 */
function unquote(s: string): string {
  if (!s.includes('%')) return s;
  let out = '';
  let i = 0;
  while (i < s.length) {
    if (s.charCodeAt(i) >= 128) {
      out += s[i++];
      continue;
    }
    let j = i;
    while (j < s.length && s.charCodeAt(j) < 128) j++;
    const run = s.slice(i, j);
    if (!run.includes('%')) out += run;
    else {
      const bytes: number[] = [];
      for (let k = 0; k < run.length; k++) {
        const c = run.charCodeAt(k);
        if (c === 37 && k + 2 < run.length) {
          const h = hexVal(run.charCodeAt(k + 1));
          const l = hexVal(run.charCodeAt(k + 2));
          if (h >= 0 && l >= 0) {
            bytes.push(h * 16 + l);
            k += 2;
            continue;
          }
        }
        bytes.push(c);
      }
      out += Buffer.from(bytes).toString('utf8');
    }
    i = j;
  }
  return out;
}

function unescapeRepeatedly(s: string): string {
  for (let n = 0; n < 64; n++) {
    const un = unquote(s);
    if (un === s) return s;
    s = un;
  }
  return s;
}

// ---------------------------------------------------------------------------
// Google URL canonicalisation (host, path; the query is escaped minimally)

/** Resolves `.` and `..` segments and drops empty ones, keeping a trailing slash. */
function normalizePath(path: string | null): string {
  if (!path) return '/';
  const parts = path.split('/');
  const kept: string[] = [];
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i];
    if (p === '.') continue;
    if (p === '..') {
      if (kept.length) kept.pop();
      else kept.push(p);
    } else kept.push(p);
  }
  let out = '/';
  for (let i = 0; i < kept.length - 1; i++) if (kept[i]) out += kept[i] + '/';
  if (kept.length) out += kept[kept.length - 1];
  return out;
}

const DECIMAL_IP = /^[1-9][0-9]*(?:\.[0-9]+)?(?:\.[0-9]+)?(?:\.[0-9]+)?$/;
const OCTAL_IP = /^0[0-7]*(?:\.[0-7]+)?(?:\.[0-7]+)?(?:\.[0-7]+)?$/;

function dotted(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** inet_aton(3): 1–4 parts, octal with a leading 0, the last part fills the remaining bytes. */
function inetAton(host: string): string | null {
  const parts = host.split('.');
  const vals: number[] = [];
  for (const p of parts) {
    const v = p.length > 1 && p[0] === '0' ? (/^[0-7]+$/.test(p) ? parseInt(p, 8) : NaN) : Number(p);
    if (!Number.isFinite(v)) return null;
    vals.push(v);
  }
  const last = vals[vals.length - 1];
  const lead = vals.slice(0, -1);
  if (lead.some((v) => v > 255)) return null;
  if (last >= 2 ** (8 * (5 - vals.length))) return null;
  let n = 0;
  for (let i = 0; i < lead.length; i++) n += lead[i] * 2 ** (8 * (3 - i));
  return dotted(n + last);
}

/** Numeric host forms (`3279880203`, `017.0.0.1`, `10.0.258`) as dotted quads. */
function attemptIPFormats(host: string): string | null {
  if (/^[0-9]+$/.test(host)) return dotted(Number(BigInt(host) & 0xffffffffn));
  if (DECIMAL_IP.test(host) || OCTAL_IP.test(host)) return inetAton(host);
  return null;
}

function canonicalHost(host: string): string {
  let h = unescapeRepeatedly(host);
  if (/[^\x00-\x7f]/.test(h)) {
    // Python encodes with IDNA and keeps the Unicode name when that fails.
    const ascii = domainToASCII(h);
    if (ascii) h = ascii;
  }
  h = h.replaceAll('..', '.').replace(/^\.+|\.+$/g, '');
  return attemptIPFormats(h) ?? escapeOnce(h.toLowerCase());
}

// ---------------------------------------------------------------------------
// IA canonicalisation: session ids, case, query order

const WWW_RE = /^www\d*\./;

/**
 * ASP.NET cookieless session segments: `/(S(24 chars))/x.aspx` and `/(24 chars)/x.aspx`
 * (archive-commons URLRegexTransformer). Regex-free: both patterns anchor on a
 * `/(` whose greedy prefix makes the rightmost such segment the one removed.
 */
function stripPathSessionID(path: string): string {
  path = stripAspx(path, true);
  return stripAspx(path, false);
}

function isAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
}
function isAlpha(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
}

function stripAspx(path: string, nested: boolean): string {
  if (!path.includes('(')) return path;
  const lower = path.toLowerCase();
  if (!lower.includes('.aspx')) return path;
  for (let j = path.lastIndexOf('/('); j >= 0; j = j > 0 ? path.lastIndexOf('/(', j - 1) : -1) {
    let pos = j + 2;
    if (nested) {
      let units = 0;
      // each unit: letter '(' 24 alnum ')'
      while (pos + 27 <= path.length && isAlpha(path.charCodeAt(pos)) && path[pos + 1] === '(' && path[pos + 26] === ')') {
        let ok = true;
        for (let k = pos + 2; k < pos + 26; k++) if (!isAlnum(path.charCodeAt(k))) ok = false;
        if (!ok) break;
        pos += 27;
        units++;
      }
      if (!units) continue;
    } else {
      if (pos + 24 > path.length) continue;
      let ok = true;
      for (let k = pos; k < pos + 24; k++) if (!isAlnum(path.charCodeAt(k))) ok = false;
      if (!ok) continue;
      pos += 24;
    }
    if (path[pos] !== ')' || path[pos + 1] !== '/') continue;
    // The rest must match `[^?]+\.aspx.*`: ".aspx" after at least one character, before any '?'.
    const rest = pos + 2;
    const qm = path.indexOf('?', rest);
    const a = lower.indexOf('.aspx', rest + 1);
    if (a >= 0 && (qm < 0 || a < qm)) return path.slice(0, j + 1) + path.slice(rest);
  }
  return path;
}

interface SessionPattern {
  token: string;
  /** Length of the value matched at `at` (just past the token), or -1. */
  value: (q: string, at: number) => number;
}

function fixedRun(n: number, ok: (c: number) => boolean): (q: string, at: number) => number {
  return (q, at) => {
    if (at + n > q.length) return -1;
    for (let k = at; k < at + n; k++) if (!ok(q.charCodeAt(k))) return -1;
    return n;
  };
}

const SESSION_PATTERNS: SessionPattern[] = [
  { token: 'jsessionid=', value: fixedRun(32, isAlnum) },
  { token: 'phpsessid=', value: fixedRun(32, isAlnum) },
  { token: 'sid=', value: fixedRun(32, isAlnum) },
  {
    token: 'aspsessionid',
    value: (q, at) => {
      const a = fixedRun(8, isAlpha)(q, at);
      if (a < 0 || q[at + 8] !== '=') return -1;
      return fixedRun(24, isAlpha)(q, at + 9) < 0 ? -1 : 33;
    },
  },
  {
    token: 'cfid=',
    value: (q, at) => {
      let e = at;
      while (e < q.length && q[e] !== '&') e++;
      if (e === at || q.slice(e, e + 9).toLowerCase() !== '&cftoken=') return -1;
      let f = e + 9;
      while (f < q.length && q[f] !== '&') f++;
      return f === e + 9 ? -1 : f - at;
    },
  },
];

/**
 * Removes jsessionid/phpsessid/sid/ASPSESSIONID/CFID+CFTOKEN arguments. Each pattern
 * is `^(.*)TOKEN VALUE(?:&(.*))?$` (case-insensitive): the rightmost match is removed
 * together with the `&` after it.
 */
function stripQuerySessionID(query: string): string {
  for (const p of SESSION_PATTERNS) {
    const lower = query.toLowerCase();
    for (let k = lower.lastIndexOf(p.token); k >= 0; k = k > 0 ? lower.lastIndexOf(p.token, k - 1) : -1) {
      const at = k + p.token.length;
      const n = p.value(query, at);
      if (n < 0) continue;
      const end = at + n;
      if (end === query.length) {
        query = query.slice(0, k);
        break;
      }
      if (query[end] === '&') {
        query = query.slice(0, k) + query.slice(end + 1);
        break;
      }
    }
  }
  return query;
}

/** Sorts arguments as (name, value) pairs, a name without '=' first; keeps `a` vs `a=`. */
function alphaReorderQuery(q: string): string {
  if (q.length <= 1) return q;
  const args = q.split('&').map((a) => {
    const e = a.indexOf('=');
    return e < 0 ? { k: a, v: null as string | null, s: a } : { k: a.slice(0, e), v: a.slice(e + 1), s: a };
  });
  args.sort((x, y) => {
    if (x.k !== y.k) return x.k < y.k ? -1 : 1;
    if (x.v === y.v) return 0;
    if (x.v === null) return -1;
    if (y.v === null) return 1;
    return x.v < y.v ? -1 : 1;
  });
  return args.map((a) => a.s).join('&');
}

function surtOf(url: string): string {
  const u = parse(url);
  // Google: fragment dropped; query unescaped and escaped once.
  let query = u.query ? escapeOnce(unescapeRepeatedly(u.query)) : null;
  let path = unescapeRepeatedly(u.path ?? '');
  if (u.host === null) {
    // No authority (dns:, mailto:, urn:, warcinfo:): free-form, no SURT host part.
    path = escapeOnce(path).toLowerCase();
    if (query) query = query.toLowerCase();
    return `${u.scheme}:${path}${query ? '?' + query : ''}`;
  }
  let host = canonicalHost(u.host);
  path = escapeOnce(normalizePath(path));
  // IA: host case and www, default port, path case and session ids, trailing slash.
  host = host.toLowerCase();
  if (u.scheme !== 'dns') host = host.replace(WWW_RE, '');
  let port = u.port;
  if ((u.scheme === 'http' && port === 80) || (u.scheme === 'https' && port === 443)) port = null;
  path = stripPathSessionID(path.toLowerCase());
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (query) {
    query = alphaReorderQuery(stripQuerySessionID(query).toLowerCase());
    if (!query) query = null;
  }
  // SURT: reversed host labels (IPv4 addresses too), port, ')', path, query.
  const shost = host.split('.').reverse().join(',');
  return `${shost}${port !== null ? ':' + port : ''})${path}${query !== null ? '?' + query : ''}`;
}
