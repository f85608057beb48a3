// The bytes of each HTTP/1.1 exchange's head as they crossed the wire, for the
// WARC records (docs/warc.md "Faithful records"): undici hands out header fields
// already parsed (names lower-cased, whitespace around values trimmed), so the
// stored header block would otherwise be a rebuild, not what was received.
//
// - Request head: undici publishes the exact header text it writes on the
//   `undici:client:sendHeaders` diagnostics channel, with the socket it goes to.
// - Response head: the socket's `read()` (undici's parser pulls every byte
//   through it) is wrapped, and the bytes up to the first CRLF CRLF after a
//   request was sent are kept. 1xx interim heads (RFC 9110 §15.2) are skipped:
//   the stored head is the final response's.
// - TLS: protocol version and cipher suite of the socket, read once.
//
// One request is in flight per socket (the fetcher's Agent runs one connection
// per origin, pipelining 1), so a socket's capture belongs to the one request
// the fetcher has outstanding to that origin.
import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

/** What was sent and received for one exchange, byte for byte. */
export interface WireCapture {
  /** Request line and header fields as written, with the blank line that ends them (latin1). */
  requestHead: Buffer;
  /** Status line and header fields as received, with the final CRLF CRLF; null until complete. */
  responseHead: Buffer | null;
  /** WARC-Protocol values, application protocol first: `http/1.1`, then `tls/1.3` etc. over TLS. */
  protocols: string[];
  /** IANA name of the TLS cipher suite (WARC-Cipher-Suite), over TLS. */
  cipherSuite?: string;
}

/** Called when a request leaves on a tapped socket; `origin` as the request gave it. */
export type WireSink = (origin: string, capture: WireCapture) => void;

interface SocketTap {
  sink: WireSink;
  current: WireCapture | null;
  /** Head bytes of `current` received so far, while no CRLF CRLF has arrived. */
  pending: Buffer | null;
  protocols: string[];
  cipherSuite?: string;
}

const TAP = Symbol('ubicrawl.wireTap');
const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');
/** Larger than undici's own header limit (16 KiB default), so any head it accepts fits. */
const MAX_HEAD = 256 * 1024;

type Tapped = Socket & { [TAP]?: SocketTap };

let subscribed = false;

function onSendHeaders(message: unknown): void {
  const m = message as { request?: { origin?: unknown; path?: unknown; method?: string }; headers?: unknown; socket?: Tapped };
  const tap = m.socket?.[TAP];
  if (!tap || typeof m.headers !== 'string') return;
  // undici ends a body-less request's head with one more CRLF (client-h1 writeBuffer); a
  // GET never carries a content-length of 0, so that blank line is all that follows.
  const cap: WireCapture = {
    requestHead: Buffer.from(m.headers + '\r\n', 'latin1'),
    responseHead: null,
    protocols: tap.protocols,
    ...(tap.cipherSuite ? { cipherSuite: tap.cipherSuite } : {}),
  };
  tap.current = cap;
  tap.pending = null;
  tap.sink(targetOrigin(m.request), cap);
}

/**
 * The origin a request is for: a request in absolute-form (to a proxy, RFC 9112 §3.2.2)
 * names it in its target, as the client it went through is the proxy's.
 */
function targetOrigin(request: { origin?: unknown; path?: unknown } | undefined): string {
  const path = request?.path;
  if (typeof path === 'string' && /^https?:\/\//i.test(path)) {
    try { return new URL(path).origin; } catch { /* not a URL: the client's origin */ }
  }
  return String(request?.origin ?? '');
}

/** TLS version as a WARC-Protocol value: `TLSv1.3` → `tls/1.3`. */
export function tlsProtocolValue(version: string | null | undefined): string | undefined {
  if (!version) return undefined;
  const m = /^(TLS|SSL)v?(\d+(?:\.\d+)?)$/i.exec(version.trim());
  if (!m) return undefined;
  const v = m[2]!.includes('.') ? m[2]! : `${m[2]}.0`;
  return `${m[1]!.toLowerCase()}/${v}`;
}

function feed(tap: SocketTap, chunk: Buffer): void {
  const cap = tap.current!;
  let buf = tap.pending ? Buffer.concat([tap.pending, chunk]) : chunk;
  for (let guard = 0; guard < 64; guard++) {
    const end = buf.indexOf(CRLFCRLF);
    if (end < 0) {
      if (buf.length > MAX_HEAD) break;
      tap.pending = Buffer.from(buf); // a copy: the socket's chunk is not ours to keep
      return;
    }
    const head = buf.subarray(0, end + 4);
    // "HTTP/1.1 1xx": an interim response, the final one follows.
    if (head.length > 9 && head[8] === 0x20 && head[9] === 0x31) {
      buf = buf.subarray(end + 4);
      continue;
    }
    cap.responseHead = Buffer.from(head); // a copy: the chunk also holds body bytes
    tap.pending = null;
    return;
  }
  tap.current = null; // no plausible head: the fetcher falls back to rebuilt headers
  tap.pending = null;
}

/**
 * Starts capturing the exchanges of a freshly connected socket; `sink` hears of
 * each request sent on it.
 */
export function tapSocket(socket: Socket, sink: WireSink): void {
  if (!subscribed) {
    subscribed = true;
    subscribe('undici:client:sendHeaders', onSendHeaders);
  }
  const s = socket as Tapped;
  if (s[TAP]) return;
  const protocols = ['http/1.1'];
  let cipherSuite: string | undefined;
  const tls = socket as Socket & { encrypted?: boolean; getProtocol?: () => string | null; getCipher?: () => { standardName?: string; name?: string } };
  if (tls.encrypted && typeof tls.getProtocol === 'function') {
    const p = tlsProtocolValue(tls.getProtocol());
    if (p) protocols.push(p);
    const c = tls.getCipher?.();
    cipherSuite = c?.standardName || c?.name || undefined;
  }
  const tap: SocketTap = { sink, current: null, pending: null, protocols, ...(cipherSuite ? { cipherSuite } : {}) };
  s[TAP] = tap;
  const read = socket.read;
  socket.read = function (this: Socket, size?: number) {
    const chunk = read.call(this, size) as Buffer | string | null;
    if (chunk !== null && tap.current !== null && tap.current.responseHead === null && Buffer.isBuffer(chunk)) feed(tap, chunk);
    return chunk;
  };
}

/** The status code of a captured response head ("HTTP/1.1 200 …"), or -1. */
export function headStatus(head: Buffer): number {
  if (head.length < 12 || head.toString('latin1', 0, 5) !== 'HTTP/') return -1;
  const sp = head.indexOf(0x20);
  if (sp < 0 || sp + 4 > head.length) return -1;
  const code = Number(head.toString('latin1', sp + 1, sp + 4));
  return Number.isInteger(code) ? code : -1;
}

/**
 * A captured request head without the fields of one name (case-insensitive), the
 * rest byte for byte. The request line is never a field, so it is kept.
 */
export function withoutField(head: Buffer, name: string): Buffer {
  const text = head.toString('latin1');
  const lines = text.split('\r\n');
  const lower = name.toLowerCase();
  const kept = lines.filter((l, i) => i === 0 || l.slice(0, l.indexOf(':')).trim().toLowerCase() !== lower || l.indexOf(':') < 0);
  return kept.length === lines.length ? head : Buffer.from(kept.join('\r\n'), 'latin1');
}
