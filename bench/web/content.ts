// Page bodies of the synthetic web: realistic HTML with paragraphs of
// pseudo-text. A page is assembled from a pool of pre-generated sentences
// (built once per seed), so rendering a 20 KB page is a few array pushes, one
// join and one UTF-8 encode: cheap enough that the server is never the
// bottleneck of a crawl benchmark even without the body cache.
import { hash4, Rng } from './prng.js';
import type { Link, WebGraph } from './graph.js';

const SALT_TEXT = 0x7e47;
const SALT_HOST = 0x6057;
const SALT_VERSION = 0x5e75;
const SALT_ALT = 0xa17;

const SYLLABLES = [
  'ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'te', 'vo', 'zi', 'pa', 'do', 'gu', 'shi', 'an', 'el', 'or', 'un', 'ba',
  'che', 'fi', 'ra', 'mo', 'ti', 'qua', 'ven', 'lor', 'dri', 'sel', 'tor', 'mar', 'is', 'en', 'ul', 'ber', 'gal',
  'nor', 'pi', 'ste', 'wa', 'yo', 'xe', 'jun', 'kri', 'lam', 'ost',
];
// A few non-ASCII syllables keep UTF-8 handling honest.
const ACCENTED = ['é', 'ü', 'ñ', 'ø', 'å'];

const WORDS = 2048;
const SENTENCES = 8192;
/**
 * Pages are made of whole pooled paragraphs: one copy per paragraph instead
 * of one per sentence keeps rendering at a few µs per page. Two random pages
 * share on average (paragraphs per page)² / PARAGRAPHS ≈ 0.5 paragraphs of
 * ~50, so distinct pages stay far apart for SimHash.
 */
const PARAGRAPHS = 4096;

/** Words and sentences shared by all pages of one seed. */
export class TextPool {
  readonly words: string[] = [];
  readonly sentences: string[] = [];
  /** `<p>` and 2–6 sentences, UTF-8. */
  readonly paragraphs: Buffer[] = [];

  constructor(seed: number) {
    const rng = new Rng(hash4(seed, 0x7001, 0, 0));
    const seen = new Set<string>();
    while (this.words.length < WORDS) {
      const n = 1 + rng.int(4);
      let w = '';
      for (let j = 0; j < n; j++) w += SYLLABLES[rng.int(SYLLABLES.length)];
      if (rng.next() < 0.03) w += ACCENTED[rng.int(ACCENTED.length)];
      if (seen.has(w)) continue;
      seen.add(w);
      this.words.push(w);
    }
    for (let s = 0; s < SENTENCES; s++) {
      const n = 6 + rng.int(13);
      const parts: string[] = [];
      for (let j = 0; j < n; j++) parts.push(this.words[rng.int(WORDS)]);
      parts[0] = parts[0][0].toUpperCase() + parts[0].slice(1);
      if (n > 9 && rng.next() < 0.5) parts[4] += ',';
      this.sentences.push(parts.join(' ') + (rng.next() < 0.1 ? '? ' : '. '));
    }
    for (let p = 0; p < PARAGRAPHS; p++) {
      const n = 2 + rng.int(5);
      let text = '<p>';
      for (let j = 0; j < n; j++) text += this.sentences[rng.int(SENTENCES)];
      this.paragraphs.push(Buffer.from(text, 'utf8'));
    }
  }

  phrase(rng: Rng, n: number, capital = false): string {
    const parts: string[] = [];
    for (let j = 0; j < n; j++) parts.push(this.words[rng.int(WORDS)]);
    if (capital) parts[0] = parts[0][0].toUpperCase() + parts[0].slice(1);
    return parts.join(' ');
  }
}

/** Collects byte chunks and strings, then copies them into one exact-size Buffer. */
class BodyWriter {
  private readonly parts: (Buffer | string)[] = [];
  private len = 0;
  reset(): void {
    this.parts.length = 0;
    this.len = 0;
  }
  buf(b: Buffer): void {
    this.parts.push(b);
    this.len += b.length;
  }
  str(s: string): void {
    this.parts.push(s);
    this.len += Buffer.byteLength(s, 'utf8');
  }
  /** Bytes collected so far. */
  get size(): number {
    return this.len;
  }
  /** Copies the chunks into `alloc(size)` (default: a fresh buffer) and returns exactly the written bytes. */
  finish(alloc?: (size: number) => Buffer): Buffer {
    const full = alloc ? alloc(this.len) : Buffer.allocUnsafe(this.len);
    const out = full.length === this.len ? full : full.subarray(0, this.len);
    let o = 0;
    for (const p of this.parts) {
      if (typeof p === 'string') o += out.write(p, o, 'utf8');
      else {
        out.set(p, o);
        o += p.length;
      }
    }
    this.reset();
    return out;
  }
}

const B = (s: string): Buffer => Buffer.from(s, 'utf8');
const HEAD_1 = B('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>');
const HEAD_2 = B('</title>\n<style>body{font-family:sans-serif;max-width:42em;margin:auto}.ad{color:#888}</style>\n</head>\n' +
  '<body>\n<header><nav><a href="/">');
const HEAD_3 = B('</a></nav></header>\n<main>\n<article>\n<h1>');
const ALT_1 = B('<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width">\n<title>');
const ALT_2 = B('</title>\n<style>.print{font:12pt serif}.promo{border:1px solid #ccc;padding:4px}</style>\n<!-- print view ');
const ALT_3 = B(' -->\n</head>\n<body class="print">\n<div id="top"><nav class="m"><a href="/">');
const ALT_4 = B('</a></nav></div>\n<div class="content">\n<h1>');
const H1_END = B('</h1>\n');
const P_CLOSE = B('</p>\n');
const TAIL_1 = B('</article>\n</main>\n<aside class="ad">Sponsored: ');
const TAIL_2 = B('</aside>\n<footer>&copy; 2024 ');
const ALT_TAIL_1 = B('</div>\n<div class="promo">Sponsored: ');
const ALT_TAIL_2 = B('</div>\n<footer>&copy; 2024 ');
const FOOT_1 = B(' &middot; served by node-');
const FOOT_2 = B('</footer>\n</body>\n</html>\n');

export class Renderer {
  readonly pool: TextPool;
  private readonly graph: WebGraph;
  private readonly siteNames: (string | undefined)[] = [];
  private readonly ads: (Buffer | undefined)[] = [];
  private readonly w = new BodyWriter();

  constructor(graph: WebGraph) {
    this.graph = graph;
    this.pool = new TextPool(graph.cfg.seed);
  }

  siteName(i: number): string {
    let s = this.siteNames[i];
    if (s === undefined) {
      s = this.pool.phrase(new Rng(hash4(this.graph.cfg.seed, i, 0, SALT_HOST)), 2, true);
      this.siteNames[i] = s;
    }
    return s;
  }

  private ad(i: number): Buffer {
    let a = this.ads[i];
    if (a === undefined) {
      a = Buffer.from(this.pool.phrase(new Rng(hash4(this.graph.cfg.seed, i, 1, SALT_HOST)), 3), 'utf8');
      this.ads[i] = a;
    }
    return a;
  }

  /** href of a link as written on a page of host `from`, variant applied. */
  href(from: number, l: Link): string {
    const g = this.graph;
    const path = g.pagePath(l.host, l.page);
    const name = g.hostName(l.host);
    const abs = l.host !== from || (l.anchor & 7) === 0;
    const prefix = abs ? g.origin(l.host) : '';
    switch (l.variant) {
      case null:
        return prefix + path;
      case 'defaultPort':
        if (g.port === 80) return `http://${name}:80${path}`;
        return `HTTP://${name.toUpperCase()}${g.portSuffix}${path}`;
      case 'case':
        return `HTTP://${name.toUpperCase()}${g.portSuffix}${path}`;
      case 'dot': {
        const slash = path.lastIndexOf('/');
        return prefix + path.slice(0, slash) + '/.' + path.slice(slash);
      }
      case 'pct':
        // '/p/5' -> '/%70/5', '/s2/p/5' -> '/%732/p/5': the first path character, escaped.
        if (path.length > 1) return prefix + '/%' + path.charCodeAt(1).toString(16) + path.slice(2);
        return prefix + path + '#top';
      case 'fragment':
        return prefix + path + '#s' + (l.anchor % 9);
      case 'tracking':
        return prefix + path + '?utm_source=feed&amp;utm_medium=web';
    }
  }

  /**
   * Body of an HTML page of host i showing the article of page `src` (k
   * itself, or the page a duplicate copies). `alt` selects the near-duplicate
   * boilerplate, seeded by `altSeed` (the duplicate's own page number).
   * Version v > 0 rewrites paragraph v mod 3 and adds a revision line; the
   * links never change. `alloc` may supply a recycled buffer of at least
   * the given size (the result is then a view of it).
   */
  renderArticle(i: number, src: number, version: number, alt: boolean, altSeed: number, alloc?: (size: number) => Buffer): Buffer {
    const g = this.graph;
    const w = this.w;
    const links = g.links(i, src);
    const traps = g.rootTrapLinks(i, src);
    const rng = new Rng(hash4(g.cfg.seed, i, src, SALT_TEXT));
    const title = src === 0 ? `Welcome to ${this.siteName(i)}` : this.pool.phrase(rng, 3 + rng.int(4), true);
    const target = g.cfg.pageMin + rng.int(g.cfg.pageMax - g.cfg.pageMin + 1);
    const site = this.siteName(i);
    if (!alt) {
      w.buf(HEAD_1); w.str(title); w.buf(HEAD_2); w.str(site); w.buf(HEAD_3); w.str(title); w.buf(H1_END);
    } else {
      w.buf(ALT_1); w.str(title); w.buf(ALT_2); w.str(String(altSeed)); w.buf(ALT_3); w.str(site); w.buf(ALT_4);
      w.str(title); w.buf(H1_END);
    }
    if (version > 0) w.str(`<p class="rev">Revision ${version}.</p>\n`);
    // The article fills the page up to its target size, less the tail and links.
    const budget = target - 260 - (links.length + traps.length) * 90;
    const vr = version > 0 ? new Rng(hash4(g.cfg.seed, i, src, SALT_VERSION ^ version)) : null;
    const changed = version % 3;
    const paragraphs = this.pool.paragraphs;
    const nl = links.length;
    let li = 0;
    let para = 0;
    const start = w.size;
    let done = false;
    while (!done) {
      const p = rng.int(PARAGRAPHS);
      w.buf(paragraphs[vr !== null && para === changed ? vr.int(PARAGRAPHS) : p]);
      const written = w.size - start;
      done = written >= budget;
      // Links are spread evenly over the article, in order.
      while (li < nl && (done || ((li + 1) * budget) / (nl + 1) <= written)) {
        const l = links[li++];
        const anchorRng = new Rng(l.anchor);
        w.str('See <a href="' + this.href(i, l) + (l.nofollow ? '" rel="nofollow">' : '">') +
          this.pool.phrase(anchorRng, 2 + anchorRng.int(2)) + '</a>. ');
      }
      w.buf(P_CLOSE);
      para++;
    }
    if (traps.length) {
      w.str('<ul class="more">\n');
      for (const t of traps) w.str(`<li><a href="${t}">${t}</a></li>\n`);
      w.str('</ul>\n');
    }
    if (!alt) {
      w.buf(TAIL_1); w.buf(this.ad(i)); w.buf(TAIL_2); w.str(site); w.buf(FOOT_1); w.str(String(i % 7)); w.buf(FOOT_2);
    } else {
      w.buf(ALT_TAIL_1);
      const changed = g.cfg.nearDupChangedWords;
      if (changed === 0) w.buf(this.ad(i));
      else {
        // The host's ad with its last words swapped: `changed` visible words differ.
        const words = this.ad(i).toString('utf8').split(' ');
        const altRng = new Rng(hash4(g.cfg.seed, i, altSeed, SALT_ALT));
        const extra = this.pool.phrase(altRng, changed).split(' ');
        w.str([...words.slice(0, Math.max(0, words.length - changed)), ...extra].join(' '));
      }
      w.buf(ALT_TAIL_2); w.str(site); w.buf(FOOT_1); w.str(String(i % 7)); w.buf(FOOT_2);
    }
    return w.finish(alloc);
  }

  /** Small HTML body for error answers (no links). */
  static errorBody(status: number, text: string): Buffer {
    return Buffer.from(`<!DOCTYPE html>\n<html><head><title>${status} ${text}</title></head>` +
      `<body><h1>${status} ${text}</h1></body></html>\n`, 'utf8');
  }
}
