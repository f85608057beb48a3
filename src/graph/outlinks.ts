// A page's outlinks as the link graph records them (docs/graph.md): normalised like
// every URL the crawler queues (src/url/normalize.ts), before any scope filter, each
// with Heritrix's hop type and discovery context, so the WARC metadata record reads
// like Heritrix's (WARCWriterProcessor.writeMetadata: "outlink: URL HOP CONTEXT").
import type { ExtractedLink, LinkTag } from '../parse/html.js';
import { normalizeUrl } from '../url/normalize.js';

/** Heritrix's Hop codes (org.archive.modules.extractor.Hop): L navigation link, E embed, R redirect/refresh. */
export type HopType = 'L' | 'E' | 'R';

export interface Outlink {
  url: string;
  hop: HopType;
  /** Heritrix's LinkContext string: `a/@href`, `link[rel='next']/@href`, `iframe/@src`, `meta`, `Location:`. */
  context: string;
}

// Heritrix's ExtractorHTML treats frame and iframe sources as embeds by default
// (treatFramesAsEmbedLinks) and a meta refresh as a redirect (Hop.REFER, context
// HTMLLinkContext.META, printed "meta"); ExtractorHTTP gives a Location header
// the context "Location:" and Hop.REFER.
const HOP: Record<LinkTag, HopType> = {
  a: 'L', area: 'L', link: 'L', canonical: 'L', frame: 'E', iframe: 'E', refresh: 'R',
  // Media (--media): embeds, as Heritrix's img/@src.
  img: 'E', source: 'E', video: 'E', audio: 'E', embed: 'E', object: 'E',
};

/** `[rel='…']` with the rel as written, whitespace runs folded to one space (the context is one line). */
function relSelector(rel: string | undefined): string {
  if (rel === undefined) return '';
  const r = rel.trim().replace(/\s+/g, ' ').replace(/'/g, '%27');
  return r === '' ? '' : `[rel='${r}']`;
}

/** Heritrix's context for a link of the parser: element/@attribute, the rel as a selector (Heritrix writes `link[rel='icon']/@href`). */
export function linkContext(link: Pick<ExtractedLink, 'tag' | 'rel'>): string {
  switch (link.tag) {
    case 'a':
    case 'area':
      return `${link.tag}${relSelector(link.rel)}/@href`;
    case 'link':
    case 'canonical':
      return `link${relSelector(link.rel ?? (link.tag === 'canonical' ? 'canonical' : undefined))}/@href`;
    case 'frame':
    case 'iframe':
      return `${link.tag}/@src`;
    case 'refresh':
      return 'meta';
    case 'object':
      return 'object/@data';
    default:
      return `${link.tag}/@src`;
  }
}

/**
 * The page's outlinks, normalised (the form the frontier and the seen-set use), in
 * page order, each URL once (its first occurrence), never the page itself. Links the
 * normaliser refuses (not crawlable http(s)) are left out.
 */
export function pageOutlinks(pageUrl: string, links: readonly ExtractedLink[]): Outlink[] {
  const out: Outlink[] = [];
  const seen = new Set<string>([pageUrl]);
  for (const link of links) {
    const url = normalizeUrl(link.url);
    if (url === null || seen.has(url)) continue;
    seen.add(url);
    out.push({ url, hop: HOP[link.tag] ?? 'L', context: linkContext(link) });
  }
  return out;
}

/** A redirect's target as an outlink of the redirecting URL (Heritrix: Hop.REFER, context "Location:"). */
export function redirectOutlink(pageUrl: string, location: string): Outlink | null {
  const url = normalizeUrl(location, pageUrl);
  if (url === null || url === pageUrl) return null;
  return { url, hop: 'R', context: 'Location:' };
}

/** The metadata record's warc-fields: one `outlink: URL HOP CONTEXT` field per link, in order. */
export function outlinkFields(outlinks: readonly Outlink[]): [string, string][] {
  return outlinks.map((o) => ['outlink', `${o.url} ${o.hop} ${o.context}`]);
}

/** Parses an `outlink` field value back (the context is the rest of the line: it may hold spaces). */
export function parseOutlinkValue(value: string): Outlink | null {
  const a = value.indexOf(' ');
  const b = a < 0 ? -1 : value.indexOf(' ', a + 1);
  if (a <= 0 || b < 0) return null;
  const hop = value.slice(a + 1, b);
  if (hop.length !== 1) return null;
  return { url: value.slice(0, a), hop: hop as HopType, context: value.slice(b + 1) };
}
