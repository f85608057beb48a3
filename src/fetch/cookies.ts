// A cookie jar per host (`--cookies`, docs/requests.md "Cookies"): RFC 6265 §5
// parsing, storage and retrieval, kept in memory.
//
// Scope is host-only: a cookie is sent back only to the host that set it,
// whatever its Domain attribute says. A mesh keeps each host on one agent
// (docs/mesh.md), so a per-host jar gives the same answer whichever agent
// fetches; sharing a Domain cookie between hosts would need state across agents.
// The Domain attribute is still checked: a cookie whose Domain the host does
// not domain-match, or that names a public suffix, is ignored (§5.3 steps 5–6).
import { getPublicSuffix } from 'tldts';
import { DEFAULT_COOKIE_LIMITS } from '../config.js';
import { unbracketHost } from '../url/host.js';

export interface Cookie {
  name: string;
  value: string;
  /** Path attribute, or the default-path of the request (§5.1.4). */
  path: string;
  /** Epoch ms after which the cookie is gone; Infinity for a session cookie (§5.3 step 3). */
  expires: number;
  secure: boolean;
  httpOnly: boolean;
  created: number;
  lastAccess: number;
}

/** A Set-Cookie field as §5.2 reads it, before the storage model applies. */
export interface SetCookie {
  name: string;
  value: string;
  /** Lower case, leading dot removed; undefined without a Domain attribute. */
  domain?: string;
  path?: string;
  /** Max-Age in seconds (wins over Expires, §5.3 step 3). */
  maxAge?: number;
  /** Expires as epoch ms. */
  expires?: number;
  secure: boolean;
  httpOnly: boolean;
}

export interface CookieJarLimits {
  /** Cookies kept per host; the least recently used goes first (RFC 6265 §6.1 asks for at least 50). */
  maxPerHost: number;
  /** Bytes of name plus value of one cookie (§6.1: at least 4096). */
  maxCookieBytes: number;
  /** Hosts with a jar; the least recently used host's jar goes first. */
  maxHosts: number;
}

export { DEFAULT_COOKIE_LIMITS };

// ---------------------------------------------------------------- §5.1.1 dates

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
// Delimiters: %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E.
const DATE_DELIMITER = /[\x09\x20-\x2f\x3b-\x40\x5b-\x60\x7b-\x7e]+/;

/** RFC 6265 §5.1.1 cookie-date, as epoch ms; undefined when it is not one. */
export function parseCookieDate(text: string): number | undefined {
  let time: [number, number, number] | undefined;
  let day: number | undefined;
  let month: number | undefined;
  let year: number | undefined;
  for (const token of text.split(DATE_DELIMITER)) {
    if (!token) continue;
    let m: RegExpExecArray | null;
    if (time === undefined && (m = /^(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[^\d]|$)/.exec(token))) {
      time = [Number(m[1]), Number(m[2]), Number(m[3])];
    } else if (day === undefined && (m = /^(\d{1,2})(?:[^\d]|$)/.exec(token))) {
      day = Number(m[1]);
    } else if (month === undefined && MONTHS.includes(token.slice(0, 3).toLowerCase())) {
      month = MONTHS.indexOf(token.slice(0, 3).toLowerCase());
    } else if (year === undefined && (m = /^(\d{2,4})(?:[^\d]|$)/.exec(token))) {
      year = Number(m[1]);
    }
  }
  if (year !== undefined && year >= 70 && year <= 99) year += 1900;
  if (year !== undefined && year >= 0 && year <= 69) year += 2000;
  if (time === undefined || day === undefined || month === undefined || year === undefined) return undefined;
  if (day < 1 || day > 31 || year < 1601 || time[0] > 23 || time[1] > 59 || time[2] > 59) return undefined;
  const ms = Date.UTC(year, month, day, time[0], time[1], time[2]);
  // A day past the month's end (Feb 30) fails (§5.1.1 step 6).
  return new Date(ms).getUTCDate() === day ? ms : undefined;
}

// ---------------------------------------------------------------- §5.2 parsing

/** RFC 6265 §5.2: one Set-Cookie field value, or null when it is to be ignored. */
export function parseSetCookie(field: string): SetCookie | null {
  const semi = field.indexOf(';');
  const pair = semi < 0 ? field : field.slice(0, semi);
  const eq = pair.indexOf('=');
  if (eq < 0) return null;
  const name = pair.slice(0, eq).trim();
  const value = pair.slice(eq + 1).trim();
  if (!name) return null;
  // Control characters cannot be sent back in a Cookie field.
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(name + value)) return null;
  const out: SetCookie = { name, value, secure: false, httpOnly: false };
  if (semi < 0) return out;
  for (const av of field.slice(semi + 1).split(';')) {
    const i = av.indexOf('=');
    const key = (i < 0 ? av : av.slice(0, i)).trim().toLowerCase();
    const val = i < 0 ? '' : av.slice(i + 1).trim();
    switch (key) {
      case 'expires': {
        const t = parseCookieDate(val);
        if (t !== undefined) out.expires = t;
        break;
      }
      case 'max-age': {
        // §5.2.2: a leading '-' or digits only; anything else ignores the attribute.
        if (!/^-?\d+$/.test(val)) break;
        out.maxAge = Number(val);
        break;
      }
      case 'domain': {
        // §5.2.3: an empty value ignores the attribute; a leading dot is dropped.
        if (!val) break;
        out.domain = (val.startsWith('.') ? val.slice(1) : val).toLowerCase();
        break;
      }
      case 'path': {
        // §5.2.4: a value not starting with '/' means the default-path.
        out.path = val.startsWith('/') ? val : undefined;
        break;
      }
      case 'secure': out.secure = true; break;
      case 'httponly': out.httpOnly = true; break;
      default: break; // unknown attributes (SameSite …) are ignored
    }
  }
  return out;
}

// ---------------------------------------------------------------- §5.1.3, §5.1.4 matching

/** §5.1.3 domain-match: equal, or `host` ends with `.domain` and is a name, not an IP address. */
export function domainMatches(host: string, domain: string): boolean {
  if (host === domain) return true;
  return host.endsWith('.' + domain) && !isIpAddress(host);
}

/** §5.1.4 default-path of a request path. */
export function defaultPath(requestPath: string): string {
  if (!requestPath.startsWith('/')) return '/';
  const last = requestPath.lastIndexOf('/');
  return last === 0 ? '/' : requestPath.slice(0, last);
}

/** §5.1.4 path-match. */
export function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/';
}

function isIpAddress(host: string): boolean {
  return /^\d+\.\d+\.\d+\.\d+$/.test(host) || host.includes(':') || host.startsWith('[');
}

// ---------------------------------------------------------------- the jar

export interface CookieCounts {
  stored: number;
  /** Set-Cookie fields ignored: unparsable, too large, or a Domain the host may not set. */
  ignored: number;
  /** Cookies dropped to keep within the limits. */
  evicted: number;
}

export class CookieJar {
  /** Host → its cookies, least recently used host first (Map order). */
  private readonly hosts = new Map<string, Cookie[]>();
  readonly limits: CookieJarLimits;
  readonly counts: CookieCounts = { stored: 0, ignored: 0, evicted: 0 };

  constructor(limits: Partial<CookieJarLimits> = {}) {
    this.limits = { ...DEFAULT_COOKIE_LIMITS, ...limits };
  }

  /** Stores the Set-Cookie fields of a response to `url` (RFC 6265 §5.3, host-only). */
  store(url: URL, fields: readonly string[], now: number = Date.now()): void {
    if (fields.length === 0) return;
    const host = hostKey(url);
    let jar = this.hosts.get(host);
    for (const field of fields) {
      const sc = parseSetCookie(field);
      if (!sc || Buffer.byteLength(sc.name + sc.value) > this.limits.maxCookieBytes || !this.mayUseDomain(host, sc.domain)) {
        this.counts.ignored++;
        continue;
      }
      const expires = sc.maxAge !== undefined ? (sc.maxAge <= 0 ? -Infinity : now + sc.maxAge * 1000) : (sc.expires ?? Infinity);
      const path = sc.path ?? defaultPath(url.pathname);
      jar ??= [];
      const i = jar.findIndex((c) => c.name === sc.name && c.path === path);
      const old = i >= 0 ? jar[i] : undefined;
      if (old) jar.splice(i, 1);
      // An expiry in the past removes the cookie (§5.3 step 11: replaced, then gone).
      if (expires <= now) continue;
      jar.push({ name: sc.name, value: sc.value, path, expires, secure: sc.secure, httpOnly: sc.httpOnly, created: old?.created ?? now, lastAccess: now });
      this.counts.stored++;
    }
    if (!jar) return;
    this.trim(jar, now);
    this.hosts.delete(host);
    if (jar.length) this.hosts.set(host, jar);
    while (this.hosts.size > this.limits.maxHosts) {
      const [first, cookies] = this.hosts.entries().next().value as [string, Cookie[]];
      this.counts.evicted += cookies.length;
      this.hosts.delete(first);
    }
  }

  /** The Cookie field value for a request to `url` (§5.4), or undefined when no cookie applies. */
  header(url: URL, now: number = Date.now()): string | undefined {
    const host = hostKey(url);
    const jar = this.hosts.get(host);
    if (!jar) return undefined;
    const secure = url.protocol === 'https:';
    const path = url.pathname || '/';
    const live = jar.filter((c) => c.expires > now);
    if (live.length !== jar.length) {
      if (live.length) this.hosts.set(host, live);
      else this.hosts.delete(host);
    }
    const send = live.filter((c) => (!c.secure || secure) && pathMatches(path, c.path));
    if (send.length === 0) return undefined;
    // §5.4 step 2: longer paths first, then earlier creation.
    send.sort((a, b) => b.path.length - a.path.length || a.created - b.created);
    for (const c of send) c.lastAccess = now;
    return send.map((c) => `${c.name}=${c.value}`).join('; ');
  }

  /** The cookies kept for a host (tests, inspection). */
  cookiesOf(host: string): readonly Cookie[] {
    return this.hosts.get(host.toLowerCase()) ?? [];
  }

  get size(): number {
    let n = 0;
    for (const jar of this.hosts.values()) n += jar.length;
    return n;
  }

  /** §5.3 steps 5–6: a Domain attribute must domain-match the host and not be a public suffix (unless it is the host). */
  private mayUseDomain(host: string, domain: string | undefined): boolean {
    if (domain === undefined || domain === host) return true;
    if (!domainMatches(host, domain)) return false;
    const suffix = getPublicSuffix(domain, { allowPrivateDomains: true });
    return suffix !== domain;
  }

  /** Drops expired cookies, then the least recently used beyond the per-host limit (§5.3 step 12). */
  private trim(jar: Cookie[], now: number): void {
    for (let i = jar.length - 1; i >= 0; i--) if (jar[i]!.expires <= now) jar.splice(i, 1);
    if (jar.length <= this.limits.maxPerHost) return;
    jar.sort((a, b) => a.lastAccess - b.lastAccess || a.created - b.created);
    const drop = jar.length - this.limits.maxPerHost;
    jar.splice(0, drop);
    this.counts.evicted += drop;
  }
}

/** The jar's key: the host name as the URL writes it, lower case, without brackets. */
function hostKey(url: URL): string {
  return unbracketHost(url.hostname).toLowerCase();
}
