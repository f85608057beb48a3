// Is this response HTML? Content-Type first; when it is missing or "unknown", the HTML patterns of
// the WHATWG MIME Sniffing Standard §7.1 "Identifying a resource with an unknown MIME type"
// (https://mimesniff.spec.whatwg.org/#rules-for-identifying-an-unknown-mime-type).

export interface ContentType {
  /** type/subtype, lower-cased, or '' when absent or unparseable. */
  essence: string;
  /** The charset parameter, unquoted, or undefined. */
  charset?: string;
}

const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/;

/**
 * Parses a Content-Type header value (RFC 9110 §8.3.1, MIME Sniffing §4.4 "parse a MIME type",
 * simplified): essence lower-cased, the first `charset` parameter, quotes removed.
 */
export function parseContentType(value: string | undefined | null): ContentType {
  if (typeof value !== 'string') return { essence: '' };
  // Several Content-Type fields folded into one: the last one is the one that counts (Fetch
  // "extract a MIME type" keeps the last valid type).
  let v = value;
  const comma = v.lastIndexOf(',');
  if (comma >= 0 && !v.slice(comma + 1).includes('=')) v = v.slice(comma + 1);
  const semi = v.indexOf(';');
  const essence = (semi < 0 ? v : v.slice(0, semi)).trim().toLowerCase();
  const ct: ContentType = { essence: TOKEN_RE.test(essence) ? essence : '' };
  if (semi >= 0) {
    const m = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;,\s]*))/i.exec(v.slice(semi));
    if (m !== null) {
      const cs = (m[1] ?? m[2] ?? '').trim();
      if (cs !== '') ct.charset = cs;
    }
  }
  return ct;
}

/** text/html and application/xhtml+xml (HTML Living Standard §1.6, §16.1). */
export function isHtmlEssence(essence: string): boolean {
  return essence === 'text/html' || essence === 'application/xhtml+xml';
}

/** MIME Sniffing §4.6: types that mean "not told" and must be sniffed. */
export function isUnknownEssence(essence: string): boolean {
  return essence === '' || essence === 'unknown/unknown' || essence === 'application/unknown' || essence === '*/*';
}

// §7.1 table, HTML rows: the pattern (ASCII case-insensitive) followed by a tag-terminating byte
// (0x20 SP or 0x3E '>'), after leading whitespace bytes.
const HTML_PATTERNS = [
  '<!doctype html', '<html', '<head', '<script', '<iframe', '<h1', '<div', '<font', '<table', '<a', '<style',
  '<title', '<b', '<body', '<br', '<p', '<!--',
];

/**
 * True when the first bytes look like HTML by the MIME Sniffing §7.1 HTML patterns. A UTF-8 BOM is
 * skipped first (the standard would call such a body text/plain; a crawler that was told nothing
 * is better off reading the markup).
 */
export function sniffHtml(b: Uint8Array): boolean {
  let p = 0;
  if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) p = 3;
  while (p < b.length && (b[p] === 0x09 || b[p] === 0x0a || b[p] === 0x0c || b[p] === 0x0d || b[p] === 0x20)) p++;
  if (p >= b.length || b[p] !== 0x3c) return false;
  outer: for (const pat of HTML_PATTERNS) {
    const e = p + pat.length;
    if (e >= b.length) continue;
    for (let i = 1; i < pat.length; i++) {
      let c = b[p + i];
      if (c >= 0x41 && c <= 0x5a) c += 0x20;
      if (c !== pat.charCodeAt(i)) continue outer;
    }
    if (b[e] === 0x20 || b[e] === 0x3e) return true;
  }
  return false;
}
