// HTML extraction for the crawl pipeline: links, <base>, canonical, meta refresh, robots
// directives, title and (optionally) visible text — one pass, no DOM.
//
// Built on htmlparser2's Tokenizer (its streaming callback layer) rather than its Parser: the
// Parser repairs a tag stack, lower-cases every tag name and slices every text node into a string,
// none of which link extraction needs; on a 15 KB page that is a third of the parse time. Tag and
// attribute names are matched here in place on the decoded string (char codes | 0x20), attribute
// values are materialised only for the few attributes that matter, and URLs are resolved once, at
// the end, against the final document base URL (the HTML spec's base URL is that of the first
// <base href> in the document wherever it appears, so resolving early would be wrong anyway).
//
// Standards: HTML Living Standard §4.2.3 (base), §4.2.5.3 (refresh pragma), §4.6.2/§4.6.7 (links,
// rel keywords), §13.2.3.2 (encoding sniffing, in charset.ts); RFC 8288 (Link header, rel
// comparison); Google's robots meta tag specification (directives.ts). See docs/standards.md (HTML part).
import { Tokenizer, type TokenizerCallbacks, QuoteType } from 'htmlparser2';
import { determineCharset, decodeBody, type CharsetResult } from './charset.js';
import { emptyDirectives, parseMetaRobots, parseXRobotsTag, productToken, type RobotsDirectives } from './directives.js';
import { parseLinkHeader } from './linkheader.js';
import { isHtmlEssence, isUnknownEssence, parseContentType, sniffHtml } from './mime.js';
import { parseRefresh } from './refresh.js';
import { PIECE_BREAK, PIECE_ENTITY, simhash64, simhashPieces, type FingerprintJob } from '../dedup/simhash.js';
import { M_AUDIO, M_IMAGES, M_PDF, M_VIDEO, kindOfBit, mediaBitOf, mediaBitOfPath, srcsetUrls, type MediaKind } from './media.js';

export type LinkTag = 'a' | 'area' | 'link' | 'frame' | 'iframe' | 'refresh' | 'canonical' | MediaTag;
/** Elements whose URLs are media (extracted with the `media` option only: src/parse/media.ts). */
export type MediaTag = 'img' | 'source' | 'video' | 'audio' | 'embed' | 'object';

export interface ExtractedLink {
  /** Absolute http(s) URL: the href resolved against the document base URL, fragment removed. */
  url: string;
  tag: LinkTag;
  /** rel contained nofollow, ugc or sponsored (only returned when followNofollowLinks is set). */
  nofollow: boolean;
  /** The element's rel attribute as written (first occurrence of the href), when it had one; 'canonical' for a Link header canonical. */
  rel?: string;
  /** With the `media` option: the URL is media of this kind (an image, a PDF …), not a page. */
  media?: MediaKind;
}

export interface ExtractOptions {
  /** Final URL of the response (after redirects): the document URL. */
  url: string;
  /** Content-Type header value. */
  contentType?: string;
  /** X-Robots-Tag header values. */
  xRobotsTag?: string[];
  /** Link header values (RFC 8288); `rel="canonical"` there is honoured like <link rel=canonical>. */
  linkHeader?: string[];
  /** The crawler's product token, e.g. 'ubicrawl': matched by <meta name> and X-Robots-Tag prefixes. */
  robotsToken: string;
  /** Return links marked rel=nofollow/ugc/sponsored (flagged). Default false: counted, not returned. */
  followNofollowLinks?: boolean;
  /** Also return <link> elements that name resources (stylesheet, icon, preload, …). Default false. */
  includeResources?: boolean;
  /** Maximum distinct links kept per page. Default 2000. */
  maxLinks?: number;
  /** Collect visible text (for SimHash). Default false. */
  wantText?: boolean;
  /**
   * Fingerprint the visible text: `fingerprint` = simhash64 of the text that
   * wantText returns, computed from the text nodes in place (no text string
   * is built unless wantText is set too). Default false.
   */
  wantFingerprint?: boolean;
  /**
   * With wantFingerprint: leave the fingerprint to the caller when it can be
   * taken from the text nodes in place — `fingerprintJob` then holds the
   * decoded page and the pieces, for simhashPieces on another thread
   * (src/dedup/fingerprinter.ts). Otherwise `fingerprint` is set as usual.
   */
  fingerprintLater?: boolean;
  /** Cap on collected text, in UTF-16 code units after whitespace collapsing. Default 200,000. */
  maxTextChars?: number;
  /** Clock for `unavailable_after` (epoch ms). Default Date.now(). */
  now?: number;
  /** Collect `renderSignals` (what src/render/decide.ts needs). Default false. */
  wantRenderSignals?: boolean;
  /**
   * Also return the media URLs of these kinds (a mask of src/parse/media.ts M_* bits): img src/srcset,
   * picture/video/audio source, video poster, embed, object, and links to PDFs. Default 0: none, and no cost.
   */
  media?: number;
}

/**
 * What the static parse saw that tells whether a page is built in the browser
 * (src/render/decide.ts, docs/render.md "When to turn it on").
 */
export interface RenderSignals {
  /** Characters of visible text (text nodes outside head, script, style, noscript, template; whitespace runs excluded). */
  textChars: number;
  /** <script> elements (inline or src). */
  scripts: number;
  /** id of the first client-side app root (<div id=root|app|__next|__nuxt|___gatsby>), if any. */
  appRoot?: string;
  /** Visible text characters inside that app root. */
  appRootTextChars: number;
  /** Text of the <noscript> elements, collapsed, first 256 characters. */
  noscriptText: string;
}

export interface PageExtract {
  /** Encoding used to decode the body ('' when not HTML). */
  charset: string;
  /** Effective document base URL (after <base href>). */
  base: string;
  links: ExtractedLink[];
  /** Link elements seen after `maxLinks` distinct links were kept. */
  linksDropped: number;
  /** hrefs the URL parser rejected. */
  invalidLinks: number;
  /** Links with a scheme other than http/https (javascript:, mailto:, data:, tel:, ftp:, …). */
  ignoredLinks: number;
  /** rel=nofollow/ugc/sponsored links not returned (followNofollowLinks false). */
  nofollowLinks: number;
  canonical?: string;
  metaRefresh?: string;
  metaRefreshDelay?: number;
  directives: RobotsDirectives;
  title?: string;
  text?: string;
  /** simhash64 of the visible text (wantFingerprint; 0n when it has no word). */
  fingerprint?: bigint;
  /** fingerprintLater: what simhashPieces needs to compute `fingerprint` elsewhere. */
  fingerprintJob?: FingerprintJob;
  isHtml: boolean;
  /** With wantRenderSignals (HTML only). */
  renderSignals?: RenderSignals;
}

// ---------------------------------------------------------------------------------------------
// Tag and attribute identification without allocating: compare the decoded string in place.

const T_OTHER = 0;
const T_INLINE = 1; // phrasing elements: no word break in the visible text
const T_A = 2;
const T_AREA = 3;
const T_LINK = 4;
const T_FRAME = 5;
const T_IFRAME = 6;
const T_BASE = 7;
const T_META = 8;
const T_TITLE = 9;
const T_SCRIPT = 10;
const T_STYLE = 11; // also xmp, noembed, noframes: raw text the tokenizer skips as a block
const T_NOSCRIPT = 12;
const T_TEMPLATE = 13;
const T_SVG = 14; // svg, math: foreign content
const T_HEAD = 15;
const T_BODY = 16;
const T_HTML = 17;
const T_INTEGRATION = 18; // foreignObject, desc, mi, mo, mn, ms, mtext, annotation-xml: HTML inside svg/math
const T_DIV = 19; // only for render signals (client-side app roots)
// Media elements (only with the `media` option): all above T_DIV.
const T_IMG = 20;
const T_PICTURE = 21;
const T_SOURCE = 22;
const T_VIDEO = 23;
const T_AUDIO = 24;
const T_EMBED = 25;
const T_OBJECT = 26;

const A_NONE = 0;
const A_HREF = 1;
const A_REL = 2;
const A_NAME = 3;
const A_CONTENT = 4;
const A_HTTP_EQUIV = 5;
const A_SRC = 6;
const A_ID = 7;
// Media attributes (read on media elements only).
const A_SRCSET = 8;
const A_DATA = 9;
const A_TYPE = 10;
const A_POSTER = 11;

/** `s[a..a+lit.length)` equals `lit` (lower-case ASCII) ignoring ASCII case. */
function eq(s: string, a: number, lit: string): boolean {
  for (let i = 0; i < lit.length; i++) if ((s.charCodeAt(a + i) | 0x20) !== lit.charCodeAt(i)) return false;
  return true;
}

function tagId(s: string, a: number, e: number): number {
  const c = s.charCodeAt(a) | 0x20;
  switch (e - a) {
    case 1:
      if (c === 0x61) return T_A;
      return c === 0x62 || c === 0x69 || c === 0x71 || c === 0x73 || c === 0x75 ? T_INLINE : T_OTHER; // b i q s u
    case 2:
      if (c === 0x6d) {
        const d = s.charCodeAt(a + 1) | 0x20;
        return d === 0x69 || d === 0x6f || d === 0x6e || d === 0x73 ? T_INTEGRATION : T_OTHER; // mi mo mn ms
      }
      return eq(s, a, 'em') || eq(s, a, 'tt') ? T_INLINE : T_OTHER;
    case 3:
      switch (c) {
        case 0x73: // s
          if (eq(s, a, 'svg')) return T_SVG;
          return eq(s, a, 'sub') || eq(s, a, 'sup') ? T_INLINE : T_OTHER;
        case 0x76:
          return eq(s, a, 'var') ? T_INLINE : T_OTHER;
        case 0x77:
          return eq(s, a, 'wbr') ? T_INLINE : T_OTHER;
        case 0x6b:
          return eq(s, a, 'kbd') ? T_INLINE : T_OTHER;
        case 0x62:
          return eq(s, a, 'bdi') || eq(s, a, 'bdo') || eq(s, a, 'big') ? T_INLINE : T_OTHER;
        case 0x64:
          if (eq(s, a, 'div')) return T_DIV;
          return eq(s, a, 'del') || eq(s, a, 'dfn') ? T_INLINE : T_OTHER;
        case 0x69:
          if (eq(s, a, 'img')) return T_IMG;
          return eq(s, a, 'ins') ? T_INLINE : T_OTHER;
        case 0x78:
          return eq(s, a, 'xmp') ? T_STYLE : T_OTHER;
        default:
          return T_OTHER;
      }
    case 4:
      switch (c) {
        case 0x61:
          if (eq(s, a, 'area')) return T_AREA;
          return eq(s, a, 'abbr') ? T_INLINE : T_OTHER;
        case 0x6c:
          return eq(s, a, 'link') ? T_LINK : T_OTHER;
        case 0x62:
          if (eq(s, a, 'base')) return T_BASE;
          return eq(s, a, 'body') ? T_BODY : T_OTHER;
        case 0x6d:
          if (eq(s, a, 'meta')) return T_META;
          if (eq(s, a, 'math')) return T_SVG;
          return eq(s, a, 'mark') ? T_INLINE : T_OTHER;
        case 0x68:
          if (eq(s, a, 'head')) return T_HEAD;
          return eq(s, a, 'html') ? T_HTML : T_OTHER;
        case 0x73:
          return eq(s, a, 'span') || eq(s, a, 'samp') ? T_INLINE : T_OTHER;
        case 0x63:
          return eq(s, a, 'code') || eq(s, a, 'cite') ? T_INLINE : T_OTHER;
        case 0x64:
          if (eq(s, a, 'desc')) return T_INTEGRATION;
          return eq(s, a, 'data') ? T_INLINE : T_OTHER;
        case 0x66:
          return eq(s, a, 'font') ? T_INLINE : T_OTHER;
        case 0x74:
          return eq(s, a, 'time') ? T_INLINE : T_OTHER;
        case 0x6e:
          return eq(s, a, 'nobr') ? T_INLINE : T_OTHER;
        default:
          return T_OTHER;
      }
    case 5:
      switch (c) {
        case 0x66:
          return eq(s, a, 'frame') ? T_FRAME : T_OTHER;
        case 0x74:
          return eq(s, a, 'title') ? T_TITLE : T_OTHER;
        case 0x76:
          return eq(s, a, 'video') ? T_VIDEO : T_OTHER;
        case 0x61:
          return eq(s, a, 'audio') ? T_AUDIO : T_OTHER;
        case 0x65:
          return eq(s, a, 'embed') ? T_EMBED : T_OTHER;
        case 0x73:
          if (eq(s, a, 'style')) return T_STYLE;
          return eq(s, a, 'small') ? T_INLINE : T_OTHER;
        case 0x6d:
          return eq(s, a, 'mtext') ? T_INTEGRATION : T_OTHER;
        default:
          return T_OTHER;
      }
    case 6:
      switch (c) {
        case 0x69:
          return eq(s, a, 'iframe') ? T_IFRAME : T_OTHER;
        case 0x73:
          if (eq(s, a, 'script')) return T_SCRIPT;
          if (eq(s, a, 'source')) return T_SOURCE;
          return eq(s, a, 'strong') || eq(s, a, 'strike') ? T_INLINE : T_OTHER;
        case 0x6f:
          return eq(s, a, 'object') ? T_OBJECT : T_OTHER;
        default:
          return T_OTHER;
      }
    case 7:
      if (c === 0x70) return eq(s, a, 'picture') ? T_PICTURE : T_OTHER;
      return eq(s, a, 'noembed') ? T_STYLE : T_OTHER;
    case 8:
      if (c === 0x6e) {
        if (eq(s, a, 'noscript')) return T_NOSCRIPT;
        return eq(s, a, 'noframes') ? T_STYLE : T_OTHER;
      }
      return eq(s, a, 'template') ? T_TEMPLATE : T_OTHER;
    case 13:
      return eq(s, a, 'foreignobject') ? T_INTEGRATION : T_OTHER;
    case 14:
      return eq(s, a, 'annotation-xml') ? T_INTEGRATION : T_OTHER;
    default:
      return T_OTHER;
  }
}

function attrId(s: string, a: number, e: number): number {
  switch (e - a) {
    case 2:
      return eq(s, a, 'id') ? A_ID : A_NONE;
    case 3:
      if (eq(s, a, 'rel')) return A_REL;
      return eq(s, a, 'src') ? A_SRC : A_NONE;
    case 4:
      if (eq(s, a, 'href')) return A_HREF;
      if (eq(s, a, 'name')) return A_NAME;
      if (eq(s, a, 'data')) return A_DATA;
      return eq(s, a, 'type') ? A_TYPE : A_NONE;
    case 6:
      if (eq(s, a, 'srcset')) return A_SRCSET;
      return eq(s, a, 'poster') ? A_POSTER : A_NONE;
    case 7:
      return eq(s, a, 'content') ? A_CONTENT : A_NONE;
    case 10:
      return eq(s, a, 'http-equiv') ? A_HTTP_EQUIV : A_NONE;
    default:
      return A_NONE;
  }
}

// Link kinds stored during the parse (resolved at the end).
const K_A = 0;
const K_AREA = 1;
const K_LINK = 2;
const K_FRAME = 3;
const K_IFRAME = 4;
const K_REFRESH = 5;
const K_CANONICAL = 6;
const K_IMG = 7;
const K_SOURCE = 8;
const K_VIDEO = 9;
const K_AUDIO = 10;
const K_EMBED = 11;
const K_OBJECT = 12;
const KIND_TAG: LinkTag[] = ['a', 'area', 'link', 'frame', 'iframe', 'refresh', 'canonical', 'img', 'source', 'video', 'audio', 'embed', 'object'];

// <link rel> keywords (HTML §4.6.7 and the microformats existing-rel-values registry) that name
// another page or document a crawler should visit …
const PAGE_RELS = new Set([
  'alternate', 'amphtml', 'next', 'prev', 'previous', 'first', 'last', 'up', 'index', 'contents', 'toc', 'start',
  'author', 'help', 'license', 'archives', 'chapter', 'section', 'subsection', 'appendix', 'glossary', 'home',
]);
// … and those that name a subresource or a service endpoint, never a page, even when combined
// with a page keyword ("alternate stylesheet" is a stylesheet).
const RESOURCE_RELS = new Set([
  'stylesheet', 'icon', 'shortcut', 'apple-touch-icon', 'apple-touch-icon-precomposed', 'apple-touch-startup-image',
  'mask-icon', 'fluid-icon', 'manifest', 'preload', 'modulepreload', 'prefetch', 'prerender', 'preconnect',
  'dns-prefetch', 'pingback', 'webmention', 'edituri', 'wlwmanifest', 'search', 'openid.server', 'openid.delegate',
  'openid2.provider', 'openid2.local_id', 'image_src', 'compression-dictionary', 'expect',
]);

const REL_SPLIT = /[\t\n\f\r ]+/;

/** HTML §4.6.7: rel is a set of space-separated, ASCII case-insensitive keywords. */
function relTokens(rel: string): string[] {
  return rel.toLowerCase().split(REL_SPLIT);
}

/** §4.6.7.15 nofollow, and the ugc / sponsored qualifiers search engines added alongside it. */
function isNofollowRel(rel: string | null): boolean {
  if (rel === null || rel.length < 3) return false;
  const l = rel.toLowerCase();
  if (!l.includes('nofollow') && !l.includes('ugc') && !l.includes('sponsored')) return false;
  for (const t of l.split(REL_SPLIT)) if (t === 'nofollow' || t === 'ugc' || t === 'sponsored') return true;
  return false;
}

// ---------------------------------------------------------------------------------------------

const TITLE_MAX = 1024;
const RAW_NONE = 0;
const RAW_SKIP = 1;
const RAW_TITLE = 2;

/**
 * The tokenizer callbacks. One instance is reused for every page (extractPage is synchronous and
 * resets it first), so the per-page cost is the work, not the set-up.
 */
/**
 * htmlparser2's Tokenizer, with text runs skipped by `indexOf`. With entity
 * decoding on (which we need: `&amp;` in hrefs and text), its text state looks
 * at every character in turn through the main state switch — on text-dense
 * pages most of the parse time. Between a text character and the next `<` or
 * `&` nothing can happen in the Text state, so this jumps straight there and
 * lets the original handle that character. The next positions of both are
 * remembered, so a page without `&` is searched for one once, not once per
 * text run.
 *
 * Markup-dense pages (real documentation: every word in a link, a span with a
 * class) spend as long inside tags: tag and attribute names and quoted
 * attribute values went through the switch one character at a time too. In
 * those states only a few characters can end the run (whitespace, `/`, `>`,
 * and `=` for a name; the quote or `&` for a value), so a local loop finds the
 * next one and the original handles it, as for text.
 *
 * Most start tags on such pages are of elements the extractor ignores (`<span
 * class=…>`, `<div id=…>`): their attributes cost the same walk through the
 * attribute states, with callbacks that drop what they are given. When the
 * callbacks say the tag is of no interest (`interesting` false), a local loop
 * runs the same attribute states (HTML §13.2.5.32–13.2.5.40, as htmlparser2
 * implements them) without callbacks to the `>` that ends the tag, or to the
 * `/` of the `/>` that ends it, and the original handles that character — so
 * the tag ends, special tags (script, style, title) start their raw text and
 * self-closing is seen exactly as before. An `&` in a value needs no decoding
 * there: an entity never takes in a quote, whitespace or `>`, so it cannot move
 * where a value ends, and its code point would be dropped. A tag that runs to
 * the end of the buffer is left to the original.
 *
 * Relies on the tokenizer's `buffer`, `offset` and `index` fields
 * (htmlparser2 12, pinned in package-lock.json; test/parse.test.ts checks
 * the output against the plain Tokenizer over the synthetic web's pages,
 * edge cases and every prefix-cut of them).
 */
/** The parts of htmlparser2 12's Tokenizer this subclass touches (declared private there). */
interface TokenizerOpen {
  buffer: string; offset: number; index: number; write(chunk: string): void; reset(): void;
  stateText(c: number): void; stateInTagName(c: number): void; stateInClosingTagName(c: number): void; stateInAttributeName(c: number): void;
  stateInAttributeValueDoubleQuotes(c: number): void; stateInAttributeValueSingleQuotes(c: number): void;
  stateBeforeAttributeName(c: number): void;
}
/** What the attribute skip asks of the callbacks: false while the current start tag's attributes are of no use. */
interface AttributeInterest { interesting?: boolean }
const OpenTokenizer = Tokenizer as unknown as new (options: { xmlMode?: boolean; decodeEntities?: boolean }, cbs: TokenizerCallbacks) => TokenizerOpen;
const LT = 0x3c, AMP = 0x26, DQUOTE = 0x22, SQUOTE = 0x27, GT = 0x3e, SLASH = 0x2f, EQ = 0x3d;
// The attribute states the skip runs through (htmlparser2's names).
const S_BEFORE_NAME = 0, S_SELF_CLOSING = 1, S_NAME = 2, S_AFTER_NAME = 3, S_BEFORE_VALUE = 4, S_DQ = 5, S_SQ = 6, S_NQ = 7;
function isWs(ch: number): boolean {
  return ch === 0x20 || ch === 0x0a || ch === 0x09 || ch === 0x0c || ch === 0x0d;
}
/** Characters that end a tag or attribute name (htmlparser2's isEndOfTagSection: `/`, `>`, whitespace); `=` too with `eq`. */
function endsName(ch: number, eq: boolean): boolean {
  return ch === 0x2f || ch === 0x3e || ch === 0x20 || ch === 0x0a || ch === 0x09 || ch === 0x0c || ch === 0x0d || (eq && ch === 0x3d);
}
class FastTextTokenizer extends OpenTokenizer {
  private nextLt = -1;
  private nextAmp = -1;
  private readonly interest: AttributeInterest;

  constructor(options: { xmlMode?: boolean; decodeEntities?: boolean }, cbs: TokenizerCallbacks) {
    super(options, cbs);
    this.interest = cbs as AttributeInterest;
  }

  override write(chunk: string): void {
    this.nextLt = this.nextAmp = -1;
    super.write(chunk);
  }

  override reset(): void {
    this.nextLt = this.nextAmp = -1;
    super.reset();
  }

  override stateText(c: number): void {
    if (c !== LT && c !== AMP) {
      const buf = this.buffer;
      const from = this.index - this.offset + 1;
      const len = buf.length;
      if (this.nextLt < from) { const i = buf.indexOf('<', from); this.nextLt = i < 0 ? len : i; }
      if (this.nextAmp < from) { const i = buf.indexOf('&', from); this.nextAmp = i < 0 ? len : i; }
      const next = this.nextLt < this.nextAmp ? this.nextLt : this.nextAmp;
      if (next >= len) {
        // Text to the end of the buffer: the main loop ends, and end() emits it (as fastForwardTo does).
        this.index = len + this.offset - 1;
        return;
      }
      this.index = next + this.offset;
      c = buf.charCodeAt(next);
    }
    super.stateText(c);
  }

  /**
   * From the current character (which does not end the name) to the next one that does: the
   * index moves there and its code is returned; -1 when the buffer ends first (the index is then
   * left on its last character, as the main loop and fastForwardTo leave it).
   */
  private skipName(eq: boolean): number {
    const buf = this.buffer;
    const len = buf.length;
    let i = this.index - this.offset + 1;
    while (i < len) {
      const ch = buf.charCodeAt(i);
      if (endsName(ch, eq)) { this.index = i + this.offset; return ch; }
      i++;
    }
    this.index = len + this.offset - 1;
    return -1;
  }

  /** The same for a quoted attribute value: to the closing quote or the next `&` (an entity, decoded by the original). */
  private skipValue(quote: number): number {
    const buf = this.buffer;
    const len = buf.length;
    let i = this.index - this.offset + 1;
    while (i < len) {
      const ch = buf.charCodeAt(i);
      if (ch === quote || ch === AMP) { this.index = i + this.offset; return ch; }
      i++;
    }
    this.index = len + this.offset - 1;
    return -1;
  }

  override stateInTagName(c: number): void {
    if (!endsName(c, false) && (c = this.skipName(false)) < 0) return;
    super.stateInTagName(c);
  }

  override stateInClosingTagName(c: number): void {
    if (!endsName(c, false) && (c = this.skipName(false)) < 0) return;
    super.stateInClosingTagName(c);
  }

  override stateInAttributeName(c: number): void {
    if (!endsName(c, true) && (c = this.skipName(true)) < 0) return;
    super.stateInAttributeName(c);
  }

  override stateInAttributeValueDoubleQuotes(c: number): void {
    if (c !== DQUOTE && c !== AMP && (c = this.skipValue(DQUOTE)) < 0) return;
    super.stateInAttributeValueDoubleQuotes(c);
  }

  override stateInAttributeValueSingleQuotes(c: number): void {
    if (c !== SQUOTE && c !== AMP && (c = this.skipValue(SQUOTE)) < 0) return;
    super.stateInAttributeValueSingleQuotes(c);
  }

  override stateBeforeAttributeName(c: number): void {
    if (c !== GT && this.interest.interesting === false) {
      const at = this.skipAttributes();
      if (at >= 0) {
        this.index = at + this.offset;
        c = this.buffer.charCodeAt(at);
      }
    }
    super.stateBeforeAttributeName(c);
  }

  /**
   * From the current character, in the before-attribute-name state, through the attribute states
   * without callbacks: the position of the `>` that ends the tag, or of the `/` of a `/>` (the
   * original then goes to its self-closing state and reads the rest); -1 when the buffer ends first.
   */
  private skipAttributes(): number {
    const buf = this.buffer;
    const len = buf.length;
    let st = S_BEFORE_NAME;
    let slash = -1;
    for (let i = this.index - this.offset; i < len; i++) {
      const ch = buf.charCodeAt(i);
      switch (st) {
        case S_BEFORE_NAME:
          if (ch === GT) return i;
          if (ch === SLASH) { st = S_SELF_CLOSING; slash = i; } else if (!isWs(ch)) st = S_NAME;
          break;
        case S_SELF_CLOSING:
          if (ch === GT) return slash;
          if (!isWs(ch)) { st = S_BEFORE_NAME; i--; } // reconsumed
          break;
        case S_NAME:
          if (ch === EQ || ch === SLASH || ch === GT || isWs(ch)) { st = S_AFTER_NAME; i--; }
          break;
        case S_AFTER_NAME:
          if (ch === EQ) st = S_BEFORE_VALUE;
          else if (ch === SLASH || ch === GT) { st = S_BEFORE_NAME; i--; } else if (!isWs(ch)) st = S_NAME;
          break;
        case S_BEFORE_VALUE:
          if (ch === DQUOTE) st = S_DQ;
          else if (ch === SQUOTE) st = S_SQ;
          else if (!isWs(ch)) { st = S_NQ; i--; }
          break;
        case S_DQ: // to the closing quote (this character, or a later one)
          if (ch !== DQUOTE && (i = buf.indexOf('"', i + 1)) < 0) return -1;
          st = S_BEFORE_NAME;
          break;
        case S_SQ:
          if (ch !== SQUOTE && (i = buf.indexOf("'", i + 1)) < 0) return -1;
          st = S_BEFORE_NAME;
          break;
        default: // S_NQ
          if (ch === GT || isWs(ch)) { st = S_BEFORE_NAME; i--; }
          break;
      }
    }
    return -1;
  }
}

/** The fast path needs the fields and method it overrides; an htmlparser2 without them gets the plain Tokenizer. */
function fastTextUsable(): boolean {
  const proto = Tokenizer.prototype as unknown as Record<string, unknown>;
  for (const m of ['stateText', 'stateInTagName', 'stateInClosingTagName', 'stateInAttributeName', 'stateInAttributeValueDoubleQuotes', 'stateInAttributeValueSingleQuotes', 'stateBeforeAttributeName']) {
    if (typeof proto[m] !== 'function') return false;
  }
  const probe = new FastTextTokenizer({ xmlMode: false, decodeEntities: true }, {} as TokenizerCallbacks);
  return typeof probe.buffer === 'string' && typeof probe.offset === 'number' && typeof probe.index === 'number';
}
let fastTextScan = fastTextUsable();

class Extractor implements TokenizerCallbacks {
  s = '';
  // options for this page
  token = '';
  now = 0;
  followNofollow = false;
  includeResources = false;
  maxLinks = 2000;
  wantText = false;
  wantFp = false;
  fpLater = false;
  fp = 0n;
  /** fpLater in piece mode: the pieces of the last run, for the job. */
  fpPieces: Int32Array | undefined = undefined;
  maxText = 200_000;
  pageNofollowKnown = false; // X-Robots-Tag said nofollow: do not collect links at all

  // current start tag
  tag = T_OTHER;
  interesting = false;
  attr = A_NONE;
  val = '';
  href: string | null = null;
  rel: string | null = null;
  name: string | null = null;
  content: string | null = null;
  httpEquiv: string | null = null;
  src: string | null = null;
  id: string | null = null;
  srcset: string | null = null;
  data: string | null = null;
  type: string | null = null;
  poster: string | null = null;

  // media (the `media` option): kinds asked for, the open picture/video/audio a <source> belongs to, the kind of the link being added
  media = 0;
  mediaParent = T_OTHER;
  curMedia = 0;

  // render signals (wantSignals): see RenderSignals
  wantSignals = false;
  scripts = 0;
  textChars = 0;
  appRoot: string | null = null;
  /** Open <div>s inside the app root, the root included; 0 = outside it. */
  appRootDepth = 0;
  appRootTextChars = 0;
  noscriptParts: string[] = [];
  noscriptLen = 0;

  // document state
  raw = RAW_NONE;
  // Foreign-content context (HTML §13.2.6.5): a small stack, 1 = inside svg/math, 0 = inside an
  // HTML integration point within them. The tokenizer asks it whether <script>/<style>/<title>
  // are raw-text elements here (they are not inside svg/math). Capped: deeper nesting is counted.
  ctx: number[] = [];
  ctxOverflow = 0;
  noscript = 0;
  template = 0;
  inHead = true;
  baseHref: string | null = null;
  canonicalHref: string | null = null;
  refresh: { delay: number; url: string } | null = null;
  refreshSeen = false;
  titleParts: string[] | null = null;
  titleLen = 0;
  title: string | null = null;
  directives: RobotsDirectives = emptyDirectives();

  // links: raw href → index into kinds/flags; first occurrence fixes the order
  linkIndex = new Map<string, number>();
  hrefs: string[] = [];
  kinds: number[] = [];
  nofollowFlags: boolean[] = [];
  rels: Array<string | null> = [];
  /** Media kind bit per link (0: a page link). */
  linkMedia: number[] = [];
  linksDropped = 0;
  nofollowLinks = 0;

  // visible text
  textParts: string[] = [];
  textRaw = 0;
  pendingSpace = false;
  textDone = false;
  // Fingerprint only (no wantText): the text as pieces of `s` (simhashPieces's
  // format), not strings; turned into strings only past the cap or for a text
  // simhashPieces cannot take.
  pieceMode = false;
  pieces = new Int32Array(512);
  pieceCount = 0;

  readonly tokenizer: Tokenizer;

  constructor() {
    const Tok = (fastTextScan ? FastTextTokenizer : Tokenizer) as unknown as typeof Tokenizer;
    this.tokenizer = new Tok({ xmlMode: false, decodeEntities: true }, this);
  }

  reset(): void {
    this.tag = T_OTHER;
    this.interesting = false;
    this.attr = A_NONE;
    this.val = '';
    this.clearAttrs();
    this.raw = RAW_NONE;
    this.ctx.length = 0;
    this.ctxOverflow = 0;
    this.noscript = 0;
    this.template = 0;
    this.inHead = true;
    this.baseHref = null;
    this.canonicalHref = null;
    this.refresh = null;
    this.refreshSeen = false;
    this.titleParts = null;
    this.title = null;
    this.directives = emptyDirectives();
    this.linkIndex = new Map();
    this.hrefs = [];
    this.kinds = [];
    this.nofollowFlags = [];
    this.rels = [];
    this.linkMedia = [];
    this.mediaParent = T_OTHER;
    this.curMedia = 0;
    this.linksDropped = 0;
    this.nofollowLinks = 0;
    this.textParts = [];
    this.textRaw = 0;
    this.pendingSpace = false;
    this.textDone = false;
    this.pieceMode = false;
    this.pieceCount = 0;
    this.scripts = 0;
    this.textChars = 0;
    this.appRoot = null;
    this.appRootDepth = 0;
    this.appRootTextChars = 0;
    this.noscriptParts = [];
    this.noscriptLen = 0;
    this.tokenizer.reset();
  }

  clearAttrs(): void {
    this.href = null;
    this.rel = null;
    this.name = null;
    this.content = null;
    this.httpEquiv = null;
    this.src = null;
    this.id = null;
    this.srcset = null;
    this.data = null;
    this.type = null;
    this.poster = null;
  }

  run(s: string): void {
    this.s = s;
    try {
      this.tokenizer.write(s);
      this.tokenizer.end();
    } finally {
      // Pieces index `s`: the fingerprint is taken (or handed out with it) while it is at hand.
      if (this.wantFp && this.fpLater && this.pieceMode) this.fpPieces = this.pieces.slice(0, 2 * this.pieceCount);
      else if (this.wantFp) this.fp = this.fingerprint();
      this.s = '';
    }
  }

  // --- tokenizer callbacks -------------------------------------------------------------------

  isInForeignContext(): boolean {
    const c = this.ctx;
    return c.length > 0 && c[c.length - 1] === 1;
  }

  onopentagname(start: number, end: number): void {
    const t = tagId(this.s, start, end);
    this.tag = t;
    this.interesting = (t >= T_A && t <= T_META) || (t === T_DIV && this.wantSignals) || (t >= T_IMG && this.media !== 0);
    this.attr = A_NONE;
    if (t !== T_INLINE) this.textBreak();
    // HTML §13.2.6.4.4 "in head": anything but head content ends the head (approximation of the
    // tree builder, enough to tell where a <link rel=canonical> sits).
    if (this.inHead && !(t === T_META || t === T_LINK || t === T_BASE || t === T_TITLE || t === T_SCRIPT || t === T_STYLE || t === T_NOSCRIPT || t === T_TEMPLATE || t === T_HEAD || t === T_HTML)) {
      this.inHead = false;
    }
  }

  onattribname(start: number, end: number): void {
    const id = this.interesting ? attrId(this.s, start, end) : A_NONE;
    // id matters on <div> only (render signals): no string for the ids of links and metas; media attributes on media elements only.
    this.attr = (id === A_ID && this.tag !== T_DIV) || (id >= A_SRCSET && this.tag < T_IMG) ? A_NONE : id;
    this.val = '';
  }

  onattribdata(start: number, end: number): void {
    if (this.attr !== A_NONE && end > start) this.val = this.val === '' ? this.s.slice(start, end) : this.val + this.s.slice(start, end);
  }

  onattribentity(cp: number): void {
    if (this.attr !== A_NONE) this.val += String.fromCodePoint(cp);
  }

  onattribend(_quote: QuoteType, _end: number): void {
    // HTML §13.2.5.33: a duplicate attribute is dropped; the first one counts.
    switch (this.attr) {
      case A_NONE:
        return;
      case A_HREF:
        if (this.href === null) this.href = this.val;
        break;
      case A_REL:
        if (this.rel === null) this.rel = this.val;
        break;
      case A_NAME:
        if (this.name === null) this.name = this.val;
        break;
      case A_CONTENT:
        if (this.content === null) this.content = this.val;
        break;
      case A_HTTP_EQUIV:
        if (this.httpEquiv === null) this.httpEquiv = this.val;
        break;
      case A_SRC:
        if (this.src === null) this.src = this.val;
        break;
      case A_ID:
        if (this.id === null) this.id = this.val;
        break;
      case A_SRCSET:
        if (this.srcset === null) this.srcset = this.val;
        break;
      case A_DATA:
        if (this.data === null) this.data = this.val;
        break;
      case A_TYPE:
        if (this.type === null) this.type = this.val;
        break;
      case A_POSTER:
        if (this.poster === null) this.poster = this.val;
        break;
    }
    this.attr = A_NONE;
    this.val = '';
  }

  onopentagend(_end: number): void {
    this.endStartTag(false);
  }

  onselfclosingtag(_end: number): void {
    this.endStartTag(true);
  }

  endStartTag(selfClosing: boolean): void {
    const t = this.tag;
    this.tag = T_OTHER;
    if (this.interesting) {
      this.interesting = false;
      this.element(t);
      this.clearAttrs();
      return;
    }
    switch (t) {
      case T_TITLE:
        // The tokenizer now reads RCDATA up to </title> (not inside svg, where title is a plain
        // element). Only the first title counts (HTML §4.2.2).
        if (this.isInForeignContext()) this.pushCtx(0, selfClosing); // svg <title>: an integration point
        else this.raw = this.title === null && this.titleParts === null && this.template === 0 ? RAW_TITLE : RAW_SKIP;
        break;
      case T_SCRIPT:
      case T_STYLE:
        if (!this.isInForeignContext()) this.raw = RAW_SKIP;
        if (t === T_SCRIPT) this.scripts++;
        break;
      case T_NOSCRIPT:
        if (!selfClosing) this.noscript++;
        break;
      case T_TEMPLATE:
        if (!selfClosing) this.template++;
        break;
      case T_SVG:
        this.pushCtx(1, selfClosing);
        break;
      case T_INTEGRATION:
        if (this.isInForeignContext()) this.pushCtx(0, selfClosing);
        break;
      case T_BODY:
        this.inHead = false;
        break;
    }
    if (t === T_TITLE && this.raw === RAW_TITLE) {
      this.titleParts = [];
      this.titleLen = 0;
    }
  }

  onclosetag(start: number, end: number): void {
    const raw = this.raw;
    if (raw !== RAW_NONE) {
      // Inside raw text the tokenizer reports only the matching end tag.
      this.raw = RAW_NONE;
      if (raw === RAW_TITLE) this.finishTitle();
      return;
    }
    const t = tagId(this.s, start, end);
    switch (t) {
      case T_NOSCRIPT:
        if (this.noscript > 0) this.noscript--;
        break;
      case T_TEMPLATE:
        if (this.template > 0) this.template--;
        break;
      case T_SVG:
        // Pop up to and including the innermost svg/math.
        while (this.popCtx() === 0);
        break;
      case T_INTEGRATION:
      case T_TITLE:
        if (this.ctx.length > 0 && this.ctx[this.ctx.length - 1] === 0) this.popCtx();
        break;
      case T_HEAD:
        this.inHead = false;
        break;
      case T_DIV:
        if (this.appRootDepth > 0) this.appRootDepth--;
        break;
      case T_PICTURE:
      case T_VIDEO:
      case T_AUDIO:
        if (this.mediaParent === t) this.mediaParent = T_OTHER;
        break;
    }
    if (t !== T_INLINE) this.textBreak();
  }

  ontext(start: number, end: number): void {
    const raw = this.raw;
    if (raw === RAW_SKIP) return;
    if (raw === RAW_TITLE) {
      if (this.titleParts !== null && this.titleLen < TITLE_MAX * 4) {
        this.titleParts.push(this.s.slice(start, end));
        this.titleLen += end - start;
      }
      return;
    }
    if (this.wantSignals) this.signalText(start, end);
    const want = this.wantText && !this.textDone && this.noscript === 0 && this.template === 0;
    if (!this.inHead && !want) return;
    if (isAllWhitespace(this.s, start, end)) {
      // Inter-element whitespace: at most a word break, no string (HTML §3.2.5.1 "inter-element
      // whitespace"; most text nodes of a pretty-printed page are just this).
      if (want) this.textBreak();
      return;
    }
    this.inHead = false;
    if (want) {
      if (this.pieceMode) this.addPiece(start, end, end - start);
      else this.addText(this.s.slice(start, end));
    }
  }

  ontextentity(cp: number, _end: number): void {
    const raw = this.raw;
    if (raw === RAW_SKIP) return;
    if (raw === RAW_TITLE) {
      if (this.titleParts !== null && this.titleLen < TITLE_MAX * 4) {
        this.titleParts.push(String.fromCodePoint(cp));
        this.titleLen += 2;
      }
      return;
    }
    this.inHead = false;
    if (!this.wantText || this.textDone || this.noscript > 0 || this.template > 0) return;
    if (this.pieceMode) this.addPiece(PIECE_ENTITY, cp, cp > 0xffff ? 2 : 1);
    else this.addText(String.fromCodePoint(cp));
  }

  oncdata(): void {}
  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}
  onend(): void {
    if (this.raw === RAW_TITLE) this.finishTitle();
    this.raw = RAW_NONE;
  }

  pushCtx(kind: number, selfClosing: boolean): void {
    // A self-closing svg/math element (<svg/>) opens nothing (§13.2.6.5, "acknowledge the
    // self-closing flag").
    if (selfClosing) return;
    if (this.ctx.length < 64) this.ctx.push(kind);
    else this.ctxOverflow++;
  }

  /** Pops one context entry; returns it, or -1 when the stack is empty. */
  popCtx(): number {
    if (this.ctxOverflow > 0) {
      this.ctxOverflow--;
      return 0;
    }
    const v = this.ctx.pop();
    return v === undefined ? -1 : v;
  }

  // --- elements --------------------------------------------------------------------------------

  element(t: number): void {
    switch (t) {
      case T_A:
      case T_AREA:
        // HTML §4.6.1: an <a>/<area> without href is not a link.
        if (this.href !== null) this.addLink(this.href, t === T_A ? K_A : K_AREA, isNofollowRel(this.rel));
        return;
      case T_FRAME:
      case T_IFRAME:
        if (this.src !== null) this.addLink(this.src, t === T_FRAME ? K_FRAME : K_IFRAME, false);
        // The tokenizer reads an iframe's content as raw text (fallback markup, never rendered).
        if (t === T_IFRAME && !this.isInForeignContext()) this.raw = RAW_SKIP;
        return;
      case T_LINK:
        if (this.href !== null && this.rel !== null) this.linkElement(this.href, this.rel);
        return;
      case T_BASE:
        // HTML §4.2.3: the first <base> with an href sets the document base URL. Template contents
        // are not in the document.
        if (this.baseHref === null && this.href !== null && this.template === 0) this.baseHref = this.href;
        return;
      case T_META:
        if (this.template === 0) this.meta();
        return;
      case T_IMG:
      case T_PICTURE:
      case T_SOURCE:
      case T_VIDEO:
      case T_AUDIO:
      case T_EMBED:
      case T_OBJECT:
        if (this.template === 0) this.mediaElement(t);
        return;
      case T_DIV:
        if (this.appRootDepth > 0) this.appRootDepth++;
        else if (this.appRoot === null && this.id !== null && this.template === 0 && APP_ROOT_IDS.has(this.id)) {
          this.appRoot = this.id;
          this.appRootDepth = 1;
        }
        return;
    }
  }

  /**
   * A media element's URLs, of the kinds asked for: img src and srcset (HTML §4.8.4), a <source> by the picture,
   * video or audio element it is in (§4.8.2, §4.8.8), video src and poster, audio src, embed src, object data
   * (by their type attribute, else the file extension).
   */
  mediaElement(t: number): void {
    switch (t) {
      case T_IMG:
        this.addMedia(this.src, K_IMG, M_IMAGES);
        this.addSrcset(K_IMG, M_IMAGES);
        return;
      case T_PICTURE:
      case T_VIDEO:
      case T_AUDIO:
        this.mediaParent = t;
        if (t === T_VIDEO) { this.addMedia(this.src, K_VIDEO, M_VIDEO); this.addMedia(this.poster, K_VIDEO, M_IMAGES); }
        else if (t === T_AUDIO) this.addMedia(this.src, K_AUDIO, M_AUDIO);
        return;
      case T_SOURCE: {
        const p = this.mediaParent;
        if (p === T_PICTURE) { this.addSrcset(K_SOURCE, M_IMAGES); this.addMedia(this.src, K_SOURCE, M_IMAGES); }
        else if (p === T_VIDEO || p === T_AUDIO) this.addMedia(this.src, K_SOURCE, p === T_VIDEO ? M_VIDEO : M_AUDIO);
        else if (this.src !== null) this.addMedia(this.src, K_SOURCE, mediaBitOf(this.type, this.src));
        return;
      }
      case T_EMBED:
        if (this.src !== null) this.addMedia(this.src, K_EMBED, mediaBitOf(this.type, this.src));
        return;
      case T_OBJECT:
        if (this.data !== null) this.addMedia(this.data, K_OBJECT, mediaBitOf(this.type, this.data));
        return;
    }
  }

  addMedia(ref: string | null, kind: number, bit: number): void {
    if (ref === null || (bit & this.media) === 0 || ref.trim() === '') return;
    this.curMedia = bit;
    this.addLink(ref.trim(), kind, false);
    this.curMedia = 0;
  }

  addSrcset(kind: number, bit: number): void {
    if (this.srcset === null || (bit & this.media) === 0) return;
    for (const u of srcsetUrls(this.srcset)) this.addMedia(u, kind, bit);
  }

  /** Render signals from one text node: visible length, app-root content, noscript wording. */
  signalText(start: number, end: number): void {
    if (this.template > 0 || isAllWhitespace(this.s, start, end)) return;
    if (this.noscript > 0) {
      if (this.noscriptLen < NOSCRIPT_MAX) {
        this.noscriptParts.push(this.s.slice(start, Math.min(end, start + NOSCRIPT_MAX)));
        this.noscriptLen += end - start;
      }
      return;
    }
    const n = end - start;
    this.textChars += n;
    if (this.appRootDepth > 0) this.appRootTextChars += n;
  }

  linkElement(href: string, rel: string): void {
    const tokens = relTokens(rel);
    let canonical = false;
    let page = false;
    let resource = false;
    let nofollow = false;
    for (const r of tokens) {
      if (r === 'canonical') canonical = true;
      else if (RESOURCE_RELS.has(r)) resource = true;
      else if (PAGE_RELS.has(r)) page = true;
      else if (r === 'nofollow') nofollow = true;
    }
    if (canonical) {
      // Google accepts rel=canonical only in <head>; the first one counts.
      if (this.inHead && this.canonicalHref === null && this.template === 0) {
        this.canonicalHref = href;
        this.addLink(href, K_CANONICAL, false);
      }
      return;
    }
    if (page && !resource) this.addLink(href, K_LINK, nofollow);
    else if (this.includeResources) this.addLink(href, K_LINK, nofollow);
  }

  meta(): void {
    const content = this.content;
    if (content === null) return;
    const name = this.name;
    if (name !== null) {
      const n = name.trim().toLowerCase();
      // Google: name="robots" is for every crawler, name="<user-agent token>" for that one.
      if (n === 'robots' || (n === this.token && n !== '')) parseMetaRobots(content, this.now, this.directives);
      return;
    }
    const he = this.httpEquiv;
    if (he !== null && !this.refreshSeen && he.trim().toLowerCase() === 'refresh') {
      // §4.2.5.3: the first refresh pragma that parses is the one the document acts on.
      const r = parseRefresh(content);
      if (r !== null) {
        this.refreshSeen = true;
        if (r.url !== null) {
          this.refresh = { delay: r.delay, url: r.url };
          this.addLink(r.url, K_REFRESH, false);
        }
      }
    }
  }

  addLink(href: string, kind: number, nofollow: boolean): void {
    if (this.pageNofollowKnown) return;
    if (nofollow && !this.followNofollow) {
      this.nofollowLinks++;
      return;
    }
    const i = this.linkIndex.get(href);
    if (i !== undefined) {
      // Named as media anywhere on the page (an <a> to an image, then the <img>): fetched as media.
      if (this.curMedia !== 0 && this.linkMedia[i] === 0) this.linkMedia[i] = this.curMedia;
      // Same href again: one followable occurrence makes the link followable (and its rel the one reported).
      if (!nofollow && this.nofollowFlags[i]) {
        this.nofollowFlags[i] = false;
        this.rels[i] = this.relOf(kind);
      }
      return;
    }
    if (this.hrefs.length >= this.maxLinks) {
      this.linksDropped++;
      return;
    }
    this.linkIndex.set(href, this.hrefs.length);
    this.hrefs.push(href);
    this.kinds.push(kind);
    this.nofollowFlags.push(nofollow);
    this.rels.push(this.relOf(kind));
    this.linkMedia.push(this.curMedia);
  }

  /** The rel of the element being read: <a>, <area>, <link> have one; frame, iframe and refresh none. */
  relOf(kind: number): string | null {
    return kind === K_FRAME || kind === K_IFRAME || kind === K_REFRESH || kind >= K_IMG ? null : this.rel;
  }

  // --- text ------------------------------------------------------------------------------------

  /** A word break before the next text (block boundary, whitespace-only text). */
  textBreak(): void {
    if (this.wantText) this.pendingSpace = true;
  }

  addText(t: string): void {
    if (this.pendingSpace) {
      this.pendingSpace = false;
      if (this.textParts.length > 0) {
        this.textParts.push(' ');
        this.textRaw++;
      }
    }
    this.textParts.push(t);
    this.textRaw += t.length;
    if (this.textRaw > this.maxText) this.compactText();
  }

  /** addText for piece mode: the same counting, a record instead of a string. */
  addPiece(a: number, b: number, len: number): void {
    let n = this.pieceCount;
    if (this.pendingSpace) {
      this.pendingSpace = false;
      if (n > 0) {
        this.pushPiece(n++, PIECE_BREAK, 0);
        this.textRaw++;
      }
    }
    this.pushPiece(n++, a, b);
    this.pieceCount = n;
    this.textRaw += len;
    // Past the cap the text is collapsed and cut (compactText): leave piece mode, with the same result.
    if (this.textRaw > this.maxText) this.piecesToText();
  }

  pushPiece(n: number, a: number, b: number): void {
    if (2 * n + 2 > this.pieces.length) {
      const grown = new Int32Array(this.pieces.length * 2);
      grown.set(this.pieces);
      this.pieces = grown;
    }
    this.pieces[2 * n] = a;
    this.pieces[2 * n + 1] = b;
  }

  /** Replays the pieces through addText: from here on, the text is collected as strings. */
  piecesToText(): void {
    const pending = this.pendingSpace;
    const p = this.pieces, n = this.pieceCount;
    this.pieceMode = false;
    this.pieceCount = 0;
    this.textParts = [];
    this.textRaw = 0;
    this.pendingSpace = false;
    for (let i = 0; i < n && !this.textDone; i++) {
      const a = p[2 * i]!, b = p[2 * i + 1]!;
      if (a === PIECE_BREAK) this.pendingSpace = true;
      else this.addText(a === PIECE_ENTITY ? String.fromCodePoint(b) : this.s.slice(a, b));
    }
    this.pendingSpace = pending;
  }

  /** simhash64 of text(); in piece mode without building the text (call before run() returns: pieces index `s`). */
  fingerprint(): bigint {
    if (this.pieceMode) {
      const fp = simhashPieces(this.s, this.pieces, this.pieceCount);
      if (fp !== null) return fp;
      this.piecesToText();
    }
    return simhash64(this.text());
  }

  /** Collapse what was collected so far; stop once the collapsed text reaches the cap. */
  compactText(): void {
    const c = collapse(this.textParts.join(''));
    this.textParts = [c];
    this.textRaw = c.length;
    if (c.length >= this.maxText) this.textDone = true;
  }

  finishTitle(): void {
    const parts = this.titleParts;
    this.titleParts = null;
    if (parts === null) return;
    let t = collapse(parts.join('')).trim();
    if (t.length > TITLE_MAX) t = t.slice(0, TITLE_MAX);
    this.title = t;
  }

  text(): string {
    let t = collapse(this.textParts.join('')).trim();
    if (t.length > this.maxText) t = t.slice(0, this.maxText);
    return t;
  }
}

// ASCII whitespace, plus NO-BREAK SPACE (rendered as a space; splitting on it is what word
// shingling wants). Only runs that are not already a single U+0020 match: replacing every lone
// space by itself made this regex cost more than the parse.
const WS_RUN = / ?[\t\n\f\r\u00a0][\t\n\f\r \u00a0]*| {2,}[\t\n\f\r \u00a0]*/g;
function collapse(s: string): string {
  return s.replace(WS_RUN, ' ');
}

function isAllWhitespace(s: string, a: number, e: number): boolean {
  for (let i = a; i < e; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x09 && c !== 0x0d && c !== 0x0c) return false;
  }
  return true;
}

// Mount points of the common client-side frameworks (React/CRA and Vite templates: root; Vue: app;
// Next.js: __next; Nuxt: __nuxt; Gatsby: ___gatsby).
const APP_ROOT_IDS = new Set(['root', 'app', '__next', '__nuxt', '___gatsby']);
const NOSCRIPT_MAX = 256;

let shared: Extractor | null = null;

/**
 * false: parse with htmlparser2's Tokenizer exactly as shipped, the reference
 * the text fast path (FastTextTokenizer) is tested and measured against.
 * Returns whether the fast path is in use.
 */
export function setFastTextScan(on: boolean): boolean {
  fastTextScan = on && fastTextUsable();
  shared = null;
  return fastTextScan;
}

function tryUrl(input: string, base?: string): URL | null {
  try {
    return new URL(input, base);
  } catch {
    return null;
  }
}

function stripFragment(href: string): string {
  // A serialized URL has '#' only as the fragment delimiter (it is percent-encoded elsewhere).
  const i = href.indexOf('#');
  return i < 0 ? href : href.slice(0, i);
}

// Quick reject before URL parsing for the common non-fetchable schemes. The URL parser still
// decides for everything else (it also sees through "java\tscript:").
function nonHttpScheme(h: string): boolean {
  let i = 0;
  while (i < h.length && h.charCodeAt(i) <= 0x20) i++;
  const c = h.charCodeAt(i) | 0x20;
  if (c === 0x6a) return eq(h, i, 'javascript:');
  if (c === 0x6d) return eq(h, i, 'mailto:');
  if (c === 0x64) return eq(h, i, 'data:');
  if (c === 0x74) return eq(h, i, 'tel:');
  return false;
}

// ---------------------------------------------------------------------------------------------
// Fast path for resolving the common relative references ("/path?q", "page.html") without the
// URL parser, which costs ~0.6 µs per call with a string base. It applies only when the result is
// certain to equal what the WHATWG URL parser would serialise: the reference consists of
// characters the parser leaves untouched in a path or query of a special URL (no percent-encode
// set member, no backslash, no non-ASCII, no quote), and has no dot segment (". ", "..", or
// their %2e spellings) for the parser to remove. Anything else goes to the URL parser.
// test/parse.test.ts checks the equivalence against `new URL` on random references.

interface FastBase {
  /** scheme://userinfo@host:port — what precedes the path in the base's serialisation. */
  prefix: string;
  /** prefix + the base path up to and including its last '/'. */
  dir: string;
}

function fastBase(base: string | undefined): FastBase | null {
  if (base === undefined) return null;
  const u = tryUrl(base);
  if (u === null || (u.protocol !== 'http:' && u.protocol !== 'https:')) return null;
  const href = u.href;
  const tail = u.pathname.length + u.search.length + u.hash.length;
  const prefix = href.slice(0, href.length - tail);
  const path = u.pathname;
  return { prefix, dir: prefix + path.slice(0, path.lastIndexOf('/') + 1) };
}

// Characters kept verbatim by the URL parser in the path and the query of an http(s) URL:
// ALPHA DIGIT - . _ ~ ! $ & ( ) * + , ; = : @ / ? %. (Not ' which the special-query set encodes,
// nor ^ ` { } | [ ] \ " < > space, controls or non-ASCII.)
const SAFE = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&()*+,;=:@/?%') SAFE[c.charCodeAt(0)] = 1;

function resolveFast(h: string, b: FastBase): string | null {
  let end = h.indexOf('#');
  if (end < 0) end = h.length;
  if (end === 0) return null;
  const c0 = h.charCodeAt(0);
  let slashRooted = false;
  if (c0 === 0x2f) {
    // "//host" is scheme-relative; "/\" is too for special URLs.
    if (end > 1 && (h.charCodeAt(1) === 0x2f || h.charCodeAt(1) === 0x5c)) return null;
    slashRooted = true;
  } else if (c0 === 0x2e || c0 === 0x3f || c0 === 0x25) {
    // "./x", "../x", "?q" (keeps the base path), "%2e…": leave to the parser
    return null;
  }
  let inQuery = false;
  for (let i = 0; i < end; i++) {
    const c = h.charCodeAt(i);
    if (c >= 128 || SAFE[c] === 0) return null;
    if (inQuery) continue;
    if (c === 0x3f) inQuery = true;
    // A ':' before any '/' or '?' makes a non-rooted reference a scheme ("foo:bar").
    else if (c === 0x3a && !slashRooted) return null;
    // Dot segments and their percent-encoded spellings are removed/decoded by the parser.
    else if (c === 0x2e && h.charCodeAt(i - 1) === 0x2f) return null;
    else if (c === 0x25 && h.charCodeAt(i + 1) === 0x32 && (h.charCodeAt(i + 2) | 0x20) === 0x65) return null;
    else if (c === 0x2f) slashRooted = true;
  }
  const ref = end === h.length ? h : h.slice(0, end);
  return c0 === 0x2f ? b.prefix + ref : b.dir + ref;
}

function emptyExtract(url: string, isHtml: boolean, directives: RobotsDirectives): PageExtract {
  return { charset: '', base: url, links: [], linksDropped: 0, invalidLinks: 0, ignoredLinks: 0, nofollowLinks: 0, directives, isHtml };
}

/**
 * Extracts links, directives, title and text from a response body. Never throws; a body that is
 * not HTML (by Content-Type, or by sniffing when the type is missing) yields no links but still
 * carries the X-Robots-Tag directives.
 */
export function extractPage(body: Uint8Array, opts: ExtractOptions): PageExtract {
  const now = opts.now ?? Date.now();
  const token = productToken(opts.robotsToken ?? '');
  const directives = emptyDirectives();
  try {
    if (opts.xRobotsTag !== undefined && opts.xRobotsTag.length > 0) parseXRobotsTag(opts.xRobotsTag, token, now, directives);
  } catch {
    // parseXRobotsTag does not throw on strings; guard against non-string junk from callers.
  }
  const ct = parseContentType(opts.contentType);
  const isHtml = isHtmlEssence(ct.essence) || (isUnknownEssence(ct.essence) && sniffHtml(body));
  if (!isHtml) return emptyExtract(opts.url, false, directives);

  const docUrl = tryUrl(opts.url);
  const docHref = docUrl === null ? opts.url : docUrl.href;
  // One reusable extractor: everything below is synchronous and calls no user code, so it
  // cannot be re-entered.
  const ex = (shared ??= new Extractor());
  try {
    const cs = determineCharset(body, ct.charset, ct.essence === 'application/xhtml+xml');
    const html = decodeBody(body, cs);
    ex.reset();
    ex.token = token;
    ex.now = now;
    ex.followNofollow = opts.followNofollowLinks === true;
    ex.includeResources = opts.includeResources === true;
    ex.maxLinks = opts.maxLinks !== undefined && opts.maxLinks >= 0 ? opts.maxLinks : 2000;
    // A fingerprint needs the text collected; as strings only when the text itself is asked for.
    ex.wantText = opts.wantText === true || opts.wantFingerprint === true;
    ex.wantFp = opts.wantFingerprint === true;
    ex.fpLater = opts.fingerprintLater === true;
    ex.fpPieces = undefined;
    ex.pieceMode = ex.wantFp && opts.wantText !== true;
    ex.maxText = opts.maxTextChars !== undefined && opts.maxTextChars >= 0 ? opts.maxTextChars : 200_000;
    ex.pageNofollowKnown = directives.nofollow;
    ex.directives = directives;
    ex.wantSignals = opts.wantRenderSignals === true;
    ex.media = opts.media ?? 0;
    try {
      ex.run(html);
    } catch {
      // htmlparser2's tokenizer does not throw on any input we know of; if it ever does, keep
      // what was extracted up to that point rather than fail the page.
    }

    // Document base URL (§4.2.3 "set the frozen base URL"): the first <base href> parsed against
    // the document URL; on failure, the document URL.
    let base = docHref;
    if (ex.baseHref !== null) {
      const b = tryUrl(ex.baseHref, docUrl === null ? undefined : docHref);
      if (b !== null) base = b.href;
    }
    const baseArg = docUrl === null && ex.baseHref === null ? undefined : base;
    const selfUrl = stripFragment(docHref);
    const fast = fastBase(baseArg);

    const out: PageExtract = {
      charset: cs.encoding,
      base,
      links: [],
      linksDropped: ex.linksDropped,
      invalidLinks: 0,
      ignoredLinks: 0,
      nofollowLinks: ex.nofollowLinks,
      directives,
      isHtml: true,
    };
    if (ex.title !== null) out.title = ex.title;
    if (opts.wantText === true) out.text = ex.text();
    if (ex.wantSignals) {
      out.renderSignals = {
        textChars: ex.textChars,
        scripts: ex.scripts,
        appRootTextChars: ex.appRootTextChars,
        noscriptText: collapse(ex.noscriptParts.join(' ')).trim().slice(0, NOSCRIPT_MAX),
      };
      if (ex.appRoot !== null) out.renderSignals.appRoot = ex.appRoot;
    }
    const fpPieces = ex.fpPieces as Int32Array | undefined; // set by run()
    if (fpPieces !== undefined) {
      out.fingerprintJob = { text: html, pieces: fpPieces, count: fpPieces.length >> 1 };
      ex.fpPieces = undefined;
    } else if (ex.wantFp) out.fingerprint = ex.fp;

    // canonical and refresh are recorded even under page-level nofollow: they say what this page
    // is / where it goes, not which links to follow. Only http(s) targets count.
    if (ex.canonicalHref !== null) {
      const u = tryUrl(ex.canonicalHref, baseArg);
      if (u !== null && (u.protocol === 'http:' || u.protocol === 'https:')) out.canonical = stripFragment(u.href);
    }
    if (ex.refresh !== null) {
      const u = tryUrl(ex.refresh.url, baseArg);
      if (u !== null && (u.protocol === 'http:' || u.protocol === 'https:')) {
        out.metaRefresh = stripFragment(u.href);
        out.metaRefreshDelay = ex.refresh.delay;
      }
    }

    const seen = new Set<string>();
    const hrefs = ex.hrefs;
    // Page-level nofollow (X-Robots-Tag, or a meta robots found after some links): follow nothing.
    const pageNofollow = directives.nofollow;
    for (let i = 0; pageNofollow === false && i < hrefs.length; i++) {
      const h = hrefs[i];
      if (nonHttpScheme(h)) {
        out.ignoredLinks++;
        continue;
      }
      let url = fast === null ? null : resolveFast(h, fast);
      if (url === null) {
        const u = tryUrl(h, baseArg);
        if (u === null) {
          out.invalidLinks++;
          continue;
        }
        const p = u.protocol;
        if (p !== 'http:' && p !== 'https:') {
          out.ignoredLinks++;
          continue;
        }
        url = stripFragment(u.href);
      }
      // A link back to this very page adds nothing; duplicates after resolution are merged.
      if (url === selfUrl || seen.has(url)) continue;
      seen.add(url);
      const rel = ex.rels[i];
      const link: ExtractedLink = rel === null ? { url, tag: KIND_TAG[ex.kinds[i]], nofollow: ex.nofollowFlags[i] } : { url, tag: KIND_TAG[ex.kinds[i]], nofollow: ex.nofollowFlags[i], rel };
      if (ex.media !== 0) {
        // A link to a PDF is one (--media pdf), found by its extension.
        const bit = ex.linkMedia[i] || ((ex.media & M_PDF) !== 0 && mediaBitOfPath(url) === M_PDF ? M_PDF : 0);
        if (bit !== 0) link.media = kindOfBit(bit);
      }
      out.links.push(link);
    }
    if (pageNofollow) {
      out.linksDropped = 0;
      out.nofollowLinks = 0;
    }

    // HTTP Link: <…>; rel="canonical" (RFC 8288) when the document has no <link rel=canonical>.
    if (out.canonical === undefined && opts.linkHeader !== undefined && opts.linkHeader.length > 0) {
      for (const l of parseLinkHeader(opts.linkHeader)) {
        if (!l.rels.includes('canonical')) continue;
        // RFC 8288 §3.1: resolved against the context (the response URL), not <base>.
        const u = tryUrl(l.target, docUrl === null ? undefined : docHref);
        if (u !== null && (u.protocol === 'http:' || u.protocol === 'https:')) {
          out.canonical = stripFragment(u.href);
          if (!pageNofollow && out.canonical !== selfUrl && !seen.has(out.canonical) && out.links.length < ex.maxLinks) {
            out.links.push({ url: out.canonical, tag: 'canonical', nofollow: false, rel: 'canonical' });
          }
        }
        break;
      }
    }
    return out;
  } catch {
    return emptyExtract(opts.url, true, directives);
  }
}
