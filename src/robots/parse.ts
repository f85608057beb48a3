// robots.txt parsing and matching, RFC 9309. Pure and synchronous: fetching,
// status handling (§2.3.1) and caching (§2.4) live at the edges.
//
// How the text maps to behaviour, with the section each rule comes from, is
// written up in docs/standards.md (robots part); comments here say why briefly.

import { compilePattern, RuleSet, type RankedPattern } from './match.js';
import { normalizeOctets, pathAndQuery } from './normalize.js';
import { DEFAULT_ROBOTS } from '../config.js';

/** §2.5: the parsing limit MUST be at least 500 KiB. */
export const DEFAULT_MAX_BYTES = DEFAULT_ROBOTS.maxBytes;

export interface RobotsParseOptions {
  /**
   * Bytes of the body to parse (default 500 KiB, the §2.5 minimum). Beyond it
   * parsing stops at the last complete line and `truncated` is set. Values
   * below 500 KiB are accepted (tests, tight budgets) but are below what §2.5
   * requires of a crawler.
   */
  maxBytes?: number;
}

export interface RobotsRuleRef {
  kind: 'allow' | 'disallow';
  /** The pattern as written in the file (comment and surrounding blanks removed). */
  pattern: string;
  /** 1-based line number in the file (0 for the synthetic rule of `disallowAll()`). */
  line: number;
}

export interface RobotsExplanation {
  allowed: boolean;
  /** The rule that decided, or null when no rule matched (allowed). */
  rule: RobotsRuleRef | null;
  /**
   * Which group decided: the product token (lower-case) when groups naming it
   * exist, `*` when the `*` groups apply, `(none)` when no group applies, and
   * `(robots.txt)` for the always-allowed /robots.txt itself.
   */
  group: string;
}

/** Plain-data form of a parsed file, for caching (see `toJSON`). */
export interface RobotsTxtJSON {
  v: 1;
  groups: Array<{
    /** Lower-case product tokens, `*` for the global group. */
    agents: string[];
    /** [allow?1:0, normalised pattern, line, pattern as written (only when it differs)]. */
    rules: Array<[0 | 1, string, number] | [0 | 1, string, number, string]>;
    crawlDelay?: number;
  }>;
  sitemaps: string[];
  bytesParsed: number;
  truncated: boolean;
  invalidLines: number;
}

interface Rule extends RankedPattern {
  readonly norm: string;
  readonly display: string;
}

interface Group {
  agents: string[];
  rules: Rule[];
  crawlDelay: number | undefined;
  /** An allow/disallow line has been seen: the next user-agent line starts a new group. */
  closed: boolean;
}

interface Resolution {
  label: string;
  /** Merged rules of the chosen groups, ranked per §2.2.2. */
  rules: RuleSet<Rule>;
  crawlDelay: number | undefined;
}

const NO_GROUP: Resolution = { label: '(none)', rules: new RuleSet<Rule>([]), crawlDelay: undefined };
/** Tokens resolved per object; a crawler uses one or two, so this only guards against misuse. */
const MAX_CACHED_TOKENS = 64;

/**
 * The product token of a user-agent string (§2.2.1): its leading run of
 * `[a-zA-Z_-]`, e.g. `ubicrawl/0.1 (+https://x)` → `ubicrawl`. Leading blanks
 * are skipped. Returns '' when the string does not start with a token.
 * Matching against user-agent lines is case-insensitive; this keeps the case.
 */
export function productToken(userAgent: string): string {
  if (typeof userAgent !== 'string') return '';
  let i = 0;
  const n = userAgent.length;
  while (i < n && isBlank(userAgent.charCodeAt(i))) i++;
  let j = i;
  while (j < n && isTokenChar(userAgent.charCodeAt(j))) j++;
  return userAgent.slice(i, j);
}

function isTokenChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x2d || c === 0x5f;
}

/** ASCII whitespace only: trimming U+00A0 etc. would cut UTF-8 bytes out of a byte string. */
function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0b || c === 0x0c || c === 0x0d || c === 0x0a;
}

function trimBlanks(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isBlank(s.charCodeAt(a))) a++;
  while (b > a && isBlank(s.charCodeAt(b - 1))) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

const NON_ASCII = /[\x80-\xff]/;

/** A byte string (one char per octet) back to text, for display and sitemaps. */
function bytesToText(s: string): string {
  return NON_ASCII.test(s) ? Buffer.from(s, 'latin1').toString('utf8') : s;
}

// Keys are compared whole and case-insensitively. Misspellings that Google's
// parser accepts are accepted too (§2.2.4 allows leniency), but as exact
// words, not as prefixes; see docs/standards.md (robots part).
const KEY_USER_AGENT = new Set(['user-agent', 'useragent', 'user agent']);
const KEY_ALLOW = new Set(['allow']);
const KEY_DISALLOW = new Set(['disallow', 'dissallow', 'dissalow', 'disalow', 'diasllow', 'disallaw']);
const KEY_SITEMAP = new Set(['sitemap', 'site-map']);
const KEY_CRAWL_DELAY = new Set(['crawl-delay', 'crawldelay', 'crawl delay']);

const DECIMAL = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

/** Outcome of one line: used, or skipped (counted in `invalidLines`). */
const OK = 0;
const BAD = 1;

function makeRule(allow: boolean, norm: string, display: string, line: number): Rule {
  const c = compilePattern(norm);
  // One literal with a fixed key order keeps every rule the same hidden class,
  // so the matching loop stays monomorphic.
  return { kind: c.kind, first: c.first, mids: c.mids, last: c.last, anchored: c.anchored, allow, priority: norm.length, line, norm, display };
}

/** The body as a byte string bounded by `maxBytes`, cut back to the last complete line. */
function boundedBytes(body: string | Uint8Array, maxBytes: number): { text: string; truncated: boolean } {
  let bytes: Uint8Array;
  if (typeof body === 'string') {
    // Every UTF-16 unit is at least one octet, so maxBytes+1 units cover the limit.
    const head = body.length > maxBytes + 1 ? body.slice(0, maxBytes + 1) : body;
    bytes = Buffer.from(head, 'utf8');
  } else if (body instanceof Uint8Array) {
    bytes = body;
  } else {
    return { text: '', truncated: false };
  }
  if (bytes.length <= maxBytes) {
    return { text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1'), truncated: false };
  }
  let end = maxBytes;
  const next = bytes[maxBytes];
  if (next !== 0x0a && next !== 0x0d) {
    while (end > 0 && bytes[end - 1] !== 0x0a && bytes[end - 1] !== 0x0d) end--;
  }
  return { text: Buffer.from(bytes.buffer, bytes.byteOffset, end).toString('latin1'), truncated: true };
}

export class RobotsTxt {
  /** Sitemap URLs from `Sitemap:` lines, in file order, without duplicates (§2.2.4). */
  readonly sitemaps: string[];
  /** Octets of the body that were parsed (the whole body unless truncated). */
  readonly bytesParsed: number;
  /** The body was longer than the parsing limit (§2.5); the tail was not parsed. */
  readonly truncated: boolean;
  /**
   * Lines that were skipped (§2.3.1.5): no key/value syntax, unknown records,
   * rules before any user-agent line, patterns not starting with `/` or `*`,
   * unusable Crawl-delay or Sitemap values. Blank and comment lines are not counted.
   */
  readonly invalidLines: number;

  private readonly groups: Group[];
  private readonly resolved = new Map<string, Resolution>();
  private lastAgent: string | undefined;
  private lastResolution: Resolution = NO_GROUP;

  private constructor(groups: Group[], sitemaps: string[], bytesParsed: number, truncated: boolean, invalidLines: number) {
    this.groups = groups;
    this.sitemaps = Object.freeze(sitemaps) as string[];
    this.bytesParsed = bytesParsed;
    this.truncated = truncated;
    this.invalidLines = invalidLines;
  }

  /** Parse a robots.txt body (text or raw bytes). Never throws. */
  static parse(body: string | Uint8Array, opts?: RobotsParseOptions): RobotsTxt {
    let maxBytes = opts?.maxBytes ?? DEFAULT_MAX_BYTES;
    if (!Number.isFinite(maxBytes) || maxBytes < 0) maxBytes = DEFAULT_MAX_BYTES;
    maxBytes = Math.floor(maxBytes);
    const { text, truncated } = boundedBytes(body, maxBytes);
    const p = parseText(text);
    return new RobotsTxt(p.groups, p.sitemaps, text.length, truncated, p.invalidLines);
  }

  /** No rules at all: every URL allowed (e.g. robots.txt answered 4xx, §2.3.1.3). */
  static allowAll(): RobotsTxt {
    return new RobotsTxt([], [], 0, false, 0);
  }

  /**
   * Complete disallow (robots.txt unreachable, §2.3.1.4): one `*` group with
   * `Disallow: /` at line 0, so every agent falls under it. /robots.txt itself
   * stays allowed (§2.2.2).
   */
  static disallowAll(): RobotsTxt {
    const group: Group = { agents: ['*'], rules: [makeRule(false, '/', '/', 0)], crawlDelay: undefined, closed: true };
    return new RobotsTxt([group], [], 0, false, 0);
  }

  /** Rebuild from `toJSON()` output. Returns null if `obj` is not such data. */
  static fromJSON(obj: unknown): RobotsTxt | null {
    try {
      const o = obj as RobotsTxtJSON;
      if (!o || o.v !== 1 || !Array.isArray(o.groups) || !Array.isArray(o.sitemaps)) return null;
      const groups: Group[] = [];
      for (const g of o.groups) {
        if (!g || !Array.isArray(g.agents) || !Array.isArray(g.rules)) return null;
        const agents: string[] = [];
        for (const a of g.agents) {
          if (typeof a !== 'string') return null;
          agents.push(a.toLowerCase());
        }
        const rules: Rule[] = [];
        for (const r of g.rules) {
          if (!Array.isArray(r) || typeof r[1] !== 'string' || typeof r[2] !== 'number') return null;
          if (r.length > 3 && typeof r[3] !== 'string') return null;
          // Re-normalising is idempotent and guards against hand-edited data.
          const norm = normalizeOctets(r[1], true, false);
          if (norm.length === 0) return null;
          rules.push(makeRule(r[0] === 1, norm, r.length > 3 ? (r[3] as string) : r[1], r[2]));
        }
        const cd = g.crawlDelay;
        const crawlDelay = typeof cd === 'number' && Number.isFinite(cd) && cd >= 0 ? cd : undefined;
        groups.push({ agents, rules, crawlDelay, closed: true });
      }
      const sitemaps = o.sitemaps.filter((s): s is string => typeof s === 'string');
      const num = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : 0);
      return new RobotsTxt(groups, sitemaps, num(o.bytesParsed), o.truncated === true, num(o.invalidLines));
    } catch {
      return null;
    }
  }

  /**
   * Plain data (JSON-safe) holding the groups with their normalised patterns,
   * so `fromJSON` only splits patterns on `*` instead of re-reading the body.
   */
  toJSON(): RobotsTxtJSON {
    return {
      v: 1,
      groups: this.groups.map((g) => {
        const out: RobotsTxtJSON['groups'][number] = {
          agents: g.agents.slice(),
          rules: g.rules.map((r): [0 | 1, string, number] | [0 | 1, string, number, string] =>
            r.display === r.norm ? [r.allow ? 1 : 0, r.norm, r.line] : [r.allow ? 1 : 0, r.norm, r.line, r.display]),
        };
        if (g.crawlDelay !== undefined) out.crawlDelay = g.crawlDelay;
        return out;
      }),
      sitemaps: this.sitemaps.slice(),
      bytesParsed: this.bytesParsed,
      truncated: this.truncated,
      invalidLines: this.invalidLines,
    };
  }

  /**
   * May `userAgent` fetch `url`? `url` is a full URL or a path with optional
   * query; `userAgent` is a product token or a full User-Agent string (its
   * product token is used, see `productToken`).
   */
  isAllowed(url: string, userAgent: string): boolean {
    const rules = this.resolve(userAgent).rules;
    if (rules.rules.length === 0) return true;
    const path = normalizeOctets(pathAndQuery(typeof url === 'string' ? url : ''), false, false);
    if (isRobotsTxt(path)) return true;
    const r = rules.find(path);
    return r === null || r.allow;
  }

  /** Like `isAllowed`, and says which rule (with its line) and which group decided. */
  explain(url: string, userAgent: string): RobotsExplanation {
    const res = this.resolve(userAgent);
    const path = normalizeOctets(pathAndQuery(typeof url === 'string' ? url : ''), false, false);
    if (isRobotsTxt(path)) return { allowed: true, rule: null, group: '(robots.txt)' };
    const r = res.rules.find(path);
    if (r === null) return { allowed: true, rule: null, group: res.label };
    return { allowed: r.allow, rule: { kind: r.allow ? 'allow' : 'disallow', pattern: r.display, line: r.line }, group: res.label };
  }

  /**
   * Crawl-delay in seconds for the groups that apply to `userAgent`, or
   * undefined. Non-standard (not in RFC 9309); when several merged groups give
   * one, the largest wins. The caller caps it.
   */
  crawlDelay(userAgent: string): number | undefined {
    return this.resolve(userAgent).crawlDelay;
  }

  /** Groups that apply to a user agent, merged (§2.2.1); cached per product token. */
  private resolve(userAgent: string): Resolution {
    if (userAgent === this.lastAgent) return this.lastResolution;
    const token = productToken(userAgent).toLowerCase();
    let res = this.resolved.get(token);
    if (res === undefined) {
      res = this.build(token);
      if (this.resolved.size >= MAX_CACHED_TOKENS) this.resolved.clear();
      this.resolved.set(token, res);
    }
    this.lastAgent = userAgent;
    this.lastResolution = res;
    return res;
  }

  private build(token: string): Resolution {
    if (this.groups.length === 0) return NO_GROUP;
    let chosen = token === '' ? [] : this.groups.filter((g) => g.agents.includes(token));
    let label = token;
    if (chosen.length === 0) {
      // §2.2.1: only when no group names the token does the `*` group apply.
      chosen = this.groups.filter((g) => g.agents.includes('*'));
      label = '*';
    }
    if (chosen.length === 0) return NO_GROUP;
    const rules: Rule[] = [];
    let crawlDelay: number | undefined;
    for (const g of chosen) {
      for (const r of g.rules) rules.push(r);
      if (g.crawlDelay !== undefined && (crawlDelay === undefined || g.crawlDelay > crawlDelay)) crawlDelay = g.crawlDelay;
    }
    return { label, rules: new RuleSet(rules), crawlDelay };
  }
}

/** §2.2.2: "The /robots.txt URI is implicitly allowed." (query ignored) */
function isRobotsTxt(path: string): boolean {
  return path.startsWith('/robots.txt') && (path.length === 11 || path.charCodeAt(11) === 0x3f);
}

interface Parsed {
  groups: Group[];
  sitemaps: string[];
  invalidLines: number;
}

/** Parse a byte string (one char per octet) into groups and sitemaps. */
function parseText(text: string): Parsed {
  const groups: Group[] = [];
  const sitemaps: string[] = [];
  const seenSitemaps = new Set<string>();
  let current: Group | null = null;
  let invalid = 0;

  const n = text.length;
  let i = 0;
  // Skip a UTF-8 BOM, or the leading part of one, as Google's parser does.
  if (i < n && text.charCodeAt(i) === 0xef) {
    i++;
    if (i < n && text.charCodeAt(i) === 0xbb) {
      i++;
      if (i < n && text.charCodeAt(i) === 0xbf) i++;
    }
  }

  let lineNo = 0;
  while (i < n) {
    // §2.2 NL = CR / LF / CRLF.
    let j = i;
    while (j < n) {
      const c = text.charCodeAt(j);
      if (c === 0x0a || c === 0x0d) break;
      j++;
    }
    lineNo++;
    if (j > i) {
      const outcome = handleLine(text.slice(i, j), lineNo);
      if (outcome !== OK) invalid++;
    }
    if (j >= n) break;
    i = text.charCodeAt(j) === 0x0d && j + 1 < n && text.charCodeAt(j + 1) === 0x0a ? j + 2 : j + 1;
  }

  return { groups, sitemaps, invalidLines: invalid };

  function handleLine(raw: string, line: number): number {
    // A "#" starts a comment anywhere on the line (§2.2, §2.2.3).
    const hash = raw.indexOf('#');
    const body = trimBlanks(hash >= 0 ? raw.slice(0, hash) : raw);
    if (body.length === 0) return OK;

    let key: string;
    let value: string;
    const colon = body.indexOf(':');
    if (colon >= 0) {
      key = trimBlanks(body.slice(0, colon));
      value = trimBlanks(body.slice(colon + 1));
    } else {
      // Missing colon: accept "key value" when there are exactly two words
      // (as Google's parser does, e.g. "Disallow /").
      let w = 0;
      while (w < body.length && !isBlank(body.charCodeAt(w))) w++;
      if (w === body.length) return BAD;
      value = trimBlanks(body.slice(w));
      for (let k = 0; k < value.length; k++) if (isBlank(value.charCodeAt(k))) return BAD;
      key = body.slice(0, w);
    }
    if (key.length === 0) return BAD;
    key = key.toLowerCase();

    if (KEY_USER_AGENT.has(key)) {
      // §2.1: consecutive user-agent lines (blank lines and other records
      // between them included) form one group; a rule line closes the list.
      if (current === null || current.closed) {
        current = { agents: [], rules: [], crawlDelay: undefined, closed: false };
        groups.push(current);
      }
      // "*" alone, or followed by blanks and anything, is the global agent
      // (Google's reading); otherwise the leading [a-zA-Z_-]+ is the token.
      if (value.charCodeAt(0) === 0x2a && (value.length === 1 || isBlank(value.charCodeAt(1)))) {
        if (!current.agents.includes('*')) current.agents.push('*');
      } else {
        const tok = productToken(value).toLowerCase();
        if (tok.length === 0) return BAD; // still a group boundary; names no one
        if (!current.agents.includes(tok)) current.agents.push(tok);
      }
      return OK;
    }

    const allow = KEY_ALLOW.has(key);
    if (allow || KEY_DISALLOW.has(key)) {
      // §2.2.2: rules outside any group are ignored.
      if (current === null) return BAD;
      current.closed = true;
      if (value.length === 0) return OK; // §2.2.2 empty-pattern: matches nothing
      const c0 = value.charCodeAt(0);
      // §2.2 path-pattern starts with "/"; a leading "*" is accepted too
      // (§5.1 uses "*.gif$"). Anything else could never match a path.
      if (c0 !== 0x2f && c0 !== 0x2a) return BAD;
      current.rules.push(makeRule(allow, normalizeOctets(value, true, true), bytesToText(value), line));
      return OK;
    }

    if (KEY_SITEMAP.has(key)) {
      // §2.2.4: other records are global and do not end a group.
      if (value.length === 0) return BAD;
      const url = bytesToText(value);
      if (!seenSitemaps.has(url)) {
        seenSitemaps.add(url);
        sitemaps.push(url);
      }
      return OK;
    }

    if (KEY_CRAWL_DELAY.has(key)) {
      if (current === null || !DECIMAL.test(value)) return BAD;
      const d = Number(value);
      if (!Number.isFinite(d)) return BAD;
      // Not a rule: does not close the user-agent list (§2.2.4).
      if (current.crawlDelay === undefined || d > current.crawlDelay) current.crawlDelay = d;
      return OK;
    }

    return BAD; // unknown record (§2.2.4 lets us ignore it)
  }
}
