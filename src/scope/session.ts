// Session identifiers in URLs. Servers that cannot set a cookie put the
// session in the URL (`;jsessionid=…` path parameter, `?PHPSESSID=…`, ASP.NET
// cookieless `/(S(…))/` segments); every visit then mints new URLs for the
// same pages, an unbounded duplicate space (Heritrix and BUbiNG both strip
// them). The default policy is to STRIP them (the page is still crawled under
// its session-free URL, which such servers serve too); `reject` mode turns the
// URL away instead.
//
// Two kinds of names:
//   - unambiguous names (jsessionid, phpsessid, aspsessionid…): any value;
//   - ambiguous names (sid, sess, session): only when the value looks like a
//     token (≥ 16 letters/digits mixing both), because sites also use `sid`
//     for content, e.g. a story id (`?sid=12345`).

/** Parameter names that always carry a session id (case-insensitive; `*` = prefix). */
export const SESSION_ID_PARAMS: readonly string[] = Object.freeze([
  'jsessionid', // Java servlet containers (also as a ;path parameter)
  'phpsessid', // PHP
  'aspsessionid*', // classic ASP (ASPSESSIONIDxxxxxxxx)
  'sessionid',
  'session_id',
  'session-id',
  'sessid',
  'sess_id',
  'sesskey',
  'zenid', // Zen Cart
  'oscsid', // osCommerce
  'cfid', // ColdFusion
  'cftoken', // ColdFusion
]);

/** Parameter names that carry a session id only when the value is token-like. */
export const SESSION_ID_TOKEN_PARAMS: readonly string[] = Object.freeze(['sid', 'sess', 'session']);

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

function alternation(names: readonly string[]): string {
  const parts = names
    .filter((n) => typeof n === 'string' && n.length > 0)
    .map((n) => (n.endsWith('*') ? escapeRe(n.slice(0, -1)) + '[0-9a-z_]*' : escapeRe(n)));
  return parts.length > 0 ? parts.join('|') : '(?!)';
}

/** Compiled matchers for one configuration. All patterns are linear-time. */
export interface SessionIdMatcher {
  /** Does the URL (or the part after the authority) carry a session id? */
  test(url: string): boolean;
  /** The URL without its session ids (same string when there are none). */
  strip(url: string): string;
}

const TOKEN = '(?=[0-9a-z]*[0-9])(?=[0-9a-z]*[a-z])[0-9a-z]{16,}';
// ASP.NET cookieless session: a path segment like /(S(lit3py55t21z5v55vlm25s55))
// or /(X(1)S(…))/.
const ASPNET = '/\\((?:[a-z]\\([0-9a-z]{0,128}\\)){1,4}\\)(?=/|$|[?#])';

export function compileSessionIdMatcher(
  names: readonly string[] = SESSION_ID_PARAMS,
  tokenNames: readonly string[] = SESSION_ID_TOKEN_PARAMS,
): SessionIdMatcher {
  const strong = alternation(names);
  const weak = alternation(tokenNames);
  // Fast pre-filter over the whole URL (may over-approximate; strip() decides).
  const maybe = new RegExp(`[;?&](?:(?:${strong})=|(?:${weak})=${TOKEN})|${ASPNET}`, 'i');
  // One query parameter (the text between two '&').
  const queryParam = new RegExp(`^(?:(?:${strong})=|(?:${weak})=${TOKEN}$)`, 'i');
  // A ;name=value path parameter.
  const pathParam = new RegExp(`;(?:(?:${strong})=[^;/]*|(?:${weak})=${TOKEN}(?=$|[;/]))`, 'gi');
  const aspnet = new RegExp(ASPNET, 'gi');

  function strip(url: string): string {
    if (!maybe.test(url)) return url;
    const hash = url.indexOf('#');
    const frag = hash >= 0 ? url.slice(hash) : '';
    const noFrag = hash >= 0 ? url.slice(0, hash) : url;
    const q = noFrag.indexOf('?');
    let path = q >= 0 ? noFrag.slice(0, q) : noFrag;
    let query = q >= 0 ? noFrag.slice(q + 1) : null;
    const ss = path.indexOf('://');
    const pathStart = ss >= 0 ? path.indexOf('/', ss + 3) : 0;
    if (pathStart >= 0) {
      const head = path.slice(0, pathStart);
      let tail = path.slice(pathStart).replace(pathParam, '').replace(aspnet, '');
      if (tail.length === 0) tail = '/';
      path = head + tail;
    }
    if (query !== null) {
      const parts = query.split('&');
      if (parts.some((p) => queryParam.test(p))) {
        // Rebuilt only when something goes; empty pieces ("&&") go with it.
        const kept = parts.filter((p) => p.length > 0 && !queryParam.test(p));
        query = kept.length > 0 ? kept.join('&') : null;
      }
    }
    return path + (query !== null ? '?' + query : '') + frag;
  }

  return {
    // Cheap for the common case (no candidate); exact otherwise.
    test: (url) => maybe.test(url) && strip(url) !== url,
    strip,
  };
}

const DEFAULT_MATCHER = compileSessionIdMatcher();

/** Removes session ids (default lists) from a URL; same string when there are none. */
export function stripSessionIds(url: string): string {
  return DEFAULT_MATCHER.strip(url);
}

/** Does the URL carry a session id (default lists)? */
export function hasSessionId(url: string): boolean {
  return DEFAULT_MATCHER.test(url);
}
