// Builds WARC/1.1 records with warcio and compresses each into its own gzip member.
// Runs both on the main thread and inside the encoder worker (worker.ts), so it is
// plain functions over structured-cloneable data, no I/O.
//
// warcio does the serialisation (WARC header block, HTTP header block, framing,
// Content-Length). We hand it precomputed digests (WARC/1.1 §5.8 block, §5.9
// payload) from node:crypto: warcio skips hashing a record whose digest headers are
// already set, and its own hash-wasm path costs ~0.4 ms a record.
import { gzipSync, Gzip, constants as zconst } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { WARCRecord, WARCSerializer, StatusAndHeaders, HeadersMultiMap, WARC_1_1 } from 'warcio';
import type { WARCSerializerOpts } from 'warcio';
import { labelledDigest, emptyDigest, type DigestAlgo } from './digest.js';
import { cdxjLineHead } from './cdxj.js';

export type HeaderList = [string, string][];
export type TruncatedReason = false | 'length' | 'time' | 'disconnect';

/**
 * The heads of an exchange as they crossed the wire (src/fetch/wire.ts). With them
 * the records hold those bytes, and `body` must be the entity as received (transfer
 * coding removed, content coding kept): docs/warc.md "Faithful records".
 */
export interface WireHeads {
  /** Request line, header fields and the blank line, as sent. */
  requestHead?: Uint8Array;
  /** Status line, header fields and the blank line, as received. */
  responseHead: Uint8Array;
  /** WARC-Protocol values (`http/1.1`, `tls/1.3`, …). */
  protocols?: string[];
  /** WARC-Cipher-Suite (IANA name). */
  cipherSuite?: string;
}

/**
 * One HTTP fetch, as the fetcher saw it. Without `wire`, `body` is the entity after
 * content decoding and the header blocks are rebuilt from the lists; with `wire`,
 * `body` is the entity as received and the heads are stored as received.
 */
export interface ExchangeInput {
  url: string;
  date: Date;
  ip?: string;
  /** Request header fields as sent (the request line is rebuilt from method, url, httpVersion). */
  requestHeaders: HeaderList;
  method?: string;
  /** '1.1' (default), '1.0' or '2'. */
  httpVersion?: string;
  status: number;
  statusText?: string;
  /** Response header fields as received (undici's latin1 strings are fine). */
  responseHeaders: HeaderList;
  body: Uint8Array;
  /** WARC-Truncated (WARC/1.1 §5.13): why the stored body is shorter than what was served. */
  truncated?: TruncatedReason;
  /**
   * true (default): `body` had its Content-Encoding removed by the fetcher, so the
   * stored headers rename Content-Encoding to X-Crawler-Content-Encoding. false: the
   * body is stored as received (e.g. an encoding the fetcher could not decode).
   */
  contentDecoded?: boolean;
  /** WARC-Record-ID of the response record, when the caller fixed it beforehand (dedup refers to it). */
  recordId?: string;
  /** WARC-Payload-Digest of `body` (`sha1:`/`sha256:BASE32`), when the caller already computed it (not hashed twice). */
  payloadDigest?: string;
  wire?: WireHeads;
}

export type RevisitProfile = 'identical-payload-digest' | 'server-not-modified';

export interface RevisitInput {
  url: string;
  date: Date;
  ip?: string;
  refersToUri: string;
  refersToDate: Date;
  /** WARC-Refers-To: record id of the original response (`<urn:uuid:…>` or bare uuid urn). */
  refersToRecordId?: string;
  /** Payload digest of the original (identical) payload, as written in its response record. */
  payloadDigest: string;
  status: number;
  statusText?: string;
  httpVersion?: string;
  responseHeaders: HeaderList;
  profile: RevisitProfile;
  /** Decoded length of the duplicated payload, if known: sets Content-Length in the stored headers. */
  payloadLength?: number;
  contentDecoded?: boolean;
  /** The response head as received: stored instead of rebuilding it from `responseHeaders`. */
  wire?: WireHeads;
}

export interface MetadataInput {
  url: string;
  date: Date;
  /** warc-fields: an object, or a list when a name repeats (Heritrix's `outlink:` lines, docs/graph.md). */
  fields: Record<string, string> | HeaderList;
  concurrentTo?: string;
  /** WARC-Protocol values of the exchange the record describes (docs/warc.md: on every record of a capture). */
  protocols?: string[];
}

/** A `conversion` record: another version of a captured record's content (the rendered DOM of a page, docs/warc.md "Rendered pages"). */
export interface ConversionInput {
  url: string;
  date: Date;
  contentType: string;
  body: Uint8Array;
  /** The record this one was made from (WARC/1.1 §5.11), e.g. the page's `response`. */
  refersTo?: string;
  protocols?: string[];
}

/** `digest`: the algorithm of the digests computed here (default sha1, docs/warc.md "Digests"). */
export type EncodeJob =
  | { kind: 'conversion'; input: ConversionInput; level: number; digest?: DigestAlgo }
  | { kind: 'exchange'; input: ExchangeInput; level: number; digest?: DigestAlgo }
  | { kind: 'revisit'; input: RevisitInput; level: number; digest?: DigestAlgo }
  | { kind: 'metadata'; input: MetadataInput; level: number; digest?: DigestAlgo };

/** The crawler's default digest algorithm: the one Common Crawl and Heritrix archives use (docs/warc.md "Digests"). */
export const DEFAULT_DIGEST: DigestAlgo = 'sha1';

/** Gzip members of one job, concatenated; `sizes[i]` is the compressed size of member i. */
export interface Encoded {
  bytes: Uint8Array;
  sizes: number[];
  /** Index of the member a CDX line points at (the response / revisit / metadata record). */
  primary: number;
  recordId: string;
  payloadDigest: string;
  /**
   * Per member: its CDXJ line up to the offset (cdxjLineHead), null when the record
   * is not indexed; absent when a member could not be read back (index the file from disk).
   */
  cdxj?: Array<string | null>;
}

export const PROFILE_URI: Record<RevisitProfile, string> = {
  'identical-payload-digest': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
  'server-not-modified': 'http://netpreserve.org/warc/1.1/revisit/server-not-modified',
};

// warcio never hashes here (every record has its digests preset); if it ever had to, same format as ours.
const SER_OPTS: WARCSerializerOpts = {
  gzip: false,
  digest: { algo: 'sha-1', prefix: 'sha1:', base32: true },
};

/** `<urn:uuid:…>` (WARC/1.1 §5.2). */
export function newRecordId(): string {
  return `<urn:uuid:${randomUUID()}>`;
}

/** Accepts `<urn:uuid:x>`, `urn:uuid:x` or a bare uuid; returns the bracketed form. */
export function normaliseRecordId(id: string): string {
  const s = id.trim();
  if (s.startsWith('<') && s.endsWith('>')) return s;
  if (/^[0-9a-f-]{36}$/i.test(s)) return `<urn:uuid:${s}>`;
  return `<${s}>`;
}

/**
 * WARC-Date: WARC/1.1 §5.4 allows a fractional second (W3C-ISO8601), so a date
 * keeps its milliseconds. An invalid Date becomes "now" rather than throwing.
 */
export function warcDate(d: Date): string {
  const t = d instanceof Date ? d.getTime() : Number.NaN;
  return new Date(Number.isFinite(t) ? t : Date.now()).toISOString();
}

// Header hygiene. undici hands header values as latin1 strings (one char per byte);
// warcio writes header blocks as UTF-8. Re-reading the bytes as UTF-8 where they
// are valid UTF-8 makes the stored bytes equal the received ones. Bytes that are
// not UTF-8 stay as the UTF-8 encoding of their latin1 characters (readable, but
// not byte-exact; documented in docs/warc.md). CR/LF would break the header block.
const NEEDS_CLEAN = /[\r\n\u0080-\uffff]/;
const HIGH_LATIN1 = /[\u0080-\u00ff]/;
const BEYOND_LATIN1 = /[\u0100-\uffff]/;
const CRLF_RUN = /[\r\n]+/g;
const BAD_NAME = /[\r\n:\u0080-\uffff]/g;
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

export function cleanHeaderValue(v: string): string {
  const s0 = typeof v === 'string' ? v : String(v);
  if (!NEEDS_CLEAN.test(s0)) return s0;
  let s = s0.replace(CRLF_RUN, ' ');
  if (HIGH_LATIN1.test(s) && !BEYOND_LATIN1.test(s)) {
    try {
      s = utf8Strict.decode(Buffer.from(s, 'latin1'));
    } catch {
      // not UTF-8: keep the latin1 characters
    }
  }
  return s;
}

function cleanHeaderName(n: string): string {
  const s = typeof n === 'string' ? n : String(n);
  return NEEDS_CLEAN.test(s) || s.includes(':') ? s.replace(BAD_NAME, '_') : s;
}

function isIdentity(v: string): boolean {
  const t = v.trim().toLowerCase();
  return t === '' || t === 'identity';
}

/**
 * The response header fields we store, so that the stored HTTP message parses to
 * exactly the stored body (the Common Crawl convention for decoded payloads):
 * - Content-Encoding (not identity) on a decoded body → X-Crawler-Content-Encoding;
 * - Transfer-Encoding (not identity) → X-Crawler-Transfer-Encoding (the body is stored
 *   de-chunked);
 * - a Content-Length that differs from the stored length (decoded or truncated body)
 *   → X-Crawler-Content-Length, and a correct Content-Length is added. A response
 *   without one (close-delimited) also gets one, so the block frames unambiguously.
 * `bodyLength` null (revisits without a known length): Content-Length is kept unless
 * it described an encoded body, in which case it is renamed and none is added.
 */
export function storedResponseHeaders(
  headers: HeaderList,
  bodyLength: number | null,
  contentDecoded = true,
): HeaderList {
  const out: HeaderList = [];
  let lengthOk = false;
  let renamedEncoding = false;
  const lengths: string[] = [];
  for (const pair of headers) {
    const name = cleanHeaderName(pair[0]);
    const value = cleanHeaderValue(pair[1]);
    const lower = name.toLowerCase();
    if (lower === 'content-length') {
      lengths.push(value);
      continue;
    }
    if (lower === 'content-encoding' && contentDecoded && !isIdentity(value)) {
      out.push(['X-Crawler-Content-Encoding', value]);
      renamedEncoding = true;
      continue;
    }
    if (lower === 'transfer-encoding' && !isIdentity(value)) {
      out.push(['X-Crawler-Transfer-Encoding', value]);
      continue;
    }
    out.push([name, value]);
  }
  const want = bodyLength === null ? null : String(bodyLength);
  for (const v of lengths) {
    const keep = want === null ? !renamedEncoding : !lengthOk && v.trim() === want;
    if (keep && !lengthOk) {
      out.push(['Content-Length', v.trim()]);
      lengthOk = true;
    } else {
      out.push(['X-Crawler-Content-Length', v]);
    }
  }
  if (!lengthOk && want !== null) out.push(['Content-Length', want]);
  return out;
}

/**
 * HeadersMultiMap that serialises an exact list: warcio's own map groups repeated
 * names, splits values on ",,," and refuses repeated "WARC-*" names, none of which
 * we want for arbitrary server headers. warcio only iterates it when writing.
 */
class ListHeaders extends HeadersMultiMap {
  private readonly list: HeaderList;
  constructor(list: HeaderList) {
    super();
    this.list = list;
  }
  override *[Symbol.iterator](): IterableIterator<[string, string]> {
    yield* this.list;
  }
}

/**
 * warcio's StatusAndHeaders with the same toString() for a HeadersMultiMap (every header block we write: the
 * WARC block warcio builds, our ListHeaders). warcio's own first asks `headers instanceof Headers` (to re-encode a
 * fetch Headers' values), and reading the global `Headers` makes Node load its built-in copy of undici: about
 * 30–80 CPU-ms on the first record of every process and of the WARC worker (docs/performance.md "Start-up").
 */
class PlainHead extends StatusAndHeaders {
  constructor(statusline: string, headers: HeadersMultiMap) {
    super({ statusline, headers });
  }
  override toString(): string {
    const lines = [this.statusline];
    for (const [name, value] of this.headers as HeadersMultiMap) lines.push(`${name}: ${value}`);
    return lines.join('\r\n') + '\r\n';
  }
}

function httpVersionLine(v: string | undefined): { proto: string; warcProtocol?: string } {
  const s = (v ?? '1.1').trim();
  if (s === '1.0') return { proto: 'HTTP/1.0' };
  // HTTP/2 is stored in its HTTP/1.1 form (IIPC "WARC Extensions for HTTP/2").
  if (s === '2' || s === '2.0') return { proto: 'HTTP/1.1', warcProtocol: 'h2' };
  return { proto: 'HTTP/1.1' };
}

function statusLine(proto: string, status: number, statusText?: string): string {
  const code = Number.isInteger(status) && status >= 100 && status <= 999 ? status : 0;
  const reason = cleanHeaderValue(statusText ?? STATUS_CODES[code] ?? '');
  // RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ]
  return `${proto} ${String(code).padStart(3, '0')} ${reason}`;
}

function parseUrl(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

function requestHeaderList(ex: ExchangeInput, u: URL | null): HeaderList {
  const out: HeaderList = [];
  let hasHost = false;
  for (const pair of ex.requestHeaders ?? []) {
    const name = cleanHeaderName(pair[0]);
    if (name.toLowerCase() === 'host') hasHost = true;
    out.push([name, cleanHeaderValue(pair[1])]);
  }
  // HTTP/1.1 requires Host (RFC 9112 §3.2); undici adds it itself, so the fetcher's list may lack it.
  if (!hasHost && u) out.unshift(['Host', u.host]);
  return out;
}

// ---------------------------------------------------------------------------
// gzip members with a reused deflate state.
//
// gzipSync() builds a zlib stream per call — deflateInit2 (≈ 270 KB of window,
// hash and pending buffers at level 4), the JS stream object, deflateEnd — which
// costs ≈ 25 µs whatever the input: most of the cost of a 300-byte request record,
// ≈ 50 µs a page for its two records (gzipSync of 120 B: 24.8 µs on this machine). Here one zlib handle per level is kept and reset between
// members (deflateReset: same parameters, so the same bytes as gzipSync — the
// gzip header zlib writes has no time stamp; test "gzip members: byte-equal to
// gzipSync"). It drives the handle the way Node's own zlibBufferSync does
// (writeSync with Z_FINISH until the output is not full), an internal interface:
// anything unexpected and it falls back to gzipSync for good.

interface ZHandle {
  writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void;
  reset(): void;
  onerror: unknown;
}

const engines = new Map<number, { handle: ZHandle; state: Uint32Array; failed: boolean }>();
let reuseOff = false;
// Output space per writeSync call: Node's own chunk size (zlib.constants.Z_DEFAULT_CHUNK), as
// gzipSync gives it. It matters at level 0, where deflate sizes stored blocks by the space it has.
const GZ_OUT = 16 * 1024;
let gzOut: Buffer | null = null;

function engineFor(level: number): { handle: ZHandle; state: Uint32Array; failed: boolean } | null {
  let e = engines.get(level);
  if (e === undefined) {
    const z = new Gzip({ level }) as unknown as { _handle?: ZHandle; _writeState?: Uint32Array };
    const handle = z._handle, state = z._writeState;
    if (!handle || typeof handle.writeSync !== 'function' || typeof handle.reset !== 'function' || !(state instanceof Uint32Array)) {
      reuseOff = true;
      return null;
    }
    const ent = { handle, state, failed: false };
    handle.onerror = () => { ent.failed = true; };
    engines.set(level, ent);
    e = ent;
  }
  return e;
}

/** gzipSync(raw, { level }), byte for byte, without a new zlib stream per call. */
export function gzipMember(raw: Uint8Array, level: number): Uint8Array {
  const e = reuseOff ? null : engineFor(level);
  if (e === null) return gzipSync(raw, { level });
  const out = gzOut ?? (gzOut = Buffer.allocUnsafe(GZ_OUT));
  const parts: Buffer[] = [];
  let inOff = 0, inLen = raw.byteLength, total = 0;
  try {
    for (;;) {
      e.handle.writeSync(zconst.Z_FINISH, raw, inOff, inLen, out, 0, GZ_OUT);
      if (e.failed) break;
      const availOut = e.state[0]!, availIn = e.state[1]!;
      const have = GZ_OUT - availOut;
      if (have > 0) { parts.push(Buffer.from(out.subarray(0, have))); total += have; }
      inOff += inLen - availIn;
      inLen = availIn;
      if (availOut !== 0) break; // Z_STREAM_END: the output was not filled
    }
    if (!e.failed) e.handle.reset();
  } catch {
    e.failed = true;
  }
  if (e.failed) {
    engines.delete(level); // a fresh one next time; this record the ordinary way
    return gzipSync(raw, { level });
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}

interface Member {
  gz: Uint8Array;
  cdxj: string | null | undefined;
}

/**
 * Serialises one record with warcio and gzips it as its own member; its CDXJ line is
 * read from the same bytes. `indexed` false: a record CDXJ never indexes (cdxjLineOf: a
 * request, a warcinfo, a metadata record of warc-fields), so there is nothing to read.
 */
async function member(record: WARCRecord, level: number, indexed = true): Promise<Member> {
  // WARCRecord.create's WARC header block is always a HeadersMultiMap: the same bytes, through PlainHead.
  if (!(record.warcHeaders instanceof PlainHead)) record.warcHeaders = new PlainHead(record.warcHeaders.statusline, record.warcHeaders.headers as HeadersMultiMap);
  const raw = await WARCSerializer.serialize(record, SER_OPTS);
  const gz = gzipMember(raw, level);
  return { gz, cdxj: indexed ? cdxjLineHead(raw, gz.length) : null };
}

function httpHeadBytes(record: WARCRecord): Uint8Array {
  // Exactly the bytes warcio's serializer writes for the HTTP header block.
  return Buffer.from(record.httpHeaders!.toString() + '\r\n', 'utf8');
}

/**
 * Members concatenated into one exact-size ArrayBuffer (never a slice of zlib's
 * output chunk or of Node's Buffer pool), so the worker can transfer it, not copy it.
 */
function concat(members: Member[]): { bytes: Uint8Array; sizes: number[]; cdxj?: Array<string | null> } {
  let total = 0;
  for (const m of members) total += m.gz.length;
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const m of members) {
    bytes.set(m.gz, at);
    at += m.gz.length;
  }
  const cdxj = members.map((m) => m.cdxj);
  const out: { bytes: Uint8Array; sizes: number[]; cdxj?: Array<string | null> } = { bytes, sizes: members.map((m) => m.gz.length) };
  if (!cdxj.includes(undefined)) out.cdxj = cdxj as Array<string | null>;
  return out;
}

/**
 * The response head as stored with a body that is stored as received but without its
 * transfer coding: a `Transfer-Encoding` field (RFC 9112 §6.1) is renamed to
 * `X-Crawler-Transfer-Encoding` in place (same position, case and value), so the
 * stored message parses to the stored body. Every other byte is as received.
 * Python warcio's `check` digests the payload as stored (warcio issue #75), so a
 * chunk-framed body would fail either it or WARC/1.1 §6.3.2 (payload = entity
 * with transfer coding removed); this way both agree.
 */
export function storedWireHead(head: Uint8Array): Uint8Array {
  const text = Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('latin1');
  if (!TE_FIELD.test(text)) return head;
  return Buffer.from(text.replace(TE_FIELD_G, (_m, nl: string, name: string) => `${nl}X-Crawler-${name}`), 'latin1');
}
const TE_FIELD = /\r\ntransfer-encoding[ \t]*:/i;
const TE_FIELD_G = /(\r\n)(transfer-encoding)(?=[ \t]*:)/gi;

/** The WARC fields every record of an exchange shares: address and protocol (IIPC proposals, docs/warc.md). */
function exchangeFields(ip: string | undefined, wire: WireHeads | undefined, httpVersion: string | undefined): HeaderList {
  const out: HeaderList = [];
  if (ip) out.push(['WARC-IP-Address', cleanHeaderValue(ip)]);
  const { warcProtocol } = httpVersionLine(httpVersion);
  const protocols = wire?.protocols?.length ? wire.protocols : [warcProtocol ?? (httpVersion?.trim() === '1.0' ? 'http/1.0' : 'http/1.1')];
  for (const p of protocols) out.push(['WARC-Protocol', cleanHeaderValue(p)]);
  if (wire?.cipherSuite) out.push(['WARC-Cipher-Suite', cleanHeaderValue(wire.cipherSuite)]);
  return out;
}

/**
 * A `response` then a `request` record (the order Heritrix and browsertrix write;
 * pywb and warcio indexers pair either order), each pointing at the other with
 * WARC-Concurrent-To (WARC/1.1 §5.7).
 */
export async function encodeExchange(ex: ExchangeInput, level: number, algo: DigestAlgo = DEFAULT_DIGEST): Promise<Encoded> {
  const u = parseUrl(ex.url);
  const date = warcDate(ex.date);
  const respId = ex.recordId ? normaliseRecordId(ex.recordId) : newRecordId();
  const reqId = newRecordId();
  const body = ex.body ?? new Uint8Array(0);
  const { proto } = httpVersionLine(ex.httpVersion);
  const common = exchangeFields(ex.ip, ex.wire, ex.httpVersion);

  const payloadDigest = ex.payloadDigest ? cleanHeaderValue(ex.payloadDigest) : labelledDigest(algo, body);
  const respWarc: HeaderList = [
    ['WARC-Type', 'response'],
    ['WARC-Record-ID', respId],
    ['WARC-Date', date],
    ...common,
    ['WARC-Concurrent-To', reqId],
  ];
  if (ex.truncated) respWarc.push(['WARC-Truncated', ex.truncated]);
  respWarc.push(['WARC-Payload-Digest', payloadDigest]);
  let resp: WARCRecord;
  if (ex.wire) {
    // The block is the head as received then the body: warcio only frames it.
    const head = storedWireHead(ex.wire.responseHead);
    resp = WARCRecord.create({ url: ex.url, date, type: 'response', warcVersion: WARC_1_1, warcHeaders: respWarc }, [head, body]);
    resp.httpHeaders = null;
    resp.warcHeaders.headers.set('WARC-Block-Digest', labelledDigest(algo, head, body));
  } else {
    resp = WARCRecord.create({ url: ex.url, date, type: 'response', warcVersion: WARC_1_1, warcHeaders: respWarc }, [body]);
    resp.httpHeaders = new PlainHead(
      statusLine(proto, ex.status, ex.statusText),
      new ListHeaders(storedResponseHeaders(ex.responseHeaders ?? [], body.length, ex.contentDecoded ?? true)),
    );
    resp.warcHeaders.headers.set('WARC-Block-Digest', labelledDigest(algo, httpHeadBytes(resp), body));
  }

  const reqWarc: HeaderList = [
    ['WARC-Type', 'request'],
    ['WARC-Record-ID', reqId],
    ['WARC-Date', date],
    ...common,
    ['WARC-Concurrent-To', respId],
    ['WARC-Payload-Digest', emptyDigest(algo)],
  ];
  let req: WARCRecord;
  const sent = ex.wire?.requestHead;
  if (sent && sent.length > 0) {
    req = WARCRecord.create({ url: ex.url, date, type: 'request', warcVersion: WARC_1_1, warcHeaders: reqWarc }, [sent]);
    req.httpHeaders = null;
    req.warcHeaders.headers.set('WARC-Block-Digest', labelledDigest(algo, sent));
  } else {
    const method = cleanHeaderValue(ex.method ?? 'GET').replace(/\s+/g, '') || 'GET';
    const path = u ? u.pathname + u.search : '/';
    req = WARCRecord.create({ url: ex.url, date, type: 'request', warcVersion: WARC_1_1, warcHeaders: reqWarc }, []);
    req.httpHeaders = new PlainHead(
      `${method} ${path} ${proto}`,
      new ListHeaders(requestHeaderList(ex, u)),
    );
    req.warcHeaders.headers.set('WARC-Block-Digest', labelledDigest(algo, httpHeadBytes(req)));
  }

  return { ...concat([await member(resp, level), await member(req, level, false)]), primary: 0, recordId: respId, payloadDigest };
}

/**
 * A `revisit` record (WARC/1.1 §6.7): the block is the HTTP response header only;
 * WARC-Payload-Digest repeats the original's so an indexer can resolve it.
 */
export async function encodeRevisit(rv: RevisitInput, level: number, algo: DigestAlgo = DEFAULT_DIGEST): Promise<Encoded> {
  const date = warcDate(rv.date);
  const id = newRecordId();
  const { proto } = httpVersionLine(rv.httpVersion);
  const warc: HeaderList = [
    ['WARC-Type', 'revisit'],
    ['WARC-Record-ID', id],
    ['WARC-Date', date],
    ...exchangeFields(rv.ip, rv.wire, rv.httpVersion),
  ];
  warc.push(['WARC-Refers-To-Target-URI', cleanHeaderValue(rv.refersToUri)]);
  warc.push(['WARC-Refers-To-Date', warcDate(rv.refersToDate)]);
  if (rv.refersToRecordId) warc.push(['WARC-Refers-To', normaliseRecordId(rv.refersToRecordId)]);
  const payloadDigest = cleanHeaderValue(rv.payloadDigest ?? '');
  // server-not-modified (§6.7.3) may not know the earlier payload's digest: then the field is left out.
  if (payloadDigest) warc.push(['WARC-Payload-Digest', payloadDigest]);
  let rec: WARCRecord;
  if (rv.wire) {
    const head = storedWireHead(rv.wire.responseHead);
    rec = WARCRecord.create({ url: rv.url, date, type: 'revisit', warcVersion: WARC_1_1, warcHeaders: warc }, [head]);
    rec.httpHeaders = null;
    rec.warcHeaders.headers.set('WARC-Block-Digest', labelledDigest(algo, head));
  } else {
    rec = WARCRecord.create({ url: rv.url, date, type: 'revisit', warcVersion: WARC_1_1, warcHeaders: warc }, []);
    rec.httpHeaders = new PlainHead(
      statusLine(proto, rv.status, rv.statusText),
      new ListHeaders(
        storedResponseHeaders(
          rv.responseHeaders ?? [],
          typeof rv.payloadLength === 'number' && rv.payloadLength >= 0 ? rv.payloadLength : null,
          rv.contentDecoded ?? true,
        ),
      ),
    );
    rec.warcHeaders.headers.set('WARC-Block-Digest', labelledDigest(algo, httpHeadBytes(rec)));
  }
  // warcio presets the identical-payload-digest profile; set the one asked for.
  rec.warcHeaders.headers.set('WARC-Profile', PROFILE_URI[rv.profile] ?? PROFILE_URI['identical-payload-digest']);
  return { ...concat([await member(rec, level)]), primary: 0, recordId: id, payloadDigest };
}

/** application/warc-fields body (WARC/1.1 §7: `name: value` CRLF lines); a list keeps repeated names in order. */
export function warcFields(fields: Record<string, string> | HeaderList): Uint8Array {
  let s = '';
  for (const [k, v] of Array.isArray(fields) ? fields : Object.entries(fields)) s += `${cleanHeaderName(k)}: ${cleanHeaderValue(String(v))}\r\n`;
  return Buffer.from(s, 'utf8');
}

/** A `metadata` record (WARC/1.1 §6.6) with warc-fields, e.g. a near-duplicate note. */
export async function encodeMetadata(md: MetadataInput, level: number, algo: DigestAlgo = DEFAULT_DIGEST): Promise<Encoded> {
  const date = warcDate(md.date);
  const id = newRecordId();
  const body = warcFields(md.fields ?? {});
  const digest = labelledDigest(algo, body);
  const warc: HeaderList = [
    ['WARC-Type', 'metadata'],
    ['WARC-Record-ID', id],
    ['WARC-Date', date],
  ];
  for (const p of md.protocols ?? []) warc.push(['WARC-Protocol', cleanHeaderValue(p)]);
  if (md.concurrentTo) warc.push(['WARC-Concurrent-To', normaliseRecordId(md.concurrentTo)]);
  // For a record without an HTTP message the payload is the whole block.
  warc.push(['WARC-Payload-Digest', digest], ['WARC-Block-Digest', digest]);
  const rec = WARCRecord.create({ url: md.url, date, type: 'metadata', warcVersion: WARC_1_1, warcHeaders: warc }, [body]);
  // warcio gives a metadata record Content-Type application/warc-fields, which cdxj-indexer (and so
  // cdxjLineOf) does not index: its line is null without reading the record back (one a page: the outlinks).
  return { ...concat([await member(rec, level, false)]), primary: 0, recordId: id, payloadDigest: digest };
}

/**
 * A `conversion` record (WARC/1.1 §6.8). Not indexed: a replay tool asked for the page URL finds
 * its `response`, and the conversion through WARC-Refers-To (docs/warc.md "Rendered pages").
 */
export async function encodeConversion(cv: ConversionInput, level: number, algo: DigestAlgo = DEFAULT_DIGEST): Promise<Encoded> {
  const date = warcDate(cv.date);
  const id = newRecordId();
  const body = Buffer.from(cv.body.buffer, cv.body.byteOffset, cv.body.byteLength);
  const digest = labelledDigest(algo, body);
  const warc: HeaderList = [
    ['WARC-Type', 'conversion'],
    ['WARC-Record-ID', id],
    ['WARC-Date', date],
  ];
  for (const p of cv.protocols ?? []) warc.push(['WARC-Protocol', cleanHeaderValue(p)]);
  if (cv.refersTo) warc.push(['WARC-Refers-To', normaliseRecordId(cv.refersTo)]);
  warc.push(['Content-Type', cleanHeaderValue(cv.contentType)], ['WARC-Payload-Digest', digest], ['WARC-Block-Digest', digest]);
  const rec = WARCRecord.create({ url: cv.url, date, type: 'conversion', warcVersion: WARC_1_1, warcHeaders: warc }, [body]);
  return { ...concat([await member(rec, level, false)]), primary: 0, recordId: id, payloadDigest: digest };
}

/** The `warcinfo` record that opens every file (WARC/1.1 §6.2). */
export async function encodeWarcinfo(
  filename: string,
  date: Date,
  info: Record<string, string>,
  level: number,
  algo: DigestAlgo = DEFAULT_DIGEST,
): Promise<Encoded> {
  const id = newRecordId();
  const body = warcFields(info);
  const rec = WARCRecord.create(
    {
      type: 'warcinfo',
      filename,
      date: warcDate(date),
      warcVersion: WARC_1_1,
      warcHeaders: [
        ['WARC-Type', 'warcinfo'],
        ['WARC-Record-ID', id],
        ['WARC-Date', warcDate(date)],
        ['WARC-Block-Digest', labelledDigest(algo, body)],
      ],
    },
    [body],
  );
  return { ...concat([await member(rec, level, false)]), primary: 0, recordId: id, payloadDigest: '' };
}

export function encodeJob(job: EncodeJob): Promise<Encoded> {
  switch (job.kind) {
    case 'exchange':
      return encodeExchange(job.input, job.level, job.digest);
    case 'revisit':
      return encodeRevisit(job.input, job.level, job.digest);
    case 'metadata':
      return encodeMetadata(job.input, job.level, job.digest);
    case 'conversion':
      return encodeConversion(job.input, job.level, job.digest);
  }
}
