// Query parameters that ad and analytics platforms append to links to
// attribute clicks. They never select a different resource on the target site,
// but each one makes a new URL string: left alone, they multiply a crawl's
// fetches of the same page. The list is deliberately short: only parameters
// that are documented (or unambiguously observed) as click or campaign
// identifiers. Generic names that sites use for content ("ref", "source", "id",
// "from", "sid") are NOT here, because dropping them can change the page.
//
// An entry ending in `*` is a prefix. Names are matched case-sensitively
// against the parameter name after RFC 3986 percent-encoding normalisation
// (so `utm%5Fsource` matches `utm_*`): the platforms emit lower-case names, and
// an upper-case `UTM_SOURCE` is more likely to be the site's own parameter.

/** Default tracking parameters dropped by `normalizeUrl` (`stripTrackingParams`). */
export const TRACKING_PARAMS: readonly string[] = Object.freeze([
  'utm_*',        // Google Analytics campaign tags (utm_source, utm_medium, utm_campaign, utm_term, utm_content, utm_id, ...)
  'gclid',        // Google Ads click id
  'gclsrc',       // Google Ads click source
  'dclid',        // Google Display / Campaign Manager click id
  'gbraid',       // Google Ads (iOS app-to-web) click id
  'wbraid',       // Google Ads (web-to-app) click id
  '_ga',          // Google Analytics cross-domain linker
  '_gl',          // Google Analytics / gtag cross-domain linker
  'fbclid',       // Facebook click id
  'msclkid',      // Microsoft Advertising click id
  'yclid',        // Yandex Direct click id
  'twclid',       // X / Twitter Ads click id
  'ttclid',       // TikTok Ads click id
  'li_fat_id',    // LinkedIn first-party ad tracking id
  'igshid',       // Instagram share id
  'mc_cid',       // Mailchimp campaign id
  'mc_eid',       // Mailchimp subscriber id
  '_hsenc',       // HubSpot email tracking
  '_hsmi',        // HubSpot email tracking
  'mkt_tok',      // Marketo email tracking token
]);

/** A tracking list compiled for fast membership tests. */
export interface CompiledParamList {
  readonly exact: ReadonlySet<string>;
  readonly prefixes: readonly string[];
}

export function compileParamList(list: readonly string[]): CompiledParamList {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const p of list) {
    if (typeof p !== 'string' || p.length === 0) continue;
    if (p.endsWith('*')) {
      const pre = p.slice(0, -1);
      if (pre.length > 0) prefixes.push(pre);
    } else {
      exact.add(p);
    }
  }
  return { exact, prefixes };
}

export function isListedParam(name: string, list: CompiledParamList): boolean {
  if (list.exact.has(name)) return true;
  const pre = list.prefixes;
  for (let i = 0; i < pre.length; i++) if (name.startsWith(pre[i])) return true;
  return false;
}
