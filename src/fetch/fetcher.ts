// The HTTP edge: one undici Agent, connections resolved through HostResolver
// (so `--resolve` can point any name at loopback and we know the IP for WARC),
// every limit enforced here — connect/headers/read/total timeouts and a body cap
// applied to both the raw and the decoded body. A truncated body is returned
// with `truncated` set, never thrown away.
//
// Every connection is checked against the address it is about to dial, after
// DNS (src/fetch/address.ts): pages, robots.txt, sitemaps and redirects alike,
// and a name that rebinds to an internal address between two lookups too.
//
// Requests (docs/requests.md): the operator's header fields, a cookie jar, and a
// proxy (undici's ProxyAgent). Through a proxy the target's name is still
// resolved and its address checked here before anything is sent; the proxy's own
// address is the operator's choice and is not checked.
import { isIP } from 'node:net';
import type * as undici from 'undici';
import { Agent, Client, ProxyAgent, buildConnector } from './undici-parts.js';
import type { FetchConfig } from '../config.js';
import { HostResolver } from './dns.js';
import { AddressPolicy } from './address.js';
import { decodeBody } from './decode.js';
import { LeanGet } from './lean-get.js';
import { unbracketHost } from '../url/host.js';
import { tapSocket, headStatus, withoutField, type WireCapture } from './wire.js';
import { mergeHeaderFields, type HeaderField } from './headers.js';
import { proxyFor, redactProxy, type ProxyChoice, type ProxyPlan } from './proxy.js';
import type { CookieJar } from './cookies.js';

export type Truncation = false | 'length' | 'time' | 'disconnect';

export interface FetchResponse {
  ok: true;
  url: string;
  status: number;
  statusText: string;
  httpVersion: string;
  method: string;
  requestHeaders: [string, string][];
  responseHeaders: [string, string][];
  /** Body after Content-Encoding decoding (raw bytes if decoding failed). */
  body: Buffer;
  /** The body as received with only the transfer coding removed (what the WARC stores; same Buffer when not encoded). */
  rawBody: Buffer;
  rawBytes: number;
  /** Why `body` (decoded) is short. */
  truncated: Truncation;
  /** Why `rawBody` is short (WARC-Truncated): the cap applies to it before decoding. */
  rawTruncated: Truncation;
  /** The exchange's heads as sent and received (src/fetch/wire.ts); absent when they could not be captured. */
  wire?: WireCapture & { responseHead: Buffer };
  contentEncodingError?: string;
  ip?: string;
  startedAt: Date;
  durationMs: number;
  header(name: string): string | undefined;
}

/** `blocked-address`: refused before dialling, the address is internal (src/fetch/address.ts). */
export type FetchErrorKind = 'dns' | 'connect' | 'timeout' | 'reset' | 'tls' | 'protocol' | 'aborted' | 'blocked-address' | 'other';

export interface FetcherOptions {
  /** Which addresses may be dialled. Default: no internal address (nothing allowed). */
  addresses?: AddressPolicy;
  /**
   * Opens the connection once the address passed the check (`hostname` is then
   * the address). Default: undici's connector. Tests record what would be
   * dialled here instead of dialling it.
   */
  dial?: undici.buildConnector.connector;
  /** Header fields sent with every request (src/fetch/headers.ts): they replace a default of the same name. */
  headers?: readonly HeaderField[];
  /** Proxies in force (src/fetch/proxy.ts); none: every connection is direct. */
  proxy?: ProxyPlan;
  /** Keeps Set-Cookie answers and sends them back (src/fetch/cookies.ts); none: no Cookie is sent. */
  cookies?: CookieJar;
  /** A body cap by Content-Type (media kinds: src/parse/media.ts `mediaBodyCap`); undefined: the config's maxBodyBytes. */
  bodyCap?: (contentType: string | undefined) => number | undefined;
  /** TLS options for https:// targets inside a proxy's tunnel. Default: undici's (the system's CAs). Tests trust a self-signed certificate here. */
  tunnelTls?: undici.buildConnector.BuildOptions;
}

export interface FetchFailure {
  ok: false;
  url: string;
  kind: FetchErrorKind;
  message: string;
  startedAt: Date;
  durationMs: number;
}

export type FetchOutcome = FetchResponse | FetchFailure;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 206: 'Partial Content', 301: 'Moved Permanently', 302: 'Found',
  303: 'See Other', 304: 'Not Modified', 307: 'Temporary Redirect', 308: 'Permanent Redirect', 400: 'Bad Request',
  401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 410: 'Gone', 429: 'Too Many Requests',
  500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

export class Fetcher {
  private readonly agent: undici.Agent;
  private readonly ipOf = new Map<string, string>();
  /** Origin → capture of the request in flight to it (one at a time per origin: connections 1, pipelining 1). */
  private readonly wireOf = new Map<string, WireCapture>();
  private readonly onWire = (origin: string, cap: WireCapture): void => { this.wireOf.set(origin, cap); };
  /** One ProxyAgent per proxy URL, made on first use. */
  private readonly proxyAgents = new Map<string, undici.ProxyAgent>();
  private readonly headers: readonly HeaderField[];
  private readonly proxy: ProxyPlan | undefined;
  private readonly cookies: CookieJar | undefined;
  private readonly tunnelTls: undici.buildConnector.BuildOptions | undefined;
  private readonly bodyCap: FetcherOptions['bodyCap'];
  /** Requests sent through a proxy. */
  private proxied = 0;

  readonly addresses: AddressPolicy;

  constructor(private readonly cfg: FetchConfig, private readonly userAgent: string, readonly resolver: HostResolver, options: FetcherOptions = {}) {
    const dial = options.dial ?? buildConnector({ timeout: cfg.connectTimeoutMs });
    const addresses = this.addresses = options.addresses ?? new AddressPolicy();
    this.headers = options.headers ?? [];
    this.proxy = options.proxy;
    this.cookies = options.cookies;
    this.tunnelTls = options.tunnelTls;
    this.bodyCap = options.bodyCap;
    this.agent = new Agent({
      connections: 1, // one connection per origin: politeness is enforced above, this keeps it honest
      pipelining: 1,
      headersTimeout: cfg.headersTimeoutMs,
      bodyTimeout: cfg.readTimeoutMs,
      keepAliveTimeout: 10_000,
      connect: (opts, cb) => {
        const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
        this.resolver.resolve(opts.hostname, port).then((r) => {
          // A --resolve rule is the operator's own choice of address: it is not second-guessed.
          const blocked = this.resolver.fromRule(r) ? null : addresses.check(r.address);
          if (blocked) {
            const e = new Error(`blocked-address: ${blocked.reason}; --allow-address opens a range`) as NodeJS.ErrnoException;
            e.code = BLOCKED_CODE;
            cb(e, null);
            return;
          }
          this.ipOf.set(opts.hostname, r.address);
          // SNI carries the name we dial by, never an IP literal (RFC 6066 §3; Node 26 refuses one).
          const servername = opts.servername ?? (isIP(unbracketHost(opts.hostname)) ? undefined : opts.hostname);
          dial({ ...opts, hostname: r.address, servername }, (err, socket) => {
            if (!err && socket && typeof socket.read === 'function') tapSocket(socket, this.onWire);
            (cb as (e: Error | null, s: typeof socket | null) => void)(err, socket);
          });
        }, (err: Error) => {
          const e = new Error(`dns: ${err.message}`) as NodeJS.ErrnoException;
          e.code = 'UBI_DNS';
          cb(e, null);
        });
      },
    });
  }

  async fetch(url: string, extraHeaders: [string, string][] = []): Promise<FetchOutcome> {
    const startedAt = new Date();
    const t0 = performance.now();
    let u: URL;
    try { u = new URL(url); } catch { return fail(url, 'other', 'invalid URL', startedAt, t0); }
    const proxy = proxyFor(this.proxy, u);
    if (proxy) {
      // The proxy resolves the name itself: the guard classifies the target before anything is sent.
      const refused = await this.checkTarget(u);
      if (refused) return fail(url, refused.kind, refused.message, startedAt, t0);
    }
    const own: HeaderField[] = [...extraHeaders];
    const jar = this.cookies?.header(u);
    if (jar !== undefined) {
      // One Cookie field (RFC 6265 §5.4): after the operator's own, if any.
      const i = this.headers.findIndex((f) => f[0].toLowerCase() === 'cookie');
      own.push(['Cookie', i >= 0 ? `${this.headers[i]![1]}; ${jar}` : jar]);
    }
    const requestHeaders: [string, string][] = [
      ['Host', u.host],
      ...mergeHeaderFields(DEFAULT_HEADERS(this.userAgent), jar !== undefined ? this.headers.filter((f) => f[0].toLowerCase() !== 'cookie') : this.headers, own),
    ];
    let timedOut = false;
    const cap = (ct: string | undefined): number => this.bodyCap?.(ct) ?? this.cfg.maxBodyBytes;
    let wire: WireCapture | undefined;
    // The head was read before undici parsed it: the capture is complete (or there is none).
    const get = new LeanGet(cap, () => { wire = this.wireOf.get(u.origin); });
    const timer = setTimeout(() => { timedOut = true; get.abort(); }, this.cfg.totalTimeoutMs);
    try {
      if (proxy) this.proxied++;
      const dispatcher: undici.Dispatcher = proxy ? this.proxyAgent(proxy) : this.agent;
      // undici writes Host from the origin (src/fetch/lean-get.ts: the body read without a stream).
      const res = await get.send(dispatcher, u.origin, u.pathname + u.search, requestHeaders.slice(1).flat()).response;
      // Credentials for the proxy are not part of the request to the target (docs/warc.md "Through a proxy").
      if (wire && proxy) wire.requestHead = withoutField(wire.requestHead, 'proxy-authorization');
      const wireOk = wire !== undefined && wire.responseHead !== null && headStatus(wire.responseHead) === res.statusCode;
      const { chunks, bytes: raw } = res;
      const ct = res.headers['content-type'];
      const capBytes = cap(Array.isArray(ct) ? ct[0] : ct);
      let truncated: Truncation = res.cut === 'cap' ? 'length' : res.cut === 'error' ? (timedOut ? 'time' : 'disconnect') : false;
      const responseHeaders = headerPairs(res.headers);
      if (this.cookies) {
        const set = res.headers['set-cookie'];
        if (set !== undefined) this.cookies.store(u, Array.isArray(set) ? set : [set]);
      }
      const header = (name: string) => {
        const v = res.headers[name.toLowerCase()];
        return Array.isArray(v) ? v.join(', ') : v;
      };
      const rawBody = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, raw);
      const decoded = decodeBody(rawBody, header('content-encoding'), capBytes);
      const rawTruncated = truncated;
      if (decoded.truncated && !truncated) truncated = 'length';
      const statusText = res.statusText ?? STATUS_TEXT[res.statusCode] ?? '';
      return {
        ok: true, url, status: res.statusCode, statusText, httpVersion: '1.1', method: 'GET',
        requestHeaders, responseHeaders, body: decoded.body, rawBody, rawBytes: raw, truncated, rawTruncated,
        ...(wireOk ? { wire: wire as WireCapture & { responseHead: Buffer } } : {}),
        contentEncodingError: decoded.error,
        // Through a proxy the address contacted is the proxy's: WARC-IP-Address is left out (docs/warc.md).
        ip: proxy ? undefined : this.ipOf.get(unbracketHost(u.hostname)) ?? this.ipOf.get(u.hostname),
        startedAt, durationMs: performance.now() - t0, header,
      };
    } catch (err) {
      return fail(url, timedOut ? 'timeout' : classify(err), (err as Error).message, startedAt, t0);
    } finally {
      clearTimeout(timer);
      // Only ours: the next request to the origin may already have replaced it.
      const now = this.wireOf.get(u.origin);
      if (now !== undefined && (now === wire || wire === undefined)) this.wireOf.delete(u.origin);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.agent, ...this.proxyAgents.values()].map((a) => a.close().catch(() => a.destroy())));
    this.resolver.close();
  }

  /** The summary's `requests` (docs/requests.md): the operator's field names, the proxies and their use, the cookie jar's counts; undefined when none is set. */
  requestSummary(): Record<string, unknown> | undefined {
    if (!this.proxy && !this.cookies && this.headers.length === 0) return undefined;
    const shown = (c: ProxyChoice | undefined) => (c ? { url: redactProxy(c.url), from: c.from } : undefined);
    return {
      ...(this.headers.length ? { headers: this.headers.map((f) => f[0]) } : {}),
      ...(this.proxy ? { proxy: { http: shown(this.proxy.http), https: shown(this.proxy.https), noProxy: this.proxy.noProxyList, proxied: this.proxied } } : {}),
      ...(this.cookies ? { cookies: { ...this.cookies.counts, kept: this.cookies.size } } : {}),
    };
  }

  /** Why a proxied request to `u` may not go: its name does not resolve, or to an internal address. */
  private async checkTarget(u: URL): Promise<{ kind: FetchErrorKind; message: string } | null> {
    const host = unbracketHost(u.hostname);
    const port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
    let r;
    try { r = await this.resolver.resolve(host, port); } catch (err) { return { kind: 'dns', message: `dns: ${(err as Error).message}` }; }
    // A --resolve rule is the operator's own choice of address, as on a direct connection.
    const blocked = this.resolver.fromRule(r) ? null : this.addresses.check(r.address);
    return blocked ? { kind: 'blocked-address', message: `blocked-address: ${blocked.reason}; --allow-address opens a range` } : null;
  }

  private proxyAgent(choice: ProxyChoice): undici.ProxyAgent {
    let agent = this.proxyAgents.get(choice.url.href);
    if (agent) return agent;
    const cfg = this.cfg;
    const onWire = this.onWire;
    agent = new ProxyAgent({
      uri: choice.url.href,
      // An http:// target goes to an http:// proxy in absolute-form (RFC 9112 §3.2.2), as curl and wget send it:
      // proxies commonly refuse CONNECT to ports other than 443. https:// targets go through a CONNECT tunnel.
      proxyTunnel: false,
      proxyTls: { timeout: cfg.connectTimeoutMs },
      requestTls: { timeout: cfg.connectTimeoutMs, ...this.tunnelTls },
      // One connection per target origin, as without a proxy; each socket's exchanges are captured for the WARC.
      factory: (origin: string | URL, opts: object) => {
        const given = (opts as { connect?: undici.buildConnector.connector | undici.buildConnector.BuildOptions }).connect;
        const connect = typeof given === 'function' ? given : buildConnector({ timeout: cfg.connectTimeoutMs, ...given });
        return new Client(origin, {
          pipelining: 1, headersTimeout: cfg.headersTimeoutMs, bodyTimeout: cfg.readTimeoutMs, keepAliveTimeout: 10_000,
          connect: (o, cb) => connect(o, (err, socket) => {
            if (!err && socket && typeof socket.read === 'function') tapSocket(socket, onWire);
            (cb as (e: Error | null, s: typeof socket | null) => void)(err, socket);
          }),
        });
      },
    });
    this.proxyAgents.set(choice.url.href, agent);
    return agent;
  }
}

/** The fields every request carries unless the operator's --header replaces one. */
const DEFAULT_HEADERS = (userAgent: string): HeaderField[] => [
  ['User-Agent', userAgent],
  ['Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
  ['Accept-Encoding', 'gzip, deflate, br'],
];

/**
 * What the WARC response record holds for a fetch (docs/warc.md "Faithful records"): with
 * captured heads the body as received; without them the decoded body, whose rebuilt
 * headers are made to describe it. The exact-duplicate digest is over the same bytes.
 */
export function archivedBody(out: FetchResponse): { body: Buffer; truncated: Truncation; wire?: WireCapture & { responseHead: Buffer } } {
  return out.wire ? { body: out.rawBody, truncated: out.rawTruncated, wire: out.wire } : { body: out.body, truncated: out.truncated };
}

const BLOCKED_CODE = 'UBI_BLOCKED_ADDRESS';

function fail(url: string, kind: FetchErrorKind, message: string, startedAt: Date, t0: number): FetchFailure {
  return { ok: false, url, kind, message, startedAt, durationMs: performance.now() - t0 };
}

function headerPairs(h: Record<string, string | string[] | undefined>): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) out.push([k, x]);
    else out.push([k, v]);
  }
  return out;
}

function classify(err: unknown): FetchErrorKind {
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  const name = (err as Error)?.name ?? '';
  if (code === BLOCKED_CODE) return 'blocked-address';
  // undici's ProxyAgent: the proxy refused the tunnel or the credentials (a 407): the target could not be reached.
  if (/^Proxy (response \(\d+\) !== 200|Authentication Required)/.test((err as Error)?.message ?? '')) return 'connect';
  if (code === 'UBI_DNS' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  if (code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'connect';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT') return 'timeout';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE' || code === 'UND_ERR_CLOSED') return 'reset';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code === 'CERT_HAS_EXPIRED' || code === 'DEPTH_ZERO_SELF_SIGNED_CERT') return 'tls';
  if (code.startsWith('HPE_') || code === 'UND_ERR_INFO' || code === 'UND_ERR_RESPONSE_STATUS_CODE') return 'protocol';
  if (name === 'AbortError' || code === 'UND_ERR_ABORTED') return 'aborted';
  return 'other';
}
