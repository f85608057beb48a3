// A small, independent RFC 9309 matcher used only as the synthetic web's
// *oracle*: it decides which URLs a correct crawler may fetch, so coverage
// tests can compare against it. It is deliberately separate from src/robots
// (a second implementation catches bugs a shared one would hide). It favours
// clarity over speed; it is not on any hot path.

/** RFC 9309 §2.5: parse at least the first 500 KiB. */
const MAX_BYTES = 500 * 1024;

interface Rule {
  allow: boolean;
  /** Percent-normalised pattern (§2.2.2), `*` and a trailing `$` kept. */
  pattern: string;
}

interface Group {
  agents: string[];
  rules: Rule[];
}

export interface RobotsDecision {
  allowed: boolean;
  /** The rule that decided, or null when no rule matched (allowed by default). */
  rule: { allow: boolean; pattern: string } | null;
}

const HEX = '0123456789ABCDEF';

function isUnreserved(c: number): boolean {
  // RFC 3986 §2.3: ALPHA / DIGIT / "-" / "." / "_" / "~"
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) ||
    c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e;
}

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/**
 * RFC 9309 §2.2.2: percent-encoded unreserved octets are decoded, other
 * escapes get upper-case hex, and octets outside ASCII are percent-encoded
 * (as UTF-8), so pattern and path compare octet by octet.
 */
export function percentNormalize(s: string): string {
  let out = '';
  const bytes = Buffer.from(s, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0x25 && i + 2 < bytes.length) {
      const h = hexVal(bytes[i + 1]);
      const l = hexVal(bytes[i + 2]);
      if (h >= 0 && l >= 0) {
        const v = h * 16 + l;
        out += isUnreserved(v) ? String.fromCharCode(v) : '%' + HEX[h] + HEX[l];
        i += 2;
        continue;
      }
    }
    if (b >= 0x80) out += '%' + HEX[b >> 4] + HEX[b & 15];
    else out += String.fromCharCode(b);
  }
  return out;
}

/** Leading product-token characters of a user-agent value (RFC 9309 §2.2.1: letters, `_`, `-`). */
function productToken(value: string): string {
  let end = 0;
  while (end < value.length) {
    const c = value.charCodeAt(end);
    const ok = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x2d;
    if (!ok) break;
    end++;
  }
  return value.slice(0, end).toLowerCase();
}

/**
 * Whether `pattern` (with `*` wildcards and an optional trailing `$`) matches
 * `path` from its start. Greedy leftmost matching of the literal pieces is
 * exact for `*`-only globs and never backtracks.
 */
export function patternMatches(pattern: string, path: string): boolean {
  let anchored = false;
  if (pattern.endsWith('$')) {
    anchored = true;
    pattern = pattern.slice(0, -1);
  }
  const pieces = pattern.split('*');
  const first = pieces[0];
  if (!path.startsWith(first)) return false;
  if (pieces.length === 1) return anchored ? path.length === first.length : true;
  let pos = first.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const at = path.indexOf(pieces[i], pos);
    if (at < 0) return false;
    pos = at + pieces[i].length;
  }
  const last = pieces[pieces.length - 1];
  if (anchored) return path.length - last.length >= pos && path.endsWith(last);
  return path.indexOf(last, pos) >= 0;
}

export class RobotsOracle {
  readonly sitemaps: string[] = [];
  private readonly groups: Group[] = [];

  private constructor() {}

  /** Parses a robots.txt body; lines that do not parse are skipped (§2.2). */
  static parse(body: string | Buffer): RobotsOracle {
    const r = new RobotsOracle();
    let buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    if (buf.length > MAX_BYTES) buf = buf.subarray(0, MAX_BYTES);
    let text = buf.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let current: Group | null = null;
    let lastWasAgent = false;
    for (const raw of text.split(/\r\n|\r|\n/)) {
      const hash = raw.indexOf('#');
      const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
      if (line === '') continue;
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const key = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (key === 'user-agent') {
        // §2.1: consecutive user-agent lines share the rules that follow.
        if (current === null || !lastWasAgent) {
          current = { agents: [], rules: [] };
          r.groups.push(current);
        }
        current.agents.push(value === '*' ? '*' : productToken(value));
        lastWasAgent = true;
      } else if (key === 'allow' || key === 'disallow') {
        lastWasAgent = false;
        if (current === null) continue; // rules before any group apply to nobody
        current.rules.push({ allow: key === 'allow', pattern: percentNormalize(value) });
      } else if (key === 'sitemap') {
        if (value) r.sitemaps.push(value);
      } else {
        lastWasAgent = false;
      }
    }
    return r;
  }

  /** Rules that apply to `token`: all its groups merged, else all `*` groups merged (§2.2.1). */
  private rulesFor(token: string): Rule[] {
    const t = token.toLowerCase();
    const mine: Rule[] = [];
    const star: Rule[] = [];
    let named = false;
    for (const g of this.groups) {
      if (g.agents.includes(t)) {
        named = true;
        mine.push(...g.rules);
      } else if (g.agents.includes('*')) {
        star.push(...g.rules);
      }
    }
    return named ? mine : star;
  }

  /**
   * Decision for a path (path + query of the URL, as sent on the wire).
   * §2.2.2: the most specific match wins, measured in octets of the
   * (normalised) pattern; on a tie `allow` wins; an empty pattern matches
   * nothing. §2.2.2 also: /robots.txt is always allowed.
   */
  decide(pathAndQuery: string, token: string): RobotsDecision {
    if (pathAndQuery === '/robots.txt') return { allowed: true, rule: null };
    const path = percentNormalize(pathAndQuery);
    let best: Rule | null = null;
    for (const rule of this.rulesFor(token)) {
      if (rule.pattern === '') continue;
      if (!patternMatches(rule.pattern, path)) continue;
      if (best === null || rule.pattern.length > best.pattern.length ||
          (rule.pattern.length === best.pattern.length && rule.allow && !best.allow)) {
        best = rule;
      }
    }
    return { allowed: best === null || best.allow, rule: best && { allow: best.allow, pattern: best.pattern } };
  }

  isAllowed(pathAndQuery: string, token: string): boolean {
    return this.decide(pathAndQuery, token).allowed;
  }
}
