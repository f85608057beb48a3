// Character-encoding determination and decoding for fetched HTML.
//
// Follows the HTML Living Standard §13.2.3.2 "Determining the character encoding"
// (https://html.spec.whatwg.org/multipage/parsing.html#determining-the-character-encoding),
// simplified to what a crawler can do in one pass over a complete body:
//   1. BOM sniffing (Encoding Standard "BOM sniff") — wins over everything;
//   2. the transport layer (HTTP Content-Type charset), if it names a supported encoding;
//   3. the prescan of the first 1024 bytes for <meta charset> / <meta http-equiv=content-type>
//      (§13.2.3.2 "prescan a byte stream to determine its encoding");
//   4. otherwise "autodetect" (step 8 of the algorithm allows it): a body that is valid UTF-8 is
//      UTF-8, anything else windows-1252 (the spec's default for most locales).
// No re-decode when a later <meta> disagrees (the spec's "change the encoding" step): a crawler
// decodes once.
//
// Labels are resolved with TextDecoder, which implements the Encoding Standard's "get an encoding"
// (ASCII-whitespace trim, ASCII-case-insensitive label table). Node 20's windows-1252 decoder is
// wrong for bytes 0x80–0x9F (nodejs/node#60888: it decodes them as ISO-8859-1 C1 controls), so that
// one encoding is decoded here from the Encoding Standard's index-windows-1252.
import { Buffer, isAscii, isUtf8, transcode } from 'node:buffer';
import { TextDecoder } from 'node:util';

/** Where the chosen encoding came from. */
export type CharsetSource = 'bom' | 'header' | 'meta' | 'xml' | 'sniff' | 'default';

export interface CharsetResult {
  /** Encoding Standard name, e.g. `utf-8`, `windows-1252`, `shift_jis`. */
  encoding: string;
  source: CharsetSource;
  /** Bytes of BOM to skip. */
  bomLength: number;
}

const decoders = new Map<string, TextDecoder | null>();

/**
 * Encoding Standard "get an encoding" (https://encoding.spec.whatwg.org/#concept-encoding-get):
 * returns the canonical name for a label, or null for an unknown label (or one Node cannot decode,
 * such as the `replacement` labels, and on Node 20 `x-user-defined`).
 */
export function getEncoding(label: string): string | null {
  const d = decoderFor(label);
  return d === null ? null : d.encoding;
}

function decoderFor(label: string): TextDecoder | null {
  let d = decoders.get(label);
  if (d !== undefined) return d;
  try {
    // ignoreBOM: decodeBody strips the BOM it sniffed; a second one is content (Encoding Standard "decode" sniffs once).
    d = new TextDecoder(label, { ignoreBOM: true });
  } catch {
    d = null;
  }
  // Bounded: hostile pages can invent labels; do not let the cache grow without limit.
  if (decoders.size < 256) decoders.set(label, d);
  return d;
}

/** Encoding Standard "BOM sniff": UTF-8, UTF-16BE, UTF-16LE byte order marks. */
export function bomSniff(b: Uint8Array): CharsetResult | null {
  if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return { encoding: 'utf-8', source: 'bom', bomLength: 3 };
  if (b.length >= 2) {
    if (b[0] === 0xfe && b[1] === 0xff) return { encoding: 'utf-16be', source: 'bom', bomLength: 2 };
    if (b[0] === 0xff && b[1] === 0xfe) return { encoding: 'utf-16le', source: 'bom', bomLength: 2 };
  }
  return null;
}

/**
 * Determine the encoding of an HTML (or XHTML) body.
 * @param headerCharset the `charset` parameter of the Content-Type header, if any.
 * @param xml true for application/xhtml+xml: the XML declaration replaces the meta prescan and the
 *   default is UTF-8 (XML 1.0 §4.3.3, Appendix F).
 */
export function determineCharset(body: Uint8Array, headerCharset?: string, xml = false): CharsetResult {
  const bom = bomSniff(body);
  if (bom !== null) return bom;
  if (headerCharset) {
    const enc = getEncoding(headerCharset);
    if (enc !== null) return { encoding: enc, source: 'header', bomLength: 0 };
  }
  if (xml) {
    const enc = xmlDeclEncoding(body);
    if (enc !== null) return { encoding: enc, source: 'xml', bomLength: 0 };
    return { encoding: 'utf-8', source: 'default', bomLength: 0 };
  }
  const meta = prescan(body);
  if (meta !== null) return { encoding: meta, source: 'meta', bomLength: 0 };
  // Autodetection (§13.2.3.2 step 8). isUtf8 is a SIMD validator: a few µs per 100 KB.
  return isUtf8(body) ? { encoding: 'utf-8', source: 'sniff', bomLength: 0 } : { encoding: 'windows-1252', source: 'default', bomLength: 0 };
}

// index-windows-1252 (https://encoding.spec.whatwg.org/index-windows-1252.txt), bytes 0x80–0x9F.
// The five bytes the Windows code page leaves undefined (81, 8D, 8F, 90, 9D) map to the C1 control
// of the same value, as the Encoding Standard says.
const CP1252_C1 = [
  0x20ac, 0x0081, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008d, 0x017d, 0x008f,
  0x0090, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0x009d, 0x017e, 0x0178,
].map((c) => String.fromCharCode(c));
const C1_RE = /[\x80-\x9f]/g;
const C1_TEST = /[\x80-\x9f]/;

function decodeWindows1252(b: Uint8Array): string {
  const s = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
  return C1_TEST.test(s) ? s.replace(C1_RE, (c) => CP1252_C1[c.charCodeAt(0) - 0x80]) : s;
}

/**
 * Decode with the named encoding (as returned by `determineCharset`). Never throws: an encoding
 * Node cannot decode falls back to windows-1252, and malformed sequences become U+FFFD.
 */
export function decodeBody(body: Uint8Array, cs: CharsetResult): string {
  const b = cs.bomLength > 0 ? body.subarray(cs.bomLength) : body;
  if (cs.encoding === 'windows-1252') return decodeWindows1252(b);
  if (cs.encoding === 'utf-8') {
    const s = decodeValidUtf8(b);
    if (s !== null) return s;
  }
  // The BOM was stripped above; a second BOM-looking sequence is content (the decoders are made
  // with ignoreBOM, since TextDecoder's default would eat one more).
  const d = decoderFor(cs.encoding);
  if (d === null) return decodeWindows1252(b);
  try {
    return d.decode(b);
  } catch {
    return decodeWindows1252(b);
  }
}

let transcodeWorks = true;
const FAST_DECODE_MIN = 256;

/**
 * The common case, faster: a body that is valid UTF-8 (SIMD-checked) decodes to one string
 * whichever decoder does it, so the result equals TextDecoder's. Pure ASCII is copied as
 * Latin-1 (a one-byte string). Otherwise ICU's transcoder writes UTF-16LE and the string is one
 * copy of that: V8's own UTF-8 decoder, behind TextDecoder and toString alike, builds a
 * two-byte string one code point at a time once it meets a non-ASCII byte — 25–35 µs for a
 * 20 KB page with a few accented letters, against ≈ 12 µs this way (docs/performance.md
 * "Crawl"). Null: not valid UTF-8 (replacement characters are TextDecoder's job), a short
 * body, or no transcoder (a Node without ICU).
 */
function decodeValidUtf8(b: Uint8Array): string | null {
  if (b.length < FAST_DECODE_MIN || !transcodeWorks) return null;
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (isAscii(buf)) return buf.toString('latin1');
  if (!isUtf8(buf)) return null;
  try {
    return transcode(buf, 'utf8', 'utf16le').toString('utf16le');
  } catch {
    transcodeWorks = false;
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// §13.2.3.2 "prescan a byte stream to determine its encoding", over the first 1024 bytes.

const PRESCAN_LIMIT = 1024;

function isSpace(c: number): boolean {
  return c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0x20;
}
function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
function lower(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
}

/** State shared by `getAttribute` calls: the position pointer and the attribute it found. */
class Cursor {
  pos = 0;
  name = '';
  value = '';
  constructor(readonly b: Uint8Array, readonly end: number) {}
}

/**
 * §13.2.3.2 "get an attribute". Returns false when there is no attribute (at '>'), or when the
 * bytes run out, which the caller treats as "abort the prescan".
 * @returns 1 attribute found, 0 none (at '>'), -1 ran out of bytes.
 */
function getAttribute(cur: Cursor): number {
  const b = cur.b;
  const end = cur.end;
  let p = cur.pos;
  // 1. skip whitespace and '/'
  while (p < end && (isSpace(b[p]) || b[p] === 0x2f)) p++;
  if (p >= end) return -1;
  // 2. '>' → no attribute
  if (b[p] === 0x3e) {
    cur.pos = p;
    return 0;
  }
  let name = '';
  let value = '';
  // 4. attribute name
  for (;;) {
    if (p >= end) return -1;
    const c = b[p];
    if (c === 0x3d && name.length > 0) {
      p++;
      break; // to the value
    }
    if (isSpace(c)) {
      // 6. spaces; 7. if not '=', the attribute has no value
      while (p < end && isSpace(b[p])) p++;
      if (p >= end) return -1;
      if (b[p] !== 0x3d) {
        cur.pos = p;
        cur.name = name;
        cur.value = '';
        return 1;
      }
      p++;
      break;
    }
    if (c === 0x2f || c === 0x3e) {
      cur.pos = p;
      cur.name = name;
      cur.value = '';
      return 1;
    }
    name += String.fromCharCode(lower(c));
    p++;
  }
  // 9. skip whitespace before the value
  while (p < end && isSpace(b[p])) p++;
  if (p >= end) return -1;
  const q = b[p];
  if (q === 0x22 || q === 0x27) {
    // 10. quoted value
    p++;
    for (;;) {
      if (p >= end) return -1;
      const c = b[p];
      if (c === q) {
        cur.pos = p + 1;
        cur.name = name;
        cur.value = value;
        return 1;
      }
      value += String.fromCharCode(lower(c));
      p++;
    }
  }
  if (q === 0x3e) {
    cur.pos = p;
    cur.name = name;
    cur.value = '';
    return 1;
  }
  // 11. unquoted value
  for (;;) {
    if (p >= end) return -1;
    const c = b[p];
    if (isSpace(c) || c === 0x3e) {
      cur.pos = p;
      cur.name = name;
      cur.value = value;
      return 1;
    }
    value += String.fromCharCode(lower(c));
    p++;
  }
}

function startsWithCI(b: Uint8Array, p: number, end: number, lit: string): boolean {
  if (p + lit.length > end) return false;
  for (let i = 0; i < lit.length; i++) if (lower(b[p + i]) !== lit.charCodeAt(i)) return false;
  return true;
}

// The prescan maps x-user-defined to windows-1252 ("Processing" step). Node 20 cannot construct an
// x-user-defined decoder (getEncoding: null), Node 24 can: the label is checked either way.
function prescanEncoding(label: string): string | null {
  const enc = getEncoding(label);
  if (enc === 'x-user-defined' || (enc === null && label.trim().toLowerCase() === 'x-user-defined')) return 'windows-1252';
  return enc;
}

/**
 * §13.2.3.2 prescan over the first 1024 bytes. Returns an encoding name or null.
 * UTF-16BE/LE found this way mean UTF-8, and x-user-defined means windows-1252 (spec, "Processing").
 */
export function prescan(b: Uint8Array): string | null {
  const end = Math.min(b.length, PRESCAN_LIMIT);
  const cur = new Cursor(b, end);
  let p = 0;
  while (p < end) {
    if (b[p] !== 0x3c) {
      p++;
      continue;
    }
    // <!-- … -->: jump to the '>' of the first '-->' after '<!--' (the dashes may overlap '<!--').
    if (p + 3 < end && b[p + 1] === 0x21 && b[p + 2] === 0x2d && b[p + 3] === 0x2d) {
      let q = p + 4;
      while (q < end && !(b[q] === 0x3e && b[q - 1] === 0x2d && b[q - 2] === 0x2d)) q++;
      if (q >= end) return null;
      p = q + 1;
      continue;
    }
    // <meta followed by whitespace or '/'
    if (startsWithCI(b, p + 1, end, 'meta') && p + 5 < end && (isSpace(b[p + 5]) || b[p + 5] === 0x2f)) {
      cur.pos = p + 5;
      const seen = new Set<string>();
      let gotPragma = false;
      let needPragma: boolean | null = null;
      let charset: string | null = null;
      for (;;) {
        const r = getAttribute(cur);
        if (r < 0) return null;
        if (r === 0) break;
        const name = cur.name;
        if (seen.has(name)) continue;
        seen.add(name);
        if (name === 'http-equiv') {
          if (cur.value === 'content-type') gotPragma = true;
        } else if (name === 'content') {
          const label = extractCharsetFromContent(cur.value);
          if (label !== null && charset === null) {
            charset = prescanEncoding(label);
            needPragma = true;
          }
        } else if (name === 'charset') {
          charset = prescanEncoding(cur.value);
          needPragma = false;
        }
      }
      p = cur.pos + 1;
      if (needPragma === null) continue;
      if (needPragma && !gotPragma) continue;
      if (charset === null) continue;
      if (charset === 'utf-16be' || charset === 'utf-16le') return 'utf-8';
      return charset;
    }
    // <letter or </letter: a tag whose attributes must be skipped, so that "<meta" inside an
    // attribute value is not mistaken for a tag.
    if (p + 1 < end && (isAlpha(b[p + 1]) || (b[p + 1] === 0x2f && p + 2 < end && isAlpha(b[p + 2])))) {
      let q = p + 1;
      while (q < end && !isSpace(b[q]) && b[q] !== 0x3e) q++;
      if (q >= end) return null;
      cur.pos = q;
      for (;;) {
        const r = getAttribute(cur);
        if (r < 0) return null;
        if (r === 0) break;
      }
      p = cur.pos + 1;
      continue;
    }
    // <!, </, <? : skip to the next '>'
    if (p + 1 < end && (b[p + 1] === 0x21 || b[p + 1] === 0x2f || b[p + 1] === 0x3f)) {
      let q = p + 2;
      while (q < end && b[q] !== 0x3e) q++;
      if (q >= end) return null;
      p = q + 1;
      continue;
    }
    p++;
  }
  return null;
}

/**
 * HTML Living Standard, "algorithm for extracting a character encoding from a meta element"
 * (https://html.spec.whatwg.org/multipage/urls-and-fetching.html#algorithm-for-extracting-a-character-encoding-from-a-meta-element).
 * Returns the label (not yet resolved), or null.
 */
export function extractCharsetFromContent(s: string): string | null {
  let pos = 0;
  const n = s.length;
  for (;;) {
    // Loop: find "charset" (ASCII case-insensitive) at or after pos.
    let i = -1;
    for (let k = pos; k + 7 <= n; k++) {
      if ((s.charCodeAt(k) | 0x20) === 0x63 && s.slice(k, k + 7).toLowerCase() === 'charset') {
        i = k;
        break;
      }
    }
    if (i < 0) return null;
    let p = i + 7;
    while (p < n && isSpace(s.charCodeAt(p))) p++;
    if (p >= n || s.charCodeAt(p) !== 0x3d) {
      // Not followed by '=': resume the search just before this character.
      pos = p;
      continue;
    }
    p++;
    while (p < n && isSpace(s.charCodeAt(p))) p++;
    if (p >= n) return null;
    const c = s.charCodeAt(p);
    if (c === 0x22 || c === 0x27) {
      const close = s.indexOf(s[p], p + 1);
      if (close < 0) return null;
      return s.slice(p + 1, close);
    }
    let e = p;
    while (e < n && !isSpace(s.charCodeAt(e)) && s.charCodeAt(e) !== 0x3b) e++;
    return s.slice(p, e);
  }
}

/**
 * The `encoding` pseudo-attribute of an XML declaration (XML 1.0 §4.3.3) at the very start of the
 * body, e.g. `<?xml version="1.0" encoding="ISO-8859-1"?>`. Resolved with `getEncoding`.
 */
export function xmlDeclEncoding(b: Uint8Array): string | null {
  if (!startsWithCI(b, 0, b.length, '<?xml')) return null;
  const end = Math.min(b.length, PRESCAN_LIMIT);
  let close = 5;
  while (close + 1 < end && !(b[close] === 0x3f && b[close + 1] === 0x3e)) close++;
  const decl = Buffer.from(b.buffer, b.byteOffset, close).toString('latin1');
  const m = /\sencoding\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(decl);
  if (m === null) return null;
  const enc = getEncoding(m[1] ?? m[2]);
  // A UTF-16 declaration in a stream we are reading as bytes without a BOM is not credible.
  return enc === 'utf-16le' || enc === 'utf-16be' ? 'utf-8' : enc;
}
