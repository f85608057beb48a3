// The one place for ubicrawl's wire formats (docs/mesh.md "Membership", "URL exchange"):
//   - membership heartbeats (gossipsub payload, JSON, ≤ MAX_HEARTBEAT_BYTES);
//   - URL exchange frames on /ubicrawl/urls/1.0.0 (compact binary inside an
//     unsigned-varint length prefix, the multiformats framing libp2p uses);
//   - the outbox's on-disk key and value layout (same item encoding as the wire).
// The crawl policy topic's messages are framed in src/policy/sync.ts, around the
// document codec of src/policy/document.ts (also the store's format).
// Decoders never throw on bad input: they return a reason that callers count
// (docs/mesh.md "Admission", "Memory bounds").

import { parsePolicySummary } from '../policy/document.js';
import { DEFAULT_ZONE, MAX_ZONE_WEIGHT, isZoneName } from '../assign/zones.js';

// ---------------------------------------------------------------- limits

/** Largest heartbeat payload accepted (bytes of JSON). */
export const MAX_HEARTBEAT_BYTES = 4096;
/** Most addresses a heartbeat may carry. */
export const MAX_ADDRS = 16;
/** Longest multiaddr string in a heartbeat. */
export const MAX_ADDR_CHARS = 256;
/** Longest peer id string (base58btc; Ed25519 ids are 52 characters). */
export const MAX_ID_CHARS = 128;
/** Largest URL batch frame (payload after the length prefix), both sides. */
export const MAX_BATCH_BYTES = 1 << 20;
/** Most URLs in one batch, both sides. */
export const MAX_BATCH_URLS = 5000;
/** Longest URL on the wire (bytes; URLs are ASCII after normalisation). */
export const MAX_URL_BYTES = 8192;
/** Largest depth carried. */
export const MAX_DEPTH = 65535;
/** Largest hop count carried (a u8 on the wire). */
export const MAX_HOPS = 255;
/**
 * Bit 7 of an item's hops byte marks a *seen entry* rather than a URL to crawl:
 * the sender (an agent handing a host over) has already fetched or settled it,
 * so the receiver records it in its seen-set and does not queue it. Real hop
 * counts stay far below 128 (the forwarding limit is a handful).
 */
export const SEEN_ONLY_FLAG = 0x80;
/** Bit 6 of the hops byte: the URL is a sitemap to parse, not a page (Sitemaps 0.90 discovery across agents). */
export const SITEMAP_FLAG = 0x40;
/**
 * Bit 5 of the hops byte: a second string follows the URL — the origin prefix a
 * robots.txt granted to this sitemap (Sitemaps 0.90 cross submits; see
 * sitemap/grants.ts). Only meaningful with SITEMAP_FLAG.
 */
export const GRANT_FLAG = 0x20;
/** The hop count proper: the hops byte without its flag bits. */
export const HOPS_MASK = 0x1f;
/**
 * Both flag bits together (a "seen" sitemap means nothing) mark a *control
 * item*: the "handoff complete" marker (docs/mesh.md "Handoff protocol").
 */
export const HANDOFF_MARKER_HOPS = SEEN_ONLY_FLAG | SITEMAP_FLAG;
/**
 * A *replica* seen entry: the sender owns the host and settled this URL; the
 * receiver is the host's next owner on the ring and keeps the entry (never
 * passes it on) so that, should the sender die, it does not fetch the page
 * again (docs/mesh.md "Crashes": replicated seen entries).
 */
export const REPLICA_SEEN_HOPS = SEEN_ONLY_FLAG | HOPS_MASK;
/**
 * A *queued replica*: the sender owns the host and has this URL in its
 * frontier; the receiver, one of the host's next owners on the ring, holds it
 * (never crawls it, never passes it on) until the page is settled (its replica
 * seen entry trims it) or the owner is gone from the ring (then the URL is
 * promoted into the frontier of whoever owns the host now: docs/mesh.md
 * "Replicated frontier"). `QUEUED_REPLICA_HOPS + 1` is the same for a sitemap.
 * These hops bytes were `bad` (a seen sitemap) before this kind existed: an
 * older receiver drops such items one by one and counts them (`replica-item`
 * on the replica lane), the rest of the frame stands.
 */
export const QUEUED_REPLICA_HOPS = HANDOFF_MARKER_HOPS | 1;
/**
 * A host's state handed to its new owner with its URLs (docs/mesh.md
 * "Everything about a host moves with it"): politeness (backoff, the time a
 * Retry-After or a pause ends, parked) and operator overrides. The URL is
 * `http://<host>/.well-known/ubicrawl-host-state?s=<base64url of the JSON>`: its
 * authority names the host (admission checks it like a seen entry's), the
 * query carries the state, and it is never fetched. An older receiver drops
 * it as a `bad` item (its hops byte meant nothing before), counted, and keeps
 * the rest of the batch: the host moves as it did then, without its state.
 */
export const HOST_STATE_HOPS = HANDOFF_MARKER_HOPS | 3;
/**
 * A recrawl schedule entry of a host handed over: the URL is the page, depth its
 * depth, and the second string (the grant field, present because the hops byte
 * has GRANT_FLAG) is `http://recrawl.ubicrawl.invalid/v1/<base64url>` of the
 * encoded schedule state (src/recrawl/schedule.ts). Older receivers drop it as
 * `bad` (a seen sitemap with a grant), reading past its second string as the
 * framing always did.
 */
export const RECRAWL_ENTRY_HOPS = SEEN_ONLY_FLAG | SITEMAP_FLAG | GRANT_FLAG;
/**
 * A *held replica passed on*: a queued replica (`HELD_QUEUED_HOPS`, `+ 1` for a
 * sitemap) or a replica seen entry (`HELD_REPLICA_HOPS`) that the sender held
 * for another member, the host's owner, and passes to the host's next
 * successor as it leaves gracefully (docs/mesh.md "Replicated frontier"). The
 * second string (GRANT_FLAG) is `http://held.ubicrawl.invalid/v1/<owner's
 * peer id>`: the receiver holds the item for that owner, as if the owner had
 * sent it. Older receivers drop these items as `bad` (a seen sitemap with a
 * grant), reading past the second string as the framing always did; on the
 * replica lane, as `replica-item`.
 */
export const HELD_QUEUED_HOPS = RECRAWL_ENTRY_HOPS | 1;
export const HELD_REPLICA_HOPS = RECRAWL_ENTRY_HOPS | 3;
const HELD_PREFIX = 'http://held.ubicrawl.invalid/v1/';
const HOST_STATE_PATH = '/.well-known/ubicrawl-host-state?s=';
const RECRAWL_PREFIX = 'http://recrawl.ubicrawl.invalid/v1/';
// A reserved name (RFC 6761 §6.4: .invalid never resolves), so a marker can
// travel as an ordinary item through the outbox and the URL exchange.
const HANDOFF_MARKER_PREFIX = 'http://handoff.ubicrawl.invalid/v1/';
/** Counters and sequence numbers are integers below 2^53 (exact in a JS number). */
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export const PROTOCOL_URLS = '/ubicrawl/urls/1.0.0';
export function membersTopic(crawlId: string): string {
  return `ubicrawl/${crawlId}/members`;
}

/** The crawl policy's topic (src/mesh/policy-topic.ts): one per crawl, as the members topic. */
export function policyTopic(crawlId: string): string {
  return `ubicrawl/${crawlId}/policy`;
}

// ---------------------------------------------------------------- heartbeats

export type MemberState = 'active' | 'leaving';

export interface MemberCounters {
  /** Pages fetched by the member since it started (this incarnation). */
  fetched: number;
  /** URLs currently queued in the member's frontier. */
  queued: number;
  /** URLs the member has sent (acked) to other members. */
  sent: number;
  /** URLs the member has received (accepted) from other members. */
  received: number;
}

export interface Heartbeat {
  /** The member's PeerId (must equal the gossipsub signer). */
  id: string;
  /** Multiaddrs others can dial, ideally with /p2p/<id>. */
  addrs: string[];
  /** Relative share of hosts (HostRing capacity). */
  capacity: number;
  /** Bumped on every start of the member; a higher one supersedes. */
  incarnation: number;
  state: MemberState;
  counters: MemberCounters;
  /** Bumped on every heartbeat within an incarnation. */
  seq: number;
  /** `version.digest` of the crawl policy in force on the member (src/policy/document.ts), when it holds one. */
  policy?: string;
  /** The member's zone (`--zone`, src/assign/zones.ts); absent for the default zone. */
  zone?: string;
  /** The weight the member declares for its zone (`--zone-weight`); absent when 1 or in the default zone. */
  zoneWeight?: number;
  /** Digest of the member's `--zone-rule` list (zoneRulesDigest); absent without rules. Members must agree on it. */
  zoneRules?: string;
}

export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: string };

const encoder = new TextEncoder();
const fatalDecoder = new TextDecoder('utf-8', { fatal: true });

const HEARTBEAT_KEYS = new Set(['v', 'id', 'addrs', 'capacity', 'incarnation', 'state', 'counters', 'seq', 'policy', 'zone', 'zoneWeight', 'zoneRules']);
const COUNTER_KEYS = ['fetched', 'queued', 'sent', 'received'] as const;

export function encodeHeartbeat(hb: Heartbeat): Uint8Array {
  return encoder.encode(JSON.stringify({
    v: 1, id: hb.id, addrs: hb.addrs, capacity: hb.capacity, incarnation: hb.incarnation, state: hb.state,
    counters: { fetched: hb.counters.fetched, queued: hb.counters.queued, sent: hb.counters.sent, received: hb.counters.received },
    seq: hb.seq,
    ...(hb.policy === undefined ? {} : { policy: hb.policy }),
    ...(hb.zone === undefined || hb.zone === DEFAULT_ZONE ? {} : { zone: hb.zone }),
    ...(hb.zoneWeight === undefined || hb.zoneWeight === 1 ? {} : { zoneWeight: hb.zoneWeight }),
    ...(hb.zoneRules === undefined ? {} : { zoneRules: hb.zoneRules }),
  }));
}

const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= MAX_SAFE;
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;

/** True for a plausible base58btc PeerId string (the form libp2p prints). */
export function isPeerIdString(s: unknown): s is string {
  return typeof s === 'string' && s.length >= 32 && s.length <= MAX_ID_CHARS && BASE58.test(s);
}

/**
 * How logs, metric labels and the API name a peer: the last 12 characters of
 * its id (the first ones are the same for every Ed25519 key; 58^12 tails).
 */
export function shortPeerId(id: string): string {
  return id.slice(-12);
}

function isAddr(s: unknown): s is string {
  if (typeof s !== 'string' || s.length < 2 || s.length > MAX_ADDR_CHARS || s.charCodeAt(0) !== 47 /* / */) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

/** Strict heartbeat decoder: exact schema (unknown keys rejected), bounded sizes. */
export function decodeHeartbeat(bytes: Uint8Array): Decoded<Heartbeat> {
  if (bytes.length > MAX_HEARTBEAT_BYTES) return { ok: false, reason: 'oversize' };
  let o: unknown;
  try {
    o = JSON.parse(fatalDecoder.decode(bytes));
  } catch {
    return { ok: false, reason: 'json' };
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { ok: false, reason: 'schema' };
  const r = o as Record<string, unknown>;
  for (const k of Object.keys(r)) if (!HEARTBEAT_KEYS.has(k)) return { ok: false, reason: 'schema' };
  if (r.v !== 1) return { ok: false, reason: 'version' };
  if (!isPeerIdString(r.id)) return { ok: false, reason: 'schema' };
  if (!Array.isArray(r.addrs) || r.addrs.length > MAX_ADDRS || !r.addrs.every(isAddr)) return { ok: false, reason: 'schema' };
  if (typeof r.capacity !== 'number' || !Number.isFinite(r.capacity) || r.capacity < 0 || r.capacity > 1e6) return { ok: false, reason: 'schema' };
  if (!isCount(r.incarnation) || !isCount(r.seq)) return { ok: false, reason: 'schema' };
  if (r.state !== 'active' && r.state !== 'leaving') return { ok: false, reason: 'schema' };
  const c = r.counters;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return { ok: false, reason: 'schema' };
  const cr = c as Record<string, unknown>;
  if (Object.keys(cr).length !== COUNTER_KEYS.length) return { ok: false, reason: 'schema' };
  for (const k of COUNTER_KEYS) if (!isCount(cr[k])) return { ok: false, reason: 'schema' };
  if (r.policy !== undefined && parsePolicySummary(r.policy) === null) return { ok: false, reason: 'schema' };
  if (r.zone !== undefined && (!isZoneName(r.zone) || r.zone === DEFAULT_ZONE)) return { ok: false, reason: 'schema' };
  if (r.zoneWeight !== undefined && (typeof r.zoneWeight !== 'number' || !(r.zoneWeight > 0) || r.zoneWeight > MAX_ZONE_WEIGHT)) return { ok: false, reason: 'schema' };
  if (r.zoneRules !== undefined && (typeof r.zoneRules !== 'string' || !/^[0-9a-f]{16}$/.test(r.zoneRules))) return { ok: false, reason: 'schema' };
  return {
    ok: true,
    value: {
      id: r.id, addrs: r.addrs as string[], capacity: r.capacity, incarnation: r.incarnation, state: r.state, seq: r.seq,
      counters: { fetched: cr.fetched as number, queued: cr.queued as number, sent: cr.sent as number, received: cr.received as number },
      ...(r.policy === undefined ? {} : { policy: r.policy as string }),
      ...(r.zone === undefined ? {} : { zone: r.zone }),
      ...(r.zoneWeight === undefined ? {} : { zoneWeight: r.zoneWeight }),
      ...(r.zoneRules === undefined ? {} : { zoneRules: r.zoneRules }),
    },
  };
}

// ---------------------------------------------------------------- URL items

/** One forwarded URL. */
export interface UrlItem {
  /** Normalised absolute http(s) URL, printable ASCII. */
  url: string;
  /** Link depth from a seed. */
  depth: number;
  /** How many times this URL has been forwarded between agents (the hop limit: docs/mesh.md "In the agent"), with flag bits. */
  hops: number;
  /** With GRANT_FLAG in `hops`: the origin prefix (a wire URL) a robots.txt granted to this sitemap. */
  grant?: string;
}

/**
 * Whether `url` may travel on the wire: 1..MAX_URL_BYTES printable ASCII
 * characters (normalised URLs are ASCII: RFC 3986 §2.1 percent-encoding, IDNA
 * punycode hosts), scheme `http://` or `https://` followed by a non-empty
 * authority. Full parsing is left to the receiving agent's normaliser.
 */
export function isWireUrl(url: string): boolean {
  const n = url.length;
  if (n < 8 || n > MAX_URL_BYTES) return false;
  for (let i = 0; i < n; i++) {
    const c = url.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  let p: number;
  if (url.startsWith('http://')) p = 7;
  else if (url.startsWith('https://')) p = 8;
  else return false;
  const c = url.charCodeAt(p);
  return p < n && c !== 47 /* / */ && c !== 63 /* ? */ && c !== 35 /* # */;
}

/** Whether a whole item is valid to send (URL syntax, depth and hops ranges). */
export function isWireItem(it: UrlItem): boolean {
  return it !== null && typeof it === 'object' && typeof it.url === 'string' && isWireUrl(it.url)
    && Number.isInteger(it.depth) && it.depth >= 0 && it.depth <= MAX_DEPTH
    && Number.isInteger(it.hops) && it.hops >= 0 && it.hops <= MAX_HOPS
    && ((it.hops & GRANT_FLAG) === 0 || (typeof it.grant === 'string' && isWireUrl(it.grant)));
}

/**
 * The "handoff complete" marker for ring `ringId` (a u64, see
 * src/crawl/handoff.ts ringIdOf): the sender holds nothing (no queued URL, no
 * seen entry unsent) for the hosts it does not own under that ring; everything
 * it had for them was queued before this marker on the same ordered stream.
 */
export function encodeHandoffMarker(ringId: bigint): UrlItem {
  return { url: HANDOFF_MARKER_PREFIX + ringId.toString(16).padStart(16, '0'), depth: 0, hops: HANDOFF_MARKER_HOPS };
}

export function isHandoffMarker(it: UrlItem): boolean {
  return it.hops === HANDOFF_MARKER_HOPS;
}

/** The ring id a marker carries, or null when the item is not a well-formed marker. */
export function decodeHandoffMarker(it: UrlItem): bigint | null {
  if (it.hops !== HANDOFF_MARKER_HOPS || it.depth !== 0 || it.url.length !== HANDOFF_MARKER_PREFIX.length + 16 || !it.url.startsWith(HANDOFF_MARKER_PREFIX)) return null;
  const hex = it.url.slice(HANDOFF_MARKER_PREFIX.length);
  for (let i = 0; i < 16; i++) {
    const c = hex.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return null;
  }
  return BigInt('0x' + hex);
}

// ---------------------------------------------------------------- item kinds

/**
 * Why an item means nothing (docs/mesh.md "Item kinds"): a marker that does
 * not parse; flag bits that do not go together (a seen entry that is also a
 * sitemap or carries a grant, a grant without a sitemap); a grant flag without
 * its grant. Counted by the receiver, never acted on.
 */
export type BadItemReason = 'marker' | 'flags' | 'grant';

/**
 * An item by what it asks of its receiver, the hops byte's flags decoded once
 * (docs/mesh.md "Item kinds"): a URL to crawl (or to pass on to its owner); a
 * seen entry of a host handed over; a replica seen entry from the host's
 * owner; a queued URL replicated by the host's owner; either of the last two
 * with `owner` set when a leaver passes on what it held for that owner; a
 * "handoff complete" marker; or nothing readable.
 */
export type WireItem =
  | { kind: 'crawl'; url: string; depth: number; hops: number; sitemap: boolean; grant?: string }
  | { kind: 'seen'; url: string; hops: number }
  | { kind: 'replica'; url: string; owner?: string }
  | { kind: 'queued'; url: string; depth: number; sitemap: boolean; owner?: string }
  | { kind: 'host-state'; host: string; state: string }
  | { kind: 'recrawl'; url: string; depth: number; state: Uint8Array }
  | { kind: 'marker'; ringId: bigint }
  | { kind: 'bad'; reason: BadItemReason };

const BAD_MARKER: WireItem = Object.freeze({ kind: 'bad', reason: 'marker' });
const BAD_FLAGS: WireItem = Object.freeze({ kind: 'bad', reason: 'flags' });
const BAD_GRANT: WireItem = Object.freeze({ kind: 'bad', reason: 'grant' });

/** Reads an item's kind from its hops byte (the one place its flag bits are tested on the receiving side). */
export function classifyItem(it: UrlItem): WireItem {
  const h = it.hops;
  if (h === HANDOFF_MARKER_HOPS) {
    const ringId = decodeHandoffMarker(it);
    return ringId === null ? BAD_MARKER : { kind: 'marker', ringId };
  }
  if (h === REPLICA_SEEN_HOPS) return { kind: 'replica', url: it.url };
  if (h === HOST_STATE_HOPS) return decodeHostStateItem(it.url) ?? BAD_FLAGS;
  if (h === RECRAWL_ENTRY_HOPS) {
    if (typeof it.grant !== 'string' || !it.grant.startsWith(RECRAWL_PREFIX)) return BAD_GRANT;
    return { kind: 'recrawl', url: it.url, depth: it.depth, state: Buffer.from(it.grant.slice(RECRAWL_PREFIX.length), 'base64url') };
  }
  if (h === QUEUED_REPLICA_HOPS || h === QUEUED_REPLICA_HOPS + 1) return { kind: 'queued', url: it.url, depth: it.depth, sitemap: h !== QUEUED_REPLICA_HOPS };
  if (h === HELD_QUEUED_HOPS || h === HELD_QUEUED_HOPS + 1 || h === HELD_REPLICA_HOPS) {
    const owner = typeof it.grant === 'string' && it.grant.startsWith(HELD_PREFIX) ? it.grant.slice(HELD_PREFIX.length) : '';
    if (!isPeerIdString(owner)) return BAD_GRANT;
    return h === HELD_REPLICA_HOPS ? { kind: 'replica', url: it.url, owner } : { kind: 'queued', url: it.url, depth: it.depth, sitemap: h !== HELD_QUEUED_HOPS, owner };
  }
  if (h & SEEN_ONLY_FLAG) return h & (SITEMAP_FLAG | GRANT_FLAG) ? BAD_FLAGS : { kind: 'seen', url: it.url, hops: h & HOPS_MASK };
  if (h & GRANT_FLAG) {
    if (!(h & SITEMAP_FLAG)) return BAD_FLAGS;
    if (typeof it.grant !== 'string') return BAD_GRANT;
    return { kind: 'crawl', url: it.url, depth: it.depth, hops: h & HOPS_MASK, sitemap: true, grant: it.grant };
  }
  return { kind: 'crawl', url: it.url, depth: it.depth, hops: h & HOPS_MASK, sitemap: (h & SITEMAP_FLAG) !== 0 };
}

/**
 * The item that carries `w` (classifyItem's inverse). Hop counts past what the
 * byte holds are capped: 31 for a URL, 30 for a seen entry (31 would read as a
 * replica), both past any hop limit. A grant travels with a sitemap only; a
 * held replica passed on carries its owner in the same second string.
 */
export function encodeItem(w: Exclude<WireItem, { kind: 'bad' }>): UrlItem {
  switch (w.kind) {
    case 'crawl': {
      const hops = Math.min(w.hops, HOPS_MASK) | (w.sitemap ? SITEMAP_FLAG : 0);
      return w.sitemap && w.grant !== undefined
        ? { url: w.url, depth: w.depth, hops: hops | GRANT_FLAG, grant: w.grant }
        : { url: w.url, depth: w.depth, hops };
    }
    case 'seen': return { url: w.url, depth: 0, hops: SEEN_ONLY_FLAG | Math.min(w.hops, HOPS_MASK - 1) };
    case 'replica': return w.owner === undefined ? { url: w.url, depth: 0, hops: REPLICA_SEEN_HOPS } : { url: w.url, depth: 0, hops: HELD_REPLICA_HOPS, grant: HELD_PREFIX + w.owner };
    case 'queued': return w.owner === undefined
      ? { url: w.url, depth: w.depth, hops: QUEUED_REPLICA_HOPS + (w.sitemap ? 1 : 0) }
      : { url: w.url, depth: w.depth, hops: HELD_QUEUED_HOPS + (w.sitemap ? 1 : 0), grant: HELD_PREFIX + w.owner };
    case 'host-state': return { url: `http://${w.host}${HOST_STATE_PATH}${Buffer.from(w.state).toString('base64url')}`, depth: 0, hops: HOST_STATE_HOPS };
    case 'recrawl': return { url: w.url, depth: Math.min(w.depth, MAX_DEPTH), hops: RECRAWL_ENTRY_HOPS, grant: RECRAWL_PREFIX + Buffer.from(w.state).toString('base64url') };
    case 'marker': return encodeHandoffMarker(w.ringId);
  }
}

/** A host-state item's host and JSON text, or null when its URL is not one. */
function decodeHostStateItem(url: string): WireItem | null {
  const i = url.indexOf(HOST_STATE_PATH);
  if (!url.startsWith('http://') || i <= 7 || url.indexOf('/', 7) !== i) return null;
  const host = url.slice(7, i);
  const state = Buffer.from(url.slice(i + HOST_STATE_PATH.length), 'base64url').toString('utf8');
  return state.length > 0 ? { kind: 'host-state', host, state } : null;
}

// Same check as isWireUrl, on bytes already in a buffer (receiver side, before
// any string is made).
function isWireUrlBytes(b: Uint8Array, start: number, end: number): boolean {
  const n = end - start;
  if (n < 8 || n > MAX_URL_BYTES) return false;
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  // "http://" = 68 74 74 70 3a 2f 2f; "https://" has 73 before the colon.
  if (b[start] !== 0x68 || b[start + 1] !== 0x74 || b[start + 2] !== 0x74 || b[start + 3] !== 0x70) return false;
  let p = start + 4;
  if (b[p] === 0x73) p++;
  if (b[p] !== 0x3a || b[p + 1] !== 0x2f || b[p + 2] !== 0x2f) return false;
  p += 3;
  if (p >= end) return false;
  const c = b[p]!;
  return c !== 0x2f && c !== 0x3f && c !== 0x23;
}

// ---------------------------------------------------------------- varints

/** Bytes of an unsigned LEB128 varint for 0 ≤ v < 2^35 (we use values < 2^31). */
function varintLength(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

function writeVarint(buf: Uint8Array, off: number, v: number): number {
  while (v >= 0x80) {
    buf[off++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  buf[off++] = v;
  return off;
}

// Reader state kept in module scope to avoid a per-call allocation: decoders
// are synchronous and not re-entrant.
let rdPos = 0;
/** Reads a varint < 2^31 at rdPos; returns -1 if truncated or too long. */
function readVarint(b: Uint8Array, end: number): number {
  let v = 0;
  let shift = 0;
  for (let i = 0; i < 5; i++) {
    if (rdPos >= end) return -1;
    const c = b[rdPos++]!;
    v += (c & 0x7f) * 2 ** shift;
    if (c < 0x80) return v < 2 ** 31 ? v : -1;
    shift += 7;
  }
  return -1;
}

function writeU53(buf: Uint8Array, off: number, v: number): void {
  const hi = Math.floor(v / 0x100000000);
  const lo = v >>> 0;
  buf[off] = hi >>> 24; buf[off + 1] = hi >>> 16; buf[off + 2] = hi >>> 8; buf[off + 3] = hi;
  buf[off + 4] = lo >>> 24; buf[off + 5] = lo >>> 16; buf[off + 6] = lo >>> 8; buf[off + 7] = lo;
}

/** Reads an 8-byte big-endian integer; -1 if it is ≥ 2^53. */
function readU53(b: Uint8Array, off: number): number {
  const hi = ((b[off]! << 24) | (b[off + 1]! << 16) | (b[off + 2]! << 8) | b[off + 3]!) >>> 0;
  const lo = ((b[off + 4]! << 24) | (b[off + 5]! << 16) | (b[off + 6]! << 8) | b[off + 7]!) >>> 0;
  if (hi >= 0x200000) return -1;
  return hi * 0x100000000 + lo;
}

// ---------------------------------------------------------------- URL exchange frames

export const FRAME_BATCH = 1;
export const FRAME_ACK = 2;
export const WIRE_VERSION = 1;
/** Batch flag bit 0: the receiver holds these URLs as the hosts' replica, not as their owner (reserved for replicated handoff). */
export const FLAG_REPLICA = 1;

/** A batch as carried on /ubicrawl/urls/1.0.0. Item i has sequence number seqs[i]. */
export interface Batch {
  /** Sender-chosen id, echoed by the ack. The outbox uses the last item's seq. */
  batchId: number;
  /** Sender PeerId; the receiver checks it against the authenticated connection. */
  from: string;
  /** Random number identifying the sender's outbox store; seqs are unique within an epoch. */
  epoch: number;
  flags: number;
  items: UrlItem[];
  /** Strictly increasing outbox sequence numbers, one per item (receiver de-duplication). */
  seqs: number[];
}

/**
 * A run of items with consecutive sequence numbers seq, seq+1, …, already
 * encoded: `body` is varint n ‖ n × item, the outbox's segment value minus its
 * version byte, so the sender copies disk bytes to the wire without decoding.
 */
export interface EncodedRun {
  seq: number;
  count: number;
  body: Uint8Array;
}

export interface Ack {
  batchId: number;
  /** Items handed to accept(). */
  accepted: number;
  /** Items dropped: already received (seq ≤ watermark) or invalid URL. */
  dropped: number;
}

/** Frame header after the from field: batchId, epoch (u64 each), then varint run count. */
const BATCH_FIXED = 4 + 8 + 8;

/** Encoded size of one item. */
function itemSize(it: UrlItem): number {
  const base = varintLength(it.depth) + 1 + varintLength(it.url.length) + it.url.length;
  return it.hops & GRANT_FLAG ? base + varintLength(it.grant!.length) + it.grant!.length : base;
}

function writeItem(buf: Buffer, o: number, it: UrlItem): number {
  o = writeVarint(buf, o, it.depth);
  buf[o++] = it.hops;
  o = writeVarint(buf, o, it.url.length);
  o += buf.write(it.url, o, 'latin1');
  if (it.hops & GRANT_FLAG) {
    o = writeVarint(buf, o, it.grant!.length);
    o += buf.write(it.grant!, o, 'latin1');
  }
  return o;
}

/** Encodes items as one run body (varint n ‖ items). */
export function encodeRunBody(items: readonly UrlItem[]): Buffer {
  let size = varintLength(items.length);
  for (const it of items) size += itemSize(it);
  const buf = Buffer.allocUnsafe(size);
  let o = writeVarint(buf, 0, items.length);
  for (const it of items) o = writeItem(buf, o, it);
  return buf;
}

/** Frame payload size for these runs (without the length prefix). */
export function batchFrameSize(fromLength: number, runs: readonly EncodedRun[]): number {
  let size = BATCH_FIXED + fromLength + varintLength(runs.length);
  for (const r of runs) size += 8 + r.body.length;
  return size;
}

/**
 * Encodes a batch made of runs as one length-prefixed frame (prefix
 * included), ready to write to the stream. Throws RangeError on a batch that
 * breaks the limits (callers build batches within them; a throw is a bug).
 */
export function encodeRunsFrame(h: { batchId: number; from: string; epoch: number; flags: number }, runs: readonly EncodedRun[]): Uint8Array {
  let n = 0;
  let last = -1;
  for (const r of runs) {
    if (r.count < 1 || r.seq <= last) throw new RangeError('runs must be non-empty, in increasing seq order');
    n += r.count;
    last = r.seq + r.count - 1;
  }
  if (n < 1 || n > MAX_BATCH_URLS) throw new RangeError('batch item count out of range');
  if (!isPeerIdString(h.from)) throw new RangeError('bad from');
  const size = batchFrameSize(h.from.length, runs);
  if (size > MAX_BATCH_BYTES) throw new RangeError('batch too large');
  const buf = Buffer.allocUnsafe(varintLength(size) + size);
  let o = writeVarint(buf, 0, size);
  buf[o++] = FRAME_BATCH;
  buf[o++] = WIRE_VERSION;
  buf[o++] = h.flags & 0xff;
  buf[o++] = h.from.length;
  o += buf.write(h.from, o, 'latin1');
  writeU53(buf, o, h.batchId); o += 8;
  writeU53(buf, o, h.epoch); o += 8;
  o = writeVarint(buf, o, runs.length);
  for (const r of runs) {
    writeU53(buf, o, r.seq); o += 8;
    buf.set(r.body, o); o += r.body.length;
  }
  return buf.subarray(0, o);
}

/** Encodes a batch given as items and seqs (consecutive seqs become one run). */
export function encodeBatchFrame(b: Batch): Uint8Array {
  const n = b.items.length;
  if (n < 1 || n > MAX_BATCH_URLS || b.seqs.length !== n) throw new RangeError('batch item count out of range');
  const runs: EncodedRun[] = [];
  let i = 0;
  while (i < n) {
    let j = i + 1;
    while (j < n && b.seqs[j] === b.seqs[j - 1]! + 1) j++;
    runs.push({ seq: b.seqs[i]!, count: j - i, body: encodeRunBody(b.items.slice(i, j)) });
    i = j;
  }
  return encodeRunsFrame(b, runs);
}

/** Reasons a batch frame is rejected as a whole (the stream is then closed). */
export type BatchRejectReason = 'oversize' | 'type' | 'version' | 'flags' | 'from' | 'count' | 'truncated' | 'seq' | 'depth' | 'url-length' | 'trailing';

export interface DecodedBatch extends Batch {
  /** Items whose URL failed isWireUrl (dropped, counted; the rest of the batch stands). */
  invalidUrls: number;
}

export type BatchDecoded = { ok: true; value: DecodedBatch } | { ok: false; reason: BatchRejectReason };

/**
 * Reads a varint length and skips that many bytes at `rdPos` (a URL or a
 * grant: 1..MAX_URL_BYTES): the field's start offset, `rdPos` left at its end;
 * or the reason the frame is malformed.
 */
function readUrlField(b: Uint8Array, end: number): number | 'truncated' | 'url-length' {
  const len = readVarint(b, end);
  if (len < 0) return 'truncated';
  if (len < 1 || len > MAX_URL_BYTES) return 'url-length';
  if (rdPos + len > end) return 'truncated';
  const start = rdPos;
  rdPos += len;
  return start;
}

/**
 * Decodes a batch frame payload (without its length prefix). Framing and
 * schema errors reject the whole frame; an item whose URL fails the syntax
 * check is dropped and counted, so one bad URL cannot wedge an honest
 * sender's queue.
 */
export function decodeBatch(b: Uint8Array): BatchDecoded {
  const end = b.length;
  if (end > MAX_BATCH_BYTES) return { ok: false, reason: 'oversize' };
  if (end < 2) return { ok: false, reason: 'truncated' };
  if (b[0] !== FRAME_BATCH) return { ok: false, reason: 'type' };
  if (b[1] !== WIRE_VERSION) return { ok: false, reason: 'version' };
  if (end < 4) return { ok: false, reason: 'truncated' };
  const flags = b[2]!;
  if ((flags & ~FLAG_REPLICA) !== 0) return { ok: false, reason: 'flags' };
  const fromLen = b[3]!;
  if (end < BATCH_FIXED + fromLen + 1) return { ok: false, reason: 'truncated' };
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const from = buf.toString('latin1', 4, 4 + fromLen);
  if (!isPeerIdString(from)) return { ok: false, reason: 'from' };
  let o = 4 + fromLen;
  const batchId = readU53(b, o); o += 8;
  const epoch = readU53(b, o); o += 8;
  if (batchId < 0 || epoch < 0) return { ok: false, reason: 'seq' };
  rdPos = o;
  const nRuns = readVarint(b, end);
  if (nRuns < 0) return { ok: false, reason: 'truncated' };
  if (nRuns < 1 || nRuns > MAX_BATCH_URLS) return { ok: false, reason: 'count' };
  const items: UrlItem[] = [];
  const seqs: number[] = [];
  let total = 0;
  let last = -1;
  let invalidUrls = 0;
  for (let r = 0; r < nRuns; r++) {
    if (rdPos + 8 > end) return { ok: false, reason: 'truncated' };
    const base = readU53(b, rdPos);
    rdPos += 8;
    if (base < 0 || base <= last) return { ok: false, reason: 'seq' };
    const n = readVarint(b, end);
    if (n < 0) return { ok: false, reason: 'truncated' };
    total += n;
    if (n < 1 || total > MAX_BATCH_URLS) return { ok: false, reason: 'count' };
    last = base + n - 1;
    if (last > MAX_SAFE) return { ok: false, reason: 'seq' };
    for (let i = 0; i < n; i++) {
      const depth = readVarint(b, end);
      if (depth < 0) return { ok: false, reason: 'truncated' };
      if (depth > MAX_DEPTH) return { ok: false, reason: 'depth' };
      if (rdPos >= end) return { ok: false, reason: 'truncated' };
      const hops = b[rdPos++]!;
      const s = readUrlField(b, end);
      if (typeof s === 'string') return { ok: false, reason: s };
      const urlEnd = rdPos;
      let grant: string | undefined;
      let badGrant = false;
      if (hops & GRANT_FLAG) {
        const gs = readUrlField(b, end);
        if (typeof gs === 'string') return { ok: false, reason: gs };
        if (isWireUrlBytes(b, gs, rdPos)) grant = buf.toString('latin1', gs, rdPos); else badGrant = true;
      }
      if (badGrant || !isWireUrlBytes(b, s, urlEnd)) { invalidUrls++; continue; }
      const url = buf.toString('latin1', s, urlEnd);
      items.push(grant === undefined ? { url, depth, hops } : { url, depth, hops, grant });
      seqs.push(base + i);
    }
  }
  if (rdPos !== end) return { ok: false, reason: 'trailing' };
  return { ok: true, value: { batchId, from, epoch, flags, items, seqs, invalidUrls } };
}

/** Encodes an ack as one length-prefixed frame (prefix included). */
export function encodeAckFrame(a: Ack): Uint8Array {
  const size = 2 + 8 + varintLength(a.accepted) + varintLength(a.dropped);
  const buf = new Uint8Array(1 + size);
  buf[0] = size; // < 128: a one-byte varint
  buf[1] = FRAME_ACK;
  buf[2] = WIRE_VERSION;
  writeU53(buf, 3, a.batchId);
  let o = writeVarint(buf, 11, a.accepted);
  o = writeVarint(buf, o, a.dropped);
  return buf.subarray(0, o);
}

/** Largest ack payload (sender's maxDataLength when reading acks). */
export const MAX_ACK_BYTES = 32;

export function decodeAck(b: Uint8Array): Decoded<Ack> {
  if (b.length < 12 || b.length > MAX_ACK_BYTES) return { ok: false, reason: 'size' };
  if (b[0] !== FRAME_ACK) return { ok: false, reason: 'type' };
  if (b[1] !== WIRE_VERSION) return { ok: false, reason: 'version' };
  const batchId = readU53(b, 2);
  if (batchId < 0) return { ok: false, reason: 'schema' };
  rdPos = 10;
  const accepted = readVarint(b, b.length);
  const dropped = readVarint(b, b.length);
  if (accepted < 0 || dropped < 0 || rdPos !== b.length) return { ok: false, reason: 'schema' };
  return { ok: true, value: { batchId, accepted, dropped } };
}

// ---------------------------------------------------------------- outbox records (disk)

/**
 * Outbox key: u8 id length ‖ peer id (ASCII) ‖ u64 BE seq of the segment's
 * first item. All of one peer's segments form one key range, in seq order.
 */
export function outboxKey(peer: string, seq: number): Buffer {
  const k = Buffer.allocUnsafe(1 + peer.length + 8);
  k[0] = peer.length;
  k.write(peer, 1, 'latin1');
  writeU53(k, 1 + peer.length, seq);
  return k;
}

/** Key prefix of one peer's outbox range. */
export function outboxPrefix(peer: string): Buffer {
  const k = Buffer.allocUnsafe(1 + peer.length);
  k[0] = peer.length;
  k.write(peer, 1, 'latin1');
  return k;
}

/** Parses an outbox key; null for keys that are not queue entries (e.g. the 0x00-prefixed meta keys). */
export function parseOutboxKey(k: Uint8Array): { peer: string; seq: number } | null {
  const len = k[0];
  if (!len || k.length !== 1 + len + 8) return null;
  const seq = readU53(k, 1 + len);
  if (seq < 0) return null;
  return { peer: Buffer.from(k.buffer, k.byteOffset + 1, len).toString('latin1'), seq };
}

export const SEGMENT_VERSION = 1;

/**
 * Outbox segment value: u8 version ‖ run body (varint n ‖ n × item). A
 * segment holds items with consecutive seqs from its key's seq on; one
 * LevelDB entry per segment keeps puts, reads and deletes per URL cheap.
 */
export function encodeSegment(items: readonly UrlItem[]): Buffer {
  let size = 1 + varintLength(items.length);
  for (const it of items) size += itemSize(it);
  const buf = Buffer.allocUnsafe(size);
  buf[0] = SEGMENT_VERSION;
  let o = writeVarint(buf, 1, items.length);
  for (const it of items) o = writeItem(buf, o, it);
  return buf;
}

/** Item count of a segment value; -1 if unreadable. */
export function segmentCount(v: Uint8Array): number {
  if (v.length < 2 || v[0] !== SEGMENT_VERSION) return -1;
  rdPos = 1;
  const n = readVarint(v, v.length);
  return n >= 1 ? n : -1;
}

/** Decodes a segment value; null if unreadable (a damaged entry, skipped and deleted by its reader). */
export function decodeSegment(v: Uint8Array): UrlItem[] | null {
  const n = segmentCount(v);
  if (n < 0) return null;
  const buf = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  const out: UrlItem[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const depth = readVarint(v, v.length);
    if (depth < 0 || rdPos >= v.length) return null;
    const hops = v[rdPos++]!;
    const len = readVarint(v, v.length);
    if (len < 0 || rdPos + len > v.length) return null;
    const url = buf.toString('latin1', rdPos, rdPos + len);
    rdPos += len;
    if (hops & GRANT_FLAG) {
      const glen = readVarint(v, v.length);
      if (glen < 1 || rdPos + glen > v.length) return null;
      out[i] = { url, depth, hops, grant: buf.toString('latin1', rdPos, rdPos + glen) };
      rdPos += glen;
    } else {
      out[i] = { url, depth, hops };
    }
  }
  return rdPos === v.length ? out : null;
}

/** Encoded size of one item in a segment or on the wire. */
export function wireItemSize(it: UrlItem): number {
  return itemSize(it);
}

/** Encodes a safe integer as 8 big-endian bytes (outbox/inbox meta values). */
export function u53Bytes(v: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  writeU53(b, 0, v);
  return b;
}

/** Reads 8 big-endian bytes at `off`; -1 if out of range. */
export function readU53At(b: Uint8Array, off: number): number {
  if (b.length < off + 8) return -1;
  return readU53(b, off);
}
