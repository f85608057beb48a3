// Which addresses the crawler may dial (docs/operations.md, "Internal addresses").
//
// A crawler takes URLs from strangers (pages, redirects, peers, the API); it must
// not become a way into the network it runs in: loopback services, the cloud
// metadata address 169.254.169.254, private ranges. The fetcher checks the
// address it is about to dial, after DNS (src/fetch/fetcher.ts), so names that
// resolve inward, redirects and DNS rebinding are all covered.
//
// The ranges are those of the IANA special-purpose address registries
// (RFC 6890 and its updates) that are not globally reachable, plus IPv6 forms
// that carry an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo): these
// are judged by the IPv4 address they carry.
//
// Pure functions and one small class; no I/O.
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { unbracketHost } from '../url/host.js';

export type AddressRange =
  | 'public'
  | 'unspecified' | 'this-network' | 'loopback' | 'private' | 'cgnat' | 'link-local'
  | 'documentation' | 'benchmark' | 'multicast' | 'broadcast' | 'reserved'
  | 'unique-local' | 'site-local' | 'discard' | 'nat64-local' | 'not-an-address';

/** How an IPv6 address carries an IPv4 one. */
export type Embedding = 'ipv4-mapped' | 'ipv4-compatible' | 'nat64' | '6to4' | 'teredo';

export interface AddressClass {
  range: AddressRange;
  /** Anything but `public`: not dialled unless allowed. */
  internal: boolean;
  /** For an IPv6 address that carries an IPv4 one: how. `range` is then the IPv4 address's. */
  embedding?: Embedding;
  /** The IPv4 address carried, dotted quad. */
  embedded?: string;
}

/** Where each range is defined, for messages an operator can look up. */
const SOURCE: Record<AddressRange, string> = {
  'public': '',
  'unspecified': 'RFC 1122 §3.2.1.3, RFC 4291 §2.5.2',
  'this-network': 'RFC 1122 §3.2.1.3',
  'loopback': 'RFC 1122 §3.2.1.3, RFC 4291 §2.5.3',
  'private': 'RFC 1918',
  'cgnat': 'RFC 6598',
  'link-local': 'RFC 3927, RFC 4291 §2.5.6',
  'documentation': 'RFC 5737, RFC 3849, RFC 9637',
  'benchmark': 'RFC 2544, RFC 5180',
  'multicast': 'RFC 5771, RFC 4291 §2.7',
  'broadcast': 'RFC 919',
  'reserved': 'RFC 6890',
  'unique-local': 'RFC 4193',
  'site-local': 'RFC 3879',
  'discard': 'RFC 6666',
  'nat64-local': 'RFC 8215',
  'not-an-address': '',
};

// ---- IPv4 -----------------------------------------------------------------

/** [network, prefix length, range], most specific first where they nest. */
const V4_RANGES: ReadonlyArray<readonly [number, number, AddressRange]> = [
  [v4('0.0.0.0'), 32, 'unspecified'],
  [v4('255.255.255.255'), 32, 'broadcast'],
  [v4('0.0.0.0'), 8, 'this-network'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'cgnat'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'reserved'], // IETF protocol assignments (RFC 6890 §2.2.2)
  [v4('192.0.2.0'), 24, 'documentation'],
  [v4('192.88.99.0'), 24, 'reserved'], // the 6to4 relay anycast, deprecated (RFC 7526)
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'benchmark'],
  [v4('198.51.100.0'), 24, 'documentation'],
  [v4('203.0.113.0'), 24, 'documentation'],
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved'], // RFC 1112 §4
];

function v4(dotted: string): number {
  const p = dotted.split('.');
  return ((+p[0]! << 24) >>> 0) + (+p[1]! << 16) + (+p[2]! << 8) + +p[3]!;
}

function dottedQuad(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** The range of an IPv4 address given as a 32-bit unsigned number. */
export function classifyIPv4Number(n: number): AddressRange {
  for (const [net, len, range] of V4_RANGES) {
    const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
    if (((n & mask) >>> 0) === net) return range;
  }
  return 'public';
}

/**
 * The WHATWG URL Standard's IPv4 parser (§3.5 "IPv4 parser"): 1 to 4 parts,
 * each decimal, octal (leading 0) or hex (0x); the last part fills the
 * remaining bytes, so `2130706433`, `0177.0.0.1`, `0x7f.1` and `127.1` are all
 * 127.0.0.1. Returns the address as a 32-bit unsigned number, or null when the
 * host is not an IPv4 literal. A trailing dot is allowed, as in URLs.
 */
export function parseIPv4Literal(host: string): number | null {
  if (host.length === 0 || host.length > 64) return null;
  const parts = host.split('.');
  if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop();
  if (parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    const n = parseIPv4Part(p);
    if (n === null) return null;
    nums.push(n);
  }
  const last = nums.length - 1;
  for (let i = 0; i < last; i++) if (nums[i]! > 255) return null;
  if (nums[last]! >= 256 ** (4 - last)) return null;
  let n = nums[last]!;
  for (let i = 0; i < last; i++) n += nums[i]! * 256 ** (3 - i);
  return n;
}

function parseIPv4Part(part: string): number | null {
  if (part === '') return null;
  let s = part;
  let radix = 10;
  if (s.length >= 2 && s[0] === '0' && (s[1] === 'x' || s[1] === 'X')) { radix = 16; s = s.slice(2); }
  else if (s.length >= 2 && s[0] === '0') { radix = 8; s = s.slice(1); }
  if (s === '') return 0;
  const re = radix === 16 ? /^[0-9a-fA-F]+$/ : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!re.test(s)) return null;
  return parseInt(s, radix);
}

// ---- IPv6 -----------------------------------------------------------------

/** The eight 16-bit groups of an IPv6 address (brackets and a zone id allowed), or null. */
export function parseIPv6(text: string): number[] | null {
  let s = unbracketHost(text);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (!isIPv6(s)) return null;
  const lastColon = s.lastIndexOf(':');
  if (s.indexOf('.', lastColon) > 0) {
    // A dotted-quad tail (RFC 4291 §2.2, form 3) is the last two groups.
    const n = v4(s.slice(lastColon + 1));
    s = `${s.slice(0, lastColon + 1)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const groupsOf = (x: string) => (x === '' ? [] : x.split(':').map((g) => parseInt(g, 16)));
  const gap = s.indexOf('::');
  let groups: number[];
  if (gap >= 0) {
    const head = groupsOf(s.slice(0, gap));
    const rest = groupsOf(s.slice(gap + 2));
    const fill = 8 - head.length - rest.length;
    if (fill < 0) return null;
    groups = [...head, ...new Array<number>(fill).fill(0), ...rest];
  } else {
    groups = groupsOf(s);
  }
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

/** RFC 5952 text form: lower case, leading zeros dropped, the longest run (≥ 2) of zero groups as `::`. */
export function formatIPv6(g: readonly number[]): string {
  let bestAt = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) { bestAt = i; bestLen = j - i; }
    i = j;
  }
  const hex = (a: number, b: number) => g.slice(a, b).map((x) => x.toString(16)).join(':');
  if (bestAt < 0) return hex(0, 8);
  return `${hex(0, bestAt)}::${hex(bestAt + bestLen, 8)}`;
}

function embeddedClass(embedding: Embedding, n: number, fallback?: AddressRange): AddressClass {
  const r = classifyIPv4Number(n);
  const range = r === 'public' && fallback ? fallback : r;
  return { range, internal: range !== 'public', embedding, embedded: dottedQuad(n) };
}

/** The range of an IPv6 address given as its eight groups. */
export function classifyIPv6Groups(g: readonly number[]): AddressClass {
  const zeroUpTo = (k: number) => { for (let i = 0; i < k; i++) if (g[i] !== 0) return false; return true; };
  const low32 = ((g[6]! << 16) >>> 0) + g[7]!;
  const h0 = g[0]!;
  if (zeroUpTo(5)) {
    if (g[5] === 0xffff) return embeddedClass('ipv4-mapped', low32); // RFC 4291 §2.5.5.2
    if (g[5] === 0) {
      if (low32 === 0) return cls('unspecified');
      if (low32 === 1) return cls('loopback');
      // RFC 4291 §2.5.5.1: deprecated; never dialled, named by the IPv4 address it carries.
      return embeddedClass('ipv4-compatible', low32, 'reserved');
    }
  }
  if (h0 === 0x64 && g[1] === 0xff9b) {
    if (g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0) return embeddedClass('nat64', low32); // RFC 6052 §2.1
    if (g[2] === 1) return cls('nat64-local'); // 64:ff9b:1::/48, RFC 8215: local use only
  }
  if (h0 === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return cls('discard'); // 100::/64
  if (h0 === 0x2001) {
    const g1 = g[1]!;
    if (g1 === 0) {
      // Teredo (RFC 4380 §4): server IPv4 in groups 2–3, the client's IPv4 inverted in groups 6–7.
      const server = ((g[2]! << 16) >>> 0) + g[3]!;
      const client = (~low32) >>> 0;
      for (const n of [client, server]) if (classifyIPv4Number(n) !== 'public') return embeddedClass('teredo', n);
      return { range: 'public', internal: false, embedding: 'teredo', embedded: dottedQuad(client) };
    }
    if (g1 === 0x0db8) return cls('documentation'); // 2001:db8::/32, RFC 3849
    if (g1 === 2 && g[2] === 0) return cls('benchmark'); // 2001:2::/48, RFC 5180
    if (g1 < 0x200) return cls('reserved'); // the rest of 2001::/23, IETF protocol assignments
  }
  if (h0 === 0x2002) return embeddedClass('6to4', ((g[1]! << 16) >>> 0) + g[2]!); // RFC 3056 §2
  if (h0 === 0x3fff && g[1]! < 0x1000) return cls('documentation'); // 3fff::/20, RFC 9637
  if ((h0 & 0xfe00) === 0xfc00) return cls('unique-local'); // fc00::/7
  if ((h0 & 0xffc0) === 0xfe80) return cls('link-local'); // fe80::/10
  if ((h0 & 0xffc0) === 0xfec0) return cls('site-local'); // fec0::/10
  if ((h0 & 0xff00) === 0xff00) return cls('multicast'); // ff00::/8
  // Global unicast is 2000::/3 (RFC 4291 §2.4); everything else is unassigned or special.
  if ((h0 & 0xe000) !== 0x2000) return cls('reserved');
  return cls('public');
}

function cls(range: AddressRange): AddressClass {
  return { range, internal: range !== 'public' };
}

// ---- both -----------------------------------------------------------------

export interface IpLiteral { address: string; family: 4 | 6 }

/**
 * The canonical address of a host that is an IP literal in any notation a URL
 * accepts (IPv4 as the WHATWG parser reads it, IPv6 with or without
 * brackets), or null for a name. Canonical: dotted quad; RFC 5952 for IPv6.
 */
export function parseIpLiteral(host: string): IpLiteral | null {
  if (host.length === 0) return null;
  if (host.includes(':')) {
    const g = parseIPv6(host);
    return g ? { address: formatIPv6(g), family: 6 } : null;
  }
  if (!endsInNumber(host)) return null;
  if (isIPv4(host)) return { address: host, family: 4 };
  const n = parseIPv4Literal(host);
  return n === null ? null : { address: dottedQuad(n), family: 4 };
}

/** WHATWG "ends in a number": only such hosts are read as IPv4 (a cheap test for every name). */
function endsInNumber(host: string): boolean {
  let end = host.length;
  if (host.charCodeAt(end - 1) === 46) end--;
  const c = host.charCodeAt(end - 1);
  if (!(c >= 48 && c <= 57) && !(c >= 97 && c <= 102) && !(c >= 65 && c <= 70) && c !== 120 && c !== 88) return false; // most names end in a letter past f
  const start = host.lastIndexOf('.', end - 1) + 1;
  const last = host.slice(start, end);
  return /^[0-9]+$/.test(last) || /^0[xX][0-9a-fA-F]*$/.test(last);
}

/** The range of an IP address (any notation parseIpLiteral accepts). */
export function classifyAddress(address: string): AddressClass {
  const lit = parseIpLiteral(address);
  if (!lit) return cls('not-an-address');
  if (lit.family === 4) return cls(classifyIPv4Number(v4(lit.address)));
  return classifyIPv6Groups(parseIPv6(lit.address)!);
}

/** One line for logs and API answers: `10.0.0.1 is private (RFC 1918)`. */
export function describeAddress(address: string, c: AddressClass = classifyAddress(address)): string {
  const what = `${c.range}${SOURCE[c.range] ? ` (${SOURCE[c.range]})` : ''}`;
  if (c.embedding && c.embedded) return `${address} is ${c.embedding} ${c.embedded}, ${what}`;
  return `${address} is ${what}`;
}

// ---- allow-list and policy ----------------------------------------------------

export interface Cidr { address: string; prefix: number; family: 4 | 6 }

/** Parses `10.0.0.0/8`, `fd00::/8`, `[::1]/128`, or a bare address (a single host). Throws a usage message. */
export function parseCidr(spec: string): Cidr {
  const s = spec.trim();
  const slash = s.lastIndexOf('/');
  const addr = unbracketHost(slash >= 0 ? s.slice(0, slash) : s);
  const family = isIPv4(addr) ? 4 : isIPv6(addr) && !addr.includes('%') ? 6 : 0;
  if (!family) throw new Error(`--allow-address expects an address range such as 10.0.0.0/8 or fd00::/8, got '${spec}'`);
  const max = family === 4 ? 32 : 128;
  const prefix = slash >= 0 ? Number(s.slice(slash + 1)) : max;
  if (!/^\d{1,3}$/.test(slash >= 0 ? s.slice(slash + 1) : String(max)) || prefix > max) {
    throw new Error(`--allow-address prefix length must be 0-${max} in '${spec}'`);
  }
  return { address: addr, prefix, family };
}

export interface BlockedAddress {
  address: string;
  class: AddressClass;
  /** `10.0.0.1 is private (RFC 1918)`. */
  reason: string;
}

const VERDICTS_KEPT = 4096;

/**
 * The dial-time decision: internal addresses are refused unless an allowed
 * range (`--allow-address`) holds them (or, for an IPv6 form that carries an
 * IPv4 address, the address it carries). Verdicts are remembered per address:
 * a crawl dials few distinct addresses many times.
 */
export class AddressPolicy {
  private readonly allowed = new BlockList();
  private readonly ranges: Cidr[] = [];
  private readonly verdicts = new Map<string, BlockedAddress | null>();

  constructor(allow: readonly (string | Cidr)[] = []) {
    for (const a of allow) {
      const c = typeof a === 'string' ? parseCidr(a) : a;
      this.allowed.addSubnet(c.address, c.prefix, c.family === 4 ? 'ipv4' : 'ipv6');
      this.ranges.push(c);
    }
  }

  /** The allowed ranges, as given. */
  get allowList(): readonly Cidr[] { return this.ranges; }

  /** Null when `address` may be dialled; otherwise why not. */
  check(address: string): BlockedAddress | null {
    const hit = this.verdicts.get(address);
    if (hit !== undefined) return hit;
    const v = this.decide(address);
    if (this.verdicts.size >= VERDICTS_KEPT) this.verdicts.clear();
    this.verdicts.set(address, v);
    return v;
  }

  private decide(address: string): BlockedAddress | null {
    const lit = parseIpLiteral(address);
    const c = lit ? classifyAddress(lit.address) : cls('not-an-address');
    if (!c.internal) return null;
    if (lit && this.ranges.length > 0) {
      if (this.allowed.check(lit.address, lit.family === 4 ? 'ipv4' : 'ipv6')) return null;
      if (c.embedded && this.allowed.check(c.embedded, 'ipv4')) return null;
    }
    return { address, class: c, reason: describeAddress(lit?.address ?? address, c) };
  }
}
