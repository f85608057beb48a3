// HTTP `Link` header (RFC 8288 §3) — used for `rel="canonical"` on responses that cannot carry a
// <link> element (PDFs, images) and for any page.
//
//   Link       = #link-value
//   link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param )
//   link-param = token BWS [ "=" BWS ( token / quoted-string ) ]
//
// Relation types are compared ASCII case-insensitively (§2.1.1); a `rel` parameter after the
// first in one link-value is ignored (§3.3); a link whose `anchor` parameter (§3.2) is present
// describes some other context than this response, so it is skipped.

export interface HeaderLink {
  /** URI-Reference as written between the angle brackets (not resolved). */
  target: string;
  /** Lower-cased relation types. */
  rels: string[];
}

const MAX_LINKS = 256;

function isOws(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

/** Parses all `Link` header field values. Malformed link-values are skipped, never thrown. */
export function parseLinkHeader(values: readonly string[]): HeaderLink[] {
  const out: HeaderLink[] = [];
  for (const v of values) {
    if (typeof v !== 'string') continue;
    parseOne(v, out);
    if (out.length >= MAX_LINKS) break;
  }
  return out;
}

function parseOne(s: string, out: HeaderLink[]): void {
  const n = s.length;
  let p = 0;
  while (p < n && out.length < MAX_LINKS) {
    while (p < n && (isOws(s.charCodeAt(p)) || s.charCodeAt(p) === 0x2c)) p++;
    if (p >= n) return;
    if (s.charCodeAt(p) !== 0x3c) {
      // Not a link-value: skip to the next comma outside quotes.
      p = skipToComma(s, p);
      continue;
    }
    const close = s.indexOf('>', p + 1);
    if (close < 0) return;
    const target = s.slice(p + 1, close);
    p = close + 1;
    let rels: string[] | null = null;
    let anchor = false;
    // params
    for (;;) {
      while (p < n && isOws(s.charCodeAt(p))) p++;
      if (p >= n || s.charCodeAt(p) !== 0x3b) break;
      p++;
      while (p < n && isOws(s.charCodeAt(p))) p++;
      const ns = p;
      while (p < n && isTokenChar(s.charCodeAt(p))) p++;
      const name = s.slice(ns, p).toLowerCase();
      while (p < n && isOws(s.charCodeAt(p))) p++;
      let value = '';
      if (p < n && s.charCodeAt(p) === 0x3d) {
        p++;
        while (p < n && isOws(s.charCodeAt(p))) p++;
        if (p < n && s.charCodeAt(p) === 0x22) {
          // quoted-string with quoted-pair (RFC 9110 §5.6.4)
          p++;
          let buf = '';
          while (p < n && s.charCodeAt(p) !== 0x22) {
            if (s.charCodeAt(p) === 0x5c && p + 1 < n) p++;
            buf += s[p];
            p++;
          }
          p++;
          value = buf;
        } else {
          const vs = p;
          while (p < n && isTokenChar(s.charCodeAt(p))) p++;
          value = s.slice(vs, p);
        }
      }
      if (name === 'rel' && rels === null) rels = value.toLowerCase().split(/[\t\n\f\r ]+/).filter((r) => r !== '');
      else if (name === 'anchor') anchor = true;
    }
    if (!anchor && rels !== null && rels.length > 0) out.push({ target, rels });
    p = skipToComma(s, p);
  }
}

function skipToComma(s: string, p: number): number {
  let inQ = false;
  for (; p < s.length; p++) {
    const c = s.charCodeAt(p);
    if (inQ) {
      if (c === 0x5c) p++;
      else if (c === 0x22) inQ = false;
    } else if (c === 0x22) inQ = true;
    else if (c === 0x2c) return p + 1;
  }
  return p;
}

// tchar (RFC 9110 §5.6.2)
function isTokenChar(c: number): boolean {
  if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) return true;
  switch (c) {
    case 0x21: case 0x23: case 0x24: case 0x25: case 0x26: case 0x27: case 0x2a: case 0x2b:
    case 0x2d: case 0x2e: case 0x5e: case 0x5f: case 0x60: case 0x7c: case 0x7e:
      return true;
    default:
      return false;
  }
}
