// The Sitemaps 0.90 location rules (https://www.sitemaps.org/protocol.html,
// "Sitemap file location" and "Sitemaps & Cross Submits").
//
// - A sitemap at http://example.com/catalog/sitemap.xml may list only URLs
//   that start with http://example.com/catalog/ : same scheme, same host, same
//   port, and under the sitemap's own directory.
// - A sitemap index may list only sitemaps "on the same site" as itself.
// - A robots.txt that names a sitemap (its `Sitemap:` line) vouches for it:
//   the sitemap may then list URLs of the robots.txt's host, wherever the
//   sitemap itself lives. The caller passes that grant as `allowedPrefixes`.
//
// All comparisons are on normalised URLs (scheme and host case, default
// port, percent-encoding), as plain string prefixes.

import { normalizeUrl, type NormalizeOptions } from '../url/normalize.js';

/** "scheme://authority/" of a normalised hierarchical URL, or null. */
export function originPrefix(normalized: string): string | null {
  const ss = normalized.indexOf('://');
  if (ss < 0) return null;
  let end = ss + 3;
  while (end < normalized.length) {
    const c = normalized.charCodeAt(end);
    if (c === 0x2f || c === 0x3f || c === 0x23) break;
    end++;
  }
  return normalized.slice(0, end) + '/';
}

/** The directory of a normalised URL, with its trailing "/": http://h/a/b/s.xml?x → http://h/a/b/ . */
export function directoryPrefix(normalized: string): string | null {
  const origin = originPrefix(normalized);
  if (origin === null) return null;
  const q = normalized.indexOf('?', origin.length - 1);
  const pathEnd = q < 0 ? normalized.length : q;
  const slash = normalized.lastIndexOf('/', pathEnd - 1);
  return slash < origin.length - 1 ? origin : normalized.slice(0, slash + 1);
}

/**
 * The prefix a robots.txt grants to the sitemaps it names: its own origin
 * (robots.txt applies to one scheme+host+port, RFC 9309 §2.3). Pass the
 * result in `allowedPrefixes` when parsing a sitemap named by that robots.txt.
 */
export function robotsGrantPrefix(robotsTxtUrl: string, opts?: Partial<NormalizeOptions>): string | null {
  const n = normalizeUrl(robotsTxtUrl, undefined, opts);
  return n === null ? null : originPrefix(n);
}

export interface SitemapScope {
  /** Prefixes a listed page URL must start with. */
  readonly urlPrefixes: readonly string[];
  /** Prefixes a listed child sitemap (in an index) must start with. */
  readonly sitemapPrefixes: readonly string[];
}

/** Scope of the sitemap at `sitemapUrl`, widened by `allowedPrefixes` (each normalised; invalid ones ignored). */
export function sitemapScope(sitemapUrl: string, allowedPrefixes: readonly string[] = [], opts?: Partial<NormalizeOptions>): SitemapScope {
  const urlPrefixes: string[] = [];
  const sitemapPrefixes: string[] = [];
  const self = typeof sitemapUrl === 'string' ? normalizeUrl(sitemapUrl, undefined, opts) : null;
  if (self !== null) {
    const dir = directoryPrefix(self);
    const origin = originPrefix(self);
    if (dir !== null) urlPrefixes.push(dir);
    if (origin !== null) sitemapPrefixes.push(origin);
  }
  for (const p of allowedPrefixes) {
    if (typeof p !== 'string') continue;
    // A grant for a bare origin normalises to "http://x/", which cannot be
    // mistaken for a prefix of "http://x.evil/".
    const n = normalizeUrl(p, undefined, { ...opts, stripTrackingParams: false });
    if (n === null) continue;
    const q = n.indexOf('?');
    const prefix = q < 0 ? n : n.slice(0, q);
    urlPrefixes.push(prefix);
    sitemapPrefixes.push(prefix);
  }
  return { urlPrefixes, sitemapPrefixes };
}

export function inScope(normalized: string, prefixes: readonly string[]): boolean {
  for (let i = 0; i < prefixes.length; i++) if (normalized.startsWith(prefixes[i])) return true;
  return false;
}
