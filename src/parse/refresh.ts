// <meta http-equiv="refresh" content="…"> — HTML Living Standard §4.2.5.3 "Pragma directives",
// the "shared declarative refresh steps"
// (https://html.spec.whatwg.org/multipage/browsing-the-web.html#shared-declarative-refresh-steps).
// Only the parsing part lives here; the URL is resolved against the document base URL by the caller.

export interface Refresh {
  /** Delay in seconds (the integer part; digits and dots after it are ignored, as the spec says). */
  delay: number;
  /** The URL string as written (quotes removed), or null when the refresh reloads the same page. */
  url: string | null;
}

function isWs(c: number): boolean {
  return c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0x20;
}

/** Parses a refresh `content` value. Returns null when the spec's steps "return" (no refresh). */
export function parseRefresh(input: string): Refresh | null {
  const n = input.length;
  let p = 0;
  // 2. skip ASCII whitespace
  while (p < n && isWs(input.charCodeAt(p))) p++;
  // 3–6. time: a run of ASCII digits; if empty, the next code point must be '.'
  const t0 = p;
  while (p < n && input.charCodeAt(p) >= 0x30 && input.charCodeAt(p) <= 0x39) p++;
  let delay = 0;
  if (p === t0) {
    if (p >= n || input.charCodeAt(p) !== 0x2e) return null;
  } else {
    // "parse timeString using the rules for parsing non-negative integers": digits only here.
    // Clamp absurd values rather than produce Infinity.
    delay = p - t0 > 9 ? 999_999_999 : Number(input.slice(t0, p));
  }
  // 7. collect and ignore ASCII digits and '.'
  while (p < n && ((input.charCodeAt(p) >= 0x30 && input.charCodeAt(p) <= 0x39) || input.charCodeAt(p) === 0x2e)) p++;
  // 9. separator: whitespace, ';' or ','
  if (p < n) {
    const c = input.charCodeAt(p);
    if (!isWs(c) && c !== 0x3b && c !== 0x2c) return null;
    while (p < n && isWs(input.charCodeAt(p))) p++;
    if (p < n && (input.charCodeAt(p) === 0x3b || input.charCodeAt(p) === 0x2c)) p++;
    while (p < n && isWs(input.charCodeAt(p))) p++;
  }
  if (p >= n) return { delay, url: null };
  // 10. optional "URL" (ASCII case-insensitive), whitespace, '=' , whitespace
  let urlStart = p;
  let q = p;
  if (q < n && (input.charCodeAt(q) | 0x20) === 0x75) {
    q++;
    if (q < n && (input.charCodeAt(q) | 0x20) === 0x72) {
      q++;
      if (q < n && (input.charCodeAt(q) | 0x20) === 0x6c) {
        q++;
        while (q < n && isWs(input.charCodeAt(q))) q++;
        if (q < n && input.charCodeAt(q) === 0x3d) {
          q++;
          while (q < n && isWs(input.charCodeAt(q))) q++;
          urlStart = q;
        }
      }
    }
  }
  // "Skip quotes": a leading ' or " is dropped and the URL ends at the matching quote, if any.
  // (Reached with the position after "url=" when the prefix was complete, else at urlStart.)
  let end = n;
  if (urlStart < n) {
    const c = input.charCodeAt(urlStart);
    if (c === 0x22 || c === 0x27) {
      urlStart++;
      const close = input.indexOf(input[urlStart - 1], urlStart);
      if (close >= 0) end = close;
    }
  }
  return { delay, url: input.slice(urlStart, end) };
}
