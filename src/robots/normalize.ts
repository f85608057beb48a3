// Octet normalisation shared by robots.txt patterns and request paths.
//
// RFC 9309 §2.2.2: octets outside US-ASCII are percent-encoded before
// comparison; a percent-encoded octet is decoded only when it is an RFC 3986
// §2.3 unreserved character (ALPHA / DIGIT / "-" / "." / "_" / "~"); reserved
// characters (RFC 3986 §2.2) stay as they are, encoded or not, because
// encoding one changes what the URI means. Both sides go through the same
// function, so the matcher only ever compares canonical ASCII strings whose
// length in UTF-16 units equals their length in octets.
//
// Beyond the letter of §2.2.2 (documented in docs/standards.md (robots part)):
// - hex digits are upper-cased (RFC 3986 §6.2.2.1), so %2f and %2F compare equal;
// - ASCII octets that may not appear raw in a URI at all (controls, space,
//   `"<>\^`{|}` and DEL) are encoded, so `/a b` and `/a%20b` compare equal;
// - a "%" not followed by two hex digits is encoded as %25;
// - in request paths `*` and `$` are encoded (%2A, %24) so that a pattern can
//   name them literally as RFC 9309 §2.2.3 shows (`/path/file-with-a-%2A.html`
//   matches `/path/file-with-a-*.html`); in patterns they stay special.

const UNRESERVED = 1;
const RESERVED = 2;

/** Class of each ASCII code: 0 = must be encoded, 1 = unreserved, 2 = reserved. */
const CLASS = new Uint8Array(128);
for (let c = 0x30; c <= 0x39; c++) CLASS[c] = UNRESERVED;
for (let c = 0x41; c <= 0x5a; c++) CLASS[c] = UNRESERVED;
for (let c = 0x61; c <= 0x7a; c++) CLASS[c] = UNRESERVED;
for (const ch of '-._~') CLASS[ch.charCodeAt(0)] = UNRESERVED;
for (const ch of ":/?#[]@!$&'()*+,;=") CLASS[ch.charCodeAt(0)] = RESERVED;

const HEX = '0123456789ABCDEF';
/** `%XX` for every octet, built once so encoding never formats numbers. */
const PCT: string[] = [];
for (let b = 0; b < 256; b++) PCT.push('%' + HEX[b >> 4] + HEX[b & 15]);

const STAR = 0x2a;
const DOLLAR = 0x24;
const PERCENT = 0x25;

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/**
 * True when the character at `i` must be rewritten. Kept separate from the
 * rewrite so the common case (an already canonical path) allocates nothing.
 */
function needsWork(s: string, i: number, c: number, pattern: boolean): boolean {
  if (c >= 0x80) return true;
  if (c === PERCENT) {
    const h = i + 2 < s.length ? hexVal(s.charCodeAt(i + 1)) : -1;
    const l = h >= 0 ? hexVal(s.charCodeAt(i + 2)) : -1;
    if (l < 0) return true; // bare "%": becomes %25
    const b = (h << 4) | l;
    if (b < 0x80 && CLASS[b] === UNRESERVED) return true; // decoded
    const c1 = s.charCodeAt(i + 1);
    const c2 = s.charCodeAt(i + 2);
    return c1 >= 0x61 || c2 >= 0x61; // lower-case hex
  }
  const k = CLASS[c];
  if (k === 0) return true;
  if (c === STAR) return !pattern;
  if (c === DOLLAR) return !pattern || i !== s.length - 1;
  return false;
}

/**
 * Canonical form of a request path or a robots.txt pattern.
 *
 * @param s        the path (with query) or the pattern text
 * @param pattern  true for a robots.txt pattern: `*` stays a wildcard and a
 *                 final `$` stays an end anchor; any other `$` is literal.
 * @param bytes    true when `s` is a byte string (each char code is one octet,
 *                 0..255), as the parser produces; false for an ordinary JS
 *                 string whose non-ASCII characters are encoded as UTF-8.
 */
export function normalizeOctets(s: string, pattern: boolean, bytes: boolean): string {
  const n = s.length;
  let i = 0;
  while (i < n && !needsWork(s, i, s.charCodeAt(i), pattern)) i++;
  if (i === n) return s;

  let out = s.slice(0, i);
  let run = i; // start of the pending run of characters copied unchanged
  while (i < n) {
    const c = s.charCodeAt(i);
    if (!needsWork(s, i, c, pattern)) { i++; continue; }
    if (run < i) out += s.slice(run, i);
    if (c === PERCENT) {
      const h = i + 2 < n ? hexVal(s.charCodeAt(i + 1)) : -1;
      const l = h >= 0 ? hexVal(s.charCodeAt(i + 2)) : -1;
      if (l < 0) { out += '%25'; i += 1; }
      else {
        const b = (h << 4) | l;
        out += b < 0x80 && CLASS[b] === UNRESERVED ? String.fromCharCode(b) : PCT[b];
        i += 3;
      }
    } else if (c < 0x80) {
      out += PCT[c]; // forbidden ASCII, or `*`/`$` where they are literal
      i += 1;
    } else if (bytes) {
      out += PCT[c & 0xff];
      i += 1;
    } else {
      // UTF-8 encode one code point; a lone surrogate becomes U+FFFD.
      let cp = c;
      let width = 1;
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); width = 2; }
        else cp = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) cp = 0xfffd;
      if (cp < 0x800) out += PCT[0xc0 | (cp >> 6)] + PCT[0x80 | (cp & 63)];
      else if (cp < 0x10000) out += PCT[0xe0 | (cp >> 12)] + PCT[0x80 | ((cp >> 6) & 63)] + PCT[0x80 | (cp & 63)];
      else out += PCT[0xf0 | (cp >> 18)] + PCT[0x80 | ((cp >> 12) & 63)] + PCT[0x80 | ((cp >> 6) & 63)] + PCT[0x80 | (cp & 63)];
      i += width;
    }
    run = i;
  }
  if (run < n) out += s.slice(run);
  return out;
}

/**
 * The path and query of a URL (fragment dropped), always starting with "/".
 * Accepts an absolute URL (`https://h/p?q`), a scheme-relative one (`//h/p`),
 * or a path (`/p?q`, `?q`). Like Google's reference parser, a string with
 * neither a scheme nor a leading "/" is read as `host[/path]`. Never throws.
 */
export function pathAndQuery(url: string): string {
  const n = url.length;
  if (n === 0) return '/';
  const c0 = url.charCodeAt(0);
  let authStart = -1;
  if (c0 === 0x2f /* / */) {
    if (n > 1 && url.charCodeAt(1) === 0x2f) authStart = 2;
    else return stripFragment(url, 0);
  } else if (c0 === 0x3f /* ? */) {
    return '/' + stripFragment(url, 0);
  } else {
    const sch = url.indexOf('://');
    authStart = 0;
    if (sch > 0) {
      let clean = true;
      for (let i = 0; i < sch; i++) {
        const c = url.charCodeAt(i);
        if (c === 0x2f || c === 0x3f || c === 0x23) { clean = false; break; }
      }
      if (clean) authStart = sch + 3;
    }
  }
  let p = authStart;
  while (p < n) {
    const c = url.charCodeAt(p);
    if (c === 0x2f || c === 0x3f || c === 0x23) break;
    p++;
  }
  if (p >= n || url.charCodeAt(p) === 0x23) return '/';
  const rest = stripFragment(url, p);
  return rest.charCodeAt(0) === 0x3f ? '/' + rest : rest;
}

function stripFragment(url: string, from: number): string {
  const h = url.indexOf('#', from);
  if (h < 0) return from === 0 ? url : url.slice(from);
  const s = url.slice(from, h);
  return s.length === 0 ? '/' : s;
}
