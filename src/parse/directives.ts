// Page-level robots directives: <meta name="robots">, <meta name="<token>"> and the X-Robots-Tag
// HTTP header, with the semantics of Google's "Robots meta tag, data-nosnippet, and X-Robots-Tag
// specifications" (https://developers.google.com/search/docs/crawling-indexing/robots-meta-tag),
// the de-facto reference for these directives (there is no RFC):
//   - rules are comma-separated, name and content case-insensitive;
//   - several tags / header lines combine, and on conflict the more restrictive rule applies;
//   - `none` = `noindex, nofollow`; `all` = no restriction and has no effect when listed;
//   - `unavailable_after: <date>` (RFC 822, RFC 850, ISO 8601 …): noindex once the date has passed;
//     the rule is ignored when no valid date is given;
//   - an X-Robots-Tag value may start with a user-agent name and a colon ("googlebot: nofollow");
//     rules without a user agent are valid for all crawlers.

export interface RobotsDirectives {
  /** Do not index: fetched and stored but flagged. Set also by `none` and a past `unavailable_after`. */
  noindex: boolean;
  /** Do not follow the page's links. Set also by `none`. */
  nofollow: boolean;
  /** Do not keep a cached copy (`noarchive`; Bing's synonym `nocache`). */
  noarchive: boolean;
  /** Do not show a snippet (`nosnippet`, or `max-snippet:0`). */
  nosnippet: boolean;
  /** Earliest valid `unavailable_after` date seen, as epoch milliseconds. */
  unavailableAfter?: number;
}

export function emptyDirectives(): RobotsDirectives {
  return { noindex: false, nofollow: false, noarchive: false, nosnippet: false };
}


// Rules that take a value after a colon. Anything else followed by a colon at the start of an
// X-Robots-Tag item is a user-agent name.
const VALUED = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);
// Every rule name Google documents (plus Bing's nocache), so that a space-separated list
// ("noindex nofollow", a common mistake) can be recognised word by word.
const BOOLEAN = new Set([
  'all', 'none', 'noindex', 'nofollow', 'noarchive', 'nocache', 'nosnippet', 'notranslate', 'noimageindex',
  'indexifembedded', 'index', 'follow', 'noodp', 'noydir',
]);

/** Returns true when the word was a rule (whether or not it restricts anything). */
function applyBoolean(d: RobotsDirectives, w: string): boolean {
  switch (w) {
    case 'noindex':
      d.noindex = true;
      return true;
    case 'nofollow':
      d.nofollow = true;
      return true;
    case 'none':
      d.noindex = true;
      d.nofollow = true;
      return true;
    case 'noarchive':
    case 'nocache':
      d.noarchive = true;
      return true;
    case 'nosnippet':
      d.nosnippet = true;
      return true;
    default:
      return BOOLEAN.has(w);
  }
}

const ITEM_SEP = /[,;]/;
const WS = /[\t\n\f\r ]+/;
const NAME_COLON = /^([a-z0-9_.\-]+)[\t ]*:[\t ]*(.*)$/s;
const HAS_DIGIT = /\d/;

/** Parses a date as Google's `unavailable_after` does: widely used formats; NaN when invalid. */
function parseDate(s: string): number {
  const t = s.trim();
  if (t.length < 6 || !HAS_DIGIT.test(t)) return NaN;
  const ms = Date.parse(t);
  // Date.parse is lenient; a year outside this range is a misparse, not a real expiry.
  if (Number.isNaN(ms)) return NaN;
  const y = new Date(ms).getUTCFullYear();
  return y >= 1990 && y <= 9999 ? ms : NaN;
}

/**
 * Applies one comma-separated rule list to `d`. With `token` set (X-Robots-Tag), a leading
 * `name:` that is not a rule switches the user-agent scope for the rest of the list; rules are
 * kept only while the scope is "all" or equals `token`.
 */
function applyList(d: RobotsDirectives, list: string, token: string | null, now: number): void {
  const items = list.toLowerCase().split(ITEM_SEP);
  let applies = true;
  for (let i = 0; i < items.length; i++) {
    let item = items[i].trim();
    if (item === '') continue;
    let m = NAME_COLON.exec(item);
    if (m !== null && !VALUED.has(m[1]) && token !== null && !BOOLEAN.has(m[1])) {
      // "googlebot: noindex" — a user-agent scope (X-Robots-Tag only).
      applies = m[1] === token;
      item = m[2].trim();
      if (item === '') continue;
      m = NAME_COLON.exec(item);
    }
    if (!applies) continue;
    if (m !== null && VALUED.has(m[1])) {
      const name = m[1];
      let value = m[2];
      if (name === 'unavailable_after') {
        let ms = parseDate(value);
        // RFC 850 / RFC 822 dates contain a comma ("Wednesday, 03-Nov-21 …"): rejoin the pieces
        // the comma split off until the date parses, as long as they are not rules themselves.
        while (Number.isNaN(ms) && i + 1 < items.length && !isRuleItem(items[i + 1])) {
          value += ',' + items[++i];
          ms = parseDate(value);
        }
        if (!Number.isNaN(ms)) {
          if (d.unavailableAfter === undefined || ms < d.unavailableAfter) d.unavailableAfter = ms;
          if (ms <= now) d.noindex = true;
        }
      } else if (name === 'max-snippet' && value.trim() === '0') {
        d.nosnippet = true;
      }
      continue;
    }
    if (applyBoolean(d, item)) continue;
    // Not a rule: tolerate space-separated lists ("noindex nofollow"). Owners who write that mean
    // it; ignoring it would disobey them.
    // An unknown "name: value" item is left alone.
    if (m === null && WS.test(item)) for (const w of item.split(WS)) applyBoolean(d, w);
  }
}

function isRuleItem(item: string): boolean {
  const t = item.trim();
  if (BOOLEAN.has(t)) return true;
  const m = NAME_COLON.exec(t);
  return m !== null && (VALUED.has(m[1]) || BOOLEAN.has(m[2].trim()));
}

/**
 * Parses the `content` of one `<meta name="robots">` (or `<meta name="<token>">`).
 * @param now clock for `unavailable_after` (epoch ms), default Date.now().
 */
export function parseMetaRobots(content: string, now: number = Date.now(), into: RobotsDirectives = emptyDirectives()): RobotsDirectives {
  applyList(into, content, null, now);
  return into;
}

/**
 * Parses all X-Robots-Tag header values of a response for the crawler whose product token is
 * `token` (case-insensitive). Values prefixed with another crawler's name are ignored.
 */
export function parseXRobotsTag(values: readonly string[], token: string, now: number = Date.now(), into: RobotsDirectives = emptyDirectives()): RobotsDirectives {
  const t = productToken(token);
  for (const v of values) if (typeof v === 'string') applyList(into, v, t, now);
  return into;
}

/** The product token of a User-Agent-like string, lower-cased: "UbiCrawl/1.0 (+url)" → "ubicrawl". */
export function productToken(token: string): string {
  const t = token.trim().toLowerCase();
  const end = t.search(/[\/\s]/);
  return end < 0 ? t : t.slice(0, end);
}
